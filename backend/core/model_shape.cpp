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
    m.qk_head_norms = r.qk_layernorm && !r.multi_latent_attention;
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

MtpShape mtpShape(const Recipe& r)
{
    MtpShape m;
    const int given = std::max(0, r.mtp_num_layers.value_or(0));
    if (isHybrid(r)) {
        const HybridPattern h = parseHybridPattern(*r.hybrid_layer_pattern);
        int copies = h.mtp_depths;
        m.pattern = h.mtp;
        // Bridge joins max(1, mtp_num_layers) copies under mtp_use_repeated_layer (the shared layer always
        // exists), else mtp_num_layers; Megatron-LM joins mtp_num_layers > 0 of them.
        const bool bridgeRepeated = r.front_end == InputFormat::BridgeOverrides && r.mtp_use_repeated_layer;
        const int joined = bridgeRepeated ? std::max(1, given) : given;
        if (copies == 0 && r.mtp_hybrid_override_pattern && !r.mtp_hybrid_override_pattern->empty()
            && joined > 0) {
            m.pattern = *r.mtp_hybrid_override_pattern;
            copies = joined;
        }
        if (copies == 0 || m.pattern.empty())
            return MtpShape {};
        // Both infer mtp_num_layers from the pattern; Bridge keeps a given one under mtp_use_repeated_layer.
        m.depths = bridgeRepeated && r.mtp_num_layers.has_value() ? given : copies;
        m.built = r.mtp_use_repeated_layer ? std::min(1, m.depths) : copies;
        for (char c : m.pattern)
            m.layers.push_back(kindOfSymbol(c));
        return m;
    }
    if (given == 0 || r.num_layers < 1)
        return m;
    m.depths = given;
    m.built = r.mtp_use_repeated_layer ? 1 : given;
    LayerKind k = layerKind(r, std::min(r.num_layers, kMaxLayers) - 1);
    if (k.mixer == LayerMixer::DsaSkipTopk)
        k.mixer = LayerMixer::Dsa;
    m.layers.push_back(k);
    return m;
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

bool precisionAwareOptimizer(const Recipe& r)
{
    return r.use_distributed_optimizer && r.use_precision_aware_optimizer;
}

bool teKeepsMasterWeights(const Recipe& r)
{
    return precisionAwareOptimizer(r)
        && (r.main_params_dtype != "fp32" || !r.fp8 || r.fp8->empty() || r.fp8_recipe == "delayed");
}

bool masterWeightsAsRemainders(const Recipe& r)
{
    return teKeepsMasterWeights(r) && r.main_params_dtype == "fp32" && r.store_param_remainders && r.bf16;
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
    } else if (const std::optional<PipelineLayout> layout = pipelineLayoutOf(r)) {
        // A GPT model's layout gives the virtual stages: its stages / PP (transformer_config.py:2034-2046 at
        // 2a75ac12, and Megatron-LM's validate_args); a VPP that says otherwise is R48's error.
        if (layout->stages.size() % static_cast<size_t>(p.pp) == 0)
            p.vpp = static_cast<int>(layout->stages.size() / static_cast<size_t>(p.pp));
    }
    p.dp = std::max(1, r.data_parallel_size);
    p.sp = r.sequence_parallel && p.tp > 1;
    p.world = p.tp * p.cp * p.dp * p.pp;
    p.etp = r.expert_tensor_parallel_size       ? std::max(1, *r.expert_tensor_parallel_size)
        : (p.world % (p.tp * p.ep * p.pp) == 0) ? p.tp
                                                : 1;
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

long long pipelineSplitLayers(const Recipe& r)
{
    return static_cast<long long>(r.num_layers) + (r.account_for_embedding_in_pipeline_split ? 1 : 0)
        + (r.account_for_loss_in_pipeline_split ? 1 : 0);
}

bool isEvenPipelineSplit(const Recipe& r)
{
    return (isHybrid(r) || !r.pipeline_model_parallel_layout) && !r.num_layers_in_first_pipeline_stage
        && !r.num_layers_in_last_pipeline_stage;
}

std::optional<PipelineLayout> pipelineLayoutOf(const Recipe& r)
{
    if (!r.pipeline_model_parallel_layout)
        return std::nullopt;
    try {
        return parsePipelineLayout(*r.pipeline_model_parallel_layout);
    } catch (const PipelineLayoutError&) {
        return std::nullopt;
    }
}

namespace {

// One stage being filled: its chunks' layers in order, and their ranges. A split that would place more than a
// model's layers in one chunk, or layers outside every model, is one Megatron refuses: enough of it is kept
// for pipelineSplitProblem to see that (a layer index past kMaxLayers), never the sizes a recipe's typo asks.
struct StageFill {
    PipelineStage s;
    void add(long long first, long long n, int chunk)
    {
        n = std::min<long long>(n, kMaxLayers + 1LL);
        for (long long i = 0; i < n; ++i) {
            s.layers.push_back(static_cast<int>(std::clamp<long long>(first + i, -1, kMaxLayers + 1LL)));
            s.chunk.push_back(chunk);
        }
        if (n > 0)
            s.ranges += (s.ranges.empty() ? "" : ", ") + std::to_string(first) + "-"
                + std::to_string(first + n - 1);
    }
};

// Without a layout Megatron builds every MTP depth on the last stage's last chunk (multi_token_prediction.py
// mtp_on_this_rank, get_mtp_num_layers_to_build).
std::vector<PipelineStage> withMtp(const Recipe& r, std::vector<PipelineStage> stages)
{
    const int depths = mtpShape(r).depths;
    const int chunks = parallelSizes(r).vpp;
    for (PipelineStage& s : stages)
        if (s.last) {
            s.mtp_layers = depths;
            s.mtp_chunk = chunks - 1;
        }
    return stages;
}

// The stages `from` to `to` - 1 of the split (pipelineStage's comment in model_shape.h says which split).
std::vector<PipelineStage> stagesOfSplit(const Recipe& r, int from, int to)
{
    const ParallelSizes p = parallelSizes(r);
    std::vector<PipelineStage> out;
    const auto fresh = [&](int stage) {
        StageFill f;
        f.s.stage = stage;
        f.s.first = stage == 0;
        f.s.last = stage == p.pp - 1;
        return f;
    };
    const long long L = r.num_layers;
    const bool hybrid = isHybrid(r);
    const std::optional<PipelineLayout> layout = hybrid ? std::nullopt : pipelineLayoutOf(r);
    const bool firstGiven = r.num_layers_in_first_pipeline_stage.has_value();
    const bool lastGiven = r.num_layers_in_last_pipeline_stage.has_value();

    if (hybrid) {
        const HybridPattern h = parseHybridPattern(*r.hybrid_layer_pattern);
        if (h.segments.size() > 1 && h.segments.size() == static_cast<size_t>(p.pp) * p.vpp) {
            // select_pipeline_segment: chunk v of stage p is segment v x PP + p, at the sum of the earlier
            // segments' lengths.
            std::vector<long long> start(h.segments.size() + 1, 0);
            for (size_t i = 0; i < h.segments.size(); ++i)
                start[i + 1] = start[i] + static_cast<long long>(h.segments[i].size());
            for (int stage = from; stage < to; ++stage) {
                StageFill f = fresh(stage);
                for (int v = 0; v < p.vpp; ++v) {
                    const size_t index = static_cast<size_t>(v) * p.pp + static_cast<size_t>(stage);
                    f.add(start[index], static_cast<long long>(h.segments[index].size()), v);
                }
                out.push_back(f.s);
            }
            return withMtp(r, std::move(out));
        }
        if (h.segments.size() == 1 && p.pp > 1 && p.vpp == 1 && (firstGiven || lastGiven)) {
            // select_pipeline_segment without '|' (hybrid_layer_allocation.py:405-434 at 2a75ac12): the first
            // / last stage takes its given layers, the middle stages the rest evenly.
            const long long first = r.num_layers_in_first_pipeline_stage.value_or(0);
            const long long last = r.num_layers_in_last_pipeline_stage.value_or(0);
            const long long middleStages = p.pp - (firstGiven ? 1 : 0) - (lastGiven ? 1 : 0);
            const long long perMiddle = middleStages > 0 ? (L - first - last) / middleStages : 0;
            for (int stage = from; stage < to; ++stage) {
                StageFill f = fresh(stage);
                if (firstGiven && stage == 0)
                    f.add(0, first, 0);
                else if (lastGiven && stage == p.pp - 1)
                    f.add(L - last, last, 0);
                else
                    f.add((firstGiven ? stage - 1 : stage) * perMiddle + first, perMiddle, 0);
                out.push_back(f.s);
            }
            return withMtp(r, std::move(out));
        }
    }

    if (layout) {
        // get_layer_offset / get_num_layers_to_build: the decoder layers of the stages before, in the flat
        // order (vpp chunk-major), then this stage's.
        const size_t stages = layout->stages.size();
        const int chunks = stages % static_cast<size_t>(p.pp) == 0 ? static_cast<int>(stages / p.pp) : 1;
        std::vector<long long> start(stages + 1, 0);
        for (size_t i = 0; i < stages; ++i)
            start[i + 1] = start[i] + static_cast<long long>(layout->count(kLayoutDecoder, i));
        for (int stage = from; stage < to; ++stage) {
            StageFill f = fresh(stage);
            f.s.first = f.s.last = false;
            for (int v = 0; v < chunks; ++v) {
                const size_t index = static_cast<size_t>(v) * p.pp + static_cast<size_t>(stage);
                if (index >= stages)
                    break;
                f.add(start[index], start[index + 1] - start[index], v);
                f.s.first = f.s.first || layout->count(kLayoutEmbedding, index) > 0;
                f.s.last = f.s.last || layout->count(kLayoutLoss, index) > 0;
                if (const size_t m = layout->count(kLayoutMtp, index); m > 0) {
                    f.s.mtp_layers += static_cast<int>(m);
                    f.s.mtp_chunk = v;
                }
            }
            out.push_back(f.s);
        }
        return out;
    }

    // Interleaving only with pipelining (transformer_block.py: vp_size is used where PP > 1); a single stage
    // with virtual stages keeps them as chunks of its layers, as the even split always has here.
    const long long vpp = p.vpp;
    if (firstGiven || lastGiven) {
        // Uneven first / last stage: get_num_layers_to_build (transformer_block.py:97-140 at 2a75ac12) and
        // get_transformer_layer_offset (transformer_layer.py:72-170): each chunk of the first stage holds
        // first / VPP layers, of the last last / VPP, of a middle stage (the rest / middle stages) / VPP; the
        // chunks of one virtual stage v follow each other, starting at v x (the layers of one virtual stage).
        const long long first = r.num_layers_in_first_pipeline_stage.value_or(0);
        const long long last = r.num_layers_in_last_pipeline_stage.value_or(0);
        const long long middleStages = p.pp - (firstGiven ? 1 : 0) - (lastGiven ? 1 : 0);
        const long long middle = L - first - last;
        const long long perMiddleRank = middleStages > 0 ? middle / middleStages : 0;
        for (int stage = from; stage < to; ++stage) {
            StageFill f = fresh(stage);
            long long perRank = perMiddleRank;
            if (firstGiven && stage == 0)
                perRank = first;
            if (lastGiven && stage == p.pp - 1)
                perRank = last;
            const long long middleRank = firstGiven ? stage - 1 : stage;
            if (p.pp > 1 && vpp > 1) {
                const long long firstChunk = first / vpp, lastChunk = last / vpp, middleChunk = middle / vpp;
                const long long virtualStage = firstChunk + middleChunk + lastChunk;
                // (middle / VPP) // middle stages: Python divides by zero with no middle stage (RT29).
                const long long perMiddleChunk = middleStages > 0 ? middleChunk / middleStages : 0;
                for (int v = 0; v < p.vpp; ++v) {
                    const long long offset
                        = v * virtualStage + (stage == 0 ? 0 : firstChunk + middleRank * perMiddleChunk);
                    f.add(offset, perRank / vpp, v);
                }
            } else {
                f.add(stage == 0 ? 0 : middleRank * perMiddleRank + first, perRank, 0);
            }
            out.push_back(f.s);
        }
    } else {
        // The even split, the embedding and the loss counted where the split accounts for them
        // (transformer_block.py:141-195, transformer_layer.py:171-208 at 2a75ac12).
        const long long N = pipelineSplitLayers(r);
        const bool embedding = r.account_for_embedding_in_pipeline_split;
        const bool loss = r.account_for_loss_in_pipeline_split;
        const long long perChunk = p.pp == 1 && vpp == 1 ? N : N / (p.pp * vpp);
        for (int stage = from; stage < to; ++stage) {
            StageFill f = fresh(stage);
            for (int v = 0; v < p.vpp; ++v) {
                const bool holdsEmbedding = embedding && v == 0 && stage == 0;
                const bool holdsLoss = loss && v == p.vpp - 1 && stage == p.pp - 1;
                const long long offset
                    = v * (N / vpp) + stage * perChunk - (embedding && !holdsEmbedding ? 1 : 0);
                f.add(offset, perChunk - (holdsEmbedding ? 1 : 0) - (holdsLoss ? 1 : 0), v);
            }
            out.push_back(f.s);
        }
    }
    return withMtp(r, std::move(out));
}

// The rules that give Megatron's message for a split that leaves a layer out.
std::string splitRuleHint(const Recipe& r)
{
    if (isHybrid(r))
        return "the hybrid pattern's layers do not split over the pipeline stages (RT19)";
    if (r.num_layers_in_first_pipeline_stage || r.num_layers_in_last_pipeline_stage)
        return "the first / last stage sizes leave layers the other stages do not split evenly (R50)";
    if (r.account_for_embedding_in_pipeline_split || r.account_for_loss_in_pipeline_split)
        return "num_layers with the embedding and the loss does not split evenly over the pipeline chunks "
               "(R51)";
    return "num_layers does not split evenly over pipeline_model_parallel_size x "
           "virtual_pipeline_model_parallel_size (RT28)";
}

} // namespace

PipelineStage pipelineStage(const Recipe& r, int stage)
{
    std::vector<PipelineStage> one = stagesOfSplit(r, stage, stage + 1);
    return one.empty() ? PipelineStage {} : one.front();
}

std::vector<PipelineStage> pipelineStages(const Recipe& r)
{
    return stagesOfSplit(r, 0, parallelSizes(r).pp);
}

std::string pipelineSplitProblem(const Recipe& r)
{
    const ParallelSizes p = parallelSizes(r);
    if (r.num_layers < 1 || r.num_layers > kMaxLayers)
        return "num_layers=" + std::to_string(r.num_layers) + " is outside 1 to "
            + std::to_string(kMaxLayers);
    const bool hybrid = isHybrid(r);
    // More chunks than layers leaves chunks empty under the even split (RS28); the bound also keeps the
    // stage-by-stage pass below to sizes that have layers to hold.
    if (static_cast<long long>(p.pp) * p.vpp > 2 * static_cast<long long>(kMaxLayoutLayers))
        return std::to_string(static_cast<long long>(p.pp) * p.vpp) + " pipeline chunks for "
            + std::to_string(r.num_layers) + " layers (RS28)";
    std::optional<PipelineLayout> layout; // a hybrid stack's pattern splits it; a layout is not read
    if (!hybrid && r.pipeline_model_parallel_layout) {
        try {
            layout = parsePipelineLayout(*r.pipeline_model_parallel_layout);
        } catch (const PipelineLayoutError& e) {
            return std::string("pipeline_model_parallel_layout: ") + e.what();
        }
    }
    if (layout) {
        const size_t stages = layout->stages.size();
        if (stages % static_cast<size_t>(p.pp) != 0)
            return "the layout's " + std::to_string(stages)
                + " stages are no multiple of pipeline_model_parallel_size=" + std::to_string(p.pp)
                + " (R47, M10)";
        const size_t chunks = stages / static_cast<size_t>(p.pp);
        if (r.virtual_pipeline_model_parallel_size
            && static_cast<size_t>(*r.virtual_pipeline_model_parallel_size) != chunks)
            return "virtual_pipeline_model_parallel_size="
                + std::to_string(*r.virtual_pipeline_model_parallel_size) + " is not the layout's "
                + std::to_string(chunks) + " stages per pipeline rank (R48)";
        const std::string flat = layout->flat();
        if (flat.front() != kLayoutEmbedding || flat.back() != kLayoutLoss
            || layout->count(kLayoutEmbedding) != 1 || layout->count(kLayoutLoss) != 1)
            return "the layout must hold the embedding once, first, and the loss once, last (R49)";
        if (layout->count(kLayoutDecoder) != static_cast<size_t>(r.num_layers))
            return "the layout holds " + std::to_string(layout->count(kLayoutDecoder))
                + " decoder layers, num_layers=" + std::to_string(r.num_layers) + " (R49)";
    }
    // Stage sizes outside the model (R50 says below 1; Megatron checks no upper bound and would place layers
    // twice) are refused before any stage is filled from them.
    for (const std::optional<int>& size :
        { r.num_layers_in_first_pipeline_stage, r.num_layers_in_last_pipeline_stage })
        if (!layout && size && (*size < 1 || *size > r.num_layers))
            return "a first / last stage size of " + std::to_string(*size) + " for "
                + std::to_string(r.num_layers) + " layers (R50)";
    if (!layout && p.pp > 1 && p.vpp > 1
        && (r.num_layers_in_first_pipeline_stage || r.num_layers_in_last_pipeline_stage) && !hybrid) {
        const long long middleStages = p.pp - (r.num_layers_in_first_pipeline_stage ? 1 : 0)
            - (r.num_layers_in_last_pipeline_stage ? 1 : 0);
        if (middleStages == 0)
            return "no middle pipeline stage with virtual stages: Megatron divides by zero (RT29)";
    }
    // Every decoder layer on exactly one chunk, no chunk with a negative count.
    std::vector<int> seen(static_cast<size_t>(r.num_layers), 0);
    for (const PipelineStage& s : pipelineStages(r)) {
        for (size_t i = 0; i < s.layers.size(); ++i) {
            const int layer = s.layers[i];
            if (layer < 0 || layer >= r.num_layers || ++seen[static_cast<size_t>(layer)] > 1)
                return "the split puts layer " + std::to_string(layer) + " on more than one chunk"
                    + " or outside the model's " + std::to_string(r.num_layers) + " layers (R50, R51, RT28)";
            if (s.chunk[i] < 0 || s.chunk[i] >= p.vpp)
                return "the split has a chunk outside PP x VPP (R48)";
        }
    }
    for (size_t layer = 0; layer < seen.size(); ++layer)
        if (seen[layer] == 0)
            return "layer " + std::to_string(layer) + " of " + std::to_string(r.num_layers)
                + " is on no pipeline chunk: " + splitRuleHint(r);
    return "";
}

int largestChunkLayers(const Recipe& r)
{
    if (!pipelineSplitProblem(r).empty()) {
        const ParallelSizes p = parallelSizes(r);
        return std::max(0, r.num_layers / p.pp / p.vpp);
    }
    int most = 0;
    for (const PipelineStage& s : pipelineStages(r)) {
        std::vector<int> perChunk;
        for (int c : s.chunk) {
            if (c >= static_cast<int>(perChunk.size()))
                perChunk.resize(static_cast<size_t>(c) + 1, 0);
            ++perChunk[static_cast<size_t>(c)];
        }
        for (int n : perChunk)
            most = std::max(most, n);
    }
    return most;
}

const std::vector<LoraModuleName>& loraModuleNames()
{
    static const std::vector<LoraModuleName> names = {
        { "linear_qkv", kLoraQkv },
        { "linear_proj", kLoraProj },
        { "linear_fc1", kLoraFc1 },
        { "linear_fc2", kLoraFc2 },
        { "linear_q_proj", kLoraQProj },
        { "linear_q_down_proj", kLoraQDown },
        { "linear_q_up_proj", kLoraQUp },
        { "linear_kv_down_proj", kLoraKvDown },
        { "linear_kv_up_proj", kLoraKvUp },
        { "in_proj", kLoraInProj },
        { "out_proj", kLoraOutProj },
    };
    return names;
}

bool isPeft(const Recipe& r)
{
    return r.peft.has_value();
}

uint32_t loraTargets(const Recipe& r)
{
    if (!isPeft(r))
        return 0;
    uint32_t bits = 0;
    // No targets: Bridge's matcher takes every linear module (module_matcher.py match, its last branch).
    if (r.peft_target_modules.empty())
        for (const LoraModuleName& n : loraModuleNames())
            bits |= n.bit;
    for (const std::string& target : r.peft_target_modules)
        for (const LoraModuleName& n : loraModuleNames())
            if (target == n.name)
                bits |= n.bit;
    return bits;
}

uint32_t loraLinearsOfModel(const Recipe& r)
{
    uint32_t bits = 0;
    for (const LayerKind& k : layerKinds(r)) {
        if (isAttentionMixer(k.mixer)) {
            bits |= kLoraProj;
            if (!r.multi_latent_attention)
                bits |= kLoraQkv;
            else if (r.q_lora_rank)
                bits |= kLoraQDown | kLoraQUp | kLoraKvDown | kLoraKvUp;
            else
                bits |= kLoraQProj | kLoraKvDown | kLoraKvUp;
        } else if (k.mixer == LayerMixer::Mamba || k.mixer == LayerMixer::GatedDeltaNet) {
            bits |= kLoraInProj | kLoraOutProj;
        }
        if (k.ffn != LayerFfn::None)
            bits |= kLoraFc1 | kLoraFc2;
    }
    return bits;
}

std::string loraTargetsNotInModel(const Recipe& r)
{
    std::string out;
    if (!isPeft(r))
        return out;
    const uint32_t has = loraLinearsOfModel(r);
    for (const std::string& target : r.peft_target_modules)
        for (const LoraModuleName& n : loraModuleNames())
            if (target == n.name && (has & n.bit) == 0)
                out += (out.empty() ? "" : ", ") + target;
    return out;
}

std::string loraTargetsNotModelled(const Recipe& r)
{
    std::string out;
    if (!isPeft(r))
        return out;
    if (r.peft_target_modules.empty())
        return "[] (every linear module, the output layer's too)";
    for (const std::string& target : r.peft_target_modules) {
        const bool known = std::any_of(loraModuleNames().begin(), loraModuleNames().end(),
            [&](const LoraModuleName& n) { return target == n.name; });
        if (!known)
            out += (out.empty() ? "" : ", ") + target;
    }
    return out;
}

} // namespace rs
