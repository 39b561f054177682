// SPDX-License-Identifier: Apache-2.0
// The training job around the layers: DDP's gradient buffer with micro-batch accumulation, the distributed
// optimizer's shard, tied embeddings, position embeddings, linear biases, the padded vocabulary, and the
// peak attribution of the probe. CPU, fp32 (bf16 only where nothing runs).
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "core/model_shape.h"
#include "engine/memory_probe.h"
#include "engine/optimizer.h"
#include "engine/runner.h"
#include "engine_test_util.h"

Q_DECLARE_METATYPE(rs::Recipe)

using namespace rs;
using namespace rs::enginetest;
using nlohmann::json;
using namespace Qt::StringLiterals;

namespace {

Recipe noDropout(Recipe r)
{
    r.attention_dropout = 0;
    r.hidden_dropout = 0;
    return r;
}

// An fp32 master weight from its bf16 parameter and int16 remainder, in torch ops (not the worker's
// element code): the parameter rounds the master to nearest with the low half's top bit rounding up, so a
// negative remainder means the high half was raised by one.
torch::Tensor joinedMaster(const torch::Tensor& param, const torch::Tensor& remainder)
{
    const auto low = remainder.to(torch::kLong).bitwise_and(0xffff);
    const auto high
        = (param.view(torch::kInt16).to(torch::kLong).bitwise_and(0xffff) - (low >= 0x8000).to(torch::kLong))
              .bitwise_and(0xffff);
    auto bits = high * 65536 + low; // 0 .. 2^32 - 1
    bits = bits - (bits >= (int64_t(1) << 31)).to(torch::kLong) * (int64_t(1) << 32);
    return bits.to(torch::kInt32).view(torch::kFloat32);
}

int64_t countElements(const engine::Model& model)
{
    int64_t n = 0;
    for (const auto& [name, p] : model.parameters())
        n += p.numel();
    return n;
}

bool hasParam(const engine::Model& model, const std::string& name)
{
    for (const auto& [n, p] : model.parameters())
        if (n == name)
            return true;
    return false;
}

std::unique_ptr<engine::Model> build(const Recipe& r, uint64_t seed = 7)
{
    const auto config = engine::modelConfig(r);
    return std::make_unique<engine::Model>(config, engine::recomputePlan(r, config), torch::kCPU, seed);
}

} // namespace

class TestEngineLayout : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { torch::set_num_threads(1); }
    void accumulationEqualsOneBigBatch_data();
    void accumulationEqualsOneBigBatch();
    void gradBufferDtypeAndSize_data();
    void gradBufferDtypeAndSize();
    void distributedOptimizerShards_data();
    void distributedOptimizerShards();
    void shardedStepUpdatesOnlyTheShard();
    void stepMakesFp32GradientCopies_data();
    void stepMakesFp32GradientCopies();
    void stepMatchesReferenceAdamW_data();
    void stepMatchesReferenceAdamW();
    void precisionAwareOptimizer_data();
    void precisionAwareOptimizer();
    void precisionAwareRefusals_data();
    void precisionAwareRefusals();
    void microBatchesFromGlobalBatch_data();
    void microBatchesFromGlobalBatch();
    void tiedAndUntiedEmbeddings();
    void positionEmbeddings_data();
    void positionEmbeddings();
    void linearBiases();
    void paddedVocabulary_data();
    void paddedVocabulary();
    void moeAuxLossAddsToTheLoss();
    void regionsAreCountedWhereTheyAllocate();
    void attributionAccountsForThePeak_data();
    void attributionAccountsForThePeak();
};

void TestEngineLayout::accumulationEqualsOneBigBatch_data()
{
    QTest::addColumn<Recipe>("recipe");
    Recipe dense = noDropout(tinyRecipe(Arch::DenseUnfused));
    QTest::newRow("none") << dense;
    QTest::newRow("core_attn") << selective(dense, { "core_attn" });
    QTest::newRow("mlp (tail)") << selective(dense, { "mlp" });
    Recipe no_bias = dense;
    no_bias.add_bias_linear = false;
    QTest::newRow("full uniform 1 (residual tail)") << full(no_bias, "uniform", 1);
    Recipe gqa = noDropout(tinyRecipe(Arch::DenseFusedGqa));
    gqa.position_embedding_type = "rope";
    gqa.untie_embeddings_and_output_weights = true;
    QTest::newRow("gqa rope untied") << gqa;
}

void TestEngineLayout::accumulationEqualsOneBigBatch()
{
    // Two micro-batches accumulated into the buffer (each loss halved, as Megatron divides by the number
    // of micro-batches) give the gradient of the mean loss over both, i.e. one batch of twice the size.
    QFETCH(Recipe, recipe);
    auto small = build(recipe);
    engine::GradBuffer buffer(small->parameters(), torch::kFloat32, false, 1);
    const auto first = small->batch(11), second = small->batch(12);
    for (const auto& [tokens, labels] : { first, second })
        (small->loss(tokens, labels) / 2.0).backward();
    for (const auto& [name, p] : small->parameters())
        QVERIFY2(!p.grad().defined(), name.c_str()); // the hook moved every gradient into the buffer

    Recipe big_recipe = recipe;
    big_recipe.micro_batch_size = 2 * recipe.micro_batch_size;
    auto big = build(big_recipe);
    big->loss(torch::cat({ first.first, second.first }, 1), torch::cat({ first.second, second.second }, 1))
        .backward();

    const auto& named = small->parameters();
    QCOMPARE(buffer.params().size(), named.size());
    for (size_t i = 0; i < named.size(); ++i) {
        const auto& grad = buffer.mainGrads()[named.size() - 1 - i]; // the buffer holds them in reverse
        QVERIFY(buffer.params()[named.size() - 1 - i].is_same(named[i].second));
        const auto& expected = big->parameters()[i].second.grad();
        QVERIFY2(expected.defined(), named[i].first.c_str());
        QVERIFY2(torch::allclose(grad, expected, 1e-4, 1e-6),
            qPrintable(QStringLiteral("%1: max |diff| %2")
                           .arg(QString::fromStdString(named[i].first))
                           .arg((grad - expected).abs().max().item<double>())));
    }
}

void TestEngineLayout::gradBufferDtypeAndSize_data()
{
    QTest::addColumn<bool>("fp32_buffer");
    QTest::addColumn<bool>("distributed");
    QTest::addColumn<int>("dp");
    QTest::newRow("bf16 params, fp32 buffer") << true << false << 1;
    QTest::newRow("bf16 params, bf16 buffer") << false << false << 1;
    QTest::newRow("distributed dp 8") << true << true << 8;
    QTest::newRow("distributed dp 3") << true << true << 3;
}

void TestEngineLayout::gradBufferDtypeAndSize()
{
    QFETCH(bool, fp32_buffer);
    QFETCH(bool, distributed);
    QFETCH(int, dp);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.bf16 = true;
    r.grad_reduce_in_fp32 = fp32_buffer;
    r.use_distributed_optimizer = distributed;
    r.data_parallel_size = dp;
    auto model = build(r);
    const auto layout = engine::trainingLayout(r, torch::kBFloat16, 0, 1);
    QCOMPARE(layout.grad_dtype, fp32_buffer ? torch::kFloat32 : torch::kBFloat16);
    QCOMPARE(layout.data_parallel_size, dp);
    engine::GradBuffer buffer(model->parameters(), layout.grad_dtype, distributed, dp);
    QCOMPARE(buffer.data().scalar_type(), layout.grad_dtype);
    // Without the distributed optimizer the parameters lie end to end; with it each starts at a multiple
    // of 64 elements and the end is a multiple of lcm(DP, 128).
    int64_t end = 0;
    const auto& params = buffer.params();
    for (size_t i = 0; i < params.size(); ++i) {
        if (distributed)
            end = (end + 63) / 64 * 64;
        QCOMPARE(buffer.starts()[i], end);
        end += params[i].numel();
    }
    if (distributed) {
        const int64_t multiple = std::lcm(int64_t(dp), int64_t(128));
        end = (end + multiple - 1) / multiple * multiple;
    }
    QCOMPARE(buffer.data().numel(), end);
    QVERIFY(buffer.data().numel() >= countElements(*model));
    if (!distributed)
        QCOMPARE(buffer.data().numel(), countElements(*model));
}

void TestEngineLayout::distributedOptimizerShards_data()
{
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("shard");
    QTest::newRow("dp 1") << 1 << 0;
    QTest::newRow("dp 4 rank 0") << 4 << 0;
    QTest::newRow("dp 4 rank 3") << 4 << 3;
    QTest::newRow("dp 8 rank 5") << 8 << 5;
}

void TestEngineLayout::distributedOptimizerShards()
{
    // The rank holds main parameters (and, after the first step, both moments) for its 1/DP of the buffer
    // only; the buffer and the 16-bit parameters stay whole.
    QFETCH(int, dp);
    QFETCH(int, shard);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.bf16 = true;
    auto model = build(r);
    engine::GradBuffer buffer(model->parameters(), torch::kFloat32, true, dp);
    engine::TrainingLayout layout;
    layout.distributed_optimizer = true;
    layout.data_parallel_size = layout.shard_ranks = dp;
    layout.shard = shard;
    engine::MainParamAdamW optimizer(buffer, layout);
    const int64_t shard_elements = buffer.data().numel() / dp;
    QCOMPARE(optimizer.shardElements(), shard_elements);
    QCOMPARE(buffer.data().numel() % dp, int64_t(0));
    int64_t main = 0;
    for (size_t i = 0; i < optimizer.mainParams().size(); ++i) {
        QCOMPARE(optimizer.mainParams()[i].scalar_type(), torch::kFloat32);
        QCOMPARE(optimizer.mainParams()[i].numel(), optimizer.modelPieces()[i].numel());
        QCOMPARE(optimizer.gradPieces()[i].numel(), optimizer.modelPieces()[i].numel());
        main += optimizer.mainParams()[i].numel();
    }
    // Every element of the shard that is not padding has its main parameter.
    QVERIFY(main <= shard_elements);
    int64_t in_shard = 0;
    const int64_t lo = shard_elements * shard, hi = lo + shard_elements;
    for (size_t i = 0; i < buffer.params().size(); ++i) {
        const int64_t start = buffer.starts()[i], end = start + buffer.params()[i].numel();
        in_shard += std::max<int64_t>(0, std::min(end, hi) - std::max(start, lo));
    }
    QCOMPARE(main, in_shard);
    QVERIFY(!optimizer.initialized());
}

void TestEngineLayout::shardedStepUpdatesOnlyTheShard()
{
    Recipe r = noDropout(tinyRecipe(Arch::DenseUnfused));
    auto model = build(r);
    engine::GradBuffer buffer(model->parameters(), torch::kFloat32, true, 4);
    engine::TrainingLayout layout;
    layout.distributed_optimizer = true;
    layout.data_parallel_size = layout.shard_ranks = 4;
    layout.shard = 1;
    engine::MainParamAdamW optimizer(buffer, layout);
    std::vector<torch::Tensor> before;
    for (const auto& p : buffer.params())
        before.push_back(p.detach().clone());
    const auto [tokens, labels] = model->batch(3);
    model->loss(tokens, labels).backward();
    optimizer.step();
    QVERIFY(optimizer.initialized());
    const int64_t shard = buffer.data().numel() / 4, lo = shard, hi = 2 * shard;
    int64_t changed_inside = 0, changed_outside = 0;
    for (size_t i = 0; i < buffer.params().size(); ++i) {
        const auto diff = (buffer.params()[i].detach() != before[i]).reshape({ -1 });
        const auto position = torch::arange(diff.numel(), torch::kLong) + buffer.starts()[i];
        const auto inside = (position >= lo).logical_and(position < hi);
        changed_inside += diff.logical_and(inside).sum().item<int64_t>();
        changed_outside += diff.logical_and(inside.logical_not()).sum().item<int64_t>();
    }
    QVERIFY(changed_inside > 0);
    QCOMPARE(changed_outside, int64_t(0));
}

void TestEngineLayout::stepMakesFp32GradientCopies_data()
{
    QTest::addColumn<bool>("fp32_buffer");
    QTest::addColumn<bool>("distributed");
    QTest::addColumn<bool>("torch_adam");
    QTest::newRow("bf16 buffer (Float16OptimizerWithFloat16Params)") << false << false << false;
    QTest::newRow("bf16 buffer, distributed dp 4 (the shard)") << false << true << false;
    QTest::newRow("bf16 buffer, torch AdamW") << false << false << true;
    QTest::newRow("fp32 buffer: no copies") << true << false << false;
    QTest::newRow("fp32 buffer, distributed dp 4: no copies") << true << true << false;
}

void TestEngineLayout::stepMakesFp32GradientCopies()
{
    // Megatron's step with a 16-bit gradient buffer: prepare_grads sets main_param.grad to an fp32 copy of
    // every gradient of the rank's pieces (its shard under the distributed optimizer), freed by the next
    // optimizer.zero_grad(set_to_none=True). With an fp32 buffer `.float()` is the buffer's own view.
    QFETCH(bool, fp32_buffer);
    QFETCH(bool, distributed);
    QFETCH(bool, torch_adam);
    const auto probe = engine::MemoryProbe::create(torch::kCPU);
    Recipe r = noDropout(tinyRecipe(Arch::DenseUnfused));
    r.bf16 = true;
    r.grad_reduce_in_fp32 = fp32_buffer;
    r.use_distributed_optimizer = distributed;
    r.data_parallel_size = distributed ? 4 : 1;
    r.adam_implementation = torch_adam ? "torch" : "fused";
    auto model = build(r);
    auto layout = engine::trainingLayout(r, torch::kBFloat16, 0, 1);
    layout.shard = distributed ? 1 : 0;
    engine::GradBuffer buffer(model->parameters(), layout.grad_dtype, distributed, layout.data_parallel_size);
    engine::MainParamAdamW optimizer(buffer, layout);
    QVERIFY(!optimizer.usesOnePass());
    const auto [tokens, labels] = model->batch(3);
    int64_t pieces = 0, largest = 0;
    for (const auto& piece : optimizer.modelPieces()) {
        pieces += piece.numel();
        largest = std::max(largest, piece.numel());
    }
    const int64_t copies = fp32_buffer ? 0 : 4 * pieces; // bytes
    for (int step = 1; step <= 2; ++step) {
        buffer.zero();
        optimizer.zeroGrad();
        QVERIFY(optimizer.mainGrads().empty());
        model->loss(tokens, labels).backward();
        const bool init = !optimizer.initialized();
        const int64_t before = probe->read().allocated;
        probe->resetPeak();
        optimizer.step();
        const auto after = probe->read();
        // The moments (two fp32 per piece element and a 4-byte step per piece) appear at the first step.
        const int64_t states = init ? 8 * pieces + 4 * int64_t(optimizer.modelPieces().size()) : 0;
        QCOMPARE(after.allocated - before, copies + states);
        // The update's own temporaries on top: torch's multi-tensor AdamW takes the square root of every
        // second moment at once (4 bytes a shard element), the op-by-op update (LibTorch 1.13 on CPU has
        // no fused AdamW) two fp32 temporaries of one piece at a time.
        const int64_t update = torch_adam ? 4 * pieces : 8 * largest;
        const int64_t rise = after.peak_allocated - before;
        QVERIFY2(rise >= copies + states + update && rise <= copies + states + update + 64,
            qPrintable(QStringLiteral("step %1: peak rises %2 bytes, expected %3 (copies %4, states %5, "
                                      "update %6)")
                           .arg(step)
                           .arg(rise)
                           .arg(copies + states + update)
                           .arg(copies)
                           .arg(states)
                           .arg(update)));
        QCOMPARE(optimizer.mainGrads().size(), optimizer.gradPieces().size());
        for (size_t i = 0; i < optimizer.mainGrads().size(); ++i) {
            const auto& g = optimizer.mainGrads()[i];
            QCOMPARE(g.scalar_type(), torch::kFloat32);
            QCOMPARE(g.is_same(optimizer.gradPieces()[i]), fp32_buffer);
            QVERIFY(torch::equal(g, optimizer.gradPieces()[i].to(torch::kFloat32)));
        }
        // zero_grad(set_to_none=True) at the next train step drops them.
        const int64_t live = probe->read().allocated;
        optimizer.zeroGrad();
        QCOMPARE(live - probe->read().allocated, copies);
    }
}

void TestEngineLayout::stepMatchesReferenceAdamW_data()
{
    QTest::addColumn<bool>("fp32_buffer");
    QTest::addColumn<bool>("torch_adam");
    QTest::newRow("bf16 buffer, fused") << false << false;
    QTest::newRow("bf16 buffer, torch AdamW") << false << true;
    QTest::newRow("fp32 buffer, fused") << true << false;
}

void TestEngineLayout::stepMatchesReferenceAdamW()
{
    // The copies change where the fp32 gradients live, not the arithmetic: after N steps the main
    // parameters equal AdamW applied to the buffer's gradients in fp32, op by op.
    QFETCH(bool, fp32_buffer);
    QFETCH(bool, torch_adam);
    Recipe r = noDropout(tinyRecipe(Arch::DenseUnfused));
    r.bf16 = true;
    r.grad_reduce_in_fp32 = fp32_buffer;
    r.adam_implementation = torch_adam ? "torch" : "fused";
    auto model = build(r);
    const auto layout = engine::trainingLayout(r, torch::kBFloat16, 0, 1);
    engine::GradBuffer buffer(model->parameters(), layout.grad_dtype, false, 1);
    engine::MainParamAdamW optimizer(buffer, layout);
    using A = engine::MainParamAdamW;
    std::vector<torch::Tensor> main, m, v;
    for (const auto& p : optimizer.mainParams()) {
        main.push_back(p.clone());
        m.push_back(torch::zeros_like(p));
        v.push_back(torch::zeros_like(p));
    }
    for (int step = 1; step <= 3; ++step) {
        buffer.zero();
        optimizer.zeroGrad();
        const auto [tokens, labels] = model->batch(20 + step);
        model->loss(tokens, labels).backward();
        torch::NoGradGuard no_grad;
        const double bc1 = 1 - std::pow(A::kBeta1, step), bc2 = 1 - std::pow(A::kBeta2, step);
        for (size_t i = 0; i < main.size(); ++i) {
            const auto g = optimizer.gradPieces()[i].to(torch::kFloat32);
            main[i].mul_(1 - A::kLr * A::kWeightDecay);
            m[i].mul_(A::kBeta1).add_(g, 1 - A::kBeta1);
            v[i].mul_(A::kBeta2).addcmul_(g, g, 1 - A::kBeta2);
            main[i].addcdiv_(m[i], (v[i].sqrt() / std::sqrt(bc2)).add_(A::kEps), -A::kLr / bc1);
        }
        optimizer.step();
    }
    for (size_t i = 0; i < main.size(); ++i) {
        const auto& got = optimizer.mainParams()[i];
        QVERIFY2(torch::allclose(got, main[i], 1e-6, 1e-8),
            qPrintable(QStringLiteral("piece %1: max |diff| %2")
                           .arg(i)
                           .arg((got - main[i]).abs().max().item<double>())));
        // The 16-bit parameter is the rounded main parameter.
        QVERIFY(torch::equal(optimizer.modelPieces()[i], got.to(torch::kBFloat16)));
    }
}

void TestEngineLayout::precisionAwareOptimizer_data()
{
    QTest::addColumn<QString>("moments"); // exp_avg_dtype = exp_avg_sq_dtype
    QTest::addColumn<bool>("remainders"); // store_param_remainders
    QTest::newRow("fp32 moments, fp32 master") << u"fp32"_s << false;
    QTest::newRow("fp32 moments, remainders") << u"fp32"_s << true;
    QTest::newRow("bf16 moments, remainders (Moonlight's recipe)") << u"bf16"_s << true;
    QTest::newRow("bf16 moments, fp32 master") << u"bf16"_s << false;
    // fp16 moments take the same path (the state dtype is one switch); this tiny model's second moments
    // (g^2 ~ 1e-9) are fp16 subnormals, where a sum rounded one unit apart moves the update by percents,
    // so its arithmetic is no comparison: only its memory is checked.
    QTest::newRow("fp16 moments, fp32 master (memory)") << u"fp16"_s << false;
}

void TestEngineLayout::precisionAwareOptimizer()
{
    // Megatron Core's precision-aware optimizer (Transformer Engine's FusedAdam): moments in exp_avg_dtype,
    // bf16 parameters' fp32 master weights as int16 remainders, and no fp32 gradient copy; the host loop
    // makes no temporary. Its arithmetic is AdamW on the fp32 master, the moments rounded to their dtype
    // after each update.
    QFETCH(QString, moments);
    QFETCH(bool, remainders);
    const auto probe = engine::MemoryProbe::create(torch::kCPU);
    Recipe r = noDropout(tinyRecipe(Arch::DenseUnfused));
    r.bf16 = true;
    r.use_distributed_optimizer = true;
    r.use_precision_aware_optimizer = true;
    r.data_parallel_size = 2;
    r.exp_avg_dtype = r.exp_avg_sq_dtype = moments.toStdString();
    r.store_param_remainders = remainders;
    auto model = build(r);
    const auto layout = engine::trainingLayout(r, torch::kBFloat16, 0, 1);
    QCOMPARE(layout.master_remainders, remainders);
    engine::GradBuffer buffer(model->parameters(), layout.grad_dtype, true, layout.shard_ranks);
    engine::MainParamAdamW optimizer(buffer, layout);
    QVERIFY(!optimizer.usesOnePass()); // CPU: the host loop
    const auto state = moments == u"fp32"_s ? torch::kFloat32
        : moments == u"bf16"_s              ? torch::kBFloat16
                                            : torch::kHalf;
    const int64_t state_bytes = moments == u"fp32"_s ? 4 : 2;
    int64_t pieces = 0;
    std::vector<torch::Tensor> master, m, v;
    for (size_t i = 0; i < optimizer.mainParams().size(); ++i) {
        const auto& main = optimizer.mainParams()[i];
        QCOMPARE(main.scalar_type(), remainders ? torch::kInt16 : torch::kFloat32);
        pieces += main.numel();
        master.push_back(optimizer.modelPieces()[i].to(torch::kFloat32));
        m.push_back(torch::zeros_like(master.back()));
        v.push_back(torch::zeros_like(master.back()));
    }
    using A = engine::MainParamAdamW;
    for (int step = 1; step <= 3; ++step) {
        buffer.zero();
        optimizer.zeroGrad();
        const auto [tokens, labels] = model->batch(30 + step);
        model->loss(tokens, labels).backward();
        {
            torch::NoGradGuard no_grad;
            const double bc1 = 1 - std::pow(A::kBeta1, step), bc2 = 1 - std::pow(A::kBeta2, step);
            for (size_t i = 0; i < master.size(); ++i) {
                const auto g = optimizer.gradPieces()[i].to(torch::kFloat32);
                master[i].mul_(1 - A::kLr * A::kWeightDecay);
                m[i].mul_(A::kBeta1).add_(g, 1 - A::kBeta1);
                v[i].mul_(A::kBeta2).addcmul_(g, g, 1 - A::kBeta2);
                master[i].addcdiv_(m[i], (v[i].sqrt() / std::sqrt(bc2)).add_(A::kEps), -A::kLr / bc1);
                m[i] = m[i].to(state).to(torch::kFloat32);
                v[i] = v[i].to(state).to(torch::kFloat32);
            }
        }
        const bool init = !optimizer.initialized();
        const int64_t before = probe->read().allocated;
        probe->resetPeak();
        optimizer.step();
        const auto after = probe->read();
        const int64_t states
            = init ? 2 * state_bytes * pieces + 4 * int64_t(optimizer.modelPieces().size()) : 0;
        QCOMPARE(after.allocated - before, states);
        QVERIFY2(after.peak_allocated - before <= states + 64,
            qPrintable(u"step %1: the peak rose %2 bytes over the moments' %3"_s.arg(step)
                           .arg(after.peak_allocated - before)
                           .arg(states)));
        QVERIFY(optimizer.mainGrads().empty());
    }
    // fp32 moments: the same arithmetic to fp32 rounding. Rounded moments: the worker rounds each moment
    // from its own fp32 sum, the reference from torch's; one 16-bit unit apart (2^-8 of a bf16 moment) in
    // a step moves the update by at most that share of lr / (1 - beta1^t) < 1e-3, so 3 steps stay within
    // 3 x 1e-3 x 2^-8 of each other.
    const double atol = moments == u"fp32"_s ? 1e-8 : 3 * 1e-3 / 256;
    if (moments == u"fp16"_s)
        return;
    for (size_t i = 0; i < master.size(); ++i) {
        const auto& piece = optimizer.modelPieces()[i];
        const auto got
            = remainders ? joinedMaster(piece, optimizer.mainParams()[i]) : optimizer.mainParams()[i];
        QVERIFY2(torch::allclose(got, master[i], 1e-6, atol),
            qPrintable(
                u"piece %1: max |diff| %2"_s.arg(i).arg((got - master[i]).abs().max().item<double>())));
        // The bf16 parameter is its master weight rounded to nearest (ties away from zero with
        // remainders, to even with an fp32 master: torch's rounding).
        if (remainders) {
            const auto low = optimizer.mainParams()[i].to(torch::kLong).bitwise_and(0xffff);
            const auto exact = low.ne(0x8000);
            QVERIFY(torch::equal(piece.masked_select(exact), got.to(torch::kBFloat16).masked_select(exact)));
        } else {
            QVERIFY(torch::equal(piece, got.to(torch::kBFloat16)));
        }
    }
}

void TestEngineLayout::precisionAwareRefusals_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value");
    QTest::newRow("fp8 exp_avg") << u"exp_avg_dtype"_s << u"fp8"_s;
    QTest::newRow("fp8 exp_avg_sq") << u"exp_avg_sq_dtype"_s << u"fp8"_s;
    QTest::newRow("fp16 main parameters") << u"main_params_dtype"_s << u"fp16"_s;
}

void TestEngineLayout::precisionAwareRefusals()
{
    // What the worker does not keep is refused by name, before any memory is taken.
    QFETCH(QString, field);
    QFETCH(QString, value);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.bf16 = true;
    r.use_distributed_optimizer = true;
    r.use_precision_aware_optimizer = true;
    (field == u"exp_avg_dtype"_s             ? r.exp_avg_dtype
            : field == u"exp_avg_sq_dtype"_s ? r.exp_avg_sq_dtype
                                             : r.main_params_dtype)
        = value.toStdString();
    try {
        engine::trainingLayout(r, torch::kBFloat16, 0, 1);
        QFAIL("not refused");
    } catch (const engine::EngineError& e) {
        QCOMPARE(QString::fromStdString(e.field), field);
        QVERIFY2(QString::fromUtf8(e.what()).contains(u"allowed: fp32"_s), e.what());
    }
    // Without the distributed optimizer Megatron refuses the precision-aware optimizer, and the worker
    // keeps plain fp32 state.
    r.use_distributed_optimizer = false;
    const auto plain = engine::trainingLayout(r, torch::kBFloat16, 0, 1);
    QVERIFY(!plain.precision_aware);
    QVERIFY(!plain.master_remainders);
}

void TestEngineLayout::microBatchesFromGlobalBatch_data()
{
    QTest::addColumn<int>("gbs");
    QTest::addColumn<int>("mbs");
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("expected"); // -1: refused
    QTest::newRow("no global batch") << 0 << 1 << 1 << 1 << 1;
    QTest::newRow("gbs 8 mbs 1") << 8 << 1 << 1 << 1 << 8;
    QTest::newRow("gbs 8 mbs 1 dp 4") << 8 << 1 << 4 << 1 << 2;
    QTest::newRow("gbs 16 mbs 2 two ranks") << 16 << 2 << 1 << 2 << 4;
    QTest::newRow("gbs 6 mbs 4") << 6 << 4 << 1 << 1 << -1;
    QTest::newRow("gbs 1 on two ranks: one each") << 1 << 1 << 1 << 2 << 1;
    QTest::newRow("gbs 6 mbs 2 on two ranks") << 6 << 2 << 1 << 2 << -1;
}

void TestEngineLayout::microBatchesFromGlobalBatch()
{
    QFETCH(int, gbs);
    QFETCH(int, mbs);
    QFETCH(int, dp);
    QFETCH(int, world);
    QFETCH(int, expected);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    if (gbs > 0)
        r.global_batch_size = gbs;
    r.micro_batch_size = mbs;
    r.data_parallel_size = dp;
    if (expected < 0) {
        QVERIFY_THROWS_EXCEPTION(engine::EngineError, engine::trainingLayout(r, torch::kFloat32, 0, world));
        return;
    }
    QCOMPARE(engine::trainingLayout(r, torch::kFloat32, 0, world).micro_batches, expected);
}

void TestEngineLayout::tiedAndUntiedEmbeddings()
{
    // Tied (Megatron-LM's default): the output layer multiplies by the word embedding, one parameter;
    // untied adds an output_layer.weight of the padded vocabulary's rows.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    const auto tied = build(r);
    r.untie_embeddings_and_output_weights = true;
    const auto untied = build(r);
    const int64_t padded = rs::paddedVocabSize(r);
    QCOMPARE(countElements(*untied) - countElements(*tied), padded * r.hidden_size);
    QCOMPARE(untied->parameters().size(), tied->parameters().size() + 1);
    QVERIFY(!hasParam(*tied, "output_layer.weight"));
    QVERIFY(hasParam(*untied, "output_layer.weight"));
    // The tied embedding takes gradients from both ends: more than the lookup alone would give its rows.
    auto model = build(noDropout(tinyRecipe(Arch::DenseUnfused)));
    const auto [tokens, labels] = model->batch(5);
    model->loss(tokens, labels).backward();
    const auto& grad = model->parameters().front().second.grad();
    QVERIFY(grad.defined());
    // Rows of tokens that never occur as input still get the output layer's gradient.
    auto seen = torch::zeros({ grad.size(0) }, torch::kBool);
    seen.index_fill_(0, tokens.reshape({ -1 }), true);
    const auto unseen_rows = grad.index({ seen.logical_not() });
    QVERIFY(unseen_rows.numel() > 0);
    QVERIFY(unseen_rows.abs().sum().item<double>() > 0);
}

void TestEngineLayout::positionEmbeddings_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<int>("max_positions"); // 0: unset (seq_length)
    QTest::newRow("learned_absolute") << QStringLiteral("learned_absolute") << 0;
    QTest::newRow("learned_absolute 64") << QStringLiteral("learned_absolute") << 64;
    QTest::newRow("rope") << QStringLiteral("rope") << 0;
    QTest::newRow("none") << QStringLiteral("none") << 0;
}

void TestEngineLayout::positionEmbeddings()
{
    QFETCH(QString, type);
    QFETCH(int, max_positions);
    Recipe r = noDropout(tinyRecipe(Arch::DenseUnfused));
    r.position_embedding_type = type.toStdString();
    if (max_positions)
        r.max_position_embeddings = max_positions;
    auto model = build(r);
    const bool learned = type == QLatin1String("learned_absolute");
    QCOMPARE(hasParam(*model, "embedding.position_embeddings.weight"), learned);
    Recipe none = r;
    none.position_embedding_type = "none";
    const int64_t table = learned ? int64_t(max_positions ? max_positions : r.seq_length) * r.hidden_size : 0;
    QCOMPARE(countElements(*model) - countElements(*build(none)), table);
    // The encoding changes the loss of the same batch (rope adds no parameter: the same initial weights).
    const auto [tokens, labels] = model->batch(9);
    const double loss = model->loss(tokens, labels).item<double>();
    if (type != QLatin1String("none"))
        QVERIFY(std::abs(loss - build(none)->loss(tokens, labels).item<double>()) > 1e-6);
    if (learned) {
        model->loss(tokens, labels).backward();
        for (const auto& [name, p] : model->parameters())
            if (name == "embedding.position_embeddings.weight")
                QVERIFY(p.grad().defined() && p.grad().abs().sum().item<double>() > 0);
    }
}

void TestEngineLayout::linearBiases()
{
    // add_bias_linear: qkv, proj, fc1, fc2 of every layer; add_qkv_bias alone: qkv only.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.add_bias_linear = false;
    const auto plain = build(r);
    r.add_qkv_bias = true;
    const auto qkv_only = build(r);
    r.add_bias_linear = true;
    const auto all = build(r);
    const int64_t h = r.hidden_size, ffn = *r.ffn_hidden_size, qkv = 3 * h;
    QCOMPARE(countElements(*qkv_only) - countElements(*plain), r.num_layers * qkv);
    QCOMPARE(countElements(*all) - countElements(*plain), r.num_layers * (qkv + h + ffn + h));
    QVERIFY(hasParam(*all, "decoder.layers.0.mlp.linear_fc2.bias"));
    QVERIFY(!hasParam(*qkv_only, "decoder.layers.0.mlp.linear_fc2.bias"));
}

void TestEngineLayout::paddedVocabulary_data()
{
    QTest::addColumn<int>("vocab");
    QTest::addColumn<int>("divisible_by");
    QTest::addColumn<int>("expected");
    QTest::newRow("gpt2 50257 / 128") << 50257 << 128 << 50304;
    QTest::newRow("already a multiple") << 32000 << 128 << 32000;
    QTest::newRow("divisible by 1") << 50257 << 1 << 50257;
    QTest::newRow("tiny 64 / 128") << 64 << 128 << 128;
}

void TestEngineLayout::paddedVocabulary()
{
    QFETCH(int, vocab);
    QFETCH(int, divisible_by);
    QFETCH(int, expected);
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.vocab_size = vocab;
    r.make_vocab_size_divisible_by = divisible_by;
    QCOMPARE(rs::paddedVocabSize(r), expected);
    const auto c = engine::modelConfig(r);
    QCOMPARE(c.vocab, expected);
    QCOMPARE(c.tokenizer_vocab, vocab);
}

void TestEngineLayout::moeAuxLossAddsToTheLoss()
{
    Recipe r = noDropout(tinyRecipe(Arch::MlaMoe));
    auto without = build(r);
    const auto [tokens, labels] = without->batch(4);
    const double plain = without->loss(tokens, labels).item<double>();
    r.moe_aux_loss_coeff = 0.01;
    auto model = build(r);
    auto loss = model->loss(tokens, labels);
    QVERIFY(loss.item<double>() > plain);
    loss.backward();
    // The router learns from the load-balancing loss too.
    for (const auto& [name, p] : model->parameters())
        if (name.find("router") != std::string::npos)
            QVERIFY(p.grad().defined());
}

void TestEngineLayout::regionsAreCountedWhereTheyAllocate()
{
    auto probe = engine::MemoryProbe::create(torch::kCPU);
    probe->resetPeak();
    torch::Tensor a, b, c;
    {
        engine::MemoryRegion outer(engine::MemoryCategory::Activations, 2, "mlp");
        a = torch::empty({ 1000 }, torch::kFloat32);
        {
            engine::MemoryRegion inner(engine::MemoryCategory::GradientBuffer);
            b = torch::empty({ 500 }, torch::kFloat32);
        }
        c = torch::empty({ 250 }, torch::kFloat32);
    }
    const auto at_peak = probe->attribution();
    QVERIFY(at_peak.available);
    int64_t mlp = 0, buffer = 0, sum = 0;
    for (const auto& r : at_peak.regions) {
        sum += r.bytes;
        if (r.category == engine::MemoryCategory::Activations && r.layer == 2 && r.region == "mlp")
            mlp += r.bytes;
        if (r.category == engine::MemoryCategory::GradientBuffer)
            buffer += r.bytes;
    }
    QCOMPARE(mlp, int64_t(1250 * 4));
    QCOMPARE(buffer, int64_t(500 * 4));
    QCOMPARE(sum, at_peak.traced_peak);
    QCOMPARE(sum, probe->read().peak_allocated);
}

void TestEngineLayout::attributionAccountsForThePeak_data()
{
    QTest::addColumn<Recipe>("recipe");
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.global_batch_size = 2 * r.micro_batch_size;
    QTest::newRow("dense, two micro-batches") << r;
    QTest::newRow("dense core_attn") << selective(r, { "core_attn" });
    Recipe moe = tinyRecipe(Arch::MlaMoe);
    moe.use_distributed_optimizer = true;
    moe.data_parallel_size = 4;
    moe.global_batch_size = 4 * moe.micro_batch_size;
    QTest::newRow("moe, distributed optimizer dp 4") << moe;
}

void TestEngineLayout::attributionAccountsForThePeak()
{
    // Every phase's peak is accounted for by the categories (within 1 %; on CPU the probe's own trace
    // gives it exactly), and the categories are where the layout puts them.
    QFETCH(Recipe, recipe);
    engine::RunOptions options;
    options.warmup = 1;
    options.iters = 1;
    std::ostringstream out;
    QCOMPARE(engine::runRecipe(recipe, InputFormat::Json, options, out), int(engine::kPass));
    std::istringstream in(out.str());
    std::string line;
    json layout;
    std::map<std::string, json> phases;
    while (std::getline(in, line)) {
        auto j = json::parse(line);
        if (j.at("event") == "memory_layout")
            layout = j;
        if (j.at("event") == "peak_attribution")
            phases[j.at("phase").get<std::string>()] = j;
    }
    QVERIFY(!layout.is_null());
    QCOMPARE(phases.size(), size_t(4));
    for (const auto& [phase, j] : phases) {
        const auto peak = j.at("peak_allocated").get<int64_t>();
        int64_t sum = 0;
        for (const auto& [name, bytes] : j.at("categories").items())
            sum += bytes.get<int64_t>();
        QVERIFY2(std::abs(double(sum - peak)) <= 0.01 * double(peak),
            qPrintable(QStringLiteral("%1: categories %2, peak %3")
                           .arg(QString::fromStdString(phase))
                           .arg(sum)
                           .arg(peak)));
        const auto& cat = j.at("categories");
        QCOMPARE(cat.at("parameters").get<int64_t>(), layout.at("parameter_bytes").get<int64_t>());
        QCOMPARE(cat.at("gradient_buffer").get<int64_t>(), layout.at("grad_buffer_bytes").get<int64_t>());
        int64_t activations = 0;
        for (const auto& region : j.at("activations"))
            activations += region.at("bytes").get<int64_t>();
        QCOMPARE(activations, cat.at("activations").get<int64_t>());
    }
    // The forward peak is held mostly by saved activations, and the optimizer state exists from its
    // first step on.
    QVERIFY(phases.at("forward").at("categories").at("activations").get<int64_t>() > 0);
    QVERIFY(phases.at("forward").at("iteration").get<int>() >= 1);
    QVERIFY(phases.at("optimizer-init").at("categories").at("optimizer_states").get<int64_t>() > 0);
    QVERIFY(phases.at("optimizer").at("categories").at("optimizer_states").get<int64_t>() > 0);
    if (layout.at("distributed_optimizer").get<bool>()) {
        // Two fp32 moments of the shard: a quarter of the buffer's elements each (the buffer is fp32 here).
        const int64_t shard = layout.at("shard_elements").get<int64_t>();
        QCOMPARE(shard * 4, layout.at("grad_buffer_bytes").get<int64_t>() / 4);
        QVERIFY(phases.at("optimizer").at("categories").at("optimizer_states").get<int64_t>()
            <= 2 * shard * 4 + 4096);
    }
}

QTEST_GUILESS_MAIN(TestEngineLayout)
#include "tst_engine_layout.moc"
