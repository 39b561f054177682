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
    m.vocab = paddedVocabSize(r);
    return m;
}

bool isMoeLayer(const Recipe& r, int layer)
{
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
