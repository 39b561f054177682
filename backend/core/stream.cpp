// SPDX-License-Identifier: Apache-2.0
#include "core/stream.h"

#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

namespace rs::stream {
namespace {

using nlohmann::json;

struct KindName {
    EventKind kind;
    const char* name;
};
// The one list of event names.
constexpr KindName kKinds[] = {
    { EventKind::Hello, "hello" },
    { EventKind::Recipe, "recipe" },
    { EventKind::Note, "note" },
    { EventKind::Phase, "phase" },
    { EventKind::MemoryLayout, "memory_layout" },
    { EventKind::Iteration, "iteration" },
    { EventKind::PeakAttribution, "peak_attribution" },
    { EventKind::RankSummary, "rank_summary" },
    { EventKind::Result, "result" },
};

std::string shortDump(const json& v)
{
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 60)
        s = s.substr(0, 57) + "...";
    return s;
}

// Where a value is read from, for the error.
struct At {
    const char* event;
    std::string key;
    [[noreturn]] void fail(const char* expected, const json& v) const
    {
        throw StreamError(event, key, std::string("expected ") + expected + ", got " + shortDump(v));
    }
};

int64_t readInteger(const json& v, const At& at, int64_t lo, int64_t hi, const char* expected)
{
    if (v.is_number_integer()) {
        if (v.is_number_unsigned()) {
            const auto u = v.get<uint64_t>();
            if (u <= static_cast<uint64_t>(hi))
                return static_cast<int64_t>(u);
        } else {
            const auto i = v.get<int64_t>();
            if (i >= lo && i <= hi)
                return i;
        }
        at.fail(expected, v);
    }
    if (v.is_number_float()) {
        // A reader that writes every number as a double (QJsonDocument) writes 4096 as 4096.0 or 4.096e3.
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo)
            && d <= static_cast<double>(hi))
            return static_cast<int64_t>(d);
    }
    at.fail(expected, v);
}

void read(const json& v, std::string& out, const At& at)
{
    if (!v.is_string())
        at.fail("a string", v);
    out = v.get<std::string>();
}
void read(const json& v, bool& out, const At& at)
{
    if (!v.is_boolean())
        at.fail("true or false", v);
    out = v.get<bool>();
}
void read(const json& v, double& out, const At& at)
{
    if (!v.is_number())
        at.fail("a number", v);
    out = v.get<double>();
}
void read(const json& v, int& out, const At& at)
{
    out = static_cast<int>(
        readInteger(v, at, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), "an integer"));
}
void read(const json& v, int64_t& out, const At& at)
{
    out = readInteger(v, at, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
        "an integer (bytes or a count)");
}
void read(const json& v, json& out, const At&)
{
    out = v;
}
void read(const json& v, std::vector<std::string>& out, const At& at)
{
    if (!v.is_array())
        at.fail("an array of strings", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        std::string s;
        read(v[i], s, At { at.event, at.key + "[" + std::to_string(i) + "]" });
        out.push_back(std::move(s));
    }
}
void read(const json& v, std::map<std::string, int64_t>& out, const At& at)
{
    if (!v.is_object())
        at.fail("an object of byte counts", v);
    out.clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (it.value().is_null())
            continue;
        int64_t n = 0;
        read(it.value(), n, At { at.event, at.key + "." + it.key() });
        out[it.key()] = n;
    }
}
void read(const json& v, std::pair<double, double>& out, const At& at)
{
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
        at.fail("an array of two numbers [low, high]", v);
    out = { v[0].get<double>(), v[1].get<double>() };
}
template <typename T> void read(const json& v, std::optional<T>& out, const At& at)
{
    if (v.is_null()) {
        out.reset();
        return;
    }
    T value {};
    read(v, value, at);
    out = std::move(value);
}
void read(const json& v, std::vector<ActivationBytes>& out, const At& at)
{
    if (!v.is_array())
        at.fail("an array of {layer, region, bytes}", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        const At item { at.event, at.key + "[" + std::to_string(i) + "]" };
        if (!v[i].is_object())
            item.fail("an object {layer, region, bytes}", v[i]);
        ActivationBytes a;
        const auto field = [&](const char* key, auto& member) {
            const auto f = v[i].find(key);
            if (f != v[i].end())
                read(*f, member, At { at.event, item.key + "." + key });
        };
        field("layer", a.layer);
        field("region", a.region);
        field("bytes", a.bytes);
        out.push_back(std::move(a));
    }
}
void read(const json& v, std::map<std::string, PhasePeakBytes>& out, const At& at)
{
    if (!v.is_object())
        at.fail("an object phase -> {allocated, reserved}", v);
    out.clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
        const At item { at.event, at.key + "." + it.key() };
        if (!it.value().is_object())
            item.fail("an object {allocated, reserved}", it.value());
        PhasePeakBytes p;
        for (const char* key : { "allocated", "reserved" }) {
            const auto f = it.value().find(key);
            if (f != it.value().end())
                read(*f, key[0] == 'a' ? p.allocated : p.reserved, At { at.event, item.key + "." + key });
        }
        out[it.key()] = p;
    }
}

template <typename T> json write(const T& v)
{
    return json(v);
}
json write(const std::pair<double, double>& v)
{
    return json::array({ v.first, v.second });
}
template <typename T> json write(const std::optional<T>& v)
{
    return v ? write(*v) : json(nullptr);
}
json write(const std::vector<ActivationBytes>& v)
{
    json out = json::array();
    for (const auto& a : v)
        out.push_back({ { "layer", a.layer ? json(*a.layer) : json(nullptr) }, { "region", a.region },
            { "bytes", a.bytes } });
    return out;
}
json write(const std::map<std::string, PhasePeakBytes>& v)
{
    json out = json::object();
    for (const auto& [phase, p] : v)
        out[phase] = { { "allocated", write(p.allocated) }, { "reserved", write(p.reserved) } };
    return out;
}
json write(const std::map<std::string, int64_t>& v)
{
    json out = json::object();
    for (const auto& [k, n] : v)
        out[k] = n;
    return out;
}

struct Writer {
    json& j;
    template <typename T> void operator()(const char* key, const T& v) { j[key] = write(v); }
};
struct Reader {
    const json& j;
    const char* event;
    std::set<std::string> known { "event" };
    template <typename T> void operator()(const char* key, T& v)
    {
        known.insert(key);
        const auto f = j.find(key);
        if (f != j.end() && !f->is_null()) // null is absent (the contract)
            read(*f, v, At { event, key });
    }
};

// One list of keys per event, read and written by the same function.
template <typename B, typename E> void fieldsOf(B& b, E& e, Hello*)
{
    b("worker_version", e.worker_version);
    b("libtorch_version", e.libtorch_version);
    b("cuda_version", e.cuda_version);
    b("nccl_version", e.nccl_version);
    b("device", e.device);
    b("device_kind", e.device_kind);
    b("host", e.host);
    b("pid", e.pid);
    b("rank", e.rank);
    b("world_size", e.world_size);
    b("local_rank", e.local_rank);
    b("profile", e.profile);
    b("stream_version", e.stream_version);
    b("cpu_threads", e.cpu_threads);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, RecipeEvent*)
{
    b("recipe", e.recipe);
    b("recipe_hash", e.recipe_hash);
    b("findings", e.findings);
    b("stage_scope", e.stage_scope);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, Note*)
{
    b("kind", e.kind);
    b("flags", e.flags);
    b("message", e.message);
}
// The note's keys written only when set (a layout_rank note).
template <typename B, typename E> void optionalNoteFieldsOf(B& b, E& e)
{
    b("rank_of_layout", e.rank_of_layout);
    b("layout_world_size", e.layout_world_size);
    b("stage", e.stage);
    b("in_flight_micro_batches", e.in_flight_micro_batches);
}
// The step spread's keys, in a rank summary and a result.
template <typename B, typename S> void spreadFieldsOf(B& b, S& s)
{
    b("steady_step_ms_p2_5", s.p2_5);
    b("steady_step_ms_p97_5", s.p97_5);
    b("steady_step_ms_median_ci95", s.median_ci95);
    b("steady_iterations", s.iterations);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, Phase*)
{
    b("phase", e.phase);
    b("rank", e.rank);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, MemoryLayout*)
{
    b("rank", e.rank);
    b("micro_batches", e.micro_batches);
    b("data_parallel_size", e.data_parallel_size);
    b("distributed_optimizer", e.distributed_optimizer);
    b("grad_buffer_dtype", e.grad_buffer_dtype);
    b("grad_buffer_bytes", e.grad_buffer_bytes);
    b("parameters", e.parameters);
    b("parameter_bytes", e.parameter_bytes);
    b("main_parameter_bytes", e.main_parameter_bytes);
    b("shard_elements", e.shard_elements);
    b("padded_vocab_size", e.padded_vocab_size);
    b("tied_embeddings", e.tied_embeddings);
    b("one_pass_optimizer", e.one_pass_optimizer);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, Iteration*)
{
    forEachIterationField(e, b);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, PeakAttribution*)
{
    b("rank", e.rank);
    b("phase", e.phase);
    b("iteration", e.iteration);
    b("peak_allocated", e.peak_allocated);
    b("attributed", e.attributed);
    b("categories", e.categories);
    b("activations", e.activations);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, RankSummary*)
{
    b("rank", e.rank);
    b("peak_allocated", e.peak_allocated);
    b("peak_reserved", e.peak_reserved);
    b("peak_phase", e.peak_phase);
    b("peak_iteration", e.peak_iteration);
    b("steady_step_ms", e.steady_step_ms);
    b("steady_step_ms_median", e.steady_step_ms_median);
    b("phase_peaks", e.phase_peaks);
}
template <typename B, typename E> void fieldsOf(B& b, E& e, Result*)
{
    b("status", e.status);
    b("stage", e.stage);
    b("iteration", e.iteration);
    b("message", e.message);
    b("steady_step_ms", e.steady_step_ms);
    b("tokens_per_s", e.tokens_per_s);
    b("model_tflops", e.model_tflops);
    b("executed_tflops", e.executed_tflops);
    b("model_flops_per_step", e.model_flops_per_step);
    b("executed_flops_per_step", e.executed_flops_per_step);
}
// The result's keys that are written only when set (several ranks, a failure's rank and field).
template <typename B, typename E> void optionalFieldsOf(B& b, E& e)
{
    b("replay_flops_per_step", e.replay_flops_per_step);
    b("world_size", e.world_size);
    b("collective_backend", e.collective_backend);
    b("dp_replicas_identical", e.dp_replicas_identical);
    b("rank", e.rank);
    b("field", e.field);
    b("steady_step_ms_median", e.steady_step_ms_median);
    spreadFieldsOf(b, e.spread);
    b("rank_of_layout", e.rank_of_layout);
    b("layout_world_size", e.layout_world_size);
}

// Writes the keys `fields` names into j, leaving out those not set (keys a reader may not expect).
template <typename F> void writeSet(json& j, F fields)
{
    json set = json::object();
    Writer w { set };
    fields(w);
    for (auto it = set.begin(); it != set.end(); ++it)
        if (!it.value().is_null())
            j[it.key()] = it.value();
}

template <typename E> json toJsonOf(const E& e, EventKind kind)
{
    json j = e.extra.is_object() ? e.extra : json::object();
    j["event"] = eventName(kind);
    Writer w { j };
    fieldsOf(w, e, static_cast<E*>(nullptr));
    return j;
}

template <typename E> E fromJsonOf(const json& j, EventKind kind)
{
    const char* name = eventName(kind);
    if (!j.is_object())
        throw StreamError(name, "", "expected a JSON object, got " + shortDump(j));
    E e;
    Reader r { j, name };
    fieldsOf(r, e, static_cast<E*>(nullptr));
    if constexpr (std::is_same_v<E, Result>)
        optionalFieldsOf(r, e);
    if constexpr (std::is_same_v<E, Note>)
        optionalNoteFieldsOf(r, e);
    if constexpr (std::is_same_v<E, RankSummary>)
        spreadFieldsOf(r, e.spread);
    if constexpr (std::is_same_v<E, MemoryLayout>)
        r("expert_data_parallel_size", e.expert_data_parallel_size);
    e.extra = json::object();
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!r.known.count(it.key()))
            e.extra[it.key()] = it.value();
    return e;
}

} // namespace

StreamError::StreamError(std::string event, std::string key, const std::string& why)
    : std::runtime_error((event.empty() ? std::string() : event + " event: ")
        + (key.empty() ? std::string() : "'" + key + "': ") + why)
    , m_event(std::move(event))
    , m_key(std::move(key))
{
}

const char* eventName(EventKind kind)
{
    for (const auto& k : kKinds)
        if (k.kind == kind)
            return k.name;
    return "";
}

EventKind eventKindFromName(const std::string& name)
{
    for (const auto& k : kKinds)
        if (name == k.name)
            return k.kind;
    return EventKind::Unknown;
}

EventKind eventKind(const json& event)
{
    if (!event.is_object())
        return EventKind::Unknown;
    const auto f = event.find("event");
    if (f == event.end() || !f->is_string())
        return EventKind::Unknown;
    return eventKindFromName(f->get<std::string>());
}

json Hello::toJson() const
{
    return toJsonOf(*this, EventKind::Hello);
}
Hello Hello::fromJson(const json& j)
{
    return fromJsonOf<Hello>(j, EventKind::Hello);
}
json RecipeEvent::toJson() const
{
    return toJsonOf(*this, EventKind::Recipe);
}
RecipeEvent RecipeEvent::fromJson(const json& j)
{
    RecipeEvent e = fromJsonOf<RecipeEvent>(j, EventKind::Recipe);
    if (!e.recipe.is_object())
        throw StreamError(
            "recipe", "recipe", "expected an object (the resolved recipe), got " + shortDump(e.recipe));
    if (!e.findings.is_array())
        throw StreamError("recipe", "findings", "expected an array, got " + shortDump(e.findings));
    return e;
}
json Note::toJson() const
{
    json j = toJsonOf(*this, EventKind::Note);
    writeSet(j, [this](Writer& w) { optionalNoteFieldsOf(w, *this); });
    return j;
}
Note Note::fromJson(const json& j)
{
    return fromJsonOf<Note>(j, EventKind::Note);
}
json Phase::toJson() const
{
    return toJsonOf(*this, EventKind::Phase);
}
Phase Phase::fromJson(const json& j)
{
    return fromJsonOf<Phase>(j, EventKind::Phase);
}
json MemoryLayout::toJson() const
{
    json j = toJsonOf(*this, EventKind::MemoryLayout);
    writeSet(j, [this](Writer& w) { w("expert_data_parallel_size", expert_data_parallel_size); });
    return j;
}
MemoryLayout MemoryLayout::fromJson(const json& j)
{
    return fromJsonOf<MemoryLayout>(j, EventKind::MemoryLayout);
}
json Iteration::toJson() const
{
    json j = toJsonOf(*this, EventKind::Iteration);
    if (!grad_reduce_ms) // several ranks only
        j.erase("grad_reduce_ms");
    return j;
}
Iteration Iteration::fromJson(const json& j)
{
    return fromJsonOf<Iteration>(j, EventKind::Iteration);
}
json PeakAttribution::toJson() const
{
    return toJsonOf(*this, EventKind::PeakAttribution);
}
PeakAttribution PeakAttribution::fromJson(const json& j)
{
    return fromJsonOf<PeakAttribution>(j, EventKind::PeakAttribution);
}
json RankSummary::toJson() const
{
    json j = toJsonOf(*this, EventKind::RankSummary);
    writeSet(j, [this](Writer& w) { spreadFieldsOf(w, spread); });
    return j;
}
RankSummary RankSummary::fromJson(const json& j)
{
    return fromJsonOf<RankSummary>(j, EventKind::RankSummary);
}
json Result::toJson() const
{
    json j = toJsonOf(*this, EventKind::Result);
    writeSet(j, [this](Writer& w) { optionalFieldsOf(w, *this); });
    return j;
}
Result Result::fromJson(const json& j)
{
    return fromJsonOf<Result>(j, EventKind::Result);
}

static_assert(std::variant_size_v<Event> == static_cast<size_t>(EventKind::Unknown) + 1);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(EventKind::Iteration), Event>, Iteration>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(EventKind::Result), Event>, Result>);

EventKind kindOf(const Event& event)
{
    return static_cast<EventKind>(event.index());
}

json toJson(const Event& event)
{
    return std::visit([](const auto& e) { return e.toJson(); }, event);
}

Event decodeEvent(const json& j)
{
    if (!j.is_object())
        throw StreamError("", "", "not a JSON object");
    const auto name = j.find("event");
    if (name == j.end() || !name->is_string())
        throw StreamError("", "", "no string \"event\" key");
    switch (eventKindFromName(name->get<std::string>())) {
    case EventKind::Hello:
        return Hello::fromJson(j);
    case EventKind::Recipe:
        return RecipeEvent::fromJson(j);
    case EventKind::Note:
        return Note::fromJson(j);
    case EventKind::Phase:
        return Phase::fromJson(j);
    case EventKind::MemoryLayout:
        return MemoryLayout::fromJson(j);
    case EventKind::Iteration:
        return Iteration::fromJson(j);
    case EventKind::PeakAttribution:
        return PeakAttribution::fromJson(j);
    case EventKind::RankSummary:
        return RankSummary::fromJson(j);
    case EventKind::Result:
        return Result::fromJson(j);
    case EventKind::Unknown:
        break;
    }
    return UnknownEvent { name->get<std::string>(), j };
}

namespace {
// Deeper than any event nests, and bounded so that copying and writing a value (both recursive) stay
// shallow on hostile input: a line nested deeper is malformed.
constexpr int kMaxDepth = 256;
bool nestedDeeperThan(std::string_view text, int limit)
{
    int depth = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
        } else if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit)
                return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}
} // namespace

Event decodeLine(std::string_view line)
{
    if (nestedDeeperThan(line, kMaxDepth))
        throw StreamError("", "", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    json j;
    try {
        j = json::parse(line.begin(), line.end());
    } catch (const json::parse_error& error) {
        // "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error while ...": what
        // follows the position, and the byte.
        const std::string what = error.what();
        const auto colon = what.find(": ");
        throw StreamError("", "",
            "not JSON (byte " + std::to_string(error.byte) + ": "
                + (colon == std::string::npos ? what : what.substr(colon + 2)) + ")");
    } catch (const json::exception& error) {
        // a number out of range ("[json.exception.out_of_range.406] number overflow parsing '1e999'")
        const std::string what = error.what();
        const auto close = what.find("] ");
        throw StreamError(
            "", "", "not JSON (" + (close == std::string::npos ? what : what.substr(close + 2)) + ")");
    }
    return decodeEvent(j);
}

} // namespace rs::stream
