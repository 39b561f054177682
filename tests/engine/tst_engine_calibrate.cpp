// SPDX-License-Identifier: Apache-2.0
// The calibration (engine/calibrate.h) on this machine's CPU: the record has every rate, each positive and
// finite, reads back through core's reader (the one `recompute plan --rates` uses), its products are ordered
// by size, and the step-time model takes it. Never an exact rate: CI runs on other machines.
#include <cmath>

#include <QtTest>

#include "core/calibration.h"
#include "core/rules.h"
#include "core/step_time.h"
#include "engine/calibrate.h"

using namespace rs;

class TestEngineCalibrate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void cpuRecordIsWholeAndReads();
    void refusesUnknownDeviceAndDtype();
};

void TestEngineCalibrate::cpuRecordIsWholeAndReads()
{
    engine::CalibrateOptions o;
    o.device = "cpu";
    o.dtype = "fp32";
    o.quick = true;
    o.command = "recompute-bench --calibrate --device cpu --dtype fp32 --quick";
    const CalibrationRates c = engine::calibrate(o);
    QCOMPARE(QString::fromStdString(c.device), QStringLiteral("cpu"));
    QVERIFY(!c.provisional);
    QVERIFY(!c.measured_at.empty());
    QCOMPARE(QString::fromStdString(c.source), QString::fromStdString(o.command));
    QVERIFY(c.matmul.size() >= 3);
    QVERIFY(c.grouped_gemm.size() >= 2);
    for (size_t i = 1; i < c.matmul.size(); ++i)
        QVERIFY(c.matmul[i].flops() >= c.matmul[i - 1].flops());
    // The reader refuses any rate that is not positive and finite: reading it back checks every one.
    const CalibrationRates back = calibrationFromJson(calibrationToJson(c));
    QCOMPARE(back.matmul.size(), c.matmul.size());
    QCOMPARE(back.attention_bwd_tflops, c.attention_bwd_tflops);
    // The unfused attention chain and the scores' dropout are measured too, and read back.
    QVERIFY(c.unfused_attention_fwd_gscores > 0 && c.unfused_attention_bwd_gscores > 0);
    QVERIFY(c.score_dropout_fwd_gscores > 0 && c.score_dropout_bwd_gscores > 0);
    QCOMPARE(back.unfused_attention_bwd_gscores, c.unfused_attention_bwd_gscores);
    QCOMPARE(back.score_dropout_fwd_gscores, c.score_dropout_fwd_gscores);
    // Consistent: a grouped product of g groups does g products' work, so its FLOPs are its shape's.
    for (const auto& g : c.grouped_gemm)
        QCOMPARE(g.flops(), 2.0 * double(g.m) * double(g.n) * double(g.k));
    // The model takes it: a small recipe's step is positive, and full recompute costs more than none.
    Recipe r;
    r.num_layers = 2;
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.seq_length = 64;
    r.micro_batch_size = 1;
    r.global_batch_size = 1;
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> {};
    const double none = estimateStepTime(validate(r, InputFormat::Json).resolved, back).step_ms;
    r.recompute_granularity = "full";
    r.recompute_method = "uniform";
    r.recompute_num_layers = 1;
    r.recompute_modules.reset();
    const double full = estimateStepTime(validate(r, InputFormat::Json).resolved, back).step_ms;
    QVERIFY(none > 0 && std::isfinite(none));
    QVERIFY(full > none);
}

void TestEngineCalibrate::refusesUnknownDeviceAndDtype()
{
    engine::CalibrateOptions o;
    o.dtype = "fp8";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine::calibrate(o));
    o.dtype = "fp32";
    o.device = "tpu:3";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, engine::calibrate(o));
}

QTEST_APPLESS_MAIN(TestEngineCalibrate)
#include "tst_engine_calibrate.moc"
