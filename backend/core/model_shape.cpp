// SPDX-License-Identifier: Apache-2.0
#include "core/model_shape.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace rs {

int64_t paddedVocabSize(const Recipe& r)
{
    const int64_t multiple
        = int64_t(std::max(1, r.make_vocab_size_divisible_by)) * std::max(1, r.tensor_model_parallel_size);
    return (int64_t(r.vocab_size) + multiple - 1) / multiple * multiple;
}

ModelShape modelShape(const Recipe& r)
{
    ModelShape m;
    m.hidden = r.hidden_size;
    m.ffn = r.ffn_hidden_size.value_or(4 * int64_t(r.hidden_size));
    m.heads = r.num_attention_heads;
    m.query_groups = r.num_query_groups.value_or(r.num_attention_heads);
    m.kv_channels
        = r.kv_channels.value_or(r.num_attention_heads > 0 ? r.hidden_size / r.num_attention_heads : 0);
    m.moe_ffn = r.moe_ffn_hidden_size.value_or(m.ffn);
    m.shared_ffn = r.moe_shared_expert_intermediate_size.value_or(0);
    m.experts = r.num_moe_experts.value_or(0);
    m.moe_latent = std::max(0, r.moe_latent_size.value_or(0));
    m.routed_width = m.moe_latent > 0 ? m.moe_latent : m.hidden;
    m.vocab = paddedVocabSize(r);
    m.mamba_head_dim = r.mamba_head_dim;
    m.mamba_heads = r.mamba_num_heads ? *r.mamba_num_heads
        : r.mamba_head_dim > 0        ? int64_t(kMambaExpand) * r.hidden_size / r.mamba_head_dim
                                      : 0;
    m.mamba_d_inner = m.mamba_heads * m.mamba_head_dim;
    m.mamba_groups = r.mamba_num_groups;
    m.mamba_state = r.mamba_state_dim;
    m.mamba_in_proj = 2 * m.mamba_d_inner + 2 * m.mamba_groups * m.mamba_state + m.mamba_heads;
    m.mamba_conv_dim = m.mamba_d_inner + 2 * m.mamba_groups * m.mamba_state;
    m.gdn_key_heads = r.linear_num_key_heads;
    m.gdn_value_heads = r.linear_num_value_heads;
    m.gdn_key_dim = r.linear_key_head_dim;
    m.gdn_value_dim = r.linear_value_head_dim;
    m.gdn_qk = m.gdn_key_heads * m.gdn_key_dim;
    m.gdn_v = m.gdn_value_heads * m.gdn_value_dim;
    m.gdn_in_proj = 2 * m.gdn_qk + 2 * m.gdn_v + 2 * m.gdn_value_heads;
    m.gdn_conv_dim = 2 * m.gdn_qk + m.gdn_v;
    m.dsa_index_heads = r.dsa_indexer_n_heads.value_or(0);
    m.dsa_index_head_dim = r.dsa_indexer_head_dim.value_or(0);
    m.dsa_topk = r.dsa_indexer_topk.value_or(0);
    return m;
}

HybridPattern parseHybridPattern(const std::string& pattern)
{
    HybridPattern h;
    const size_t slash = pattern.find('/');
    const std::string main = pattern.substr(0, slash);
    std::string segment;
    for (char c : main) {
        if (c == '|') {
            h.segments.push_back(segment);
            segment.clear();
        } else {
            h.main.push_back(c);
            segment.push_back(c);
        }
    }
    h.segments.push_back(segment);
    if (slash != std::string::npos) {
        // Every part after the first '/' is one MTP depth (all identical, or Megatron raises).
        size_t start = slash + 1;
        while (true) {
            const size_t next = pattern.find('/', start);
            const std::string part = pattern.substr(start, next == std::string::npos ? next : next - start);
            if (h.mtp_depths == 0)
                h.mtp = part;
            ++h.mtp_depths;
            if (next == std::string::npos)
                break;
            start = next + 1;
        }
        if (h.mtp.empty() && h.mtp_depths > 0) {
            bool all_empty = true;
            size_t at = slash + 1;
            while (at < pattern.size())
                all_empty = all_empty && pattern[at++] == '/';
            if (all_empty)
                h.mtp_depths = 0;
        }
    }
    return h;
}

std::string validHybridSymbols(Profile p)
{
    // Symbols.VALID_LAYERS: the dev branch has DeepSeek-V4's C, H and W and no MLA '+'
    // (hybrid_layer_allocation.py:14-26 at d48bd6be; :14-25 at the other profiles).
    return p == Profile::Dev ? "MG*DCHW-E" : "MG*D+-E";
}

bool isHybrid(const Recipe& r)
{
    return r.hybrid_layer_pattern.has_value();
}

int hybridLayerCount(const Recipe& r)
{
    if (!r.hybrid_layer_pattern)
        return r.num_layers;
    return static_cast<int>(std::min<size_t>(
        parseHybridPattern(*r.hybrid_layer_pattern).main.size(), static_cast<size_t>(kMaxLayers) + 1));
}

namespace {
// The hybrid pattern's symbol of layer `layer` (0 past its end), without parsing the pattern when it has no
// '|' or '/' (the estimate asks layer by layer).
char hybridSymbol(const Recipe& r, int layer)
{
    const std::string& p = *r.hybrid_layer_pattern;
    if (layer < 0)
        return 0;
    if (p.find_first_of("|/") == std::string::npos)
        return static_cast<size_t>(layer) < p.size() ? p[static_cast<size_t>(layer)] : 0;
    const std::string main = parseHybridPattern(p).main;
    return static_cast<size_t>(layer) < main.size() ? main[static_cast<size_t>(layer)] : 0;
}

bool gdnVariant(const Recipe& r)
{
    const std::string v = r.experimental_attention_variant.value_or("");
    return v == "gdn" || v == "gdn2" || v == "gated_delta_net";
}

LayerKind kindOfSymbol(char c)
{
    LayerKind k;
    k.symbol = c;
    k.ffn = LayerFfn::None;
    switch (c) {
    case 'M':
        k.mixer = LayerMixer::Mamba;
        break;
    case 'G':
        k.mixer = LayerMixer::GatedDeltaNet;
        break;
    case '*':
        k.mixer = LayerMixer::Attention;
        break;
    case '-':
        k.mixer = LayerMixer::None;
        k.ffn = LayerFfn::Dense;
        break;
    case 'E':
        k.mixer = LayerMixer::None;
        k.ffn = LayerFfn::Moe;
        break;
    default: // D, +, C, H, W: DSA, MLA and DeepSeek-V4 attention (RS38), or not a symbol at all (RT17)
        k.mixer = LayerMixer::Unmodelled;
        break;
    }
    return k;
}
} // namespace

bool isLinearAttentionLayer(const Recipe& r, int layer)
{
    if (isHybrid(r) || !gdnVariant(r) || r.linear_attention_freq.empty() || layer < 0)
        return false;
    const auto& f = r.linear_attention_freq;
    if (f.size() == 1 && f.front() >= 1) // N: every N-th layer (1-based) attention, the rest linear
        return (layer + 1) % f.front() != 0;
    return static_cast<size_t>(layer) < f.size() && f[static_cast<size_t>(layer)] != 0;
}

bool isDsaModel(const Recipe& r)
{
    return !isHybrid(r) && r.experimental_attention_variant.value_or("") == "dsa";
}

// dsa.py is_dsa_skip_topk_layer / source_dsa_compute_layer (1-based layer numbers; the offset is at least
// 1, so the default 0 starts at layer 1). A frequency below 1 or a negative offset is a ValueError there
// (transformer_config.py, the DSA rule): every layer then computes its own.
bool isDsaSkipTopkLayer(const Recipe& r, int layer)
{
    const int freq = r.dsa_indexer_topk_freq;
    if (!isDsaModel(r) || freq <= 1 || r.dsa_indexer_skip_topk_offset < 0 || layer < 0)
        return false;
    const long long offset = std::max(r.dsa_indexer_skip_topk_offset, 1);
    return std::max(0LL, layer + 1 - offset) % freq != 0;
}

int dsaSourceLayer(const Recipe& r, int layer)
{
    if (!isDsaSkipTopkLayer(r, layer))
        return layer;
    const long long offset = std::max(r.dsa_indexer_skip_topk_offset, 1);
    const long long number = layer + 1;
    return static_cast<int>(number - (number - offset) % r.dsa_indexer_topk_freq) - 1;
}

LayerKind layerKind(const Recipe& r, int layer)
{
    if (isHybrid(r))
        return kindOfSymbol(hybridSymbol(r, layer));
    LayerKind k;
    if (isDsaModel(r))
        k.mixer = isDsaSkipTopkLayer(r, layer) ? LayerMixer::DsaSkipTopk : LayerMixer::Dsa;
    else
        k.mixer = isLinearAttentionLayer(r, layer) ? LayerMixer::GatedDeltaNet : LayerMixer::Attention;
    k.ffn = isMoeLayer(r, layer) ? LayerFfn::Moe : LayerFfn::Dense;
    return k;
}

std::vector<LayerKind> layerKinds(const Recipe& r)
{
    std::vector<LayerKind> out;
    const int n = std::clamp(r.num_layers, 0, kMaxLayers);
    out.reserve(static_cast<size_t>(n));
    if (isHybrid(r)) {
        const std::string main = parseHybridPattern(*r.hybrid_layer_pattern).main;
        for (int i = 0; i < n; ++i)
            out.push_back(
                kindOfSymbol(static_cast<size_t>(i) < main.size() ? main[static_cast<size_t>(i)] : 0));
        return out;
    }
    for (int i = 0; i < n; ++i)
        out.push_back(layerKind(r, i));
    return out;
}

std::string layerKindName(const LayerKind& k)
{
    std::string mixer;
    switch (k.mixer) {
    case LayerMixer::Attention:
        mixer = "attention";
        break;
    case LayerMixer::Mamba:
        mixer = "Mamba";
        break;
    case LayerMixer::GatedDeltaNet:
        mixer = "GatedDeltaNet";
        break;
    case LayerMixer::Unmodelled:
        mixer = std::string("'") + (k.symbol ? k.symbol : '?') + "' (not modelled)";
        break;
    case LayerMixer::Dsa:
        mixer = "DSA attention";
        break;
    case LayerMixer::DsaSkipTopk:
        mixer = "DSA attention (shared top-k)";
        break;
    case LayerMixer::None:
        break;
    }
    const std::string ffn = k.ffn == LayerFfn::Dense ? "MLP" : k.ffn == LayerFfn::Moe ? "MoE" : "";
    if (mixer.empty())
        return ffn;
    return ffn.empty() ? mixer : mixer + " + " + ffn;
}

bool isMoeLayer(const Recipe& r, int layer)
{
    if (isHybrid(r))
        return hybridSymbol(r, layer) == 'E';
    if (!r.num_moe_experts || *r.num_moe_experts <= 0)
        return false;
    if (r.moe_layer_freq.size() == 1) {
        const int freq = r.moe_layer_freq.front();
        return freq > 0 && layer % freq == 0;
    }
    return layer >= 0 && layer < static_cast<int>(r.moe_layer_freq.size()) && r.moe_layer_freq[layer] != 0;
}

int moeLayerCount(const Recipe& r)
{
    if (isHybrid(r)) {
        const std::string main = parseHybridPattern(*r.hybrid_layer_pattern).main;
        return static_cast<int>(std::count(main.begin(), main.end(), 'E'));
    }
    if (!r.num_moe_experts || *r.num_moe_experts <= 0 || r.num_layers <= 0)
        return 0;
    const auto& freq = r.moe_layer_freq;
    if (freq.size() > 1) // a per-layer pattern of 0/1
        return static_cast<int>(std::count_if(freq.begin(), freq.end(), [](int x) { return x != 0; }));
    const int every = freq.empty() ? 1 : freq.front();
    if (every <= 0)
        return 0;
    // layers i with i % every == 0
    return static_cast<int>((static_cast<long long>(r.num_layers) + every - 1) / every);
}

ParallelSizes parallelSizes(const Recipe& r)
{
    ParallelSizes p;
    p.tp = std::max(1, r.tensor_model_parallel_size);
    p.cp = std::max(1, r.context_parallel_size);
    p.ep = std::max(1, r.expert_model_parallel_size);
    p.pp = std::max(1, r.pipeline_model_parallel_size);
    p.vpp = std::max(1, r.virtual_pipeline_model_parallel_size.value_or(1));
    // A hybrid pattern's '|' segments are the model chunks: segments / PP virtual stages (Megatron-LM's
    // validate_args derives it, arguments.py:841-861 at d98e8a64).
    if (isHybrid(r)) {
        const size_t segments = parseHybridPattern(*r.hybrid_layer_pattern).segments.size();
        if (segments > 1 && segments % static_cast<size_t>(p.pp) == 0)
            p.vpp = static_cast<int>(segments / static_cast<size_t>(p.pp));
    }
    p.dp = std::max(1, r.data_parallel_size);
    p.sp = r.sequence_parallel && p.tp > 1;
    p.world = p.tp * p.cp * p.dp * p.pp;
    p.etp = (p.world % (p.tp * p.ep * p.pp) == 0) ? p.tp : 1;
    p.edp = std::max(1, p.world / (p.etp * p.ep * p.pp));
    const int gbs = r.global_batch_size.value_or(r.micro_batch_size * p.dp);
    p.micro_batches = std::max(1, gbs / std::max(1, r.micro_batch_size * p.dp));
    return p;
}

int stageOfRank(const ParallelSizes& p, int rank)
{
    return rank / std::max(1, p.tp * p.cp * p.dp);
}

int firstRankOfStage(const ParallelSizes& p, int stage)
{
    return stage * p.tp * p.cp * p.dp;
}

namespace {
// Is the kept field `name` set on: "model.NAME=true" (any case, or 1) among the overrides, as Hydra reads
// them in order (the last one wins; "~model.NAME" takes it back to its default, off), or its store_true
// flag among the Megatron-LM words?
bool keptSwitchOn(const Recipe& r, const std::string& name)
{
    std::optional<bool> overridden;
    for (const std::string& o : r.extra_overrides) {
        const size_t start = o.find_first_not_of("+~");
        const size_t eq = o.find('=');
        std::string key = o.substr(start == std::string::npos ? o.size() : start,
            eq == std::string::npos ? std::string::npos : eq - start);
        if (key.rfind("model.", 0) == 0)
            key = key.substr(6);
        if (key != name)
            continue;
        std::string value = eq == std::string::npos ? std::string() : o.substr(eq + 1);
        for (char& ch : value)
            ch = char(std::tolower(static_cast<unsigned char>(ch)));
        overridden = o[0] != '~' && (value == "true" || value == "1");
    }
    if (overridden)
        return *overridden;
    std::string flag = "--" + name;
    for (char& ch : flag)
        ch = ch == '_' ? '-' : ch;
    for (const std::string& w : r.extra_flags)
        if (w == flag)
            return true;
    return false;
}
} // namespace

long long pipelineSplitLayers(const Recipe& r)
{
    return static_cast<long long>(r.num_layers)
        + (keptSwitchOn(r, "account_for_embedding_in_pipeline_split") ? 1 : 0)
        + (keptSwitchOn(r, "account_for_loss_in_pipeline_split") ? 1 : 0);
}

PipelineStage pipelineStage(const Recipe& r, int stage)
{
    const ParallelSizes p = parallelSizes(r);
    PipelineStage s;
    s.stage = stage;
    s.first = stage == 0;
    s.last = stage == p.pp - 1;
    if (isHybrid(r)) {
        const HybridPattern h = parseHybridPattern(*r.hybrid_layer_pattern);
        if (h.segments.size() > 1 && h.segments.size() == static_cast<size_t>(p.pp) * p.vpp) {
            // select_pipeline_segment: chunk v of stage p is segment v x PP + p, at the sum of the earlier
            // segments' lengths.
            for (int v = 0; v < p.vpp; ++v) {
                const size_t index = static_cast<size_t>(v) * p.pp + static_cast<size_t>(stage);
                int first = 0;
                for (size_t i = 0; i < index; ++i)
                    first += static_cast<int>(h.segments[i].size());
                const int n = static_cast<int>(h.segments[index].size());
                for (int i = 0; i < n; ++i) {
                    s.layers.push_back(first + i);
                    s.chunk.push_back(v);
                }
                if (n > 0)
                    s.ranges += (s.ranges.empty() ? "" : ", ") + std::to_string(first) + "-"
                        + std::to_string(first + n - 1);
            }
            return s;
        }
    }
    const int per_chunk = (p.pp == 1 && p.vpp == 1) ? r.num_layers : r.num_layers / (p.pp * p.vpp);
    for (int v = 0; v < p.vpp; ++v) {
        const int first = v * (r.num_layers / p.vpp) + stage * per_chunk;
        for (int i = 0; i < per_chunk; ++i) {
            s.layers.push_back(first + i);
            s.chunk.push_back(v);
        }
        if (per_chunk > 0)
            s.ranges += (s.ranges.empty() ? "" : ", ") + std::to_string(first) + "-"
                + std::to_string(first + per_chunk - 1);
    }
    return s;
}

} // namespace rs
