// SPDX-License-Identifier: Apache-2.0
#include "core/estimator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "core/attention_softmax.h"
#include "core/flops.h"
#include "core/model_shape.h"
#include "core/rules.h"
#include "core/units.h"

namespace rs {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Regions: every recompute label's region inside one layer. A tensor is kept for backward when a consumer
// that runs with grad saves it, or when an active checkpoint keeps it as its input; an output-discard
// region's outputs are freed (docs/rules.md "Recompute labels"; the worker's checkpoint.h).
enum Region : int {
    kOutside = 0,
    kCoreAttn,
    kMlaUp,
    kNorm1, // input_layernorm (label layernorm)
    kNorm2, // pre_mlp_layernorm (label layernorm)
    kMoeAct,
    kMlp,
    kMoe,
    kShared,
    kGdnNorm, // GatedDeltaNet's gated RMSNorm and its all-to-all (label gdn_norm_out)
    kGdn, // the whole GatedDeltaNet module (label gdn, dev)
    kRegionCount
};

constexpr uint32_t bit(int r)
{
    return 1u << r;
}

// The label each region belongs to; its kind and its enclosing region are the label table's.
const char* regionLabel(int r)
{
    switch (r) {
    case kCoreAttn:
        return "core_attn";
    case kMlaUp:
        return "mla_up_proj";
    case kNorm1:
    case kNorm2:
        return "layernorm";
    case kMoeAct:
        return "moe_act";
    case kMlp:
        return "mlp";
    case kMoe:
        return "moe";
    case kShared:
        return "shared_experts";
    case kGdnNorm:
        return "gdn_norm_out";
    case kGdn:
        return "gdn";
    default:
        return "";
    }
}

// Per region: output-discard or not, and the region of the label that encloses it (the label table's
// kind and parent), read once.
struct RegionFacts {
    bool discard[kRegionCount] = {};
    int parent[kRegionCount] = {};
    RegionFacts()
    {
        for (int r = 1; r < kRegionCount; ++r) {
            const RecomputeLabel* row = findRecomputeLabel(regionLabel(r));
            if (!row)
                continue;
            discard[r] = row->kind == CheckpointKind::OutputDiscard;
            for (int p = 1; p < kRegionCount; ++p)
                if (!row->parent.empty() && row->parent == regionLabel(p))
                    parent[r] = p;
        }
    }
};

const RegionFacts& regionFacts()
{
    static const RegionFacts facts;
    return facts;
}

int parentOf(int r)
{
    return regionFacts().parent[r];
}

bool isDiscard(int r)
{
    return regionFacts().discard[r];
}

// One tensor a layer's forward creates.
struct Entry {
    double bytes = 0;
    int created = kOutside; // the innermost region that creates it
    uint32_t savers = 0; // regions of the consumers that save it for backward (bit(kOutside): outside any)
    uint32_t input_of = 0; // checkpoint regions that take it as an input
    bool output = false; // an output of `created` (freed when `created` is an active output-discard region)
    // Under PEFT (Megatron layout): the linear modules (LoraLinear bits) that save this tensor for their
    // weight gradient alone, and which of `savers` they are. A frozen linear saves no input (TE's
    // linear.py / layernorm_linear.py / grouped_linear.py keep it only when weight.requires_grad; Megatron's
    // LinearWithFrozenWeight neither); a LoRA adapter on it keeps its input for linear_in's gradient:
    // this tensor (adapter_bytes < 0), or where it is the base's quantized copy the 16-bit original
    // (adapter_bytes > 0, or 0: the adapter keeps one that is counted already).
    uint32_t wgrad_of = 0;
    uint32_t wgrad_savers = 0;
    double adapter_bytes = -1;
};

struct Active {
    uint32_t mask = 0;
    bool on(int r) const { return (mask & bit(r)) != 0; }
    // A region that checkpoints itself: active, and not inside an active region (a nested checkpoint
    // inside a region that runs without grad just runs its function).
    bool effective(int r) const { return on(r) && (parentOf(r) == kOutside || !on(parentOf(r))); }
    bool runsWithGrad(int r) const
    {
        return r == kOutside || (!on(r) && (parentOf(r) == kOutside || !on(parentOf(r))));
    }
};

double retainedBytes(const Entry& e, const Active& a)
{
    if (e.output && isDiscard(e.created) && a.effective(e.created))
        return 0;
    // Created inside a region that runs without grad in forward and saved by nobody outside it.
    for (int r = 0; r < kRegionCount; ++r) {
        if ((e.savers & bit(r)) && a.runsWithGrad(r))
            return e.bytes;
        if ((e.input_of & bit(r)) && a.effective(r))
            return e.bytes;
    }
    return 0;
}

bool inside(int created, int region)
{
    return created == region || parentOf(created) == region;
}

// One layer kind's tensors with the figures derived from them under one recompute choice.
struct LayerModel {
    std::vector<Entry> entries;
    double forward_temp = 0; // transient above the layer's own saved tensors during its forward
    size_t temp_at = SIZE_MAX; // entries created before forward_temp's moment (all: the layer's whole set)
    // A second forward moment at the layer's end, above all its entries, where forward_temp has an earlier
    // moment of its own (a DSA layer: its kernels', then the MLP's or MoE's).
    double end_temp = 0;
    // Full recompute: what the layer holds at its peak when it runs without grad (a checkpointed unit's
    // forward), where it is modelled; else (< 0) forward_temp beside what it would keep up to that moment.
    double nograd_peak = -1;
    // The replay of a full-recompute unit in backward runs this layer's forward with grad first: where its
    // forward moment can exceed its backward's (DSA's scoring and top-k scratch at long sequences), the
    // Megatron layout counts that moment too.
    bool replay_forward_moment = false;
    // The worker's unfused torch softmax: its backward comes once the layer's tensors after the core
    // attention are gone; the first bwd_at entries alive with bwd_at_temp beside them (SIZE_MAX: no such
    // moment), and bwd_after the backward transient of the layer's later tensors (layerModel).
    size_t bwd_at = SIZE_MAX;
    double bwd_at_temp = 0, bwd_after = 0;
    double backward_temp = 0; // transient of its backward beyond the replay (gradients in flight)
    // The Megatron layout: gradients of the largest saved tensor's size in flight at once in the backward,
    // and bytes in flight beside them (finishLayer).
    double largest_in_flight = 2;
    double in_flight_extra = 0;
    // The Megatron layout's unfused core attention without dropout, at its backward: the layer's tensors
    // after it (the projection's and the MLP's) gone with their backward, the first core_bwd_at entries
    // alive with core_bwd_temp beside them (the residual gradient in and out, the scores-sized gradients;
    // SIZE_MAX: no such moment).
    size_t core_bwd_at = SIZE_MAX;
    double core_bwd_temp = 0;
    double params = 0; // elements
    double largest_param = 0; // elements of its largest parameter tensor
    double param_tensors = 0;
    double residual = 0; // bytes of the residual stream [tokens, h] entering the layer

    double retained(const Active& a, int checkpoints) const
    {
        double sum = 0;
        for (const auto& e : entries)
            sum += retainedBytes(e, a);
        return sum + checkpoints;
    }
    // What the first n entries keep (the saved tensors alive at a moment of the layer's forward).
    double retainedUpTo(const Active& a, size_t n) const
    {
        double sum = 0;
        for (size_t i = 0; i < entries.size() && i < n; ++i)
            sum += retainedBytes(entries[i], a);
        return sum;
    }
    // A full-recompute unit's replay of this layer, at the worst moment of its backward: what the layer
    // keeps without recompute, less its input where the unit's checkpoint holds it already (the replay's
    // detached input shares its storage), with the gradients in flight.
    double replayBackward(bool first_of_unit) const
    {
        const double input
            = first_of_unit && !entries.empty() ? retainedBytes(entries.front(), Active {}) : 0;
        const double all = retained(Active {}, 0) - input;
        if (bwd_at == SIZE_MAX)
            return all + backward_temp;
        return std::max(all + bwd_after, retainedUpTo(Active {}, bwd_at) - input + bwd_at_temp);
    }
    // Largest replay of one checkpointed region in backward: what the region saves when it runs with grad.
    double replay(const Active& a) const
    {
        double worst = 0;
        for (int r = 1; r < kRegionCount; ++r)
            worst = std::max(worst, replayOf(a, r));
        return worst;
    }
    // What region r saves when its checkpoint replays it (0 where it does not checkpoint itself).
    double replayOf(const Active& a, int r) const
    {
        if (!a.effective(r))
            return 0;
        Active without = a;
        without.mask &= ~bit(r);
        if (r == kNorm1 || r == kNorm2)
            without.mask &= ~(bit(kNorm1) | bit(kNorm2));
        double sum = 0;
        for (const auto& e : entries)
            if (inside(e.created, r) && !(e.output && !isDiscard(e.created)))
                sum += retainedBytes(e, without);
        return sum;
    }
};

// ---------------------------------------------------------------------------------------------------------
// The recipe's shapes as one rank sees them.
struct Shape {
    Layout layout = Layout::Megatron;
    double s = 0, b = 0, T = 0, Tsp = 0; // sequence per CP rank, micro-batch, tokens, tokens under SP
    double h = 0, F = 0, heads = 0, groups = 0, kv = 0, vocab = 0;
    double tp = 1, cp = 1, ep = 1, etp = 1, pp = 1, dp = 1, edp = 1;
    int vpp = 1;
    bool sp = false, gated = false, rms = false, mla = false, bias = false, qkv_bias = false;
    bool qk_norm = false; // q_layernorm / k_layernorm on the heads (qk_layernorm, attention other than MLA)
    bool rope = false; // rotary position embedding on q and k (rope, yarn)
    bool fused_act = false; // bias_activation_fusion: the activation keeps only FC1's output
    double ql = 0, kvl = 0, dn = 0, dr = 0, dv = 0;
    double experts = 0, topk = 0, Fm = 0, Fs = 0, capacity = 0;
    // Latent MoE (model_shape.h): L the latent width (0 off), Hr the width the routed experts and the
    // dispatcher work at (L, else h).
    double L = 0, Hr = 0;
    double act = 2; // activation / parameter bytes
    double grad = 2; // gradient buffer bytes (Megatron) or autograd gradient bytes (worker)
    bool fp32 = false;
    double attn_dropout = 0, hidden_dropout = 0;
    std::string backend;
    bool te = true;
    bool softmax_fp32 = true;
    bool fused_softmax = false; // Megatron's fused scaled-masked-softmax kernel applies
    double micro_batches = 1; // per step, per DP rank
    double pos_table = 0; // learned absolute position embedding rows
    bool untied = false;
    bool grouped = false; // moe_grouped_gemm
    // Mamba (model_shape.h): heads, head dim, d_inner, groups, state, in_proj width, conv channels; the
    // mixer's chunk and conv width.
    double mH = 0, mP = 0, mDi = 0, mG = 0, mN = 0, mIn = 0, mConv = 0, mChunk = 128,
           mConvW = kMambaConvWidth;
    // GatedDeltaNet: key / value heads and dims, q/k and v widths, in_proj width, conv channels and width.
    double gHk = 0, gHv = 0, gDk = 0, gDv = 0, gQk = 0, gV = 0, gIn = 0, gConv = 0, gConvW = 4;
    bool sqrelu = false; // activation_func squared_relu
    bool weighted_sqrelu = false; // the experts' fused weighted squared ReLU (keeps FC1's output, probs)
    bool ce_te = false; // Transformer Engine's fused cross-entropy: the gradient in the 16-bit logits
    // FP8 through Transformer Engine's modules (both layouts: the worker's engine/fp8.* keeps what TE does):
    // the bytes a TE linear saves of its quantized input (1, the column-wise copy Hopper's wgrad GEMM reads),
    // and delayed scaling, under which linear_proj also keeps its quantized input.
    bool fp8 = false, fp8_delayed = false;
    double qin = 2; // bytes per element of a TE linear's saved input: act, or 1 under fp8
    // DSA (model_shape.h isDsaModel): the indexer's heads and head dim, the keys each query keeps (at most
    // the keys there are), the keys a rank attends over (CP gathers the whole sequence: dsa.py allgather),
    // FlashMLA's padded head count, and which of Megatron's paths the layers take (dsaPathOf).
    double ih = 0, idim = 0, dsa_k = 0, skv = 0, np_pad = 0;
    bool dsa_loss = false; // the indexer's KL loss (dsa_indexer_loss_coeff > 0) in the step's forward
    std::string dsa_path; // "" (not DSA) | "cudnn" | a reason the estimate does not model the path taken
    // PEFT (Megatron layout; the worker trains every parameter): the base frozen, LoRA adapters of rank
    // lora_dim on the `lora` linears (LoraLinear bits), their input dropped out at lora_dropout.
    bool peft = false;
    uint32_t lora = 0;
    double lora_dim = 0, lora_dropout = 0;
};

// CPU generator state each checkpoint keeps (the worker's RngState: mt19937 + normal cache).
constexpr double kWorkerRngState = 5056;

// FlashMLA's sparse prefill takes the local query heads padded to what it supports
// (dsa_cudnn_kernels.py:348 _flash_mla_head_padding, the Hopper rule, SM90): a multiple of 64, or a
// divisor of 64 padded to 64; 0 where it supports neither (the fused path declines).
double flashMlaHeads(double np)
{
    const long long n = static_cast<long long>(np);
    if (n >= 1 && n % 64 == 0)
        return np;
    if (n >= 1 && n < 64 && 64 % n == 0)
        return 64;
    return 0;
}

// Which of Megatron's DSA paths the layers take at bridge-pin (dsa.py DSAttention.forward): "cudnn" where
// the cuDNN / FlashMLA kernels run (dsa_kernels.py:92 use_fused_dsa_kernels; dsa_cudnn_kernels.py:179
// run_fused_dsa_attention, :2585 run_fused_absorbed_sparse_attention, :1376 run_fused_qk_topk_with_loss),
// else why the estimate does not model the path Megatron takes.
std::string dsaPathOf(const Recipe& r, const Shape& x)
{
    if (!r.dsa_indexer_n_heads || !r.dsa_indexer_head_dim || !r.dsa_indexer_topk)
        return "dsa_indexer_n_heads, dsa_indexer_head_dim and dsa_indexer_topk have no default (RS39): "
               "without them there is no indexer to estimate";
    if (*r.dsa_indexer_n_heads < 1 || *r.dsa_indexer_head_dim < 1 || *r.dsa_indexer_topk < 1)
        return "the indexer's sizes must be at least 1 (RS23)";
    if (r.dsa_kernel_backend == "tilelang")
        return "dsa_kernel_backend=tilelang: the TileLang kernels' tensors (dsa_tilelang_kernels.py) are "
               "not modelled; the estimate models the cudnn backend";
    if (r.dsa_kernel_backend != "cudnn" || x.backend == "unfused")
        return "the PyTorch reference path of DSA (dsa_kernel_backend=" + r.dsa_kernel_backend
            + (x.backend == "unfused" ? ", attention_backend unfused" : "")
            + ": dsa.py _unfused_absorbed_dsa_fn and FusedDSAIndexerLoss, which hold [b, heads, s, s] fp32 "
              "scores) is not modelled; the estimate models dsa_kernel_backend=cudnn";
    // dsa_cudnn_kernels.py:151 _supports_flash_mla_value_layout: FlashMLA's value width is 512.
    if (x.kvl != 512)
        return "kv_lora_rank=" + std::to_string(static_cast<long long>(x.kvl))
            + ": FlashMLA takes 512 only (dsa_cudnn_kernels.py:151), so Megatron falls back to the PyTorch "
              "reference path, which the estimate does not model";
    if (x.np_pad <= 0)
        return std::to_string(static_cast<long long>(x.heads / x.tp))
            + " attention heads per TP rank: FlashMLA pads them to a multiple of 64 or from a divisor of 64 "
              "only (dsa_cudnn_kernels.py:348), so Megatron falls back to the PyTorch reference path, which "
              "the estimate does not model";
    // The dense indexer loss under context parallelism, and under top-k sharing at all, declines to the
    // reference loss (dsa_cudnn_kernels.py:244; dsa.py:2124 needs the sparse loss for the fused one); with CP
    // 1 and no sharing the fused dense loss holds the whole [b, s, s] fp32 score matrix, not modelled either.
    if (x.dsa_loss && !r.dsa_indexer_use_sparse_loss)
        return "the dense indexer loss (dsa_indexer_use_sparse_loss false with dsa_indexer_loss_coeff > 0: "
               "the "
               "whole [b, s, s] score matrix, or the PyTorch reference loss) is not modelled; the estimate "
               "models the sparse loss or none";
    return "cudnn";
}

Shape shapeOf(const Recipe& r, Layout layout)
{
    Shape x;
    x.layout = layout;
    const bool worker = layout == Layout::Worker;
    // The worker runs one rank of the recipe's layout (engine/layout_rank.h) with Megatron's shares: both
    // layouts see the same TP / CP / EP / PP / DP sizes.
    const ParallelSizes p = parallelSizes(r);
    const ModelShape m = modelShape(r);
    x.tp = p.tp;
    x.cp = p.cp;
    x.ep = p.ep;
    x.pp = p.pp;
    x.vpp = p.vpp;
    x.dp = p.dp;
    x.etp = p.etp;
    x.edp = p.edp;
    x.sp = p.sp;
    x.s = r.seq_length / x.cp;
    x.b = r.micro_batch_size;
    x.T = x.s * x.b;
    x.Tsp = x.sp ? x.T / x.tp : x.T;
    x.h = double(m.hidden);
    x.F = double(m.ffn);
    x.heads = double(m.heads);
    x.groups = double(m.query_groups);
    x.kv = double(m.kv_channels);
    x.gated = r.gated_linear_unit;
    x.fused_act = r.bias_activation_fusion;
    x.rms = r.normalization == "RMSNorm";
    x.mla = r.multi_latent_attention;
    x.ql = r.q_lora_rank.value_or(0);
    x.kvl = r.kv_lora_rank;
    x.dn = r.qk_head_dim;
    x.dr = r.qk_pos_emb_head_dim;
    x.dv = r.v_head_dim;
    x.experts = double(m.experts);
    x.topk = r.moe_router_topk;
    x.Fm = double(m.moe_ffn);
    x.Fs = double(m.shared_ffn);
    x.L = double(m.moe_latent);
    x.Hr = double(m.routed_width);
    x.capacity = r.moe_expert_capacity_factor.value_or(0);
    x.grouped = r.moe_grouped_gemm;
    x.fp32 = !r.bf16 && !r.fp16;
    x.act = x.fp32 ? 4 : 2;
    x.grad = x.fp32 || r.grad_reduce_in_fp32 ? 4 : 2; // both layouts: DDP's gradient buffer
    x.attn_dropout = r.attention_dropout;
    x.hidden_dropout = r.hidden_dropout;
    x.backend = r.attention_backend;
    // A hybrid stack is built from Megatron's hybrid_stack_spec, Transformer Engine's modules whatever
    // transformer_impl says (pretrain_hybrid.py takes it with --spec; hybrid_builders.py).
    x.te = r.transformer_impl == "transformer_engine" || isHybrid(r);
    x.softmax_fp32 = r.attention_softmax_in_fp32 || r.apply_query_key_layer_scaling;
    x.vocab = double(m.vocab); // padded as Megatron-LM pads it (core/model_shape.h), the worker too
    // Both build the recipe's biases, learned absolute position table and tied or untied output layer
    // (engine/model.cpp: the worker's stack follows Megatron's).
    x.bias = r.add_bias_linear;
    x.qkv_bias = r.add_bias_linear || r.add_qkv_bias;
    x.qk_norm = m.qk_head_norms;
    x.rope = r.position_embedding_type == "rope" || r.position_embedding_type == "yarn";
    x.untied = r.untie_embeddings_and_output_weights;
    if (r.position_embedding_type == "learned_absolute")
        x.pos_table = r.max_position_embeddings.value_or(r.seq_length);
    if (!worker) {
        // The local spec (transformer_impl local) builds the unfused DotProductAttention whatever the
        // attention backend says.
        if (!x.te)
            x.backend = "unfused";
    }
    // Megatron's fused scaled-masked-softmax kernel or the torch softmax, for this rank's scores: the
    // worker runs the same one (core/attention_softmax.h).
    x.fused_softmax = fusedMaskedSoftmaxApplies(r, static_cast<int64_t>(x.b),
        static_cast<int64_t>(x.heads / x.tp), static_cast<int64_t>(x.s), static_cast<int64_t>(x.s));
    // Both layouts run Megatron's micro-batches per step (engine/optimizer.cpp trainingLayout).
    x.micro_batches = p.micro_batches;
    x.mH = double(m.mamba_heads);
    x.mP = double(m.mamba_head_dim);
    x.mDi = double(m.mamba_d_inner);
    x.mG = double(m.mamba_groups);
    x.mN = double(m.mamba_state);
    x.mIn = double(m.mamba_in_proj);
    x.mConv = double(m.mamba_conv_dim);
    x.mChunk = std::max(1, r.mamba_chunk_size);
    x.gHk = double(m.gdn_key_heads);
    x.gHv = double(m.gdn_value_heads);
    x.gDk = double(m.gdn_key_dim);
    x.gDv = double(m.gdn_value_dim);
    x.gQk = double(m.gdn_qk);
    x.gV = double(m.gdn_v);
    x.gIn = double(m.gdn_in_proj);
    x.gConv = double(m.gdn_conv_dim);
    x.gConvW = r.linear_conv_kernel_dim;
    x.sqrelu = r.activation_func == "squared_relu";
    x.weighted_sqrelu = x.sqrelu && r.use_fused_weighted_squared_relu;
    x.ce_te = r.cross_entropy_loss_fusion && r.cross_entropy_fusion_impl == "te";
    x.fp8 = x.te && r.fp8 && !r.fp8->empty();
    x.fp8_delayed = x.fp8 && r.fp8_recipe == "delayed";
    x.qin = x.fp8 ? 1 : x.act;
    if (!worker && isPeft(r)) {
        x.peft = true;
        x.lora = loraTargets(r);
        x.lora_dim = r.peft_dim;
        x.lora_dropout = r.peft_dropout;
    }
    if (isDsaModel(r)) {
        x.ih = double(m.dsa_index_heads);
        x.idim = double(m.dsa_index_head_dim);
        x.skv = x.s * x.cp;
        x.dsa_k = std::min(double(m.dsa_topk), x.skv);
        x.np_pad = flashMlaHeads(x.heads / x.tp);
        x.dsa_loss = r.dsa_indexer_loss_coeff.value_or(0) > 0;
        x.dsa_path = dsaPathOf(r, x);
    }
    return x;
}

// Routed tokens per rank of one MoE layer: tokens x top-k, balanced over the EP ranks (each receives as
// many as it sends), gathered over expert-TP, capped by the capacity factor when one is set.
double routedTokens(const Shape& x)
{
    double routed = x.Tsp * x.topk * (x.sp ? x.etp : 1);
    if (x.capacity > 0)
        routed *= std::min(1.0, x.capacity);
    return routed;
}

// ---------------------------------------------------------------------------------------------------------
// Parameters per layer kind (elements on one rank).
struct ParamCount {
    double dense = 0; // TP-sharded or replicated: sharded over DP by the distributed optimizer
    double expert = 0; // EP/ETP-sharded routed experts: sharded over expert-DP
    double largest = 0;
    double tensors = 0; // a count, in a double as the sizes are: no overflow whatever the recipe says
    double linear = 0; // weights of Transformer Engine's linear modules: what FP8 quantizes
    void add(double n, bool is_expert = false)
    {
        (is_expert ? expert : dense) += n;
        largest = std::max(largest, n);
        ++tensors;
    }
    void addLinear(double n)
    {
        add(n);
        linear += n;
    }
    double total() const { return dense + expert; }
};

ParamCount layerParams(const Shape& x, const LayerKind& kind)
{
    ParamCount p;
    const double t = x.tp;
    auto addNorm = [&](double width) {
        p.add(width);
        if (!x.rms)
            p.add(width);
    };
    if (kind.mixer != LayerMixer::None)
        addNorm(x.h); // input_layernorm (a module, or fused into the first linear)
    if (kind.ffn != LayerFfn::None)
        addNorm(x.h); // pre_mlp_layernorm
    if (isAttentionMixer(kind.mixer)) {
        // DSA layers are AbsorbedMLASelfAttention (absorbed_mla.py:232-388): the same projections and norms
        // as MLA (the DSA rule requires MLA), the kv up-projection's weight read in two halves.
        if (x.mla) {
            const double nh = x.heads;
            if (x.ql > 0) {
                p.addLinear(x.ql * x.h);
                addNorm(x.ql);
                p.addLinear(x.ql * nh * (x.dn + x.dr) / t);
            } else {
                p.addLinear(x.h * nh * (x.dn + x.dr) / t);
            }
            p.addLinear(x.h * (x.kvl + x.dr));
            addNorm(x.kvl);
            p.addLinear(x.kvl * nh * (x.dn + x.dv) / t);
            p.addLinear(nh * x.dv * x.h / t);
        } else {
            p.addLinear((x.heads + 2 * x.groups) * x.kv * x.h / t);
            if (x.qkv_bias)
                p.add((x.heads + 2 * x.groups) * x.kv / t);
            p.addLinear(x.heads * x.kv * x.h / t);
            if (x.qk_norm) { // q_layernorm and k_layernorm: one head wide each, shared by the heads
                addNorm(x.kv);
                addNorm(x.kv);
            }
        }
        if (x.bias)
            p.add(x.h); // linear_proj bias (row-parallel: full width)
        if (kind.mixer == LayerMixer::Dsa) {
            // The DSA indexer (dsa.py:1159-1205 DSAIndexer.__init__): linear_wq_b from the compressed query
            // (the hidden state without Q compression), linear_wk, k_norm (a LayerNorm: weight and bias),
            // linear_weights_proj; all duplicated on every TP rank (parallel_mode "duplicated"). A layer
            // that reuses another's top-k builds none (dsa.py:1580-1584).
            const double qr = x.ql > 0 ? x.ql : x.h;
            p.addLinear(qr * x.ih * x.idim);
            p.addLinear(x.h * x.idim);
            p.add(x.idim);
            p.add(x.idim);
            p.addLinear(x.h * x.ih);
        }
    } else if (kind.mixer == LayerMixer::Mamba) {
        // mamba_mixer.py __init__: in_proj [z x B C dt], the depthwise conv (weight and bias), dt_bias,
        // A_log, D (per head), the gated norm's weight, out_proj; no linear biases (it asserts not bias).
        p.addLinear(x.mIn / t * x.h);
        p.add(x.mConv / t * x.mConvW);
        p.add(x.mConv / t);
        p.add(x.mH / t);
        p.add(x.mH / t);
        p.add(x.mH / t);
        p.add(x.mDi / t);
        p.addLinear(x.mDi / t * x.h);
    } else if (kind.mixer == LayerMixer::GatedDeltaNet) {
        // gated_delta_net/common.py _GDNBase: in_proj [q k v z beta alpha], the conv on q, k, v (no bias),
        // dt_bias and A_log per value head, out_norm over one value head, out_proj.
        p.addLinear(x.gIn / t * x.h);
        p.add(x.gConv / t * x.gConvW);
        p.add(x.gHv / t);
        p.add(x.gHv / t);
        p.add(x.gDv);
        p.addLinear(x.gV / t * x.h);
    }
    const double glu = x.gated ? 2 : 1;
    if (kind.ffn == LayerFfn::Dense) {
        p.addLinear(glu * x.F * x.h / t);
        if (x.bias)
            p.add(glu * x.F / t);
        p.addLinear(x.F * x.h / t);
        if (x.bias)
            p.add(x.h);
    } else if (kind.ffn == LayerFfn::Moe) {
        p.add(x.experts * x.h); // router: [experts, hidden] whatever the latent width (moe/router.py:64-66)
        const double local = x.experts / x.ep; // the rank's local experts (both layouts)
        // The worker keeps one fc1/fc2 per expert; Megatron's grouped GEMM one weight per local expert too.
        // Their input / output width is Hr: moe_latent_size under latent MoE (experts.py:216-220, 238-242
        // at 2a75ac12; mlp.py:215-243 for SequentialMLP's experts).
        p.expert += local * (glu + 1) * x.Fm * x.Hr / x.etp;
        p.linear += local * (glu + 1) * x.Fm * x.Hr / x.etp;
        p.largest = std::max(p.largest, glu * x.Fm * x.Hr / x.etp);
        p.tensors += 2 * local;
        if (x.bias)
            p.add(local * (glu * x.Fm / x.etp + x.Hr), true);
        if (x.L > 0) {
            // fc1_latent_proj [L, h] and fc2_latent_proj [h, L]: TELinear with parallel_mode "duplicated"
            // (whole on every TP rank) and is_expert False, so dense parameters in the dense buffer,
            // sharded over DP by the distributed optimizer (moe_layer.py:264-301 at 2a75ac12).
            p.addLinear(x.L * x.h);
            if (x.bias)
                p.add(x.L);
            p.addLinear(x.h * x.L);
            if (x.bias)
                p.add(x.h);
        }
        if (x.Fs > 0) {
            p.addLinear(glu * x.Fs * x.h / t);
            p.addLinear(x.Fs * x.h / t);
        }
    }
    return p;
}

// ---------------------------------------------------------------------------------------------------------
// LoRA adapters (Megatron layout, PEFT). Bridge wraps each targeted linear in a LoRALinear whose adapter is
// a ParallelLinearAdapter (peft/lora.py, peft/utils.py at 067f987d): linear_in a ColumnParallelLinear [dim
// split over TP, its output gathered] on the base's input, or for a row-parallel base a RowParallelLinear
// on the base's TP-split input (its output all-reduced); linear_out a ColumnParallelLinear [out split over
// TP]. So every adapter holds dim x (in + out) / TP elements (expert-TP for the experts), in the model's
// dtype (ParallelLinearAdapter casts under bf16 / fp16), expert adapters in the expert buffer
// (is_expert). Grouped experts share one adapter per linear on the rank (share_expert_adapters, the
// default); SequentialMLP's experts each have their own linear_fc1 / linear_fc2, so one adapter each.
struct LoraSite {
    LoraLinear linear;
    double in = 0, out = 0; // the base's whole (unsplit) features, as the adapter is built with them
    double tokens = 0; // rows of the base's input
    int region = kOutside; // the recompute region the base runs in
    bool expert = false;
    double count = 1; // adapters of this site on the rank
    bool row = false; // a row-parallel base: the adapter's input is split over TP as the base's is
    // The base's input is normalised inside a TE LayerNormColumnParallelLinear (return_layernorm_output:
    // TE keeps its own ln_out, the adapter the one returned) or reaches a column-parallel base split over
    // the sequence: under SP the adapter keeps a gathered 16-bit copy of its own.
    bool own_copy_under_sp = false;
    bool ln_fused = false;
};

std::vector<LoraSite> loraSites(const Shape& x, const LayerKind& kind)
{
    std::vector<LoraSite> sites;
    if (!x.peft)
        return sites;
    const double T = x.T, Tsp = x.Tsp, h = x.h, glu = x.gated ? 2 : 1;
    const auto site = [&](LoraLinear l, double in, double out, double tokens, int region) -> LoraSite& {
        LoraSite s;
        s.linear = l;
        s.in = in;
        s.out = out;
        s.tokens = tokens;
        s.region = region;
        sites.push_back(s);
        return sites.back();
    };
    if (isAttentionMixer(kind.mixer)) {
        const double nh = x.heads;
        if (!x.mla) {
            LoraSite& q = site(kLoraQkv, h, (x.heads + 2 * x.groups) * x.kv, T, kOutside);
            q.own_copy_under_sp = true;
            q.ln_fused = x.te;
        } else {
            // The down projections run on the rank's own tokens, whole on every TP rank (parallel_mode
            // "duplicated": the adapter skips SP's gather); the up projections after the gather.
            if (x.ql > 0) {
                site(kLoraQDown, h, x.ql, Tsp, kOutside);
                site(kLoraQUp, x.ql, nh * (x.dn + x.dr), T, kMlaUp);
            } else {
                site(kLoraQProj, h, nh * (x.dn + x.dr), T, kMlaUp).own_copy_under_sp = true;
            }
            site(kLoraKvDown, h, x.kvl + x.dr, Tsp, kOutside);
            site(kLoraKvUp, x.kvl, nh * (x.dn + x.dv), T, kMlaUp);
        }
        site(kLoraProj, nh * (x.mla ? x.dv : x.kv), h, T, kOutside).row = true;
    } else if (kind.mixer == LayerMixer::Mamba || kind.mixer == LayerMixer::GatedDeltaNet) {
        const bool mamba = kind.mixer == LayerMixer::Mamba;
        const int region = mamba ? kOutside : kGdn;
        LoraSite& in = site(kLoraInProj, h, mamba ? x.mIn : x.gIn, T, region);
        in.own_copy_under_sp = true;
        in.ln_fused = true;
        site(kLoraOutProj, mamba ? x.mDi : x.gV, h, T, region).row = true;
    }
    if (kind.ffn == LayerFfn::Dense) {
        LoraSite& fc1 = site(kLoraFc1, h, glu * x.F, T, kMlp);
        fc1.own_copy_under_sp = true;
        fc1.ln_fused = x.te;
        site(kLoraFc2, x.F, h, T, kMlp).row = true;
    } else if (kind.ffn == LayerFfn::Moe) {
        const double R = routedTokens(x), local = x.grouped ? 1 : x.experts / x.ep;
        LoraSite& fc1 = site(kLoraFc1, x.Hr, glu * x.Fm, R, kMoe);
        fc1.expert = true;
        fc1.count = local;
        LoraSite& fc2 = site(kLoraFc2, x.Fm, x.Hr, R, kMoe);
        fc2.expert = true;
        fc2.count = local;
        fc2.row = true;
        if (x.Fs > 0) {
            site(kLoraFc1, h, glu * x.Fs, T, kShared).own_copy_under_sp = true;
            site(kLoraFc2, x.Fs, h, T, kShared).row = true;
        }
    }
    sites.erase(std::remove_if(
                    sites.begin(), sites.end(), [&](const LoraSite& s) { return (s.linear & x.lora) == 0; }),
        sites.end());
    return sites;
}

ParamCount loraParams(const Shape& x, const LayerKind& kind)
{
    ParamCount p;
    for (const LoraSite& s : loraSites(x, kind)) {
        const double tp = s.expert ? x.etp : x.tp;
        for (const double n : { x.lora_dim * s.in / tp, s.out / tp * x.lora_dim }) {
            if (s.expert)
                p.expert += s.count * n;
            else
                p.dense += s.count * n;
            p.largest = std::max(p.largest, n);
            p.tensors += s.count;
        }
    }
    return p;
}

// ---------------------------------------------------------------------------------------------------------
// Per-layer tensors. Both builders list the tensors a layer keeps for backward with no recompute, each
// tagged with the region that creates it and the consumers that save it; the regions' checkpoints then
// decide what stays (retainedBytes).

Entry* add(
    LayerModel& m, double bytes, int created, uint32_t savers, uint32_t input_of = 0, bool output = false)
{
    if (bytes <= 0)
        return nullptr;
    m.entries.push_back({ bytes, created, savers, input_of, output });
    return &m.entries.back();
}

// Marks what `e` is kept for: the weight gradient of `linears` (LoraLinear bits), through `savers`; the
// adapter on one of them keeps `adapter_bytes` of it instead (< 0: the tensor itself). Only PEFT reads it.
void wgrad(Entry* e, uint32_t linears, uint32_t savers, double adapter_bytes = -1)
{
    if (!e)
        return;
    e->wgrad_of = linears;
    e->wgrad_savers = savers;
    e->adapter_bytes = adapter_bytes;
}

// A layer model's parameters: their count, its largest tensor's, how many tensors.
void setParams(LayerModel& m, const ParamCount& p)
{
    m.params = p.total();
    m.largest_param = p.largest;
    m.param_tensors = p.tensors;
}

// The worker (backend/engine/model.cpp) on LibTorch 1.13's CPU autograd: what each op saves.
//  - native_layer_norm saves its input, mean and rstd; the worker's RMSNorm (x.float(), pow, mean, rsqrt,
//    mul, cast, mul by the weight) saves the fp32 input, rstd, the normalised fp32 (or 16-bit) product;
//  - linear saves its input; GeLU / SiLU save their input; x * y saves the operands that the other's
//    gradient needs; dropout (1.13 on CPU: input * mask) saves its mask in the input's dtype;
//  - reshape of a narrowed q/k/v view copies it (the views are not mergeable).
void normWorker(LayerModel& m, const Shape& x, double width, int region, uint32_t out_savers,
    uint32_t out_input_of, uint32_t in_savers_extra, bool output_region, double out_bytes = 0)
{
    const double T = x.T, d = x.act;
    // The input: kept by the norm's own backward (LayerNorm's saved input; RMSNorm's fp32 input when the
    // dtype is already fp32) and by the discard state when the region is active.
    if (!x.rms) {
        add(m, T * width * d, kOutside, bit(region) | in_savers_extra, bit(region));
        add(m, 2 * T * d, region, bit(region)); // mean, rstd
    } else if (x.fp32) {
        add(m, T * width * 4, kOutside, bit(region) | in_savers_extra, bit(region));
        add(m, T * 4, region, bit(region)); // rstd
        add(m, T * width * 4, region, bit(region)); // x * rstd, saved by the weight multiply
        // The second fp32 [T, width] tensor the bf16 path keeps too (measured: tst_engine_estimate_hybrid,
        // one more per norm in fp32 as in bf16; the presets' RMSNorm rows are bf16).
        add(m, T * width * 4, region, bit(region));
    } else {
        add(m, T * width * d, kOutside, in_savers_extra, bit(region));
        add(m, T * width * 4, region, bit(region)); // x.float(), saved by pow and mul
        // A second fp32 [T, width] tensor the region keeps: measured on the CPU probe (tst_engine_estimate,
        // the layout rows, where its share no longer hides behind the attention's), not derived.
        add(m, T * width * 4, region, bit(region));
        add(m, T * 4, region, bit(region));
        add(m, T * width * d, region, bit(region)); // (x * rstd).to(dtype), saved by the weight multiply
    }
    // The output, kept by the next linear: under FP8 the worker's TE linear keeps its 1-byte codes instead
    // and the 16-bit output goes (engine/fp8.cpp).
    add(m, T * width * (out_bytes > 0 ? out_bytes : d), region, out_savers, out_input_of, output_region);
}

// Below: each adds its mixer's tensors and returns its kernel's backward moment above them all.
double workerMamba(LayerModel& m, const Shape& x);
double workerGdn(LayerModel& m, const Shape& x);

LayerModel workerLayer(const Shape& x, const LayerKind& kind)
{
    const bool moe = kind.ffn == LayerFfn::Moe;
    LayerModel m;
    // A forward temporary at this moment of the layer (what it keeps so far: the entries added before).
    auto temp = [&m](double bytes) {
        if (bytes > m.forward_temp) {
            m.forward_temp = bytes;
            m.temp_at = m.entries.size();
        }
    };
    // One rank of the layout (engine/model.cpp, Megatron's shares): heads, query groups and FFN widths per
    // TP rank; the rank's sequence chunk s = seq / CP, whose keys and values CP gathers (sk = seq); under
    // SP the residual stream, norms and dropout on T / TP tokens (xs), the column-parallel linears
    // gathering them (GatherLinear keeps the local input) and the row-parallel ones reduce-scattering.
    const double T = x.T, Tsp = x.Tsp, d = x.act, h = x.h, b = x.b, s = x.s, t = x.tp;
    const double nh = x.heads / t, ng = std::max(1.0, x.groups / t), sk = s * x.cp;
    Shape xs = x;
    xs.T = Tsp;
    const uint32_t out = bit(kOutside);
    m.residual = Tsp * h * d;
    const double scores = b * nh * s * sk;
    // A Mamba or GatedDeltaNet mixer's kernel runs its backward once the MLP after it has freed its tensors.
    double mixer_bwd = -1;
    if (kind.mixer == LayerMixer::Mamba)
        mixer_bwd = workerMamba(m, x);
    else if (kind.mixer == LayerMixer::GatedDeltaNet)
        mixer_bwd = workerGdn(m, x);
    const size_t mixer_end = m.entries.size();
    // Once the layer is whole: the mixer kernel's backward moment less what the MLP after it freed.
    auto mixerBackward = [&m, mixer_bwd, mixer_end]() {
        if (mixer_bwd < 0)
            return;
        double later = 0;
        for (size_t i = mixer_end; i < m.entries.size(); ++i)
            later += m.entries[i].bytes;
        m.backward_temp = std::max(m.backward_temp, mixer_bwd - later);
    };
    if (kind.mixer == LayerMixer::Attention) {
        // input_layernorm: its input is the layer input (the previous layer's output).
        uint32_t ln1_savers = out; // linear_qkv / MLA's down projections
        uint32_t ln1_input_of = 0;
        if (x.mla && x.ql == 0) {
            ln1_savers |= bit(kMlaUp); // linear_q_proj inside the up-projection region
            ln1_input_of |= bit(kMlaUp);
        }
        // Under the TE spec a dense norm is fused into the next linear and the layernorm label skips it
        // (RT1): the input norm unless MLA, the pre-MLP norm unless MoE; the worker does the same
        // (engine/model.cpp).
        normWorker(m, xs, h, !x.te || x.mla ? kNorm1 : kOutside, ln1_savers, ln1_input_of, 0, true, x.qin);

        // Attention up to the core: q, k, v as the core sees them.
        double q_elems = 0, k_elems = 0, v_elems = 0;
        if (!x.mla) {
            const double kvw = x.kv;
            // The projection's output: only the core_attn checkpoint keeps it (its inputs are views of it);
            // without it the core copies q, k, v (reshape of narrowed views) and the projection output dies.
            add(m, T * (nh + 2 * ng) * kvw * d, kOutside, 0, bit(kCoreAttn));
            if (x.cp > 1) // CP: k and v gathered over the CP ranks (GatherSeq), the core's inputs
                add(m, 2 * x.cp * T * ng * kvw * d, kOutside, 0, bit(kCoreAttn));
            q_elems = T * nh * kvw;
            k_elems = x.cp * T * nh * kvw; // a copy, or repeat_interleave's output under GQA
            v_elems = x.cp * T * nh * kvw;
            add(m, q_elems * d, kCoreAttn, bit(kCoreAttn));
            add(m, k_elems * d, kCoreAttn, bit(kCoreAttn));
            add(m, v_elems * d, kCoreAttn, bit(kCoreAttn));
        } else {
            const double dq = x.dn + x.dr;
            if (x.ql > 0) {
                // linear_q_down_proj's output feeds q_layernorm (outside every label in the worker).
                normWorker(m, xs, x.ql, kOutside, bit(kMlaUp), bit(kMlaUp), 0, false);
            }
            // linear_kv_down_proj's output [T, kvl + dr]: k_pe is a view of it (an up-region input);
            // kv_layernorm on a narrowed view saves the view itself when the dtype is fp32.
            // The down projections run on the rank's local tokens (Tsp); under SP k_pos_emb is gathered
            // (GatherSeq, a tensor of its own, the up region's input instead of the view).
            add(m, Tsp * (x.kvl + x.dr) * d, kOutside, x.fp32 ? (x.rms ? out : 0) : 0,
                x.sp ? 0 : bit(kMlaUp));
            if (x.sp)
                add(m, T * x.dr * d, kOutside, 0, bit(kMlaUp));
            if (x.rms && x.fp32) {
                add(m, Tsp * 4, kOutside, out);
                add(m, Tsp * x.kvl * 4, kOutside, out);
            } else if (x.rms) {
                add(m, Tsp * x.kvl * 4, kOutside, out);
                add(m, Tsp * x.kvl * 4, kOutside, out); // the second fp32 tensor of normWorker (measured)
                add(m, Tsp * 4, kOutside, out);
                add(m, Tsp * x.kvl * d, kOutside, out);
            } else {
                add(m, Tsp * x.kvl * d, kOutside, out); // LayerNorm's contiguous copy of the narrowed input
                add(m, 2 * Tsp * d, kOutside, out);
            }
            add(m, Tsp * x.kvl * d, kOutside, bit(kMlaUp),
                bit(kMlaUp)); // kv_layernorm output -> linear_kv_up
            q_elems = T * nh * dq;
            k_elems = x.cp * T * nh * dq;
            v_elems = x.cp * T * nh * x.dv;
            // query, key (cat of the no-PE part and RoPE), value (contiguous): the up region's outputs; under
            // CP the core saves the gathered key and value instead (GatherSeq outside the up region).
            const uint32_t kv_savers = x.cp > 1 ? 0 : bit(kCoreAttn);
            add(m, q_elems * d, kMlaUp, bit(kCoreAttn), bit(kCoreAttn), true);
            add(m, T * nh * dq * d, kMlaUp, kv_savers, kv_savers, true);
            add(m, T * nh * x.dv * d, kMlaUp, kv_savers, kv_savers, true);
            if (x.cp > 1) {
                add(m, k_elems * d, kOutside, bit(kCoreAttn), bit(kCoreAttn));
                add(m, v_elems * d, kOutside, bit(kCoreAttn), bit(kCoreAttn));
            }
            const double up_q = T * nh * dq * d, up_kv = T * nh * (x.dn + x.dv) * d;
            temp(up_q + up_kv);
        }
        if (x.backend == "unfused") {
            // Scores (core/attention_softmax.h says which softmax). The torch path keeps the softmax's
            // output, fp32 under attention_softmax_in_fp32 (the worker converts the 16-bit scores) and its
            // 16-bit cast for P x V; Megatron's fused kernel keeps only its 16-bit probabilities, which P x V
            // (or dropout) reads too. Then the dropout mask and the dropped probabilities (kept by P x V).
            const double softmax_bytes = (x.fused_softmax || !x.softmax_fp32) ? d : 4;
            add(m, scores * softmax_bytes, kCoreAttn, bit(kCoreAttn));
            if (x.attn_dropout > 0) {
                add(m, scores * d, kCoreAttn, bit(kCoreAttn)); // mask
                add(m, scores * d, kCoreAttn, bit(kCoreAttn)); // dropped probabilities
            } else if (softmax_bytes != d) {
                add(m, scores * d, kCoreAttn, bit(kCoreAttn)); // 16-bit probabilities for P x V
            }
            if (!x.fused_softmax && !x.fp32) {
                // The torch path on 16-bit scores. Forward: under attention_softmax_in_fp32 the fp32 copy of
                // the scores, alive beside the softmax's output until the head returns (and the 16-bit cast
                // beside the dropout mask and output); else the 16-bit scores. Backward: two fp32 tensors of
                // the scores' size at once (the probabilities' gradient and the softmax's input gradient:
                // LibTorch 1.13's CPU softmax backward of bf16 goes through fp32 too), once P x V's (and
                // dropout's) saved tensors have gone (measured: tst_engine_estimate
                // unfusedSoftmaxWithinFivePercent).
                const double freed = x.attn_dropout > 0 ? 2 * d : d;
                const double copy = softmax_bytes == 4 ? 4 + (x.attn_dropout > 0 ? d : 0) : d;
                temp(scores * copy);
                m.backward_temp = 2 * m.residual + scores * (8 - freed);
                m.bwd_at = m.entries.size();
                m.bwd_at_temp = m.backward_temp;
            } else if (!x.fp32) {
                // The kernel: the 16-bit scores beside its output (its fp32 rows are a small slice at a
                // time).
                temp(scores * d);
            } else {
                temp(scores * 2 * d);
            }
        } else {
            // LibTorch 1.13's math path of _scaled_dot_product_attention (CPU): the softmax in the dtype,
            // dropout's mask and output; at the softmax the scores it is taken of and the causal masks
            // ([sq, sk] bool and in the dtype) are alive beside it.
            add(m, scores * d, kCoreAttn, bit(kCoreAttn));
            temp(scores * d + s * sk * (1 + d));
            if (x.attn_dropout > 0) {
                add(m, scores * d, kCoreAttn, bit(kCoreAttn));
                add(m, scores * d, kCoreAttn, bit(kCoreAttn));
            }
            // The math path keeps its softmax and q, k, v (or their copies) only: the CPU probe's layout rows
            // (tst_engine_estimate) show no further buffer; with Q compression an fp32 [T, q_lora_rank]
            // buffer of q_layernorm (measured, not derived).
            if (x.mla)
                add(m, Tsp * x.ql * 4, kOutside, out);
        }
        // The context, laid out [s, b, np * hv] (a copy), kept by linear_proj: under FP8 with delayed
        // scaling as its 1-byte codes, the copy freed (engine/fp8.cpp; other recipes keep the context).
        add(m, T * nh * (x.mla ? x.dv : x.kv) * (x.fp8_delayed ? 1 : d), kCoreAttn, out, 0, true);
        if (x.sp) // the gathered input of a column-parallel linear, the row-parallel output before its
                  // scatter
            temp(T * h * d);
        if (x.hidden_dropout > 0)
            add(m, Tsp * h * d, kOutside, out); // dropout mask after the attention
    } // the attention
    if (kind.ffn == LayerFfn::None) {
        mixerBackward();
        setParams(m, layerParams(x, kind));
        return m;
    }
    // pre_mlp_layernorm: its input is the residual after attention.
    uint32_t ln2_savers = 0, ln2_input_of = 0;
    if (moe) {
        ln2_savers = bit(kMoe) | (x.Fs > 0 ? bit(kShared) : 0);
        ln2_input_of = bit(kMoe) | (x.Fs > 0 ? bit(kShared) : 0);
    } else {
        ln2_savers = bit(kMlp);
        // Under the TE spec the norm is linear_fc1's (TELayerNormColumnParallelLinear): made inside the mlp
        // checkpoint, whose input is the residual (transformer_layer.py: pre_mlp_layernorm is an IdentityOp).
        ln2_input_of = x.te ? 0 : bit(kMlp);
    }
    // (A dense layer's FC1 keeps the norm's output, as codes under FP8; the MoE router keeps it in 16 bits.)
    normWorker(m, xs, h, !x.te || moe ? kNorm2 : kMlp, ln2_savers, ln2_input_of, 0, true, moe ? d : x.qin);

    const double glu = x.gated ? 2 : 1;
    if (!moe) {
        const double F = x.F / t;
        add(m, T * glu * F * d, kMlp, bit(kMlp)); // FC1's output (kept by the activation)
        if (x.gated && !x.fused_act)
            add(m, T * F * d, kMlp, bit(kMlp)); // silu(a), kept by silu(a) * b (eager only)
        add(m, T * F * x.qin, kMlp, bit(kMlp)); // the activation, kept by FC2 (its codes under FP8)
        temp(T * h * d);
    } else {
        // The router on the rank's local tokens (Tsp); R routed slots reach the rank's local experts (from
        // every EP rank, uniform routing; gathered over expert-TP under SP), FFN / expert-TP wide.
        // Latent MoE (engine/model.cpp moeLayer): fc1_latent_proj's output, the tokens the slots index, and
        // everything routed are Hr = L wide; its input is the norm's output the router keeps already.
        const double R = routedTokens(x), Fm = x.Fm / x.etp, Hr = x.Hr;
        const double E = x.experts;
        add(m, Tsp * x.topk * 8, kMoe, bit(kMoe)); // top-k indices (TopkBackward)
        add(m, Tsp * x.topk * 4, kMoe, bit(kMoe)); // softmax over the chosen k (fp32)
        add(m, R * 8, kMoe, bit(kMoe)); // sort order (index_select of the probabilities)
        add(m, R * 8, kMoe, bit(kMoe)); // token of each routed slot (index_select, the combine's scatter_add)
        add(m, R * Hr * x.qin, kMoe, bit(kMoe)); // permuted tokens, kept by each expert's FC1 (FP8: codes)
        add(m, R * glu * Fm * d, kMoe, bit(kMoeAct), bit(kMoeAct)); // FC1's output
        add(m, R * d, kMoe, bit(kMoeAct), bit(kMoeAct)); // permuted probabilities
        if (!x.fused_act
            && !x.weighted_sqrelu) { // the fused function keeps FC1's output and the probabilities only
            if (x.gated)
                add(m, R * Fm * d, kMoeAct, bit(kMoeAct)); // silu(a)
            add(m, R * Fm * d, kMoeAct, bit(kMoeAct)); // act(a) [* b], kept by the multiply by probs
        }
        // The region's output, kept by FC2; under FP8 its codes, which moe_act discards with the output
        // (engine/model.cpp: OutputDiscardCheckpoint::alsoDiscard) where the experts are grouped; the
        // per-expert linears keep theirs.
        if (x.fp8 && !x.grouped)
            add(m, R * Fm, kMoe, bit(kMoe));
        else
            add(m, R * Fm * x.qin, kMoeAct, bit(kMoe), 0, true);
        // GroupedMLP's CPU fallback (PaddedGroupedLinear) keeps each FC's padded row indices; under FP8 the
        // experts run fp8.cpp's grouped linear, which keeps its split sizes on the host.
        if (x.grouped && !x.fp8)
            add(m, 2 * R * 8, kMoe, bit(kMoe));
        // The layer's largest moment is the combine (engine/model.cpp moeLayer: scatter_add into
        // zeros_like(source)): every local of moeLayer and layerForward is alive until they return, saved
        // or not. Beside the saved tensors: the attention's output and the residual after it (layerForward),
        // the router's logits and 16-bit probabilities, under SP with expert-TP the gathered tokens,
        // probabilities and repeated expert ids, each slot's token, the experts' output [R, h], and the
        // combine's zeros and result [tokens gathered, h]; the per-expert loop's concatenation (its pieces
        // beside the result) where larger. One int64 [R] more with grad (measured: the TP 8 SP x EP 8 rows
        // of tst_engine_estimate_layout, the MoE layer's replay in backward).
        const double pre_temp = m.forward_temp; // the attention's moment
        const size_t pre_at = m.temp_at;
        const double gather = x.sp ? x.etp : 1; // as routedTokens
        const double Tg = Tsp * gather;
        double live = 2 * Tsp * h * d + Tsp * E * d + Tsp * x.topk * d + R * 8;
        if (x.L > 0)
            live += Tsp * x.L * d; // fc1_latent_proj's output
        if (gather > 1)
            live += Tg * Hr * d + R * d + R * 8;
        else if (x.ep > 1)
            live += Tsp * x.topk * 8; // the local expert of each slot (remainder)
        const double combine = std::max(2 * Tg * Hr * d, x.grouped ? 0.0 : R * Hr * d);
        live += R * Hr * d + combine;
        temp(live + R * 8);
        if (x.L > 0 && x.fp8) // fc1_latent_proj's codes of the norm's output (the router keeps it in 16 bits)
            add(m, Tsp * h, kMoe, bit(kMoe));
        if (x.L > 0) {
            // fc2_latent_proj keeps the combined [Tsp, L] and writes [Tsp, h] beside it, the combine's zeros
            // gone.
            add(m, Tsp * x.L * x.qin, kMoe, bit(kMoe));
            temp(live - combine + R * 8 + Tsp * h * d);
        }
        // Without grad (a checkpointed unit's forward) the same moment holds the layer's locals that grad
        // would save: the two norms' outputs, the routing indices, permuted tokens and probabilities, FC1's
        // and the activation's outputs, the grouped fallback's row indices (the unfused activation's
        // intermediates and the fp32 softmax of the chosen k are gone by then).
        const double moe_locals = 2 * Tsp * h * d + Tsp * x.topk * 8 + 2 * R * 8 + R * Hr * d
            + R * glu * Fm * d + R * d + R * Fm * d + (x.grouped ? 2 * R * 8 : 0) + Tsp * x.L * d;
        m.nograd_peak = std::max(
            live + moe_locals, pre_temp + (pre_at == SIZE_MAX ? 0 : m.retainedUpTo(Active {}, pre_at)));
        if (x.Fs > 0) {
            const double Fs = x.Fs / t;
            if (x.fp8) // the shared FC1's codes of the norm's output, which the router keeps in 16 bits
                add(m, T * h, kShared, bit(kShared));
            add(m, T * glu * Fs * d, kShared, bit(kShared));
            if (x.gated && !x.fused_act)
                add(m, T * Fs * d, kShared, bit(kShared));
            add(m, T * Fs * x.qin, kShared, bit(kShared)); // kept by the shared FC2 (its codes under FP8)
            // Latent MoE: the shared expert's FC2 output and the sum beside fc2_latent_proj's output.
            if (x.L > 0)
                temp(live - combine + R * 8 + 3 * Tsp * h * d);
        }
    }
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * d, kOutside, out); // dropout mask after the MLP
    mixerBackward();
    setParams(m, layerParams(x, kind));
    return m;
}

// The worker's state-space kernels in LibTorch ops (engine/ssm.cpp), their largest moments above the
// tensors alive before the call: the forward's (without grad inside the custom function) and the backward's
// (the replay with grad, before autograd's pass through it). Derived from ssm.cpp statement by statement
// and checked against the CPU probe at marks between the statements (issue 27: the figures below within
// 1 % of the probe at 11 Mamba and 10 GatedDeltaNet shapes, fp32 and bf16, 6 % at one padded GatedDeltaNet
// shape); tst_engine_estimate_hybrid checks the layers they sit in. Not Megatron's: its Triton kernels
// keep their chunk states and matrices in SRAM and HBM scratch far smaller than these.
struct KernelPeaks {
    double forward = 0, backward = 0;
};

// MambaSplitConv1dScanFn with ssdChunkScan: the conv's fp32 chain, then the scan's tensors as they come
// (fp32 copies of x, B, C in bf16; the cumsum of dA and x dt; each chunk's state, the entering states and
// their stack; C^T B; the decay matrix; the diagonal, off-diagonal and summed outputs), each moment with the
// einsum's products beside them. The replay with grad keeps the conv's fp32 input and pre-SiLU output, the
// gate's gradients, and each einsum's product and permuted copy; its worst moment is its end, or autograd's
// pass once the decay matrix's gradient and its product's are in flight.
KernelPeaks mambaKernelPeaks(const Shape& x)
{
    const double t = x.tp, d = x.act, H = x.mH / t, G = x.mG / t, P = x.mP, N = x.mN, Q = x.mChunk;
    const double n = std::ceil(x.s / Q); // chunks per sequence
    const double Tp = x.b * n * Q; // tokens padded to whole chunks
    const bool bf = d < 4;
    const double X = Tp * H * P * 4, TH = Tp * H * 4, THN = Tp * H * N * 4, TGN = Tp * G * N * 4;
    const double S = x.b * n * H * P * N * 4, CB = Tp * G * Q * 4, decay = Tp * H * Q * 4;
    const double conv = x.T * x.mConv / t * 4; // the conv's fp32 [T, channels]
    const double copies = bf || Tp > x.T ? X + 2 * TGN : 0; // x, B, C in fp32 (or padded)
    const double regroup = G > 1 ? TGN : 0; // C or B permuted for an einsum (no copy with one group)
    KernelPeaks k;
    double live = x.T * x.mConv / t * d + 2 * TH + copies + X; // xBC, dt, the copies, dA cumsum, x dt
    k.forward = std::max(4 * conv, live + 2 * TH + 2 * THN + X + S);
    live += 3 * S + S / n + CB; // states, entering states and their stack, the last state; C^T B
    k.forward = std::max({ k.forward, live + 3 * decay, live + 2 * decay + 2 * X });
    live += decay + X; // the decay matrix, the diagonal part
    k.forward = std::max(k.forward, live + 2 * X + TH);
    live += X; // the off-diagonal part
    k.forward = std::max(k.forward, live + 3 * X);
    double replay = (bf ? 2 * conv + conv / 2 : 3 * conv) + 2 * TH + (bf ? 3 : 2) * X + copies + TH + X;
    replay += S + X + THN + TH; // the states with the einsum's product and x dt's copy
    replay += 2 * S + S / n + CB + 2 * regroup; // entering states, their stack, the last; C^T B (C, B copies)
    replay += 2 * decay + 2 * X + 2 * X + regroup + TH + X; // y_diag, y_off with their saved inputs, y
    k.backward = std::max(replay + 2 * X, replay - 3 * X - S + 2 * decay + CB);
    return k;
}

// ChunkGatedDeltaRuleFn with gdrChunked (chunk kGdnChunk): q, k beta and v beta in fp32 (k and beta copied
// in bf16 or when padded), the decay matrices L, K K^T o L and the solve's result per chunk, A in k's dtype,
// u and w, then the loop over chunks (the attention chain of one chunk beside the outputs so far) and the
// stack. The replay with grad keeps each product and the chunk loop's pieces; its end is its worst moment
// (unbind's backward stacks the chunks' gradients once).
KernelPeaks gdrKernelPeaks(const Shape& x)
{
    const double t = x.tp, d = x.act, H = x.gHv / t, K = x.gDk, V = x.gDv, C = kGdnChunk;
    const double n = std::ceil(x.s / C);
    const double Tp = x.b * n * C, T = x.T;
    const bool bf = d < 4, copy = bf || Tp > T;
    const double TC = Tp * H * C * 4, TK = Tp * H * K * 4, TV = Tp * H * V * 4, TH = Tp * H * 4;
    const double S0 = x.b * H * K * V * 4, masks = C * C * 4 + 2 * C * C;
    KernelPeaks k;
    double live = T * H * 4 + 2 * TK + TV + (copy ? TK + TH : 0); // g's cumsum, q, k beta, v beta
    k.forward = live + 4 * TC + masks;
    live += 3 * TC + masks;
    const double a_out
        = bf ? T * H * C * d : (n > 1 ? TC : 0); // A permuted to [T, H, C] (a view if one chunk)
    k.forward = std::max({ k.forward, live + TC, live + TC + a_out });
    live += a_out + TV + TK + S0; // A, u, w, the state
    k.forward = std::max({ k.forward, live + (n - 1) / n * TV + 3 * TC / n, live + 3 * TV });
    k.backward = 2 * TK + TV + (copy ? TK + TV + TH : 0) + 3 * TC + masks + (n > 1 ? 2 * TK : 0) + 2 * TC + TV
        + (n > 1 ? TV : 0) + 2 * TK + TH + S0 + 2 * TC + 2 * TV + 4 * TK + n * S0 + 2 * TH - TK / n + TV;
    return k;
}

// The worker's Mamba layer (engine/model.cpp mambaMixer, engine/ssm.cpp): its norm (the worker's, fused into
// in_proj by Megatron's spec), zxbcdt in [b, l, d], then what MambaSplitConv1dScanFn keeps (zxbcdt, out_x),
// the gated RMSNorm's input (a [l, b, d] copy) and rstd, out_proj's input: mamba_ssm's own set. The scan's
// moment comes once zxbcdt exists; its backward once the norm and out_proj have freed theirs, with the
// gradient of its output beside it.
double workerMamba(LayerModel& m, const Shape& x)
{
    const double d = x.act, h = x.h, t = x.tp, T = x.T;
    const uint32_t out = bit(kOutside);
    Shape xs = x;
    xs.T = x.Tsp;
    normWorker(m, xs, h, kOutside, out, 0, 0, false);
    add(m, T * x.mIn / t * d, kOutside, out); // zxbcdt
    const KernelPeaks k = mambaKernelPeaks(x);
    m.forward_temp = k.forward;
    m.temp_at = m.entries.size();
    add(m, T * x.mDi / t * d, kOutside, out); // out_x
    add(m, T * x.mDi / t * d, kOutside, out); // the gated norm's input
    add(m, T * x.mG / t * 4, kOutside, out); // its rstd
    add(m, T * x.mDi / t * d, kOutside, out); // its output, out_proj's input
    if (x.hidden_dropout > 0)
        add(m, x.Tsp * h * d, kOutside, out);
    const double later
        = 2 * T * x.mDi / t * d + T * x.mG / t * 4 + (x.hidden_dropout > 0 ? x.Tsp * h * d : 0);
    return 2 * m.residual + T * x.mDi / t * d + k.backward - later;
}

// The worker's GatedDeltaNet (engine/model.cpp gdnMixer): its norm, in_proj's whole output (the conv keeps
// its q k v as the strided view FLA keeps), the L2 norm's output and rstd, q and k repeated (or copied), v,
// the fp32 decay (softplus input and output), beta, the gate; then the kernel's (the cumsum of g, A); the
// gated norm (the worker's RMSNorm on the kernel's output per value head, the SiLU gate's inputs) and
// out_proj's input. At the kernel's moment the conv's output and g are locals still alive; at its backward
// the gate's gradient has reached in_proj's output (a zero-filled [T, in_proj] from the narrow) beside the
// kernel output's gradient, and the kernel's replay runs a quarter of the heads at a time (engine/ssm.cpp)
// into whole-size gradients of q, k, v, the cumsum of g and beta.
double workerGdn(LayerModel& m, const Shape& x)
{
    const double d = x.act, h = x.h, t = x.tp, T = x.T;
    const double hv = x.gHv / t, hk = x.gHk / t;
    Shape xs = x;
    xs.T = x.Tsp;
    normWorker(m, xs, h, kGdn, bit(kGdn), 0, 0, false);
    add(m, T * x.gIn / t * d, kGdn, bit(kGdn)); // in_proj's output, kept by the conv's view of q k v
    add(m, T * 2 * x.gQk / t * d, kGdn, bit(kGdn)); // l2norm's output
    add(m, T * 2 * hk * 4, kGdn, bit(kGdn)); // its rstd
    add(m, x.gHv > x.gHk ? 2 * T * hv * x.gDk * d : 2 * T * x.gQk / t * d, kGdn, bit(kGdn)); // q, k
    add(m, T * x.gV / t * d, kGdn, bit(kGdn)); // v
    add(m, 2 * T * hv * 4, kGdn, bit(kGdn)); // softplus's input and output
    add(m, T * hv * d, kGdn, bit(kGdn)); // beta
    // The gate, kept by the SiLU gate and by the gdn_norm_out checkpoint.
    add(m, T * x.gV / t * d, kGdn, bit(kGdnNorm), bit(kGdnNorm));
    const KernelPeaks k = gdrKernelPeaks(x);
    Shape quarter = x; // the backward's replay: ceil(heads / 4) value heads at a time
    quarter.gHv = std::ceil(hv / 4) * t;
    const double replay = gdrKernelPeaks(quarter).backward
        + T * hv * (2 * x.gDk * d + x.gDv * d + 4 + d); // dq, dk, dv, the cumsum's and beta's, whole
    m.forward_temp = T * x.gConv / t * d + T * hv * 4 + k.forward;
    m.temp_at = m.entries.size();
    add(m, T * hv * 4, kGdn, bit(kGdn)); // the cumsum of g
    add(m, T * hv * kGdnChunk * d, kGdn, bit(kGdn)); // A
    // The gated norm on the kernel's output (its input kept by the checkpoint only: the worker's RMSNorm
    // keeps an fp32 copy).
    const size_t norm_from = m.entries.size();
    Shape xv = x;
    xv.T = T * hv; // one row per value head
    normWorker(m, xv, x.gDv, kGdnNorm, bit(kGdnNorm), 0, 0, false);
    add(m, T * x.gV / t * d, kGdnNorm, bit(kGdn), 0, true); // the gated output, out_proj's input
    if (x.hidden_dropout > 0)
        add(m, x.Tsp * h * d, kOutside, bit(kOutside));
    double later = T * x.gV / t * d; // the gate
    for (size_t i = norm_from; i < m.entries.size(); ++i)
        later += m.entries[i].bytes;
    return 2 * m.residual + T * (x.gIn + x.gV) / t * d + replay - later;
}

// Megatron Core on a GPU. Where Korthikanti et al. (2022, "Reducing Activation Recomputation in Large
// Transformer Models", Table 2) gives the term, the comment says so; the rest follows the module that
// allocates it.
// The input norm fused into the first linear (TELayerNormColumnParallelLinear: it keeps its input, the
// statistics and the normalised output for the weight gradient), as a hybrid stack's Mamba and
// GatedDeltaNet layers have it (hybrid_layer_specs.py in_proj).
void megatronFusedNorm(LayerModel& m, const Shape& x, uint32_t out_savers, uint32_t input_of)
{
    const double d = x.act, h = x.h, Tsp = x.Tsp;
    add(m, Tsp * h * d, kOutside, bit(kOutside) | out_savers, input_of); // the layer input [Korthikanti]
    add(m, 2 * Tsp * 4, kOutside, bit(kOutside) | out_savers);
    // the normalised output, kept for in_proj's weight gradient
    wgrad(add(m, Tsp * h * d, kOutside, bit(kOutside) | out_savers), kLoraInProj, bit(kOutside) | out_savers);
}

// A Mamba layer (ssm/mamba_layer.py, mamba_mixer.py _ssm_training with use_mamba_mem_eff_path, Megatron's
// default) as mamba_ssm's kernels keep it: MambaSplitConv1dScanCombinedFn (ops/triton/ssd_combined.py)
// saves the in_proj output zxbcdt and the scan's ungated output out_x (it recomputes the conv in
// backward); the gated RMSNorm (ops/triton/layernorm_gated.py LayerNormFn, called with z=None) keeps its
// input and rstd per group; out_proj keeps the norm's output. No recompute label reaches inside it.
void megatronMamba(LayerModel& m, const Shape& x)
{
    const double d = x.act, h = x.h, t = x.tp, T = x.T, Tsp = x.Tsp;
    const uint32_t out = bit(kOutside);
    megatronFusedNorm(m, x, 0, 0);
    add(m, T * x.mIn / t * d, kOutside, out); // zxbcdt [b, l, 2 d_inner + 2 G N + H]
    add(m, T * x.mDi / t * d, kOutside, out); // out_x: the scan's output before the gate
    add(m, T * x.mDi / t * d, kOutside, out); // y = out_x * silu(z): the norm's input
    add(m, T * x.mG / t * 4, kOutside, out); // the norm's rstd, fp32 per group
    wgrad(add(m, T * x.mDi / t * d, kOutside, out), kLoraOutProj, out); // the norm's output, out_proj's input
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * 1, kOutside, out); // mamba_bda's dropout mask
    // Inside the fused scan (forward): the activated conv output x B C, the chunk states (fp32, one
    // [H, P, N] per chunk), C^T B per chunk (fp32) and the per-head cumulative decay and dt (fp32).
    const double chunks = std::ceil(x.s / x.mChunk) * x.b;
    const double xbc = T * x.mConv / t * d;
    const double states = chunks * x.mH / t * x.mP * x.mN * 4;
    const double cb = chunks * x.mG / t * x.mChunk * x.mChunk * 4;
    m.forward_temp = std::max(m.forward_temp, xbc + states + cb + 2 * T * x.mH / t * 4);
    m.temp_at = m.entries.size();
    // Its backward: the conv recomputed, dzxbcdt and dxBC, the states and their gradient, C^T B.
    m.backward_temp = std::max(m.backward_temp,
        2 * m.residual + xbc + T * x.mIn / t * d + xbc + 2 * states + cb + T * x.mDi / t * d);
}

// A GatedDeltaNet module (ssm/gated_delta_net/gdn.py, common.py) with FLA's kernels: the causal conv
// (fla.modules.conv causal_conv1d: input_guard leaves x as passed, no_guard_contiguous=["x"], and the
// function keeps it, a strided view of in_proj's output, so the whole [q k v z b a] lives), the L2 norm of q
// and k (L2NormFunction: its output and rstd), q and k repeated to the value heads, v, the decay g and beta
// as chunk_gated_delta_rule keeps them (with its [T, heads, 64] solved matrix A), the output gate z; then
// _gated_norm_and_a2a (the gdn_norm_out region): the out_norm's input and rstd, its output kept by the gate
// multiply, the gated output kept by out_proj. The whole module is the gdn region (dev).
void megatronGdn(LayerModel& m, const Shape& x)
{
    const double d = x.act, h = x.h, t = x.tp, T = x.T, Tsp = x.Tsp;
    const uint32_t out = bit(kOutside);
    const double hv = x.gHv / t, hk = x.gHk / t;
    // gdn_norm_out's region lies inside gdn's (the label table's parent): entries saved inside the module
    // name kGdn, those of the gated norm kGdnNorm.
    // The module's input is the layer input (in_proj fuses the input norm): the gdn checkpoint keeps it.
    add(m, Tsp * h * d, kOutside, bit(kGdn), bit(kGdn));
    add(m, 2 * Tsp * 4, kGdn, bit(kGdn));
    wgrad(add(m, Tsp * h * d, kGdn, bit(kGdn)), kLoraInProj, bit(kGdn)); // the normalised input, for wgrad
    add(m, T * x.gIn / t * d, kGdn, bit(kGdn)); // in_proj's output, kept by the conv's view of q k v
    add(m, T * 2 * x.gQk / t * d, kGdn, bit(kGdn)); // l2norm's output
    add(m, T * 2 * hk * 4, kGdn, bit(kGdn)); // l2norm's rstd (fp32)
    // q and k for the kernel: repeated to the value heads, or contiguous copies of the l2norm's halves.
    const double qk_kernel = x.gHv > x.gHk ? 2 * T * hv * x.gDk * d : 2 * T * x.gQk / t * d;
    add(m, qk_kernel, kGdn, bit(kGdn));
    add(m, T * x.gV / t * d, kGdn, bit(kGdn)); // v (contiguous copy)
    add(m, T * hv * 4 * 2, kGdn, bit(kGdn)); // g: the gate's fp32 decay (softplus) and its chunk cumsum
    add(m, T * hv * d, kGdn, bit(kGdn)); // beta = sigmoid(b)
    add(m, T * hv * kGdnChunk * d, kGdn, bit(kGdn)); // A: the solved (I + A)^-1 per chunk
    add(m, T * x.gV / t * d, kGdn, bit(kGdnNorm), bit(kGdnNorm)); // core_attn_out: out_norm's input
    add(m, T * x.gV / t * d, kGdn, bit(kGdnNorm), bit(kGdnNorm)); // the gate z (contiguous)
    add(m, T * hv * 4, kGdnNorm, bit(kGdnNorm)); // out_norm's rstd per value head
    add(m, T * x.gV / t * d, kGdnNorm, bit(kGdnNorm)); // out_norm's output, kept by the gate multiply
    wgrad(add(m, T * x.gV / t * d, kGdnNorm, bit(kGdn), 0, true), kLoraOutProj,
        bit(kGdn)); // the gated output, out_proj's input
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * 1, kOutside, out);
    // Inside the kernel: w and u ([T, Hv, K] and [T, Hv, V]), the chunk states h (one [Hv, K, V] per
    // chunk, 16-bit) and v_new.
    const double chunks = std::ceil(x.s / kGdnChunk) * x.b;
    const double states = chunks * hv * x.gDk * x.gDv * d;
    m.forward_temp = std::max(m.forward_temp, T * hv * (x.gDk + 2 * x.gDv) * d + states);
    m.temp_at = m.entries.size();
    m.backward_temp
        = std::max(m.backward_temp, 2 * m.residual + 2 * states + T * hv * (2 * x.gDk + 3 * x.gDv) * d);
}

// Rows of a chunk that fits `max_bytes` at `bytes_per_row`, rounded down to `alignment` where the budget
// allows (dsa_cudnn_kernels.py:402 _bytes_to_chunk_rows).
double chunkRows(double rows, double bytes_per_row, double max_bytes, double alignment)
{
    double chunk = std::max(1.0, std::floor(max_bytes / std::max(1.0, bytes_per_row)));
    if (chunk >= alignment)
        chunk = std::floor(chunk / alignment) * alignment;
    return std::min(rows, chunk);
}

// A DSA layer (Megatron Core at bridge-pin 2a75ac12; guide's and main's DSA files are the same, dev's differ)
// on the cuDNN / FlashMLA path (dsaPathOf): AbsorbedMLASelfAttention (absorbed_mla.py) whose core is
// DSAttention (dsa.py). `indexer`: the layer computes its own top-k (else it reuses an earlier layer's:
// dsa_indexer_topk_freq > 1). With sharing a computing layer runs FusedQKTopKWithSparseLossFunc and
// FusedSparseAttentionFunc instead of FusedIndexerSparseAttnFunc (dsa.py:2037, :2124): the same tensors kept
// (the first keeps the indexer's gradients, the second the rest), FlashMLA's forward run twice. Tensors of
// the rank: T query rows (s / CP x b, gathered from SP), keys S = s x CP (allgather CP gathers them:
// dsa.py:1835), np heads per TP rank padded to FlashMLA's npad, K = top-k. Integer widths of the cuDNN and
// FlashMLA outputs that Megatron does not fix (the top-k indices, the kernels' gradients) are taken as
// Megatron converts them (int32: .int(), dsa_cudnn_kernels.py:1294, :1304, :1044) or as the input's dtype;
// the kernels' own workspaces are not Megatron's tensors and are left out (as cuBLAS's are), except the top-k
// wrapper's scratch, which Megatron itself budgets (dsa_cudnn_kernels.py:132-134). Taken as the GLM-5.x
// recipes have them: qk_layernorm on (the q / kv norms are modules; not a recipe field), 16-bit linear inputs
// (fp8's quantized copies in the DSA layer are not counted).
void megatronDsa(LayerModel& m, const Shape& x, bool indexer)
{
    m.replay_forward_moment = true;
    const double d = x.act, h = x.h, t = x.tp, T = x.T, Tsp = x.Tsp, b = x.b, s = x.s, S = x.skv;
    const double np = x.heads / t, npad = x.np_pad, K = x.dsa_k, ih = x.ih, id = x.idim;
    const double kvl = x.kvl, dr = x.dr, kw = x.kvl + x.dr; // the latent key's width (kv_lora_rank + RoPE)
    const double qw = x.ql > 0 ? x.ql : h; // the indexer's qr: the compressed query, else the hidden state
    const uint32_t out = bit(kOutside);
    // At TP 1 the indexer's linears save the attention's own hidden state and compressed query (dsa.py:1286,
    // :1296, :1319); under SP they save the gathered copies (:1274-1275) made inside the core.
    const uint32_t idx_saver = indexer && t == 1 ? bit(kCoreAttn) : 0;
    const bool loss = indexer && x.dsa_loss; // the indexer's KL loss, in a forward with grad (dsa.py:1892)

    // input_layernorm is a module (the DSA spec does not fuse it: experimental_attention_variant_module_specs
    // .py:143): the layer input, the statistics, its output. The output (hidden_states) feeds both down
    // projections (absorbed_mla.py:461, :482), the core_attn checkpoint as x (:737), and without Q
    // compression the q projection inside the up-projection region (:473, :544).
    add(m, Tsp * h * d, kOutside, bit(kNorm1), bit(kNorm1));
    add(m, 2 * Tsp * 4, kNorm1, bit(kNorm1));
    const uint32_t up_of_hidden = x.ql > 0 ? 0 : bit(kMlaUp);
    // Under PEFT: the down projections', linear_q_proj's and the indexer's linears' (frozen, unnamed) input.
    wgrad(add(m, Tsp * h * d, kNorm1, out | idx_saver | up_of_hidden, bit(kCoreAttn) | up_of_hidden, true),
        (x.ql > 0 ? kLoraQDown : kLoraQProj) | kLoraKvDown | kLoraUnnamed, out | idx_saver | up_of_hidden);
    if (x.ql > 0) {
        // q_layernorm is not fused into linear_q_up_proj (the indexer needs the normalised q:
        // experimental_attention_variant_module_specs.py:123-126): it keeps q_compressed and its statistics;
        // its output is linear_q_up_proj's input (absorbed_mla.py:540), the indexer's qr and an input of both
        // checkpoints.
        add(m, Tsp * x.ql * d, kOutside, out);
        add(m, 2 * Tsp * 4, kOutside, out);
        wgrad(add(m, Tsp * x.ql * d, kOutside, bit(kMlaUp) | idx_saver, bit(kMlaUp) | bit(kCoreAttn)),
            kLoraQUp | kLoraUnnamed, bit(kMlaUp) | idx_saver);
    }
    // kv_layernorm keeps its input, a view of linear_kv_down_proj's output (:482, :520); its output (gathered
    // under SP: :524) and k_pos_emb (gathered under SP: :500; at TP 1 a view) enter the up-projection, whose
    // cat saves neither.
    add(m, Tsp * kw * d, kOutside, out);
    add(m, 2 * Tsp * 4, kOutside, out);
    add(m, T * kvl * d, kOutside, 0, bit(kMlaUp));
    if (t > 1)
        add(m, T * dr * d, kOutside, 0, bit(kMlaUp));
    // qkv_up_proj_and_rope_apply (the mla_up_proj region, :665): q = linear_q_up_proj's output, which the
    // absorption einsum keeps through its q_no_pe view (:624); its outputs: the absorbed query [T, np, kw]
    // (:652) and the latent key [T, 1, kw] (:654), which the fused function keeps as q_flat / kv_flat
    // (dsa_cudnn_kernels.py:1972-1973; the key gathered over CP instead where CP > 1).
    add(m, T * np * (x.dn + dr) * d, kMlaUp, bit(kMlaUp));
    add(m, T * np * kw * d, kMlaUp, bit(kCoreAttn), bit(kCoreAttn), true);
    add(m, T * kw * d, kMlaUp, x.cp > 1 ? 0 : bit(kCoreAttn), bit(kCoreAttn), true);
    // DSAttention (the core_attn region: _checkpointed_attention_forward, absorbed_mla.py:737).
    if (x.cp > 1)
        add(m, b * S * kw * d, kCoreAttn,
            bit(kCoreAttn)); // the key gathered over CP, reordered (dsa.py:1856)
    // up_v_weight made contiguous (dsa.py:1665), kept by the latent-to-value einsum
    // (dsa_cudnn_kernels.py:303, dsa.py:173).
    add(m, np * x.dv * kvl * d, kCoreAttn, bit(kCoreAttn));
    const double idx_out = indexer ? T * ih * id * d + b * S * id * d + T * ih * d : 0; // q, k, weights
    if (indexer) {
        // DSAIndexer.forward_before_topk under grad (the loss's; dsa.py:1980): linear_wq_b and linear_wk /
        // linear_weights_proj keep qr and x (gathered under SP), k_norm (a LayerNorm) its input and
        // statistics; RoPE (rope_utils.py:133-136: multiplies by cos / sin) and the weights' scaling keep
        // nothing.
        if (t > 1) {
            wgrad(add(m, T * h * d, kCoreAttn, bit(kCoreAttn)), kLoraUnnamed, bit(kCoreAttn));
            wgrad(add(m, T * qw * d, kCoreAttn, bit(kCoreAttn)), kLoraUnnamed, bit(kCoreAttn));
        }
        add(m, T * id * d, kCoreAttn, bit(kCoreAttn));
        add(m, 2 * T * 4, kCoreAttn, bit(kCoreAttn));
    }

    // The fused function's forward (FusedIndexerSparseAttnFunc, dsa_cudnn_kernels.py:2118; with sharing
    // FusedQKTopKWithSparseLossFunc :2380 then FusedSparseAttentionFunc :2529): the indexer's q, k and
    // weights alive (their BSHD copies where b > 1: :1307), then the largest of three moments.
    const double bshd = b > 1 ? idx_out : 0;
    const double Kpad = std::ceil(K / 512) * 512; // FlashMLA's top-k alignment on SM90 (:340-345, :889-892)
    const double flash_out = T * npad * kvl * d + 2 * T * npad * 4 // out, max_logits, lse (:909-917)
        + (npad != np ? T * npad * kw * d : 0) + (Kpad != K ? T * Kpad * 4 : 0); // padded q, top-k (:889-902)
    // (1) Scoring and top-k (_indexer_topk_from_score_chunks, :567): fp32 score chunks of at most 1 GiB,
    // rows aligned to 512 (:503); one chunk over all rows without CP goes to cuDNN's indexer_forward_wrapper,
    // else each chunk is built head by head (:513-564: the chunk, one head's bmm product, the key in fp32,
    // the query slice in fp32); then the top-k wrapper on sub-chunks whose scratch Megatron budgets at two
    // int32 a key, 2 GiB at most (:463-500); the selected indices (int32) and, for the loss, scores (fp32).
    // `scored`: the loss's fp32 scores beside the int32 indices (4 more bytes a selected key).
    const auto scoring = [&](bool scored) {
        if (!indexer)
            return 0.0;
        const double rows = chunkRows(s, b * S * 4, 1073741824.0, 512);
        const double chunk = b * rows * S * 4;
        const bool single = x.cp == 1 && rows >= s;
        const double by_head = single ? 0 : chunk + b * id * S * 4 + b * rows * id * 4;
        const double sub = chunkRows(b * rows, S * 8, 2147483648.0, 512);
        const double topk_call = sub * S * 8 + sub * K * (scored ? 8 : 4);
        return chunk + std::max(by_head, topk_call) + b * s * K * (scored ? 8 : 4);
    };
    const double p1 = scoring(loss);
    // (2) FlashMLA's sparse forward (_run_sparse_attention_forward, :1947): the top-k made compact and sorted
    // first (:982-991, :1040: a bool mask, an int64 argsort, gathers), then the prepared int32 indices beside
    // FlashMLA's outputs.
    const double selected = indexer ? b * s * K * (loss ? 8 : 4) : 0;
    const double p2 = selected + std::max(b * s * K * 18, b * s * K * 4 + flash_out);
    // (3) The sparse indexer loss and its gradients (_compute_sparse_indexer_loss_and_grads, :1757), with
    // FlashMLA's out and lse and the clamped indices (:1992) already made: the indexer's q and weights padded
    // to 64 heads for the backward kernel (:1470-1480), the top-k sized log-probabilities, probabilities,
    // target and its masks and clamps (:1797-1843, fp32 / int32 / bool), the backward wrapper's gradients at
    // the padded head count and their unpadded copies (:1844-1855).
    double p3 = 0;
    if (loss) {
        const double ihp = std::max(ih, 64.0);
        p3 = b * s * K * (8 + 4 + 4) + T * npad * kvl * d + T * npad * 4
            + (ih < 64 ? T * 64 * (id + 1) * d : 0) + b * s * K * 25 + T * ihp * (id + 1) * d + b * S * id * d
            + (ih < 64 ? T * ih * (id + 1) * d : 0);
    }
    m.temp_at = m.entries.size();
    m.forward_temp = idx_out + bshd + std::max({ p1, p2, p3 });
    // A full-recompute unit's first forward runs without grad: no loss (dsa.py:1892-1894), nothing saved;
    // alive are the attention's locals (the norm's output, the compressed query, query, key, the CP-gathered
    // key, up_v), the indexer's outputs and the kernels' moments without the loss's scores.
    {
        const double p1n = scoring(false);
        const double p2n
            = (indexer ? b * s * K * 4 : 0) + std::max(b * s * K * 18, b * s * K * 4 + flash_out);
        const double locals = Tsp * h * d + (x.ql > 0 ? Tsp * x.ql * d : 0) + T * np * kw * d + T * kw * d
            + (x.cp > 1 ? b * S * kw * d : 0) + np * x.dv * kvl * d;
        m.nograd_peak = locals + idx_out + bshd + std::max(p1n, p2n);
    }

    // What the fused functions keep for backward (dsa_cudnn_kernels.py:2264, :2468, :2547): the int32
    // indices for the backward (:1992), FlashMLA's out at its padded heads (the latent-to-value einsum keeps
    // a view of it: :301-303) and lse; with the loss the indexer's precomputed gradients (:1859-1861).
    add(m, T * K * 4, kCoreAttn, bit(kCoreAttn));
    add(m, T * npad * kvl * d, kCoreAttn, bit(kCoreAttn));
    add(m, T * npad * 4, kCoreAttn, bit(kCoreAttn));
    if (loss)
        add(m, idx_out, kCoreAttn, bit(kCoreAttn));
    // The einsum's output made contiguous: the core's output, linear_proj's input (absorbed_mla.py:902).
    wgrad(add(m, T * np * x.dv * d, kCoreAttn, out, 0, true), kLoraProj, out);
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * 1, kOutside, out);

    // Backward of the sparse attention (_run_sparse_attention_backward, :1996): the output's gradient, and
    // for its non-empty rows (all of them under a causal mask) copies of q, out, dO, lse and the indices
    // with a dummy row (:2069-2074) and their row-selected copies (:2077-2087), the kernel's dq and dkv, and
    // the zeroed query gradient they are copied into (:2091-2092); padded heads add one padded copy each
    // (:2026-2041). Beside them the residual gradients and the core output's gradient.
    const double row = npad * (kw + 2 * kvl) * d + npad * 4 + K * 4;
    const double sparse_bwd = T * np * kvl * d + (npad != np ? T * row : 0) + 2 * T * row + T * npad * kw * d
        + b * S * kw * d + T * np * kw * d;
    m.backward_temp = std::max(m.backward_temp, 2 * m.residual + T * np * x.dv * d + sparse_bwd);
}

LayerModel megatronLayer(const Shape& x, const LayerKind& kind)
{
    LayerModel m;
    const double d = x.act, h = x.h, t = x.tp, b = x.b, s = x.s;
    const double T = x.T, Tsp = x.Tsp;
    const double np = x.heads / t, ng = std::max(1.0, x.groups / t);
    const uint32_t out = bit(kOutside);
    const double mask_byte = 1; // torch's native_dropout keeps a bool mask
    size_t softmax_at = SIZE_MAX; // the unfused 16-bit softmax's moment: the entries made before it
    double softmax_temp = 0;
    m.residual = Tsp * h * d;
    const bool moe = kind.ffn == LayerFfn::Moe;
    if (kind.mixer == LayerMixer::Mamba)
        megatronMamba(m, x);
    else if (kind.mixer == LayerMixer::GatedDeltaNet)
        megatronGdn(m, x);
    else if (kind.mixer == LayerMixer::Dsa || kind.mixer == LayerMixer::DsaSkipTopk)
        megatronDsa(m, x, kind.mixer == LayerMixer::Dsa);
    if (kind.mixer == LayerMixer::Attention) {
        // input_layernorm: under the TE spec fused into linear_qkv (TELayerNormColumnParallelLinear keeps the
        // input and the normalised output; Korthikanti: 2sbh/t each with SP); a separate module under the
        // local spec and for MLA (label layernorm).
        const bool norm1_module = !x.te || x.mla;
        const int n1 = norm1_module ? kNorm1 : kOutside;
        add(m, Tsp * h * d, kOutside, bit(n1), norm1_module ? bit(kNorm1) : 0); // layer input [Korthikanti]
        add(m, 2 * Tsp * 4, n1, bit(n1)); // mean / rstd (fp32)
        uint32_t ln1_savers = out, ln1_input_of = 0;
        if (x.mla && x.ql == 0) {
            ln1_savers |= bit(kMlaUp);
            ln1_input_of |= bit(kMlaUp);
        }
        // QKV input [Korthikanti 2sbh/t]; TE's fused norm saves its output quantized under fp8
        // (layernorm_linear.py), a separate norm module's output stays 16-bit (MLA's down projections save
        // their original input: multi_latent_attention.py set_save_original_input).
        // Under MLA the down projections (and linear_q_proj without Q compression) save it, else linear_qkv.
        const uint32_t ln1_linears = !x.mla ? kLoraQkv
            : x.ql > 0                      ? kLoraQDown | kLoraKvDown
                                            : kLoraQProj | kLoraKvDown;
        wgrad(add(m, Tsp * h * (norm1_module ? d : x.qin), n1, ln1_savers, ln1_input_of, norm1_module),
            ln1_linears, ln1_savers);

        double q_w = 0, k_w = 0, v_w = 0; // per-token widths of q, k, v on this rank
        if (!x.mla) {
            q_w = np * x.kv;
            k_w = v_w = ng * x.kv;
            // linear_qkv's output; q, k, v are views of it [Korthikanti: Q, K 4sbh/t, V 2sbh/t for MHA].
            const double qkv = T * (np + 2 * ng) * x.kv * d;
            if (x.backend == "unfused") {
                add(m, qkv, kOutside, bit(kCoreAttn), bit(kCoreAttn));
                if (ng < np) // repeat_interleave of key and value (dot_product_attention.py, GQA)
                    add(m, 2 * T * np * x.kv * d, kCoreAttn, bit(kCoreAttn));
                // As on the TE path below: the core_attn checkpoint keeps RoPE's new q and k, and v pins the
                // projection's output (the allocator's history of llocal-core_attn: rope_utils.py's q and k
                // and linear_qkv's output of every layer live at its peak).
                if (x.rope)
                    add(m, T * (np + ng) * x.kv * d, kOutside, 0, bit(kCoreAttn));
            } else {
                add(m, qkv, kOutside, bit(kCoreAttn), bit(kCoreAttn));
                // RoPE makes q and k anew. Without recompute TE's attention keeps those and a contiguous v
                // while the projection's output dies: the size of the entry above. The core_attn checkpoint
                // keeps its inputs as passed, v a view that pins the projection's whole output, so q and k
                // once more (real Megatron-LM + TE: +79 MiB for core_attn on 4 layers of 20 MiB,
                // tests/fixtures/logs/megatron-lm-peft-mtp/h100 mtp-off-dense-core_attn against -none).
                if (x.rope && x.te)
                    add(m, T * (np + ng) * x.kv * d, kOutside, 0, bit(kCoreAttn));
            }
            // qk_layernorm (attention.py get_query_key_value_tensors: q_layernorm after the query's reshape,
            // a copy, k_layernorm on the key, a view; TE's RMSNorm / LayerNorm op saves its input,
            // contiguous, and the fp32 rstd (and mean) per head row). Their outputs go on to RoPE and core
            // attention, as q and k did without them.
            if (x.qk_norm) {
                const double stats = x.rms ? 4 : 8;
                add(m, T * np * (x.kv * d + stats), kOutside, out);
                add(m, T * ng * (x.kv * d + stats), kOutside, out);
            }
        } else {
            const double dq = x.dn + x.dr;
            if (x.ql > 0) {
                // linear_q_down_proj on the local tokens, then q_layernorm (kept: its input and output)
                add(m, Tsp * x.ql * d, kOutside, out);
                wgrad(add(m, T * x.ql * d, kOutside, bit(kMlaUp), bit(kMlaUp)), kLoraQUp,
                    bit(kMlaUp)); // gathered, normalised q
            }
            add(m, T * (x.kvl + x.dr) * d, kOutside, out,
                bit(kMlaUp)); // kv compressed (gathered) + k_pos_emb
            wgrad(add(m, T * x.kvl * d, kOutside, bit(kMlaUp), bit(kMlaUp)), kLoraKvUp,
                bit(kMlaUp)); // kv_layernorm output
            q_w = np * dq;
            k_w = np * dq;
            v_w = np * x.dv;
            // query, key (cat with RoPE) and the kv up-projection's output (value is a view of it):
            // multi_latent_attention.py get_query_key_value_tensors.
            add(m, T * q_w * d, kMlaUp, bit(kCoreAttn), bit(kCoreAttn), true);
            add(m, T * k_w * d, kMlaUp, bit(kCoreAttn), bit(kCoreAttn), true);
            add(m, T * np * (x.dn + x.dv) * d, kMlaUp, bit(kCoreAttn), bit(kCoreAttn), true);
            m.forward_temp = std::max(m.forward_temp, T * np * dq * d);
        }
        if (x.backend == "unfused") {
            // dot_product_attention.py: baddbmm into the global memory buffer (persistent, counted once per
            // rank as "other"), FusedScaleMaskSoftmax, attention dropout, P x V. Korthikanti: 5as^2b/t with a
            // 1-byte mask; the torch softmax path keeps the fp32 probabilities (attention_softmax_in_fp32).
            const double scores = b * np * s * s;
            const double softmax_bytes = (x.fused_softmax || !x.softmax_fp32) ? d : 4;
            add(m, scores * softmax_bytes, kCoreAttn, bit(kCoreAttn));
            if (softmax_bytes == d) {
                // The 16-bit softmax: its moment is baddbmm's scores beside its output, the layer's later
                // tensors not made yet (the allocator's history of time-dlocal-none, bench/gpu/results/
                // h100-2026-12-07-dlocal: the forward's largest moment is the loss's, not the last layer's).
                softmax_at = m.entries.size();
                softmax_temp = scores * d;
            } else {
                m.forward_temp = std::max(m.forward_temp, scores * (softmax_bytes + d));
            }
            if (x.attn_dropout > 0) {
                add(m, scores * mask_byte, kCoreAttn, bit(kCoreAttn));
                add(m, scores * d, kCoreAttn, bit(kCoreAttn));
                // P x V keeps the dropped copy and frees it in its backward, before dropout's and the
                // softmax's backward make their scores-sized gradients: one beyond what is saved at a time,
                // and a mask's bytes more (measured, not traced: the dense local job's core_attn and full
                // uniform 1 replays on the H200 and the H100, fixture logs, within 0.2 %; its [] runs peak at
                // the loss, above this moment, as the allocator's history of time-dlocal-none shows).
                if (softmax_bytes == d) {
                    m.largest_in_flight = 1;
                    m.in_flight_extra = scores * mask_byte;
                }
            } else if (softmax_bytes != d) {
                add(m, scores * d, kCoreAttn, bit(kCoreAttn)); // probabilities cast back for P x V
            } else {
                // Without dropout P x V reads the softmax's output: at the softmax's backward the autograd
                // engine holds three scores-sized gradients beside it (the probabilities', the scores', and
                // the masked fill's), the layer's later tensors freed (the allocator's history of the
                // Llama-like local job, bench/gpu/results/h100-2026-12-07-dlocal/llocal: 1.63-1.64 GB in
                // flight at both its [] and core_attn peaks).
                // (A full-recompute unit's replay has the same moment: LayerFigures::replay_core.)
                m.core_bwd_at = m.entries.size();
                m.core_bwd_temp = 2 * m.residual + 3 * scores * d;
            }
            wgrad(add(m, T * np * (x.mla ? x.dv : x.kv) * d, kCoreAttn, out, 0, true), kLoraProj,
                out); // context -> linear_proj
        } else {
            // Flash / cuDNN fused attention keeps q, k, v, its output and the fp32 softmax statistics.
            add(m, b * np * s * 4, kCoreAttn, bit(kCoreAttn));
            wgrad(add(m, T * np * (x.mla ? x.dv : x.kv) * d, kCoreAttn, out | bit(kCoreAttn), 0, true),
                kLoraProj, out);
        }
        // Under fp8 with delayed scaling linear_proj also keeps its own quantized copy of the context; other
        // recipes make it save the original, which core attention keeps anyway (attention.py,
        // set_save_original_input for fp8_recipe != delayed, TE >= 2.6).
        if (x.fp8_delayed)
            wgrad(add(m, T * np * (x.mla ? x.dv : x.kv), kOutside, out), kLoraProj, out, 0);
        if (x.hidden_dropout > 0)
            add(m, Tsp * h * mask_byte, kOutside, out); // bias-dropout-add mask [Korthikanti sbh/t]
    } // the attention
    if (kind.ffn == LayerFfn::None) {
        setParams(m, layerParams(x, kind));
        return m;
    }

    // pre_mlp_layernorm: a module before MoE and under the local spec; for dense TE layers the norm is
    // linear_fc1's (TELayerNormColumnParallelLinear, pre_mlp_layernorm an IdentityOp): its input, the
    // residual, is then the mlp checkpoint's input and its output (TE's saved ln_out) is made inside it
    // (transformer_layer.py _forward_mlp; layernorm_linear.py saves inputmat, ln_out, rsigma).
    const bool norm2_module = !x.te || moe;
    const int n2 = norm2_module ? kNorm2 : kMlp;
    add(m, Tsp * h * d, kOutside, bit(n2), bit(n2)); // [Korthikanti 2sbh/t]
    add(m, 2 * Tsp * 4, n2, bit(n2));
    const double glu = x.gated ? 2 : 1;
    if (!moe) {
        // FC1 input (TE's fused norm: its output, quantized under fp8)
        wgrad(add(m, Tsp * h * (norm2_module ? d : x.qin), n2, bit(kMlp), norm2_module ? bit(kMlp) : 0,
                  norm2_module),
            kLoraFc1, bit(kMlp));
        // FC1 output kept by the activation, the activation kept by FC2 [Korthikanti 8sbh/t each for 4h];
        // under fp8 FC2 keeps its quantized input and the 16-bit activation is freed (linear.py).
        add(m, T * glu * x.F / t * d, kMlp, bit(kMlp));
        wgrad(add(m, T * x.F / t * x.qin, kMlp, bit(kMlp)), kLoraFc2, bit(kMlp), T * x.F / t * d);
        // Unfused GLU (bias_activation_fusion off, mlp.py glu()): act(a) * b also keeps act(a).
        if (x.gated && !x.fused_act)
            add(m, T * x.F / t * d, kMlp, bit(kMlp));
    } else {
        const uint32_t users = bit(kMoe) | (x.Fs > 0 ? bit(kShared) : 0);
        // The router keeps it (RouterGatingLinearFunction saves its input whatever requires grad); the
        // shared experts' FC1 for its weight gradient.
        wgrad(add(m, Tsp * h * d, n2, users, users, norm2_module), kLoraFc1, x.Fs > 0 ? bit(kShared) : 0);
        const double R = routedTokens(x);
        const double E = x.experts;
        // Router (moe/router.py): logits, top-k probabilities and the routing map; the aux-loss scores.
        add(m, Tsp * E * d, kMoe, bit(kMoe));
        add(m, Tsp * E * 1 + Tsp * x.topk * 4, kMoe, bit(kMoe));
        // Latent MoE: fc1_latent_proj (hidden -> L) runs after the router, before dispatch
        // (moe_layer.py:488-490 at 2a75ac12); it saves its input, the norm's output the router keeps
        // already, or under fp8 a quantized copy of its own (nothing sets save_original_input on it).
        if (x.L > 0 && x.fp8)
            wgrad(add(m, Tsp * h * x.qin, kMoe, bit(kMoe)), kLoraUnnamed, bit(kMoe));
        // Dispatch (token_dispatcher.py, alltoall): the permuted tokens after the all-to-all, Hr wide (the
        // dispatcher takes the width of what it is given: token_dispatcher.py:640, and the NCCL EP buffers
        // are sized to moe_latent_size: :1530-1533). (Under fp8 the experts' FC1 keeps its quantized copy
        // instead: grouped_linear.py.)
        wgrad(add(m, R * x.Hr * x.qin, kMoe, bit(kMoe)), kLoraFc1, bit(kMoe), R * x.Hr * d);
        add(m, R * 4, kMoe, bit(kMoeAct), bit(kMoeAct)); // permuted probabilities (fp32)
        // Experts (experts.py): FC1 output, kept by the (probability-weighted) activation = moe_act's
        // input; the activation's output kept by FC2 = moe_act's output.
        add(m, R * glu * x.Fm / x.etp * d, kMoe, bit(kMoeAct), bit(kMoeAct));
        wgrad(add(m, R * x.Fm / x.etp * x.qin, kMoeAct, bit(kMoe), 0, true), kLoraFc2, bit(kMoe),
            R * x.Fm / x.etp * d);
        // Unfused (bias_activation_fusion off, experts.py bias_act_func): act(a) [* b] kept by the multiply
        // by the probabilities, and act(a) by act(a) * b under GLU; the fused function (and the fused
        // weighted squared ReLU, weighted_squared_relu_impl) keeps neither.
        if (!x.fused_act && !x.weighted_sqrelu)
            add(m, (x.gated ? 2 : 1) * R * x.Fm / x.etp * d, kMoeAct, bit(kMoeAct));
        // Combine: the unpermute keeps its index map (int32 per routed token).
        add(m, Tsp * x.topk * 4 * 2, kMoe, bit(kMoe));
        // Latent MoE: fc2_latent_proj (L -> hidden) after the combine keeps its input, the combined
        // [Tsp, L] (moe_layer.py:591-592 at 2a75ac12); its output is added to the shared experts' and
        // saved by nothing.
        if (x.L > 0)
            wgrad(add(m, Tsp * x.L * x.qin, kMoe, bit(kMoe)), kLoraUnnamed, bit(kMoe));
        if (x.Fs > 0) {
            // Under fp8 the shared FC1 quantizes its input, which the router keeps in 16 bits too (not
            // measured: the fp8 fixtures have no shared expert).
            if (x.fp8)
                wgrad(add(m, Tsp * h, kShared, bit(kShared)), kLoraFc1, bit(kShared), 0);
            add(m, T * glu * x.Fs / t * d, kShared, bit(kShared));
            wgrad(add(m, T * x.Fs / t * x.qin, kShared, bit(kShared)), kLoraFc2, bit(kShared),
                T * x.Fs / t * d);
            if (x.gated && !x.fused_act)
                add(m, T * x.Fs / t * d, kShared, bit(kShared)); // unfused GLU's act(a)
        }
        if (isDsaMixer(kind.mixer))
            m.end_temp = std::max(m.end_temp, 2 * R * x.Hr * d); // after the DSA moment, above all entries
        else
            m.forward_temp = std::max(m.forward_temp, 2 * R * x.Hr * d);
    }
    if (isDsaMixer(kind.mixer)) // without grad the MLP's moment comes with the residual stream alone
        m.nograd_peak = std::max(m.nograd_peak, 2 * m.residual + m.end_temp);
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * mask_byte, kOutside, out);
    if (softmax_at != SIZE_MAX) {
        // Two moments: the softmax's, and the linears' outputs with the layer's tensors kept (its end).
        m.end_temp = std::max(m.end_temp, m.forward_temp);
        m.forward_temp = softmax_temp;
        m.temp_at = softmax_at;
    }
    setParams(m, layerParams(x, kind));
    return m;
}

// PEFT on a Megatron layer: the frozen linears keep no input for a weight gradient; each adapter keeps its
// linear_in's input (the base's where it is the same tensor; a gathered or 16-bit copy of its own where SP
// or TE's fused norm under fp8 gives it another; the dropped-out copy and its mask under peft.dropout) and
// linear_out's input, the gathered [tokens, dim]. The adapter's output is a transient beside the base's at
// the sum.
void applyPeft(LayerModel& m, const Shape& x, const LayerKind& kind)
{
    const bool dropout = x.lora_dropout > 0;
    for (Entry& e : m.entries) {
        if (e.wgrad_of == 0)
            continue;
        if ((e.wgrad_of & x.lora) != 0 && !dropout) {
            if (e.adapter_bytes >= 0)
                e.bytes = e.adapter_bytes;
        } else {
            e.savers &= ~e.wgrad_savers;
        }
    }
    const double d = x.act;
    for (const LoraSite& s : loraSites(x, kind)) {
        const double tp = s.expert ? x.etp : x.tp;
        const double in_rank = s.row ? s.in / tp : s.in;
        const uint32_t saver = bit(s.region);
        if (dropout)
            add(m, s.tokens * in_rank * (d + 1), s.region, saver); // the dropped copy and its bool mask
        else if ((s.own_copy_under_sp && x.sp) || (s.ln_fused && x.fp8))
            add(m, x.T * s.in * d, s.region, saver);
        add(m, s.tokens * x.lora_dim * d, s.region, saver);
        m.forward_temp = std::max(m.forward_temp, s.tokens * s.out / (s.row ? 1 : tp) * d);
    }
}

// A layer's (or an MTP depth's own part's) model finished: PEFT applied, and its backward moment from the
// tensors it keeps.
LayerModel finishLayer(const Shape& x, LayerModel m, const LayerKind& kind)
{
    if (x.peft)
        applyPeft(m, x, kind);
    // Backward of one layer: the residual gradient in and out, and the gradient of the largest tensor it
    // keeps alongside that tensor's producer's gradient.
    double largest = 0;
    for (const auto& e : m.entries)
        largest = std::max(largest, e.bytes);
    // Megatron's unfused softmax backward holds the probabilities' gradient and the scores' gradient
    // beside the saved probabilities (fixture logs, llama-full-uniform-1: two of the largest in flight;
    // one with attention dropout, whose dropped copy is gone by then: largest_in_flight); the worker's
    // LibTorch CPU backward frees one before the next (tst_engine_estimate).
    m.backward_temp = std::max(m.backward_temp,
        2 * m.residual
            + (x.layout == Layout::Megatron ? m.largest_in_flight * largest + m.in_flight_extra : largest));
    // Megatron's linear backward (gradient_accumulation_fusion off, as without TE or apex) returns each
    // weight's gradient as a new tensor that lives until DDP's hook adds it into main_grad: the largest one
    // is in flight beside the activation gradients.
    // Under PEFT only the adapters' weights get gradients.
    if (x.layout == Layout::Megatron)
        m.backward_temp += (x.peft ? loraParams(x, kind).largest : m.largest_param) * x.act;
    if (m.bwd_at != SIZE_MAX) {
        double later = 0;
        for (size_t i = m.bwd_at; i < m.entries.size(); ++i)
            later = std::max(later, m.entries[i].bytes);
        m.bwd_after = 2 * m.residual + later;
    }
    return m;
}

LayerModel layerModel(const Shape& x, const LayerKind& kind)
{
    return finishLayer(x, x.layout == Layout::Worker ? workerLayer(x, kind) : megatronLayer(x, kind), kind);
}

// An MTP depth's own parameters: enorm and hnorm (a weight each, and a bias under LayerNorm), eh_proj
// (column-parallel 2h -> h, no bias); final_layernorm.
ParamCount mtpInputParams(const Shape& x)
{
    ParamCount p;
    for (int norm = 0; norm < 2; ++norm) {
        p.add(x.h);
        if (!x.rms)
            p.add(x.h);
    }
    p.addLinear(2 * x.h * x.h / x.tp);
    return p;
}

ParamCount mtpOutputParams(const Shape& x)
{
    ParamCount p;
    p.add(x.h);
    if (!x.rms)
        p.add(x.h);
    return p;
}

// One multi-token-prediction depth's own modules around its layers (multi_token_prediction.py
// MultiTokenPredictionLayer at d98e8a64, the TE spec: TENorm for enorm, hnorm and final_layernorm,
// TEColumnParallelLinear for eh_proj), the Megatron layout's only (the worker builds no MTP). Its layers are
// the decoder's (layerModel of their kind), between these two. The input part (_get_embeddings,
// _concat_embeddings): the rolled tokens re-embedded [s/CP (/TP under SP), b, h], kept by enorm (TE's norm
// keeps its input and its statistics; the embedding's dropout keeps its mask); hnorm's input (the decoder's
// or the previous depth's output, which nothing else keeps: the loss reads the block's concatenation of the
// outputs) and statistics; the concatenation [.., 2h], kept by eh_proj (its quantized copy under fp8:
// _concat_embeddings runs in the fp8 context). eh_proj's [T, h/TP] output is gathered over TP and scattered
// again under SP: the layer's input. Under full recompute the depth is one checkpoint whose new input is the
// re-embedded tokens (_checkpointed_forward).
LayerModel megatronMtpInput(const Shape& x)
{
    LayerModel m;
    const double d = x.act, h = x.h, T = x.T, Tsp = x.Tsp, t = x.tp;
    const uint32_t out = bit(kOutside);
    const double stats = (x.rms ? 1 : 2) * Tsp * 4;
    m.residual = Tsp * h * d;
    add(m, Tsp * h * d, kOutside, out); // decoder_input: the embedding of the rolled tokens, enorm's input
    if (x.hidden_dropout > 0)
        add(m, Tsp * h * 1, kOutside, out); // the embedding's dropout mask
    add(m, stats, kOutside, out); // enorm
    add(m, Tsp * h * d, kOutside, out); // hnorm's input
    add(m, stats, kOutside, out); // hnorm
    // cat(enorm, hnorm), eh_proj's saved input (for its weight gradient: none under PEFT)
    wgrad(add(m, Tsp * 2 * h * x.qin, kOutside, out), kLoraUnnamed, out);
    m.forward_temp = (t > 1 ? T * h / t * d : 0) + (x.sp ? T * h * d : 0); // eh_proj's output, gathered
    m.temp_at = m.entries.size();
    setParams(m, mtpInputParams(x));
    return m;
}

// The output part (_postprocess): final_layernorm keeps its input (the layers' output) and statistics; its
// output is the next depth's hnorm input (counted there) and is copied into the block's output, the
// concatenation of the decoder's and every depth's outputs [(1 + D) s, b, h]
// (MultiTokenPredictionBlock.forward), whose slices the loss's output layer keeps (process_mtp_loss; the
// decoder's slice is the main loss's input, which the head counts).
LayerModel megatronMtpOutput(const Shape& x)
{
    LayerModel m;
    const double d = x.act, h = x.h, Tsp = x.Tsp;
    const uint32_t out = bit(kOutside);
    m.residual = Tsp * h * d;
    add(m, Tsp * h * d, kOutside, out); // the layers' output
    add(m, (x.rms ? 1 : 2) * Tsp * 4, kOutside, out);
    // its slice of the concatenation (the frozen output layer keeps none under PEFT)
    wgrad(add(m, Tsp * h * d, kOutside, out), kLoraUnnamed, out);
    setParams(m, mtpOutputParams(x));
    return m;
}

Active activeOf(const Recipe& r)
{
    Active a;
    if (r.recompute_granularity.value_or("") != "selective")
        return a;
    for (const auto& label : effectiveRecomputeModules(r)) {
        for (int reg = 1; reg < kRegionCount; ++reg)
            if (label == regionLabel(reg))
                a.mask |= bit(reg);
    }
    return a;
}

// The checkpoints one layer of this kind makes under the choice (the worker keeps a generator state for
// each). A GPT layer counts core_attn and both norms whatever the spec fuses, as the worker's plan did
// before hybrid stacks; a hybrid layer counts only the regions it has.
int checkpointCount(const Active& a, const LayerKind& kind, const Shape& x)
{
    const bool gpt = kind.symbol == 0;
    const bool attention = isAttentionMixer(kind.mixer);
    int n = 0;
    for (int reg = 1; reg < kRegionCount; ++reg) {
        if (!a.effective(reg))
            continue;
        bool present = false;
        switch (reg) {
        case kCoreAttn:
            present = attention;
            break;
        case kMlaUp:
            present = attention && x.mla;
            break;
        case kNorm1:
            present = gpt || (attention && (!x.te || x.mla));
            break;
        case kNorm2:
            present = gpt || kind.ffn == LayerFfn::Moe || (kind.ffn == LayerFfn::Dense && !x.te);
            break;
        case kMoeAct:
        case kMoe:
            present = kind.ffn == LayerFfn::Moe;
            break;
        case kShared:
            present = kind.ffn == LayerFfn::Moe && x.Fs > 0;
            break;
        case kMlp:
            present = kind.ffn == LayerFfn::Dense;
            break;
        case kGdnNorm:
        case kGdn:
            present = kind.mixer == LayerMixer::GatedDeltaNet;
            break;
        default:
            break;
        }
        n += present ? 1 : 0;
    }
    return n;
}

// Every layer's kind and one model per kind that occurs (model_shape.h layerKinds: the hybrid pattern, or
// attention / GatedDeltaNet with a dense or MoE MLP). In the Megatron layout the MTP depths (mtpShape) follow
// the decoder layers in a stage's layer list, at indices num_layers + depth x pieces + piece: a depth's
// pieces are its input part (megatronMtpInput), its layers (the decoder's models of their kind) and its
// output part. The worker builds no MTP layer (engine/model.cpp refuses them), so its layout has none.
struct LayerModels {
    std::vector<LayerKind> kinds; // per global layer
    std::vector<LayerModel> models; // by LayerKind::id()
    std::vector<ParamCount> params; // by LayerKind::id()
    std::vector<ParamCount> adapters; // by LayerKind::id(): its LoRA adapters under PEFT
    std::vector<bool> built;
    std::vector<LayerKind> kind_of_id; // by LayerKind::id()
    MtpShape mtp; // none in the worker layout
    std::vector<LayerKind> mtp_pieces; // one depth's: input part, its layers, output part
    LayerModel mtp_input, mtp_output;
    ParamCount mtp_input_params, mtp_output_params;
    ParamCount none; // a later depth's under mtp_use_repeated_layer: the first depth's layer runs it
    LayerModels(const Recipe& r, const Shape& x)
        : kinds(layerKinds(r))
        , models(kLayerKindIds)
        , params(kLayerKindIds)
        , adapters(kLayerKindIds)
        , built(kLayerKindIds, false)
        , kind_of_id(kLayerKindIds)
    {
        const auto build = [&](const LayerKind& k) {
            if (built[static_cast<size_t>(k.id())])
                return;
            built[static_cast<size_t>(k.id())] = true;
            kind_of_id[static_cast<size_t>(k.id())] = k;
            models[static_cast<size_t>(k.id())] = layerModel(x, k);
            params[static_cast<size_t>(k.id())] = layerParams(x, k);
            adapters[static_cast<size_t>(k.id())] = loraParams(x, k);
        };
        for (const LayerKind& k : kinds)
            build(k);
        if (x.layout != Layout::Megatron)
            return;
        mtp = mtpShape(r);
        if (mtp.depths <= 0)
            return;
        const LayerKind own { LayerMixer::None, LayerFfn::None, 'm' }; // checkpointCount: no region
        mtp_pieces.push_back(own);
        for (const LayerKind& k : mtp.layers) {
            build(k);
            mtp_pieces.push_back(k);
        }
        mtp_pieces.push_back(own);
        // No LoRA target in these parts (Bridge's target_modules name the layers' linears)
        mtp_input = finishLayer(x, megatronMtpInput(x), own);
        mtp_output = finishLayer(x, megatronMtpOutput(x), own);
        mtp_input_params = mtpInputParams(x);
        mtp_output_params = mtpOutputParams(x);
    }
    bool isMtp(int g) const { return g >= static_cast<int>(kinds.size()); }
    size_t piece(int g) const
    {
        return static_cast<size_t>(g - static_cast<int>(kinds.size())) % mtp_pieces.size();
    }
    int depth(int g) const
    {
        return static_cast<int>(static_cast<size_t>(g - static_cast<int>(kinds.size())) / mtp_pieces.size());
    }
    // The stage list's index of MTP depth `d`'s piece `p`.
    int mtpIndex(int d, size_t p) const
    {
        return static_cast<int>(kinds.size() + static_cast<size_t>(d) * mtp_pieces.size() + p);
    }
    const LayerKind& kind(int g) const
    {
        return isMtp(g) ? mtp_pieces[piece(g)] : kinds[static_cast<size_t>(g)];
    }
    // An MTP depth's own input and output parts (its other pieces are its layers).
    bool isMtpInput(int g) const { return isMtp(g) && piece(g) == 0; }
    bool isMtpOutput(int g) const { return isMtp(g) && piece(g) + 1 == mtp_pieces.size(); }
    const LayerModel& of(int g) const
    {
        return isMtpInput(g) ? mtp_input
            : isMtpOutput(g) ? mtp_output
                             : models[static_cast<size_t>(kind(g).id())];
    }
    const ParamCount& paramsOf(int g) const
    {
        if (isMtp(g) && depth(g) >= mtp.built)
            return none;
        return isMtpInput(g) ? mtp_input_params
            : isMtpOutput(g) ? mtp_output_params
                             : params[static_cast<size_t>(kind(g).id())];
    }
    const ParamCount& adaptersOf(int g) const
    {
        if (isMtp(g) && (depth(g) >= mtp.built || isMtpInput(g) || isMtpOutput(g)))
            return none;
        return adapters[static_cast<size_t>(kind(g).id())];
    }
};

// ---------------------------------------------------------------------------------------------------------
struct StageLayout {
    std::vector<int> layers; // the decoder layers, then the MTP depths' pieces (LayerModels)
    std::vector<int> chunk;
    int chunks = 1;
    bool first = true, last = true;
    int mtp_depths = 0; // the MTP depths this stage runs (the Megatron layout's)
    std::string scope;
};

// Every pipeline stage, for both layouts: the worker runs any one of them (engine/layout_rank.cpp, the same
// layer offsets).
std::vector<StageLayout> stagesOf(const Recipe& r, const LayerModels& models, Layout layout)
{
    std::vector<StageLayout> stages;
    const int chunks = parallelSizes(r).vpp;
    for (const PipelineStage& ps : pipelineStages(r)) {
        StageLayout s;
        s.chunks = chunks;
        s.first = ps.first;
        s.last = ps.last;
        s.layers = ps.layers;
        s.chunk = ps.chunk;
        s.scope = "stage " + std::to_string(ps.stage) + ": "
            + (ps.ranges.empty() ? std::string("no decoder layer") : "layers " + ps.ranges) + " of "
            + std::to_string(r.num_layers);
        if (s.first)
            s.scope += ", embedding";
        if (s.last)
            s.scope += ", output layer and loss";
        if (ps.mtp_layers > 0) {
            s.scope += ", " + std::to_string(ps.mtp_layers) + " MTP layer" + (ps.mtp_layers == 1 ? "" : "s");
            // Megatron runs them after the decoder layers on one chunk (model_shape.h PipelineStage), with an
            // embedding of their own where the stage has none; the worker builds none.
            if (models.mtp.depths > 0) {
                s.mtp_depths = ps.mtp_layers;
                for (int d = 0; d < ps.mtp_layers; ++d)
                    for (size_t p = 0; p < models.mtp_pieces.size(); ++p) {
                        s.layers.push_back(models.mtpIndex(d, p));
                        s.chunk.push_back(ps.mtp_chunk);
                    }
            } else if (layout == Layout::Worker) {
                s.scope += " (not built by the worker)";
            }
        }
        stages.push_back(s);
    }
    return stages;
}

// Bytes of a term, at most kMaxEstimateBytes (1 EiB): past it the estimate is refused as a whole (no
// device holds it, and int64 arithmetic on such terms would overflow).
constexpr double kMaxEstimateBytes = 1152921504606846976.0; // 2^60

int64_t toBytes(double v)
{
    if (std::isnan(v)) // inf * 0 on sizes near the double's range; such a recipe is refused at 2^60 anyway
        return 0;
    return static_cast<int64_t>(std::llround(std::clamp(v, 0.0, kMaxEstimateBytes)));
}

std::string fmtGB(double bytes)
{
    return formatGbUnit(toBytes(bytes));
}

struct Builder {
    std::vector<MemoryTerm> terms;
    void add(const std::string& category, const std::string& name, double bytes, const std::string& source,
        const std::string& note)
    {
        if (bytes > 0.5)
            terms.push_back({ category, name, toBytes(bytes), source, note });
    }
    // Moves the terms out: call once, last.
    PhaseEstimate phase(const char* name)
    {
        PhaseEstimate p;
        p.phase = name;
        p.terms = std::move(terms);
        for (const auto& t : p.terms) // each at most 2^60, and a phase has fewer than 8 terms of them
            p.peak_bytes = std::min<int64_t>(p.peak_bytes + t.bytes, int64_t(kMaxEstimateBytes));
        return p;
    }
};

const char* kWorkerModel = "backend/engine/model.cpp";
const char* kWorkerOpt = "backend/engine/optimizer.cpp";
const char* kKorthikanti = "Korthikanti et al. 2022, Table 2";

// What one layer contributes to a stage's activations under the recipe's recompute choice.
struct LayerFigures {
    double retained = 0, replay = 0, fwd_temp = 0, bwd_temp = 0, params = 0;
    double fwd_point = 0; // what the layer keeps when its forward temporary is alive
    // The largest moment of the replay's forward (with grad, before its backward), with the gradient
    // that arrived and the generator state the replay captures: a full-recompute unit's last layer.
    double replay_fwd = 0;
    // The Megatron layout's full-recompute unit: its replay's worst core-attention backward moment
    // (LayerModel::core_bwd_at), what the replay has rebuilt then and the gradients in flight.
    double replay_core = 0;
    // The core attention's backward moment (LayerModel::core_bwd_at): what the layer keeps then, the core's
    // replay where it is checkpointed, and the gradients in flight (core_point < 0: no such moment).
    double core_point = -1, core_replay = 0, core_temp = 0;
};

// Transformer Engine's cuBLAS workspaces (TE 2.17.1,
// transformer_engine/pytorch/cpp_extensions/gemm.py:34-61): get_cublas_workspace is lru-cached, so what it
// allocates with torch.empty stays for the whole run and is in torch's allocated counters. Its size,
// get_cublas_workspace_size_bytes: 32 MiB (NVFP4 GEMMs) + 1 KiB (alignment, scales) from compute
// capability 9.0 on, else 4 MiB. TE's GEMMs share one; the first grouped GEMM (TEGroupedMLP's GroupedLinear,
// general_grouped_gemm) adds one per compute stream, nvte_get_num_compute_streams
// (common/include/transformer_engine/multi_stream.h), a constant 4 in TE 2.17.1's libtransformer_engine.so.
double teCublasWorkspaceBytes(int compute_capability)
{
    return compute_capability >= 90 ? 32.0 * 1024 * 1024 + 1024 : 4.0 * 1024 * 1024;
}
const char* teCublasWorkspaceSize(int compute_capability)
{
    return compute_capability >= 90 ? "32 MiB + 1 KiB" : "4 MiB";
}
constexpr int kTeComputeStreams = 4;

// Megatron's local CUDA graphs (cuda_graph_impl local, cuda_graph_modules empty: the whole layer,
// transformer_layer.py create_mcore_cudagraph_manager) on a GPT stack of dense layers, the case measured
// (tests/fixtures/logs/megatron-lm-fp8/cuda-graphs). MoE layers (their router and dispatch are graphed apart,
// transformer_layer.py MoETransformerLayer), hybrid stacks, sub-layer modules and the other implementations
// are estimated as eager (the transformer_engine implementation's warm-up steps run eager: its `max
// allocated` is the eager peak).
bool localLayerGraphs(const Recipe& r, const Shape& x)
{
    return x.layout == Layout::Megatron && r.cuda_graph_impl == "local"
        && (!r.cuda_graph_modules || r.cuda_graph_modules->empty()) && x.experts == 0 && !isHybrid(r);
}

// One pipeline stage's estimate (docs/estimator.md), in named steps that run in this order: the stage's
// parameters, the persistent state (parameters, gradient buffer, main parameters, optimizer states, the
// batch), each layer's activations, the embedding's and the head's, the micro-batches in flight, then the
// forward, backward (the worker's pipeline schedule where it has one) and optimizer phases.
class StageEstimator {
public:
    StageEstimator(const Recipe& r_, const Shape& x_, const StageLayout& st_, int stage_index_,
        const Active& sel_, const LayerModels& layers_)
        : r(r_)
        , x(x_)
        , st(st_)
        , stage_index(stage_index_)
        , sel(sel_)
        , layers(layers_)
        , worker(x_.layout == Layout::Worker)
        , d(x_.act)
        , h(x_.h)
        , T(x_.T)
        , Tsp(x_.Tsp)
        , V(x_.vocab)
        , t(x_.tp)
        , holds_embedding(st_.first)
        , holds_output(st_.last)
        , pd(x_.act) // parameter bytes (bf16/fp16: 2, fp32: 4)
        , full(r_.recompute_granularity.value_or("") == "full")
        , method(r_.recompute_method.value_or(""))
        , k(r_.recompute_num_layers.value_or(0))
        , ckpt_state(worker ? kWorkerRngState : 0)
        , nc(std::max(1, st_.chunks))
        , graphed(localLayerGraphs(r_, x_))
    {
        rank.stage = stage_index;
        rank.scope = st.scope;
    }

    RankEstimate run()
    {
        stageParameters();
        persistentState();
        layerActivations();
        embeddingAndHead();
        inFlightMicroBatches();
        if (graphed)
            graphPool();
        forwardPhase();
        backwardPhase();
        if (worker && (x.pp > 1 || st.chunks > 1))
            workerPipelineSchedule();
        return optimizerPhases();
    }

private:
    void stageParameters();
    void persistentState();
    void layerActivations();
    void embeddingAndHead();
    void inFlightMicroBatches();
    void graphPool();
    void graphedPhase(Builder& bld, double transient, const char* transient_name) const;
    void forwardPhase();
    void backwardPhase();
    void workerPipelineSchedule();
    RankEstimate optimizerPhases();
    // The activations chunk c of the current chunk-micro-batch holds (the embedding's with chunk 0).
    double chunkActs(int c) const;
    // The activation terms of a phase: the current micro-batch's, the other in-flight ones', the sent ones.
    void actTerms(Builder& bld, double current) const;

    const Recipe& r;
    const Shape& x;
    const StageLayout& st;
    const int stage_index;
    const Active& sel;
    const LayerModels& layers;
    const bool worker;
    const double d, h, T, Tsp, V, t;
    const bool holds_embedding, holds_output;
    const double pd;
    const bool full;
    const std::string method;
    const int k;
    const double ckpt_state;
    const int nc;
    const bool graphed; // Megatron's local CUDA graphs capture every layer (localLayerGraphs)
    RankEstimate rank;
    // stageParameters
    ParamCount params;
    double P = 0;
    // Under PEFT the stage's LoRA adapters, the only parameters with gradients and optimizer state; else
    // the stage's parameters.
    ParamCount adapters;
    ParamCount trained;
    // persistentState
    Builder base;
    double main_bytes = 0, state_bytes = 0, grad_bytes = 0;
    double fp32_main_grads = 0; // Megatron layout, 16-bit gradient buffer: the optimizer step's fp32 copies
    double shard_params
        = 0; // the elements this rank's optimizer steps (its shard under the distributed optimizer)
    // layerActivations
    std::vector<LayerFigures> lf;
    double layers_retained = 0;
    // embeddingAndHead
    double embed = 0, head = 0, head_fwd = 0, head_bwd = 0;
    std::string head_source, head_note;
    // inFlightMicroBatches
    int in_flight = 1; // chunk-micro-batches whose activations are held at once, including the current one
    double m = 1;
    double other_in_flight = 0;
    std::string act_source, act_note;
    double sent_held = 0;
    // graphPool: the local CUDA graphs' private pool (graphed only)
    double pool = 0;
    // the phases
    Builder fwd, bwd;
};

double StageEstimator::chunkActs(int c) const
{
    double a = c == 0 ? embed : 0;
    for (size_t j = 0; j < lf.size(); ++j)
        if (st.chunk[j] == c)
            a += lf[j].retained;
    return a;
}

void StageEstimator::actTerms(Builder& bld, double current) const
{
    bld.add("activations", "saved activations of the in-flight micro-batch", current, act_source, act_note);
    if (other_in_flight > 0)
        bld.add("activations",
            "activations of " + std::to_string(in_flight - 1) + " more in-flight (chunk-)micro-batches",
            other_in_flight, "megatron/core/pipeline_parallel/schedules.py",
            "1F1B: stage p holds min(PP - p, m); interleaved: (PP - p - 1) * 2 + (VPP - 1) * PP + 1 "
            "chunk-micro-batches, each 1/VPP of the stage's layers");
    if (sent_held > 0)
        bld.add("activations", "sent chunk outputs of the in-flight micro-batches", sent_held,
            "megatron/core/pipeline_parallel/schedules.py",
            "deallocate_pipeline_outputs False (ModelParallelConfig's default; Megatron-LM and Bridge "
            "set "
            "True): each sent output [s/CP(/TP under SP), b, h] is kept until its backward");
}

void StageEstimator::stageParameters()
{
    // ---- parameters of the stage ----
    const auto sum = [](ParamCount& into, const ParamCount& p) {
        into.dense += p.dense;
        into.expert += p.expert;
        into.largest = std::max(into.largest, p.largest);
        into.tensors += p.tensors;
        into.linear += p.linear;
    };
    for (int g : st.layers) {
        sum(params, layers.paramsOf(g));
        sum(adapters, layers.adaptersOf(g));
    }
    // A stage with MTP depths and no embedding builds one of its own to re-embed the rolled tokens
    // (gpt_model.py: pre_process or mtp_process; language_module.py setup_embeddings_and_output_layer keeps
    // it in step with the first stage's); a tied output layer there still has its own weight beside it
    // (skip_weight_param_allocation only with pre_process).
    if (holds_embedding || st.mtp_depths > 0) {
        params.add(V * h / t);
        if (x.pos_table > 0)
            params.add(x.pos_table * h);
    }
    if (holds_output) {
        params.add(h);
        if (!x.rms)
            params.add(h);
        // The output layer: its own weight when untied, or (pipeline > 1) the last stage's copy of the
        // tied embedding (language_module.py setup_embeddings_and_output_layer).
        if (x.untied || (!st.first && st.last))
            params.add(V * h / t);
    }
    P = params.total();
    trained = x.peft ? adapters : params;
}

void StageEstimator::persistentState()
{
    // ---- the persistent state ----
    if (x.peft) {
        // Bridge freezes the model before DDP wraps it (setup.py _create_peft_pre_wrap_hook, peft/base.py
        // freeze_model): the frozen parameters stay the modules' own tensors, outside DDP's buffers.
        base.add("parameters", "model parameters (frozen)", P * pd, "megatron/bridge/peft/base.py",
            "every parameter of the model in the training dtype, requires_grad False: no gradient, no main "
            "copy, no optimizer state");
        base.add("parameters", "LoRA adapters", adapters.total() * pd,
            "megatron/core/distributed/param_and_grad_buffer.py",
            "peft.dim x (in + out) / TP per adapted linear (peft/utils.py ParallelLinearAdapter): the DDP "
            "parameter buffer, the only parameters that train");
    } else {
        base.add("parameters", "model parameters", P * pd,
            worker ? kWorkerModel : "megatron/core/distributed/param_and_grad_buffer.py",
            worker ? "one tensor per parameter in the recipe's dtype: biases, position table and output "
                     "layer as the recipe has them (tied: the embedding serves both; a last stage keeps its "
                     "copy)"
                   : "the DDP parameter buffer in the training dtype; bucket padding (to multiples of the DP "
                     "size x 128 elements) left out");
    }
    shard_params = P;
    if (worker) {
        // The distributed optimizer's shard of the rank (MainParamAdamW over the buffer's first slice):
        // dense parameters / (DP x CP), routed experts / expert-DP (their own buffer), as Megatron shards
        // them.
        const bool dist = r.use_distributed_optimizer;
        shard_params = dist ? params.dense / (x.dp * x.cp) + params.expert / x.edp : P;
        // engine/optimizer.cpp trainingLayout: the precision-aware optimizer's moments dtype and int16
        // master remainders beside bf16 parameters, under the distributed optimizer only.
        const bool aware = precisionAwareOptimizer(r);
        const bool remainders = masterWeightsAsRemainders(r);
        const auto stateBytes = [aware](const std::string& d) { return !aware || d == "fp32" ? 4.0 : 2.0; };
        main_bytes = pd == 4 ? 0 : shard_params * (remainders ? 2 : 4);
        state_bytes = shard_params * (stateBytes(r.exp_avg_dtype) + stateBytes(r.exp_avg_sq_dtype))
            + params.tensors * 4.0;
        base.add("main_parameters",
            remainders ? "main parameters as int16 remainders" : "fp32 main parameters", main_bytes,
            kWorkerOpt,
            std::string(remainders ? "the 16 bits of each fp32 master weight its bf16 parameter lacks"
                                   : "an fp32 copy of every 16-bit parameter (none in fp32: the parameter is "
                                     "its own main copy)")
                + (dist ? ", this rank's shard: dense / (DP x CP), experts / expert-DP" : ""));
        base.add("optimizer_states", "AdamW exp_avg, exp_avg_sq, step", state_bytes, kWorkerOpt,
            aware ? "moments of this rank's shard in exp_avg_dtype " + r.exp_avg_dtype
                    + " and exp_avg_sq_dtype " + r.exp_avg_sq_dtype + ", a 0-dim step per piece"
                : dist
                ? "fp32 moments of this rank's shard (dense / (DP x CP), experts / expert-DP) and a 0-dim "
                  "step per "
                  "piece"
                : "fp32 moments of every parameter and a 0-dim step per tensor; not sharded (no "
                  "distributed optimizer)");
        grad_bytes = P * x.grad;
        base.add("gradients", "DDP gradient buffer", grad_bytes, kWorkerOpt,
            std::string("GradBuffer: persistent and contiguous, ")
                + (x.grad == 4 ? "fp32" : "in the parameters' dtype")
                + "; each parameter's autograd gradient is added into it and freed at once");
        if (x.grad != 4 && !aware)
            fp32_main_grads
                = shard_params * 4; // the step's fp32 copies of the rank's (shard of the) gradients
        // Every micro-batch of the step is drawn up front (engine/runner.cpp); the mask and the tables
        // span the whole sequence (s x CP).
        const double seq = x.s * x.cp;
        double inputs = 2 * T * 8 * x.micro_batches;
        if (x.backend == "unfused")
            inputs += seq * seq;
        if (x.mla)
            inputs += 2 * seq * x.dr * d;
        if (!st.last)
            inputs += Tsp * h * d; // the stage's fixed gradient of its sent activation (sent_grad_)
        if (x.fp8)
            base.add("parameters", "fp8 weight copies", params.linear * 2, "backend/engine/fp8.cpp",
                "every Transformer Engine linear weight of the stage as 1-byte codes row-wise and "
                "column-wise "
                "(WeightCache), made at the step's first use and rewritten in place");
        base.add("other", "tokens, labels, causal mask, RoPE tables", inputs, kWorkerModel,
            "int64 token ids and labels of the step's micro-batches; the unfused path's bool causal mask; "
            "MLA's cos/sin tables; a stage without the loss head: the gradient tensor it receives");
    } else {
        const bool dist = r.use_distributed_optimizer;
        // Dense parameters shard over DP x CP (Megatron's intra_dp_cp group: distributed_data_parallel.py,
        // optimizer/__init__.py), experts over expert-DP (which spans CP too).
        const double dense_share = dist ? trained.dense / (x.dp * x.cp) : trained.dense;
        const double expert_share = dist ? trained.expert / x.edp : trained.expert;
        const double sharded = dense_share + expert_share;
        shard_params = sharded;
        grad_bytes = trained.total() * x.grad;
        base.add("gradients", "DDP gradient buffer", grad_bytes,
            "megatron/core/distributed/param_and_grad_buffer.py",
            std::string("persistent and contiguous, ")
                + (x.grad == 4 ? "fp32 (grad_reduce_in_fp32)" : "in the parameters' dtype")
                + ", micro-batches accumulate into it (" + std::to_string(static_cast<int>(x.micro_batches))
                + " per step); bucket padding left out");
        // The precision-aware optimizer (distributed only: megatron/core/optimizer/__init__.py refuses it
        // otherwise): Transformer Engine's FusedAdam keeps the moments in exp_avg(_sq)_dtype and, without
        // fp8 other than delayed scaling, the master weights in main_params_dtype, with bf16 parameters as
        // int16 remainders (store_param_remainders; distrib_optimizer.py, optimizer_config.py
        // use_precision_aware_optimizer_no_fp8_or_ds_fp8); the step reads the 16-bit gradient buffer.
        const bool aware = precisionAwareOptimizer(r);
        const bool te_master = teKeepsMasterWeights(r);
        const auto dtypeBytes = [](const std::string& d) {
            return d == "fp8" ? 1.0 : d == "fp32" ? 4.0 : 2.0;
        };
        if (!x.fp32) {
            const double master = masterWeightsAsRemainders(r) ? 2
                : te_master                                    ? dtypeBytes(r.main_params_dtype)
                                                               : 4;
            main_bytes = sharded * master;
            base.add("main_parameters",
                master == 4                                      ? "fp32 main parameters"
                    : te_master && r.main_params_dtype == "fp32" ? "main parameters as 16-bit remainders"
                                                                 : "16-bit main parameters",
                main_bytes,
                aware      ? "megatron/core/optimizer/distrib_optimizer.py (Transformer Engine FusedAdam "
                             "master_weights)"
                    : dist ? "megatron/core/optimizer/distrib_optimizer.py"
                           : "megatron/core/optimizer/optimizer.py",
                aware ? "the precision-aware optimizer's master weights of this rank's shard (dense / (DP x "
                        "CP), "
                        "experts / "
                        "expert-DP): "
                        + std::string(master == 2 && r.main_params_dtype == "fp32"
                                ? "fp32 kept as the 16 bits a bf16 parameter lacks (store_param_remainders)"
                                : "in main_params_dtype " + r.main_params_dtype)
                    : dist
                    ? "the distributed optimizer's fp32 shard: dense parameters / DP, experts / expert-DP"
                    : "Float16OptimizerWithFloat16Params: an fp32 copy of every parameter");
            if (x.grad != 4 && !r.use_precision_aware_optimizer)
                fp32_main_grads = sharded * 4;
        }
        const double moments = aware ? dtypeBytes(r.exp_avg_dtype) + dtypeBytes(r.exp_avg_sq_dtype) : 8;
        state_bytes = sharded * moments;
        base.add("optimizer_states", "Adam exp_avg, exp_avg_sq", state_bytes,
            dist ? "megatron/core/optimizer/distrib_optimizer.py" : "megatron/core/optimizer/__init__.py",
            aware ? "moments of this rank's shard in exp_avg_dtype " + r.exp_avg_dtype
                    + " and exp_avg_sq_dtype " + r.exp_avg_sq_dtype + " (the precision-aware optimizer)"
                : dist ? "fp32 moments of this rank's shard (dense / (DP x CP), experts / expert-DP)"
                       : "fp32 moments of every parameter on this rank");
        // With fp8_param_gather the parameters are TE's fp8 tensors (1 byte, and their transpose, in the
        // buffer's 2 bytes a parameter): no copy beside them (fixture fp8-dense-tensorwise-paramgather).
        if (x.fp8 && !r.fp8_param_gather)
            base.add("parameters", "fp8 weight copies", params.linear * 2,
                "transformer_engine/pytorch/module/linear.py (quantize_weight, the module's weight "
                "workspace)",
                "every Transformer Engine linear weight of the stage quantized row-wise and column-wise (the "
                "transpose Hopper's backward GEMMs read), 1 byte each; made at the step's first micro-batch "
                "and kept between steps (Megatron passes is_first_microbatch)");
        // DSA's top-k sharing (dsa_indexer_topk_freq > 1): each computing layer leaves its int32 top-k and
        // lengths in a holder on the forward's carrier (dsa.py:1593-1625, :2216): the config itself without
        // an attention mask or packed sequences (Bridge passes none), so one set per computing layer of the
        // stage lives from its forward to the next.
        if (isDsaModel(r) && r.dsa_indexer_topk_freq > 1) {
            double computing = 0;
            for (int g : st.layers)
                computing += layers.kind(g).mixer == LayerMixer::Dsa ? 1 : 0;
            base.add("other", "DSA top-k holder", computing * x.b * x.s * (x.dsa_k + 1) * 4,
                "megatron/core/transformer/experimental_attention_variant/dsa.py:2214-2218",
                "the top-k indices and lengths each of the stage's computing layers leaves for the layers "
                "that reuse them (int32 [b, s, top-k] and [b, s]), replaced by the next forward");
        }
        // The micro-batch on the GPU: only a stage that runs the embedding, the loss or an MTP depth takes
        // one; a middle stage's get_batch returns before the data iterator (pretrain_gpt.py get_batch,
        // Bridge's gpt_step.py get_batch). Megatron-LM moves every key of the batch to the GPU on TP rank 0;
        // Bridge moves what the stage reads (tokens and positions at the embedding or MTP, labels and the
        // loss mask at the loss) and the [b, 1, s, s] mask only when the dataset is asked for it.
        if (st.first || st.last || st.mtp_depths > 0) {
            const bool bridge = r.front_end == InputFormat::BridgeOverrides;
            const bool in = !bridge || st.first || st.mtp_depths > 0, loss = !bridge || st.last;
            // Each key the stage moves with its bytes a token (int64 ids, the fp32 loss mask).
            const std::pair<const char*, double> keys[]
                = { { in ? "tokens" : nullptr, 8 }, { loss ? "labels" : nullptr, 8 },
                      { loss ? "loss mask" : nullptr, 4 }, { in ? "position ids" : nullptr, 8 } };
            const double mask = r.create_attention_mask_in_dataloader ? x.b * x.s * x.s * x.cp : 0;
            double bytes = mask;
            std::string name = "batch:";
            for (const auto& [key, per_token] : keys)
                if (key) {
                    name += std::string(name.back() == ':' ? " " : ", ") + key;
                    bytes += T * per_token;
                }
            if (mask > 0)
                name += ", attention mask";
            base.add("other", name, bytes,
                bridge ? "megatron/bridge/training/gpt_step.py get_batch_from_iterator (Bridge 067f987d)"
                       : "pretrain_gpt.py get_batch, megatron/training/utils.py get_batch_on_this_tp_rank",
                std::string("one micro-batch; ")
                    + (mask > 0 ? "the bool [b, 1, s, s] mask of create_attention_mask_in_dataloader"
                                : "no attention mask (create_attention_mask_in_dataloader false"
                                + std::string(
                                    bridge ? ": Bridge's skip_getting_attention_mask_from_dataset" : "")
                                + ")")
                    + "; the next micro-batch's prefetch left out");
        }
        // The TE spec's layers run their GEMMs through Transformer Engine (the output layer is Megatron's own
        // ColumnParallelLinear: a stage of no layer runs none); MoE layers with moe_grouped_gemm build
        // TEGroupedMLP (TESpecProvider.grouped_mlp_modules), whose grouped GEMMs take the per-stream ones.
        if (x.te && !st.layers.empty()) {
            const bool grouped = x.grouped && std::any_of(st.layers.begin(), st.layers.end(), [&](int g) {
                return layers.kind(g).ffn == LayerFfn::Moe;
            });
            const int count = 1 + (grouped ? kTeComputeStreams : 0);
            base.add("other", "Transformer Engine cuBLAS workspaces",
                count * teCublasWorkspaceBytes(r.gpu_compute_capability),
                "transformer_engine/pytorch/cpp_extensions/gemm.py:34-61 (TE 2.17.1, get_cublas_workspace)",
                std::to_string(count) + (count == 1 ? " workspace" : " workspaces") + " of "
                    + teCublasWorkspaceSize(r.gpu_compute_capability)
                    + (r.gpu_compute_capability >= 90 ? " (compute capability 9.0 and above"
                                                      : " (compute capability below 9.0")
                    + ", gpu_compute_capability " + std::to_string(r.gpu_compute_capability)
                    + "): one for TE's GEMMs"
                    + (grouped ? " and one for each of TE's " + std::to_string(kTeComputeStreams)
                                + " compute streams, which the experts' grouped GEMMs take"
                               : std::string())
                    + "; allocated at the first GEMM and kept for the run (lru-cached)");
        }
    }
    if (x.backend == "unfused") {
        const double np = x.heads / t;
        base.add("other", "global memory buffer (attention scores)", x.b * np * x.s * x.s * d,
            worker ? kWorkerModel : "megatron/core/transformer/dot_product_attention.py",
            "baddbmm's input buffer from get_global_memory_buffer() (beta 0: never written): allocated "
            "once, kept for the whole run");
    }
}

void StageEstimator::layerActivations()
{
    // ---- activations of one micro-batch of this stage ----
    lf.assign(st.layers.size(), LayerFigures {});
    const auto selective = [&](const LayerModel& L, const LayerKind& kind) {
        LayerFigures f;
        f.retained = L.retained(sel, static_cast<int>(checkpointCount(sel, kind, x) * ckpt_state));
        f.replay = L.replay(sel);
        f.fwd_temp = L.forward_temp;
        f.bwd_temp = L.backward_temp;
        f.params = L.params;
        if (L.core_bwd_at != SIZE_MAX) {
            f.core_point = L.retainedUpTo(sel, L.core_bwd_at);
            f.core_replay = L.replayOf(sel, kCoreAttn);
            f.core_temp = L.core_bwd_temp;
        }
        f.fwd_point = L.temp_at == SIZE_MAX ? f.retained : L.retainedUpTo(sel, L.temp_at);
        if (L.end_temp > 0 && f.retained + L.end_temp > f.fwd_point + f.fwd_temp) {
            f.fwd_point = f.retained;
            f.fwd_temp = L.end_temp;
        }
        return f;
    };
    std::vector<LayerFigures> figs(kLayerKindIds);
    for (size_t id = 0; id < figs.size(); ++id)
        if (layers.built[id])
            figs[id] = selective(layers.models[id], layers.kind_of_id[id]);
    LayerFigures mtp_input, mtp_output; // an MTP depth's own parts: no recompute label reaches them
    if (st.mtp_depths > 0) {
        mtp_input = selective(layers.mtp_input, layers.mtp_pieces.front());
        mtp_output = selective(layers.mtp_output, layers.mtp_pieces.back());
    }
    const auto figsOf = [&](int g) -> const LayerFigures& {
        return layers.isMtpInput(g) ? mtp_input
            : layers.isMtpOutput(g) ? mtp_output
                                    : figs[static_cast<size_t>(layers.kind(g).id())];
    };
    const auto depthAt
        = [&](size_t j) { return layers.isMtp(st.layers[j]) ? layers.depth(st.layers[j]) : -1; };
    {
        // Full recompute units per chunk (docs/rules.md "Full recompute"): uniform groups of k layers, block
        // the first k layers of each chunk one by one. An MTP depth is a run of its own
        // (MultiTokenPredictionLayer._checkpointed_forward): uniform checkpoints it whole, its input part to
        // its final layernorm, whatever k (Megatron asserts k == 1, RT8); block leaves it as it is (RT9).
        size_t i = 0;
        while (i < st.layers.size()) {
            size_t end = i;
            while (end < st.layers.size() && st.chunk[end] == st.chunk[i] && depthAt(end) == depthAt(i))
                ++end;
            const int n = static_cast<int>(end - i);
            const bool mtp_depth = depthAt(i) >= 0;
            auto layerAt = [&](size_t j) -> const LayerModel& { return layers.of(st.layers[j]); };
            if (full && (method == "uniform" || method == "block") && k > 0) {
                std::vector<std::pair<int, int>> units; // first, count (checkpointed)
                std::vector<bool> ck;
                if (method == "uniform" && mtp_depth) {
                    units.push_back({ 0, n });
                    ck.push_back(true);
                } else if (method == "uniform") {
                    for (int u = 0; u < n; u += k)
                        units.push_back({ u, std::min(k, n - u) }), ck.push_back(true);
                } else {
                    for (int u = 0; u < n; ++u)
                        units.push_back({ u, 1 }), ck.push_back(!mtp_depth && u < k);
                }
                for (size_t u = 0; u < units.size(); ++u) {
                    const auto [first, count] = units[u];
                    double unit_acts = 0;
                    for (int j = 0; j < count; ++j) {
                        const auto& L = layerAt(i + first + j);
                        const double acts = L.retained(Active {}, 0);
                        unit_acts += acts;
                        auto& f = lf[i + first + j];
                        // A checkpointed unit runs without grad: what its layer would keep up to the
                        // temporary's moment lives beside it as temporaries too.
                        f.fwd_temp = ck[u] && L.nograd_peak >= 0 ? L.nograd_peak
                                                                 : L.forward_temp
                                + (ck[u] && L.temp_at != SIZE_MAX ? L.retainedUpTo(Active {}, L.temp_at) : 0);
                        f.bwd_temp = L.backward_temp;
                        f.params = L.params;
                        f.retained = ck[u] ? 0 : acts;
                        f.fwd_point = ck[u] || L.temp_at == SIZE_MAX ? f.retained
                                                                     : L.retainedUpTo(Active {}, L.temp_at);
                        if (!ck[u] && L.end_temp > 0 && acts + L.end_temp > f.fwd_point + f.fwd_temp) {
                            f.fwd_point = acts;
                            f.fwd_temp = L.end_temp;
                        }
                    }
                    if (ck[u]) {
                        const auto& L0 = layerAt(i + first);
                        lf[i + first].retained = L0.residual + ckpt_state;
                        lf[i + first].fwd_point = lf[i + first].retained;
                        // The unit's replay: every layer's tensors, rebuilt in its backward.
                        auto& last = lf[i + first + count - 1];
                        last.replay = unit_acts;
                        if (!worker) {
                            // The replay's forward runs with grad before its backward: the moment of a layer
                            // that says it can exceed the backward's (replay_forward_moment), beside what the
                            // replay has rebuilt so far and the gradient that arrived.
                            double so_far = 0;
                            for (int j = 0; j < count; ++j) {
                                const auto& L = layerAt(i + first + j);
                                if (L.replay_forward_moment) {
                                    const double before = L.temp_at == SIZE_MAX
                                        ? L.retained(Active {}, 0)
                                        : L.retainedUpTo(Active {}, L.temp_at);
                                    last.replay_fwd = std::max(
                                        last.replay_fwd, so_far + before + L.forward_temp + L.residual);
                                    last.replay_fwd = std::max(last.replay_fwd,
                                        so_far + L.retained(Active {}, 0) + L.end_temp + L.residual);
                                }
                                so_far += L.retained(Active {}, 0);
                            }
                            // Its backward, layer by layer in reverse: at a layer's core attention the
                            // earlier layers' rebuilt tensors, its own up to the core, and the gradients in
                            // flight.
                            so_far = 0;
                            for (int j = 0; j < count; ++j) {
                                const auto& L = layerAt(i + first + j);
                                if (L.core_bwd_at != SIZE_MAX)
                                    last.replay_core = std::max(last.replay_core,
                                        so_far + L.retainedUpTo(Active {}, L.core_bwd_at) + L.core_bwd_temp);
                                so_far += L.retained(Active {}, 0);
                            }
                        }
                        if (worker) {
                            // The worker's replay (engine/checkpoint.cpp): its forward reaches each layer's
                            // temporary beside what the replay keeps so far, with the gradient that arrived
                            // and the generator state the replay captures; its backward, layer by layer in
                            // reverse, each layer's worst moment beside the earlier layers' tensors. The
                            // unit's input is the checkpoint's (its first layer's saved input shares it).
                            double so_far = 0, fwd_worst = 0, bwd_worst = 0;
                            for (int j = 0; j < count; ++j) {
                                const auto& L = layerAt(i + first + j);
                                const double input = j == 0 && !L.entries.empty()
                                    ? retainedBytes(L.entries.front(), Active {})
                                    : 0;
                                if (L.temp_at != SIZE_MAX)
                                    fwd_worst = std::max(fwd_worst,
                                        so_far + L.retainedUpTo(Active {}, L.temp_at) - input + L.forward_temp
                                            + L.residual + ckpt_state);
                                bwd_worst = std::max(bwd_worst, so_far + L.replayBackward(j == 0));
                                so_far += L.retained(Active {}, 0) - input;
                            }
                            last.replay = bwd_worst;
                            last.bwd_temp = 0;
                            last.replay_fwd = fwd_worst;
                        }
                    }
                }
                if (mtp_depth && method == "uniform") {
                    // Besides the re-embedded tokens the depth's checkpoint keeps its other input, the
                    // previous output; outside it the embedding's dropout mask, and after it the depth's
                    // slice of the concatenation the loss reads.
                    lf[i].retained += Tsp * h * d + (x.hidden_dropout > 0 ? Tsp * h : 0);
                    lf[end - 1].retained += Tsp * h * d;
                }
            } else {
                for (size_t j = i; j < end; ++j)
                    lf[j] = figsOf(st.layers[j]);
            }
            i = end;
        }
    }
    for (const auto& f : lf)
        layers_retained += f.retained;
}

void StageEstimator::embeddingAndHead()
{
    // Embedding and head activations.
    if (holds_embedding) {
        if (x.hidden_dropout > 0)
            embed += worker ? Tsp * h * d : Tsp * h * 1; // embedding dropout mask [Korthikanti: sbh]
    }
    if (holds_output) {
        // The final norm keeps its input (the last layer's output) and its statistics; the output layer
        // keeps the final norm's output.
        embed += 0;
        head += Tsp * h * d; // last layer's output
        head
            += x.rms ? (worker ? Tsp * (4 + h * (d == 4 ? 4 : 4 + d)) : Tsp * 4) : 2 * Tsp * (worker ? d : 4);
        if (!x.peft)
            head += Tsp * h * d; // final norm output, kept by the output layer (frozen under PEFT: none)
        double loss_kept = 0; // what one loss keeps for its backward
        if (worker) {
            // backend/engine/cross_entropy.cpp, Megatron's way: the fp32 copy of the logits becomes the
            // softmax in place and is kept (fp32 logits are their own copy); backward writes the gradient
            // into it, cast to the logits' dtype, beside the output layer's input gradient.
            loss_kept = T * V / t * 4; // the rank's vocabulary shard, as Megatron's vocab-parallel loss
            head_fwd = d == 4 ? 0 : T * V / t * d;
            head_bwd = (d == 4 ? 0 : T * V / t * d) + T * h * d;
            head_source = "backend/engine/cross_entropy.cpp";
            head_note
                = "Megatron's cross-entropy: fp32 softmax [T, V] kept; the 16-bit logits during the loss "
                  "and, in backward, their 16-bit gradient and the output layer's input gradient";
        } else if (x.ce_te) {
            // Transformer Engine's parallel_cross_entropy (cross_entropy_loss_fusion with
            // cross_entropy_fusion_impl te; language_module.py compute_language_model_loss): the Triton
            // kernels keep the 16-bit logits and three fp32 statistics per row (max, sum, the target's
            // logit), and write the gradient into the logits in place in backward; no fp32 copy.
            loss_kept = T * V / t * d + T * 3 * 4;
            head_fwd = 0;
            head_bwd = T * h * d;
            head_source = "transformer_engine/pytorch/triton/cross_entropy.py (te_parallel_cross_entropy)";
            head_note = "TE's fused cross-entropy: the 16-bit logits [s*b, V/TP] kept, holding their own "
                        "gradient; in backward the output layer's input gradient in flight";
        } else {
            // tensor_parallel/cross_entropy.py: the fp32 copy of the logits is turned into the softmax in
            // place and kept; the 16-bit logits live through the loss.
            loss_kept = T * V / t * 4;
            head_fwd = T * V / t * d;
            head_bwd = T * V / t * d + T * h * d;
            head_source = "megatron/core/tensor_parallel/cross_entropy.py";
            head_note
                = "vocab-parallel cross-entropy: fp32 softmax [s*b, V/TP] kept; the 16-bit logits and, in "
                  "backward, their 16-bit gradient and the gathered output-layer input in flight";
        }
        head += loss_kept;
        // Each MTP depth's loss (process_mtp_loss, before the main loss: one at a time, its logits alive as
        // the main loss's are at their moment): the same output layer and cross-entropy on the depth's
        // output, which keeps what one loss keeps. With the MTP depths on another stage (a layout's 'm'
        // before the 'L' stage) their outputs come with the decoder's, kept by the output layer here.
        const double mtp_losses = layers.mtp.depths;
        if (mtp_losses > 0) {
            head += mtp_losses * loss_kept + (st.mtp_depths == 0 ? mtp_losses * Tsp * h * d : 0);
            head_note += "; " + std::to_string(layers.mtp.depths) + " MTP loss"
                + (layers.mtp.depths == 1 ? "" : "es") + " kept the same way (process_mtp_loss)";
        }
    }
}

void StageEstimator::inFlightMicroBatches()
{
    // ---- in-flight micro-batches (pipeline schedules, schedules.py) ----
    m = x.micro_batches;
    if (x.pp > 1) {
        const int p = stage_index;
        if (st.chunks == 1) {
            in_flight = static_cast<int>(std::min<double>(x.pp - p, m));
        } else {
            const double total = m * st.chunks;
            double warmup = (x.pp - p - 1) * 2 + (st.chunks - 1) * x.pp;
            warmup = std::min(warmup, total);
            in_flight = static_cast<int>(std::min(warmup + 1, total));
        }
    }
    rank.in_flight_micro_batches = in_flight;
    // The current chunk-micro-batch holds its own chunk's activations only (the stage's other VPP chunks
    // are among the other in-flight ones): the embedding's with chunk 0, the head's with the last.
    // Every other in-flight chunk-micro-batch holds its chunk's share of the stage's activations.
    other_in_flight = in_flight > 1 ? (in_flight - 1) * (layers_retained + embed) / st.chunks : 0;

    act_source = worker ? kWorkerModel : kKorthikanti;
    act_note = worker
        ? "LibTorch 1.13 CPU autograd: what each op of the worker's layer saves (docs/estimator.md)"
        : "Korthikanti's per-layer terms generalised to GQA / MLA / SwiGLU / MoE and the recipe's recompute; "
          "each region's checkpoint keeps its inputs, output-discard regions free their outputs";
    // The chunk outputs a stage sends on: with deallocate_pipeline_outputs False, Megatron keeps each one's
    // data until its backward (schedules.py deallocate_output_tensor); with True only its autograd node. On
    // the last stage the loss chunk sends nothing (interleaved: its share of the in-flight ones).
    if (!worker && x.pp > 1 && !r.deallocate_pipeline_outputs) {
        const double sending = st.last ? in_flight * (st.chunks - 1.0) / st.chunks : in_flight;
        sent_held = std::floor(sending + 0.5) * Tsp * h * d;
    }
}

void StageEstimator::graphPool()
{
    // ---- local CUDA graphs (cuda_graphs.py) ----
    // After the first step every layer's forward and backward are captured, in execution order, into one
    // private pool (CudaGraphManager.global_mempool); each graph's saved tensors, inputs, outputs and
    // temporaries are allocated there during capture and handed back to the pool (make_weakref, the
    // autograd graph of the capture freed), so the caching allocator's allocated counters no longer see
    // them while replays keep writing there. The pool holds the largest set the captures had alive at once:
    // the layers' saved tensors up to a layer's forward or backward moment (its temporaries and replay
    // included), for every in-flight micro-batch (without pipelining one set of graphs serves every
    // micro-batch, reuse_cudagraphs; with it each micro-batch has its own). The estimate takes that set,
    // as the eager estimate counts it, as the pool.
    for (int c = 0; c < nc; ++c) {
        double before = 0, all = 0;
        for (size_t j = 0; j < lf.size(); ++j)
            if (st.chunk[j] == c)
                all += lf[j].retained;
        double below = all;
        for (size_t j = 0; j < lf.size(); ++j) {
            if (st.chunk[j] != c)
                continue;
            const auto& f = lf[j];
            pool = std::max(pool, before + f.fwd_point + f.fwd_temp);
            before += f.retained;
        }
        pool = std::max(pool, all);
        for (size_t j = lf.size(); j-- > 0;) {
            if (st.chunk[j] != c)
                continue;
            const auto& f = lf[j];
            pool = std::max(pool, below + std::max({ f.replay + f.bwd_temp, f.replay_fwd, f.replay_core }));
            below -= f.retained;
        }
    }
    if (in_flight > 1)
        pool += (in_flight - 1) * layers_retained / st.chunks;
}

// A phase under local CUDA graphs: what lives outside the graphs (the embedding's and the head's tensors, the
// loss's transient, sent outputs) at the phase's worst moment, and the graphs' pool, there at every moment.
void StageEstimator::graphedPhase(Builder& bld, double transient, const char* transient_name) const
{
    const double own_embed = nc == 1 || !holds_output ? embed : 0; // the current chunk's embedding part
    bld.add("activations", "saved activations outside the graphed layers (embedding, head)",
        (holds_output ? head : 0) + own_embed, head_source, head_note);
    bld.add("activations", "the same of the other in-flight micro-batches",
        in_flight > 1 ? (in_flight - 1) * embed / st.chunks : 0,
        "megatron/core/pipeline_parallel/schedules.py", "1F1B / interleaved in-flight micro-batches");
    bld.add("activations", "sent chunk outputs of the in-flight micro-batches", sent_held,
        "megatron/core/pipeline_parallel/schedules.py", "deallocate_pipeline_outputs False");
    bld.add("activations", "local CUDA graphs' private pool", pool,
        "megatron/core/transformer/cuda_graphs.py (CudaGraphManager, _CudaGraphRunner.create_fwd_graph)",
        "every layer captured: the layers' saved tensors and temporaries of the in-flight micro-batches live "
        "in the graphs' pool, device memory that torch's allocated counters (Megatron's `max allocated`) do "
        "not see after capture; the pool's own fragmentation is not counted");
    bld.add("transient", transient_name, transient, head_source, head_note);
}

void StageEstimator::forwardPhase()
{
    // ---- forward ----
    fwd = base;
    if (graphed) {
        graphedPhase(fwd, holds_output ? head_fwd : 0, "logits during the loss");
        return;
    }
    {
        // At the loss (last stage) or at the last layer's forward.
        double best = 0, best_acts = 0;
        std::string what;
        if (holds_output) {
            best_acts = chunkActs(nc - 1) + head;
            best = head_fwd;
            what = "logits";
        }
        for (int c = 0; c < nc; ++c) {
            double before = c == 0 ? embed : 0;
            for (size_t j = 0; j < lf.size(); ++j) {
                if (st.chunk[j] != c)
                    continue;
                const auto& f = lf[j];
                const double here = before + f.fwd_point + f.fwd_temp;
                if (here > best_acts + best) {
                    best_acts = before + f.fwd_point;
                    best = f.fwd_temp;
                    what = "layer";
                }
                before += f.retained;
            }
        }
        actTerms(fwd, best_acts);
        fwd.add("transient", what == "logits" ? "logits during the loss" : "a layer's forward temporaries",
            best, what == "logits" ? head_source : act_source,
            what == "logits" ? head_note : "the largest tensor alive only inside one layer's forward");
    }
}

void StageEstimator::backwardPhase()
{
    // ---- backward ----
    bwd = base;
    if (graphed) {
        graphedPhase(bwd, holds_output ? head_bwd : 0, "the loss's gradient");
        return;
    }
    {
        double best_total = -1, best_acts = 0, best_tr = 0, best_grads = 0;
        std::string what;
        auto consider = [&](double acts, double transient, double grads, const std::string& w) {
            if (acts + transient + grads > best_total) {
                best_total = acts + transient + grads;
                best_acts = acts;
                best_tr = transient;
                best_grads = grads;
                what = w;
            }
        };
        // worker: the gradient buffer holds every gradient (base); autograd's own gradient of a parameter
        // lives until the buffer's hook has added it, except the tied embedding's output-layer part, which
        // autograd keeps in the embedding's input buffer until the lookup's gradient joins it.
        double grads_so_far = 0;
        const double acts_all = layers_retained + embed;
        if (holds_output) {
            consider(chunkActs(nc - 1) + head, head_bwd, 0, "loss");
            if (worker) {
                // the output layer's weight gradient arrives while the logits' gradient is alive
                consider(acts_all + head - T * V / t * 4, T * V / t * d + T * h * d, V / t * h * d,
                    "output layer");
                if (!x.untied)
                    grads_so_far = V / t * h * d;
            }
        }
        for (int c = nc; c-- > 0;) {
            double below = chunkActs(c);
            for (size_t j = lf.size(); j-- > 0;) {
                if (st.chunk[j] != c)
                    continue;
                const auto& f = lf[j];
                below -= f.retained;
                consider(below + f.retained, std::max({ f.replay + f.bwd_temp, f.replay_fwd, f.replay_core }),
                    grads_so_far, "layer");
                if (f.core_point >= 0)
                    consider(below + f.core_point, f.core_replay + f.core_temp, grads_so_far, "layer");
            }
        }
        if (worker && holds_embedding) {
            consider(embed, T * h * d * 2, grads_so_far + V / t * h * d, "embedding");
        }
        actTerms(bwd, best_acts);
        bwd.add("transient",
            what == "loss" ? "the loss's gradient"
                : what == "layer"
                ? "a layer's backward: replay of its checkpointed region and gradients in flight"
                : "gradients in flight",
            best_tr, what == "loss" ? head_source : act_source,
            what == "layer"
                ? "the replay rebuilds what the region keeps without recompute; the gradient of the "
                  "largest tensor and the residual gradient are in flight alongside"
                : head_note);
        if (worker)
            bwd.add("gradients", "parameter gradients in flight", best_grads, kWorkerModel,
                "autograd's gradient of a parameter before the buffer's hook adds it (engine/optimizer.cpp "
                "MainGradPostHook); a tied embedding's output-layer part waits for the lookup's");
    }
}

void StageEstimator::workerPipelineSchedule()
{
    // ---- the worker's pipeline schedule ----
    // A stage of PP > 1 (or with VPP chunks) runs engine/layout_rank.cpp pipelineSchedule (Megatron's 1F1B
    // or interleaved order, schedules.py): each chunk-micro-batch keeps its chunk's saved tensors, the
    // activation it received (a leaf, unless its first layer keeps it anyway) and the one it sends, until
    // its backward; the peaks are taken over the schedule's steps.
    const double boundary = Tsp * h * d; // [s / CP (/ TP under SP), b, h]
    const bool full_units = full && (method == "uniform" || method == "block") && k > 0;
    struct ChunkFig {
        size_t i0 = 0, i1 = 0;
        bool from_tokens = false, loss = false;
        double held = 0, fwd_acts = 0, fwd_tr = 0;
    };
    std::vector<ChunkFig> cf(static_cast<size_t>(nc));
    size_t j = 0;
    for (int c = 0; c < nc; ++c) {
        auto& f = cf[static_cast<size_t>(c)];
        f.i0 = j;
        while (j < lf.size() && st.chunk[j] == c)
            ++j;
        f.i1 = j;
        f.from_tokens = c == 0 && st.first;
        f.loss = c == nc - 1 && st.last;
        double acts = f.from_tokens ? embed : 0;
        if (!f.from_tokens && f.i0 < f.i1 && !full_units) {
            const LayerModel& L0 = layers.of(st.layers[f.i0]);
            if (L0.entries.empty() || retainedBytes(L0.entries.front(), sel) <= 0)
                acts += boundary; // the received activation, kept by the schedule only
        }
        double best = -1;
        for (size_t q = f.i0; q < f.i1; ++q) {
            if (acts + lf[q].fwd_point + lf[q].fwd_temp > best) {
                best = acts + lf[q].fwd_point + lf[q].fwd_temp;
                f.fwd_acts = acts + lf[q].fwd_point;
                f.fwd_tr = lf[q].fwd_temp;
            }
            acts += lf[q].retained;
        }
        // The loss head, or the activation sent on: kept by the schedule unless deallocated once sent
        // (deallocate_pipeline_outputs, as Megatron's deallocate_output_tensor; engine/runner.cpp).
        acts += f.loss ? head : (r.deallocate_pipeline_outputs ? 0 : boundary);
        const double end_tr = f.loss ? head_fwd : 0;
        if (acts + end_tr > best) {
            f.fwd_acts = acts;
            f.fwd_tr = end_tr;
        }
        f.held = acts;
    }
    // One chunk's backward: its worst point as (activations, transient, gradients).
    struct Point {
        double acts = 0, tr = 0, grads = 0;
        double total() const { return acts + tr + grads; }
    };
    // Gradients: the buffer (base) takes each parameter's as it arrives; one in flight at a time.
    auto chunkBackward = [&](const ChunkFig& f) {
        Point best { 0, 0, 0 };
        bool any = false;
        auto consider = [&](double a, double tr, double g) {
            if (!any || a + tr + g > best.total())
                best = { a, tr, g };
            any = true;
        };
        double below = f.held, tr_in = 0;
        if (f.loss) {
            consider(f.held, head_bwd, 0);
            consider(f.held - T * V / t * 4, T * V / t * d + T * h * d, V / t * h * d);
            below -= head;
        } else {
            tr_in = boundary; // the gradient the next stage sends back
        }
        for (size_t q = f.i1; q-- > f.i0;) {
            below -= lf[q].retained;
            consider(below + lf[q].retained,
                std::max(
                    { lf[q].replay + lf[q].bwd_temp + tr_in, lf[q].replay_fwd, lf[q].replay_core + tr_in }),
                0);
        }
        if (f.from_tokens)
            consider(embed, T * h * d * 2, V / t * h * d);
        return best;
    };
    // The schedule (layout_rank.cpp pipelineSchedule): micro-batches in groups of PP, through the
    // chunks in order forward and in reverse backward; warm-up, steady 1F1B, cool-down.
    const int pp = std::max(1, static_cast<int>(x.pp)), mb = std::max(1, static_cast<int>(m));
    std::vector<int> fwd_chunks, bwd_chunks;
    for (int g0 = 0; g0 < mb; g0 += pp) {
        const int g1 = std::min(mb, g0 + pp);
        for (int v = 0; v < nc; ++v)
            for (int i = g0; i < g1; ++i)
                fwd_chunks.push_back(v);
        for (int v = nc - 1; v >= 0; --v)
            for (int i = g0; i < g1; ++i)
                bwd_chunks.push_back(v);
    }
    std::vector<std::pair<bool, int>> ops;
    const int total = static_cast<int>(fwd_chunks.size());
    const int warmup
        = std::clamp(nc == 1 ? pp - stage_index - 1 : (pp - stage_index - 1) * 2 + (nc - 1) * pp, 0, total);
    size_t fi = 0, bi = 0;
    for (; fi < static_cast<size_t>(warmup); ++fi)
        ops.push_back({ true, fwd_chunks[fi] });
    while (fi < fwd_chunks.size()) {
        ops.push_back({ true, fwd_chunks[fi++] });
        ops.push_back({ false, bwd_chunks[bi++] });
    }
    while (bi < bwd_chunks.size())
        ops.push_back({ false, bwd_chunks[bi++] });
    double held = 0;
    int now = 0, most = 0;
    Point best_f, best_b;
    double others_f = 0, others_b = 0;
    int n_f = 0, n_b = 0;
    bool seen_f = false, seen_b = false;
    for (const auto& [is_fwd, c] : ops) {
        const ChunkFig& f = cf[static_cast<size_t>(c)];
        if (is_fwd) {
            const Point p { f.fwd_acts, f.fwd_tr, 0 };
            if (!seen_f || held + p.total() > others_f + best_f.total()) {
                best_f = p;
                others_f = held;
                n_f = now;
            }
            seen_f = true;
            held += f.held;
            most = std::max(most, ++now);
        } else {
            held -= f.held;
            --now;
            const Point p = chunkBackward(f);
            if (!seen_b || held + p.total() > others_b + best_b.total()) {
                best_b = p;
                others_b = held;
                n_b = now;
            }
            seen_b = true;
        }
    }
    rank.in_flight_micro_batches = most;
    auto build = [&](const Point& p, double others, int n_others, const char* tr_name) {
        Builder bl = base;
        bl.add("activations", "saved activations of the in-flight micro-batch", p.acts, act_source,
            act_note + "; the received and the sent activation of a pipeline stage");
        bl.add("activations",
            "activations of " + std::to_string(n_others) + " more in-flight chunk-micro-batches", others,
            "engine/layout_rank.cpp pipelineSchedule",
            "the worker's 1F1B / interleaved schedule (Megatron's order): every chunk-micro-batch "
            "forwarded and not yet backwarded keeps its chunk's activations");
        bl.add("transient", tr_name, p.tr, act_source,
            "the largest tensor alive only inside the current step of the schedule");
        bl.add("gradients", "a parameter's gradient before the buffer takes it", p.grads, kWorkerOpt,
            "autograd allocates the gradient (the recipe's dtype); the hook adds it into the buffer and "
            "frees it");
        return bl;
    };
    fwd = build(best_f, others_f, n_f, "a chunk's forward temporaries");
    bwd = build(best_b, others_b, n_b, "a chunk's backward: replay and gradients in flight");
}

RankEstimate StageEstimator::optimizerPhases()
{
    // ---- optimizer step and optimizer-state initialisation ----
    Builder opt = base;
    if (worker) {
        // MainParamAdamW::step: Megatron's prepare_grads copies every gradient of a 16-bit buffer to fp32
        // (kept until the next zero_grad), then the update.
        if (fp32_main_grads > 0)
            opt.add("transient", "fp32 main gradients", fp32_main_grads, kWorkerOpt,
                "16-bit gradient buffer: the step copies its (shard of the) gradients to fp32, as "
                "_copy_model_grads_to_main_grads does");
        // The precision-aware optimizer's one pass (the CUDA kernel or the host loop) makes no temporary.
        const bool one_pass = precisionAwareOptimizer(r);
        if (!one_pass && r.adam_implementation == "torch")
            opt.add("transient", "torch.optim.AdamW's square roots of every second moment", state_bytes / 2,
                kWorkerOpt, "the multi-tensor AdamW: one fp32 temporary as large as the main parameters");
        else if (!one_pass)
            opt.add("transient", "AdamW temporaries (sqrt, division) of the largest tensor",
                2 * params.largest * 4, kWorkerOpt,
                "the unfused AdamW of LibTorch 1.13 on CPU; a CUDA build's fused kernel needs none");
    } else {
        if (fp32_main_grads > 0)
            // Made by the step (_copy_model_grads_to_main_grads) and dropped by the next zero_grad,
            // before the next forward: they belong to the optimizer phase only.
            opt.add("gradients", "fp32 main gradients", fp32_main_grads,
                r.use_distributed_optimizer ? "megatron/core/optimizer/distrib_optimizer.py"
                                            : "megatron/core/optimizer/optimizer.py",
                "16-bit gradient buffer: the step copies its (shard of the) gradients to fp32");
        if (r.adam_implementation == "torch")
            opt.add("transient", "torch.optim.AdamW's square roots of every second moment", state_bytes / 2,
                "torch/optim/adam.py _multi_tensor_adam (Megatron's fallback, "
                "megatron/core/optimizer/__init__.py)",
                "without Transformer Engine and Apex the step is torch's multi-tensor AdamW: one fp32 "
                "temporary as large as this rank's main parameters (measured: docs/benchmarks.md)");
        else
            opt.add("transient", "optimizer step temporaries", 0,
                "megatron/core/optimizer/distrib_optimizer.py",
                "FusedAdam (Transformer Engine or Apex) and the grad-norm work in place; none counted");
    }
    if (graphed)
        opt.add("activations", "local CUDA graphs' private pool", pool,
            "megatron/core/transformer/cuda_graphs.py",
            "kept between steps (captured after the first step's forward and backward, before its optimizer "
            "step); not in torch's allocated counters");
    Builder init = opt; // the moments are created by the first step: the same peak
    rank.optimizer_params = shard_params;
    rank.parameters = P + (x.peft ? adapters.total() : 0);
    rank.parameter_tensors = params.tensors + (x.peft ? adapters.tensors : 0);
    rank.trained_parameters = trained.total();
    rank.trained_parameter_tensors = trained.tensors;

    rank.phases = { fwd.phase("forward"), bwd.phase("backward"), opt.phase("optimizer"),
        init.phase("optimizer-init") };
    for (auto& p : rank.phases) {
        if (graphed)
            p.graph_pool_bytes = toBytes(pool);
        if (p.peak_bytes > rank.peak_bytes) {
            rank.peak_bytes = p.peak_bytes;
            rank.peak_phase = p.phase;
        }
        if (p.phase != "optimizer-init")
            rank.max_allocated_bytes = std::max(rank.max_allocated_bytes, p.peak_bytes - p.graph_pool_bytes);
    }
    // The first iteration: Adam's moments are created by its optimizer step (torch.optim / Transformer
    // Engine's FusedAdam initialise their state lazily; the distributed optimizer keeps its fp32 main
    // parameters from the start; the worker's optimizer-init step likewise), so its forward and backward
    // hold everything but the moments.
    for (const auto& p : rank.phases) {
        const int64_t held = p.phase == "forward" || p.phase == "backward"
            ? p.peak_bytes - p.category("optimizer_states")
            : p.phase == "optimizer-init" ? p.peak_bytes
                                          : 0;
        if (held > rank.first_iteration_peak_bytes) {
            rank.first_iteration_peak_bytes = held;
            rank.first_iteration_phase = p.phase;
        }
    }
    return rank;
}

RankEstimate estimateStage(const Recipe& r, const Shape& x, const StageLayout& st, int stage_index,
    const Active& sel, const LayerModels& layers)
{
    return StageEstimator(r, x, st, stage_index, sel, layers).run();
}

} // namespace

const char* layoutName(Layout l)
{
    return l == Layout::Worker ? "worker" : "megatron";
}

std::optional<Layout> layoutFromName(const std::string& name)
{
    if (name == "megatron")
        return Layout::Megatron;
    if (name == "worker")
        return Layout::Worker;
    return std::nullopt;
}

int64_t PhaseEstimate::category(const std::string& name) const
{
    int64_t sum = 0;
    for (const auto& t : terms)
        if (t.category == name)
            sum += t.bytes;
    return sum;
}

const PhaseEstimate* RankEstimate::phase(const std::string& name) const
{
    for (const auto& p : phases)
        if (p.phase == name)
            return &p;
    return nullptr;
}

const PhaseEstimate& RankEstimate::peak() const
{
    const PhaseEstimate* p = phase(peak_phase);
    return p ? *p : phases.front();
}

bool estimatorModelsLabel(std::string_view label)
{
    for (int reg = 1; reg < kRegionCount; ++reg)
        if (label == regionLabel(reg))
            return true;
    return false;
}

std::vector<RecomputeChoice> recomputeChoices(const Recipe& r)
{
    std::vector<RecomputeChoice> out;
    RecomputeChoice none;
    out.push_back(none);
    for (const auto& label : allowedRecomputeModules(r.profile)) {
        const LabelEffect e = recomputeLabelEffect(r, label);
        if (!e.exists || !e.has_effect)
            continue;
        // Only the labels this estimate has a region for.
        if (!estimatorModelsLabel(label))
            continue;
        RecomputeChoice c;
        c.granularity = "selective";
        c.modules = { label };
        out.push_back(c);
    }
    RecomputeChoice uniform;
    uniform.granularity = "full";
    uniform.method = "uniform";
    uniform.num_layers = 1;
    out.push_back(uniform);
    const int chunk_layers = std::max(1, largestChunkLayers(r));
    RecomputeChoice block = uniform;
    block.method = "block";
    block.num_layers = chunk_layers;
    out.push_back(block);
    return out;
}

int hottestRankOfLayout(const Recipe& r)
{
    const MemoryEstimate e = estimateMemory(r, Layout::Megatron);
    const int stage = e.ranks.empty() ? 0 : e.ranks[static_cast<size_t>(e.hottest)].stage;
    return firstRankOfStage(parallelSizes(r), stage);
}

MemoryEstimate estimateMemory(const Recipe& r, Layout layout)
{
    MemoryEstimate e;
    e.layout = layout;
    e.choice = choiceSpelling(recipeChoice(r));
    // Sizes the arithmetic below does not take: it would divide by zero, or hold an entry for each of
    // billions of layers or stages (the rules name each: RS23, RS28, RS36).
    const long long chunks = static_cast<long long>(r.pipeline_model_parallel_size)
        * r.virtual_pipeline_model_parallel_size.value_or(1);
    if (r.num_layers < 1 || r.hidden_size < 1 || r.num_attention_heads < 1 || r.seq_length < 1
        || r.micro_batch_size < 1)
        e.not_estimated = "the recipe needs num_layers, hidden_size, num_attention_heads, seq_length and "
                          "micro_batch_size of at least 1";
    else if (r.num_layers > kMaxLayers)
        e.not_estimated = "num_layers=" + std::to_string(r.num_layers) + " is more than the "
            + std::to_string(kMaxLayers) + " layers an estimate takes (RS36)";
    else if (r.tensor_model_parallel_size < 1 || r.pipeline_model_parallel_size < 1
        || r.context_parallel_size < 1 || r.expert_model_parallel_size < 1 || r.data_parallel_size < 1
        || r.virtual_pipeline_model_parallel_size.value_or(1) < 1)
        e.not_estimated = "every parallel size must be at least 1 (RS23)";
    else if (isEvenPipelineSplit(r) && chunks > pipelineSplitLayers(r))
        e.not_estimated = std::to_string(chunks) + " pipeline chunks for "
            + std::to_string(pipelineSplitLayers(r)) + " layers in the split (RS28)";
    else if (isHybrid(r) && hybridLayerCount(r) != r.num_layers)
        e.not_estimated = "num_layers=" + std::to_string(r.num_layers) + " is not the "
            + std::to_string(hybridLayerCount(r)) + " layers of hybrid_layer_pattern (M8, B10, RT17)";
    else if (const std::string why = pipelineSplitProblem(r); !why.empty())
        e.not_estimated = "Megatron builds no model with this pipeline split: " + why;
    // DeepSeek sparse attention: the Megatron layout models its cuDNN / FlashMLA path (megatronDsa); the
    // worker builds no DSA layer (engine/model.cpp), and the other paths are said, never counted as MLA.
    if (e.not_estimated.empty() && isDsaModel(r)) {
        if (layout == Layout::Worker)
            e.not_estimated
                = "experimental_attention_variant=dsa: the worker (recompute-bench) builds no "
                  "DeepSeek sparse attention layer, so there is no worker layout to estimate; the "
                  "megatron layout models it";
        else if (const std::string why = dsaPathNotModelled(r); !why.empty())
            e.not_estimated = "experimental_attention_variant=dsa: " + why;
    }
    if (e.not_estimated.empty() && isHybrid(r)) {
        std::vector<LayerKind> kinds = layerKinds(r);
        if (layout == Layout::Megatron)
            for (const LayerKind& k : mtpShape(r).layers)
                kinds.push_back(k);
        for (const LayerKind& k : kinds)
            if (k.mixer == LayerMixer::Unmodelled) {
                e.not_estimated = "hybrid_layer_pattern has " + layerKindName(k)
                    + " layers, which the estimate does not build (RS38, RT18)";
                break;
            }
    }
    if (!e.not_estimated.empty())
        return e;
    const Shape x = shapeOf(r, layout);
    const Active sel = activeOf(r);
    const LayerModels layers(r, x);
    const auto stages = stagesOf(r, layers, layout);
    for (size_t p = 0; p < stages.size(); ++p)
        e.ranks.push_back(estimateStage(r, x, stages[p], static_cast<int>(p), sel, layers));
    for (const RankEstimate& rank : e.ranks) {
        if (rank.peak_bytes >= int64_t(kMaxEstimateBytes)) {
            MemoryEstimate none;
            none.layout = layout;
            none.choice = e.choice;
            none.not_estimated = "a rank would hold 1 EiB (2^60 bytes) or more: sizes no device takes";
            return none;
        }
    }
    for (size_t i = 0; i < e.ranks.size(); ++i) {
        if (e.ranks[i].peak_bytes > e.peak_bytes) {
            e.peak_bytes = e.ranks[i].peak_bytes;
            e.max_allocated_bytes = e.ranks[i].max_allocated_bytes;
            e.hottest = static_cast<int>(i);
        }
        e.first_iteration_peak_bytes
            = std::max(e.first_iteration_peak_bytes, e.ranks[i].first_iteration_peak_bytes);
    }
    if (layout == Layout::Worker && e.ranks.size() > 1) {
        // The worker runs by default the stage the Megatron layout names the hottest
        // (engine/layout_rank.cpp layoutRank): the Worker layout's figure is that rank's.
        const MemoryEstimate megatron = estimateMemory(r, Layout::Megatron);
        e.hottest = std::clamp(megatron.hottest, 0, static_cast<int>(e.ranks.size()) - 1);
        e.peak_bytes = e.ranks[static_cast<size_t>(e.hottest)].peak_bytes;
        e.max_allocated_bytes = e.ranks[static_cast<size_t>(e.hottest)].max_allocated_bytes;
    }
    const std::string dtype = x.fp32 ? "fp32" : (r.bf16 ? "bf16" : "fp16");
    if (layout == Layout::Worker) {
        e.assumptions
            = { "layout: recompute-bench as it is today (one rank of the layout on one device, every "
                "pipeline stage, autograd's gradients, AdamW on fp32 main parameters, no distributed "
                "optimizer); the hottest rank is the one the worker runs by default (the Megatron "
                "layout's hottest stage)",
                  "dtype " + dtype
                      + "; CPU allocations as LibTorch 1.13 makes them (dropout masks in the input's dtype)",
                  [&] {
                      std::ostringstream o;
                      o << "parallel: TP " << x.tp << (x.sp ? " (sequence parallel)" : "") << ", PP " << x.pp;
                      if (x.vpp > 1)
                          o << " (VPP " << x.vpp << ")";
                      o << ", CP " << x.cp << ", EP " << x.ep << ", expert-TP " << x.etp << ", DP " << x.dp
                        << "; " << x.micro_batches
                        << " micro-batches per step, in flight as the worker's schedule keeps them; "
                           "collectives as local operations of the same shapes (engine/model.cpp); MoE "
                           "routing balanced (every rank receives tokens x top-k)";
                      return o.str();
                  }() };
        if (isPeft(r))
            e.assumptions.push_back("peft=" + *r.peft
                + ": the worker refuses it (it freezes nothing and builds no adapter), and this layout is "
                  "the "
                  "job trained in full (peft=null); the Megatron layout models the LoRA job");
    } else {
        std::ostringstream o;
        o << "parallel: TP " << x.tp << (x.sp ? " (sequence parallel)" : "") << ", PP " << x.pp;
        if (x.vpp > 1)
            o << " (VPP " << x.vpp << ")";
        o << ", CP " << x.cp << ", EP " << x.ep << ", expert-TP " << x.etp << ", DP " << x.dp
          << ", expert-DP " << x.edp << "; " << x.micro_batches << " micro-batches per step";
        e.assumptions
            = { "layout: Megatron-LM / Megatron Core on a GPU (caching allocator's allocated bytes)", o.str(),
                  "dtype " + dtype + "; gradient buffer " + (x.grad == 4 ? "fp32" : dtype)
                      + "; distributed optimizer " + (r.use_distributed_optimizer ? "on" : "off"),
                  "padded vocabulary " + std::to_string(static_cast<int64_t>(x.vocab)) + "; attention "
                      + r.attention_backend
                      + (r.attention_backend == "unfused" ? (x.fused_softmax
                                 ? " with the fused masked-softmax kernel"
                                 : std::string(" with torch softmax") + (x.softmax_fp32 ? " in fp32" : ""))
                                                          : ""),
                  "MoE routing balanced (every rank receives tokens x top-k), dropless unless a capacity "
                  "factor is set",
                  "left out: the CUDA context, torch's own cuBLAS workspaces and NCCL's buffers, allocator "
                  "fragmentation, communication buffers of overlapped collectives, fp8 scaling state" };
        if (x.peft) {
            std::string targets;
            for (const LoraModuleName& n : loraModuleNames())
                if (x.lora & n.bit)
                    targets += (targets.empty() ? "" : ", ") + std::string(n.name);
            e.assumptions.push_back("PEFT: LoRA of rank " + std::to_string(r.peft_dim) + " on "
                + (targets.empty() ? std::string("no module of this model") : targets)
                + "; every other parameter frozen (no gradient, main copy or optimizer state), and a frozen "
                  "linear keeps no input for a weight gradient"
                + (isDsaModel(r) ? std::string("; in DSA layers the absorbed up-projection's products keep "
                                               "their inputs as in training (high there)")
                                 : std::string()));
        }
        if (x.te) {
            const int cc = r.gpu_compute_capability;
            e.assumptions.push_back("GPU compute capability " + std::to_string(cc / 10) + "."
                + std::to_string(cc % 10) + " (gpu_compute_capability " + std::to_string(cc) + "; "
                + std::to_string(Recipe {}.gpu_compute_capability)
                + " unless the recipe says otherwise: Hopper, H100 / H200): Transformer Engine's cuBLAS "
                  "workspaces of "
                + teCublasWorkspaceSize(cc) + " each");
        }
        if (layers.mtp.depths > 0) {
            std::string kinds;
            for (const LayerKind& k : layers.mtp.layers)
                kinds += (kinds.empty() ? "" : ", ") + layerKindName(k);
            e.assumptions.push_back("multi-token prediction: " + std::to_string(layers.mtp.depths) + " depth"
                + (layers.mtp.depths == 1 ? "" : "s") + " of " + kinds
                + " with enorm, hnorm, eh_proj and a final layernorm, "
                + (layers.mtp.built < layers.mtp.depths ? "one layer's parameters (mtp_use_repeated_layer)"
                                                        : "each with its own parameters")
                + ", an embedding of their own on a stage without the first one, and one more loss a depth "
                  "(multi_token_prediction.py); under full recompute a depth is one checkpoint (uniform) or "
                  "none (block)");
        }
        if (isDsaModel(r)) {
            std::ostringstream dsa;
            dsa << "DSA: absorbed MLA with DSAttention on the cuDNN / FlashMLA path as Megatron Core "
                   "bridge-pin (2a75ac12) has it (guide and main the same; dev's differs), "
                << static_cast<int64_t>(x.np_pad) << " FlashMLA heads (Hopper's padding), top-k "
                << static_cast<int64_t>(x.dsa_k) << " of " << static_cast<int64_t>(x.skv) << " keys"
                << (r.dsa_indexer_topk_freq > 1
                           ? ", every " + std::to_string(r.dsa_indexer_topk_freq) + "th layer's top-k shared"
                           : std::string())
                << (x.dsa_loss ? ", the sparse indexer loss in the forward with grad" : ", no indexer loss")
                << "; the cuDNN and FlashMLA kernels' own workspaces left out (Megatron's top-k scratch "
                   "budget counted); sequences unpacked (THD packing not modelled)";
            e.assumptions.push_back(dsa.str());
        }
        // CUDA graphs (cuda_graph_impl): what the figures are under each implementation.
        if (localLayerGraphs(r, x))
            e.assumptions.push_back(
                "local CUDA graphs: every layer's saved tensors and temporaries are in the graphs' private "
                "pool "
                "(counted in the peak), which Megatron's `max allocated` does not see after capture "
                "(max_allocated_bytes: the peak less the pool); the pool's own fragmentation is not counted");
        else if (r.cuda_graph_impl == "local" || r.cuda_graph_impl == "full_iteration")
            e.assumptions.push_back("cuda_graph_impl " + r.cuda_graph_impl
                + " on MoE or hybrid layers, sub-layer cuda_graph_modules or the whole iteration: estimated "
                  "as eager (the graphs' pool and its effect on `max allocated` are not modelled)");
        else if (r.cuda_graph_impl == "transformer_engine")
            e.assumptions.push_back(
                "Transformer Engine CUDA graphs: the eager peak of the warm-up steps before capture "
                "(cuda_graph_warmup_steps, 3 by default), which is what `max allocated` reads; the graphs' "
                "static buffers and pool after capture are not counted");
    }
    return e;
}

std::string dsaPathNotModelled(const Recipe& r)
{
    if (!isDsaModel(r))
        return "";
    const std::string path = shapeOf(r, Layout::Megatron).dsa_path;
    return path == "cudnn" ? "" : path;
}

LayerActivations activationsPerLayer(const Recipe& r, Layout layout)
{
    const Shape x = shapeOf(r, layout);
    const Active sel = activeOf(r);
    const double state = layout == Layout::Worker ? kWorkerRngState : 0;
    const auto bytes = [&](const LayerKind& k) {
        const LayerModel m = layerModel(x, k);
        return toBytes(m.retained(sel, static_cast<int>(checkpointCount(sel, k, x) * state)));
    };
    LayerActivations a;
    const LayerMixer attention = isDsaModel(r) ? LayerMixer::Dsa : LayerMixer::Attention;
    a.dense = bytes(LayerKind { attention, LayerFfn::Dense, 0 });
    if (x.experts > 0)
        a.moe = bytes(LayerKind { attention, LayerFfn::Moe, 0 });
    std::vector<int> seen;
    for (const LayerKind& k : layerKinds(r)) {
        if (std::find(seen.begin(), seen.end(), k.id()) != seen.end())
            continue;
        seen.push_back(k.id());
        a.by_kind.push_back({ layerKindName(k), bytes(k) });
    }
    return a;
}

nlohmann::json estimateToJson(const MemoryEstimate& e)
{
    using nlohmann::json;
    json ranks = json::array();
    for (const auto& r : e.ranks) {
        json phases = json::array();
        for (const auto& p : r.phases) {
            json cats = json::object();
            json terms = json::array();
            for (const auto& t : p.terms) {
                cats[t.category] = cats.value(t.category, int64_t(0)) + t.bytes;
                terms.push_back({ { "category", t.category }, { "name", t.name }, { "bytes", t.bytes },
                    { "source", t.source }, { "note", t.note } });
            }
            phases.push_back({ { "phase", p.phase }, { "peak_bytes", p.peak_bytes }, { "categories", cats },
                { "graph_pool_bytes", p.graph_pool_bytes }, { "terms", terms } });
        }
        json cats = json::object();
        for (const auto& t : r.peak().terms)
            cats[t.category] = cats.value(t.category, int64_t(0)) + t.bytes;
        ranks.push_back({ { "stage", r.stage }, { "scope", r.scope }, { "peak_bytes", r.peak_bytes },
            { "max_allocated_bytes", r.max_allocated_bytes }, { "phase", r.peak_phase },
            { "in_flight_micro_batches", r.in_flight_micro_batches },
            { "first_iteration",
                { { "peak_bytes", r.first_iteration_peak_bytes }, { "phase", r.first_iteration_phase } } },
            { "categories", cats }, { "phases", phases } });
    }
    return { { "layout", layoutName(e.layout) }, { "choice", e.choice },
        { "peak_allocated_bytes", e.peak_bytes }, { "max_allocated_bytes", e.max_allocated_bytes },
        { "first_iteration_peak_allocated_bytes", e.first_iteration_peak_bytes },
        { "hottest_stage", e.ranks.empty() ? 0 : e.ranks[static_cast<size_t>(e.hottest)].stage },
        { "ranks", ranks }, { "assumptions", e.assumptions } };
}

std::vector<RankedCandidate> rankCandidatesByEstimate(const Recipe& resolved,
    const std::vector<RecomputeChoice>& candidates, std::optional<double> target_gb, Layout layout,
    double margin)
{
    std::vector<RankedCandidate> fit, over;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const MemoryEstimate e = estimateMemory(candidateRecipe(resolved, candidates[i]), layout);
        RankedCandidate c;
        c.index = i;
        c.label = choiceSpelling(candidates[i]);
        c.peak_bytes = e.peak_bytes;
        c.hottest_stage = e.ranks.empty() ? 0 : e.ranks[static_cast<size_t>(e.hottest)].stage;
        const double limit = target_gb ? *target_gb * kBytesPerGb * (1.0 - margin) : 0;
        if (target_gb && static_cast<double>(e.peak_bytes) > limit) {
            c.fits = false;
            c.skip_reason = "estimated peak " + fmtGB(static_cast<double>(e.peak_bytes)) + " on stage "
                + std::to_string(c.hottest_stage) + " (" + e.ranks[static_cast<size_t>(e.hottest)].peak_phase
                + ") is over the target " + fmtGB(*target_gb * kBytesPerGb)
                + (margin > 0 ? " less a " + std::to_string(int(margin * 100)) + "% margin" : "");
            over.push_back(c);
        } else {
            fit.push_back(c);
        }
    }
    std::stable_sort(over.begin(), over.end(),
        [](const RankedCandidate& a, const RankedCandidate& b) { return a.peak_bytes < b.peak_bytes; });
    fit.insert(fit.end(), over.begin(), over.end());
    return fit;
}

} // namespace rs
