// SPDX-License-Identifier: Apache-2.0
#include "engine/layout_rank.h"

#include <algorithm>
#include <sstream>

#include "core/estimator.h"
#include "core/model_shape.h"
#include "engine/model.h"

namespace rs::engine {

namespace {

void mustDivide(const char* field, long long value, long long by, const std::string& what)
{
    if (by <= 0 || value % by != 0)
        throw EngineError(field,
            std::string(field) + "=" + std::to_string(value) + " is not divisible by " + what + "="
                + std::to_string(by));
}

} // namespace

std::string LayoutRank::describe() const
{
    std::ostringstream o;
    o << "rank " << rank << " of " << world << " (" << chosen_by << "): TP " << tp << (sp ? " (SP)" : "")
      << " rank " << tp_rank << ", CP " << cp << " rank " << cp_rank << ", EP " << ep << " rank " << ep_rank
      << " (expert-TP " << etp << ", expert-DP " << edp << "), DP " << dp << " rank " << dp_rank << ", PP "
      << pp;
    if (vpp > 1)
        o << " (VPP " << vpp << ")";
    o << " stage " << stage << "; " << scope << "; " << micro_batches << " micro-batches per step, "
      << in_flight << " in flight";
    return o.str();
}

LayoutRank layoutRank(const Recipe& r, std::optional<int> requested)
{
    LayoutRank L;
    const ParallelSizes p = parallelSizes(r); // the estimator's sizes (core/model_shape.h)
    L.tp = p.tp;
    L.cp = p.cp;
    L.ep = p.ep;
    L.pp = p.pp;
    L.vpp = p.vpp;
    L.dp = p.dp;
    L.sp = p.sp;
    L.world = p.world;
    L.etp = p.etp;
    L.edp = p.edp;

    mustDivide("num_attention_heads", r.num_attention_heads, L.tp, "tensor_model_parallel_size");
    if (!r.multi_latent_attention && r.num_query_groups)
        mustDivide("num_query_groups", *r.num_query_groups, L.tp, "tensor_model_parallel_size");
    mustDivide("seq_length", r.seq_length, L.cp * (L.sp ? L.tp : 1),
        L.sp ? "context_parallel_size x tensor_model_parallel_size (sequence parallel)"
             : "context_parallel_size");
    if (r.ffn_hidden_size)
        mustDivide("ffn_hidden_size", *r.ffn_hidden_size, L.tp, "tensor_model_parallel_size");
    if (r.num_moe_experts) {
        mustDivide("num_moe_experts", *r.num_moe_experts, L.ep, "expert_model_parallel_size");
        if (r.moe_ffn_hidden_size)
            mustDivide("moe_ffn_hidden_size", *r.moe_ffn_hidden_size, L.etp, "expert tensor parallel size");
        if (r.moe_shared_expert_intermediate_size)
            mustDivide("moe_shared_expert_intermediate_size", *r.moe_shared_expert_intermediate_size, L.tp,
                "tensor_model_parallel_size");
    } else if (L.ep > 1) {
        throw EngineError("expert_model_parallel_size", "expert parallelism needs num_moe_experts");
    }
    // The split Megatron builds (the layout, first / last stage sizes or the even one: core/model_shape.h),
    // every layer on one chunk; the worker runs the chosen stage's chunks as they fall.
    if (L.pp * L.vpp > 1) {
        if (const std::string why = pipelineSplitProblem(r); !why.empty())
            throw EngineError("pipeline_model_parallel_size", why);
    }

    L.micro_batches = p.micro_batches;

    if (requested) {
        if (*requested < 0 || *requested >= L.world)
            throw EngineError("rank_of_layout",
                "rank " + std::to_string(*requested) + " is outside the layout's " + std::to_string(L.world)
                    + " ranks (TP x CP x DP x PP)");
        L.rank = *requested;
        L.chosen_by = "requested";
    } else {
        L.rank = hottestRankOfLayout(r);
        L.chosen_by = "hottest rank by the estimator";
    }
    L.tp_rank = L.rank % L.tp;
    L.cp_rank = (L.rank / L.tp) % L.cp;
    L.dp_rank = (L.rank / (L.tp * L.cp)) % L.dp;
    L.stage = stageOfRank(p, L.rank);
    L.ep_rank = (L.rank / L.etp) % L.ep;
    L.first_stage = L.stage == 0;
    L.last_stage = L.stage == L.pp - 1;

    const PipelineStage stage = pipelineStage(r, L.stage);
    // A chunk without a decoder layer (a layout's stage of the embedding or the loss alone) has no module of
    // the worker's to run: its model chunks are counted from the layers' chunks.
    for (int v = 0; v < L.vpp; ++v)
        if (std::find(stage.chunk.begin(), stage.chunk.end(), v) == stage.chunk.end())
            throw EngineError("pipeline_model_parallel_layout",
                "stage " + std::to_string(L.stage) + "'s chunk " + std::to_string(v)
                    + " holds no decoder layer: the worker runs chunks of one layer or more (choose another "
                      "rank with --rank-of-layout)");
    L.layers = stage.layers;
    L.chunk = stage.chunk;
    const std::string& ranges = stage.ranges;
    if (L.pp == 1 && L.vpp == 1) {
        L.scope = "all layers";
    } else {
        L.scope = "stage " + std::to_string(L.stage) + " of " + std::to_string(L.pp) + ": layers " + ranges
            + " of " + std::to_string(r.num_layers);
        if (L.first_stage)
            L.scope += ", embedding";
        if (L.last_stage)
            L.scope += ", output layer and loss";
    }
    L.in_flight = maxInFlight(pipelineSchedule(L.pp, L.vpp, L.stage, L.micro_batches));
    return L;
}

std::vector<ScheduleOp> pipelineSchedule(int pp, int vpp, int stage, int m)
{
    std::vector<ScheduleOp> ops;
    pp = std::max(1, pp);
    vpp = std::max(1, vpp);
    m = std::max(1, m);
    if (pp == 1 && vpp == 1) {
        for (int i = 0; i < m; ++i) {
            ops.push_back({ true, i, 0 });
            ops.push_back({ false, i, 0 });
        }
        return ops;
    }
    // Forward and backward orders of the chunk-micro-batches: micro-batches in groups of PP, each group
    // through the chunks in order (forward) or in reverse (backward).
    std::vector<ScheduleOp> fwd, bwd;
    for (int g0 = 0; g0 < m; g0 += pp) {
        const int g1 = std::min(m, g0 + pp);
        for (int v = 0; v < vpp; ++v)
            for (int i = g0; i < g1; ++i)
                fwd.push_back({ true, i, v });
        for (int v = vpp - 1; v >= 0; --v)
            for (int i = g0; i < g1; ++i)
                bwd.push_back({ false, i, v });
    }
    const int total = static_cast<int>(fwd.size());
    int warmup = vpp == 1 ? pp - stage - 1 : (pp - stage - 1) * 2 + (vpp - 1) * pp;
    warmup = std::clamp(warmup, 0, total);
    size_t f = 0, b = 0;
    for (; f < static_cast<size_t>(warmup); ++f)
        ops.push_back(fwd[f]);
    while (f < fwd.size()) {
        ops.push_back(fwd[f++]);
        ops.push_back(bwd[b++]);
    }
    while (b < bwd.size())
        ops.push_back(bwd[b++]);
    return ops;
}

int maxInFlight(const std::vector<ScheduleOp>& schedule)
{
    int now = 0, most = 0;
    for (const auto& op : schedule) {
        now += op.forward ? 1 : -1;
        most = std::max(most, now);
    }
    return most;
}

} // namespace rs::engine
