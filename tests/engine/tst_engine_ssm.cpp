// SPDX-License-Identifier: Apache-2.0
// The worker's state-space kernels (engine/ssm.h) against the recurrences they compute: the chunked SSD
// scan against the step-by-step Mamba-2 recurrence, the chunked gated delta rule against FLA's recurrent
// reference, both forward (relative error) and backward (the custom functions' gradients against autograd
// through the reference), at lengths that are not a multiple of the chunk, with groups of heads; and what
// each function keeps for backward, measured with the CPU probe. The kernels accumulate in fp32 (as the
// Triton kernels do), so double inputs agree to fp32's precision: relative errors below 1e-5.
#include <QtTest>

#include <torch/torch.h>

#include "engine/memory_probe.h"
#include "engine/ssm.h"

using namespace rs::engine;
using torch::Tensor;

namespace {

double relErr(const Tensor& got, const Tensor& want)
{
    const Tensor g = got.to(torch::kDouble), w = want.to(torch::kDouble);
    return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

// Gradients of sum(out * probe) with respect to `inputs` (each a leaf requiring grad).
std::vector<Tensor> gradsOf(const Tensor& out, const std::vector<Tensor>& inputs, const Tensor& probe)
{
    return torch::autograd::grad({ (out.to(torch::kDouble) * probe).sum() }, inputs, {}, false, false, true);
}

Tensor leafOf(const Tensor& t)
{
    return t.detach().clone().requires_grad_(true);
}

} // namespace

class TestEngineSsm : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        torch::set_num_threads(1);
        torch::manual_seed(7);
    }
    void scanMatchesRecurrence_data();
    void scanMatchesRecurrence();
    void mambaFunctionGradients();
    void mambaFunctionKeepsWhatMambaSsmKeeps();
    void deltaRuleMatchesRecurrence_data();
    void deltaRuleMatchesRecurrence();
    void smallFunctionsGradients();
};
void TestEngineSsm::scanMatchesRecurrence_data()
{
    QTest::addColumn<int>("length");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("groups");
    QTest::addColumn<int>("chunk");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("one chunk") << 16 << 4 << 1 << 16 << false << 1e-5;
    QTest::newRow("several chunks, groups") << 64 << 4 << 2 << 16 << false << 1e-5;
    QTest::newRow("length not a multiple of the chunk") << 45 << 6 << 3 << 16 << false << 1e-5;
    QTest::newRow("bf16 inputs") << 40 << 4 << 2 << 8 << true << 2e-2;
}

void TestEngineSsm::scanMatchesRecurrence()
{
    QFETCH(int, length);
    QFETCH(int, heads);
    QFETCH(int, groups);
    QFETCH(int, chunk);
    QFETCH(bool, bf16);
    QFETCH(double, tolerance);
    const int64_t b = 2, P = 8, N = 6;
    const auto dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
    const Tensor x = torch::randn({ b, length, heads, P }).to(dtype);
    const Tensor dt = at::softplus(torch::randn({ b, length, heads }) - 2);
    const Tensor A = -torch::rand({ heads }) * 3 - 0.5;
    const Tensor B = torch::randn({ b, length, groups, N }).to(dtype);
    const Tensor C = torch::randn({ b, length, groups, N }).to(dtype);
    const Tensor D = torch::randn({ heads }).to(dtype);
    const Tensor got = ssm::ssdChunkScan(x, dt, A, B, C, D, chunk);
    const Tensor want = ssm::ssdReference(x, dt, A, B, C, D);
    QCOMPARE(got.sizes().vec(), x.sizes().vec());
    const double e = relErr(got, want);
    QVERIFY2(e < tolerance, qPrintable(QString::number(e)));
}

// The Mamba function's gradients (its backward replays the conv and the scan) against autograd through the
// same computation written with the step-by-step recurrence, in double.
void TestEngineSsm::mambaFunctionGradients()
{
    const int64_t b = 2, l = 21, H = 4, P = 4, G = 2, N = 3, W = 4, chunk = 8;
    const int64_t di = H * P, conv = di + 2 * G * N;
    const auto o = torch::TensorOptions().dtype(torch::kDouble);
    const Tensor zxbcdt = leafOf(torch::randn({ b, l, 2 * di + 2 * G * N + H }, o));
    const Tensor w = leafOf(torch::randn({ conv, W }, o) * 0.5);
    const Tensor bias = leafOf(torch::randn({ conv }, o) * 0.1);
    const Tensor dt_bias = leafOf(torch::randn({ H }, o) * 0.1 - 1);
    const Tensor A = leafOf(-torch::rand({ H }, o) * 2 - 0.5);
    const Tensor D = leafOf(torch::randn({ H }, o));
    const ssm::MambaDims dims { H, P, G, N, chunk };
    const Tensor out = ssm::mambaSplitConv1dScan(zxbcdt, w, bias, dt_bias, A, D, dims);
    // The reference, eager: split, conv + SiLU, softplus(dt + dt_bias), recurrence, gate.
    const Tensor z = zxbcdt.narrow(-1, 0, di);
    const Tensor xbc = ssm::causalConv1d(zxbcdt.narrow(-1, di, conv), w, bias, true);
    const Tensor x = xbc.narrow(-1, 0, di).reshape({ b, l, H, P });
    const Tensor Bm = xbc.narrow(-1, di, G * N).reshape({ b, l, G, N });
    const Tensor Cm = xbc.narrow(-1, di + G * N, G * N).reshape({ b, l, G, N });
    const Tensor dt = at::softplus(zxbcdt.narrow(-1, 2 * di + 2 * G * N, H) + dt_bias);
    const Tensor y = ssm::ssdReference(x, dt, A, Bm, Cm, D).to(torch::kDouble).reshape({ b, l, di });
    const Tensor want = y * at::silu(z);
    QVERIFY2(relErr(out, want) < 1e-5, qPrintable(QString::number(relErr(out, want))));
    const Tensor probe = torch::randn(out.sizes(), o);
    const std::vector<Tensor> in = { zxbcdt, w, bias, dt_bias, A, D };
    const auto got = gradsOf(out, in, probe);
    const auto ref = gradsOf(want, in, probe);
    const char* names[] = { "zxbcdt", "conv weight", "conv bias", "dt_bias", "A", "D" };
    for (size_t i = 0; i < in.size(); ++i) {
        QVERIFY2(got[i].defined(), names[i]);
        const double e = relErr(got[i], ref[i]);
        QVERIFY2(
            e < 1e-5, qPrintable(QString::fromLatin1(names[i]) + QStringLiteral(": ") + QString::number(e)));
    }
}

// What the function holds after its forward: zxbcdt (the caller's), out_x [b, l, d_inner] and its output;
// nothing of the conv or the scan (those are rebuilt in backward), as MambaSplitConv1dScanCombinedFn.
void TestEngineSsm::mambaFunctionKeepsWhatMambaSsmKeeps()
{
    auto probe = MemoryProbe::create(torch::Device(torch::kCPU));
    const int64_t b = 1, l = 256, H = 8, P = 16, G = 2, N = 16, W = 4, chunk = 64;
    const int64_t di = H * P, conv = di + 2 * G * N;
    const Tensor zxbcdt = torch::randn({ b, l, 2 * di + 2 * G * N + H }).requires_grad_(true);
    const Tensor w = torch::randn({ conv, W }).requires_grad_(true);
    const Tensor bias = torch::zeros({ conv }).requires_grad_(true);
    const Tensor dt_bias = torch::zeros({ H }).requires_grad_(true);
    const Tensor A = (-torch::ones({ H })).requires_grad_(true);
    const Tensor D = torch::ones({ H }).requires_grad_(true);
    const int64_t before = probe->read().allocated;
    Tensor out = ssm::mambaSplitConv1dScan(zxbcdt, w, bias, dt_bias, A, D, { H, P, G, N, chunk });
    const int64_t held = probe->read().allocated - before;
    // out_x and the output, fp32: 2 x [b, l, d_inner] x 4 bytes.
    QCOMPARE(held, 2 * b * l * di * 4);
    out.sum().backward();
    QVERIFY(zxbcdt.grad().defined() && w.grad().defined());
}

void TestEngineSsm::deltaRuleMatchesRecurrence_data()
{
    QTest::addColumn<int>("length");
    QTest::addColumn<int>("chunk");
    QTest::newRow("one chunk") << 16 << 16;
    QTest::newRow("several chunks") << 48 << 16;
    QTest::newRow("length not a multiple of the chunk") << 37 << 16;
    QTest::newRow("the kernel's chunk") << 70 << 64;
}

void TestEngineSsm::deltaRuleMatchesRecurrence()
{
    QFETCH(int, length);
    QFETCH(int, chunk);
    const int64_t b = 2, H = 3, K = 8, V = 6;
    const auto o = torch::TensorOptions().dtype(torch::kDouble);
    // q and k L2-normalised, as GatedDeltaNet feeds them; beta in (0, 1); g a negative log decay.
    const Tensor q = leafOf(torch::nn::functional::normalize(
        torch::randn({ b, length, H, K }, o), torch::nn::functional::NormalizeFuncOptions().dim(-1)));
    const Tensor k = leafOf(torch::nn::functional::normalize(
        torch::randn({ b, length, H, K }, o), torch::nn::functional::NormalizeFuncOptions().dim(-1)));
    const Tensor v = leafOf(torch::randn({ b, length, H, V }, o));
    // A strong decay (GatedDeltaNet's A reaches 16): the chunk's padding must not turn it into overflow.
    const Tensor g = leafOf(-at::softplus(torch::randn({ b, length, H }, o)) * 12);
    const Tensor beta = leafOf(torch::sigmoid(torch::randn({ b, length, H }, o)));
    const double scale = 1.0 / std::sqrt(double(K));
    const Tensor got = ssm::chunkGatedDeltaRule(q, k, v, g, beta, scale, chunk);
    const Tensor want = ssm::gatedDeltaRuleReference(q, k, v, g, beta, scale).to(torch::kDouble);
    QVERIFY2(relErr(got, want) < 1e-5, qPrintable(QString::number(relErr(got, want))));
    const Tensor probe = torch::randn(got.sizes(), o);
    const std::vector<Tensor> in = { q, k, v, g, beta };
    const auto gg = gradsOf(got, in, probe);
    const auto gr = gradsOf(want, in, probe);
    const char* names[] = { "q", "k", "v", "g", "beta" };
    for (size_t i = 0; i < in.size(); ++i) {
        QVERIFY2(gg[i].defined(), names[i]);
        const double e = relErr(gg[i], gr[i]);
        QVERIFY2(
            e < 1e-5, qPrintable(QString::fromLatin1(names[i]) + QStringLiteral(": ") + QString::number(e)));
    }
}

// The gated group RMSNorm, FLA's conv and L2 norm, the SiLU gate: their hand-written backwards against
// autograd through the same arithmetic.
void TestEngineSsm::smallFunctionsGradients()
{
    const auto o = torch::TensorOptions().dtype(torch::kDouble);
    {
        const Tensor x = leafOf(torch::randn({ 5, 3, 12 }, o)), w = leafOf(torch::randn({ 12 }, o));
        const Tensor got = ssm::groupRmsNorm(x, w, 3, 1e-5);
        const Tensor xg = x.reshape({ -1, 3, 4 });
        const Tensor want = (xg * at::rsqrt(xg.pow(2).mean(-1, true) + 1e-5)).reshape(x.sizes()) * w;
        QVERIFY(relErr(got, want) < 1e-5);
        const Tensor probe = torch::randn(got.sizes(), o);
        const auto a = gradsOf(got, { x, w }, probe), r = gradsOf(want, { x, w }, probe);
        QVERIFY2(relErr(a[0], r[0]) < 1e-5 && relErr(a[1], r[1]) < 1e-5, "groupRmsNorm");
    }
    {
        const Tensor x = leafOf(torch::randn({ 2, 9, 5 }, o)), w = leafOf(torch::randn({ 5, 4 }, o));
        const Tensor got = ssm::causalConv1dSilu(x.transpose(0, 1).transpose(0, 1), w, Tensor());
        const Tensor want = ssm::causalConv1d(x, w, Tensor(), true);
        QVERIFY(relErr(got, want) < 1e-5);
        const Tensor probe = torch::randn(got.sizes(), o);
        const auto a = gradsOf(got, { x, w }, probe), r = gradsOf(want, { x, w }, probe);
        QVERIFY2(relErr(a[0], r[0]) < 1e-5 && relErr(a[1], r[1]) < 1e-5, "causalConv1dSilu");
        // As GatedDeltaNet passes it: q k v a strided narrow of a wider projection, which the function keeps
        // as passed (FLA's no_guard_contiguous), so the projection's whole storage stays alive.
        const Tensor proj = leafOf(torch::randn({ 2, 9, 8 }, o));
        const Tensor view = proj.narrow(-1, 0, 5);
        const Tensor got_view = ssm::causalConv1dSilu(view, w, Tensor());
        const Tensor want_view = ssm::causalConv1d(view, w, Tensor(), true);
        QVERIFY(relErr(got_view, want_view) < 1e-5);
        const auto av = gradsOf(got_view, { proj }, probe), rv = gradsOf(want_view, { proj }, probe);
        QVERIFY2(relErr(av[0], rv[0]) < 1e-5, "causalConv1dSilu on a strided view");
        // The convolution is causal: output t reads inputs t - 3 .. t only.
        Tensor xs = torch::zeros({ 1, 9, 5 }, o);
        xs.index_put_({ 0, 4 }, 1.0);
        const Tensor ys = ssm::causalConv1d(xs, w, Tensor(), false);
        QCOMPARE(ys.narrow(1, 0, 4).abs().sum().item<double>(), 0.0);
    }
    {
        const Tensor x = leafOf(torch::randn({ 4, 7 }, o));
        const Tensor got = ssm::l2norm(x);
        const Tensor want = x * at::rsqrt(x.pow(2).sum(-1, true) + 1e-6);
        QVERIFY(relErr(got, want) < 1e-5);
        const Tensor probe = torch::randn(got.sizes(), o);
        QVERIFY2(relErr(gradsOf(got, { x }, probe)[0], gradsOf(want, { x }, probe)[0]) < 1e-5, "l2norm");
    }
    {
        const Tensor y = leafOf(torch::randn({ 6, 8 }, o)), z = leafOf(torch::randn({ 6, 8 }, o));
        const Tensor got = ssm::siluGate(y, z);
        const Tensor want = y * at::silu(z);
        QVERIFY(relErr(got, want) < 1e-5);
        const Tensor probe = torch::randn(got.sizes(), o);
        const auto a = gradsOf(got, { y, z }, probe), r = gradsOf(want, { y, z }, probe);
        QVERIFY2(relErr(a[0], r[0]) < 1e-5 && relErr(a[1], r[1]) < 1e-5, "siluGate");
    }
}

QTEST_GUILESS_MAIN(TestEngineSsm)
#include "tst_engine_ssm.moc"
