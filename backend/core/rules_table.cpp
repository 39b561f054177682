// SPDX-License-Identifier: Apache-2.0
// THE rule table: every rule the engine knows, one row each (a rule with several messages has one row per
// message), in Megatron's evaluation order (megatron-rules.md (b) "Evaluation order"):
//   Megatron-LM validate_args (M1-M6, flags only)
//   Bridge ConfigContainer: mixed precision (B8), comm-overlap setup (B4), validate_cuda_graph_configuration
//   (B2), finalize (B1)
//   ModelParallelConfig.__post_init__ (MP1-MP2), then TransformerConfig.__post_init__ top to bottom
//   (R39, R38, R01-R37 with the dev-branch rows G* where dev adds checks)
//   Bridge after finalize (B3) and at provide() (B5)
//   build/run-time rules decidable from the recipe (RT*), then our own advice from the guide (RS*).
// Megatron raises at its first error; the engine goes on so every problem is listed, and the first error
// listed is the one Megatron raises. Messages are Megatron's exact strings (typos and trailing spaces kept)
// with {x} placeholders rendered as Python renders them (rules.cpp). Rows with `when == nullptr` cannot be
// decided from a recipe (they need a field or an environment the recipe does not carry) and are listed for
// `recompute explain` only.
// Each row says where it exists ("*", or profile names of the profile table, core/profiles.h) and gives its
// sources by profile name, only where a profile's line differs: { { "bridge-pin", "TC:1765" }, { "main",
// "TC:1884" } }. A profile without its own source cites its base's, then the reference profile's (main).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/estimator.h"
#include "core/mixed_precision.h"
#include "core/model_shape.h"
#include "core/recipe_json.h"
#include "core/rules_detail.h"

namespace rs::rules_detail {

namespace {

using S = Severity;
constexpr S E = S::Error;
constexpr S W = S::Warning;
constexpr S N = S::Note;
constexpr S A = S::Adjustment;
constexpr Origin MC = Origin::MCore;
constexpr Origin BR = Origin::Bridge;
constexpr Origin GD = Origin::Guide;
constexpr Origin OB = Origin::Observed;

// Fix-it patch helpers. A patch is merged into recipeToJson(input); dropping "moe" also clears the
// deprecated moe_layer_recompute, which would otherwise add it back (R19).
void dropLabels(const Ctx& c, FixIt& f, std::initializer_list<const char*> labels, const char* what)
{
    f.description = what;
    f.patch["recompute_modules"] = modulesWithout(c, labels);
    for (const char* l : labels)
        if (std::string(l) == "moe")
            f.patch["moe_layer_recompute"] = false;
}
void set(FixIt& f, const char* description, const char* key, nlohmann::json value)
{
    f.description = description;
    f.patch[key] = std::move(value);
}
void cpuOffloadOff(const Ctx&, FixIt& f)
{
    // cpu_offloading_num_layers > 0 turns cpu_offloading back on under Megatron-LM flags (M6).
    set(f, "set cpu_offloading=false", "cpu_offloading", false);
    f.patch["cpu_offloading_num_layers"] = 0;
}
void epOverlapOff(FixIt& f)
{
    f.patch["comm_overlap"] = { { "overlap_moe_expert_parallel_comm", false } };
}

bool dsa(const Ctx& c) // experimental_attention_variant dsa (TransformerConfig's check: any model)
{
    return c.r.experimental_attention_variant.value_or("") == "dsa";
}

// DSA top-k sharing across pipeline chunks (experimental_attention_variant_module_specs.py
// _validate_dsa_index_share_pipeline_split, run per chunk when its layer specs are built): the first layer
// of a chunk of the split (a layout's, the first / last stage sizes', or the even one) that reuses a top-k
// its chunk does not compute before it, as 1-based layer numbers {layer, source}. A split Megatron refuses
// before it builds a layer is the other rules'.
std::optional<std::pair<int, int>> dsaShareSplitBreak(const Ctx& c)
{
    if (!isDsaModel(c.r) || c.r.dsa_indexer_topk_freq <= 1 || c.r.dsa_indexer_skip_topk_offset < 0
        || c.r.num_layers < 1 || c.r.num_layers > kMaxLayers || !pipelineSplitProblem(c.r).empty())
        return std::nullopt;
    for (const PipelineStage& s : pipelineStages(c.r)) {
        for (size_t i = 0; i < s.layers.size(); ++i) {
            if (!isDsaSkipTopkLayer(c.r, s.layers[i]))
                continue;
            const int source = dsaSourceLayer(c.r, s.layers[i]);
            bool earlier = false;
            for (size_t j = 0; j < i; ++j)
                earlier = earlier || (s.layers[j] == source && s.chunk[j] == s.chunk[i]);
            if (!earlier)
                return std::make_pair(s.layers[i] + 1, source + 1);
        }
    }
    return std::nullopt;
}

bool anyOf(const Ctx& c, std::initializer_list<const char*> labels)
{
    for (const char* l : labels)
        if (c.has(l))
            return true;
    return false;
}

bool gdnVariant(const Ctx& c) // is_gated_delta_net_variant (main, pin)
{
    const auto& v = c.r.experimental_attention_variant;
    return v && (*v == "gdn" || *v == "gdn2" || *v == "gated_delta_net");
}

// TE older than 2.6.0dev0 (R18). Only the release triple matters: 2.6.0dev0 is the lowest 2.6.0.
bool teOlderThan26(const std::string& v)
{
    int part[3] = { 0, 0, 0 };
    const char* p = v.c_str();
    for (int i = 0; i < 3 && *p; ++i) {
        char* end = nullptr;
        part[i] = static_cast<int>(std::strtol(p, &end, 10));
        if (end == p)
            break;
        p = end;
        if (*p == '.')
            ++p;
        else
            break;
    }
    if (part[0] != 2)
        return part[0] < 2;
    return part[1] < 6;
}

// Transformer Engine 2.17 or later (RT22: measured with 2.17.1); false for an unreadable version.
bool teAtLeast217(const std::string& v)
{
    int major = 0, minor = 0;
    if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) != 2)
        return false;
    return major > 2 || (major == 2 && minor >= 17);
}

std::vector<std::string> cgWith(const Ctx& c, std::initializer_list<const char*> add)
{
    std::vector<std::string> v = c.r.cuda_graph_modules.value_or(std::vector<std::string> {});
    for (const char* m : add)
        if (std::find(v.begin(), v.end(), m) == v.end())
            v.emplace_back(m);
    return v;
}
std::vector<std::string> cgWithout(const Ctx& c, std::initializer_list<const char*> drop)
{
    std::vector<std::string> v;
    for (const auto& m : c.r.cuda_graph_modules.value_or(std::vector<std::string> {})) {
        bool dropped = false;
        for (const char* d : drop)
            dropped = dropped || m == d;
        if (!dropped)
            v.push_back(m);
    }
    return v;
}
bool cgSetHas(const std::optional<std::vector<std::string>>& v, const char* m)
{
    return v && std::find(v->begin(), v->end(), m) != v->end();
}

// Labels whose module is captured by the CUDA graph (RT12): whole-layer capture takes every label.
std::vector<std::string> capturedLabels(const Ctx& c)
{
    std::vector<std::string> out;
    if (!c.r.recompute_modules)
        return out;
    const bool whole = c.fullCudagraph();
    for (const auto& l : *c.r.recompute_modules) {
        const bool in = whole || ((l == "core_attn" || l == "mla_up_proj") && c.cg("attn"))
            || (l == "mlp" && c.cg("mlp"))
            || ((l == "moe" || l == "moe_act" || l == "shared_experts") && c.cg("moe"))
            || (l == "gdn_norm_out" && c.cg("mamba"));
        if (in)
            out.push_back(l);
    }
    return out;
}

// ---- hybrid stacks (core/model_shape.h parses the pattern as hybrid_layer_allocation.py does) ----
int patternLayers(const Ctx& c)
{
    return hybridLayerCount(c.r);
}

// The first symbol of the pattern the profile's Symbols reject: main pattern first ('|' allowed there),
// then the MTP pattern (_validate_pattern's order in parse_hybrid_pattern). The whole UTF-8 character.
struct BadSymbol {
    std::string where; // "main" | "MTP"
    std::string symbol;
};
std::optional<BadSymbol> badSymbol(const Ctx& c)
{
    if (!isHybrid(c.r))
        return std::nullopt;
    const std::string valid = validHybridSymbols(c.profile);
    const std::string& p = *c.r.hybrid_layer_pattern;
    const size_t slash = p.find('/');
    const auto scan = [&](size_t from, size_t to, bool pipe) -> std::optional<std::string> {
        for (size_t i = from; i < to && i < p.size(); ++i) {
            const unsigned char ch = static_cast<unsigned char>(p[i]);
            if (ch < 0x80 && (valid.find(p[i]) != std::string::npos || (pipe && p[i] == '|')))
                continue;
            size_t n = 1;
            while (ch >= 0x80 && i + n < p.size() && (static_cast<unsigned char>(p[i + n]) & 0xC0) == 0x80)
                ++n;
            return p.substr(i, n);
        }
        return std::nullopt;
    };
    if (auto bad = scan(0, slash, true))
        return BadSymbol { "main", *bad };
    if (slash == std::string::npos)
        return std::nullopt;
    const size_t next = p.find('/', slash + 1);
    if (auto bad = scan(slash + 1, next, false))
        return BadSymbol { "MTP", *bad };
    return std::nullopt;
}
std::string validSymbolsSet(const Ctx& c, bool pipe)
{
    std::vector<std::string> v;
    for (char ch : validHybridSymbols(c.profile))
        v.emplace_back(1, ch);
    if (pipe)
        v.emplace_back("|");
    return pySet(v);
}
// All MTP parts identical (parse_hybrid_pattern): the first part that differs, 1-based, or 0.
size_t mtpMismatch(const Ctx& c)
{
    if (!isHybrid(c.r))
        return 0;
    const std::string& p = *c.r.hybrid_layer_pattern;
    std::vector<std::string> parts;
    size_t at = p.find('/');
    while (at != std::string::npos) {
        const size_t next = p.find('/', at + 1);
        parts.push_back(p.substr(at + 1, next == std::string::npos ? next : next - at - 1));
        at = next;
    }
    if (std::all_of(parts.begin(), parts.end(), [](const std::string& x) { return x.empty(); }))
        return 0;
    for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i] != parts[0])
            return i + 1;
    return 0;
}
std::string mtpPart(const Ctx& c, size_t index)
{
    const std::string& p = *c.r.hybrid_layer_pattern;
    size_t at = p.find('/');
    for (size_t i = 1; i < index && at != std::string::npos; ++i)
        at = p.find('/', at + 1);
    if (at == std::string::npos)
        return "";
    const size_t next = p.find('/', at + 1);
    return p.substr(at + 1, next == std::string::npos ? next : next - at - 1);
}
// Attention '*' beside MLA / DSA (and dev's DeepSeek-V4 symbols) in the main pattern.
bool attentionWithMla(const Ctx& c)
{
    if (!isHybrid(c.r))
        return false;
    const std::string main = parseHybridPattern(*c.r.hybrid_layer_pattern).main;
    const char* others = c.profile == Profile::Dev ? "DCHW" : "D+";
    return main.find('*') != std::string::npos && main.find_first_of(others) != std::string::npos;
}
size_t patternSegments(const Ctx& c)
{
    return isHybrid(c.r) ? parseHybridPattern(*c.r.hybrid_layer_pattern).segments.size() : 1;
}
bool hasLayer(const Ctx& c, char symbol)
{
    return isHybrid(c.r)
        && parseHybridPattern(*c.r.hybrid_layer_pattern).main.find(symbol) != std::string::npos;
}
// ---- the pipeline split (model_shape.h pipelineStage; pipeline_layout.h parses the layout) ----
// TransformerConfig.__post_init__ checks the split in one if / elif chain (TC:1988-2174 at 2a75ac12): a
// layout, else first / last stage sizes, else the embedding / loss counted in the split.
std::optional<PipelineLayout> layoutOf(const Ctx& c)
{
    return pipelineLayoutOf(c.r); // a hybrid stack's layout too: TransformerConfig validates it all the same
}
int ppSize(const Ctx& c)
{
    return c.r.pipeline_model_parallel_size;
}
// The layout's stages per pipeline rank, where PP divides them (PipelineParallelLayerLayout.__init__); 0
// else.
size_t layoutChunks(const Ctx& c)
{
    const auto l = layoutOf(c);
    if (!l || ppSize(c) < 1 || l->stages.size() % static_cast<size_t>(ppSize(c)) != 0)
        return 0;
    return l->stages.size() / static_cast<size_t>(ppSize(c));
}
bool firstOrLast(const Ctx& c)
{
    return c.r.num_layers_in_first_pipeline_stage.has_value()
        || c.r.num_layers_in_last_pipeline_stage.has_value();
}
bool accountFor(const Ctx& c)
{
    return c.r.account_for_embedding_in_pipeline_split || c.r.account_for_loss_in_pipeline_split;
}
bool vppSet(const Ctx& c)
{
    return c.r.virtual_pipeline_model_parallel_size.has_value();
}
int vppOf(const Ctx& c)
{
    return c.r.virtual_pipeline_model_parallel_size.value_or(1);
}
// Python's % and // (the result takes the divisor's sign); b != 0.
long long pyMod(long long a, long long b)
{
    const long long m = a % b;
    return m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
}
long long pyFloorDiv(long long a, long long b)
{
    return (a - pyMod(a, b)) / b;
}
// str(LayerType.x) as Python prints it in an f-string.
std::string layerTypeName(char kind)
{
    switch (kind) {
    case kLayoutEmbedding:
        return "LayerType.embedding";
    case kLayoutLoss:
        return "LayerType.loss";
    case kLayoutMtp:
        return "LayerType.mtp";
    default:
        return "LayerType.decoder";
    }
}
// validate_layer_layout's MTP checks: does the layout's flat order hold a decoder layer after its first MTP
// layer; is an MTP layer on a rank's virtual stage other than its last; does a rank's last virtual stage hold
// MTP layers other than mtp_num_layers of them?
bool decoderAfterMtp(const PipelineLayout& l)
{
    const std::string flat = l.flat();
    const size_t m = flat.find(kLayoutMtp);
    return m != std::string::npos && flat.find(kLayoutDecoder, m) != std::string::npos;
}
bool mtpBeforeLastChunk(const Ctx& c)
{
    const auto l = layoutOf(c);
    const size_t chunks = layoutChunks(c);
    if (!l || chunks == 0)
        return false;
    for (size_t i = 0; i < (chunks - 1) * static_cast<size_t>(ppSize(c)); ++i)
        if (l->count(kLayoutMtp, i) > 0)
            return true;
    return false;
}
bool mtpSplitInLastChunk(const Ctx& c)
{
    const auto l = layoutOf(c);
    const size_t chunks = layoutChunks(c);
    if (!l || chunks == 0)
        return false;
    for (size_t i = (chunks - 1) * static_cast<size_t>(ppSize(c)); i < l->stages.size(); ++i) {
        const size_t n = l->count(kLayoutMtp, i);
        if (n > 0 && (!c.r.mtp_num_layers || static_cast<long long>(n) != *c.r.mtp_num_layers))
            return true;
    }
    return false;
}
// The middle stages of an uneven split and their layers (TC:2053-2127): PP and num_layers less the first /
// last stage where each is given.
long long middleStages(const Ctx& c)
{
    return static_cast<long long>(ppSize(c)) - (c.r.num_layers_in_first_pipeline_stage ? 1 : 0)
        - (c.r.num_layers_in_last_pipeline_stage ? 1 : 0);
}
long long middleLayers(const Ctx& c)
{
    return static_cast<long long>(c.r.num_layers) - c.r.num_layers_in_first_pipeline_stage.value_or(0)
        - c.r.num_layers_in_last_pipeline_stage.value_or(0);
}
// The first / last / middle-stage checks of TC's uneven branch (no layout before them in the chain).
bool unevenSplit(const Ctx& c)
{
    return !c.r.pipeline_model_parallel_layout && firstOrLast(c);
}
// The embedding / loss branch of the chain: no layout, no first / last sizes, one of the two counted.
bool accountedSplit(const Ctx& c)
{
    return !c.r.pipeline_model_parallel_layout && !firstOrLast(c) && accountFor(c);
}
void pipelineSizesOff(const Ctx&, FixIt& f)
{
    set(f, "unset num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage",
        "num_layers_in_first_pipeline_stage", nullptr);
    f.patch["num_layers_in_last_pipeline_stage"] = nullptr;
}
void accountForOff(const Ctx&, FixIt& f)
{
    set(f, "set account_for_embedding_in_pipeline_split=false and account_for_loss_in_pipeline_split=false",
        "account_for_embedding_in_pipeline_split", false);
    f.patch["account_for_loss_in_pipeline_split"] = false;
}

// MambaMixer.__init__'s shape (mamba_mixer.py:238-274 at d98e8a64).
bool mambaLayers(const Ctx& c)
{
    return hasLayer(c, 'M');
}
int64_t mambaHeads(const Ctx& c)
{
    return modelShape(c.r).mamba_heads;
}
bool gdnLayers(const Ctx& c)
{
    for (const LayerKind& k : layerKinds(c.r))
        if (k.mixer == LayerMixer::GatedDeltaNet)
            return true;
    return false;
}
bool gdnVariantOfProfile(const Ctx& c)
{
    const auto& v = profileInfo(c.profile).gdn_variants;
    return std::find(v.begin(), v.end(), c.r.experimental_attention_variant.value_or("")) != v.end();
}
// The pattern's layers the estimate and the worker do not build (RS38): DSA, MLA and DeepSeek-V4 symbols.
std::string unmodelledSymbols(const Ctx& c)
{
    if (!isHybrid(c.r))
        return "";
    std::string out;
    for (char ch : parseHybridPattern(*c.r.hybrid_layer_pattern).main)
        if (std::string("DCHW+").find(ch) != std::string::npos && out.find(ch) == std::string::npos)
            out.push_back(ch);
    return out;
}

bool layernormHasNoEffect(const Ctx& c)
{
    // RT1: with TE specs and standard attention both norms are IdentityOp (fused into the next linear);
    // MoE pre_mlp_layernorm and MLA's input_layernorm are real modules.
    // A hybrid stack is Transformer Engine's spec whatever transformer_impl says (hybrid_builders.py --spec).
    return (c.r.transformer_impl == "transformer_engine" || isHybrid(c.r)) && !c.r.multi_latent_attention
        && c.moeLayers() == 0;
}

// RS22: "" where the profile reads enable_mhc_connections, else where that field exists ("main").
std::string mhcFieldWhere(const Ctx& c)
{
    if (profileInfo(c.profile).hyper_connections_flag == "enable_mhc_connections")
        return "";
    std::string names;
    for (const ProfileInfo& p : profileTable())
        if (p.hyper_connections_flag == "enable_mhc_connections")
            names += (names.empty() ? "" : ", ") + std::string(p.name);
    return ", which exists only on " + names;
}

// dev: EP overlap allows full recompute under conditions (appendix G).
bool devFullUnderOverlap(const Ctx& c)
{
    return profileInfo(c.profile).full_recompute_under_ep_overlap && c.r.overlap_moe_expert_parallel_comm
        && c.full();
}

// R11: the labels outside the profile's allowed set, in the recipe's order.
std::vector<std::string> invalidLabels(const Ctx& c)
{
    std::vector<std::string> bad;
    const auto& allowed = allowedRecomputeModules(c.profile);
    for (const auto& l : c.r.recompute_modules.value_or(std::vector<std::string> {}))
        if (std::find(allowed.begin(), allowed.end(), l) == allowed.end())
            bad.push_back(l);
    return bad;
}
bool r11When(const Ctx& c)
{
    if (!c.selective() || !c.r.recompute_modules || c.r.recompute_modules->empty())
        return false;
    const auto& allowed = allowedRecomputeModules(c.profile);
    for (const auto& l : *c.r.recompute_modules)
        if (std::find(allowed.begin(), allowed.end(), l) == allowed.end())
            return true;
    return false;
}
void r11Args(const Ctx& c, Args& a)
{
    a.set("invalid_modules", pySet(invalidLabels(c)));
    a.set("allowed_modules", pySet(allowedRecomputeModules(c.profile)));
}
// A mistyped label becomes the label it most likely means (the studio's "did you mean" says the same);
// one that means nothing is dropped. Dropping every label would turn the candidate into the [] control, so
// the description says so rather than doing it quietly.
void r11Fix(const Ctx& c, FixIt& f)
{
    std::vector<std::string> keep, replaced, dropped;
    for (const auto& l : *c.r.recompute_modules) {
        const auto& allowed = allowedRecomputeModules(c.profile);
        std::string use = l;
        if (std::find(allowed.begin(), allowed.end(), l) == allowed.end()) {
            const auto near = suggestedRecomputeLabel(l, c.profile);
            if (!near) {
                dropped.push_back("'" + l + "'");
                continue;
            }
            replaced.push_back("'" + l + "' with '" + *near + "'");
            use = *near;
        }
        if (std::find(keep.begin(), keep.end(), use) == keep.end())
            keep.push_back(use);
    }
    auto join = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& s : v)
            out += (out.empty() ? "" : ", ") + s;
        return out;
    };
    std::string what;
    if (!replaced.empty())
        what = "replace " + join(replaced);
    if (!dropped.empty())
        what += (what.empty() ? "drop " : "; drop ") + join(dropped) + " (no label of this profile is near)";
    if (keep.empty())
        what += ": that leaves recompute_modules=[], the no-recompute control";
    f.description = what;
    f.patch["recompute_modules"] = keep;
}

// RS31: the attention heads (and query groups) split over the tensor-parallel ranks as Megatron Core's
// attention splits them (attention.py: divide(); with fewer query groups than TP ranks each rank serves one
// group and heads / groups of its heads). The failing division as Megatron's divide() prints it.
std::optional<std::pair<long long, long long>> tpHeadSplit(const Ctx& c)
{
    const long long tp = c.r.tensor_model_parallel_size, heads = c.r.num_attention_heads;
    // Heads that TP does not divide are TransformerConfig's refusal (RS37), raised before attention.py runs.
    if (tp < 1 || heads < 1 || heads % tp != 0)
        return std::nullopt;
    if (c.r.multi_latent_attention)
        return std::nullopt;
    const long long groups = c.r.num_query_groups.value_or(c.r.num_attention_heads);
    if (groups < 1)
        return std::nullopt;
    if (groups < tp)
        return heads % groups ? std::optional(std::make_pair(heads, groups)) : std::nullopt;
    if (groups % tp)
        return std::make_pair(groups, tp);
    return std::nullopt;
}

// RS33: the MLA dimension below 1 (the first in the recipe's order), "" when none is.
std::string mlaDimBelow1(const Ctx& c)
{
    if (!c.r.multi_latent_attention)
        return {};
    if (c.r.q_lora_rank && *c.r.q_lora_rank < 1)
        return "q_lora_rank";
    const std::pair<const char*, int> dims[]
        = { { "kv_lora_rank", c.r.kv_lora_rank }, { "qk_head_dim", c.r.qk_head_dim },
              { "qk_pos_emb_head_dim", c.r.qk_pos_emb_head_dim }, { "v_head_dim", c.r.v_head_dim } };
    for (const auto& [name, v] : dims)
        if (v < 1)
            return name;
    return {};
}

// RS23: sizes that must be at least 1. Megatron checks none of them (a zero divides by zero in Python or
// in our worker, a negative makes a nonsense shape); the fix-it sets 1, or unsets an optional one.
template <int Recipe::*M> bool below1(const Ctx& c)
{
    return c.r.*M < 1;
}
template <std::optional<int> Recipe::*M> bool optBelow1(const Ctx& c)
{
    return (c.r.*M).has_value() && *(c.r.*M) < 1;
}
template <int Recipe::*M> void valueOf(const Ctx& c, Args& a)
{
    a.set("v", std::to_string(c.r.*M));
}
template <std::optional<int> Recipe::*M> void optValueOf(const Ctx& c, Args& a)
{
    a.set("v", pyInt(c.r.*M));
}
template <const char* Key> void setOne(const Ctx&, FixIt& f)
{
    set(f, "set it to 1", Key, 1);
}
template <const char* Key> void unsetOpt(const Ctx&, FixIt& f)
{
    set(f, "unset it (use the default)", Key, nullptr);
}
constexpr char k_num_layers[] = "num_layers";
constexpr char k_hidden_size[] = "hidden_size";
constexpr char k_num_attention_heads[] = "num_attention_heads";
constexpr char k_seq_length[] = "seq_length";
constexpr char k_micro_batch_size[] = "micro_batch_size";
constexpr char k_vocab_size[] = "vocab_size";
constexpr char k_make_vocab_size_divisible_by[] = "make_vocab_size_divisible_by";
constexpr char k_tensor_model_parallel_size[] = "tensor_model_parallel_size";
constexpr char k_virtual_pipeline_model_parallel_size[] = "virtual_pipeline_model_parallel_size";
constexpr char k_pipeline_model_parallel_layout[] = "pipeline_model_parallel_layout";
constexpr char k_num_layers_in_first_pipeline_stage[] = "num_layers_in_first_pipeline_stage";
constexpr char k_num_layers_in_last_pipeline_stage[] = "num_layers_in_last_pipeline_stage";
constexpr char k_pipeline_model_parallel_size[] = "pipeline_model_parallel_size";
constexpr char k_context_parallel_size[] = "context_parallel_size";
constexpr char k_expert_model_parallel_size[] = "expert_model_parallel_size";
constexpr char k_data_parallel_size[] = "data_parallel_size";
constexpr char k_ffn_hidden_size[] = "ffn_hidden_size";
constexpr char k_num_query_groups[] = "num_query_groups";
constexpr char k_kv_channels[] = "kv_channels";
constexpr char k_global_batch_size[] = "global_batch_size";
constexpr char k_moe_ffn_hidden_size[] = "moe_ffn_hidden_size";
constexpr char k_moe_latent_size[] = "moe_latent_size";
constexpr char k_max_position_embeddings[] = "max_position_embeddings";
constexpr char k_dsa_indexer_n_heads[] = "dsa_indexer_n_heads";
constexpr char k_dsa_indexer_head_dim[] = "dsa_indexer_head_dim";
constexpr char k_dsa_indexer_topk[] = "dsa_indexer_topk";
// R46: the layout alone places the layers.
void otherSplitOff(const Ctx&, FixIt& f)
{
    set(f,
        "keep the layout alone: unset the first / last stage sizes, count neither the embedding nor the loss",
        "num_layers_in_first_pipeline_stage", nullptr);
    f.patch["num_layers_in_last_pipeline_stage"] = nullptr;
    f.patch["account_for_embedding_in_pipeline_split"] = false;
    f.patch["account_for_loss_in_pipeline_split"] = false;
}
// R48: the virtual stages the layout has (None for one, as TransformerConfig leaves it).
void layoutVpp(const Ctx& c, FixIt& f)
{
    const size_t chunks = layoutChunks(c);
    set(f, "set virtual_pipeline_model_parallel_size to the layout's stages per pipeline rank",
        "virtual_pipeline_model_parallel_size",
        chunks > 1 ? nlohmann::json(chunks) : nlohmann::json(nullptr));
}

// hidden_size // num_attention_heads when kv_channels is unset and the division is not exact (RS24, M7).
bool headsDoNotDivideHidden(const Ctx& c)
{
    return !c.r.kv_channels && c.r.hidden_size >= 1 && c.r.num_attention_heads >= 1
        && c.r.hidden_size % c.r.num_attention_heads != 0;
}
void kvChannelsArgs(const Ctx& c, Args& a)
{
    a.set("h", std::to_string(c.r.hidden_size));
    a.set("n", std::to_string(c.r.num_attention_heads));
    a.set("kv", std::to_string(c.r.hidden_size / c.r.num_attention_heads));
}
void kvChannelsFix(const Ctx& c, FixIt& f)
{
    set(f, "set kv_channels explicitly (hidden_size // num_attention_heads, at least 1)", "kv_channels",
        std::max(1, c.r.hidden_size / c.r.num_attention_heads));
}

bool dropoutOutside(double p)
{
    return !(p >= 0.0 && p <= 1.0);
}

// pipeline x virtual pipeline stages, in 64 bits (RS28): more stages than layers leaves a chunk empty.
long long pipelineChunks(const Ctx& c)
{
    return static_cast<long long>(c.r.pipeline_model_parallel_size)
        * c.r.virtual_pipeline_model_parallel_size.value_or(1);
}

// seq_length x micro_batch_size x hidden_size: the elements of one activation (RS29), in floating point so
// it cannot overflow while it is checked.
double activationElements(const Ctx& c)
{
    return static_cast<double>(c.r.seq_length) * c.r.micro_batch_size * c.r.hidden_size;
}
constexpr double kTwoTo62 = 4611686018427387904.0;
} // namespace

const std::vector<Row>& ruleRows()
{
    // clang-format off
    static const std::vector<Row> rows = {
    // ===================================== Megatron-LM validate_args (flags only) =====================
    { "M1", "*", kFlags, E, "checkpoint_activations_flag",
      "--checkpoint-activations was given (Megatron-LM prints this and exits)",
      "--checkpoint-activations is no longer valid, use --recompute-activations, or, for more control, --recompute-granularity and --recompute-method.",
      MC, { { "main", "ARGS:601-605" } },
      [](const Ctx& c) { return c.r.checkpoint_activations_flag.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use --recompute-activations instead", "checkpoint_activations_flag", nullptr); f.patch["recompute_activations"] = true; },
      "drop --checkpoint-activations, use --recompute-activations", "" },
    { "M2", "*", kFlags, A, "recompute_activations recompute_granularity",
      "--recompute-activations sets recompute_granularity='selective'",
      "recompute_granularity: {old} -> 'selective' (--recompute-activations)",
      MC, { { "main", "ARGS:607-609" } },
      [](const Ctx& c) { return c.r.recompute_activations; },
      [](const Ctx& c, Args& a) { a.set("old", c.r.recompute_granularity ? pyRepr(*c.r.recompute_granularity) : "None"); },
      [](Ctx& c) { c.r.recompute_granularity = "selective"; c.r.recompute_activations = false; }, nullptr, "", "" },
    { "M3", "*", kFlags, E, "distribute_saved_activations tensor_model_parallel_size",
      "distribute_saved_activations with tensor_model_parallel_size <= 1",
      "can distribute recomputed activations only across tensor model parallel groups",
      MC, { { "main", "ARGS:1410-1423" } },
      [](const Ctx& c) { return c.r.distribute_saved_activations && c.r.tensor_model_parallel_size <= 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "" },
    { "M3", "*", kFlags, E, "distribute_saved_activations recompute_granularity",
      "distribute_saved_activations without full recompute",
      "distributed recompute activations is only application to full recompute granularity",
      MC, { { "main", "ARGS:1410-1423" } },
      [](const Ctx& c) { return c.r.distribute_saved_activations && !c.gIs("full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "" },
    { "M3", "*", kFlags, E, "distribute_saved_activations recompute_method",
      "distribute_saved_activations without a recompute method",
      "for distributed recompute activations to work you need to use a recompute method ",
      MC, { { "main", "ARGS:1410-1423" } },
      [](const Ctx& c) { return c.r.distribute_saved_activations && !c.r.recompute_method; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "" },
    { "M4", "*", kFlags, E, "recompute_granularity recompute_method",
      "selective granularity with a recompute method",
      "recompute method is not yet supported for selective recomputing granularity",
      MC, { { "main", "ARGS:1425-1428" } },
      [](const Ctx& c) { return c.selective() && c.r.recompute_method.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_method", "recompute_method", nullptr); },
      "recompute_method=null", "" },
    { "M5", "*", kFlags, W, "sequence_parallel tensor_model_parallel_size",
      "tensor_model_parallel_size == 1 with sequence_parallel: Megatron-LM warns and turns it off",
      "Disabling sequence parallelism because tensor model parallelism is disabled",
      MC, { { "main", "ARGS:1433-1439" } },
      [](const Ctx& c) { return c.r.tensor_model_parallel_size == 1 && c.r.sequence_parallel; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set sequence_parallel=false", "sequence_parallel", false); },
      "sequence_parallel=false", "" },
    { "M5", "*", kFlags, A, "sequence_parallel",
      "tensor_model_parallel_size == 1 sets sequence_parallel=False",
      "sequence_parallel: True -> False (tensor_model_parallel_size == 1)",
      MC, { { "main", "ARGS:1433-1439" } },
      [](const Ctx& c) { return c.r.tensor_model_parallel_size == 1 && c.r.sequence_parallel; }, nullptr,
      [](Ctx& c) { c.r.sequence_parallel = false; }, nullptr, "", "" },
    { "M6", "*", kFlags, A, "cpu_offloading cpu_offloading_num_layers",
      "cpu_offloading_num_layers > 0 sets cpu_offloading=True",
      "cpu_offloading: False -> True (cpu_offloading_num_layers={n})",
      MC, { { "main", "ARGS:1950-1951" } },
      [](const Ctx& c) { return c.r.cpu_offloading_num_layers > 0 && !c.r.cpu_offloading; },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.cpu_offloading_num_layers)); },
      [](Ctx& c) { c.r.cpu_offloading = true; }, nullptr, "", "" },

    { "M7", "*", kFlags, E, "hidden_size num_attention_heads kv_channels",
      "hidden_size not a multiple of num_attention_heads without --kv-channels (a bare assert)",
      "assert args.hidden_size % args.num_attention_heads == 0",
      MC, { { "bridge-pin", "ARGS:1281" }, { "guide", "ARGS:1280" }, { "main", "ARGS:1332" }, { "dev", "ARGS:1421" } },
      headsDoNotDivideHidden, nullptr, nullptr, kvChannelsFix,
      "kv_channels = hidden_size // num_attention_heads", "a bare assert: Megatron-LM prints the AssertionError with this line and no message" },
    { "M8", "*", kFlags, A, "num_layers hybrid_layer_pattern",
      "--hybrid-layer-pattern sets num_layers to the pattern's layer count",
      "--hybrid-layer-pattern is set; ignoring --num-layers ({n}) and using the layer count derived from the pattern ({p}).",
      MC, { { "bridge-pin", "ARGS:761-771" }, { "guide", "ARGS:761-771" }, { "main", "ARGS:787-797" }, { "dev", "ARGS:823-833" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.num_layers != patternLayers(c); },
      [](const Ctx& c, Args& a) { a.set("n", c.r.num_layers > 0 ? std::to_string(c.r.num_layers) : "None"); a.set("p", std::to_string(patternLayers(c))); },
      [](Ctx& c) { c.r.num_layers = patternLayers(c); }, nullptr, "",
      "Megatron-LM warns only when --num-layers was given; without it num_layers is set from the pattern silently" },
    { "M12", "*", kFlags, E, "hybrid_layer_pattern num_layers_in_first_pipeline_stage",
      "--decoder-first-pipeline-num-layers with a hybrid pattern that has '|' segments",
      "If --hybrid-layer-pattern contains pipe separators, --decoder-first-pipeline-num-layers should not be specified as the pipeline layout is explicitly defined.",
      MC, { { "bridge-pin", "ARGS:776-782" }, { "guide", "ARGS:776-782" }, { "main", "ARGS:802-808" }, { "dev", "ARGS:838-844" } },
      [](const Ctx& c) { return patternSegments(c) > 1 && c.r.num_layers_in_first_pipeline_stage.has_value(); }, nullptr, nullptr,
      pipelineSizesOff, "num_layers_in_first_pipeline_stage=null, num_layers_in_last_pipeline_stage=null", "the '|' segments are the pipeline split" },
    { "M12", "*", kFlags, E, "hybrid_layer_pattern num_layers_in_last_pipeline_stage",
      "--decoder-last-pipeline-num-layers with a hybrid pattern that has '|' segments",
      "If --hybrid-layer-pattern contains pipe separators, --decoder-last-pipeline-num-layers should not be specified as the pipeline layout is explicitly defined.",
      MC, { { "bridge-pin", "ARGS:776-787" }, { "guide", "ARGS:776-787" }, { "main", "ARGS:802-813" }, { "dev", "ARGS:838-849" } },
      [](const Ctx& c) { return patternSegments(c) > 1 && c.r.num_layers_in_last_pipeline_stage.has_value(); }, nullptr, nullptr,
      pipelineSizesOff, "num_layers_in_first_pipeline_stage=null, num_layers_in_last_pipeline_stage=null", "" },
    { "M12", "*", kFlags, E, "hybrid_layer_pattern pipeline_model_parallel_layout",
      "--pipeline-model-parallel-layout with --hybrid-layer-pattern",
      "--pipeline-model-parallel-layout should not be used with --hybrid-layer-pattern. Pipeline stage layout is defined by | separators in the pattern.",
      MC, { { "bridge-pin", "ARGS:799-802" }, { "guide", "ARGS:799-802" }, { "main", "ARGS:825-828" }, { "dev", "ARGS:861-864" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.pipeline_model_parallel_layout.has_value(); }, nullptr, nullptr,
      unsetOpt<k_pipeline_model_parallel_layout>, "pipeline_model_parallel_layout=null", "" },
    { "M12", "*", kFlags, E, "hybrid_layer_pattern account_for_embedding_in_pipeline_split",
      "--account-for-embedding-in-pipeline-split with --hybrid-layer-pattern",
      "--account-for-embedding-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage layout is defined by | separators in the pattern.",
      MC, { { "bridge-pin", "ARGS:803-807" }, { "guide", "ARGS:803-807" }, { "main", "ARGS:829-833" }, { "dev", "ARGS:865-869" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.account_for_embedding_in_pipeline_split; }, nullptr, nullptr,
      accountForOff, "account_for_embedding_in_pipeline_split=false", "" },
    { "M12", "*", kFlags, E, "hybrid_layer_pattern account_for_loss_in_pipeline_split",
      "--account-for-loss-in-pipeline-split with --hybrid-layer-pattern",
      "--account-for-loss-in-pipeline-split should not be used with --hybrid-layer-pattern. Pipeline stage layout is defined by | separators in the pattern.",
      MC, { { "bridge-pin", "ARGS:808-812" }, { "guide", "ARGS:808-812" }, { "main", "ARGS:834-838" }, { "dev", "ARGS:870-874" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.account_for_loss_in_pipeline_split; }, nullptr, nullptr,
      accountForOff, "account_for_loss_in_pipeline_split=false", "" },
    { "M10", "*", kFlags, E, "pipeline_model_parallel_layout pipeline_model_parallel_size",
      "--pipeline-model-parallel-layout whose stages pipeline_model_parallel_size does not divide",
      "The length of pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (num_stages={n}, args.pipeline_model_parallel_size={pp})",
      MC, { { "bridge-pin", "ARGS:907-915" }, { "guide", "ARGS:907-915" }, { "main", "ARGS:941-949" }, { "dev", "ARGS:968-978" } },
      [](const Ctx& c) { const auto l = layoutOf(c); return !isHybrid(c.r) && l && ppSize(c) >= 1 && l->stages.size() % static_cast<size_t>(ppSize(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(layoutOf(c)->stages.size())); a.set("pp", std::to_string(ppSize(c))); }, nullptr,
      nullptr, "stages a multiple of pipeline_model_parallel_size", "validate_args takes the virtual stages from the layout (the flag reader does the same); Megatron Core's own check of the stages is R47" },
    { "M11", "*", kFlags, E, "num_layers pipeline_model_parallel_size account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split",
      "the even split without virtual stages: num_layers (+1 for each of the embedding and the loss counted) not a multiple of PP",
      "Number of layers should be divisible by the pipeline-model-parallel size",
      MC, { { "bridge-pin", "ARGS:951-964" }, { "guide", "ARGS:951-964" }, { "main", "ARGS:985-998" }, { "dev", "ARGS:1024-1041" } },
      [](const Ctx& c) { return !isHybrid(c.r) && !c.r.pipeline_model_parallel_layout && !vppSet(c) && !firstOrLast(c) && c.r.num_layers >= 1 && ppSize(c) >= 1 && pipelineSplitLayers(c.r) % ppSize(c) != 0; }, nullptr, nullptr,
      nullptr, "num_layers a multiple of pipeline_model_parallel_size, or a layout / first and last stage sizes", "without --num-layers-per-virtual-pipeline-stage or --num-virtual-stages-per-pipeline-rank; with them the flag reader and RT28 check it" },
    { "M9", "*", kFlags, E, "moe_latent_size",
      "--moe-latent-size below 1",
      "MoE latent projection dimension has to be greater than zero.",
      MC, { { "bridge-pin", "ARGS:1894-1896" }, { "guide", "ARGS:1893-1895" }, { "main", "ARGS:1979-1981" }, { "dev", "ARGS:2176-2180" } },
      [](const Ctx& c) { return c.r.moe_latent_size && *c.r.moe_latent_size <= 0; }, nullptr, nullptr, unsetOpt<k_moe_latent_size>,
      "moe_latent_size=null", "" },
    { "M9", "*", kFlags, E, "moe_latent_size num_moe_experts",
      "--moe-latent-size without --num-experts",
      "MoE latent projections are applicable only for MoE models.",
      MC, { { "bridge-pin", "ARGS:1897" }, { "guide", "ARGS:1896" }, { "main", "ARGS:1982" }, { "dev", "ARGS:2181-2183" } },
      [](const Ctx& c) { return c.r.moe_latent_size && !c.r.num_moe_experts; }, nullptr, nullptr, unsetOpt<k_moe_latent_size>,
      "moe_latent_size=null", "" },
    // ===================================== Megatron Bridge, before finalize (overrides only) ==========
    { "B8", "*", kBridge, E, "mixed_precision",
      "mixed_precision names no Bridge recipe",
      "mixed_precision={name} is not a Megatron Bridge mixed-precision recipe",
      BR, { { "*", "training/mixed_precision.py:216-420" } },
      [](const Ctx& c) { return c.r.mixed_precision && !findMixedPrecision(*c.r.mixed_precision); },
      [](const Ctx& c, Args& a) { a.set("name", pyRepr(*c.r.mixed_precision)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset mixed_precision", "mixed_precision", nullptr); },
      "mixed_precision=null", "" },
    { "B8", "*", kBridge, A, "mixed_precision bf16 fp16 fp8 fp8_recipe fp4 fp8_param_gather",
      "mixed_precision overwrites bf16/fp16/fp8/fp8_recipe/fp4/fp8_param_gather before validation (its fp8_recipe default is tensorwise, MCore's is delayed)",
      "mixed_precision={name} overwrites {changes}",
      BR, { { "*", "training/config.py:1992-2032; training/mixed_precision.py:49-52,138-160,216-420" } },
      [](const Ctx& c) {
          const MixedPrecisionRecipe* m = c.r.mixed_precision ? findMixedPrecision(*c.r.mixed_precision) : nullptr;
          return m && (m->bf16 != c.r.bf16 || m->fp16 != c.r.fp16 || m->fp8 != c.r.fp8 || m->fp8_recipe != c.r.fp8_recipe || m->fp4 != c.r.fp4 || m->fp8_param_gather != c.r.fp8_param_gather);
      },
      [](const Ctx& c, Args& a) {
          const MixedPrecisionRecipe* m = findMixedPrecision(*c.r.mixed_precision);
          std::string s;
          auto add = [&s](const char* k, const std::string& from, const std::string& to) {
              if (from != to)
                  s += (s.empty() ? "" : ", ") + std::string(k) + ": " + from + " -> " + to;
          };
          add("bf16", pyBool(c.r.bf16), pyBool(m->bf16));
          add("fp16", pyBool(c.r.fp16), pyBool(m->fp16));
          add("fp8", c.r.fp8 ? pyRepr(*c.r.fp8) : "None", m->fp8 ? pyRepr(*m->fp8) : "None");
          add("fp8_recipe", pyRepr(c.r.fp8_recipe), pyRepr(m->fp8_recipe));
          add("fp4", c.r.fp4 ? pyRepr(*c.r.fp4) : "None", m->fp4 ? pyRepr(*m->fp4) : "None");
          add("fp8_param_gather", pyBool(c.r.fp8_param_gather), pyBool(m->fp8_param_gather));
          a.set("name", pyRepr(*c.r.mixed_precision));
          a.set("changes", s);
      },
      [](Ctx& c) {
          const MixedPrecisionRecipe* m = findMixedPrecision(*c.r.mixed_precision);
          c.r.bf16 = m->bf16; c.r.fp16 = m->fp16; c.r.fp8 = m->fp8; c.r.fp8_recipe = m->fp8_recipe; c.r.fp4 = m->fp4;
          c.r.fp8_param_gather = m->fp8_param_gather;
      }, nullptr, "", "" },
    { "B4", "*", kBridge, E, "recompute_granularity comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with full recompute (Bridge's pre-check at comm_overlap.setup, before finalize; Bridge code, so it applies under every MCore profile, dev included)",
      "disable full recomputation when enabling overlap_moe_expert_parallel_comm",
      BR, { { "*", "training/comm_overlap.py:499-512" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.gIs("full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "turn full recompute off (or disable the EP overlap and remeasure)", "recompute_granularity", nullptr); f.patch["recompute_method"] = nullptr; f.patch["recompute_num_layers"] = nullptr; },
      "recompute_granularity=null (keep the overlap) or disable the overlap", "" },
    { "B4", "*", kBridge, E, "recompute_method comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with a recompute method",
      "disable recomputation method when enabling overlap_moe_expert_parallel_comm",
      BR, { { "*", "training/comm_overlap.py:499-512" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.recompute_method.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_method", "recompute_method", nullptr); },
      "recompute_method=null", "" },
    { "B4", "*", kBridge, E, "recompute_num_layers comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with recompute_num_layers set",
      "recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm",
      BR, { { "*", "training/comm_overlap.py:499-512" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.recompute_num_layers.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_num_layers", "recompute_num_layers", nullptr); },
      "recompute_num_layers=null", "" },
    { "B4", "*", kBridge, E, "recompute_modules comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with 'moe' in recompute_modules (checked on the modules as given, before R10/R19)",
      "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm",
      BR, { { "*", "training/comm_overlap.py:499-512" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.has("moe"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe" }, "drop 'moe' from recompute_modules (keep an inner boundary such as moe_act)"); },
      "drop 'moe' from recompute_modules", "" },
    { "B2", "*", kBridge, A, "cuda_graph_modules cuda_graph_scope",
      "cuda_graph_impl == 'none' clears the CUDA graph modules",
      "cuda_graph_modules: {old} -> [] (cuda_graph_impl='none')",
      BR, { { "*", "utils/cuda_graph.py:134-152" } },
      [](const Ctx& c) { return c.impl("none") && (!c.r.cuda_graph_modules || !c.r.cuda_graph_modules->empty() || c.r.cuda_graph_scope); },
      [](const Ctx& c, Args& a) { a.set("old", c.r.cuda_graph_modules ? pyList(*c.r.cuda_graph_modules) : c.r.cuda_graph_scope ? pyList(*c.r.cuda_graph_scope) : "'full'"); },
      [](Ctx& c) { c.r.cuda_graph_modules = std::vector<std::string> {}; c.r.cuda_graph_scope.reset(); }, nullptr, "", "" },
    { "B2", "*", kBridge, E, "cuda_graph_impl cuda_graph_modules",
      "cuda_graph_impl == 'local' without a full-iteration graph (training)",
      "Megatron Bridge supports model.cuda_graph_impl=\"local\" only for full-iteration CUDA graphs{with_scopes}. Use model.cuda_graph_impl=\"transformer_engine\" for scoped CUDA graph capture such as \"attn\" or \"mlp\".",
      BR, { { "*", "utils/cuda_graph.py:134-152" } },
      [](const Ctx& c) { return c.impl("local") && !cgSetHas(c.r.cuda_graph_modules, "full_iteration") && !cgSetHas(c.r.cuda_graph_scope, "full_iteration"); },
      [](const Ctx& c, Args& a) { a.set("with_scopes", c.r.cuda_graph_modules && !c.r.cuda_graph_modules->empty() ? " with scopes " + pyList(*c.r.cuda_graph_modules) : ""); },
      nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set cuda_graph_impl=transformer_engine for scoped capture", "cuda_graph_impl", "transformer_engine"); },
      "cuda_graph_impl=transformer_engine", "the scopes rendering ' with scopes [..]' is inferred; the reference abbreviates it" },
    { "B1", "*", kBridge, A, "sequence_parallel",
      "Bridge's finalize() turns sequence parallelism off when tensor_model_parallel_size <= 1 (so MP1 never fires under Bridge)",
      "sequence_parallel: True -> False (tensor_model_parallel_size <= 1)",
      BR, { { "*", "models/transformer_config.py:165-179" } },
      [](const Ctx& c) { return c.r.sequence_parallel && c.r.tensor_model_parallel_size <= 1; }, nullptr,
      [](Ctx& c) { c.r.sequence_parallel = false; }, nullptr, "", "" },
    { "B10", "*", kBridge, E, "num_layers hybrid_layer_pattern",
      "num_layers given and not the hybrid pattern's layer count (HybridModelProvider.finalize asserts)",
      "num_layers ({n}) does not match the number of layers derived from hybrid_layer_pattern ({p}). Please correct num_layers or the pattern.",
      BR, { { "*", "models/hybrid/hybrid_provider.py:236-251" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.num_layers >= 1 && c.r.num_layers != patternLayers(c); },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.num_layers)); a.set("p", std::to_string(patternLayers(c))); }, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "take num_layers from the pattern", "num_layers", patternLayers(c)); },
      "num_layers = the pattern's layer count", "" },
    { "B10", "*", kBridge, A, "num_layers hybrid_layer_pattern",
      "num_layers unset: HybridModelProvider.finalize takes the hybrid pattern's layer count",
      "num_layers: None -> {p} (the layers of hybrid_layer_pattern)",
      BR, { { "*", "models/hybrid/hybrid_provider.py:236-251" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.num_layers < 1 && patternLayers(c) >= 1; },
      [](const Ctx& c, Args& a) { a.set("p", std::to_string(patternLayers(c))); },
      [](Ctx& c) { c.r.num_layers = patternLayers(c); }, nullptr, "", "" },

    { "B11", "*", kAnyFormat, W, "peft.scheme peft.target_modules",
      "a LoRA target that names no linear module of this model (Bridge warns and adapts nothing there)",
      "No modules matched the requested target_modules entries: {names}",
      BR, { { "*", "peft/module_matcher.py:195-209" } },
      [](const Ctx& c) { return !loraTargetsNotInModel(c.r).empty(); },
      [](const Ctx& c, Args& a) { a.set("names", loraTargetsNotInModel(c.r)); }, nullptr,
      nullptr, "", "" },
    { "B12", "*", kBridge, A, "expert_tensor_parallel_size",
      "Bridge's finalize() sets expert_tensor_parallel_size to 1 when it is unset and EP > 1 (Megatron Core would use TP)",
      "expert_tensor_parallel_size: None -> 1 (expert_model_parallel_size={ep})",
      BR, { { "*", "models/transformer_config.py:80-88,177" } },
      [](const Ctx& c) { return !c.r.expert_tensor_parallel_size && c.r.expert_model_parallel_size > 1; },
      [](const Ctx& c, Args& a) { a.set("ep", std::to_string(c.r.expert_model_parallel_size)); },
      [](Ctx& c) { c.r.expert_tensor_parallel_size = 1; }, nullptr, "", "" },

    // ===================================== ModelParallelConfig.__post_init__ ==========================
    { "MP1", "*", kAnyFormat, E, "sequence_parallel tensor_model_parallel_size",
      "sequence_parallel with tensor_model_parallel_size <= 1",
      "Cannot use sequence parallelism without tensor parallelism",
      MC, { { "bridge-pin", "MPC:502-504" }, { "guide", "MPC:502-504" }, { "main", "MPC:502-504" } },
      [](const Ctx& c) { return c.r.sequence_parallel && c.r.tensor_model_parallel_size <= 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set sequence_parallel=false", "sequence_parallel", false); },
      "sequence_parallel=false", "" },
    { "MP2", "*", kAnyFormat, W, "sequence_parallel expert_model_parallel_size tensor_model_parallel_size",
      "expert and tensor parallelism without sequence parallelism",
      "When using expert parallelism and tensor parallelism for training, sequence parallelism must be used",
      MC, { { "main", "MPC:560-565" } },
      [](const Ctx& c) { return c.r.expert_model_parallel_size > 1 && c.r.tensor_model_parallel_size > 1 && !c.r.sequence_parallel; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set sequence_parallel=true", "sequence_parallel", true); },
      "sequence_parallel=true", "" },

    // ===================================== TransformerConfig.__post_init__ ============================
    { "R39", "*", kAnyFormat, E, "fp4 fp8",
      "fp4 and fp8 both set",
      "fp4 and fp8 cannot be used simultaneously. Please choose one.",
      MC, { { "main", "TC:1581" } },
      [](const Ctx& c) { return c.fp4() && c.fp8(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset fp4 (keep fp8)", "fp4", nullptr); },
      "fp4=null", "" },
    { "R40", "*", kAnyFormat, E, "num_moe_experts",
      "num_moe_experts set to 0 or below",
      "num_moe_experts must be non-negative.",
      MC, { { "bridge-pin", "TC:1583-1584" }, { "guide", "TC:1551-1552" }, { "main", "TC:1682-1683" }, { "dev", "TC(dev):1960-1961" } },
      [](const Ctx& c) { return c.r.num_moe_experts.has_value() && *c.r.num_moe_experts <= 0; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset num_moe_experts (a dense model)", "num_moe_experts", nullptr); },
      "num_moe_experts=null", "the message says non-negative; the check refuses 0 as well" },
    { "R38", "*", kAnyFormat, E, "moe_shared_expert_overlap moe_token_dispatcher_type",
      "shared-expert overlap with the allgather dispatcher",
      "moe_shared_expert_overlap only works with alltoall or flex token dispatcher.",
      MC, { { "main", "TC:1820-1825" } },
      [](const Ctx& c) { return c.r.moe_shared_expert_intermediate_size && c.r.moe_shared_expert_overlap && c.r.moe_token_dispatcher_type != "alltoall" && c.r.moe_token_dispatcher_type != "flex"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_token_dispatcher_type=alltoall", "moe_token_dispatcher_type", "alltoall"); },
      "moe_token_dispatcher_type=alltoall", "" },
    { "R01", "*", kAnyFormat, E, "cpu_offloading_num_layers num_layers",
      "cpu_offloading with cpu_offloading_num_layers < 0 or >= num_layers",
      "CPU offloading can be done only for layers less than {num_layers}",
      MC, { { "bridge-pin", "TC:1765" }, { "guide", "TC:1733" }, { "main", "TC:1884" } },
      [](const Ctx& c) { return c.r.cpu_offloading && (c.r.cpu_offloading_num_layers < 0 || c.r.cpu_offloading_num_layers >= c.r.num_layers); },
      [](const Ctx& c, Args& a) { a.set("num_layers", std::to_string(c.r.num_layers)); }, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "offload fewer layers than num_layers", "cpu_offloading_num_layers", std::max(0, std::min(c.r.cpu_offloading_num_layers, c.r.num_layers - 1))); },
      "cpu_offloading_num_layers=num_layers-1 (or 0)", "" },
    { "R02", "*", kAnyFormat, E, "cpu_offloading pipeline_model_parallel_size",
      "cpu_offloading with pipeline parallelism",
      "Currently there is no support for Pipeline parallelism with CPU offloading",
      MC, { { "bridge-pin", "TC:1772" }, { "guide", "TC:1740" }, { "main", "TC:1891" } },
      [](const Ctx& c) { return c.r.cpu_offloading && c.r.pipeline_model_parallel_size > 1; }, nullptr, nullptr,
      cpuOffloadOff, "cpu_offloading=false", "" },
    { "R03", "*", kAnyFormat, E, "cpu_offloading recompute_granularity",
      "cpu_offloading with activation recompute",
      "CPU offloading does not work when activation recomputation is enabled",
      MC, { { "bridge-pin", "TC:1777" }, { "guide", "TC:1745" }, { "main", "TC:1896" } },
      [](const Ctx& c) { return c.r.cpu_offloading && c.gSet(); }, nullptr, nullptr,
      cpuOffloadOff, "cpu_offloading=false (or recompute_granularity=null)",
      "the guide: cpu_offloading is the alternative to recompute, not a complement" },
    { "R04", "*", kAnyFormat, E, "recompute_granularity",
      "recompute_granularity not in {full, selective}",
      "When using recompute_granuarlity: {g} must be \"full\"or \"selective\".",
      MC, { { "bridge-pin", "TC:1783" }, { "guide", "TC:1751" }, { "main", "TC:1902" } },
      [](const Ctx& c) { return c.gSet() && !c.gIs("full") && !c.gIs("selective"); },
      [](const Ctx& c, Args& a) { a.set("g", pyStr(c.r.recompute_granularity)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_granularity", "recompute_granularity", nullptr); },
      "recompute_granularity=null (or full / selective)", "" },
    { "R05", "*", kAnyFormat, E, "recompute_method",
      "recompute_method not in {block, uniform}",
      "recompute_method: {recompute_method} must be \"block\" or \"uniform\".",
      MC, { { "bridge-pin", "TC:1790" }, { "guide", "TC:1758" }, { "main", "TC:1909" } },
      [](const Ctx& c) { return c.gSet() && c.r.recompute_method && *c.r.recompute_method != "block" && *c.r.recompute_method != "uniform"; },
      [](const Ctx& c, Args& a) { a.set("recompute_method", pyStr(c.r.recompute_method)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_method=uniform", "recompute_method", "uniform"); },
      "recompute_method=uniform", "" },
    { "R06", "*", kAnyFormat, E, "recompute_method recompute_granularity",
      "full granularity without a recompute_method",
      "Using recompute_granularity: {g} so recompute_method must be \"block\" or \"uniform\"",
      MC, { { "bridge-pin", "TC:1794" }, { "guide", "TC:1762" }, { "main", "TC:1913" } },
      [](const Ctx& c) { return c.gSet() && !c.r.recompute_method && !c.selective(); },
      [](const Ctx& c, Args& a) { a.set("g", pyStr(c.r.recompute_granularity)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_method=uniform", "recompute_method", "uniform"); },
      "recompute_method=uniform", "" },
    { "R07", "*", kAnyFormat, E, "recompute_num_layers recompute_granularity",
      "full granularity without recompute_num_layers (no range check follows: see RS01-RS03)",
      "When using recompute_granularity: {g} recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: {num_layers // pipeline_model_parallel_size}",
      MC, { { "bridge-pin", "TC:1800" }, { "guide", "TC:1768" }, { "main", "TC:1919" } },
      [](const Ctx& c) { return c.gSet() && !c.selective() && !c.r.recompute_num_layers; },
      [](const Ctx& c, Args& a) {
          a.set("g", pyStr(c.r.recompute_granularity));
          const int pp = std::max(1, c.r.pipeline_model_parallel_size);
          a.set("num_layers // pipeline_model_parallel_size", std::to_string(c.r.num_layers / pp));
      }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_num_layers=1", "recompute_num_layers", 1); },
      "recompute_num_layers=1", "" },
    { "R08", "*", kAnyFormat, E, "recompute_num_layers recompute_granularity",
      "selective granularity with recompute_num_layers set",
      "When using recompute_granularity: selective recompute_num_layers must be None.",
      MC, { { "bridge-pin", "TC:1808" }, { "guide", "TC:1776" }, { "main", "TC:1926" } },
      [](const Ctx& c) { return c.selective() && c.r.recompute_num_layers.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_num_layers", "recompute_num_layers", nullptr); },
      "recompute_num_layers=null", "" },
    { "R09", "*", kAnyFormat, E, "distribute_saved_activations sequence_parallel",
      "recompute on, distribute_saved_activations with sequence parallelism",
      "distribute_saved_activations: {distribute_saved_activations} must be false when sequence parallel is enabled: {sequence_parallel}",
      MC, { { "bridge-pin", "TC:1815" }, { "guide", "TC:1783" }, { "main", "TC:1934" } },
      [](const Ctx& c) { return c.gSet() && c.r.distribute_saved_activations && c.r.sequence_parallel; },
      [](const Ctx& c, Args& a) { a.set("distribute_saved_activations", pyBool(c.r.distribute_saved_activations)); a.set("sequence_parallel", pyBool(c.r.sequence_parallel)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "" },
    { "R10", "*", kAnyFormat, A, "recompute_modules",
      "recompute_modules None becomes ['core_attn'] (for any granularity, before the label checks)",
      "recompute_modules: None -> ['core_attn']",
      MC, { { "bridge-pin", "TC:1821" }, { "guide", "TC:1789" }, { "main", "TC:1940-1941" } },
      [](const Ctx& c) { return !c.r.recompute_modules.has_value(); }, nullptr,
      [](Ctx& c) { c.r.recompute_modules = std::vector<std::string> { "core_attn" }; }, nullptr, "", "" },
    { "R11", "bridge-pin guide", kAnyFormat, E, "recompute_modules",
      "selective with a label outside the profile's allowed set ([] passes: the no-recompute control)",
      "Invalid choices for recompute_modules: {invalid_modules}. Allowed modules are: {allowed_modules}",
      MC, { { "bridge-pin", "TC:1824-1840" }, { "guide", "TC:1792-1808" } },
      r11When, r11Args, nullptr, r11Fix,
      "replace a mistyped label with the one it means, drop the others", "set reprs print in Python's hash order; here invalid labels keep the recipe's order and allowed ones the source's order" },
    { "R11", "main", kAnyFormat, E, "recompute_modules",
      "selective with a label outside the profile's allowed set (main adds gdp_in_proj, gdp_qkv, mhc)",
      "Invalid choices for recompute_modules: {invalid_modules}. Allowed modules are: {allowed_modules}",
      MC, { { "main", "TC:1943-1962" } }, r11When, r11Args, nullptr, r11Fix, "replace a mistyped label with the one it means, drop the others", "" },
    { "R11", "dev", kAnyFormat, E, "recompute_modules",
      "selective with a label outside the profile's allowed set (dev adds mhc and gdn, no gdp labels)",
      "Invalid choices for recompute_modules: {invalid_modules}. Allowed modules are: {allowed_modules}",
      MC, { { "dev", "TC(dev):2197-2213" } }, r11When, r11Args, nullptr, r11Fix, "replace a mistyped label with the one it means, drop the others", "" },
    { "R12", "*", kAnyFormat, E, "recompute_modules moe_grouped_gemm",
      "moe_act without moe_grouped_gemm",
      "moe_act in recompute_modules is only supported with moe_grouped_gemm.",
      MC, { { "bridge-pin", "TC:1842" }, { "guide", "TC:1810" }, { "main", "TC:1964" } },
      [](const Ctx& c) { return c.selective() && c.has("moe_act") && !c.r.moe_grouped_gemm; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_grouped_gemm=true", "moe_grouped_gemm", true); },
      "moe_grouped_gemm=true", "" },
    { "R13", "*", kAnyFormat, E, "recompute_modules multi_latent_attention",
      "mla_up_proj without multi-latent attention",
      "mla_up_proj in recompute_modules is only supported with multi_latent_attention.",
      MC, { { "bridge-pin", "TC:1847" }, { "guide", "TC:1815" }, { "main", "TC:1969" } },
      [](const Ctx& c) { return c.selective() && c.has("mla_up_proj") && !c.r.multi_latent_attention; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mla_up_proj" }, "drop 'mla_up_proj' (the model has no MLA)"); },
      "drop 'mla_up_proj'", "" },
    { "R14", "bridge-pin main", kAnyFormat, E, "recompute_modules experimental_attention_variant",
      "gdn_norm_out without a gated-delta-net variant (gdn, gdn2, gated_delta_net)",
      "gdn_norm_out in recompute_modules is only supported with experimental_attention_variant='gdn' or 'gdn2'.",
      MC, { { "bridge-pin", "TC:1853" }, { "main", "TC:1975" } },
      [](const Ctx& c) { return c.selective() && c.has("gdn_norm_out") && !gdnVariant(c); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "gdn_norm_out" }, "drop 'gdn_norm_out' (the model has no GDN)"); },
      "drop 'gdn_norm_out'", "" },
    { "R14", "guide dev", kAnyFormat, E, "recompute_modules experimental_attention_variant",
      "gdn_norm_out without experimental_attention_variant='gated_delta_net'",
      "gdn_norm_out in recompute_modules is only supported with experimental_attention_variant='gated_delta_net'.",
      MC, { { "guide", "TC:1822" }, { "dev", "TC(dev):2226-2248" } },
      [](const Ctx& c) { return c.selective() && c.has("gdn_norm_out") && c.r.experimental_attention_variant.value_or("") != "gated_delta_net"; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "gdn_norm_out" }, "drop 'gdn_norm_out' (the model has no GatedDeltaNet)"); },
      "drop 'gdn_norm_out'", "" },
    { "R42", "*", kAnyFormat, E, "linear_num_value_heads linear_num_key_heads experimental_attention_variant",
      "GatedDeltaNet value heads not a multiple of its key heads",
      "linear_num_value_heads ({v}) must be a multiple of linear_num_key_heads ({k}).",
      MC, { { "bridge-pin", "TC:1400-1404" }, { "guide", "TC:1368-1372" }, { "main", "TC:1495-1499" }, { "dev", "TC:1677-1681" } },
      [](const Ctx& c) { return gdnVariantOfProfile(c) && c.r.linear_num_key_heads >= 1 && c.r.linear_num_value_heads % c.r.linear_num_key_heads != 0; },
      [](const Ctx& c, Args& a) { a.set("v", std::to_string(c.r.linear_num_value_heads)); a.set("k", std::to_string(c.r.linear_num_key_heads)); }, nullptr,
      nullptr, "linear_num_value_heads a multiple of linear_num_key_heads", "the kernel repeats each key head over its value heads (repeat_interleave)" },
    { "R42", "bridge-pin guide main", kAnyFormat, E, "linear_num_key_heads tensor_model_parallel_size context_parallel_size experimental_attention_variant",
      "GatedDeltaNet key heads not a multiple of TP x CP",
      "self.linear_num_key_heads={k} must be a multiple of (self.tensor_model_parallel_size={tp} * self.context_parallel_size={cp}).",
      MC, { { "bridge-pin", "TC:1406-1410" }, { "guide", "TC:1374-1378" }, { "main", "TC:1501-1505" } },
      [](const Ctx& c) { const int n = c.r.tensor_model_parallel_size * c.r.context_parallel_size; return gdnVariantOfProfile(c) && n >= 1 && c.r.linear_num_key_heads % n != 0; },
      [](const Ctx& c, Args& a) { a.set("k", std::to_string(c.r.linear_num_key_heads)); a.set("tp", std::to_string(c.r.tensor_model_parallel_size)); a.set("cp", std::to_string(c.r.context_parallel_size)); }, nullptr,
      nullptr, "linear_num_key_heads a multiple of TP x CP", "each TP (and CP) rank holds whole key heads" },
    { "R43", "*", kAnyFormat, E, "experimental_attention_variant add_bias_linear",
      "DSA with linear biases",
      "DSA uses AbsorbedMLASelfAttention, which requires add_bias_linear=False. Disable linear bias for DSA configs.",
      MC, { { "bridge-pin", "TC:1417-1421" }, { "guide", "TC:1385-1389" }, { "main", "TC:1512-1516" }, { "dev", "TC(dev):1714-1718" } },
      [](const Ctx& c) { return dsa(c) && c.r.add_bias_linear; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set add_bias_linear=false", "add_bias_linear", false); },
      "add_bias_linear=false", "" },
    { "R44", "*", kAnyFormat, E, "experimental_attention_variant dsa_indexer_topk_freq",
      "DSA top-k frequency below 1",
      "dsa_indexer_topk_freq must be positive, got {v}.",
      MC, { { "bridge-pin", "TC:1422-1425" }, { "guide", "TC:1390-1393" }, { "main", "TC:1517-1520" }, { "dev", "TC(dev):1719-1722" } },
      [](const Ctx& c) { return dsa(c) && c.r.dsa_indexer_topk_freq < 1; },
      [](const Ctx& c, Args& a) { a.set("v", std::to_string(c.r.dsa_indexer_topk_freq)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set dsa_indexer_topk_freq=1 (every layer computes its top-k)", "dsa_indexer_topk_freq", 1); },
      "dsa_indexer_topk_freq=1", "" },
    { "R44", "*", kAnyFormat, E, "experimental_attention_variant dsa_indexer_skip_topk_offset",
      "DSA top-k sharing offset below 0",
      "dsa_indexer_skip_topk_offset must be non-negative, got {v}.",
      MC, { { "bridge-pin", "TC:1426-1430" }, { "guide", "TC:1394-1398" }, { "main", "TC:1521-1525" }, { "dev", "TC(dev):1723-1727" } },
      [](const Ctx& c) { return dsa(c) && c.r.dsa_indexer_skip_topk_offset < 0; },
      [](const Ctx& c, Args& a) { a.set("v", std::to_string(c.r.dsa_indexer_skip_topk_offset)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set dsa_indexer_skip_topk_offset=0", "dsa_indexer_skip_topk_offset", 0); },
      "dsa_indexer_skip_topk_offset=0", "" },
    { "G1", "dev", kAnyFormat, E, "recompute_modules experimental_attention_variant",
      "dev: gdn without experimental_attention_variant='gated_delta_net'",
      "gdn in recompute_modules is only supported with experimental_attention_variant='gated_delta_net'.",
      MC, { { "dev", "TC(dev):2226-2248" } },
      [](const Ctx& c) { return c.selective() && c.has("gdn") && c.r.experimental_attention_variant.value_or("") != "gated_delta_net"; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "gdn" }, "drop 'gdn' (the model has no GatedDeltaNet)"); },
      "drop 'gdn'", "message inferred from gdn_norm_out's: the reference gives the condition, not the wording" },
    { "G2", "dev", kAnyFormat, E, "recompute_modules",
      "dev: gdn and gdn_norm_out together",
      "'gdn' and 'gdn_norm_out' in recompute_modules cannot be used together. 'gdn' recomputes the full GatedDeltaNet module, including gated norm.",
      MC, { { "dev", "TC(dev):2226-2248" } },
      [](const Ctx& c) { return c.selective() && c.has("gdn") && c.has("gdn_norm_out"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "gdn_norm_out" }, "drop 'gdn_norm_out' ('gdn' already recomputes the gated norm)"); },
      "drop 'gdn_norm_out'", "" },
    { "R15", "*", kAnyFormat, W, "recompute_modules",
      "core_attn under selective (including R10's default)",
      "If you are using transformer_engine as the transformer implementation, the core_attn is from transformer_engine and may be the fused version. For fused attention, you have no need to set 'core_attn' to recompute. Please check that the core_attn recompute is really needed.",
      MC, { { "bridge-pin", "TC:1861" }, { "guide", "TC:1830" }, { "main", "TC:1983" } },
      [](const Ctx& c) { return c.selective() && c.has("core_attn"); }, nullptr, nullptr,
      // Under unfused attention core_attn is the common first candidate (RS21): dropping it is no fix there.
      [](const Ctx& c, FixIt& f) { if (c.r.attention_backend != "unfused") dropLabels(c, f, { "core_attn" }, "drop 'core_attn' and compare with [] (the no-recompute control)"); },
      "drop 'core_attn' and compare with [] (not under unfused attention, where RS21 makes it the first candidate)", "" },
    { "R16", "*", kAnyFormat, E, "recompute_modules moe_shared_expert_overlap",
      "shared_experts with shared-expert overlap",
      "shared_experts recompute cannot work with --moe-shared-expert-overlap.",
      MC, { { "bridge-pin", "TC:1869" }, { "guide", "TC:1838" }, { "main", "TC:1991" } },
      [](const Ctx& c) { return c.selective() && c.has("shared_experts") && c.r.moe_shared_expert_intermediate_size && c.r.moe_shared_expert_overlap; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_shared_expert_overlap=false (or drop 'shared_experts')", "moe_shared_expert_overlap", false); },
      "moe_shared_expert_overlap=false, or drop 'shared_experts'", "" },
    { "R17", "*", kAnyFormat, E, "recompute_modules fp8 fp8_recipe",
      "fp8 delayed scaling (MCore's default fp8_recipe) with moe_act or layernorm",
      "Delayed scaling does not support moe_act and layernorm recompute for fp8.",
      MC, { { "bridge-pin", "TC:1878" }, { "guide", "TC:1847" }, { "main", "TC:2000-2006" } },
      [](const Ctx& c) { return c.selective() && c.fp8() && anyOf(c, { "moe_act", "layernorm" }) && c.r.fp8_recipe == "delayed"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set fp8_recipe=tensorwise (or drop moe_act/layernorm)", "fp8_recipe", "tensorwise"); },
      "fp8_recipe=tensorwise, or drop moe_act/layernorm", "" },
    { "R18", "*", kAnyFormat, E, "recompute_modules fp8 te_version",
      "fp8 non-delayed scaling with moe_act or layernorm and Transformer Engine older than 2.6.0dev0 (only when te_version is known)",
      "moe_act and layernorm recompute for fp8 needs transformer-engine>=2.6.0dev0, but your version is {te_version}.",
      MC, { { "bridge-pin", "TC:1885" }, { "guide", "TC:1854" }, { "main", "TC:2007" } },
      [](const Ctx& c) { return c.selective() && c.fp8() && anyOf(c, { "moe_act", "layernorm" }) && c.r.fp8_recipe != "delayed" && c.r.te_version && teOlderThan26(*c.r.te_version); },
      [](const Ctx& c, Args& a) { a.set("te_version", *c.r.te_version); }, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe_act", "layernorm" }, "drop moe_act and layernorm (or upgrade Transformer Engine to >= 2.6)"); },
      "drop moe_act/layernorm, or upgrade Transformer Engine", "" },
    { "R19", "*", kAnyFormat, W, "moe_layer_recompute",
      "the deprecated moe_layer_recompute flag (always warns; runs after the label checks, which are not re-run)",
      "--moe-layer-recompute is deprecated. Use --recompute-granularity selective --recompute-modules moe_layer instead.",
      MC, { { "bridge-pin", "TC:1892" }, { "guide", "TC:1861" }, { "main", "TC:2014-2025" } },
      [](const Ctx& c) { return c.r.moe_layer_recompute; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "spell it recompute_granularity=selective with 'moe' in recompute_modules", "moe_layer_recompute", false); if (!c.full()) { f.patch["recompute_granularity"] = "selective"; f.patch["recompute_modules"] = modulesWith(c, "moe"); } },
      "recompute_granularity=selective, recompute_modules += ['moe'], moe_layer_recompute=false", "" },
    { "R19", "*", kAnyFormat, E, "moe_layer_recompute recompute_granularity",
      "moe_layer_recompute with full granularity",
      "Do not set --moe-layer-recompute with full recompute granularity. ",
      MC, { { "bridge-pin", "TC:1892" }, { "guide", "TC:1861" }, { "main", "TC:2014-2025" } },
      [](const Ctx& c) { return c.r.moe_layer_recompute && c.gIs("full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_layer_recompute=false", "moe_layer_recompute", false); },
      "moe_layer_recompute=false", "" },
    { "R19", "*", kAnyFormat, A, "moe_layer_recompute recompute_granularity recompute_modules",
      "moe_layer_recompute sets granularity selective and appends 'moe' (resolved: the flag is cleared once migrated)",
      "recompute_granularity: {g} -> 'selective', recompute_modules: {old} -> {new}",
      MC, { { "bridge-pin", "TC:1892" }, { "guide", "TC:1861" }, { "main", "TC:2014-2025" } },
      [](const Ctx& c) { return c.r.moe_layer_recompute && !c.gIs("full"); },
      [](const Ctx& c, Args& a) { a.set("g", c.r.recompute_granularity ? pyRepr(*c.r.recompute_granularity) : "None"); a.set("old", pyOptList(c.r.recompute_modules)); a.set("new", pyList(modulesWith(c, "moe"))); },
      [](Ctx& c) { c.r.recompute_granularity = "selective"; c.r.recompute_modules = modulesWith(c, "moe"); c.r.moe_layer_recompute = false; }, nullptr, "", "" },
    { "R20", "main", kAnyFormat, E, "recompute_modules enable_mhc_connections",
      "main: mhc without enable_mhc_connections",
      "'mhc' in recompute_modules requires enable_mhc_connections=True.",
      MC, { { "main", "TC:2028-2051" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && !c.r.enable_mhc_connections; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mhc" }, "drop 'mhc' (the model has no hyper-connections)"); },
      "drop 'mhc'", "" },
    { "R20", "dev", kAnyFormat, E, "recompute_modules enable_hyper_connections",
      "dev: mhc without enable_hyper_connections",
      "'mhc' in recompute_modules requires enable_hyper_connections=True.",
      MC, { { "dev", "TC(dev):2294-2299" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && !c.r.enable_hyper_connections; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mhc" }, "drop 'mhc' (the model has no hyper-connections)"); },
      "drop 'mhc'", "" },
    { "R20", "main dev", kAnyFormat, E, "recompute_modules",
      "mhc together with mlp",
      "'mhc' and 'mlp' in recompute_modules cannot be used together. They use different checkpoint mechanisms that may conflict.",
      MC, { { "main", "TC:2028-2051" }, { "dev", "TC(dev):2300-2390" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.has("mlp"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mlp" }, "drop 'mlp'"); },
      "drop 'mlp'", "" },
    { "R20", "main", kAnyFormat, E, "mhc_recompute_layer_num",
      "main: mhc with mhc_recompute_layer_num < 1",
      "mhc_recompute_layer_num must be a positive integer when 'mhc' is in recompute_modules.",
      MC, { { "main", "TC:2028-2051" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.r.mhc_recompute_layer_num && *c.r.mhc_recompute_layer_num < 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset mhc_recompute_layer_num", "mhc_recompute_layer_num", nullptr); },
      "mhc_recompute_layer_num=null", "" },
    { "R20", "main", kAnyFormat, E, "recompute_modules fine_grained_activation_offloading",
      "main: mhc with fine-grained activation offloading (NotImplementedError)",
      "'mhc' in recompute_modules + fine_grained_activation_offloading is not yet supported. The mHC recompute hook currently fires before the offloading backward chunk is initialized, causing tensor_pop on a None chunk. Disable one of them.",
      MC, { { "main", "TC:2028-2051" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.r.fine_grained_activation_offloading; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set fine_grained_activation_offloading=false", "fine_grained_activation_offloading", false); },
      "fine_grained_activation_offloading=false", "" },
    { "G3", "dev", kAnyFormat, E, "recompute_modules offload_modules",
      "dev: mhc with attn_norm or mlp_norm in offload_modules",
      "'mhc' in recompute_modules conflicts with offloading attn_norm / mlp_norm (offload_modules={offload_modules}).",
      MC, { { "dev", "TC(dev):2300-2390" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.r.fine_grained_activation_offloading && std::any_of(c.r.offload_modules.begin(), c.r.offload_modules.end(), [](const std::string& m) { return m == "attn_norm" || m == "mlp_norm"; }); },
      [](const Ctx& c, Args& a) { a.set("offload_modules", pyList(c.r.offload_modules)); }, nullptr,
      [](const Ctx& c, FixIt& f) { std::vector<std::string> keep; for (const auto& m : c.r.offload_modules) if (m != "attn_norm" && m != "mlp_norm") keep.push_back(m); set(f, "stop offloading attn_norm / mlp_norm", "offload_modules", keep); },
      "drop attn_norm/mlp_norm from offload_modules", "our wording: the reference gives the conflict, not dev's message" },
    { "R21", "main", kAnyFormat, W, "enable_mhc_connections recompute_modules",
      "main: hyper-connections without selective 'mhc'",
      "HyperConnections are enabled but 'mhc' is not in recompute_modules with selective recompute. Consider adding 'mhc' to recompute_modules with selective recompute to reduce activation memory.",
      MC, { { "main", "TC:2053" } },
      [](const Ctx& c) { return c.r.enable_mhc_connections && !(c.selective() && c.has("mhc")); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "recompute 'mhc' selectively", "recompute_granularity", "selective"); f.patch["recompute_modules"] = modulesWith(c, "mhc"); f.patch["recompute_method"] = nullptr; f.patch["recompute_num_layers"] = nullptr; },
      "recompute_granularity=selective, recompute_modules += ['mhc']", "" },
    { "R22", "main", kAnyFormat, E, "enable_mhc_connections recompute_granularity",
      "main: hyper-connections with full recompute (NotImplementedError)",
      "enable_mhc_connections is not yet compatible with full activation recompute. Use selective recompute with 'mhc' in recompute_modules, or disable activation recompute.",
      MC, { { "main", "TC:2069" } },
      [](const Ctx& c) { return c.r.enable_mhc_connections && c.gIs("full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use selective recompute with 'mhc'", "recompute_granularity", "selective"); f.patch["recompute_modules"] = { "mhc" }; f.patch["recompute_method"] = nullptr; f.patch["recompute_num_layers"] = nullptr; },
      "recompute_granularity=selective, recompute_modules=['mhc']", "" },
    { "R23", "*", kAnyFormat, E, "fine_grained_activation_offloading cpu_offloading",
      "fine-grained activation offloading with cpu_offloading",
      "fine_grained_activation_offloading cannot be enabled with cpu_offloading.",
      MC, { { "bridge-pin", "TC:1905-1907" }, { "main", "TC:2128-2130" } },
      [](const Ctx& c) { return c.r.fine_grained_activation_offloading && c.r.cpu_offloading; }, nullptr, nullptr,
      cpuOffloadOff, "cpu_offloading=false", "" },
    { "R24", "main", kAnyFormat, E, "offload_modules recompute_modules",
      "main: gdp_qkv offloaded while gdp_in_proj is recomputed",
      "gdp_qkv cannot be set in offload_modules together with gdp_in_proj in recompute_modules, because gdp_in_proj discards the input of the causal conv and rematerializes it at the start of the mixer backward, leaving nothing for the gdp_qkv offload group to keep on the host.",
      MC, { { "main", "TC:2154-2164" } },
      [](const Ctx& c) { return c.r.fine_grained_activation_offloading && std::find(c.r.offload_modules.begin(), c.r.offload_modules.end(), "gdp_qkv") != c.r.offload_modules.end() && c.selective() && c.has("gdp_in_proj"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "gdp_in_proj" }, "drop 'gdp_in_proj' (or stop offloading gdp_qkv)"); },
      "drop 'gdp_in_proj'", "" },
    { "R24b", "*", kAnyFormat, E, "offload_modules recompute_modules",
      "whole-MoE recompute while offloading activations inside the MoE",
      "Cannot offload {offload_inside_moe} while recomputing the entire MoE layer. 'moe' in recompute_modules wraps the full MoE forward in a checkpoint, so offloading activations inside it is redundant and will cause errors. Either remove 'moe' from --recompute-modules or remove {offload_inside_moe} from --offload-modules.",
      MC, { { "bridge-pin", "TC:1931" }, { "guide", "TC:1900" }, { "main", "TC:2165-2175" } },
      [](const Ctx& c) { return c.r.fine_grained_activation_offloading && c.selective() && c.has("moe") && std::any_of(c.r.offload_modules.begin(), c.r.offload_modules.end(), [](const std::string& m) { return m == "moe_act" || m == "expert_fc1" || m == "fused_group_mlp"; }); },
      [](const Ctx& c, Args& a) {
          std::vector<std::string> inside;
          for (const char* m : { "moe_act", "expert_fc1", "fused_group_mlp" })
              if (std::find(c.r.offload_modules.begin(), c.r.offload_modules.end(), m) != c.r.offload_modules.end())
                  inside.emplace_back(m);
          a.set("offload_inside_moe", pySet(inside));
      }, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe" }, "drop 'moe' from recompute_modules (or stop offloading inside the MoE)"); },
      "drop 'moe', or the MoE-internal offload modules", "the set prints in the order moe_act, expert_fc1, fused_group_mlp" },
    { "R45", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split",
      "first / last stage sizes with the embedding or the loss counted in the split",
      "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot beset at the same time with account_for_embedding_in_pipeline_splitand account_for_loss_in_pipeline_split",
      MC, { { "bridge-pin", "TC:1988-1998" }, { "guide", "TC:1949-1959" }, { "main", "TC:2229-2239" }, { "dev", "TC:2478-2488" } },
      [](const Ctx& c) { return firstOrLast(c) && accountFor(c); }, nullptr, nullptr,
      accountForOff, "account_for_embedding_in_pipeline_split=false, account_for_loss_in_pipeline_split=false", "Megatron's message, its missing spaces kept" },
    { "R46", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split",
      "a layout with first / last stage sizes or the embedding / loss counted in the split",
      "pipeline_model_parallel_layout cannot be set with other pipeline layout arguments. self.num_layers_in_first_pipeline_stage={f}, self.num_layers_in_last_pipeline_stage={l}, self.account_for_embedding_in_pipeline_split={e}, self.account_for_loss_in_pipeline_split={s}.",
      MC, { { "bridge-pin", "TC:2001-2018" }, { "guide", "TC:1962-1979" }, { "main", "TC:2242-2259" }, { "dev", "TC:2491-2508" } },
      [](const Ctx& c) { return c.r.pipeline_model_parallel_layout && (firstOrLast(c) || accountFor(c)); }, [](const Ctx& c, Args& a) { a.set("f", pyInt(c.r.num_layers_in_first_pipeline_stage)); a.set("l", pyInt(c.r.num_layers_in_last_pipeline_stage)); a.set("e", pyBool(c.r.account_for_embedding_in_pipeline_split)); a.set("s", pyBool(c.r.account_for_loss_in_pipeline_split)); }, nullptr,
      otherSplitOff, "num_layers_in_first/last_pipeline_stage=null, account_for_*=false (the layout places every layer)", "" },
    { "R47", "*", kJson | kBridge, E, "pipeline_model_parallel_layout pipeline_model_parallel_size",
      "a layout whose stages pipeline_model_parallel_size does not divide",
      "pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size (len(layout)={n}, pipeline_model_parallel_size={pp})",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:41-45; TC:2020-2032" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:40-44; TC:1981-1993" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:41-45; TC:2261-2273" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:40-44; TC:2510-2522" } },
      [](const Ctx& c) { const auto l = layoutOf(c); return l && ppSize(c) >= 1 && l->stages.size() % static_cast<size_t>(ppSize(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(layoutOf(c)->stages.size())); a.set("pp", std::to_string(ppSize(c))); }, nullptr,
      nullptr, "stages a multiple of pipeline_model_parallel_size", "PipelineParallelLayerLayout.__init__, from TransformerConfig.__post_init__; stage i is virtual stage i / PP of pipeline rank i % PP. Megatron-LM's flags meet M10 first" },
    { "R48", "*", kAnyFormat, E, "virtual_pipeline_model_parallel_size pipeline_model_parallel_layout pipeline_model_parallel_size",
      "virtual_pipeline_model_parallel_size other than the layout's stages / PP",
      "virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout, (self.virtual_pipeline_model_parallel_size={v},  detected_vpp_size={d})",
      MC, { { "bridge-pin", "TC:2034-2044" }, { "guide", "TC:1995-2005" }, { "main", "TC:2275-2285" }, { "dev", "TC:2524-2534" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && vppSet(c) && static_cast<size_t>(vppOf(c)) != layoutChunks(c); }, [](const Ctx& c, Args& a) { a.set("v", std::to_string(vppOf(c))); a.set("d", std::to_string(layoutChunks(c))); }, nullptr,
      layoutVpp, "virtual_pipeline_model_parallel_size = the layout's stages / PP (null for 1)", "Megatron's message, its double space kept" },
    { "R48", "*", kAnyFormat, A, "virtual_pipeline_model_parallel_size pipeline_model_parallel_layout",
      "virtual_pipeline_model_parallel_size unset: TransformerConfig takes it from the layout (its stages / PP, where more than 1)",
      "virtual_pipeline_model_parallel_size: None -> {d} (the stages of pipeline_model_parallel_layout per pipeline rank)",
      MC, { { "bridge-pin", "TC:2045-2046" }, { "guide", "TC:2006-2007" }, { "main", "TC:2286-2287" }, { "dev", "TC:2535-2536" } },
      [](const Ctx& c) { return layoutChunks(c) > 1 && !vppSet(c); }, [](const Ctx& c, Args& a) { a.set("d", std::to_string(layoutChunks(c))); }, [](Ctx& c) { c.r.virtual_pipeline_model_parallel_size = static_cast<int>(layoutChunks(c)); },
      nullptr, "", "silent; Megatron-LM's validate_args sets it the same way (the flag reader does)" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout whose first layer is not the embedding",
      "The first layer must be embedding, but got {x}",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:95-97; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:94-96; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:95-97; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:94-96; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && layoutOf(c)->flat().front() != kLayoutEmbedding; }, [](const Ctx& c, Args& a) { a.set("x", layerTypeName(layoutOf(c)->flat().front())); }, nullptr,
      nullptr, "", "validate_layer_layout, from TransformerConfig.__post_init__: the stage that runs first (virtual stage 0 of pipeline rank 0) builds the embedding" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout whose last layer is not the loss",
      "The last layer must be loss, but got {x}",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:98-100; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:97-99; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:98-100; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:97-99; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && layoutOf(c)->flat().back() != kLayoutLoss; }, [](const Ctx& c, Args& a) { a.set("x", layerTypeName(layoutOf(c)->flat().back())); }, nullptr,
      nullptr, "", "" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout with the embedding more than once",
      "Embedding must be specified exactly once",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:103-105; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:102-104; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:103-105; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:102-104; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && layoutOf(c)->count(kLayoutEmbedding) != 1; }, nullptr, nullptr,
      nullptr, "", "" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout with the loss more than once",
      "Loss must be specified exactly once",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:106; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:105; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:106; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:105; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && layoutOf(c)->count(kLayoutLoss) != 1; }, nullptr, nullptr,
      nullptr, "", "" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout whose decoder layers are not num_layers",
      "Number of decoder layers {n}must match num_layers {L}",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:107-110; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:106-109; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:107-110; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:106-109; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && layoutOf(c)->count(kLayoutDecoder) != static_cast<size_t>(std::max(0, c.r.num_layers)); }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(layoutOf(c)->count(kLayoutDecoder))); a.set("L", std::to_string(c.r.num_layers)); }, nullptr,
      nullptr, "", "Megatron's message, its missing space kept" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a layout whose MTP layers are not mtp_num_layers",
      "Number of mtp layers in layout must match mtp_num_layers",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:112-114; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:111-113; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:112-114; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:111-113; TC:2538-2541" } },
      [](const Ctx& c) { const auto l = layoutOf(c); return layoutChunks(c) > 0 && (c.r.mtp_num_layers ? static_cast<long long>(l->count(kLayoutMtp)) != *c.r.mtp_num_layers : l->count(kLayoutMtp) != 0); }, nullptr, nullptr,
      nullptr, "", "" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a decoder layer after an MTP layer in the layout",
      "decoder layers must be placed before MTP layers",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:115-120; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:114-119; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:115-120; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:114-119; TC:2538-2541" } },
      [](const Ctx& c) { return layoutChunks(c) > 0 && decoderAfterMtp(*layoutOf(c)); }, nullptr, nullptr,
      nullptr, "", "" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "an MTP layer on a virtual stage other than its rank's last",
      "Currently we restrict that the MTP should be always in the last ",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:121-126; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:120-125; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:121-126; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:120-125; TC:2538-2541" } },
      mtpBeforeLastChunk, nullptr, nullptr,
      nullptr, "", "Megatron's message ends there, trailing space included: the f-string that would go on is a statement of its own" },
    { "R49", "*", kAnyFormat, E, "pipeline_model_parallel_layout num_layers mtp_num_layers",
      "a rank's last virtual stage with some of the MTP layers",
      "All of the MTP layers must be in the same one virtual pipeline stage",
      MC, { { "bridge-pin", "megatron/core/transformer/pipeline_parallel_layer_layout.py:127-131; TC:2048-2051" }, { "guide", "megatron/core/transformer/pipeline_parallel_layer_layout.py:126-130; TC:2009-2012" }, { "main", "megatron/core/transformer/pipeline_parallel_layer_layout.py:127-131; TC:2289-2292" }, { "dev", "megatron/core/transformer/pipeline_parallel_layer_layout.py:126-130; TC:2538-2541" } },
      mtpSplitInLastChunk, nullptr, nullptr,
      nullptr, "", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "num_layers_in_first_pipeline_stage below 1",
      "num_layers_in_first_pipeline_stage must be larger than 0",
      MC, { { "bridge-pin", "TC:2061-2063" }, { "guide", "TC:2022-2024" }, { "main", "TC:2302-2304" }, { "dev", "TC:2551-2553" } },
      [](const Ctx& c) { return unevenSplit(c) && c.r.num_layers_in_first_pipeline_stage && *c.r.num_layers_in_first_pipeline_stage <= 0; }, nullptr, nullptr,
      unsetOpt<k_num_layers_in_first_pipeline_stage>, "num_layers_in_first_pipeline_stage=null", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "first stage size not a multiple of the virtual stages",
      "number of layers at first stage: {f}must be divisible by virtual pipelineparallel degree {v}",
      MC, { { "bridge-pin", "TC:2065-2076" }, { "guide", "TC:2026-2037" }, { "main", "TC:2306-2317" }, { "dev", "TC:2555-2566" } },
      [](const Ctx& c) { return unevenSplit(c) && c.r.num_layers_in_first_pipeline_stage.value_or(0) > 0 && vppSet(c) && vppOf(c) >= 1 && *c.r.num_layers_in_first_pipeline_stage % vppOf(c) != 0; }, [](const Ctx& c, Args& a) { a.set("f", std::to_string(*c.r.num_layers_in_first_pipeline_stage)); a.set("v", std::to_string(vppOf(c))); }, nullptr,
      nullptr, "", "Megatron's message, its missing spaces kept" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "num_layers_in_last_pipeline_stage below 1",
      "num_layers_in_last_pipeline_stage must be larger than 0",
      MC, { { "bridge-pin", "TC:2080-2082" }, { "guide", "TC:2041-2043" }, { "main", "TC:2321-2323" }, { "dev", "TC:2570-2572" } },
      [](const Ctx& c) { return unevenSplit(c) && c.r.num_layers_in_last_pipeline_stage && *c.r.num_layers_in_last_pipeline_stage <= 0; }, nullptr, nullptr,
      unsetOpt<k_num_layers_in_last_pipeline_stage>, "num_layers_in_last_pipeline_stage=null", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "last stage size not a multiple of the virtual stages",
      "number of layers at last stage: {l}must be divisible by virtual pipelineparallel degree {v}",
      MC, { { "bridge-pin", "TC:2084-2095" }, { "guide", "TC:2045-2056" }, { "main", "TC:2325-2336" }, { "dev", "TC:2574-2585" } },
      [](const Ctx& c) { return unevenSplit(c) && c.r.num_layers_in_last_pipeline_stage.value_or(0) > 0 && vppSet(c) && vppOf(c) >= 1 && *c.r.num_layers_in_last_pipeline_stage % vppOf(c) != 0; }, [](const Ctx& c, Args& a) { a.set("l", std::to_string(*c.r.num_layers_in_last_pipeline_stage)); a.set("v", std::to_string(vppOf(c))); }, nullptr,
      nullptr, "", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "middle layers without middle stages, or middle stages without layers",
      "Mismatch: {n} middle layers remaining but {s} middle PP stages available.",
      MC, { { "bridge-pin", "TC:2099-2104" }, { "guide", "TC:2060-2065" }, { "main", "TC:2340-2345" }, { "dev", "TC:2589-2594" } },
      [](const Ctx& c) { return unevenSplit(c) && (middleLayers(c) != 0) != (middleStages(c) != 0); }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(middleLayers(c))); a.set("s", std::to_string(middleStages(c))); }, nullptr,
      nullptr, "", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "middle layers the middle stages do not split evenly",
      "number of layers at middle stage: {n} must be divisible bythe middle pipeline model parallel size {s}",
      MC, { { "bridge-pin", "TC:2106-2112" }, { "guide", "TC:2067-2073" }, { "main", "TC:2347-2353" }, { "dev", "TC:2596-2602" } },
      [](const Ctx& c) { return unevenSplit(c) && middleStages(c) != 0 && pyMod(middleLayers(c), middleStages(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(middleLayers(c))); a.set("s", std::to_string(middleStages(c))); }, nullptr,
      nullptr, "", "" },
    { "R50", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "a middle stage's layers not a multiple of the virtual stages",
      "number of layers on each middle pipeline rank:{n} must be divisible by virtualpipeline parallel degree {v}",
      MC, { { "bridge-pin", "TC:2114-2127" }, { "guide", "TC:2075-2088" }, { "main", "TC:2355-2368" }, { "dev", "TC:2604-2617" } },
      [](const Ctx& c) { return unevenSplit(c) && middleStages(c) != 0 && vppSet(c) && vppOf(c) >= 1 && pyMod(pyFloorDiv(middleLayers(c), middleStages(c)), vppOf(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(pyFloorDiv(middleLayers(c), middleStages(c)))); a.set("v", std::to_string(vppOf(c))); }, nullptr,
      nullptr, "", "" },
    { "R51", "*", kAnyFormat, E, "num_layers account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "num_layers with the embedding / loss counted not a multiple of PP (no virtual stages)",
      "number of middle layers: {n} must be divisible by middle pipeline_model_parallel_size {pp}",
      MC, { { "bridge-pin", "TC:2132-2145" }, { "guide", "TC:2093-2106" }, { "main", "TC:2373-2386" }, { "dev", "TC:2622-2635" } },
      [](const Ctx& c) { return accountedSplit(c) && !vppSet(c) && ppSize(c) >= 1 && pyMod(pipelineSplitLayers(c.r), ppSize(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(pipelineSplitLayers(c.r))); a.set("pp", std::to_string(ppSize(c))); }, nullptr,
      nullptr, "", "Megatron's message, its missing spaces kept" },
    { "R51", "*", kAnyFormat, E, "num_layers account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "num_layers with the embedding / loss counted not a multiple of PP (virtual stages)",
      "num_layers: {n} after enableaccount_for_embedding_in_pipeline_split or account_for_loss_in_pipeline_split must be divisibleby pipeline_model_parallel_size {pp}",
      MC, { { "bridge-pin", "TC:2146-2161" }, { "guide", "TC:2107-2122" }, { "main", "TC:2387-2402" }, { "dev", "TC:2636-2651" } },
      [](const Ctx& c) { return accountedSplit(c) && vppSet(c) && ppSize(c) >= 1 && pyMod(pipelineSplitLayers(c.r), ppSize(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(pipelineSplitLayers(c.r))); a.set("pp", std::to_string(ppSize(c))); }, nullptr,
      nullptr, "", "Megatron's message, its missing spaces kept" },
    { "R51", "*", kAnyFormat, E, "num_layers account_for_embedding_in_pipeline_split account_for_loss_in_pipeline_split pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "a stage's layers, the embedding / loss counted, not a multiple of the virtual stages",
      "number of layers on each pipeline rank: {n}(after enable account_for_embedding_in_pipeline_split or account_for_loss_in_pipeline_split) must be divisible byvirtual_pipeline_model_parallel_size{v}",
      MC, { { "bridge-pin", "TC:2163-2174" }, { "guide", "TC:2124-2135" }, { "main", "TC:2404-2415" }, { "dev", "TC:2653-2664" } },
      [](const Ctx& c) { return accountedSplit(c) && vppSet(c) && vppOf(c) >= 1 && ppSize(c) >= 1 && pyMod(pipelineSplitLayers(c.r), ppSize(c)) == 0 && pyMod(pipelineSplitLayers(c.r) / ppSize(c), vppOf(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(pipelineSplitLayers(c.r) / ppSize(c))); a.set("v", std::to_string(vppOf(c))); }, nullptr,
      nullptr, "", "Megatron's message, its missing spaces kept" },
    { "R41", "*", kAnyFormat, E, "bias_activation_fusion gated_linear_unit activation_func add_bias_linear",
      "the fused bias-GeLU without linear biases (plain GeLU MLP)",
      "When bias_activation_fusion is True, gated_linear_unit is False and activation function is gelu, add_bias_linear must also be True.",
      MC, { { "bridge-pin", "TC:2185-2193" }, { "guide", "TC:2146-2154" }, { "main", "TC:2426-2434" }, { "dev", "TC(dev):2675-2683" } },
      [](const Ctx& c) { return c.r.bias_activation_fusion && c.r.activation_func == "gelu" && !c.r.gated_linear_unit && !c.r.add_bias_linear; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set bias_activation_fusion=false", "bias_activation_fusion", false); },
      "bias_activation_fusion=false", "the check before it (activation gelu, silu or quick_gelu) holds for every recipe: activation_func is gelu or silu" },
    { "R25", "*", kAnyFormat, E, "enable_cuda_graph external_cuda_graph cuda_graph_impl",
      "a deprecated CUDA-graph flag together with cuda_graph_impl",
      "Do not use enable_cuda_graph or external_cuda_graph with cuda_graph_impl.",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return (c.r.enable_cuda_graph || c.r.external_cuda_graph) && !c.impl("none"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "drop the deprecated flags (cuda_graph_impl says it)", "enable_cuda_graph", false); f.patch["external_cuda_graph"] = false; },
      "enable_cuda_graph=false, external_cuda_graph=false", "" },
    { "R25", "*", kAnyFormat, E, "enable_cuda_graph external_cuda_graph",
      "both deprecated CUDA-graph flags",
      "enable_cuda_graph and external_cuda_graph cannot be enabled at the same time.",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return c.r.enable_cuda_graph && c.r.external_cuda_graph; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "keep one: set external_cuda_graph=false", "external_cuda_graph", false); },
      "external_cuda_graph=false", "" },
    { "R25", "*", kAnyFormat, W, "enable_cuda_graph",
      "enable_cuda_graph is deprecated",
      "enable_cuda_graph is deprecated, use cuda_graph_impl=local instead.",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return c.r.enable_cuda_graph; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "spell it cuda_graph_impl=local", "enable_cuda_graph", false); f.patch["cuda_graph_impl"] = "local"; },
      "cuda_graph_impl=local", "" },
    { "R25", "*", kAnyFormat, A, "enable_cuda_graph cuda_graph_impl",
      "enable_cuda_graph sets cuda_graph_impl='local' (resolved: the flag is cleared once migrated)",
      "cuda_graph_impl: 'none' -> 'local' (enable_cuda_graph)",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return c.r.enable_cuda_graph && c.impl("none"); }, nullptr,
      [](Ctx& c) { c.r.cuda_graph_impl = "local"; c.r.enable_cuda_graph = false; }, nullptr, "", "" },
    { "R25", "*", kAnyFormat, W, "external_cuda_graph",
      "external_cuda_graph is deprecated",
      "external_cuda_graph is deprecated, use cuda_graph_impl=transformer_engine instead.",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return c.r.external_cuda_graph; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "spell it cuda_graph_impl=transformer_engine", "external_cuda_graph", false); f.patch["cuda_graph_impl"] = "transformer_engine"; },
      "cuda_graph_impl=transformer_engine", "" },
    { "R25", "*", kAnyFormat, A, "external_cuda_graph cuda_graph_impl",
      "external_cuda_graph sets cuda_graph_impl='transformer_engine' (resolved: the flag is cleared once migrated)",
      "cuda_graph_impl: 'none' -> 'transformer_engine' (external_cuda_graph)",
      MC, { { "bridge-pin", "TC:2457" }, { "guide", "TC:2391" }, { "main", "TC:2698-2714" } },
      [](const Ctx& c) { return c.r.external_cuda_graph && c.impl("none"); }, nullptr,
      [](Ctx& c) { c.r.cuda_graph_impl = "transformer_engine"; c.r.external_cuda_graph = false; }, nullptr, "", "" },
    { "R26", "*", kAnyFormat, E, "cuda_graph_scope cuda_graph_modules",
      "the deprecated cuda_graph_scope together with cuda_graph_modules",
      "cuda_graph_scope and cuda_graph_modules cannot be set together.",
      MC, { { "main", "TC:2716-2773" } },
      [](const Ctx& c) { return c.r.cuda_graph_scope && c.r.cuda_graph_modules; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset the deprecated cuda_graph_scope", "cuda_graph_scope", nullptr); },
      "cuda_graph_scope=null", "" },
    { "R26", "*", kAnyFormat, A, "cuda_graph_scope cuda_graph_modules",
      "the deprecated cuda_graph_scope moves into cuda_graph_modules",
      "cuda_graph_modules: None -> {scope} (from the deprecated cuda_graph_scope)",
      MC, { { "main", "TC:2716-2773; megatron/core/transformer/cuda_graph_config.py:10-13,25-57,128-135" } },
      [](const Ctx& c) { return c.r.cuda_graph_scope && !c.r.cuda_graph_modules; },
      [](const Ctx& c, Args& a) { a.set("scope", pyList(*c.r.cuda_graph_scope)); },
      [](Ctx& c) { c.r.cuda_graph_modules = *c.r.cuda_graph_scope; c.r.cuda_graph_scope.reset(); }, nullptr, "", "" },
    { "R26", "*", kAnyFormat, W, "cuda_graph_modules",
      "cuda_graph_modules 'full' written out (the unset default is normalised silently below)",
      "full scope is deprecated. Use empty cuda_graph_modules to capture the whole layer.",
      MC, { { "main", "TC:2716-2773; megatron/core/transformer/cuda_graph_config.py:10-13,25-57,128-135" } },
      [](const Ctx& c) { return cgSetHas(c.r.cuda_graph_modules, "full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "write [] for whole-layer capture", "cuda_graph_modules", nlohmann::json::array()); },
      "cuda_graph_modules=[]", "" },
    { "R26", "*", kAnyFormat, A, "cuda_graph_modules",
      "'full' (the dataclass default) becomes [] (Megatron also warns 'full scope is deprecated' for the default)",
      "cuda_graph_modules: {old} -> []",
      MC, { { "main", "TC:2716-2773; megatron/core/transformer/cuda_graph_config.py:10-13,25-57,128-135" } },
      [](const Ctx& c) { return !c.r.cuda_graph_modules || cgSetHas(c.r.cuda_graph_modules, "full"); },
      [](const Ctx& c, Args& a) { a.set("old", c.r.cuda_graph_modules ? pyList(*c.r.cuda_graph_modules) : "'full' (the default)"); },
      [](Ctx& c) { c.r.cuda_graph_modules = cgWithout(c, { "full" }); }, nullptr, "", "" },
    { "R26", "*", kAnyFormat, W, "cuda_graph_modules",
      "cuda_graph_modules 'full_iteration' (deprecated)",
      "cuda_graph_modules 'full_iteration' is deprecated. Use cuda_graph_impl='full_iteration' instead.",
      MC, { { "main", "TC:2716-2773; megatron/core/transformer/cuda_graph_config.py:10-13,25-57,128-135" } },
      [](const Ctx& c) { return c.cg("full_iteration"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "spell it cuda_graph_impl=full_iteration", "cuda_graph_impl", "full_iteration"); f.patch["cuda_graph_modules"] = cgWithout(c, { "full_iteration" }); },
      "cuda_graph_impl=full_iteration", "" },
    { "R26", "*", kAnyFormat, A, "cuda_graph_modules cuda_graph_impl",
      "cuda_graph_modules 'full_iteration' sets cuda_graph_impl='full_iteration'",
      "cuda_graph_impl: {old} -> 'full_iteration', cuda_graph_modules: {modules} -> {rest}",
      MC, { { "main", "TC:2716-2773; megatron/core/transformer/cuda_graph_config.py:10-13,25-57,128-135" } },
      [](const Ctx& c) { return c.cg("full_iteration"); },
      [](const Ctx& c, Args& a) { a.set("old", pyRepr(c.r.cuda_graph_impl)); a.set("modules", pyList(*c.r.cuda_graph_modules)); a.set("rest", pyList(cgWithout(c, { "full_iteration" }))); },
      [](Ctx& c) { c.r.cuda_graph_impl = "full_iteration"; c.r.cuda_graph_modules = cgWithout(c, { "full_iteration" }); }, nullptr, "", "" },
    { "R27", "*", kAnyFormat, E, "cuda_graph_modules cuda_graph_impl",
      "full_iteration graph with a module scope",
      "cuda_graph_modules must be empty when cuda_graph_impl=\"full_iteration\".",
      MC, { { "bridge-pin", "TC:2554" }, { "guide", "TC:2488" }, { "main", "TC:2794-2796" } },
      [](const Ctx& c) { return c.impl("full_iteration") && !c.cgEmpty(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set cuda_graph_modules=[]", "cuda_graph_modules", nlohmann::json::array()); },
      "cuda_graph_modules=[]", "" },
    { "R28", "*", kAnyFormat, E, "cuda_graph_impl cpu_offloading",
      "scoped or local CUDA graphs with cpu_offloading",
      "CUDA graphs not supported with CPU offloading.",
      MC, { { "bridge-pin", "TC:2559" }, { "guide", "TC:2493" }, { "main", "TC:2800" } },
      [](const Ctx& c) { return !c.impl("none") && c.r.cpu_offloading && !c.impl("full_iteration"); }, nullptr, nullptr,
      cpuOffloadOff, "cpu_offloading=false", "" },
    { "R29", "*", kAnyFormat, A, "cuda_graph_modules",
      "local graphs: moe_router or moe_preprocess brings the other in (before the recompute checks)",
      "cuda_graph_modules: {old} -> {new} (cuda_graph_impl='local' captures moe_router and moe_preprocess together)",
      MC, { { "main", "TC:2805-2815" } },
      [](const Ctx& c) { return c.impl("local") && (c.cg("moe_router") || c.cg("moe_preprocess")) && !(c.cg("moe_router") && c.cg("moe_preprocess")); },
      [](const Ctx& c, Args& a) { a.set("old", pyList(*c.r.cuda_graph_modules)); a.set("new", pyList(cgWith(c, { "moe_router", "moe_preprocess" }))); },
      [](Ctx& c) { c.r.cuda_graph_modules = cgWith(c, { "moe_router", "moe_preprocess" }); }, nullptr, "", "" },
    { "R30", "*", kAnyFormat, E, "recompute_granularity cuda_graph_impl",
      "full recompute with a CUDA graph other than full_iteration",
      "full recompute is only supported with full iteration CUDA graph.",
      MC, { { "bridge-pin", "TC:2613-2617" }, { "guide", "TC:2547-2551" }, { "main", "TC:2854-2858" } },
      [](const Ctx& c) { return !c.impl("none") && c.gSet() && !c.selective() && !c.impl("full_iteration"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set cuda_graph_impl=full_iteration (with cuda_graph_modules=[]), or disable CUDA graphs", "cuda_graph_impl", "full_iteration"); f.patch["cuda_graph_modules"] = nlohmann::json::array(); },
      "cuda_graph_impl=full_iteration", "" },
    { "R31", "*", kAnyFormat, E, "recompute_modules cuda_graph_modules",
      "TE graphs capturing the MoE router while the whole MoE is recomputed",
      "moe recompute is not supported with moe_router CUDA graph with: ",
      MC, { { "bridge-pin", "TC:2621-2628" }, { "main", "TC:2862-2869" } },
      [](const Ctx& c) { return c.impl("transformer_engine") && c.selective() && c.has("moe") && c.cg("moe_router"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe" }, "drop 'moe' (or moe_router from cuda_graph_modules)"); },
      "drop 'moe'", "the next source line \"--cuda-graph-impl transformer_engine.\" is a separate no-op statement, so the message ends in 'with: '" },
    { "R32", "*", kAnyFormat, E, "attention_dropout recompute_modules cuda_graph_modules",
      "graphed attention recompute with attention dropout (default 0.1)",
      "attention dropout is not supported with graphed attention recomputation.",
      MC, { { "bridge-pin", "TC:2637" }, { "guide", "TC:2571" }, { "main", "TC:2878-2884" } },
      [](const Ctx& c) { return !c.impl("none") && c.selective() && c.r.attention_dropout != 0.0 && c.has("core_attn") && (c.fullCudagraph() || c.cg("attn")); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set attention_dropout=0.0", "attention_dropout", 0.0); },
      "attention_dropout=0.0", "" },
    { "R33", "*", kAnyFormat, E, "hidden_dropout recompute_modules cuda_graph_modules",
      "graphed mlp/moe recompute with hidden dropout (default 0.1)",
      "hidden dropout is not supported with graphed MLP/MoE recomputation.",
      MC, { { "bridge-pin", "TC:2645" }, { "guide", "TC:2579" }, { "main", "TC:2885-2898" } },
      [](const Ctx& c) { return !c.impl("none") && c.selective() && c.r.hidden_dropout != 0.0 && ((c.has("mlp") && (c.fullCudagraph() || c.cg("mlp"))) || (c.has("moe") && (c.fullCudagraph() || c.cg("moe")))); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set hidden_dropout=0.0", "hidden_dropout", 0.0); },
      "hidden_dropout=0.0", "" },
    { "R34", "*", kAnyFormat, E, "moe_input_jitter_eps recompute_modules cuda_graph_modules",
      "graphed moe recompute with router input jitter",
      "moe_input_jitter_eps is not supported with graphed moe recomputation.",
      MC, { { "bridge-pin", "TC:2659" }, { "guide", "TC:2593" }, { "main", "TC:2899-2905" } },
      [](const Ctx& c) { return !c.impl("none") && c.selective() && c.r.moe_input_jitter_eps && c.has("moe") && (c.fullCudagraph() || c.cg("moe")); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset moe_input_jitter_eps", "moe_input_jitter_eps", nullptr); },
      "moe_input_jitter_eps=null", "" },
    { "R35", "*", kAnyFormat, E, "recompute_modules cuda_graph_modules",
      "GTP weight remat + local graphs capturing shared experts under fp8/fp4 (needs gtp_weight_remat_size, which a recipe does not carry: not evaluated)",
      "GTP + local CUDA graphs that capture shared_experts (moe_router/moe scope) cannot recompute it under fp8/fp4: te_checkpoint requires .backward(), but the local fwd-graph warmup uses .grad(). Drop 'shared_experts' from --recompute-modules (GTP-shard + offload instead), or use --cuda-graph-impl full_iteration.",
      MC, { { "bridge-pin", "TC:2679" }, { "guide", "TC:2613" }, { "main", "TC:2907-2928" } }, nullptr, nullptr, nullptr, nullptr, "drop 'shared_experts'", "" },
    { "G4", "dev", kAnyFormat, E, "recompute_modules cuda_graph_impl",
      "dev: mhc recompute with local CUDA graphs",
      "'mhc' in recompute_modules is not supported with cuda_graph_impl='local'.",
      MC, { { "dev", "TC(dev):3086" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.impl("local"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use cuda_graph_impl=transformer_engine", "cuda_graph_impl", "transformer_engine"); },
      "cuda_graph_impl=transformer_engine", "our wording: the reference gives the condition, not dev's message" },
    { "G5", "dev", kAnyFormat, E, "recompute_modules cuda_graph_impl attention_dropout hidden_dropout",
      "dev: mhc recompute with a full_iteration graph needs zero dropout",
      "'mhc' in recompute_modules with cuda_graph_impl='full_iteration' needs attention_dropout=0 and hidden_dropout=0.",
      MC, { { "dev", "TC(dev):3086" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.impl("full_iteration") && (c.r.attention_dropout != 0.0 || c.r.hidden_dropout != 0.0); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set both dropouts to 0", "attention_dropout", 0.0); f.patch["hidden_dropout"] = 0.0; },
      "attention_dropout=0, hidden_dropout=0", "our wording: the reference gives the condition, not dev's message" },
    { "G6", "dev", kAnyFormat, E, "recompute_modules cuda_graph_impl cuda_graph_modules comm_overlap.overlap_moe_expert_parallel_comm",
      "dev: mhc recompute with EP overlap allows only the TE attention-only graph or full_iteration",
      "'mhc' in recompute_modules with overlap_moe_expert_parallel_comm supports only cuda_graph_impl='transformer_engine' with cuda_graph_modules=['attn'] or cuda_graph_impl='full_iteration'.",
      MC, { { "dev", "TC(dev):3086" } },
      [](const Ctx& c) { return c.selective() && c.has("mhc") && c.r.overlap_moe_expert_parallel_comm && !c.impl("none") && !c.impl("full_iteration") && !(c.impl("transformer_engine") && c.r.cuda_graph_modules && *c.r.cuda_graph_modules == std::vector<std::string> { "attn" }); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "capture attention only with TE graphs", "cuda_graph_impl", "transformer_engine"); f.patch["cuda_graph_modules"] = { "attn" }; },
      "cuda_graph_impl=transformer_engine, cuda_graph_modules=['attn']", "our wording: the reference gives the condition, not dev's message" },
    { "R36", "*", kAnyFormat, E, "pipeline_model_parallel_size virtual_pipeline_model_parallel_size comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with PP > 1 and no virtual pipeline (the torch >= 2.6 assert before it is environment-only)",
      "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.pipeline_model_parallel_size > 1 && !c.r.virtual_pipeline_model_parallel_size; }, nullptr, nullptr, nullptr,
      "set virtual_pipeline_model_parallel_size", "" },
    { "R36", "*", kAnyFormat, E, "expert_model_parallel_size comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap without expert parallelism",
      "overlap_moe_expert_parallel_comm is only supported with expert model parallelism",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.expert_model_parallel_size <= 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { f.description = "disable the EP overlap"; epOverlapOff(f); },
      "comm_overlap.overlap_moe_expert_parallel_comm=false", "" },
    { "R36", "*", kAnyFormat, E, "moe_token_dispatcher_type comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with the allgather dispatcher",
      "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.moe_token_dispatcher_type != "alltoall" && c.r.moe_token_dispatcher_type != "flex"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_token_dispatcher_type=alltoall", "moe_token_dispatcher_type", "alltoall"); },
      "moe_token_dispatcher_type=alltoall", "" },
    { "R36", "bridge-pin guide main", kAnyFormat, E, "recompute_granularity comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with full recompute (allowed on dev under conditions: G7)",
      "disable full recomputation when enabling overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3021-3032" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.gIs("full"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "turn full recompute off (or disable the EP overlap and remeasure)", "recompute_granularity", nullptr); f.patch["recompute_method"] = nullptr; f.patch["recompute_num_layers"] = nullptr; },
      "recompute_granularity=null, or disable the overlap", "" },
    { "G7", "dev", kAnyFormat, E, "distribute_saved_activations comm_overlap.overlap_moe_expert_parallel_comm",
      "dev: full recompute under EP overlap needs distribute_saved_activations off",
      "full recompute with overlap_moe_expert_parallel_comm requires distribute_saved_activations=False.",
      MC, { { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return devFullUnderOverlap(c) && c.r.distribute_saved_activations; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "our wording: the reference gives the condition, not dev's message" },
    { "G7", "dev", kAnyFormat, E, "recompute_num_layers mtp_num_layers comm_overlap.overlap_moe_expert_parallel_comm",
      "dev: full uniform recompute under EP overlap with MTP needs recompute_num_layers == 1",
      "full recompute with overlap_moe_expert_parallel_comm, MTP and recompute_method='uniform' requires recompute_num_layers=1.",
      MC, { { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return devFullUnderOverlap(c) && c.r.mtp_num_layers.value_or(0) > 0 && c.r.recompute_method.value_or("") == "uniform" && c.r.recompute_num_layers.value_or(1) != 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_num_layers=1", "recompute_num_layers", 1); },
      "recompute_num_layers=1", "our wording: the reference gives the condition, not dev's message" },
    { "G7", "dev", kAnyFormat, E, "attention_dropout hidden_dropout comm_overlap.overlap_moe_expert_parallel_comm",
      "dev: full recompute under EP overlap needs zero dropout",
      "full recompute with overlap_moe_expert_parallel_comm requires attention_dropout=0 and hidden_dropout=0.",
      MC, { { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return devFullUnderOverlap(c) && (c.r.attention_dropout != 0.0 || c.r.hidden_dropout != 0.0); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set both dropouts to 0", "attention_dropout", 0.0); f.patch["hidden_dropout"] = 0.0; },
      "attention_dropout=0, hidden_dropout=0", "our wording: the reference gives the condition, not dev's message" },
    { "G7", "dev", kAnyFormat, E, "fp8 fp8_recipe comm_overlap.overlap_moe_expert_parallel_comm",
      "dev: full recompute under EP overlap excludes FP8 delayed scaling",
      "full recompute with overlap_moe_expert_parallel_comm does not support fp8 delayed scaling.",
      MC, { { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return devFullUnderOverlap(c) && c.fp8() && c.r.fp8_recipe == "delayed"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set fp8_recipe=tensorwise", "fp8_recipe", "tensorwise"); },
      "fp8_recipe=tensorwise", "our wording: the reference gives the condition, not dev's message" },
    { "R36", "*", kAnyFormat, E, "recompute_method comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with a recompute method (dev: only when granularity is not full)",
      "disable recomputation method when enabling overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3021-3032" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.recompute_method && !(profileInfo(c.profile).full_recompute_under_ep_overlap && c.full()); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_method", "recompute_method", nullptr); },
      "recompute_method=null", "" },
    { "R36", "*", kAnyFormat, E, "recompute_num_layers comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with recompute_num_layers (dev: only when granularity is not full)",
      "recompute_num_layers must be None when enabling overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3021-3032" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.recompute_num_layers && !(profileInfo(c.profile).full_recompute_under_ep_overlap && c.full()); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_num_layers", "recompute_num_layers", nullptr); },
      "recompute_num_layers=null", "" },
    { "R36", "*", kAnyFormat, E, "recompute_modules comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with 'moe' in recompute_modules (not gated on granularity: R10/R19 results count)",
      "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3021-3032" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.has("moe"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe" }, "drop 'moe' from recompute_modules (keep an inner boundary such as moe_act)"); },
      "drop 'moe'", "the guide: backward replay would repeat the overlapped routing/communication region" },
    { "R36", "*", kAnyFormat, E, "bf16 fp16 comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap without bf16 or fp16",
      "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && !c.r.bf16 && !c.r.fp16; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set bf16=true", "bf16", true); },
      "bf16=true", "" },
    { "R36", "*", kAnyFormat, E, "moe_shared_expert_overlap comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with shared-expert overlap",
      "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.moe_shared_expert_overlap; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_shared_expert_overlap=false", "moe_shared_expert_overlap", false); },
      "moe_shared_expert_overlap=false", "" },
    { "R36", "*", kAnyFormat, E, "mtp_num_layers comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with more than one MTP layer",
      "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.r.mtp_num_layers.value_or(0) > 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set mtp_num_layers=1", "mtp_num_layers", 1); },
      "mtp_num_layers=1", "" },
    { "R36", "*", kAnyFormat, E, "cuda_graph_modules comm_overlap.overlap_moe_expert_parallel_comm",
      "EP overlap with TE graphs capturing moe or mlp",
      "CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm",
      MC, { { "bridge-pin", "TC:2761-2790" }, { "guide", "TC:2695-2724" }, { "main", "TC:3002-3070" }, { "dev", "TC(dev):3398-3446" } },
      [](const Ctx& c) { return c.r.overlap_moe_expert_parallel_comm && c.impl("transformer_engine") && (c.cg("moe") || c.cg("mlp")); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "drop moe and mlp from cuda_graph_modules", "cuda_graph_modules", cgWithout(c, { "moe", "mlp" })); },
      "drop moe/mlp from cuda_graph_modules", "" },
    { "R37", "*", kAnyFormat, E, "delay_wgrad_compute comm_overlap.overlap_moe_expert_parallel_comm",
      "delay_wgrad_compute without EP overlap",
      "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute",
      MC, { { "main", "TC:3074-3077" } },
      [](const Ctx& c) { return c.r.delay_wgrad_compute && !c.r.overlap_moe_expert_parallel_comm; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set delay_wgrad_compute=false", "delay_wgrad_compute", false); },
      "delay_wgrad_compute=false", "" },

    // ===================================== Megatron Bridge, after finalize (overrides only) ===========
    { "B3", "*", kBridge, E, "cuda_graph_impl rerun_state_machine.check_for_nan_in_loss",
      "full_iteration CUDA graph with the NaN check of the rerun state machine",
      "check_for_nan_in_loss must be disabled when using full_iteration CUDA graph. Set rerun_state_machine.check_for_nan_in_loss=False.",
      BR, { { "*", "training/config.py:1508-1513" } },
      [](const Ctx& c) { return c.impl("full_iteration") && c.r.check_for_nan_in_loss; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { f.description = "set rerun_state_machine.check_for_nan_in_loss=false"; f.patch["rerun_state_machine"] = { { "check_for_nan_in_loss", false } }; },
      "rerun_state_machine.check_for_nan_in_loss=false", "" },
    { "B5", "*", kBridge, E, "cuda_graph_impl use_te_rng_tracker",
      "CUDA graphs without Transformer Engine's RNG tracker (at provide())",
      "Transformer engine's RNG tracker is required for cudagraphs, it can be enabled with use_te_rng_tracker=True'.",
      BR, { { "*", "models/gpt_provider.py:234-238" } },
      [](const Ctx& c) { return !c.impl("none") && !c.r.use_te_rng_tracker; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set use_te_rng_tracker=true", "use_te_rng_tracker", true); },
      "use_te_rng_tracker=true", "" },
    { "B6", "*", kBridge, E, "recompute_modules",
      "Gemma 4 MoE provider with selective layernorm (needs the model family, which a recipe does not carry: not evaluated)",
      "Gemma 4 MoE's separate router/shared/routed inputs do not yet support: selective layernorm recompute",
      BR, { { "*", "models/gemma/gemma4_provider.py:50-73" } }, nullptr, nullptr, nullptr, nullptr, "drop 'layernorm'", "" },
    { "B7", "*", kBridge, E, "cuda_graph_impl cpu_offloading recompute_granularity",
      "local CudaGraphManager in the full-TE-autocast layer spec requires no CPU offload and no recompute (needs the layer spec: not evaluated)",
      "Cudagraphs not supported",
      BR, { { "*", "models/gpt_full_te_layer_autocast_spec.py:230-231" } }, nullptr, nullptr, nullptr, nullptr, "", "" },
    { "B9", "*", kBridge, A, "recompute_granularity recompute_method recompute_num_layers recompute_modules",
      "perf-script flags: -rl N sets full/block/N, --recompute_modules a,b sets selective (modules win; R08 then fires) (flags of scripts/performance, not overrides: not evaluated)",
      "recompute_granularity='full', recompute_method='block', recompute_num_layers=N; then recompute_modules=[a, b], recompute_granularity='selective'",
      BR, { { "*", "scripts/performance/utils/overrides.py:163-185; scripts/performance/argument_parser.py:848-868" } }, nullptr, nullptr, nullptr, nullptr, "", "" },

    // ===================================== build/run time, decidable from the recipe (RT) =============
    { "RT1", "*", kAnyFormat, W, "recompute_modules transformer_impl",
      "layernorm where every norm is fused: TE layer spec, standard attention, no MoE layers",
      "'layernorm' in recompute_modules has no effect here: with the transformer_engine layer spec and standard attention, input_layernorm is fused into linear_qkv and the dense pre_mlp_layernorm into linear_fc1 (IdentityOp), so there is nothing to recompute.",
      MC, { { "main", "TL:475-479,523-524; megatron/core/models/gpt/gpt_layer_specs.py:296,313,319-336" } },
      [](const Ctx& c) { return c.selective() && c.has("layernorm") && layernormHasNoEffect(c); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "layernorm" }, "drop 'layernorm' (a no-op here)"); },
      "drop 'layernorm'", "the guide: 'A selected label has no measurable effect: that module is absent or inactive on the measured layers'" },
    { "RT2", "*", kAnyFormat, W, "recompute_modules cuda_graph_modules moe_shared_expert_overlap",
      "MoE pre_mlp_layernorm recompute with a moe_router graph (not local) and shared-expert overlap: disabled at build",
      "pre_mlp_layernorm recompute is not supported with moe router cudagraph + shared expert overlap. Disabling pre_mlp_layernorm recompute.",
      MC, { { "main", "TL:481-501" } },
      [](const Ctx& c) { return c.selective() && c.has("layernorm") && c.moeLayers() > 0 && c.cg("moe_router") && !c.impl("local") && c.r.moe_shared_expert_intermediate_size && c.r.moe_shared_expert_overlap; }, nullptr, nullptr, nullptr,
      "", "a straddling boundary: the norm is inside the router graph, its hook outside" },
    { "RT3", "*", kAnyFormat, W, "recompute_modules cuda_graph_modules moe_token_dispatcher_type moe_latent_size",
      "MoE pre_mlp_layernorm recompute with a moe_router graph (not local) without moe_preprocess + (alltoall or latent MoE): disabled at build",
      "pre_mlp_layernorm recompute is only supported with moe router + preprocess cudagraph will alltoall token dispatcher or latent MoE. Disabling pre_mlp_layernorm recompute.",
      MC, { { "main", "TL:502-516" } },
      [](const Ctx& c) { return c.selective() && c.has("layernorm") && c.moeLayers() > 0 && c.cg("moe_router") && !c.impl("local") && !(c.r.moe_shared_expert_intermediate_size && c.r.moe_shared_expert_overlap) && !(c.cg("moe_preprocess") && (c.r.moe_token_dispatcher_type == "alltoall" || c.r.moe_latent_size.value_or(0) != 0)); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) {
          set(f, c.r.moe_latent_size.value_or(0) != 0 ? "capture moe_preprocess too" : "capture moe_preprocess too, with the alltoall dispatcher", "cuda_graph_modules", cgWith(c, { "moe_preprocess" }));
          if (c.r.moe_latent_size.value_or(0) == 0)
              f.patch["moe_token_dispatcher_type"] = "alltoall";
      },
      "add moe_preprocess to cuda_graph_modules, with the alltoall dispatcher unless the MoE is latent (moe_latent_size)", "latent MoE counts as Megatron's truth test reads moe_latent_size (0 or None: off)" },
    { "RT4", "*", kAnyFormat, W, "recompute_modules num_moe_experts moe_layer_freq",
      "mlp on a model whose every layer is MoE: a no-op",
      "'mlp' in recompute_modules has no effect here: every layer's MLP is MoE and recompute_mlp is set only on dense layers.",
      MC, { { "main", "TL:537-539" } },
      [](const Ctx& c) { return c.selective() && c.has("mlp") && c.isMoE() && c.denseLayers() <= 0; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mlp" }, "drop 'mlp' (a no-op on MoE layers; moe_act or moe are the MoE boundaries)"); },
      "drop 'mlp'", "the guide: 'mlp targets dense MLPs and is a no-op on MoE layers'" },
    { "RT4", "*", kAnyFormat, N, "recompute_modules moe_layer_freq",
      "mlp on a mixed dense/MoE model acts on the dense layers only",
      "'mlp' in recompute_modules acts only on the {dense} dense layers; on the {moe} MoE layers it is a no-op.",
      MC, { { "main", "TL:537-539" } },
      [](const Ctx& c) { return c.selective() && c.has("mlp") && c.isMoE() && c.denseLayers() > 0 && c.moeLayers() > 0; },
      [](const Ctx& c, Args& a) { a.set("dense", std::to_string(c.denseLayers())); a.set("moe", std::to_string(c.moeLayers())); }, nullptr, nullptr,
      "", "the guide: 'mixed dense/MoE models can still benefit on their dense layers'" },
    { "RT5", "*", kAnyFormat, N, "recompute_modules cuda_graph_impl",
      "moe with local CUDA graphs: the MoELayer checkpoint is off, MoETransformerLayer checkpoints the partial-graph path",
      "With cuda_graph_impl='local' the MoELayer-level 'moe' checkpoint is off; MoETransformerLayer checkpoints the partial-CUDA-graph MoE path instead.",
      MC, { { "main", "megatron/core/transformer/moe/moe_layer.py:247-251; TL:2034-2038,2223-2243" } },
      [](const Ctx& c) { return c.selective() && c.has("moe") && c.impl("local"); }, nullptr, nullptr, nullptr, "", "" },
    { "RT6", "*", kAnyFormat, W, "recompute_modules moe_shared_expert_intermediate_size",
      "shared_experts on a MoE model without shared experts: a no-op",
      "'shared_experts' in recompute_modules has no effect here: the model has no shared expert (moe_shared_expert_intermediate_size is None).",
      MC, { { "main", "megatron/core/transformer/moe/moe_layer.py:515-532" } },
      [](const Ctx& c) { return c.selective() && c.has("shared_experts") && c.isMoE() && !c.r.moe_shared_expert_intermediate_size; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "shared_experts" }, "drop 'shared_experts' (a no-op here)"); },
      "drop 'shared_experts'", "" },
    { "RT7", "*", kAnyFormat, W, "recompute_modules experimental_attention_variant fp8 fp4",
      "mla_up_proj with AbsorbedMLA (dsa) under fp8/fp4 fails at the first forward",
      "FP8/FP4 is not supported for AbsorbedMLA",
      MC, { { "main", "megatron/core/transformer/experimental_attention_variant/absorbed_mla.py:671-673" } },
      [](const Ctx& c) { return c.selective() && c.has("mla_up_proj") && c.r.multi_latent_attention && c.r.experimental_attention_variant.value_or("") == "dsa" && (c.fp8() || c.fp4()); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mla_up_proj" }, "drop 'mla_up_proj'"); },
      "drop 'mla_up_proj'", "the guide: 'Absorbed MLA paths have additional FP8/FP4 restrictions'" },
    { "RT8", "*", kAnyFormat, E, "recompute_num_layers mtp_num_layers",
      "full uniform recompute with MTP needs recompute_num_layers == 1 (assert at the first forward)",
      "recompute_num_layers must be 1 for MTP recompute",
      MC, { { "main", "megatron/core/transformer/multi_token_prediction.py:1621-1627,1705" } },
      [](const Ctx& c) { return c.full() && c.r.mtp_num_layers.value_or(0) > 0 && c.r.recompute_method.value_or("") == "uniform" && c.r.recompute_num_layers.value_or(1) != 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_num_layers=1", "recompute_num_layers", 1); },
      "recompute_num_layers=1", "" },
    { "RT9", "*", kAnyFormat, W, "recompute_method mtp_num_layers",
      "full block recompute with MTP: the MTP layer is not recomputed",
      "recompute_method == 'block' is not supported for MTP yet. Skipping recompute.",
      MC, { { "main", "megatron/core/transformer/multi_token_prediction.py:1630-1648" } },
      [](const Ctx& c) { return c.full() && c.r.mtp_num_layers.value_or(0) > 0 && c.r.recompute_method.value_or("") == "block"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use uniform with recompute_num_layers=1", "recompute_method", "uniform"); f.patch["recompute_num_layers"] = 1; },
      "recompute_method=uniform, recompute_num_layers=1", "" },
    { "RT10", "main", kAnyFormat, E, "recompute_modules",
      "mhc with extract_layer_indices (needs extract_layer_indices, which a recipe does not carry: not evaluated)",
      "'mhc' in recompute_modules is not supported together with extract_layer_indices. The unified mHC recompute hook is registered on the recompute-block boundary, so gradients entering from an extracted intermediate layer can reach discarded activations before they are restored.",
      MC, { { "main", "TB:643-653" } }, nullptr, nullptr, nullptr, nullptr, "", "" },
    { "RT11", "*", kAnyFormat, E, "",
      "a backward through torch.autograd.grad outside graph capture (a run-time property: not evaluated; see issue #2758)",
      "Checkpointing is not compatible with .grad(), please use .backward() if possible",
      MC, { { "main", "RND:637-642,936-941" } }, nullptr, nullptr, nullptr, nullptr, "", "" },
    { "RT12", "*", kAnyFormat, N, "recompute_modules cuda_graph_modules cuda_graph_impl",
      "selective labels inside the captured CUDA-graph scope: checkpoint() is bypassed during warmup/capture",
      "{labels} lie inside the captured CUDA-graph scope: checkpoint() is bypassed during graph warmup and capture, so verify the final graph scope and replay path rather than assuming eager behavior carries over.",
      MC, { { "main", "RND:685-687,905-906,1010-1011" } },
      [](const Ctx& c) { return c.selective() && !c.impl("none") && !capturedLabels(c).empty(); },
      [](const Ctx& c, Args& a) { a.set("labels", pyList(capturedLabels(c))); }, nullptr, nullptr,
      "", "the guide: 'Capture/warmup can bypass checkpoint wrappers'" },
    { "RT13", "*", kAnyFormat, E, "recompute_method",
      "full recompute with an unknown method at run time (unreachable: R05/R06 run first; not evaluated)",
      "Invalid activation recompute method.",
      MC, { { "main", "RC:182-183" } }, nullptr, nullptr, nullptr, nullptr, "", "" },
    { "RT14", "*", kAnyFormat, E, "bias_activation_fusion gated_linear_unit activation_func",
      "the fused bias activation with a non-gated silu MLP (dense layers or shared experts) fails at the first forward",
      "Only support fusion of gelu and swiglu",
      MC, { { "bridge-pin", "megatron/core/transformer/mlp.py:319" }, { "guide", "megatron/core/transformer/mlp.py:317" }, { "main", "megatron/core/transformer/mlp.py:319" }, { "dev", "megatron/core/transformer/mlp.py:313" } },
      [](const Ctx& c) { return c.r.bias_activation_fusion && c.r.activation_func == "silu" && !c.r.gated_linear_unit && (c.denseLayers() > 0 || (c.isMoE() && c.r.moe_shared_expert_intermediate_size)); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set bias_activation_fusion=false", "bias_activation_fusion", false); },
      "bias_activation_fusion=false (or gated_linear_unit=true: SwiGLU)", "" },
    { "RT15", "*", kAnyFormat, E, "bias_activation_fusion gated_linear_unit activation_func num_moe_experts moe_grouped_gemm transformer_impl",
      "the fused bias activation on routed experts other than SwiGLU (SequentialMLP passes the routing probabilities as per_token_scale) fails at the first forward",
      "Only support fusion of swiglu and quick_gelu with per_token_scale in MLP.",
      MC, { { "bridge-pin", "megatron/core/transformer/mlp.py:297" }, { "guide", "megatron/core/transformer/mlp.py:296" }, { "main", "megatron/core/transformer/mlp.py:297" }, { "dev", "megatron/core/transformer/mlp.py:291" } },
      [](const Ctx& c) { return c.r.bias_activation_fusion && c.moeLayers() > 0 && !(c.r.gated_linear_unit && c.r.activation_func == "silu") && !(c.r.moe_grouped_gemm && c.r.transformer_impl == "transformer_engine"); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set bias_activation_fusion=false", "bias_activation_fusion", false); },
      "bias_activation_fusion=false (or SwiGLU experts)", "the local spec always builds SequentialMLP; the TE spec does without moe_grouped_gemm" },
    { "RT15", "*", kAnyFormat, E, "bias_activation_fusion gated_linear_unit activation_func num_moe_experts moe_grouped_gemm transformer_impl",
      "the fused bias activation on TEGroupedMLP experts other than SwiGLU fails at the first forward",
      "Only support fusion of swiglu and quick_gelu in TEGroupedMLP.",
      MC, { { "bridge-pin", "megatron/core/transformer/moe/experts.py:869" }, { "guide", "megatron/core/transformer/moe/experts.py:847" }, { "main", "megatron/core/transformer/moe/experts.py:984" }, { "dev", "megatron/core/transformer/moe/experts.py:843" } },
      [](const Ctx& c) { return c.r.bias_activation_fusion && c.moeLayers() > 0 && !(c.r.gated_linear_unit && c.r.activation_func == "silu") && c.r.moe_grouped_gemm && c.r.transformer_impl == "transformer_engine"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set bias_activation_fusion=false", "bias_activation_fusion", false); },
      "bias_activation_fusion=false (or SwiGLU experts)", "the TE spec builds TEGroupedMLP under moe_grouped_gemm" },
    { "RT16", "*", kAnyFormat, E, "num_moe_experts tensor_model_parallel_size sequence_parallel",
      "MoE layers with tensor parallelism and no sequence parallelism fail at the first training forward (MoELayer.forward; any expert_model_parallel_size)",
      "During training, performance may degrade if MoE and tensor parallelismare enabled without also enabling sequence parallelism.",
      MC, { { "bridge-pin", "megatron/core/transformer/moe/moe_layer.py:636-640" }, { "guide", "megatron/core/transformer/moe/moe_layer.py:629-633" }, { "main", "megatron/core/transformer/moe/moe_layer.py:636-640" }, { "dev", "megatron/core/transformer/moe/moe_layer.py:694-698" } },
      [](const Ctx& c) { return c.moeLayers() > 0 && c.r.tensor_model_parallel_size > 1 && !c.r.sequence_parallel; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set sequence_parallel=true", "sequence_parallel", true); },
      "sequence_parallel=true", "a raise, not a warning: the attention TP group is tensor_model_parallel_size; MP2 only warns, and only with expert parallelism" },
    { "RT17", "*", kJson, A, "num_layers hybrid_layer_pattern",
      "HybridModel builds the pattern's layers whatever num_layers says",
      "num_layers: {n} -> {p} (HybridModel builds the layers of hybrid_layer_pattern)",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_model.py:197-217" } },
      [](const Ctx& c) { return isHybrid(c.r) && c.r.num_layers != patternLayers(c); },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.num_layers)); a.set("p", std::to_string(patternLayers(c))); },
      [](Ctx& c) { c.r.num_layers = patternLayers(c); }, nullptr, "",
      "parse_hybrid_pattern and select_pipeline_segment take the layer list from the pattern; Megatron-LM (M8) and Bridge (B10) derive num_layers the same way" },
    { "RT18", "*", kAnyFormat, E, "hybrid_layer_pattern",
      "a hybrid pattern symbol the profile's Symbols do not know",
      "In {where} pattern, '{c}' is not a valid layer symbol. Valid symbols are: {valid}",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:277-294" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:281-298" } },
      [](const Ctx& c) { return badSymbol(c).has_value(); },
      [](const Ctx& c, Args& a) { const auto b = *badSymbol(c); a.set("where", b.where); a.set("c", b.symbol); a.set("valid", validSymbolsSet(c, b.where == "main")); }, nullptr,
      nullptr, "symbols of Symbols.VALID_LAYERS (M G * - E ...)", "Python prints the set in hash order; the order here is the class's" },
    { "RT18", "*", kAnyFormat, E, "hybrid_layer_pattern",
      "MTP patterns after '/' that differ",
      "All MTP patterns must be identical. Pattern 1 is '{a}', but pattern {i} is '{b}'. Full pattern: '{p}'",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:258-267" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:262-271" } },
      [](const Ctx& c) { return mtpMismatch(c) > 0; },
      [](const Ctx& c, Args& a) { const size_t i = mtpMismatch(c); a.set("a", mtpPart(c, 1)); a.set("i", std::to_string(i)); a.set("b", mtpPart(c, i)); a.set("p", *c.r.hybrid_layer_pattern); }, nullptr,
      nullptr, "one MTP pattern per depth, all the same", "" },
    { "RT18", "bridge-pin guide main", kAnyFormat, E, "hybrid_layer_pattern",
      "attention ('*') beside MLA ('+') or DSA ('D') layers",
      "Not supported to have both Attention and MLA/DSA in one model",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:296-298" } },
      attentionWithMla, nullptr, nullptr, nullptr, "one kind of attention per hybrid model", "" },
    { "RT18", "dev", kAnyFormat, E, "hybrid_layer_pattern",
      "attention ('*') beside DSA or DeepSeek-V4 (C, H, W) layers",
      "Not supported to have both Attention and MLA/DSA/CSA/HCA/Window in one model",
      MC, { { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:300-305" } },
      attentionWithMla, nullptr, nullptr, nullptr, "one kind of attention per hybrid model", "" },
    { "RT19", "*", kAnyFormat, E, "hybrid_layer_pattern pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "virtual pipeline stages for a hybrid pattern without '|' segments",
      "Virtual pipeline parallelism (vp_stage != None) is not supported when hybrid_layer_pattern has no pipe ('|') separators. Add '|' separators to define explicit pipeline/virtual-pipeline stage boundaries.",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:385-392" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:394-401" } },
      [](const Ctx& c) { return isHybrid(c.r) && patternSegments(c) == 1 && c.r.pipeline_model_parallel_size > 1 && c.r.virtual_pipeline_model_parallel_size.has_value(); }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset virtual_pipeline_model_parallel_size (or give '|' segments)", "virtual_pipeline_model_parallel_size", nullptr); },
      "virtual_pipeline_model_parallel_size=null, or '|' between the chunks", "" },
    { "RT19", "*", kAnyFormat, E, "hybrid_layer_pattern pipeline_model_parallel_size",
      "a hybrid pattern without '|' whose layers the pipeline stages do not divide",
      "Number of layers ({n}) must be evenly divisible by pipeline-model-parallel-size ({pp}) when no pipe separators are specified in the pattern.",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:436-441" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:445-450" } },
      [](const Ctx& c) { return isHybrid(c.r) && patternSegments(c) == 1 && c.r.pipeline_model_parallel_size > 1 && !firstOrLast(c) && patternLayers(c) % c.r.pipeline_model_parallel_size != 0; },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(patternLayers(c))); a.set("pp", std::to_string(c.r.pipeline_model_parallel_size)); }, nullptr,
      nullptr, "'|' at the stage boundaries, or a PP size that divides the layers", "" },
    { "RT19", "*", kAnyFormat, E, "hybrid_layer_pattern pipeline_model_parallel_size",
      "'|' segments that the pipeline stages do not divide",
      "The number of pipe-delimited segments ({s}) in hybrid_layer_pattern must be evenly divisible by pipeline_model_parallel_size ({pp}).",
      MC, { { "*", "megatron/core/models/hybrid/hybrid_layer_allocation.py:459-465" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:468-474" } },
      [](const Ctx& c) { return isHybrid(c.r) && patternSegments(c) > 1 && c.r.pipeline_model_parallel_size >= 1 && patternSegments(c) % static_cast<size_t>(c.r.pipeline_model_parallel_size) != 0; },
      [](const Ctx& c, Args& a) { a.set("s", std::to_string(patternSegments(c))); a.set("pp", std::to_string(c.r.pipeline_model_parallel_size)); }, nullptr,
      nullptr, "PP x virtual stages segments", "" },
    { "RT19", "*", kAnyFormat, E, "hybrid_layer_pattern num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage",
      "first / last stage sizes with a hybrid pattern that has '|' segments",
      "Cannot specify num_layers_in_first_pipeline_stage or num_layers_in_last_pipeline_stage when hybrid_layer_pattern contains pipe ('|') separators. The pipeline layout is already explicitly defined by the pipe separators.",
      MC, { { "bridge-pin", "megatron/core/models/hybrid/hybrid_layer_allocation.py:377-383" }, { "guide", "megatron/core/models/hybrid/hybrid_layer_allocation.py:377-383" }, { "main", "megatron/core/models/hybrid/hybrid_layer_allocation.py:377-383" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:386-392" } },
      [](const Ctx& c) { return isHybrid(c.r) && patternSegments(c) > 1 && firstOrLast(c); }, nullptr, nullptr,
      pipelineSizesOff, "num_layers_in_first_pipeline_stage=null, num_layers_in_last_pipeline_stage=null", "" },
    { "RT19", "*", kAnyFormat, E, "hybrid_layer_pattern num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage pipeline_model_parallel_size",
      "a hybrid pattern without '|' whose middle layers the middle stages do not split evenly",
      "Middle layers ({n}) must be evenly divisible by middle pipeline stages ({s}).",
      MC, { { "bridge-pin", "megatron/core/models/hybrid/hybrid_layer_allocation.py:412-417" }, { "guide", "megatron/core/models/hybrid/hybrid_layer_allocation.py:412-417" }, { "main", "megatron/core/models/hybrid/hybrid_layer_allocation.py:412-417" }, { "dev", "megatron/core/models/hybrid/hybrid_layer_allocation.py:421-426" } },
      [](const Ctx& c) { return isHybrid(c.r) && patternSegments(c) == 1 && ppSize(c) > 1 && firstOrLast(c) && middleStages(c) > 0 && pyMod(patternLayers(c) - c.r.num_layers_in_first_pipeline_stage.value_or(0) - c.r.num_layers_in_last_pipeline_stage.value_or(0), middleStages(c)) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(patternLayers(c) - c.r.num_layers_in_first_pipeline_stage.value_or(0) - c.r.num_layers_in_last_pipeline_stage.value_or(0))); a.set("s", std::to_string(middleStages(c))); }, nullptr,
      nullptr, "first / last stage sizes that leave the middle stages equal shares", "" },
    { "RT20", "*", kAnyFormat, E, "hidden_size mamba_head_dim mamba_num_heads hybrid_layer_pattern",
      "Mamba's d_inner (2 x hidden_size) not a multiple of mamba_head_dim, mamba_num_heads unset",
      "d_inner must be evenly divisible by headdim",
      MC, { { "bridge-pin", "megatron/core/ssm/mamba_mixer.py:249" }, { "guide", "megatron/core/ssm/mamba_mixer.py:249" }, { "main", "megatron/core/ssm/mamba_mixer.py:250" }, { "dev", "megatron/core/ssm/mamba_mixer.py:237" } },
      [](const Ctx& c) { return mambaLayers(c) && !c.r.mamba_num_heads && c.r.mamba_head_dim >= 1 && (int64_t(kMambaExpand) * c.r.hidden_size) % c.r.mamba_head_dim != 0; }, nullptr, nullptr,
      nullptr, "mamba_num_heads set, or mamba_head_dim dividing 2 x hidden_size", "MambaMixer asserts when the model is built" },
    { "RT20", "*", kAnyFormat, E, "mamba_num_heads tensor_model_parallel_size hybrid_layer_pattern",
      "Mamba heads that tensor parallelism does not split evenly",
      "nheads must be evenly divisble by tp_size",
      MC, { { "bridge-pin", "megatron/core/ssm/mamba_mixer.py:261" }, { "guide", "megatron/core/ssm/mamba_mixer.py:261" }, { "main", "megatron/core/ssm/mamba_mixer.py:262" }, { "dev", "megatron/core/ssm/mamba_mixer.py:249" } },
      [](const Ctx& c) { return mambaLayers(c) && c.r.tensor_model_parallel_size >= 1 && mambaHeads(c) % c.r.tensor_model_parallel_size != 0; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "run without tensor parallelism (or with a TP size that divides the Mamba heads)", "tensor_model_parallel_size", 1); },
      "tensor_model_parallel_size dividing the Mamba heads", "Megatron's message, its spelling kept" },
    { "RT20", "*", kAnyFormat, E, "mamba_num_groups tensor_model_parallel_size hybrid_layer_pattern",
      "Mamba groups that tensor parallelism does not split evenly",
      "ngroups must be evenly divisible by tp_size",
      MC, { { "bridge-pin", "megatron/core/ssm/mamba_mixer.py:269" }, { "guide", "megatron/core/ssm/mamba_mixer.py:269" }, { "main", "megatron/core/ssm/mamba_mixer.py:270" }, { "dev", "megatron/core/ssm/mamba_mixer.py:257" } },
      [](const Ctx& c) { return mambaLayers(c) && c.r.tensor_model_parallel_size >= 1 && c.r.mamba_num_groups % c.r.tensor_model_parallel_size != 0; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "run without tensor parallelism (or with a TP size that divides the Mamba groups)", "tensor_model_parallel_size", 1); },
      "tensor_model_parallel_size dividing mamba_num_groups", "" },
    { "RT20", "*", kAnyFormat, E, "mamba_num_heads mamba_num_groups hybrid_layer_pattern",
      "Mamba heads not a multiple of its groups",
      "nheads must be evenly divisible by ngroups",
      MC, { { "bridge-pin", "megatron/core/ssm/mamba_mixer.py:273" }, { "guide", "megatron/core/ssm/mamba_mixer.py:273" }, { "main", "megatron/core/ssm/mamba_mixer.py:274" }, { "dev", "megatron/core/ssm/mamba_mixer.py:261" } },
      [](const Ctx& c) { return mambaLayers(c) && c.r.mamba_num_groups >= 1 && mambaHeads(c) % c.r.mamba_num_groups != 0; }, nullptr, nullptr,
      nullptr, "mamba_num_groups dividing the Mamba heads", "" },
    { "RT21", "*", kAnyFormat, E, "activation_func hybrid_layer_pattern linear_attention_freq experimental_attention_variant",
      "GatedDeltaNet layers with an activation other than SiLU (its causal conv takes config.activation_func)",
      "assert self.activation in [\"silu\", \"swish\"]",
      MC, { { "bridge-pin", "megatron/core/ssm/gated_delta_net/gdn.py:206" }, { "guide", "megatron/core/ssm/gated_delta_net/gdn.py:213" }, { "main", "megatron/core/ssm/gated_delta_net/gdn.py:231" }, { "dev", "megatron/core/ssm/gated_delta_net/gdn.py:496" } },
      [](const Ctx& c) { return c.r.activation_func != "silu" && gdnLayers(c); }, nullptr, nullptr,
      nullptr, "activation_func=silu for a model with GatedDeltaNet layers",
      "a bare assert in GatedDeltaNet.forward (not deterministic_mode): the FLA conv kernel takes silu/swish only; a squared-ReLU Nemotron-H pattern cannot hold 'G' layers" },
    { "RT22", "main", kAnyFormat, E, "fp8 fp8_recipe te_version",
      "fp8 with delayed scaling on Transformer Engine 2.17 or later: TEDelayedScaling passes fields TE's DelayedScaling no longer has (measured: TE 2.17.1, tests/fixtures/logs/megatron-lm-fp8/refused)",
      "DelayedScaling.__init__() got an unexpected keyword argument 'override_linear_precision' (Megatron's TEDelayedScaling with Transformer Engine {te_version})",
      MC, { { "main", "megatron/core/extensions/transformer_engine.py:3331-3364; megatron/core/fp8_utils.py:772-776" } },
      [](const Ctx& c) { return c.fp8() && c.r.fp8_recipe == "delayed" && c.r.te_version && teAtLeast217(*c.r.te_version); },
      [](const Ctx& c, Args& a) { a.set("te_version", *c.r.te_version); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use current scaling (fp8_recipe=tensorwise)", "fp8_recipe", "tensorwise"); },
      "fp8_recipe=tensorwise", "a TypeError at the first forward, not a config check: DelayedScaling in TE 2.17.1 takes neither override_linear_precision (backward_override replaced it) nor the module keywords params_dtype and device that TEDelayedScaling also passes" },
    { "RT22", "main", kAnyFormat, W, "fp8 fp8_recipe te_version",
      "fp8 with delayed scaling and the Transformer Engine version unknown: with TE 2.17 or later it fails at the first forward (RT22's error)",
      "fp8_recipe='delayed' fails at the first forward with Transformer Engine 2.17 or later (TEDelayedScaling passes override_linear_precision, params_dtype and device, which TE's DelayedScaling does not take); set te_version to check",
      MC, { { "main", "megatron/core/extensions/transformer_engine.py:3331-3364; megatron/core/fp8_utils.py:772-776" } },
      [](const Ctx& c) { return c.fp8() && c.r.fp8_recipe == "delayed" && !c.r.te_version; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use current scaling (fp8_recipe=tensorwise)", "fp8_recipe", "tensorwise"); },
      "fp8_recipe=tensorwise, or te_version below 2.17", "measured with TE 2.17.1 (tests/fixtures/logs/megatron-lm-fp8/refused/fp8-dense-delayed-none-unshimmed.log)" },
    { "RT23", "*", kAnyFormat, E, "experimental_attention_variant multi_latent_attention",
      "DSA without MLA",
      "Currently only MLA supports sparse attention.",
      MC, { { "*", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:101" }, { "guide", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:85" }, { "dev", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:99" } },
      [](const Ctx& c) { return isDsaModel(c.r) && !c.r.multi_latent_attention; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set multi_latent_attention=true", "multi_latent_attention", true); },
      "multi_latent_attention=true", "an assertion when the layer specs are built (get_dsa_module_spec_for_backend)" },
    { "RT24", "*", kAnyFormat, E, "experimental_attention_variant tensor_model_parallel_size sequence_parallel",
      "DSA (absorbed MLA) under TP without sequence parallelism",
      "AbsorbedMLA requires sequence_parallel when tensor_model_parallel_size > 1",
      MC, { { "*", "megatron/core/transformer/experimental_attention_variant/absorbed_mla.py:171-173" } },
      [](const Ctx& c) { return isDsaModel(c.r) && c.r.tensor_model_parallel_size > 1 && !c.r.sequence_parallel; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set sequence_parallel=true", "sequence_parallel", true); },
      "sequence_parallel=true", "an assertion when AbsorbedMLASelfAttention is built, the attention every DSA layer has" },
    { "RT25", "bridge-pin guide main", kAnyFormat, E, "experimental_attention_variant recompute_modules fp8 fp4",
      "DSA (absorbed MLA) with mla_up_proj recompute under fp8 or fp4",
      "FP8/FP4 is not supported for AbsorbedMLA",
      MC, { { "*", "megatron/core/transformer/experimental_attention_variant/absorbed_mla.py:661-663" }, { "main", "megatron/core/transformer/experimental_attention_variant/absorbed_mla.py:671-673" } },
      [](const Ctx& c) { return isDsaModel(c.r) && c.selective() && c.has("mla_up_proj") && (c.fp8() || c.fp4()); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mla_up_proj" }, "drop 'mla_up_proj'"); },
      "drop 'mla_up_proj'", "an assertion at the first forward: the up-projection's checkpoint has no quantized path in AbsorbedMLA" },
    { "RT26", "*", kAnyFormat, E, "experimental_attention_variant dsa_indexer_topk_freq dsa_indexer_skip_topk_offset pipeline_model_parallel_size virtual_pipeline_model_parallel_size pipeline_model_parallel_layout num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage",
      "DSA top-k sharing across pipeline chunks (the recipe's split: its layout, first / last stage sizes, or the even one)",
      "DSA index-share pipeline split is invalid: local layer {layer} reuses top-k indices from computing layer {source}, but that source layer is not earlier in this pipeline stage. Cross-layer top-k sharing does not cross PP boundaries. Choose a pipeline layout where each stage starts on a computing layer (dsa_indexer_topk_freq={freq}, dsa_indexer_skip_topk_offset={offset}).",
      MC, { { "*", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:395-430" }, { "guide", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:339-374" }, { "dev", "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:418-453" } },
      [](const Ctx& c) { return dsaShareSplitBreak(c).has_value(); },
      [](const Ctx& c, Args& a) { const auto b = *dsaShareSplitBreak(c); a.set("layer", std::to_string(b.first)); a.set("source", std::to_string(b.second)); a.set("freq", std::to_string(c.r.dsa_indexer_topk_freq)); a.set("offset", std::to_string(c.r.dsa_indexer_skip_topk_offset)); }, nullptr,
      nullptr, "", "a RuntimeError when a chunk's layer specs are built, on the chunks model_shape.h pipelineStage gives (a split Megatron refuses earlier is the other rules')" },
    { "RT27", "*", kAnyFormat, E, "moe_shared_expert_overlap moe_latent_size",
      "latent MoE with moe_shared_expert_overlap: the MoE layer raises at its first training forward",
      "Shared expert overlap with MoE latent projections is not supported during training. Disable moe_shared_expert_overlap.",
      MC, { { "bridge-pin", "megatron/core/transformer/moe/moe_layer.py:476-482" }, { "guide", "megatron/core/transformer/moe/moe_layer.py:469-475" }, { "main", "megatron/core/transformer/moe/moe_layer.py:476-482" }, { "dev", "megatron/core/transformer/moe/moe_layer.py:490-496" } },
      [](const Ctx& c) { return c.moeLayers() > 0 && c.r.moe_latent_size.value_or(0) != 0 && c.r.moe_shared_expert_overlap; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set moe_shared_expert_overlap=false", "moe_shared_expert_overlap", false); },
      "moe_shared_expert_overlap=false", "not a config check: MoELayer.preprocess raises in training (only the NVLS inference dispatcher overlaps the shared expert of a latent MoE); Bridge's NemotronHBridge turns the overlap on, so a Nemotron 3 recipe that keeps it fails at its first step" },

    { "RT28", "*", kAnyFormat, E, "num_layers pipeline_model_parallel_size",
      "the even split: num_layers not a multiple of PP (a layer would be on no stage)",
      "num_layers={L} should be divisible by config.pipeline_model_parallel_size={pp}",
      MC, { { "bridge-pin", "TB:150-152" }, { "guide", "TB:150-152" }, { "main", "TB:156-158" }, { "dev", "TB:168-170" } },
      [](const Ctx& c) { return !isHybrid(c.r) && isEvenPipelineSplit(c.r) && !accountFor(c) && !(c.format == InputFormat::MegatronFlags && !vppSet(c)) && c.r.num_layers >= 1 && ppSize(c) >= 1 && c.r.num_layers % ppSize(c) != 0; }, [](const Ctx& c, Args& a) { a.set("L", std::to_string(c.r.num_layers)); a.set("pp", std::to_string(ppSize(c))); }, nullptr,
      nullptr, "num_layers a multiple of pipeline_model_parallel_size, or a pipeline_model_parallel_layout that places every layer", "an assertion when the decoder's layers are built (get_num_layers_to_build); TransformerConfig does not check the even split (R51 does where the embedding or the loss is counted, M11 for Megatron-LM's flags)" },
    { "RT28", "*", kAnyFormat, E, "num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "the even split: a stage's layers not a multiple of the virtual stages",
      "num_layers_per_pipeline_rank {n}             should be divisible by vp_size {v}",
      MC, { { "bridge-pin", "TB:169-172" }, { "guide", "TB:169-172" }, { "main", "TB:175-178" }, { "dev", "TB:187-190" } },
      [](const Ctx& c) { return !isHybrid(c.r) && isEvenPipelineSplit(c.r) && !accountFor(c) && vppSet(c) && vppOf(c) >= 1 && ppSize(c) > 1 && c.r.num_layers >= 1 && c.r.num_layers % ppSize(c) == 0 && (c.r.num_layers / ppSize(c)) % vppOf(c) != 0; }, [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.num_layers / ppSize(c))); a.set("v", std::to_string(vppOf(c))); }, nullptr,
      nullptr, "num_layers / PP a multiple of virtual_pipeline_model_parallel_size", "Megatron's message: a backslash continues the f-string, and the next line's indentation is in it" },
    { "RT29", "*", kAnyFormat, E, "num_layers_in_first_pipeline_stage num_layers_in_last_pipeline_stage pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "first and last stage sizes on two pipeline stages with virtual stages: no middle stage to divide by",
      "integer division or modulo by zero",
      MC, { { "bridge-pin", "TL:150-158" }, { "guide", "TL:150-158" }, { "main", "TL:158-166" }, { "dev", "TL:159-167" } },
      [](const Ctx& c) { return !isHybrid(c.r) && unevenSplit(c) && ppSize(c) > 1 && middleStages(c) == 0 && vppSet(c); }, nullptr, nullptr,
      unsetOpt<k_virtual_pipeline_model_parallel_size>, "virtual_pipeline_model_parallel_size=null, or a middle stage", "a ZeroDivisionError when the second stage's layers are built: get_transformer_layer_offset divides the middle layers per virtual stage by the middle stages, 0 here" },
    // Measured at d98e8a64 (docs/rules.md#rt30): the dense MLP's linear_fc2 returns its bias parameter
    // (skip_bias_add) as the checkpoint's second output, so each replay's backward reaches another
    // checkpoint's backward through it. The fp8/fp4 path (te_checkpoint) was not run: it does not fire there.
    { "RT30", "*", kAnyFormat, E, "recompute_modules add_bias_linear",
      "mlp recompute of dense MLPs with linear biases: the first backward re-enters the checkpoint until out of memory",
      "mlp recompute with linear biases never finishes its first backward: CheckpointFunction.backward re-enters itself through the linear_fc2 bias that the mlp checkpoint returns, until torch.OutOfMemoryError",
      MC, { { "bridge-pin", "TL:514,868-886; RND:660; megatron/core/transformer/mlp.py:249" }, { "guide", "TL:514,868-886; RND:660; megatron/core/transformer/mlp.py:249" }, { "main", "TL:539,992-1010; RND:668; megatron/core/transformer/mlp.py:249" }, { "dev", "TL:538,979-998; RND:711; megatron/core/transformer/mlp.py:245" } },
      [](const Ctx& c) { return c.selective() && c.has("mlp") && c.r.add_bias_linear && c.denseLayers() > 0 && !c.r.fp8 && !c.r.fp4; }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "mlp" }, "drop 'mlp' from recompute_modules (or set add_bias_linear=false: --disable-bias-linear)"); },
      "drop 'mlp' from recompute_modules, or add_bias_linear=false", "measured on the local and the TE spec, with and without core_attn: the run never finishes its first step (bench/gpu/results/h100-2026-12-07-dlocal)" },
    // ===================================== our own advice, from the guide (RS) ========================
    { "RS01", "*", kAnyFormat, E, "recompute_num_layers recompute_method",
      "full uniform recompute with recompute_num_layers <= 0 (no Megatron check: R07b)",
      "recompute_num_layers={k} with recompute_method='uniform' never finishes: the uniform loop advances by recompute_num_layers, so it loops forever on the first forward.",
      GD, { { "*", "docs/rules.md#rs01; RC:157-166" } },
      [](const Ctx& c) { return c.full() && c.r.recompute_method.value_or("") == "uniform" && c.r.recompute_num_layers && *c.r.recompute_num_layers <= 0; },
      [](const Ctx& c, Args& a) { a.set("k", pyInt(c.r.recompute_num_layers)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_num_layers=1", "recompute_num_layers", 1); },
      "recompute_num_layers=1", "no validator catches it; the loop's index never advances (k <= 0)" },
    { "RS02", "*", kAnyFormat, W, "recompute_num_layers recompute_method",
      "full block recompute with recompute_num_layers <= 0: nothing is recomputed",
      "recompute_num_layers={k} with recompute_method='block' checkpoints no layer: full recompute is on but recomputes nothing.",
      GD, { { "*", "docs/rules.md#rs02; RC:167-181" } },
      [](const Ctx& c) { return c.full() && c.r.recompute_method.value_or("") == "block" && c.r.recompute_num_layers && *c.r.recompute_num_layers <= 0; },
      [](const Ctx& c, Args& a) { a.set("k", pyInt(c.r.recompute_num_layers)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set recompute_num_layers=1", "recompute_num_layers", 1); },
      "recompute_num_layers=1", "block checkpoints layers skip <= idx < k + skip: none when k <= 0" },
    { "RS03", "*", kAnyFormat, W, "recompute_num_layers num_layers pipeline_model_parallel_size virtual_pipeline_model_parallel_size",
      "full recompute with recompute_num_layers above the layers of the largest model chunk (num_layers / pp / vpp under the even split)",
      "recompute_num_layers={k} exceeds the {chunk} layers of the largest model chunk (num_layers / pipeline_model_parallel_size / virtual_pipeline_model_parallel_size under the even split): uniform makes one checkpoint of the whole chunk and block checkpoints every layer, so a larger value changes nothing.",
      GD, { { "*", "docs/rules.md#rs03; TB:334" } },
      [](const Ctx& c) { return c.full() && c.r.recompute_num_layers && c.chunkLayers() > 0 && *c.r.recompute_num_layers > c.chunkLayers(); },
      [](const Ctx& c, Args& a) { a.set("k", pyInt(c.r.recompute_num_layers)); a.set("chunk", std::to_string(c.chunkLayers())); }, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "set recompute_num_layers to the layers of a model chunk", "recompute_num_layers", c.chunkLayers()); },
      "recompute_num_layers = the largest chunk's layers", "recompute_num_layers applies per model chunk (TransformerBlock), not per rank nor globally; R07's message still prints num_layers // pp" },
    { "RS04", "*", kAnyFormat, N, "recompute_num_layers recompute_method virtual_pipeline_model_parallel_size",
      "full block recompute with virtual pipeline: the count applies per model chunk",
      "recompute_method='block' applies per model chunk: with virtual_pipeline_model_parallel_size={vpp} each pipeline rank recomputes {per_rank} layers ({per_chunk} in each of its {vpp} chunks), not {k}.",
      GD, { { "*", "docs/rules.md#rs04; RC:167-181" } },
      [](const Ctx& c) { return c.full() && c.r.recompute_method.value_or("") == "block" && c.r.virtual_pipeline_model_parallel_size.value_or(1) > 1 && c.r.recompute_num_layers.value_or(0) > 0; },
      [](const Ctx& c, Args& a) {
          const int vpp = *c.r.virtual_pipeline_model_parallel_size;
          const int perChunk = std::min(*c.r.recompute_num_layers, std::max(0, c.chunkLayers()));
          a.set("vpp", std::to_string(vpp)); a.set("per_rank", std::to_string(perChunk * vpp)); a.set("per_chunk", std::to_string(perChunk)); a.set("k", pyInt(c.r.recompute_num_layers));
      }, nullptr, nullptr, "", "the guide: 'block: checkpoint the first recompute_num_layers layers on each pipeline stage, with virtual-pipeline-aware distribution'" },
    { "RS05", "*", kAnyFormat, W, "recompute_modules num_moe_experts",
      "MoE labels (moe_act, moe, shared_experts) on a dense model: no-ops",
      "{labels} in recompute_modules have no effect here: the model has no MoE layers (num_moe_experts is None).",
      GD, { { "*", "docs/rules.md#rs05" } },
      [](const Ctx& c) { return c.selective() && !c.isMoE() && anyOf(c, { "moe_act", "moe", "shared_experts" }); },
      [](const Ctx& c, Args& a) { std::vector<std::string> l; for (const char* m : { "moe_act", "moe", "shared_experts" }) if (c.has(m)) l.emplace_back(m); a.set("labels", pyList(l)); }, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "moe_act", "moe", "shared_experts" }, "drop the MoE labels (the model is dense)"); },
      "drop moe_act/moe/shared_experts", "the guide: 'That module is absent or inactive on the measured layers'" },
    { "RS06", "*", kAnyFormat, N, "recompute_modules attention_backend",
      "core_attn under fused or flash attention: compare with []",
      "'core_attn' with attention_backend={backend}: fused and Flash attention already rematerialize attention internals, so explicit core_attn must earn its place in a matched comparison with recompute_modules=[].",
      GD, { { "*", "docs/rules.md#rs06" } },
      [](const Ctx& c) { return c.selective() && c.has("core_attn") && (c.r.attention_backend == "fused" || c.r.attention_backend == "flash"); },
      [](const Ctx& c, Args& a) { a.set("backend", pyRepr(c.r.attention_backend)); }, nullptr,
      [](const Ctx& c, FixIt& f) { dropLabels(c, f, { "core_attn" }, "drop 'core_attn' (measure against [])"); },
      "drop 'core_attn' and measure against []", "the guide: 'With Transformer Engine fused or Flash Attention, compare it against [] because those backends already rematerialize attention internals'" },
    { "RS07", "*", kAnyFormat, W, "recompute_modules cuda_graph_modules",
      "whole-MoE checkpoint straddling a TE graph that captures moe_preprocess (and not the router: that is R31)",
      "'moe' in recompute_modules straddles the CUDA-graph boundary: cuda_graph_modules captures moe_preprocess inside the MoE layer that the 'moe' checkpoint wraps whole; a checkpoint must lie wholly inside or wholly outside the graph scope.",
      GD, { { "*", "docs/rules.md#rs07" } },
      [](const Ctx& c) { return c.selective() && c.has("moe") && c.impl("transformer_engine") && c.cg("moe_preprocess") && !c.cg("moe_router"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "stop capturing moe_preprocess", "cuda_graph_modules", cgWithout(c, { "moe_preprocess" })); },
      "drop moe_preprocess from cuda_graph_modules (or 'moe' from recompute_modules)", "the guide: 'A checkpoint boundary that straddles a graph boundary is invalid'" },
    { "RS08", "*", kAnyFormat, N, "recompute_granularity attention_dropout hidden_dropout",
      "full recompute with dropout: needs a numerical check",
      "Full recompute with dropout (attention_dropout={ad}, hidden_dropout={hd}) changes RNG execution paths: run a short numerical or convergence check against the control.",
      GD, { { "*", "docs/rules.md#rs08" } },
      [](const Ctx& c) { return c.full() && (c.r.attention_dropout != 0.0 || c.r.hidden_dropout != 0.0); },
      [](const Ctx& c, Args& a) { a.set("ad", nlohmann::json(c.r.attention_dropout).dump()); a.set("hd", nlohmann::json(c.r.hidden_dropout).dump()); }, nullptr, nullptr,
      "", "the guide: 'Full recompute changes RNG execution paths; dropout workloads need a numerical/convergence check'" },
    { "RS09", "*", kAnyFormat, N, "recompute_modules context_parallel_size",
      "attention recompute (core_attn or full) under context parallelism replays its communication",
      "With context_parallel_size={cp} an attention checkpoint replays the context-parallel communication as well as the compute: record CP size and topology with the measurement.",
      GD, { { "*", "docs/rules.md#rs09" } },
      [](const Ctx& c) { return c.r.context_parallel_size > 1 && ((c.selective() && c.has("core_attn")) || c.full()); },
      [](const Ctx& c, Args& a) { a.set("cp", std::to_string(c.r.context_parallel_size)); }, nullptr, nullptr,
      "", "the guide: 'Under context parallelism, an attention checkpoint can replay communication as well as compute'" },
    { "RS10", "*", kAnyFormat, N, "recompute_modules expert_model_parallel_size",
      "whole-MoE recompute with expert parallelism replays dispatch/combine communication",
      "'moe' recompute with expert_model_parallel_size={ep} replays routing, dispatch/combine communication, experts and shared-expert work in backward; try moe_act first unless a broad MoE region must go.",
      GD, { { "*", "docs/rules.md#rs10" } },
      [](const Ctx& c) { return c.selective() && c.has("moe") && c.r.expert_model_parallel_size > 1; },
      [](const Ctx& c, Args& a) { a.set("ep", std::to_string(c.r.expert_model_parallel_size)); }, nullptr, nullptr,
      "", "the guide: 'Use whole moe recompute only after accounting for the extra expert compute and communication it replays'" },
    { "RS11", "*", kAnyFormat, W, "distribute_saved_activations recompute_granularity",
      "distribute_saved_activations under selective: a no-op (every selective call site passes False)",
      "distribute_saved_activations=True has no effect under selective recompute: every selective checkpoint passes distribute_saved_activations=False; it reaches only the full-recompute path.",
      GD, { { "*", "docs/rules.md#rs11" } },
      [](const Ctx& c) { return c.selective() && c.r.distribute_saved_activations; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "accepted by MCore and Bridge (the Bridge doc even shows it), but inert" },
    { "RS12", "*", kJson | kBridge, W, "distribute_saved_activations tensor_model_parallel_size",
      "full recompute with distribute_saved_activations at TP=1: saves nothing (Megatron-LM rejects it: M3)",
      "distribute_saved_activations=True with tensor_model_parallel_size=1 saves nothing: the checkpointed hidden states are split across the tensor-parallel group, which has one rank.",
      GD, { { "*", "docs/rules.md#rs12; RND:621-625,647-650" } },
      [](const Ctx& c) { return c.full() && c.r.distribute_saved_activations && c.r.tensor_model_parallel_size <= 1; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set distribute_saved_activations=false", "distribute_saved_activations", false); },
      "distribute_saved_activations=false", "" },
    { "RS13", "*", kAnyFormat, N, "cpu_offloading recompute_granularity pipeline_model_parallel_size",
      "full recompute without pipeline parallelism: cpu_offloading is the alternative",
      "cpu_offloading=True is the alternative to full recompute when PCIe/NVLink transfer overhead is preferable to replayed compute; it cannot be combined with activation recompute (R03) nor with pipeline parallelism (R02).",
      GD, { { "*", "docs/rules.md#rs13" } },
      [](const Ctx& c) { return c.full() && !c.r.cpu_offloading && c.r.pipeline_model_parallel_size == 1; }, nullptr, nullptr, nullptr,
      "", "the guide: 'Megatron Core's cpu_offloading=True is an alternative when PCIe/NVLink transfer overhead is preferable to replayed compute'" },
    { "RS14", "*", kJson | kBridge, W, "recompute_method recompute_granularity",
      "selective with a recompute_method: ignored (Megatron-LM's CLI rejects it: M4)",
      "recompute_method={method} is ignored under selective recompute (Megatron Core accepts it and applies selective labels to all layers).",
      GD, { { "*", "docs/rules.md#rs14; TC:532-541" } },
      [](const Ctx& c) { return c.selective() && c.r.recompute_method.has_value(); },
      [](const Ctx& c, Args& a) { a.set("method", pyRepr(*c.r.recompute_method)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_method", "recompute_method", nullptr); },
      "recompute_method=null", "" },
    { "RS15", "*", kAnyFormat, N, "recompute_modules recompute_granularity",
      "labels given while granularity is not selective: they do nothing",
      "recompute_modules={modules} has no effect with recompute_granularity={g}: {why}.",
      GD, { { "*", "docs/rules.md#rs15" } },
      [](const Ctx& c) { return c.modules_given && !c.selective() && c.r.recompute_modules && !c.r.recompute_modules->empty() && (!c.gSet() || c.full()); },
      [](const Ctx& c, Args& a) { a.set("modules", pyList(*c.r.recompute_modules)); a.set("g", c.gSet() ? pyRepr(*c.r.recompute_granularity) : "None"); a.set("why", c.full() ? "full granularity supersedes selective module choices" : "labels apply only when recompute_granularity='selective'"); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset recompute_modules", "recompute_modules", nullptr); },
      "recompute_modules=null (or recompute_granularity=selective)", "the guide: 'Full granularity supersedes selective module choices rather than composing with them'" },
    { "RS16", "*", kAnyFormat, N, "recompute_modules",
      "selective with [] : the explicit no-recompute control",
      "recompute_granularity='selective' with recompute_modules=[] recomputes nothing: this is the matched no-recompute control.",
      GD, { { "*", "docs/rules.md#rs16" } },
      [](const Ctx& c) { return c.selective() && c.r.recompute_modules && c.r.recompute_modules->empty(); }, nullptr, nullptr, nullptr,
      "", "the guide: 'Keep an explicit no-recompute control when the workload fits'" },
    { "RS17", "*", kAnyFormat, N, "recompute_modules",
      "moe nested with moe_act or shared_experts",
      "'moe' already wraps {inner}: outer moe removes their original-forward saves, and the nested checkpoint can still change the transient backward-replay peak; measure the combination, do not add savings.",
      GD, { { "*", "docs/rules.md#rs17" } },
      [](const Ctx& c) { return c.selective() && c.has("moe") && c.isMoE() && (c.has("moe_act") || c.has("shared_experts")); },
      [](const Ctx& c, Args& a) { std::vector<std::string> l; for (const char* m : { "moe_act", "shared_experts" }) if (c.has(m)) l.emplace_back(m); a.set("inner", pyList(l)); }, nullptr, nullptr,
      "", "the guide: 'Memory savings are nonlinear when boundaries overlap or nest; additive arithmetic is unreliable'" },
    { "RS18", "*", kAnyFormat, W, "recompute_modules transformer_impl",
      "output-discard labels without Transformer Engine (transformer_impl='local')",
      "{labels} use CheckpointWithoutOutput, which takes the Transformer Engine path even in plain bf16; without Transformer Engine it fails at the first forward (seen on main d98e8a64: NameError: name 'FP8GlobalStateManager' is not defined).",
      OB, { { "*", "docs/rules.md#rs18; RND:883" } },
      [](const Ctx& c) { return c.selective() && c.r.transformer_impl == "local" && anyOf(c, { "layernorm", "moe_act", "gdn_norm_out", "mla_up_proj" }); },
      [](const Ctx& c, Args& a) { std::vector<std::string> l; for (const char* m : { "layernorm", "moe_act", "gdn_norm_out", "mla_up_proj" }) if (c.has(m)) l.emplace_back(m); a.set("labels", pyList(l)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use the transformer_engine layer spec", "transformer_impl", "transformer_engine"); },
      "transformer_impl=transformer_engine", "observed on main; the same CheckpointWithoutOutput constructor is shared by every output-discard label" },
    { "RS19", "main", kAnyFormat, W, "multi_latent_attention transformer_impl",
      "MLA with the local (non-TE) layer spec does not build on main",
      "multi_latent_attention with transformer_impl='local' does not build on this revision: DotProductAttention.__init__() got an unexpected keyword argument 'k_channels' when instantiating MLASelfAttention.",
      OB, { { "*", "docs/rules.md#rs19" } },
      [](const Ctx& c) { return c.r.multi_latent_attention && c.r.transformer_impl == "local"; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use the transformer_engine layer spec", "transformer_impl", "transformer_engine"); },
      "transformer_impl=transformer_engine", "" },
    { "RS20", "*", kJson | kFlags, N, "mixed_precision",
      "mixed_precision outside Bridge overrides: not applied",
      "mixed_precision={name} is a Megatron Bridge recipe and is applied only when the recipe is read as Bridge overrides (B8); here fp8={fp8}, fp8_recipe={fp8_recipe} and fp4={fp4} apply as written.",
      GD, { { "*", "docs/rules.md#rs20" } },
      [](const Ctx& c) { return c.r.mixed_precision.has_value(); },
      [](const Ctx& c, Args& a) { a.set("name", pyRepr(*c.r.mixed_precision)); a.set("fp8", c.r.fp8 ? pyRepr(*c.r.fp8) : "None"); a.set("fp8_recipe", pyRepr(c.r.fp8_recipe)); a.set("fp4", c.r.fp4 ? pyRepr(*c.r.fp4) : "None"); }, nullptr, nullptr,
      "", "MixedPrecisionConfig's fp8_recipe default is tensorwise, MCore's is delayed (R17)" },
    { "RS21", "*", kAnyFormat, N, "recompute_modules attention_backend",
      "unfused attention without core_attn: the common first candidate",
      "attention_backend='unfused' materializes the attention score and probability tensors: 'core_attn' is the common first candidate here.",
      GD, { { "*", "docs/rules.md#rs21" } },
      [](const Ctx& c) { return c.selective() && c.r.attention_backend == "unfused" && !c.r.multi_latent_attention && !c.has("core_attn"); }, nullptr, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "add 'core_attn'", "recompute_modules", modulesWith(c, "core_attn")); },
      "recompute_modules += ['core_attn']", "the guide: 'It is strongest when unfused attention materializes score/probability tensors'" },
    { "RS22", "bridge-pin guide main", kAnyFormat, W, "enable_hyper_connections enable_mhc_connections",
      "enable_hyper_connections (dev's spelling) outside dev",
      "enable_hyper_connections is the dev branch's spelling (d48bd6be); at {profile} hyper-connections are enable_mhc_connections{where}.",
      GD, { { "*", "docs/rules.md#rs22" } },
      [](const Ctx& c) { return c.r.enable_hyper_connections; },
      [](const Ctx& c, Args& a) { a.set("profile", profileName(c.profile)); a.set("where", mhcFieldWhere(c)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "spell it enable_mhc_connections (main)", "enable_hyper_connections", false); f.patch["enable_mhc_connections"] = true; },
      "enable_mhc_connections=true, enable_hyper_connections=false", "DeepSeek-V4 Bridge providers set enable_hyper_connections, which only the dev branch reads" },
    { "RS22", "dev", kAnyFormat, W, "enable_mhc_connections enable_hyper_connections",
      "enable_mhc_connections (main's spelling) on dev",
      "enable_mhc_connections is main's spelling (d98e8a64); the dev branch reads enable_hyper_connections.",
      GD, { { "*", "docs/rules.md#rs22" } },
      [](const Ctx& c) { return c.r.enable_mhc_connections; }, nullptr, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "spell it enable_hyper_connections (dev)", "enable_mhc_connections", false); f.patch["enable_hyper_connections"] = true; },
      "enable_hyper_connections=true, enable_mhc_connections=false", "" },
    { "RS30", "*", kBridge, N, "num_layers hidden_size num_attention_heads",
      "overrides alone, without the model's shape",
      "the overrides give no {missing}: a change to a recipe that is not here, so the rules that need the model's shape are not checked and nothing is estimated",
      GD, { { "*", "docs/rules.md#rs30" } },
      [](const Ctx& c) { return !c.unknown_shape.empty(); },
      [](const Ctx& c, Args& a) {
          std::string missing;
          for (const auto& k : c.unknown_shape)
              missing += (missing.empty() ? "" : ", ") + k;
          a.set("missing", missing);
      }, nullptr, nullptr,
      "--recipe NAME under the overrides, or model.num_layers=... model.hidden_size=... model.num_attention_heads=...",
      "An override changes a recipe; a field it does not give is the recipe's, unknown here, not Bridge's 0" },
    { "RS23", "*", kAnyFormat, E, "num_layers",
      "num_layers below 1",
      "num_layers={v} is out of range: num_layers must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::num_layers>, valueOf<&Recipe::num_layers>, nullptr, setOne<k_num_layers>,
      "num_layers=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "hidden_size",
      "hidden_size below 1",
      "hidden_size={v} is out of range: hidden_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::hidden_size>, valueOf<&Recipe::hidden_size>, nullptr, setOne<k_hidden_size>,
      "hidden_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "num_attention_heads",
      "num_attention_heads below 1",
      "num_attention_heads={v} is out of range: num_attention_heads must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::num_attention_heads>, valueOf<&Recipe::num_attention_heads>, nullptr, setOne<k_num_attention_heads>,
      "num_attention_heads=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "seq_length",
      "seq_length below 1",
      "seq_length={v} is out of range: seq_length must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::seq_length>, valueOf<&Recipe::seq_length>, nullptr, setOne<k_seq_length>,
      "seq_length=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "micro_batch_size",
      "micro_batch_size below 1",
      "micro_batch_size={v} is out of range: micro_batch_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::micro_batch_size>, valueOf<&Recipe::micro_batch_size>, nullptr, setOne<k_micro_batch_size>,
      "micro_batch_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "vocab_size",
      "vocab_size below 1",
      "vocab_size={v} is out of range: vocab_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::vocab_size>, valueOf<&Recipe::vocab_size>, nullptr, setOne<k_vocab_size>,
      "vocab_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "make_vocab_size_divisible_by",
      "make_vocab_size_divisible_by below 1",
      "make_vocab_size_divisible_by={v} is out of range: make_vocab_size_divisible_by must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::make_vocab_size_divisible_by>, valueOf<&Recipe::make_vocab_size_divisible_by>, nullptr, setOne<k_make_vocab_size_divisible_by>,
      "make_vocab_size_divisible_by=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "tensor_model_parallel_size",
      "tensor_model_parallel_size below 1",
      "tensor_model_parallel_size={v} is out of range: tensor_model_parallel_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::tensor_model_parallel_size>, valueOf<&Recipe::tensor_model_parallel_size>, nullptr, setOne<k_tensor_model_parallel_size>,
      "tensor_model_parallel_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "pipeline_model_parallel_size",
      "pipeline_model_parallel_size below 1",
      "pipeline_model_parallel_size={v} is out of range: pipeline_model_parallel_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::pipeline_model_parallel_size>, valueOf<&Recipe::pipeline_model_parallel_size>, nullptr, setOne<k_pipeline_model_parallel_size>,
      "pipeline_model_parallel_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "context_parallel_size",
      "context_parallel_size below 1",
      "context_parallel_size={v} is out of range: context_parallel_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::context_parallel_size>, valueOf<&Recipe::context_parallel_size>, nullptr, setOne<k_context_parallel_size>,
      "context_parallel_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "expert_model_parallel_size",
      "expert_model_parallel_size below 1",
      "expert_model_parallel_size={v} is out of range: expert_model_parallel_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::expert_model_parallel_size>, valueOf<&Recipe::expert_model_parallel_size>, nullptr, setOne<k_expert_model_parallel_size>,
      "expert_model_parallel_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "data_parallel_size",
      "data_parallel_size below 1",
      "data_parallel_size={v} is out of range: data_parallel_size must be at least 1.",
      GD, { { "*", "docs/rules.md#rs23" } },
      below1<&Recipe::data_parallel_size>, valueOf<&Recipe::data_parallel_size>, nullptr, setOne<k_data_parallel_size>,
      "data_parallel_size=1", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "ffn_hidden_size",
      "ffn_hidden_size set below 1",
      "ffn_hidden_size={v} is out of range: ffn_hidden_size must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::ffn_hidden_size>, optValueOf<&Recipe::ffn_hidden_size>, nullptr, unsetOpt<k_ffn_hidden_size>,
      "ffn_hidden_size=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "num_query_groups",
      "num_query_groups set below 1",
      "num_query_groups={v} is out of range: num_query_groups must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::num_query_groups>, optValueOf<&Recipe::num_query_groups>, nullptr, unsetOpt<k_num_query_groups>,
      "num_query_groups=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "kv_channels",
      "kv_channels set below 1",
      "kv_channels={v} is out of range: kv_channels must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::kv_channels>, optValueOf<&Recipe::kv_channels>, nullptr, unsetOpt<k_kv_channels>,
      "kv_channels=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "global_batch_size",
      "global_batch_size set below 1",
      "global_batch_size={v} is out of range: global_batch_size must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::global_batch_size>, optValueOf<&Recipe::global_batch_size>, nullptr, unsetOpt<k_global_batch_size>,
      "global_batch_size=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "virtual_pipeline_model_parallel_size",
      "virtual_pipeline_model_parallel_size set below 1",
      "virtual_pipeline_model_parallel_size={v} is out of range: virtual_pipeline_model_parallel_size must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::virtual_pipeline_model_parallel_size>, optValueOf<&Recipe::virtual_pipeline_model_parallel_size>, nullptr, unsetOpt<k_virtual_pipeline_model_parallel_size>,
      "virtual_pipeline_model_parallel_size=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "moe_ffn_hidden_size",
      "moe_ffn_hidden_size set below 1",
      "moe_ffn_hidden_size={v} is out of range: moe_ffn_hidden_size must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::moe_ffn_hidden_size>, optValueOf<&Recipe::moe_ffn_hidden_size>, nullptr, unsetOpt<k_moe_ffn_hidden_size>,
      "moe_ffn_hidden_size=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kJson | kBridge, E, "moe_latent_size",
      "moe_latent_size set below 1",
      "moe_latent_size={v} is out of range: moe_latent_size must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::moe_latent_size>, optValueOf<&Recipe::moe_latent_size>, nullptr, unsetOpt<k_moe_latent_size>,
      "moe_latent_size=null", "Megatron Core checks no lower bound (Megatron-LM's flags do: M9); 0 turns the latent projections off (moe_layer.py tests it for truth) while the experts take it as their width (experts.py tests it against None)" },
    { "RS23", "*", kAnyFormat, E, "max_position_embeddings",
      "max_position_embeddings set below 1",
      "max_position_embeddings={v} is out of range: max_position_embeddings must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::max_position_embeddings>, optValueOf<&Recipe::max_position_embeddings>, nullptr, unsetOpt<k_max_position_embeddings>,
      "max_position_embeddings=null", "Megatron checks no lower bound here; the worker would divide by zero or allocate a negative size" },
    { "RS23", "*", kAnyFormat, E, "dsa_indexer_n_heads",
      "dsa_indexer_n_heads set below 1",
      "dsa_indexer_n_heads={v} is out of range: dsa_indexer_n_heads must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::dsa_indexer_n_heads>, optValueOf<&Recipe::dsa_indexer_n_heads>, nullptr, unsetOpt<k_dsa_indexer_n_heads>,
      "dsa_indexer_n_heads=null", "Megatron checks no lower bound here; a 0 or negative size is no indexer" },
    { "RS23", "*", kAnyFormat, E, "dsa_indexer_head_dim",
      "dsa_indexer_head_dim set below 1",
      "dsa_indexer_head_dim={v} is out of range: dsa_indexer_head_dim must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::dsa_indexer_head_dim>, optValueOf<&Recipe::dsa_indexer_head_dim>, nullptr, unsetOpt<k_dsa_indexer_head_dim>,
      "dsa_indexer_head_dim=null", "Megatron checks no lower bound here; a 0 or negative size is no indexer" },
    { "RS23", "*", kAnyFormat, E, "dsa_indexer_topk",
      "dsa_indexer_topk set below 1",
      "dsa_indexer_topk={v} is out of range: dsa_indexer_topk must be at least 1 (or unset).",
      GD, { { "*", "docs/rules.md#rs23" } },
      optBelow1<&Recipe::dsa_indexer_topk>, optValueOf<&Recipe::dsa_indexer_topk>, nullptr, unsetOpt<k_dsa_indexer_topk>,
      "dsa_indexer_topk=null", "Megatron checks no lower bound here; a query that keeps no key has no attention" },
    { "RS24", "*", kJson | kBridge, E, "hidden_size num_attention_heads kv_channels",
      "hidden_size not a multiple of num_attention_heads with kv_channels unset",
      "hidden_size={h} is not divisible by num_attention_heads={n} and kv_channels is unset: Megatron Core floors kv_channels to {kv} (hidden_size // num_attention_heads) and Megatron-LM refuses the shape (M7); set kv_channels or make hidden_size a multiple of num_attention_heads.",
      GD, { { "*", "docs/rules.md#rs24; TC:1455-1456; ARGS:1331-1333" } },
      headsDoNotDivideHidden, kvChannelsArgs, nullptr, kvChannelsFix,
      "kv_channels = hidden_size // num_attention_heads", "TransformerConfig floors silently; the measured model would not be the one the shape names" },
    { "RS25", "*", kAnyFormat, E, "num_attention_heads num_query_groups",
      "num_attention_heads not a multiple of num_query_groups",
      "num_attention_heads={n} is not divisible by num_query_groups={g}: every query group must serve the same number of attention heads.",
      GD, { { "*", "docs/rules.md#rs25; megatron/core/transformer/attention.py:358-359" } },
      [](const Ctx& c) { return c.r.num_query_groups && *c.r.num_query_groups >= 1 && c.r.num_attention_heads >= 1 && c.r.num_attention_heads % *c.r.num_query_groups != 0; },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.num_attention_heads)); a.set("g", pyInt(c.r.num_query_groups)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset num_query_groups (one group per head)", "num_query_groups", nullptr); },
      "num_query_groups=null (or a divisor of num_attention_heads)", "the query/key/value split reshapes heads into groups; an uneven split has no shape" },
    { "RS26", "*", kAnyFormat, E, "attention_dropout",
      "attention_dropout outside [0, 1]",
      "attention_dropout={p}: dropout probability has to be between 0 and 1, but got {p}",
      GD, { { "*", "docs/rules.md#rs26" } },
      [](const Ctx& c) { return dropoutOutside(c.r.attention_dropout); },
      [](const Ctx& c, Args& a) { a.set("p", nlohmann::json(c.r.attention_dropout).dump()); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set attention_dropout=0.0", "attention_dropout", 0.0); },
      "attention_dropout=0.0", "PyTorch's own message (torch/nn/functional.py dropout)" },
    { "RS26", "*", kAnyFormat, E, "hidden_dropout",
      "hidden_dropout outside [0, 1]",
      "hidden_dropout={p}: dropout probability has to be between 0 and 1, but got {p}",
      GD, { { "*", "docs/rules.md#rs26" } },
      [](const Ctx& c) { return dropoutOutside(c.r.hidden_dropout); },
      [](const Ctx& c, Args& a) { a.set("p", nlohmann::json(c.r.hidden_dropout).dump()); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set hidden_dropout=0.0", "hidden_dropout", 0.0); },
      "hidden_dropout=0.0", "PyTorch's own message (torch/nn/functional.py dropout)" },
    { "RS27", "*", kAnyFormat, E, "moe_router_topk num_moe_experts",
      "moe_router_topk outside [1, num_moe_experts]",
      "moe_router_topk={k} is out of range: the router picks between 1 and num_moe_experts={e} experts per token.",
      GD, { { "*", "docs/rules.md#rs27" } },
      [](const Ctx& c) { return c.isMoE() && (c.r.moe_router_topk < 1 || c.r.moe_router_topk > *c.r.num_moe_experts); },
      [](const Ctx& c, Args& a) { a.set("k", std::to_string(c.r.moe_router_topk)); a.set("e", pyInt(c.r.num_moe_experts)); }, nullptr,
      [](const Ctx& c, FixIt& f) { set(f, "route each token to between 1 and num_moe_experts experts", "moe_router_topk", std::max(1, std::min(c.r.moe_router_topk, *c.r.num_moe_experts))); },
      "1 <= moe_router_topk <= num_moe_experts", "" },
    { "RS28", "*", kAnyFormat, E, "pipeline_model_parallel_size virtual_pipeline_model_parallel_size num_layers",
      "more pipeline chunks (pp x vpp) than layers in the even split (a layout may leave a stage empty)",
      "pipeline_model_parallel_size x virtual_pipeline_model_parallel_size = {p} model chunks for {n} layers in the split: a chunk would hold no layer (at most num_layers chunks, one more for each of account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split).",
      GD, { { "*", "docs/rules.md#rs28; TB:150-180" } },
      [](const Ctx& c) { return isEvenPipelineSplit(c.r) && c.r.num_layers >= 1 && c.r.pipeline_model_parallel_size >= 1 && c.r.virtual_pipeline_model_parallel_size.value_or(1) >= 1 && pipelineChunks(c) > pipelineSplitLayers(c.r); },
      [](const Ctx& c, Args& a) { a.set("p", std::to_string(pipelineChunks(c))); a.set("n", pipelineSplitLayers(c.r) == c.r.num_layers ? "num_layers=" + std::to_string(c.r.num_layers) : std::to_string(pipelineSplitLayers(c.r)) + " (num_layers=" + std::to_string(c.r.num_layers) + " with the embedding or loss)"); }, nullptr,
      nullptr, "", "the product is taken in 64 bits: 65536 x 65536 overflows a 32-bit int to 0" },
    { "RS29", "*", kAnyFormat, E, "seq_length micro_batch_size hidden_size",
      "one activation (seq_length x micro_batch_size x hidden_size) above 2^62 elements",
      "seq_length x micro_batch_size x hidden_size = {p} elements in one activation: more than a tensor can index (at most 2^62).",
      GD, { { "*", "docs/rules.md#rs29" } },
      [](const Ctx& c) { return c.r.seq_length >= 1 && c.r.micro_batch_size >= 1 && c.r.hidden_size >= 1 && activationElements(c) > kTwoTo62; },
      [](const Ctx& c, Args& a) { a.set("p", nlohmann::json(activationElements(c)).dump()); }, nullptr,
      nullptr, "", "" },
    { "RS40", "*", kAnyFormat, W, "peft.scheme peft.target_modules",
      "a LoRA target the estimate builds no adapter for",
      "peft.target_modules {names}: the estimate builds no adapter there (it adapts {known}), so it counts "
      "neither the adapter nor the input it keeps",
      GD, { { "*", "docs/rules.md#rs40" } },
      [](const Ctx& c) { return !loraTargetsNotModelled(c.r).empty(); },
      [](const Ctx& c, Args& a) {
          a.set("names", loraTargetsNotModelled(c.r));
          std::string known;
          for (const LoraModuleName& n : loraModuleNames())
              known += (known.empty() ? "" : ", ") + std::string(n.name);
          a.set("known", known);
      }, nullptr, nullptr, "", "" },
    { "RS41", "*", kAnyFormat, E, "peft.scheme peft.dim peft.dropout",
      "a LoRA rank below 1 or a dropout outside [0, 1)",
      "peft.dim={dim} and peft.dropout={p}: the rank must be at least 1 and the dropout in [0, 1)",
      GD, { { "*", "docs/rules.md#rs41" } },
      [](const Ctx& c) { return isPeft(c.r) && (c.r.peft_dim < 1 || !(c.r.peft_dropout >= 0 && c.r.peft_dropout < 1)); },
      [](const Ctx& c, Args& a) { a.set("dim", std::to_string(c.r.peft_dim)); a.set("p", nlohmann::json(c.r.peft_dropout).dump()); }, nullptr,
      [](const Ctx&, FixIt& f) {
          f.description = "Bridge's LoRA defaults: rank 32, no dropout";
          f.patch["peft"] = { { "dim", 32 }, { "dropout", 0.0 } };
      },
      "peft.dim >= 1, 0 <= peft.dropout < 1", "" },
    { "RS37", "*", kAnyFormat, E, "num_attention_heads tensor_model_parallel_size",
      "attention heads that tensor parallelism does not split evenly (TransformerConfig)",
      "num_attention_heads ({h}) must be a multiple of tensor_model_parallel_size ({tp}).",
      MC, { { "bridge-pin", "megatron/core/transformer/transformer_config.py:1351-1355" }, { "guide", "megatron/core/transformer/transformer_config.py:1323-1327" }, { "main", "megatron/core/transformer/transformer_config.py:1446-1450" }, { "dev", "megatron/core/transformer/transformer_config.py:1490-1494" } },
      [](const Ctx& c) { return c.r.tensor_model_parallel_size >= 1 && c.r.num_attention_heads >= 1 && c.r.num_attention_heads % c.r.tensor_model_parallel_size != 0; },
      [](const Ctx& c, Args& a) { a.set("h", std::to_string(c.r.num_attention_heads)); a.set("tp", std::to_string(c.r.tensor_model_parallel_size)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "run without tensor parallelism (or with a TP size that divides the heads)", "tensor_model_parallel_size", 1); },
      "tensor_model_parallel_size dividing num_attention_heads", "TransformerConfig.__post_init__ raises it before any layer is built, whatever the query groups (TP 10^6 with 4 heads estimated 0.000 GB)" },
    { "RS31", "*", kAnyFormat, E, "tensor_model_parallel_size num_attention_heads num_query_groups",
      "attention heads or query groups that tensor parallelism does not split evenly",
      "{n} is not divisible by {d}",
      MC, { { "*", "megatron/core/transformer/attention.py:353-367; megatron/core/utils.py:590-592" }, { "dev", "megatron/core/transformer/attention.py:351-365; megatron/core/utils.py:590-592" } },
      [](const Ctx& c) { return tpHeadSplit(c).has_value(); },
      [](const Ctx& c, Args& a) { const auto s = *tpHeadSplit(c); a.set("n", std::to_string(s.first)); a.set("d", std::to_string(s.second)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "run without tensor parallelism (or with a TP size that divides the heads and query groups)", "tensor_model_parallel_size", 1); },
      "tensor_model_parallel_size dividing num_attention_heads and num_query_groups", "Megatron Core's attention divides the heads (and the query groups, when there are at least as many as TP ranks) over the tensor-parallel ranks; the assertion fails when the model is built" },
    { "RS32", "*", kAnyFormat, E, "num_moe_experts expert_model_parallel_size",
      "experts that expert parallelism does not split evenly",
      "num_moe_experts={e} is not divisible by expert_model_parallel_size={ep}: every expert-parallel rank holds the same number of experts.",
      MC, { { "*", "megatron/core/transformer/moe/moe_layer.py:186" }, { "bridge-pin", "megatron/core/transformer/moe/moe_layer.py:185" }, { "guide", "megatron/core/transformer/moe/moe_layer.py:185" }, { "dev", "megatron/core/transformer/moe/moe_layer.py:189" } },
      [](const Ctx& c) { return c.isMoE() && c.r.expert_model_parallel_size >= 1 && *c.r.num_moe_experts % c.r.expert_model_parallel_size != 0; },
      [](const Ctx& c, Args& a) { a.set("e", pyInt(c.r.num_moe_experts)); a.set("ep", std::to_string(c.r.expert_model_parallel_size)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "run without expert parallelism (or with an EP size that divides the experts)", "expert_model_parallel_size", 1); },
      "expert_model_parallel_size dividing num_moe_experts", "MoELayer asserts num_moe_experts % ep_size == 0 when it is built (no message)" },
    { "RS33", "*", kAnyFormat, E, "multi_latent_attention q_lora_rank kv_lora_rank qk_head_dim qk_pos_emb_head_dim v_head_dim",
      "an MLA dimension below 1",
      "{field}={v} is out of range: with multi_latent_attention every MLA dimension must be at least 1 (q_lora_rank may be null: no query compression).",
      GD, { { "*", "docs/rules.md#rs33" } },
      [](const Ctx& c) { return !mlaDimBelow1(c).empty(); },
      [](const Ctx& c, Args& a) { const std::string f = mlaDimBelow1(c); a.set("field", f); a.set("v", f == "q_lora_rank" ? pyInt(c.r.q_lora_rank) : nlohmann::json(recipeFieldValue(c.r, f)).dump()); }, nullptr,
      nullptr, "every MLA dimension at least 1", "Megatron checks no lower bound; the projections would have no (or a negative) width" },
    { "RS34", "*", kAnyFormat, E, "rotary_percent position_embedding_type",
      "rotary_percent outside (0, 1]",
      "rotary_percent={v} is out of range: the rotary share of each head is above 0 and at most 1.",
      GD, { { "*", "docs/rules.md#rs34" } },
      [](const Ctx& c) { return c.r.position_embedding_type == "rope" && !(c.r.rotary_percent > 0 && c.r.rotary_percent <= 1); },
      [](const Ctx& c, Args& a) { a.set("v", nlohmann::json(c.r.rotary_percent).dump()); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set rotary_percent=1.0 (every channel)", "rotary_percent", 1.0); },
      "rotary_percent=1.0", "RotaryEmbedding takes kv_channels x rotary_percent channels: none, or more than the head has, is no rotation" },
    { "RS34", "*", kAnyFormat, E, "rotary_base position_embedding_type",
      "rotary_base below 1",
      "rotary_base={v} is out of range: the rotary base must be positive.",
      GD, { { "*", "docs/rules.md#rs34" } },
      [](const Ctx& c) { return c.r.position_embedding_type == "rope" && c.r.rotary_base < 1; },
      [](const Ctx& c, Args& a) { a.set("v", std::to_string(c.r.rotary_base)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "set rotary_base=10000 (TransformerConfig's default)", "rotary_base", 10000); },
      "rotary_base=10000", "the inverse frequencies are base^(-2i/d): a base of 0 or below gives infinities or NaN" },
    { "RS35", "*", kAnyFormat, E, "train_iters warmup_iters",
      "a run of no steps, or more warm-up than steps",
      "train_iters={t}, warmup_iters={w} is out of range: a run has at least 1 step and at most train_iters warm-up steps (0 <= warmup_iters <= train_iters).",
      GD, { { "*", "docs/rules.md#rs35" } },
      [](const Ctx& c) { return c.r.train_iters < 1 || c.r.warmup_iters < 0 || c.r.warmup_iters > c.r.train_iters; },
      [](const Ctx& c, Args& a) { a.set("t", std::to_string(c.r.train_iters)); a.set("w", std::to_string(c.r.warmup_iters)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "the defaults: 10 steps, 3 of them warm-up", "train_iters", 10); f.patch["warmup_iters"] = 3; },
      "train_iters=10, warmup_iters=3", "our run settings: the worker runs warmup_iters then train_iters - warmup_iters steady steps" },
    { "RS35", "*", kAnyFormat, E, "memory_target_gb",
      "a memory target that is no positive number of GB",
      "memory_target_gb={v} is out of range: a per-rank memory target is a positive, finite number of GB (1 GB = 1e9 bytes).",
      GD, { { "*", "docs/rules.md#rs35" } },
      [](const Ctx& c) { return c.r.memory_target_gb && !(std::isfinite(*c.r.memory_target_gb) && *c.r.memory_target_gb > 0); },
      [](const Ctx& c, Args& a) { a.set("v", nlohmann::json(*c.r.memory_target_gb).dump()); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "unset the target", "memory_target_gb", nullptr); },
      "memory_target_gb=null (or the card's GB)", "ours: the advisor compares every rank's peak with it" },
    { "RS35", "*", kAnyFormat, E, "gpu_compute_capability",
      "a GPU compute capability that is no CUDA compute capability",
      "gpu_compute_capability={v} is out of range: the GPUs' CUDA compute capability is major x 10 + minor, from 50 to 199 (80 A100, 90 H100 / H200, 100 B200 / GB200).",
      GD, { { "*", "docs/rules.md#rs35" } },
      [](const Ctx& c) { return c.r.gpu_compute_capability < 50 || c.r.gpu_compute_capability > 199; },
      [](const Ctx& c, Args& a) { a.set("v", std::to_string(c.r.gpu_compute_capability)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "Hopper (H100, H200): 90", "gpu_compute_capability", 90); },
      "gpu_compute_capability=90 (or the GPUs' own)", "ours: the estimate sizes Transformer Engine's cuBLAS workspaces by it (32 MiB + 1 KiB from 9.0 on, 4 MiB before)" },
    { "RS36", "*", kAnyFormat, E, "num_layers",
      "more layers than any model has",
      "num_layers={n} is out of range: at most 65536 layers (the estimator and the worker hold an entry for each layer; the deepest published models have a few hundred).",
      GD, { { "*", "docs/rules.md#rs36" } },
      [](const Ctx& c) { return c.r.num_layers > kMaxLayers; },
      [](const Ctx& c, Args& a) { a.set("n", std::to_string(c.r.num_layers)); }, nullptr,
      nullptr, "num_layers <= 65536", "without a bound, an estimate of num_layers=2147483647 allocates until the machine's memory is gone" },
    { "RS38", "*", kAnyFormat, W, "hybrid_layer_pattern",
      "hybrid layers the estimate and the worker do not build",
      "hybrid_layer_pattern has '{symbols}' layers (DSA, MLA or DeepSeek-V4 attention): the estimate and the worker build M, G, *, - and E layers only, so nothing is estimated or run for this pattern.",
      GD, { { "*", "docs/rules.md#rs38" } },
      [](const Ctx& c) { return !unmodelledSymbols(c).empty() && !badSymbol(c); },
      [](const Ctx& c, Args& a) { a.set("symbols", unmodelledSymbols(c)); }, nullptr,
      nullptr, "", "the estimate refuses such a pattern (not_estimated) rather than count those layers as something else" },
    { "RS38", "*", kAnyFormat, W, "experimental_attention_variant dsa_kernel_backend attention_backend kv_lora_rank dsa_indexer_use_sparse_loss",
      "DeepSeek sparse attention on a path the estimate does not model",
      "experimental_attention_variant=dsa: {why}, so nothing is estimated for this model.",
      GD, { { "*", "docs/rules.md#rs38" } },
      [](const Ctx& c) { return !dsaPathNotModelled(c.r).empty(); },
      [](const Ctx& c, Args& a) { a.set("why", dsaPathNotModelled(c.r)); }, nullptr,
      [](const Ctx&, FixIt& f) { set(f, "use the cuDNN DSA kernels (dsa_kernel_backend=cudnn)", "dsa_kernel_backend", "cudnn"); },
      "dsa_kernel_backend=cudnn", "the estimate refuses such a model (not_estimated) rather than count its layers as plain MLA or guess the path's tensors" },
    { "RS38", "*", kAnyFormat, N, "experimental_attention_variant",
      "DeepSeek sparse attention, which the worker does not build",
      "experimental_attention_variant=dsa: the worker (recompute-bench) builds no DeepSeek sparse attention layer, so recompute run and sweep cannot measure this model; the estimate models it (megatron layout), and a real job can be measured with sweep --job.",
      GD, { { "*", "docs/rules.md#rs38" } },
      [](const Ctx& c) { return isDsaModel(c.r) && dsaPathNotModelled(c.r).empty(); }, nullptr, nullptr,
      nullptr, "", "engine/model.cpp builds standard attention, MLA and GatedDeltaNet" },
    { "RS39", "*", kAnyFormat, E, "experimental_attention_variant dsa_indexer_n_heads dsa_indexer_head_dim dsa_indexer_topk",
      "DeepSeek sparse attention without the indexer's sizes",
      "experimental_attention_variant=dsa needs {missing}: Megatron Core has no default for them (None), and DSAIndexer multiplies the heads by the head dim when it is built.",
      GD, { { "*", "docs/rules.md#rs39" } },
      [](const Ctx& c) { return isDsaModel(c.r) && (!c.r.dsa_indexer_n_heads || !c.r.dsa_indexer_head_dim || !c.r.dsa_indexer_topk); },
      [](const Ctx& c, Args& a) {
          std::string missing;
          for (const auto& [name, v] : { std::pair { "dsa_indexer_n_heads", c.r.dsa_indexer_n_heads }, { "dsa_indexer_head_dim", c.r.dsa_indexer_head_dim }, { "dsa_indexer_topk", c.r.dsa_indexer_topk } })
              if (!v)
                  missing += (missing.empty() ? "" : ", ") + std::string(name);
          a.set("missing", missing);
      }, nullptr,
      nullptr, "dsa_indexer_n_heads=..., dsa_indexer_head_dim=..., dsa_indexer_topk=... (the model's)", "a TypeError in DSAIndexer.__init__ (dsa.py:1159-1166: None * None) or at the first top-k, not a config check" },
    { "RS38", "*", kAnyFormat, N, "hybrid_layer_pattern mtp_hybrid_override_pattern mtp_num_layers",
      "MTP layers of a hybrid pattern, which the worker does not build",
      "the hybrid stack runs {d} MTP depth(s) of '{mtp}': the estimate counts them (megatron layout); the worker (recompute-bench) builds no MTP layer, so recompute run and sweep cannot measure this model, and a real job can be measured with sweep --job.",
      GD, { { "*", "docs/rules.md#rs38" } },
      [](const Ctx& c) { return isHybrid(c.r) && mtpShape(c.r).depths > 0 && !c.r.hybrid_layer_pattern->empty() && !badSymbol(c) && mtpMismatch(c) == 0; },
      [](const Ctx& c, Args& a) { const MtpShape m = mtpShape(c.r); a.set("d", std::to_string(m.depths)); a.set("mtp", m.pattern); }, nullptr,
      nullptr, "", "engine/model.cpp builds no multi-token-prediction layer" },
    };
    // clang-format on
    return rows;
}

} // namespace rs::rules_detail
