// SPDX-License-Identifier: Apache-2.0
// The worker's stream (docs/stream.md) as types: one struct per event, each with toJson / fromJson, and
// `Event`, one line of the stream as its type. The worker writes through them; the launcher decodes each
// line once (decodeLine) and hands the Event on; the ingest, the session, the GUI and the CLI read the
// typed events. No Qt, no LibTorch.
//
// Reading follows the contract: absent and null values leave a field at its default (an empty optional,
// 0, ""), unknown keys are kept in `extra` (and written back by toJson), a value of the wrong type is a
// StreamError that names the event and the key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace rs::stream {

// The stream's version, written in `hello` (stream_version). Adding keys does not change it; renaming or
// removing one does.
inline constexpr int kStreamVersion = 1;

enum class EventKind {
    Hello,
    Recipe,
    Note,
    Phase,
    MemoryLayout,
    Iteration,
    PeakAttribution,
    RankSummary,
    Result,
    Unknown, // an event this build does not know (readers ignore it)
};
// "hello", "recipe", ..., "result"; "" for Unknown.
const char* eventName(EventKind kind);
EventKind eventKindFromName(const std::string& name);
// The kind of a stream object by its "event" key (Unknown when the key is absent, not a string or not known).
EventKind eventKind(const nlohmann::json& event);

// A stream object that does not read as its event: what() is "<event> event: '<key>': expected <type>,
// got <value>". A line that is no event at all (not JSON, not an object, no string "event") has an empty
// event and key, and what() says which.
class StreamError : public std::runtime_error {
public:
    StreamError(std::string event, std::string key, const std::string& why);
    const std::string& event() const { return m_event; }
    const std::string& key() const { return m_key; }

private:
    std::string m_event;
    std::string m_key;
};

struct Hello {
    std::string worker_version, libtorch_version;
    std::optional<std::string> cuda_version, nccl_version; // null on CPU / without NCCL
    std::string device, device_kind, host;
    int64_t pid = 0;
    int rank = 0, world_size = 1, local_rank = 0;
    std::string profile;
    int stream_version = kStreamVersion;
    std::optional<int> cpu_threads;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static Hello fromJson(const nlohmann::json& j);
};

struct RecipeEvent {
    nlohmann::json recipe = nlohmann::json::object(); // the resolved recipe (recipe_json.h reads it)
    std::string recipe_hash;
    nlohmann::json findings = nlohmann::json::array(); // {rule_id, severity, fields, message, source}
    std::string stage_scope;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static RecipeEvent fromJson(const nlohmann::json& j);
};

struct Note {
    std::string kind; // ignored_flags, layout_rank, fp8
    std::vector<std::string> flags;
    std::string message;
    // layout_rank: the rank of the layout the worker runs, its pipeline stage, micro-batches in flight
    std::optional<int> rank_of_layout, layout_world_size, stage, in_flight_micro_batches;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static Note fromJson(const nlohmann::json& j);
};

struct Phase {
    std::string phase; // build, optimizer-init, warmup, steady
    int rank = 0;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static Phase fromJson(const nlohmann::json& j);
};

struct MemoryLayout {
    int rank = 0;
    int micro_batches = 1;
    int data_parallel_size = 1;
    bool distributed_optimizer = false;
    std::string grad_buffer_dtype; // fp32 | param
    int64_t grad_buffer_bytes = 0;
    int64_t parameters = 0;
    int64_t parameter_bytes = 0;
    int64_t main_parameter_bytes = 0;
    int64_t shard_elements = 0;
    int64_t padded_vocab_size = 0;
    bool tied_embeddings = false;
    bool one_pass_optimizer = false;
    std::optional<int> expert_data_parallel_size; // one rank of a layout with experts
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static MemoryLayout fromJson(const nlohmann::json& j);
};

struct Iteration {
    int rank = 0;
    int iteration = 0; // 1-based
    std::string phase; // warmup | steady
    std::optional<double> step_ms, forward_ms, backward_ms, optimizer_ms;
    std::optional<double> grad_reduce_ms; // several ranks only
    std::optional<double> loss; // null when not finite
    std::optional<bool> loss_finite;
    std::optional<int64_t> forward_peak_allocated, forward_peak_reserved;
    std::optional<int64_t> backward_peak_allocated, backward_peak_reserved;
    std::optional<int64_t> optimizer_peak_allocated, optimizer_peak_reserved;
    std::optional<int64_t> allocated_after, reserved_after;
    std::optional<int64_t> alloc_retries;
    bool optimizer_init = false;
    std::optional<int64_t> forward_allocated_after;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static Iteration fromJson(const nlohmann::json& j);
};

// The iteration's keys and their members, the one list: `visit(key, member)` for each, in the stream's
// order. toJson / fromJson go through it, and so does the store (its column table maps the keys to columns,
// storage/ingest.cpp), so a key added here reaches the store by its name. `grad_reduce_ms` is written only
// when set (several ranks).
template <typename E, typename Visit> void forEachIterationField(E& e, Visit&& visit)
{
    visit("rank", e.rank);
    visit("iteration", e.iteration);
    visit("phase", e.phase);
    visit("step_ms", e.step_ms);
    visit("forward_ms", e.forward_ms);
    visit("backward_ms", e.backward_ms);
    visit("optimizer_ms", e.optimizer_ms);
    visit("grad_reduce_ms", e.grad_reduce_ms);
    visit("loss", e.loss);
    visit("loss_finite", e.loss_finite);
    visit("forward_peak_allocated", e.forward_peak_allocated);
    visit("forward_peak_reserved", e.forward_peak_reserved);
    visit("backward_peak_allocated", e.backward_peak_allocated);
    visit("backward_peak_reserved", e.backward_peak_reserved);
    visit("optimizer_peak_allocated", e.optimizer_peak_allocated);
    visit("optimizer_peak_reserved", e.optimizer_peak_reserved);
    visit("allocated_after", e.allocated_after);
    visit("reserved_after", e.reserved_after);
    visit("alloc_retries", e.alloc_retries);
    visit("optimizer_init", e.optimizer_init);
    visit("forward_allocated_after", e.forward_allocated_after);
}

// The `activations` category of a peak by where it was allocated.
struct ActivationBytes {
    std::optional<int> layer; // global index; empty for embedding / output
    std::string region; // input_layernorm, self_attention, core_attn, ..., embedding, output
    int64_t bytes = 0;
};

struct PeakAttribution {
    int rank = 0;
    std::string phase; // forward, backward, optimizer-init, optimizer
    int iteration = 0;
    int64_t peak_allocated = 0;
    int64_t attributed = 0;
    // parameters, main_parameters, gradient_buffer, optimizer_states, activations, backward, workspace, other
    std::map<std::string, int64_t> categories;
    std::vector<ActivationBytes> activations;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static PeakAttribution fromJson(const nlohmann::json& j);
};

struct PhasePeakBytes {
    std::optional<int64_t> allocated, reserved;
};

// The steady step time's spread over the steady iterations (engine/timing.h states the method): the
// 2.5th and 97.5th percentiles, the median's 95 % interval, how many iterations; absent keys when unknown.
struct StepSpread {
    std::optional<double> p2_5, p97_5;
    std::optional<std::pair<double, double>> median_ci95;
    std::optional<int> iterations;
};

struct RankSummary {
    int rank = 0;
    std::optional<int64_t> peak_allocated, peak_reserved;
    std::string peak_phase;
    std::optional<int> peak_iteration;
    std::optional<double> steady_step_ms, steady_step_ms_median;
    std::map<std::string, PhasePeakBytes> phase_peaks;
    StepSpread spread;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static RankSummary fromJson(const nlohmann::json& j);
};

struct Result {
    std::string status; // pass, oom, nonfinite, invalid, error
    std::optional<std::string> stage; // null on pass
    std::optional<int> iteration; // null when not in a step
    std::string message;
    std::optional<double> steady_step_ms, tokens_per_s, model_tflops, executed_tflops;
    std::optional<double> model_flops_per_step, executed_flops_per_step;
    std::optional<double> replay_flops_per_step;
    // several ranks
    std::optional<int> world_size;
    std::optional<std::string> collective_backend;
    std::optional<bool> dp_replicas_identical;
    std::optional<int> rank; // the rank that failed
    std::optional<std::string> field; // the recipe field an invalid / build result is about
    // a pass: the steady step's spread; one rank of a parallel layout: which rank of how many
    std::optional<double> steady_step_ms_median;
    StepSpread spread;
    std::optional<int> rank_of_layout, layout_world_size;
    nlohmann::json extra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static Result fromJson(const nlohmann::json& j);
};

// An event this build does not know (a newer worker's): its name and the object as it came. Readers
// ignore it; the ingest's spool keeps it.
struct UnknownEvent {
    std::string event;
    nlohmann::json json = nlohmann::json::object();

    nlohmann::json toJson() const { return json; }
};

// One event of the stream as its type. The alternatives are in EventKind's order (kindOf is the index).
using Event = std::variant<Hello, RecipeEvent, Note, Phase, MemoryLayout, Iteration, PeakAttribution,
    RankSummary, Result, UnknownEvent>;

EventKind kindOf(const Event& event);
// The event as the worker writes it (its "event" key included; unknown keys kept).
nlohmann::json toJson(const Event& event);
// Reads `j` as the event its "event" key names. Throws StreamError when `j` is not an object or has no
// string "event" key, and when a known key of a known event has the wrong type.
Event decodeEvent(const nlohmann::json& j);
// One line of the stream (JSON text, a trailing "\r" or blanks allowed), parsed and decoded: the one
// reader of stream lines (the launcher, and the ingest of saved streams). Throws StreamError as
// decodeEvent does, and for a line that is not JSON ("not JSON (byte 12: ...)").
Event decodeLine(std::string_view line);

} // namespace rs::stream
