// SPDX-License-Identifier: Apache-2.0
// Internal to the rules engine: the shape of one row of the rule table (rules_table.cpp) and the small
// helpers the rows use. Not part of the public interface (rules.h).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/profiles.h"
#include "core/rules.h"

namespace rs::rules_detail {

// A profile as a bit (1 << its row in the profile table, core/profiles.h), for the evaluation loop.
unsigned profileBit(Profile p);
// Input formats as bits: MCore rows apply to every input, M-rows to Megatron-LM flags, B-rows to overrides.
enum : unsigned {
    kJson = 1u << 0,
    kBridge = 1u << 1,
    kFlags = 1u << 2,
    kAnyFormat = kJson | kBridge | kFlags,
};
unsigned formatBit(InputFormat f);

// Where a row's source lives, so its file:line is printed with the right commit.
enum class Origin {
    MCore, // Megatron-LM at the profile's commit (the profile table's megatron_commit)
    Bridge, // Megatron-Bridge at the profile's bridge_commit
    Guide, // our own advice: docs/rules.md (from the recompute guide, SKILL.md, NVIDIA/skills 7149a886)
    Observed, // docs/rules.md: seen running Megatron Core main on an H200
};

// One source of a row: where the check is, at one profile's commit. `profile` is a profile table name, or
// "*" for every profile (Bridge, guide and observed rows cite one place for all). A profile a row gives no
// source for reads the one it is based on (ProfileInfo::based_on), then the reference profile's, then the
// first given, cited at that profile's commit with a note. File abbreviations (TC, MPC, ARGS, TL, TB, RND,
// RC) are expanded when the source is printed (rules.cpp).
struct Src {
    const char* profile;
    const char* where;
};

// The recipe being resolved, in Megatron's evaluation order: rows read it and adjustment rows change it.
struct Ctx {
    Recipe r;
    Profile profile = Profile::BridgePin;
    InputFormat format = InputFormat::Json;
    bool modules_given = false; // recompute_modules was set by the input (before R10's default)
    // Overrides with no recipe under them: the shape fields they do not give (unknown, not 0). The rules
    // that point at one of them are not evaluated; RS30 says so once.
    std::vector<std::string> unknown_shape;
    std::vector<Finding>* out = nullptr;

    bool gIs(std::string_view v) const { return r.recompute_granularity && *r.recompute_granularity == v; }
    bool gSet() const { return r.recompute_granularity.has_value(); }
    bool selective() const { return gIs("selective"); }
    bool full() const { return gIs("full"); } // Megatron's `g and g != "selective"` for valid values
    bool has(std::string_view label) const; // label in recompute_modules (None counts as empty)
    bool cg(std::string_view module) const; // module in cuda_graph_modules (None counts as empty)
    bool cgEmpty() const { return !r.cuda_graph_modules || r.cuda_graph_modules->empty(); }
    bool fp8() const { return r.fp8 && !r.fp8->empty(); }
    bool fp4() const { return r.fp4 && !r.fp4->empty(); }
    bool impl(std::string_view v) const { return r.cuda_graph_impl == v; }
    bool fullCudagraph() const { return impl("full_iteration") || cgEmpty(); } // TC:2874-2877
    bool isMoE() const { return r.num_moe_experts.has_value() && *r.num_moe_experts > 0; }
    int moeLayers() const; // layers whose MLP is MoE (moe_layer_freq)
    int denseLayers() const; // layers with a dense MLP (a hybrid stack's '-' layers)
    bool sharedExperts() const { return isMoE() && r.moe_shared_expert_intermediate_size.has_value(); }
    // The layers of the largest model chunk (TransformerBlock) of the recipe's split: num_layers / pp / vpp
    // under the even split (model_shape.h largestChunkLayers).
    int chunkLayers() const;
};

// Placeholder values of one message: {name} -> Python-rendered value.
struct Args {
    using Value = std::pair<const char*, std::string>;
    std::array<Value, 4> kv {};
    size_t n = 0;
    void set(const char* name, std::string value) { kv[n++] = { name, std::move(value) }; }
};

struct Row {
    const char* id;
    // Where the rule exists: "*" (every profile), or profile table names separated by spaces; a profile
    // based on a named one counts as named.
    const char* profiles;
    unsigned formats;
    Severity severity;
    const char* fields; // space-separated recipe keys
    const char* summary; // the condition in words (catalogue)
    const char* message; // Megatron's exact words, {x} placeholders
    Origin origin;
    std::vector<Src> sources; // file:line per profile, named; only where a profile's line differs
    bool (*when)(const Ctx&);
    void (*args)(const Ctx&, Args&); // nullptr: the message has no placeholders
    void (*adjust)(Ctx&); // adjustment rows: the change, applied after the finding is recorded
    void (*fix)(const Ctx&, FixIt&); // nullptr: no fix-it
    const char* fixit; // the fix-it in words (catalogue)
    const char* reason; // why (the guide's words for RS rows; notes for the others)
};

const std::vector<Row>& ruleRows(); // the table, in evaluation order (rules_table.cpp)

// Does the row exist under the profile (its `profiles`, with based_on)?
bool rowExists(const Row& row, Profile p);
// The row's source under the profile as printed in a finding: expanded, with its commit.
std::string rowSource(const Row& row, Profile p);
// The names a row uses (its `profiles` and its sources' profiles) that the profile table does not know.
std::vector<std::string> unknownProfileNames(const Row& row);

// Python's renderings of values inside f-strings.
const char* pyBool(bool b); // True / False
std::string pyStr(const std::optional<std::string>& s); // str(x): the text, or None
std::string pyRepr(const std::string& s); // 'text'
std::string pyList(const std::vector<std::string>& v); // ['a', 'b']
std::string pyOptList(const std::optional<std::vector<std::string>>& v); // None or ['a']
// Python set repr in a deterministic order: the order given (duplicates dropped); set() when empty.
std::string pySet(const std::vector<std::string>& v);
std::string pyInt(const std::optional<int>& v);

std::vector<std::string> modulesWithout(const Ctx& c, std::initializer_list<const char*> drop);
std::vector<std::string> modulesWith(const Ctx& c, const char* add);

} // namespace rs::rules_detail
