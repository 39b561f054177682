// SPDX-License-Identifier: Apache-2.0
// Retained activations, measured with the CPU allocator probe, drop where and by about as much as the
// architecture says: each expectation below is written from the tensors the region keeps for backward
// (fp32, 4 bytes an element), not from a previous measurement.
#include <mutex>

#include <QtTest>

#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;

Q_DECLARE_METATYPE(rs::enginetest::Arch)

namespace {

constexpr int64_t kF32 = 4;

QString mb(int64_t bytes)
{
    return QString::number(bytes) + QStringLiteral(" B");
}

// Every checkpoint, normal or output-discard, keeps the CPU generator's state (as Megatron's do) so that the
// replay draws the same dropout masks: a few kB that the tiny shapes here must account for.
int64_t rngStateBytes()
{
    auto gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
    std::lock_guard<std::mutex> lock(gen.mutex());
    return static_cast<int64_t>(gen.get_state().nbytes());
}

// |measured - expected| <= tolerance * expected
bool near(int64_t measured, int64_t expected, double tolerance)
{
    return std::abs(static_cast<double>(measured - expected))
        <= tolerance * std::abs(static_cast<double>(expected));
}

// A Transformer Engine stack under FP8 (hybrid format): Llama-like dense layers, or every layer MoE with
// grouped experts; widths large enough that the saved activations dwarf the scales.
Recipe fp8Recipe(bool moe, const std::string& scaling, bool fp8 = true)
{
    Recipe r = tinyRecipe(Arch::DenseFusedGqa);
    r.transformer_impl = "transformer_engine";
    r.hidden_size = 256;
    r.ffn_hidden_size = 512;
    if (fp8) {
        r.fp8 = "hybrid";
        r.fp8_recipe = scaling;
    }
    if (moe) {
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 128;
        r.moe_grouped_gemm = true;
    }
    return r;
}

// The elements of the weights Transformer Engine's linears hold (TE keeps a quantized copy of each).
int64_t teLinearWeightElements(const engine::Model& model)
{
    int64_t n = 0;
    for (const auto& [name, p] : model.parameters())
        for (const char* te :
            { "linear_qkv.weight", "linear_proj.weight", "linear_fc1.weight", "linear_fc2.weight" })
            if (name.find(te) != std::string::npos && name.find("router") == std::string::npos)
                n += p.numel();
    return n;
}

} // namespace

class TestEngineMemory : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void probeSeesAllocationsAndFrees();
    void unfusedCoreAttnFreesScoresAndProbabilities();
    void softmaxInActivationDtypeKeepsLess();
    void fullUniformKeepsOnlyGroupInputs();
    void fullBlockIsLinearInK();
    void layernormDiscardsBothNormOutputs();
    void layernormSkipsFusedNormsUnderTheTeSpec_data();
    void layernormSkipsFusedNormsUnderTheTeSpec();
    void moeActDiscardsTheExpertActivation();
    void mlaUpProjDiscardsExpandedQkv();
    void mlpFreesTheDenseMlpRegion();
    void sharedExpertsFreesTheSharedMlp();
    void moeFreesMoreThanItsInnerBoundaries();
    void fusedActivationKeepsOnlyFc1Output_data();
    void fusedActivationKeepsOnlyFc1Output();
    void fp8KeepsTwoBytesOfEachTeLinearWeight();
    void fp8SavesTeLinearInputsInOneByte_data();
    void fp8SavesTeLinearInputsInOneByte();
    void fp8MoeActDiscardsFc2Codes();
};

void TestEngineMemory::probeSeesAllocationsAndFrees()
{
    auto probe = engine::MemoryProbe::create(torch::Device(torch::kCPU));
    const auto before = probe->read();
    {
        auto t = torch::empty({ 1024, 256 }, torch::kFloat32);
        QCOMPARE(probe->read().allocated - before.allocated, int64_t(1024 * 256 * kF32));
    }
    const auto after = probe->read();
    QCOMPARE(after.allocated, before.allocated);
    QCOMPARE(after.peak_allocated - before.allocated, int64_t(1024 * 256 * kF32));
    probe->resetPeak();
    QCOMPARE(probe->read().peak_allocated, after.allocated);
}

void TestEngineMemory::unfusedCoreAttnFreesScoresAndProbabilities()
{
    // Unfused attention keeps, per layer, the fp32 softmax output, the dropout mask and the dropped
    // probabilities ([b, np, s, s] each; the mask is fp32 in LibTorch 1.13's CPU dropout, 1 byte in 2.x's
    // native_dropout). core_attn keeps only q, k, v, which the projections keep anyway.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.seq_length = 64; // make the s^2 tensors dominate
    const int64_t scores = int64_t(r.micro_batch_size) * r.num_attention_heads * r.seq_length * r.seq_length;
    const auto none = runStep(r);
    const auto ckpt = runStep(selective(r, { "core_attn" }));
    const int64_t saved = none.retained - ckpt.retained;
    const int64_t low = r.num_layers * scores * (2 * kF32 + 1);
    const int64_t high = r.num_layers * scores * (3 * kF32);
    QVERIFY2(saved >= low && saved <= high + high / 50,
        qPrintable(QStringLiteral("saved %1, expected %2 .. %3").arg(mb(saved), mb(low), mb(high))));
}

void TestEngineMemory::softmaxInActivationDtypeKeepsLess()
{
    // bf16 unfused attention. attention_softmax_in_fp32: softmax keeps its fp32 output [b, np, s, s] (4
    // bytes an element); without it softmax runs in bf16 and keeps a bf16 output (2 bytes). The dropout
    // mask and the dropped probabilities that bmm keeps are bf16 either way.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.seq_length = 64;
    r.bf16 = true;
    const int64_t scores = int64_t(r.micro_batch_size) * r.num_attention_heads * r.seq_length * r.seq_length;
    r.attention_softmax_in_fp32 = true;
    const auto fp32 = runStep(r);
    r.attention_softmax_in_fp32 = false;
    const auto bf16 = runStep(r);
    const int64_t saved = fp32.retained - bf16.retained;
    const int64_t expected = r.num_layers * scores * (kF32 - 2);
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
    // apply_query_key_layer_scaling turns the fp32 softmax back on (TransformerConfig).
    r.apply_query_key_layer_scaling = true;
    QCOMPARE(runStep(r).retained, fp32.retained);
}

void TestEngineMemory::fullUniformKeepsOnlyGroupInputs()
{
    // uniform keeps only each group's input [s, b, h]: k=1 keeps n inputs, k=n keeps one.
    const Recipe r = tinyRecipe(Arch::DenseUnfused);
    const int64_t input = int64_t(r.seq_length) * r.micro_batch_size * r.hidden_size * kF32;
    const int64_t per_group = input + rngStateBytes();
    const auto k1 = runStep(full(r, "uniform", 1));
    const auto kn = runStep(full(r, "uniform", r.num_layers));
    QCOMPARE(k1.retained - kn.retained, (r.num_layers - 1) * per_group);
    // k=2 of 3 layers: groups [0,1] and [2] keep two inputs.
    const auto k2 = runStep(full(r, "uniform", 2));
    QCOMPARE(k2.retained - kn.retained, per_group);
    // And none of it approaches the no-recompute run.
    const auto none = runStep(r);
    QVERIFY(none.retained > k1.retained + r.num_layers * input);
}

void TestEngineMemory::fullBlockIsLinearInK()
{
    // block checkpoints the first k layers one by one: each step of k trades one layer's activations for
    // its input. k=0 is the no-recompute run; k=n equals uniform k=1.
    const Recipe r = tinyRecipe(Arch::DenseUnfused);
    std::vector<int64_t> retained;
    for (int k = 0; k <= r.num_layers; ++k)
        retained.push_back(runStep(full(r, "block", k)).retained);
    QCOMPARE(retained[0], runStep(r).retained);
    QCOMPARE(retained[r.num_layers], runStep(full(r, "uniform", 1)).retained);
    const int64_t step = retained[0] - retained[1];
    QVERIFY(step > 0);
    for (int k = 1; k < r.num_layers; ++k)
        QCOMPARE(retained[k] - retained[k + 1], step);
}

void TestEngineMemory::layernormDiscardsBothNormOutputs()
{
    // Output-discard of input_layernorm and pre_mlp_layernorm: both [s, b, h] outputs are freed (their
    // consumers' saved references stay valid and are refilled in backward), and the norm's own mean/rstd
    // ([s, b] each) are not kept because the region ran without a graph.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.hidden_size = 256; // norm outputs well above the generator states
    const int64_t tokens = int64_t(r.seq_length) * r.micro_batch_size;
    const int64_t outputs = r.num_layers * 2 * tokens * r.hidden_size * kF32;
    const int64_t stats = r.num_layers * 2 * 2 * tokens * kF32;
    const int64_t expected = outputs + stats - r.num_layers * 2 * rngStateBytes();
    const auto none = runStep(r);
    const auto ln = runStep(selective(r, { "layernorm" }));
    const int64_t saved = none.retained - ln.retained;
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::layernormSkipsFusedNormsUnderTheTeSpec_data()
{
    // RT1: under the TE spec a dense layer's norms are fused into the next linear (IdentityOp modules), so
    // the label discards only MLA's input norm and the MoE layers' pre-MLP norm. Rows: the number of norm
    // outputs ([s, b, h] each, with their mean / rstd) the label discards under the TE spec, against what it
    // saves per norm under the local spec (every norm a module).
    QTest::addColumn<int>("arch");
    QTest::addColumn<QString>("impl");
    QTest::addColumn<int>("discarded");
    QTest::newRow("dense te") << int(Arch::DenseUnfused) << QStringLiteral("transformer_engine") << 0;
    // MLA + MoE: layer 0 dense, layers 1-2 MoE; every input norm is MLA's, pre-MLP norms on MoE layers only.
    QTest::newRow("mla moe te") << int(Arch::MlaMoe) << QStringLiteral("transformer_engine") << 3 + 2;
}

void TestEngineMemory::layernormSkipsFusedNormsUnderTheTeSpec()
{
    QFETCH(int, arch);
    QFETCH(QString, impl);
    QFETCH(int, discarded);
    Recipe r = tinyRecipe(Arch(arch));
    r.transformer_impl = impl.toStdString();
    r.hidden_size = 256; // norm outputs well above the generator states
    Recipe local = r;
    local.transformer_impl = "local";
    const auto none = runStep(r);
    const int64_t saved = none.retained - runStep(selective(r, { "layernorm" })).retained;
    // One norm's share: what the label saves under the local spec (every norm a module), per norm.
    const int64_t all_norms = 2 * r.num_layers;
    const int64_t per_norm
        = (runStep(local).retained - runStep(selective(local, { "layernorm" })).retained) / all_norms;
    QVERIFY(per_norm > 0);
    const int64_t expected = discarded * per_norm;
    QVERIFY2(discarded == 0 ? saved == 0 : near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::moeActDiscardsTheExpertActivation()
{
    // SwiGLU experts: without moe_act the activation region keeps silu(a), silu(a)*b and the output
    // (silu(a)*b)*probs, each [tokens*topk, moe_ffn]; FC1's output and the probabilities are kept by the
    // region's input either way. Two MoE layers.
    const Recipe r = tinyRecipe(Arch::MlaMoe);
    const int64_t routed = int64_t(r.seq_length) * r.micro_batch_size * r.moe_router_topk;
    const int64_t expected = 2 * (3 * routed * *r.moe_ffn_hidden_size * kF32 - rngStateBytes());
    const auto none = runStep(r);
    const auto act = runStep(selective(r, { "moe_act" }));
    const int64_t saved = none.retained - act.retained;
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::mlaUpProjDiscardsExpandedQkv()
{
    // mla_up_proj frees query and key [s, b, nh, dn+dr] and value [s, b, nh, dv]. Nothing else of the region
    // was kept without it: the RoPE products keep nothing (the cos/sin tables need no gradient) and the
    // up-projections' outputs are only narrowed and concatenated.
    Recipe r = tinyRecipe(Arch::MlaNoQLoraUnfused);
    const int64_t tokens = int64_t(r.seq_length) * r.micro_batch_size;
    const int64_t nh = r.num_attention_heads, dn = r.qk_head_dim, dr = r.qk_pos_emb_head_dim,
                  dv = r.v_head_dim;
    const int64_t qkv = tokens * nh * (2 * (dn + dr) + dv) * kF32;
    const auto none = runStep(r);
    const auto up = runStep(selective(r, { "mla_up_proj" }));
    const int64_t saved = none.retained - up.retained;
    const int64_t expected = r.num_layers * (qkv - rngStateBytes());
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::mlpFreesTheDenseMlpRegion()
{
    // GeLU MLP: FC1's output (kept by GeLU) and GeLU's output (kept by FC2), [s, b, ffn] each; the region's
    // input is the pre-MLP norm output, which FC1 keeps anyway.
    const Recipe r = tinyRecipe(Arch::DenseUnfused);
    const int64_t expected = r.num_layers
        * (2 * int64_t(r.seq_length) * r.micro_batch_size * *r.ffn_hidden_size * kF32 - rngStateBytes());
    const auto none = runStep(r);
    const auto mlp = runStep(selective(r, { "mlp" }));
    const int64_t saved = none.retained - mlp.retained;
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::sharedExpertsFreesTheSharedMlp()
{
    // SwiGLU shared experts on every token: FC1's output [T, 2F] (kept through its two halves), silu(a) and
    // silu(a)*b [T, F] each; the region's input is the MoE layer's input, which the router keeps anyway.
    Recipe r = tinyRecipe(Arch::MlaMoe);
    r.moe_shared_expert_intermediate_size = 256;
    const int64_t tokens = int64_t(r.seq_length) * r.micro_batch_size;
    const int64_t moe_layers = 2;
    const int64_t expected
        = moe_layers * (4 * tokens * *r.moe_shared_expert_intermediate_size * kF32 - rngStateBytes());
    const auto none = runStep(r);
    const auto shared = runStep(selective(r, { "shared_experts" }));
    const int64_t saved = none.retained - shared.retained;
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::moeFreesMoreThanItsInnerBoundaries()
{
    // The whole-MoE checkpoint keeps only the layer's input: it frees what moe_act and shared_experts free
    // and also the router, permutation and FC1/FC2 outputs.
    Recipe r = tinyRecipe(Arch::MlaMoe);
    r.moe_shared_expert_intermediate_size = 256;
    const auto none = runStep(r);
    const int64_t inner = (none.retained - runStep(selective(r, { "moe_act" })).retained)
        + (none.retained - runStep(selective(r, { "shared_experts" })).retained);
    const int64_t whole = none.retained - runStep(selective(r, { "moe" })).retained;
    QVERIFY2(whole > inner,
        qPrintable(QStringLiteral("moe saved %1, moe_act + shared_experts %2").arg(mb(whole), mb(inner))));
    // And the permuted tokens [T*topk, h] alone are part of the difference.
    const int64_t permuted
        = int64_t(r.seq_length) * r.micro_batch_size * r.moe_router_topk * r.hidden_size * kF32;
    QVERIFY(whole - inner > permuted);
}

void TestEngineMemory::fusedActivationKeepsOnlyFc1Output_data()
{
    // What the eager path keeps and the fused bias activation (bias_activation_fusion) does not, per layer:
    // gated (SwiGLU / GeGLU) dense MLP and shared experts: act(a) [T, F], kept by act(a) * b; routed experts:
    // act(a) and act(a) * b [T*topk, moe_ffn], kept by the multiply by the probabilities (plain GeLU: the
    // latter only); plain GeLU dense: nothing (GeLU keeps its input either way). In units of those tensors:
    // dense, routed, shared.
    QTest::addColumn<Arch>("arch");
    QTest::addColumn<QString>("activation"); // swiglu | geglu | gelu
    QTest::addColumn<bool>("grouped");
    QTest::addColumn<QStringList>("modules");
    QTest::addColumn<int>("dense");
    QTest::addColumn<int>("routed");
    QTest::addColumn<int>("shared");
    const auto row = [](const char* name, Arch arch, const char* act, bool grouped, QStringList modules,
                         int dense, int routed, int shared) {
        QTest::newRow(name) << arch << QString::fromLatin1(act) << grouped << modules << dense << routed
                            << shared;
    };
    row("dense swiglu", Arch::DenseFusedGqa, "swiglu", false, {}, 1, 0, 0);
    row("dense geglu", Arch::DenseUnfused, "geglu", false, {}, 1, 0, 0);
    row("dense gelu", Arch::DenseUnfused, "gelu", false, {}, 0, 0, 0);
    row("dense swiglu mlp", Arch::DenseFusedGqa, "swiglu", false, { QStringLiteral("mlp") }, 0, 0, 0);
    row("moe swiglu grouped", Arch::MlaMoe, "swiglu", true, {}, 1, 2, 1);
    row("moe swiglu sequential", Arch::MlaMoe, "swiglu", false, {}, 1, 2, 1);
    row("moe gelu sequential", Arch::MlaMoe, "gelu", false, {}, 0, 1, 0);
    row("moe swiglu moe_act", Arch::MlaMoe, "swiglu", true, { QStringLiteral("moe_act") }, 1, 0, 1);
    row("moe swiglu shared_experts", Arch::MlaMoe, "swiglu", true, { QStringLiteral("shared_experts") }, 1, 2,
        0);
    row("moe swiglu moe", Arch::MlaMoe, "swiglu", true, { QStringLiteral("moe") }, 1, 0, 0);
    row("moe swiglu mlp", Arch::MlaMoe, "swiglu", true, { QStringLiteral("mlp") }, 0, 2, 1);
}

void TestEngineMemory::fusedActivationKeepsOnlyFc1Output()
{
    QFETCH(Arch, arch);
    QFETCH(QString, activation);
    QFETCH(bool, grouped);
    QFETCH(QStringList, modules);
    QFETCH(int, dense);
    QFETCH(int, routed);
    QFETCH(int, shared);
    const auto [eager, fused] = activationPair(arch, activation, grouped, modules);
    const int64_t tokens = int64_t(eager.seq_length) * eager.micro_batch_size;
    int64_t moe_layers = 0;
    if (eager.num_moe_experts)
        for (int f : eager.moe_layer_freq)
            moe_layers += f;
    const int64_t dense_layers = eager.num_layers - moe_layers;
    const int64_t expected = kF32
        * (dense * dense_layers * tokens * *eager.ffn_hidden_size
            + routed * moe_layers * tokens * eager.moe_router_topk * eager.moe_ffn_hidden_size.value_or(0)
            + shared * moe_layers * tokens * eager.moe_shared_expert_intermediate_size.value_or(0));
    const auto e = runStep(eager);
    const auto f = runStep(fused);
    // What backward starts with, and the forward pass's peak (at its end, with the loss).
    const QString detail
        = QStringLiteral("retained %1 vs %2, forward peak %3 vs %4, expected %5 less")
              .arg(mb(f.retained), mb(e.retained), mb(f.forward_peak), mb(e.forward_peak), mb(expected));
    QCOMPARE(e.retained - f.retained, expected);
    QVERIFY2(e.forward_peak - f.forward_peak == expected, qPrintable(detail));
}

void TestEngineMemory::fp8KeepsTwoBytesOfEachTeLinearWeight()
{
    // Row-wise and column-wise codes, one byte each, of every TE linear weight (qkv, proj, fc1, fc2, the
    // grouped experts), made at the step's first forward and reused in place by the next steps.
    for (const bool moe : { false, true }) {
        const Recipe r = fp8Recipe(moe, "tensorwise");
        const auto config = engine::modelConfig(r, 0);
        engine::Model model(config, engine::recomputePlan(r, config), torch::Device(torch::kCPU), 1234);
        const auto [tokens, labels] = model.batch(1235);
        QCOMPARE(model.fp8WeightBytes(), int64_t(0));
        for (int step = 0; step < 2; ++step) {
            model.beginStep();
            for (int micro_batch = 0; micro_batch < 2; ++micro_batch)
                model.loss(tokens, labels).backward();
            QCOMPARE(model.fp8WeightBytes(), 2 * teLinearWeightElements(model));
        }
    }
}

void TestEngineMemory::fp8SavesTeLinearInputsInOneByte_data()
{
    // What FP8 saves against the same stack without it, per layer, in fp32 elements turned to 1-byte codes
    // (3 bytes an element): linear_qkv's and linear_fc1's inputs (the norms' outputs, kept by nothing
    // else), FC2's (the SwiGLU output); under MoE the experts' permuted tokens [R, h] and their activation
    // [R, F] instead of FC1 / FC2's. linear_proj keeps the context itself (every recipe but delayed: no
    // change) or its codes (delayed: with unfused attention the context, the probabilities x V product, is
    // kept by nothing else and goes too; whether a fused kernel keeps its output differs by LibTorch build).
    QTest::addColumn<bool>("moe");
    QTest::addColumn<QString>("scaling");
    QTest::addColumn<QString>("backend");
    QTest::newRow("dense tensorwise") << false << QStringLiteral("tensorwise") << QStringLiteral("fused");
    QTest::newRow("dense tensorwise unfused")
        << false << QStringLiteral("tensorwise") << QStringLiteral("unfused");
    QTest::newRow("dense delayed unfused") << false << QStringLiteral("delayed") << QStringLiteral("unfused");
    QTest::newRow("moe tensorwise") << true << QStringLiteral("tensorwise") << QStringLiteral("fused");
}

void TestEngineMemory::fp8SavesTeLinearInputsInOneByte()
{
    QFETCH(bool, moe);
    QFETCH(QString, scaling);
    QFETCH(QString, backend);
    Recipe r = fp8Recipe(moe, scaling.toStdString());
    Recipe plain = fp8Recipe(moe, scaling.toStdString(), false);
    r.attention_backend = plain.attention_backend = backend.toStdString();
    const int64_t T = int64_t(r.seq_length) * r.micro_batch_size, h = r.hidden_size;
    const int64_t R = T * r.moe_router_topk, F = *r.ffn_hidden_size, Fm = r.moe_ffn_hidden_size.value_or(0);
    const int64_t per_layer = moe ? 3 * (T * h + R * h + R * Fm) : 3 * (T * h + T * h + T * F);
    const int64_t proj = scaling == QLatin1String("delayed") ? 3 * T * h : 0;
    const int64_t expected = r.num_layers * (per_layer + proj);
    const auto config = engine::modelConfig(r, 0);
    const engine::Model model(config, engine::recomputePlan(r, config), torch::Device(torch::kCPU), 1);
    const int64_t weight_codes = 2 * teLinearWeightElements(model);
    const auto with = runStep(r);
    const auto without = runStep(plain);
    const int64_t saved = without.retained - (with.retained - weight_codes);
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
}

void TestEngineMemory::fp8MoeActDiscardsFc2Codes()
{
    // Grouped SwiGLU experts under FP8: without moe_act the activation region keeps silu(a) and silu(a) * b
    // (the multiplies' saved inputs), and FC2 keeps the codes of the region's output [R, F] (1 byte), not
    // the output; moe_act discards all three, the codes with the output (Megatron's activation hands FC2
    // its quantized output, which the label frees), and rebuilds them for FC2's backward.
    const Recipe r = fp8Recipe(true, "tensorwise");
    const int64_t R = int64_t(r.seq_length) * r.micro_batch_size * r.moe_router_topk;
    const int64_t F = *r.moe_ffn_hidden_size;
    const int64_t expected = r.num_layers * (2 * R * F * kF32 + R * F - rngStateBytes());
    const auto none = runStep(r);
    const auto act = runStep(selective(r, { "moe_act" }));
    const int64_t saved = none.retained - act.retained;
    QVERIFY2(near(saved, expected, 0.02),
        qPrintable(QStringLiteral("saved %1, expected %2").arg(mb(saved), mb(expected))));
    // The rebuilt codes are the ones FC2 saved: the gradients do not move.
    for (const auto& [name, g] : none.grads)
        QVERIFY2(g.defined() == act.grads.at(name).defined()
                && (!g.defined() || torch::allclose(g, act.grads.at(name), 1e-5, 1e-6)),
            name.c_str());
}

QTEST_GUILESS_MAIN(TestEngineMemory)
#include "tst_engine_memory.moc"
