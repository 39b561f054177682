// SPDX-License-Identifier: Apache-2.0
// The step-time model (core/step_time.h), the calibration record it reads (core/calibration.h) and the plan
// over every expressible recompute choice (core/plan.h). Structure and monotonicity hold for any rates; the
// guide's published deltas and real Megatron-LM's are compared with an H100-class record, which is
// PROVISIONAL until one is measured (resources/calibration/h100-bf16-PROVISIONAL.json says where
// its figures come from): those comparisons say so in their output.
#include <fstream>

#include <QtTest>

#include "core/advisor.h"
#include "core/bridge_recipes.h"
#include "core/calibration.h"
#include "core/comparison.h"
#include "core/estimator.h"
#include "core/megatron_flags.h"
#include "core/plan.h"
#include "core/recompute_labels.h"
#include "core/rules.h"
#include "core/shell_words.h"
#include "core/step_stats.h"
#include "core/step_time.h"

using namespace rs;
using namespace Qt::StringLiterals;

namespace {

const char* kProvisional = RS_SOURCE_DIR "/resources/calibration/h100-bf16-PROVISIONAL.json";
const char* kH200 = RS_SOURCE_DIR "/resources/calibration/h200-bf16.json"; // measured
const char* kH100 = RS_SOURCE_DIR "/resources/calibration/h100-bf16.json"; // measured (2026-12-07)

CalibrationRates h100()
{
    return readCalibrationFile(kProvisional);
}

Recipe withChoice(const Recipe& base, const std::string& spelling, InputFormat f)
{
    const auto c = readChoiceSpelling(spelling);
    return validate(candidateRecipe(base, *c), f).resolved;
}

// A Megatron-LM fixture log's own command line as a recipe (its first line, "# command: ...").
Recipe recipeOfLog(const QString& path)
{
    std::ifstream in(path.toStdString());
    std::string line;
    std::getline(in, line);
    const auto words = splitShellWords(line.substr(line.find(':') + 1));
    std::vector<std::string> flags;
    bool after = false;
    for (const auto& w : *words) {
        if (after)
            flags.push_back(w);
        after = after || w.find("pretrain_gpt.py") != std::string::npos;
    }
    return recipeFromMegatronFlags(flags);
}

// The guide's Nemotron 3 Nano job (as tst_bridge_recipes builds it).
BridgeJob nemotronJob(const std::string& modules = "[moe]")
{
    return bridgeJob("nemotron_3_nano_pretrain_16gpu_h100_bf16_config", 16,
        { "train.global_batch_size=16", "model.vocab_size=131072", "model.recompute_modules=" + modules });
}

// A Megatron-LM log's iteration times ("elapsed time per iteration (ms): X"), in order.
std::vector<double> iterationTimes(const QString& path)
{
    std::ifstream in(path.toStdString());
    std::vector<double> out;
    const std::string key = "elapsed time per iteration (ms): ";
    for (std::string line; std::getline(in, line);)
        if (const auto at = line.find(key); at != std::string::npos)
            out.push_back(std::stod(line.substr(at + key.size())));
    return out;
}

// Two dense layers of hidden 1024 in bf16 with an fp32 gradient buffer: the optimizer and accumulation terms'
// small stack.
Recipe smallBf16Stack(int microBatches)
{
    Recipe r;
    r.num_layers = 2;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.seq_length = 1024;
    r.micro_batch_size = 1;
    r.global_batch_size = microBatches;
    r.bf16 = true;
    r.grad_reduce_in_fp32 = true;
    return r;
}

double stepOf(const Recipe& r, const CalibrationRates& c)
{
    return estimateStepTime(r, c).step_ms;
}

// A Megatron-LM log's peak: the largest "max allocated" of its memory lines (MB there are MiB), in bytes.
int64_t maxAllocatedBytes(const QString& path)
{
    std::ifstream in(path.toStdString());
    double mib = 0;
    const std::string key = "max allocated: ";
    for (std::string line; std::getline(in, line);)
        if (const auto at = line.find(key); at != std::string::npos)
            mib = std::max(mib, std::stod(line.substr(at + key.size())));
    return static_cast<int64_t>(mib * 1024 * 1024);
}

// One run of a measured sweep: its choice, its peak, and its steady step against the [] of its own device
// call (the sweep took two calls; a fresh machine's [] differs by 0.6 %).
struct SweepRun {
    std::string choice;
    int64_t peak_bytes = 0;
    double delta_pct = 0;
};

// A measured sweep of the H200 job sweep's dense local-spec job by real Megatron-LM d98e8a64 alone on one
// GPU, 16 iterations a run, the first 4 left out (the 5th on is flat within 1-2 %): on an H100 in two device
// calls (a/, b/, each run against its own call's []), on an H200 in one.
struct Sweep {
    const char* dir;
    std::vector<const char*> calls; // subfolders, the first holding the [] that stands for the sweep's
    const char* rates; // the record measured on that GPU
};
const char* kDlocal = RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/";
const Sweep kH100Sweep { kDlocal, { "a/", "b/" }, kH100 };
const Sweep kH200Sweep { RS_SOURCE_DIR "/bench/gpu/results/h200-2026-12-07-dlocal/", { "" }, kH200 };
const Sweep& sweepNamed(const QString& gpu)
{
    return gpu == u"H200"_s ? kH200Sweep : kH100Sweep;
}
constexpr int kDlocalWarmup = 4;

double steadyMedian(const QString& log)
{
    std::vector<double> t = iterationTimes(log);
    t.erase(t.begin(), t.begin() + std::min<ptrdiff_t>(kDlocalWarmup, ptrdiff_t(t.size())));
    const auto s = stepStats(t);
    return s ? s->median_ms : 0;
}

std::vector<SweepRun> dlocalSweep(const Sweep& sweep)
{
    std::vector<SweepRun> out;
    for (const char* call : sweep.calls) {
        const QString dir = QString::fromLatin1(sweep.dir) + QLatin1StringView(call);
        const double control = steadyMedian(dir + u"time-dlocal-none.log"_s);
        for (const QString& f : QDir(dir).entryList({ u"time-dlocal-*.log"_s }, QDir::Files, QDir::Name)) {
            // Another model: the TE spec, or no linear biases (RT30's fix-it, measured beside the sweep).
            if (f.contains(u"-te."_s) || f.contains(u"nobias"_s))
                continue;
            if (call != sweep.calls.front() && f == u"time-dlocal-none.log"_s)
                continue; // a later call's control: the first call's stands for []
            const double ms = steadyMedian(dir + f);
            if (ms <= 0)
                continue; // never finished a step (RT30's runs)
            const Recipe r = validate(recipeOfLog(dir + f), InputFormat::MegatronFlags).resolved;
            out.push_back(
                { choiceSpelling(recipeChoice(r)), maxAllocatedBytes(dir + f), 100 * (ms / control - 1) });
        }
    }
    return out;
}

// The cheapest measured run whose peak is under the target, among `allowed` (every run when empty).
const SweepRun* cheapestThatFits(
    const std::vector<SweepRun>& runs, double target_gb, const std::vector<std::string>& allowed = {})
{
    const SweepRun* best = nullptr;
    for (const SweepRun& r : runs) {
        if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), r.choice) == allowed.end())
            continue;
        if (static_cast<double>(r.peak_bytes) > target_gb * 1e9)
            continue;
        if (!best || r.delta_pct < best->delta_pct)
            best = &r;
    }
    return best;
}

// The noise of a sweep: how far apart its runs of one and the same work land. Full uniform 1, 2, 4 and
// block with every layer replay each layer once, the same work (the model gives them one step).
double sameWorkSpread(const std::vector<SweepRun>& runs)
{
    double lo = 1e9, hi = -1e9;
    for (const SweepRun& r : runs)
        if (r.choice == "full:uniform:1" || r.choice == "full:uniform:2" || r.choice == "full:uniform:4"
            || r.choice == "full:block:8") {
            lo = std::min(lo, r.delta_pct);
            hi = std::max(hi, r.delta_pct);
        }
    return hi - lo;
}

// The first term of rank 0 named `name` in `phase`; an empty term where there is none.
TimeTerm termOf(const StepTimeEstimate& e, const char* phase, const char* name)
{
    for (const TimeTerm& t : e.ranks.at(0).terms)
        if (t.phase == phase && t.name == name)
            return t;
    return TimeTerm {};
}

// The small dense job several tests time: 2 layers, hidden 1024, 8 heads, seq 2048, one micro-batch a step.
Recipe smallJob()
{
    Recipe r;
    r.num_layers = 2;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.seq_length = 2048;
    r.micro_batch_size = 1;
    r.global_batch_size = 1;
    return r;
}

} // namespace

class TestStepTime : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordReadsAndRefuses_data();
    void recordReadsAndRefuses();
    void everyTermHasASourceAndTheyAdd();
    void unfusedChainAtItsMeasuredRate();
    void loraSkipsFrozenWeightGradients();
    void fp8SaysItIsNotTimed();
    void fp8RatesTimeTheLinears();
    void maskOnAViewOfTheScores_data();
    void maskOnAViewOfTheScores();
    void optimizerStepPassByPass_data();
    void optimizerStepPassByPass();
    void mainGradAccumulation_data();
    void mainGradAccumulation();
    void replayOnlyAddsTime_data();
    void replayOnlyAddsTime();
    void fasterRatesGiveShorterSteps();
    void everyModelledLabelReplaysARegion();
    void latentMoeRegions();
    void mtpDepthsTimed_data();
    void mtpDepthsTimed();
    void pipelineBubble();
    void planKeepsWhatFitsAndSaysWhy();
    void confirmationTakesWithinErrorCheaperOnes();
    void planAnchoredAtMeasuredControl();
    void runsThatNeverFinishedAStepAreRefused();
    void planAgainstAMeasuredSweep_data();
    void planAgainstAMeasuredSweep();
    void guideMoonlightDeltas();
    void guideNemotronDelta();
    void realMegatronDeltas_data();
    void realMegatronDeltas();
    void measuredRatesAgainstRealMegatron_data();
    void measuredRatesAgainstRealMegatron();
};

void TestStepTime::recordReadsAndRefuses_data()
{
    QTest::addColumn<QString>("edit"); // a JSON pointer and its new value, or "" for the record as it is
    QTest::addColumn<QString>("field"); // the field the error names; "" when it reads
    QTest::newRow("as written") << u""_s << u""_s;
    QTest::newRow("wrong kind") << u"/kind=\"other\""_s << u"kind"_s;
    QTest::newRow("newer version") << u"/version=2"_s << u"version"_s;
    QTest::newRow("zero rate") << u"/elementwise_gbps=0"_s << u"elementwise_gbps"_s;
    QTest::newRow("negative matmul") << u"/matmul/1/tflops=-3"_s << u"matmul[1].tflops"_s;
    QTest::newRow("text attention") << u"/attention/fwd_tflops=\"fast\""_s << u"attention.fwd_tflops"_s;
    QTest::newRow("unknown dtype") << u"/dtype=\"fp8\""_s << u"dtype"_s;
    QTest::newRow("no launch cost") << u"-/kernel_launch_us"_s << u"kernel_launch_us"_s;
    QTest::newRow("unfused chain given")
        << u"/unfused_attention={\"fwd_gscores\": 150, \"bwd_gscores\": 60}"_s << u""_s;
    QTest::newRow("unfused chain half given")
        << u"/unfused_attention={\"fwd_gscores\": 150}"_s << u"unfused_attention.bwd_gscores"_s;
    QTest::newRow("negative dropout rate")
        << u"/score_dropout={\"fwd_gscores\": -1, \"bwd_gscores\": 60}"_s << u"score_dropout.fwd_gscores"_s;
    QTest::newRow("accumulate rate given") << u"/accumulate_gbps=2100"_s << u""_s;
    QTest::newRow("zero accumulate rate") << u"/accumulate_gbps=0"_s << u"accumulate_gbps"_s;
    QTest::newRow("fp8 GEMMs given")
        << u"/fp8_matmul=[{\"m\": 4096, \"n\": 4096, \"k\": 4096, \"tflops\": 1200}]"_s << u""_s;
    QTest::newRow("fp8 GEMMs empty") << u"/fp8_matmul=[]"_s << u"fp8_matmul"_s;
    QTest::newRow("fp8 GEMM without a rate")
        << u"/fp8_matmul=[{\"m\": 4096, \"n\": 4096, \"k\": 4096}]"_s << u"fp8_matmul[0].tflops"_s;
}

// A record that times the unfused attention chain (calibration.h) times the local spec's core attention by
// it: b x heads x s^2 score elements over the chain's rate, forward; dropout over them at its own rate.
void TestStepTime::unfusedChainAtItsMeasuredRate()
{
    Recipe r = smallJob();
    r.transformer_impl = "local";
    r.attention_dropout = 0.1;
    const Recipe resolved = validate(r, InputFormat::Json).resolved;
    CalibrationRates c = h100();
    const auto coreForward = [&resolved](const CalibrationRates& rates) {
        return termOf(estimateStepTime(resolved, rates), "forward", "core_attn");
    };
    const TimeTerm before = coreForward(c);
    QVERIFY(before.ms > 0);
    QVERIFY(before.source.find("no unfused-attention rate") != std::string::npos);
    // 2 layers x 1 micro-batch x 8 heads x 2048^2 = 67,108,864 scores; at 100 G scores/s forward 0.671 ms,
    // dropout at 400 G/s 0.168 ms: 0.839 ms (device-bound: the launch cost set to 1 us, so that the layer's
    // host time stays below its device time).
    c.kernel_launch_us = 1;
    c.unfused_attention_fwd_gscores = 100;
    c.unfused_attention_bwd_gscores = 50;
    c.score_dropout_fwd_gscores = 400;
    c.score_dropout_bwd_gscores = 300;
    const TimeTerm after = coreForward(c);
    QCOMPARE(qRound64(after.ms * 1e6),
        qRound64((2 * 8 * 2048.0 * 2048 / 100e6 + 2 * 8 * 2048.0 * 2048 / 400e6) * 1e6));
    QVERIFY(after.source.find("calibrated unfused-attention chain") != std::string::npos);
    QCOMPARE(after.flops, 2 * 2 * 2 * 8 * 2048.0 * 2048 * 128);
}

void TestStepTime::optimizerStepPassByPass_data()
{
    QTest::addColumn<QString>("adam");
    QTest::addColumn<bool>("distributed");
    QTest::addColumn<double>("bytesPerParameter");
    // bf16 with fp32 main parameters, moments and gradient buffer (grad_reduce_in_fp32), clipping on:
    // zero the buffer 4, the norm 4, clip 2 x 4 (fused scale) or 4 x 4 (local_multi_tensor_scale: the
    // product then its copy), Adam fused 2 x (4 + 8) + 4 or torch's 23 fp32 passes 92, copy back 4 + 2.
    QTest::newRow("FusedAdam") << u"fused"_s << false << 4.0 + 4 + 8 + 28 + 6;
    QTest::newRow("torch multi-tensor AdamW") << u"torch"_s << false << 4.0 + 4 + 16 + 92 + 6;
    // The distributed optimizer at DP 4: the buffer is zeroed whole (4 bytes of every parameter), the rest
    // is a quarter's: (4 + 8 + 28 + 6) / 4 + 4 per parameter of the stage.
    QTest::newRow("FusedAdam, distributed, DP 4") << u"fused"_s << true << 4.0 + (4 + 8 + 28 + 6) / 4.0;
}

void TestStepTime::optimizerStepPassByPass()
{
    QFETCH(QString, adam);
    QFETCH(bool, distributed);
    QFETCH(double, bytesPerParameter);
    Recipe r = smallBf16Stack(distributed ? 4 : 1);
    r.adam_implementation = adam.toStdString();
    r.use_distributed_optimizer = distributed;
    if (distributed)
        r.data_parallel_size = 4;
    const Recipe resolved = validate(r, InputFormat::Json).resolved;
    const MemoryEstimate m = estimateMemory(resolved, Layout::Megatron);
    const RankEstimate& rank = m.ranks.at(0);
    const double stageParameters = double(rank.phase("forward")->category("parameters")) / 2;
    QCOMPARE(rank.optimizer_params, distributed ? stageParameters / 4 : stageParameters);
    const StepTimeEstimate e = estimateStepTime(resolved, h100(), &m);
    double bytes = 0, ms = 0;
    for (const TimeTerm& t : e.ranks.at(0).terms)
        if (t.phase == "optimizer") {
            bytes += t.bytes;
            ms += t.ms;
            QVERIFY2(!t.source.empty(), t.name.c_str());
        }
    QCOMPARE(qRound64(bytes), qRound64(bytesPerParameter * stageParameters));
    QCOMPARE(e.ranks.at(0).optimizer_ms, ms);
}

void TestStepTime::mainGradAccumulation_data()
{
    QTest::addColumn<bool>("fusion");
    QTest::addColumn<double>("bytesPerParameterPerMicroBatch");
    // DDP's hook: the fp32 buffer read and written (4 + 4), the bf16 gradient read (2).
    QTest::newRow("--no-gradient-accumulation-fusion") << false << 10.0;
    // The wgrad GEMM accumulates into main_grad: no pass of its own.
    QTest::newRow("fused into the wgrad GEMM") << true << 0.0;
}

void TestStepTime::mainGradAccumulation()
{
    QFETCH(bool, fusion);
    QFETCH(double, bytesPerParameterPerMicroBatch);
    Recipe r = smallBf16Stack(4);
    r.gradient_accumulation_fusion = fusion;
    const Recipe resolved = validate(r, InputFormat::Json).resolved;
    const MemoryEstimate m = estimateMemory(resolved, Layout::Megatron);
    const double parameters = m.ranks.at(0).parameters;
    QCOMPARE(parameters, double(m.ranks.at(0).phase("forward")->category("parameters")) / 2);
    double bytes = 0;
    const StepTimeEstimate e = estimateStepTime(resolved, h100(), &m);
    for (const TimeTerm& t : e.ranks.at(0).terms)
        if (t.name == "main_grad accumulation") {
            QCOMPARE(t.phase, std::string("backward"));
            bytes += t.bytes;
        }
    QCOMPARE(qRound64(bytes), qRound64(4 * parameters * bytesPerParameterPerMicroBatch));
    // A record that measured the mixed-dtype accumulation times the term at that rate, the rest unchanged.
    // (Launches made free in both: the provisional record's 43 us a kernel would set this small stack.)
    CalibrationRates base = h100();
    base.kernel_launch_us = 1e-6;
    CalibrationRates measured = base;
    measured.accumulate_gbps = measured.elementwise_gbps / 2;
    const StepTimeEstimate slow = estimateStepTime(resolved, measured, &m);
    const StepTimeEstimate atAddRate = estimateStepTime(resolved, base, &m);
    const auto termMs = [](const StepTimeEstimate& x, const std::string& name) {
        double ms = 0;
        for (const TimeTerm& t : x.ranks.at(0).terms)
            ms += t.name == name ? t.ms : 0;
        return ms;
    };
    if (fusion) {
        QCOMPARE(slow.step_ms, atAddRate.step_ms);
    } else {
        QCOMPARE(termMs(slow, "main_grad accumulation"), 2 * termMs(atAddRate, "main_grad accumulation"));
        QCOMPARE(termMs(slow, "mlp"), termMs(atAddRate, "mlp"));
        QVERIFY(slow.step_ms > atAddRate.step_ms);
    }
}

void TestStepTime::recordReadsAndRefuses()
{
    QFETCH(QString, edit);
    QFETCH(QString, field);
    std::ifstream in(kProvisional);
    nlohmann::json j = nlohmann::json::parse(in);
    if (edit.startsWith(u'-')) {
        j.erase(edit.mid(2).toStdString());
    } else if (!edit.isEmpty()) {
        const auto eq = edit.indexOf(u'=');
        j[nlohmann::json::json_pointer(edit.left(eq).toStdString())]
            = nlohmann::json::parse(edit.mid(eq + 1).toStdString());
    }
    try {
        const CalibrationRates c = calibrationFromJson(j);
        QVERIFY2(field.isEmpty(), "a bad record was read");
        QVERIFY(c.provisional);
        QCOMPARE(calibrationFromJson(calibrationToJson(c)).matmul.size(), c.matmul.size());
        // Interpolated between the measured sizes, the nearest beyond them.
        QCOMPARE(gemmRateAt(c.matmul, 1.0), c.matmul.front().tflops);
        QCOMPARE(gemmRateAt(c.matmul, 1e20), c.matmul.back().tflops);
        const double mid = gemmRateAt(c.matmul, 2.0 * 3000 * 3000 * 3000);
        QVERIFY(mid > c.matmul[1].tflops && mid < c.matmul[2].tflops);
    } catch (const CalibrationError& e) {
        QVERIFY2(!field.isEmpty(), e.what());
        QCOMPARE(QString::fromStdString(e.field()), field);
    }
}

void TestStepTime::everyTermHasASourceAndTheyAdd()
{
    const BridgeJob job = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 8,
        { "train.global_batch_size=4", "model.recompute_modules=[moe_act]" });
    const Recipe r = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const StepTimeEstimate e = estimateStepTime(r, h100());
    QVERIFY(e.not_estimated.empty());
    QVERIFY(e.provisional);
    QVERIFY(e.step_ms > 0);
    QVERIFY(e.replay_ms > 0);
    for (const auto& rank : e.ranks) {
        double sum = 0;
        bool replays_moe_act = false;
        for (const auto& t : rank.terms) {
            QVERIFY2(!t.source.empty(), t.name.c_str());
            QVERIFY2(t.ms >= 0, t.name.c_str());
            sum += t.ms;
            replays_moe_act = replays_moe_act || (t.phase == "replay" && t.name == "moe_act");
            // Only what the label names is replayed.
            if (t.phase == "replay")
                QCOMPARE(QString::fromStdString(t.name), u"moe_act"_s);
        }
        QVERIFY(replays_moe_act);
        QVERIFY(std::abs(sum - rank.step_ms) < 1e-6 * rank.step_ms);
    }
    const auto j = stepTimeToJson(e);
    QCOMPARE(j["choice"].get<std::string>(), std::string("moe_act"));
    QVERIFY(j["ranks"][0]["terms"].size() > 5);
}

void TestStepTime::replayOnlyAddsTime_data()
{
    QTest::addColumn<QString>("choice");
    for (const char* c : { "core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp", "moe",
             "layernorm,moe_act", "moe,moe_act", "full:uniform:1", "full:block:3", "full:uniform:3" })
        QTest::newRow(c) << QString::fromLatin1(c);
}

// Any choice replays work on top of [], never less; a label inside its parent adds nothing to the parent;
// full recompute of every layer costs at least any selective set.
void TestStepTime::replayOnlyAddsTime()
{
    QFETCH(QString, choice);
    const BridgeJob job
        = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 8, { "train.global_batch_size=4" });
    const Recipe base = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const CalibrationRates c = h100();
    const double none = stepOf(withChoice(base, "[]", InputFormat::BridgeOverrides), c);
    const double t = stepOf(withChoice(base, choice.toStdString(), InputFormat::BridgeOverrides), c);
    QVERIFY2(t > none, qPrintable(u"%1 ms against %2 ms"_s.arg(t).arg(none)));
    if (choice == u"moe,moe_act"_s)
        QCOMPARE(t, stepOf(withChoice(base, "moe", InputFormat::BridgeOverrides), c));
    const double full = stepOf(withChoice(base, "full:uniform:1", InputFormat::BridgeOverrides), c);
    if (!choice.startsWith(u"full"_s))
        QVERIFY(full > t);
}

void TestStepTime::fasterRatesGiveShorterSteps()
{
    const BridgeJob job
        = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 8, { "train.global_batch_size=4" });
    const Recipe r = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    CalibrationRates c = h100();
    const double base = stepOf(r, c);
    CalibrationRates fast = c;
    for (auto& g : fast.matmul)
        g.tflops *= 2;
    for (auto& g : fast.grouped_gemm)
        g.tflops *= 2;
    fast.attention_fwd_tflops *= 2;
    fast.attention_bwd_tflops *= 2;
    fast.elementwise_gbps *= 2;
    fast.kernel_launch_us /= 2;
    fast.checkpoint_us /= 2;
    QVERIFY(std::abs(stepOf(r, fast) * 2 - base) < 1e-6 * base); // every term is work / rate
}

void TestStepTime::everyModelledLabelReplaysARegion()
{
    for (const auto& row : recomputeLabels())
        if (estimatorModelsLabel(row.name))
            QVERIFY2(!row.replays.empty(), row.name.data());
}

// Latent MoE on Bridge's Nemotron 3 Super H100 recipe (TP 1, EP 32, moe_latent_size 1024, hidden 4096, 512
// experts of 2688, top-22, capacity factor 1.1: dropless here, 40 micro-batches of 4096 tokens): per MoE
// layer and micro-batch the experts' GEMMs are 2 x 2 x R x moe_ffn x L (FC1, FC2; squared ReLU, not
// gated) with R = T x top-k, and the two projections 2 x T x h x L each, as Megatron's own count has them
// (training.py:438-450 at 2a75ac12: 4 T L moe_ffn k + 4 T h L); 'moe' replays them all.
void TestStepTime::latentMoeRegions()
{
    const BridgeJob job = bridgeJob("nemotron_3_super_pretrain_64gpu_h100_bf16_config");
    const Recipe r = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const StepTimeEstimate e = estimateStepTime(r, h100());
    QVERIFY(e.not_estimated.empty());
    const RankStepTime& stage0 = e.ranks.front(); // layers 0-43: 20 of them MoE
    const double T = 4096, k = 22, Fm = 2688, L = 1024, h = 4096, R = T * k, per = 20 * 40;
    const auto flopsOf = [&](const char* phase, const char* name) {
        double f = 0;
        for (const TimeTerm& t : stage0.terms)
            if (t.phase == phase && t.name == name)
                f += t.flops;
        return f;
    };
    QCOMPARE(flopsOf("forward", "moe_experts"), per * 2 * 2 * R * Fm * L);
    QCOMPARE(flopsOf("forward", "fc1_latent_proj"), per * 2 * T * h * L);
    QCOMPARE(flopsOf("forward", "fc2_latent_proj"), per * 2 * T * L * h);
    QCOMPARE(flopsOf("backward", "fc1_latent_proj"), 2 * flopsOf("forward", "fc1_latent_proj"));
    QCOMPARE(flopsOf("replay", "fc1_latent_proj"), flopsOf("forward", "fc1_latent_proj"));
    QCOMPARE(flopsOf("replay", "fc2_latent_proj"), flopsOf("forward", "fc2_latent_proj"));
}

void TestStepTime::mtpDepthsTimed_data()
{
    QTest::addColumn<QString>("choice");
    QTest::addColumn<bool>("replayed"); // the MTP depth's own work replays
    QTest::newRow("[]") << u"[]"_s << false;
    QTest::newRow("full uniform: the depth is one checkpoint") << u"full:uniform:1"_s << true;
    QTest::newRow("full block: not recomputed (RT9)") << u"full:block:2"_s << false;
}

// Two MTP depths on smallBf16Stack (2 dense layers of h = 1024, T = 1024 tokens, 4 micro-batches): each
// depth's eh_proj is 2 x T x 2h x h FLOPs a micro-batch (multi_token_prediction.py _concat_embeddings), its
// layer the decoder layer's work again (the dense MLP's FLOPs go from 2 layers' to 4 layers'), and its loss
// the head's work again (process_mtp_loss: the shared output layer and the cross-entropy).
void TestStepTime::mtpDepthsTimed()
{
    QFETCH(QString, choice);
    QFETCH(bool, replayed);
    const Recipe none = withChoice(smallBf16Stack(4), choice.toStdString(), InputFormat::Json);
    Recipe with = none;
    with.mtp_num_layers = 2;
    const StepTimeEstimate e0 = estimateStepTime(validate(none).resolved, h100());
    const StepTimeEstimate e1 = estimateStepTime(validate(with).resolved, h100());
    QVERIFY(e0.not_estimated.empty() && e1.not_estimated.empty());
    const auto flopsOf = [](const StepTimeEstimate& e, const char* phase, const char* name) {
        double f = 0;
        for (const TimeTerm& t : e.ranks.front().terms)
            if (t.phase == phase && t.name == name)
                f += t.flops;
        return f;
    };
    const double T = 1024, h = 1024, m = 4;
    QCOMPARE(flopsOf(e1, "forward", "mtp_input"), 2 * m * 2 * T * 2 * h * h);
    QCOMPARE(flopsOf(e1, "replay", "mtp_input"), replayed ? flopsOf(e1, "forward", "mtp_input") : 0.0);
    QCOMPARE(flopsOf(e1, "forward", "mlp"), 2 * flopsOf(e0, "forward", "mlp"));
    QCOMPARE(flopsOf(e1, "forward", "mtp_loss_head"), 2 * flopsOf(e0, "forward", "loss_head"));
    QCOMPARE(flopsOf(e1, "backward", "mtp_loss_head"), 2 * flopsOf(e0, "backward", "loss_head"));
    QVERIFY(e1.step_ms > e0.step_ms);
}

// PP 4 x VPP 2 over 8 micro-batches: the bubble is (4 - 1) / (8 x 2) of the slowest stage's compute.
void TestStepTime::pipelineBubble()
{
    Recipe r;
    r.num_layers = 16;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.seq_length = 1024;
    r.micro_batch_size = 1;
    r.global_batch_size = 8;
    r.pipeline_model_parallel_size = 4;
    r.virtual_pipeline_model_parallel_size = 2;
    r.bf16 = true;
    const Recipe v = validate(r, InputFormat::Json).resolved;
    const StepTimeEstimate e = estimateStepTime(v, h100());
    QCOMPARE(e.ranks.size(), size_t(4));
    double slowest = 0;
    for (const auto& rk : e.ranks)
        slowest = std::max(slowest, rk.compute_ms);
    for (const auto& rk : e.ranks)
        QVERIFY(std::abs(rk.bubble_ms - slowest * 3.0 / 16.0) < 1e-9 * slowest);
}

void TestStepTime::planKeepsWhatFitsAndSaysWhy()
{
    const BridgeJob job = nemotronJob();
    const Recipe r = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const Plan p = planRecompute(r, InputFormat::BridgeOverrides, h100(), 80.0, kEstimateErrorFraction);
    QVERIFY(p.chosen);
    const PlanCandidate& chosen = p.candidates[*p.chosen];
    int fits = 0;
    for (const auto& c : p.candidates) {
        QVERIFY2(!c.reason.empty() || c.verdict == PlanVerdict::Fits, c.label.c_str());
        QCOMPARE(c.control, &c == &p.candidates.front());
        if (c.verdict == PlanVerdict::Fits || c.verdict == PlanVerdict::Chosen) {
            ++fits;
            QVERIFY(c.step_ms >= chosen.step_ms);
            QVERIFY(c.peak_bytes <= int64_t(80e9 * 0.95));
        }
        if (c.verdict == PlanVerdict::OverTarget) {
            QVERIFY(c.peak_bytes > int64_t(80e9));
            QVERIFY2(c.reason.find("over the 80.000 GB target") != std::string::npos, c.reason.c_str());
        }
        if (c.verdict == PlanVerdict::WithinError) {
            QVERIFY(c.peak_bytes > int64_t(80e9 * 0.95) && c.peak_bytes <= int64_t(80e9));
            QVERIFY2(
                c.reason.find("a measurement says whether it fits") != std::string::npos, c.reason.c_str());
        }
        if (c.dominated_by) {
            const auto& d = p.candidates[*c.dominated_by];
            QVERIFY(d.peak_bytes <= c.peak_bytes && d.step_ms <= c.step_ms);
        }
    }
    QVERIFY(fits >= 1);
    // The guide: the control does not fit, moe does; nothing that fits is cheaper than the chosen one.
    // The [] row is judged as every other (its verdict was "control" beside a reason saying it does not fit).
    QCOMPARE(planVerdictName(p.candidates.front().verdict), "over-target");
    QVERIFY2(p.candidates.front().reason.find("does not fit") != std::string::npos,
        p.candidates.front().reason.c_str());
    // Where [] fits, it is the plan's choice: no recompute costs nothing.
    const Plan roomy = planRecompute(r, InputFormat::BridgeOverrides, h100(), 1000.0, kEstimateErrorFraction);
    QVERIFY(roomy.chosen && *roomy.chosen == 0);
    QCOMPARE(planVerdictName(roomy.candidates.front().verdict), "chosen");
    QVERIFY(roomy.candidates.front().control);
    // The front is ordered by memory and strictly faster as memory grows.
    for (size_t i = 1; i < p.front.size(); ++i) {
        QVERIFY(p.candidates[p.front[i]].peak_bytes >= p.candidates[p.front[i - 1]].peak_bytes);
        QVERIFY(p.candidates[p.front[i]].step_ms < p.candidates[p.front[i - 1]].step_ms);
    }
    qInfo("Nemotron 3 Nano at 80 GB: chosen %s (%.1f ms, %.2f GB) of %zu choices, %d fit; front %zu",
        chosen.label.c_str(), chosen.step_ms, double(chosen.peak_bytes) / 1e9, p.candidates.size(), fits,
        p.front.size());
}

// The H200 job sweep's dense job at 14 GB (docs/benchmarks.md "A real-job sweep on the H200"): the sweep
// measured core_attn at 13.639 GB and chose it; its estimate, 13.910 GB, is inside the 5 % the plan keeps
// free, so the plan alone chooses a slower choice. A confirmation measures core_attn beside it.
void TestStepTime::confirmationTakesWithinErrorCheaperOnes()
{
    const QString dir = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200/");
    const Recipe r = validate(recipeOfLog(dir + u"dense-none.log"_s), InputFormat::MegatronFlags).resolved;
    const Plan p = planRecompute(
        r, InputFormat::MegatronFlags, readCalibrationFile(kH200), 14.0, kEstimateErrorFraction);
    QVERIFY(p.chosen);
    const PlanCandidate& chosen = p.candidates[*p.chosen];
    const auto at = [&p](const std::string& label) {
        for (const auto& c : p.candidates)
            if (c.label == label)
                return &c;
        return static_cast<const PlanCandidate*>(nullptr);
    };
    QVERIFY(at("core_attn"));
    QCOMPARE(planVerdictName(at("core_attn")->verdict), "within-error");
    QVERIFY(at("core_attn")->step_ms < chosen.step_ms);
    const std::vector<size_t> order = confirmationOrder(p, 100);
    QVERIFY(!order.empty());
    QCOMPARE(order.front(), *p.chosen);
    size_t i = 1;
    for (; i < order.size() && p.candidates[order[i]].verdict == PlanVerdict::WithinError; ++i) {
        QVERIFY(p.candidates[order[i]].step_ms < chosen.step_ms);
        if (i > 1)
            QVERIFY(p.candidates[order[i]].step_ms >= p.candidates[order[i - 1]].step_ms);
    }
    QVERIFY2(i > 1, "no within-error choice is confirmed");
    for (; i < order.size(); ++i) {
        QCOMPARE(planVerdictName(p.candidates[order[i]].verdict), "fits");
        if (p.candidates[order[i - 1]].verdict == PlanVerdict::Fits)
            QVERIFY(p.candidates[order[i]].step_ms >= p.candidates[order[i - 1]].step_ms);
    }
    QVERIFY(std::find(order.begin(), order.end(), size_t(0)) == order.end()); // the control runs anyway
    QVERIFY(std::find(order.begin(), order.end(), size_t(at("core_attn") - &p.candidates.front()))
        != order.end());
    QCOMPARE(confirmationOrder(p, 2).size(), size_t(2));
    QCOMPARE(confirmationOrder(p, 2)[1], order[1]);
    // Nothing fits at 10 GB, and nothing is within the error: nothing to confirm.
    const Plan none = planRecompute(
        r, InputFormat::MegatronFlags, readCalibrationFile(kH200), 10.0, kEstimateErrorFraction);
    QVERIFY(!none.chosen);
    QVERIFY(confirmationOrder(none, 5).empty());
}

// The guide's Moonlight 16B table (recompute-guide.md "Matched H100 Evidence"): time vs [] per choice.
void TestStepTime::guideMoonlightDeltas()
{
    const std::vector<std::pair<std::string, double>> published
        = { { "core_attn", 3.85 }, { "mla_up_proj", 5.19 }, { "mla_up_proj,mlp", 8.65 }, { "moe_act", 1.99 },
              { "layernorm,moe_act", 10.79 } };
    const BridgeJob job
        = bridgeJob("moonlight_16b_pretrain_8gpu_h100_bf16_config", 8, { "train.global_batch_size=4" });
    const Recipe base = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const CalibrationRates c = readCalibrationFile(kH100); // measured on the guide's GPU model
    QVERIFY(!c.provisional);
    const double none = stepOf(withChoice(base, "[]", InputFormat::BridgeOverrides), c);
    qInfo("Moonlight 16B, rank 0 of TP 2 SP x EP 8, measured H100 rates: [] %.1f ms", none);
    std::vector<double> predicted;
    for (const auto& [choice, pub] : published) {
        const double d = 100 * (stepOf(withChoice(base, choice, InputFormat::BridgeOverrides), c) / none - 1);
        predicted.push_back(d);
        qInfo("  %-18s predicted %+6.2f %%  published %+6.2f %%  difference %+6.2f points", choice.c_str(), d,
            pub, d - pub);
    }
    // The same order as published. With the H100's measured record `layernorm,moe_act` (+10.79 % published)
    // predicts below `core_attn` and `mla_up_proj`: its replay is two norms and an activation, little device
    // work, where the published 8-GPU step's difference is host and communication time the model does not
    // have (docs/benchmarks.md 'Predicted step time against the guide'). Known, so expected to fail: an
    // XPASS here means the order now holds and this note is stale.
    QStringList outOfOrder;
    for (size_t i = 0; i < published.size(); ++i)
        for (size_t j = 0; j < published.size(); ++j)
            if (published[i].second < published[j].second && !(predicted[i] < predicted[j]))
                outOfOrder << QString::fromStdString(published[i].first + " before " + published[j].first);
    qInfo("out of the published order: %s", qPrintable(outOfOrder.join(u"; "_s)));
    QEXPECT_FAIL("", "layernorm,moe_act predicted below core_attn and mla_up_proj (see above)", Continue);
    QVERIFY2(outOfOrder.isEmpty(), qPrintable(outOfOrder.join(u"; "_s)));
    for (size_t i = 0; i < published.size(); ++i) {
        QVERIFY(predicted[i] > 0);
        const double miss = std::abs(predicted[i] - published[i].second);
        if (miss > 2)
            QEXPECT_FAIL("",
                qPrintable(QString::fromStdString(published[i].first
                    + ": the model replays the "
                      "label's kernels only; see docs/benchmarks.md 'Predicted step time against the "
                      "guide'")),
                Continue);
        QVERIFY2(miss <= 2,
            qPrintable(u"%1: %2 points"_s.arg(QString::fromStdString(published[i].first)).arg(miss)));
    }
}

// The guide's Nemotron 3 Nano table: moe,layernorm 677.62 ms against moe 657.42 ms, +3.07 %.
void TestStepTime::guideNemotronDelta()
{
    const CalibrationRates c = readCalibrationFile(kH100);
    QVERIFY(!c.provisional);
    const auto step = [&c](const char* modules) {
        return stepOf(validate(nemotronJob(modules).recipe, InputFormat::BridgeOverrides).resolved, c);
    };
    const double moe = step("[moe]"), both = step("[moe,layernorm]");
    const double d = 100 * (both / moe - 1);
    qInfo("Nemotron 3 Nano, measured H100 rates: moe %.1f ms, moe,layernorm %.1f ms: predicted %+.2f %%, "
          "published +3.07 %%",
        moe, both, d);
    QVERIFY(d > 0);
    if (std::abs(d - 3.07) > 2)
        QEXPECT_FAIL("", "see docs/benchmarks.md 'Predicted step time against the guide'", Continue);
    QVERIFY2(std::abs(d - 3.07) <= 2, qPrintable(u"%1 points"_s.arg(d - 3.07)));
}

// Real Megatron-LM alone on one GPU, its own command lines (the fixture logs' first line): the H200 job sweep
// of docs/benchmarks.md "A real-job sweep on the H200" (dense, local spec; medians of the sweep, whose logs
// are in bench/gpu/results/h200-2026-12-01-job-sweep) predicted with the H200's measured record, and the
// H100 step times of bench/gpu/results/2026-12-06-time (Llama-like with TE; medians of 12 steps, whose
// within-run spread is 10-20 %, the README says) with the provisional H100 record.
void TestStepTime::realMegatronDeltas_data()
{
    QTest::addColumn<QString>("rates");
    QTest::addColumn<QString>("control");
    QTest::addColumn<QString>("candidate");
    QTest::addColumn<double>("controlMs");
    QTest::addColumn<double>("candidateMs");
    const QString h200 = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200/");
    const QString h100 = QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/2026-12-06-time/");
    const QString h200Rates = QString::fromLatin1(kH200);
    const QString h100Rates = QString::fromLatin1(kH100);
    QTest::newRow("H200 dense core_attn")
        << h200Rates << h200 + u"dense-none.log"_s << h200 + u"dense-core_attn.log"_s << 339.7 << 417.1;
    QTest::newRow("H200 dense full uniform 1")
        << h200Rates << h200 + u"dense-none.log"_s << h200 + u"dense-full-uniform-1.log"_s << 339.7 << 443.9;
    QTest::newRow("H200 dense full block 4")
        << h200Rates << h200 + u"dense-none.log"_s << h200 + u"dense-full-block-4.log"_s << 339.7 << 389.2;
    QTest::newRow("H100 llama core_attn") << h100Rates << h100 + u"time-llama-none.log"_s
                                          << h100 + u"time-llama-core_attn.log"_s << 232.7 << 223.6;
    QTest::newRow("H100 llama mlp") << h100Rates << h100 + u"time-llama-none.log"_s
                                    << h100 + u"time-llama-mlp.log"_s << 232.7 << 254.7;
    QTest::newRow("H100 llama full") << h100Rates << h100 + u"time-llama-none.log"_s
                                     << h100 + u"time-llama-full.log"_s << 232.7 << 346.5;
}

void TestStepTime::realMegatronDeltas()
{
    QFETCH(QString, rates);
    QFETCH(QString, control);
    QFETCH(QString, candidate);
    QFETCH(double, controlMs);
    QFETCH(double, candidateMs);
    const CalibrationRates c = readCalibrationFile(rates.toStdString());
    const Recipe r0 = validate(recipeOfLog(control), InputFormat::MegatronFlags).resolved;
    const Recipe r1 = validate(recipeOfLog(candidate), InputFormat::MegatronFlags).resolved;
    QVERIFY(!isControlRecipe(r1));
    const double t0 = stepOf(r0, c), t1 = stepOf(r1, c);
    const double predicted = 100 * (t1 / t0 - 1), real = 100 * (candidateMs / controlMs - 1);
    qInfo("%s: predicted %.1f -> %.1f ms (%+.2f %%), real %.1f -> %.1f ms (%+.2f %%), rates %s",
        QTest::currentDataTag(), t0, t1, predicted, controlMs, candidateMs, real,
        c.provisional ? "PROVISIONAL" : c.device.c_str());
    QVERIFY(predicted > 0);
    if (std::abs(predicted - real) > 2)
        QEXPECT_FAIL("", "see docs/benchmarks.md 'Predicted step time against real Megatron-LM'", Continue);
    QVERIFY2(std::abs(predicted - real) <= 2, qPrintable(u"%1 points"_s.arg(predicted - real)));
}

// The H200's measured record (resources/calibration/h200-bf16.json) against real Megatron-LM + TE alone on
// the same H200, each run's own command line, Δ the Hodges-Lehmann shift of the steady iterations (those
// after `warmup`) with its 95 % interval (core/step_stats.h): bench/gpu/results/h200-2026-12-06-time.
void TestStepTime::measuredRatesAgainstRealMegatron_data()
{
    QTest::addColumn<QString>("rates");
    QTest::addColumn<QString>("control");
    QTest::addColumn<QString>("candidate");
    QTest::addColumn<int>("warmup");
    QTest::addColumn<int>("steadyIterations");
    QTest::addColumn<bool>("gpuBound"); // the profile shows the GPU busy most of the step
    // Why the anchored Δ of a GPU-bound row misses, where the runs themselves say so (empty: it must hold).
    QTest::addColumn<QString>("anchoredMiss");
    // H200, TE Llama-like 8 x hidden 2048: host-bound (the steps spread by 20 % within a run).
    const QString d = QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h200-2026-12-06-time/");
    for (const char* c : { "core_attn", "mlp", "full" })
        QTest::newRow(qPrintable(u"H200 llama %1"_s.arg(QLatin1StringView(c))))
            << QString::fromLatin1(kH200) << d + u"time-llama-none.log"_s
            << d + u"time-llama-%1.log"_s.arg(QLatin1StringView(c)) << 6 << 24 << false << QString();
    // H100, TE 4 x hidden 4096 (Llama-8B-like layers): GPU-bound (busy 84-94 % of the step, the profiler's
    // traces beside the logs). Iterations 7-8 hold the profiler and its flush: the steady ones are 9-14.
    const QString big = QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-time/");
    for (const char* c : { "core_attn", "mlp", "full" })
        QTest::newRow(qPrintable(u"H100 big %1"_s.arg(QLatin1StringView(c))))
            << QString::fromLatin1(kH100) << big + u"time-big-none.log"_s
            << big + u"time-big-%1.log"_s.arg(QLatin1StringView(c)) << 8 << 6 << true << QString();
    // H100, the dense local-spec job of the measured sweep (planAgainstAMeasuredSweep): GPU-bound (busy
    // 91-94 %), steady from the 5th of 16 iterations; each run against the [] of its own device call.
    const QString dl = QString::fromLatin1(kDlocal);
    for (const char* c : { "a/core_attn", "a/core_attn-layernorm", "a/full", "a/full-block-4",
             "a/full-block-6", "a/full-block-7", "b/full-block-3", "b/full-block-5", "b/full-block-8",
             "b/full-uniform-2", "b/full-uniform-4" }) {
        const QString name = QLatin1StringView(c);
        QTest::newRow(qPrintable(u"H100 dense local %1"_s.arg(name)))
            << QString::fromLatin1(kH100) << dl + name.left(2) + u"time-dlocal-none.log"_s
            << dl + name.left(2) + u"time-dlocal-"_s + name.mid(2) + u".log"_s << kDlocalWarmup << 12
            << true
            // Full uniform 1, 2, 4 and block 8 replay the same work, every layer once (the model gives them
            // one step); the second call measured them at +30.0 % (uniform 4), +31.5 % (uniform 2) and
            // +31.8 % (block 8), the first at +30.4 % (uniform 1): a spread of 1.7 points between runs of
            // one work, which the two rows furthest out carry past 2.
            << (name == u"b/full-block-8"_s || name == u"b/full-uniform-2"_s
                       ? u"runs of the same replay spread by 1.7 points (b/full-uniform-4 +30.0 %)"_s
                       : QString());
    }
    // H100, the H200 fixtures' Llama-like local-spec job (GQA, SwiGLU, unfused attention and RoPE, no
    // dropout) alone, 16 iterations, steady from the 5th as the dense local job's (from the 3rd, full's
    // anchored Δ reads -2.05 points: the [] run drifts). GPU-bound: the model's device time is 342 ms of the
    // 358 ms step, its host 15 ms, and the steps spread by 3-5 % within a run (host-bound TE runs: 20-40 %).
    const QString ll = QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-08-time/");
    for (const char* c : { "core_attn", "full" })
        QTest::newRow(qPrintable(u"H100 llama local %1"_s.arg(QLatin1StringView(c))))
            << QString::fromLatin1(kH100) << ll + u"time-llocal-none.log"_s
            << ll + u"time-llocal-%1.log"_s.arg(QLatin1StringView(c)) << kDlocalWarmup << 12 << true
            << QString();
    // H200, the same job's sweep on one H200 (one device call), predicted from the H200's record measured
    // in the same lease.
    const QString dh = QString::fromLatin1(kH200Sweep.dir);
    for (const char* c :
        { "core_attn", "core_attn-layernorm", "full", "full-block-3", "full-block-4", "full-block-5",
            "full-block-6", "full-block-7", "full-block-8", "full-uniform-2", "full-uniform-4" })
        QTest::newRow(qPrintable(u"H200 dense local %1"_s.arg(QLatin1StringView(c))))
            << QString::fromLatin1(kH200) << dh + u"time-dlocal-none.log"_s
            << dh + u"time-dlocal-%1.log"_s.arg(QLatin1StringView(c)) << kDlocalWarmup << 12 << true
            << QString();
}

void TestStepTime::measuredRatesAgainstRealMegatron()
{
    QFETCH(QString, rates);
    QFETCH(QString, control);
    QFETCH(QString, candidate);
    QFETCH(int, warmup);
    QFETCH(int, steadyIterations);
    QFETCH(bool, gpuBound);
    QFETCH(QString, anchoredMiss);
    const CalibrationRates c = readCalibrationFile(rates.toStdString());
    QVERIFY(!c.provisional);
    // The record was measured on the GPU model the logs ran on (their second line names it).
    std::ifstream log(control.toStdString());
    std::string line;
    std::getline(log, line);
    std::getline(log, line);
    QVERIFY2(line.find(c.device) != std::string::npos, line.c_str());
    const auto steady = [warmup](const QString& log) {
        std::vector<double> t = iterationTimes(log);
        t.erase(t.begin(), t.begin() + std::min<ptrdiff_t>(warmup, ptrdiff_t(t.size())));
        return t;
    };
    const std::vector<double> t0 = steady(control), t1 = steady(candidate);
    QCOMPARE(int(t0.size()), steadyIterations);
    QCOMPARE(int(t1.size()), steadyIterations);
    const auto real = timeDelta(t1, t0);
    QVERIFY(real && real->low_pct && real->high_pct);
    const Recipe r0 = validate(recipeOfLog(control), InputFormat::MegatronFlags).resolved;
    const Recipe r1 = validate(recipeOfLog(candidate), InputFormat::MegatronFlags).resolved;
    QVERIFY(!isControlRecipe(r1));
    const double p0 = stepOf(r0, c), p1 = stepOf(r1, c);
    const double predicted = 100 * (p1 / p0 - 1);
    qInfo("%s: predicted %.1f -> %.1f ms (%+.2f %%); real median %.1f ms, delta %+.2f %% [%+.2f, %+.2f]",
        QTest::currentDataTag(), p0, p1, predicted, stepStats(t0)->median_ms, real->pct, *real->low_pct,
        *real->high_pct);
    QVERIFY(predicted > 0);
    // Anchored at the measured [] step (plan --control-ms, and --confirm once [] is measured): the predicted
    // replay over the real step. Where the GPU sets the pace the model's replays are right in milliseconds
    // (docs/benchmarks.md), so this must hold there; host-bound runs replay launches the model does not
    // count.
    const double anchored = 100 * (p1 - p0) / stepStats(t0)->median_ms;
    qInfo("%s: anchored at the measured [], predicted %+.2f %%, %+.2f points", QTest::currentDataTag(),
        anchored, anchored - real->pct);
    if (!gpuBound && std::abs(anchored - real->pct) > 2)
        QEXPECT_FAIL("", "host-bound: see docs/benchmarks.md 'Predicted step time against real Megatron-LM'",
            Continue);
    if (!anchoredMiss.isEmpty())
        QEXPECT_FAIL("", qPrintable(anchoredMiss), Continue);
    QVERIFY2(
        std::abs(anchored - real->pct) <= 2, qPrintable(u"anchored: %1 points"_s.arg(anchored - real->pct)));
    if (std::abs(predicted - real->pct) > 2)
        QEXPECT_FAIL("", "see docs/benchmarks.md 'Predicted step time against real Megatron-LM'", Continue);
    QVERIFY2(std::abs(predicted - real->pct) <= 2, qPrintable(u"%1 points"_s.arg(predicted - real->pct)));
}

// A plan anchored at a measured [] step: every step is it plus the model's difference from its own [],
// every Δ the predicted difference over the measured step; the order, the front and the choice unchanged.
void TestStepTime::planAnchoredAtMeasuredControl()
{
    const BridgeJob job = nemotronJob();
    const Recipe r = validate(job.recipe, InputFormat::BridgeOverrides).resolved;
    const Plan p = planRecompute(r, InputFormat::BridgeOverrides, h100(), 80.0, kEstimateErrorFraction);
    const double measured = 1.5 * p.candidates.front().model_step_ms;
    const Plan a
        = planRecompute(r, InputFormat::BridgeOverrides, h100(), 80.0, kEstimateErrorFraction, measured);
    QVERIFY(!p.measured_control_ms);
    QCOMPARE(a.measured_control_ms.value_or(0), measured);
    QCOMPARE(a.candidates.size(), p.candidates.size());
    QCOMPARE(a.candidates.front().step_ms, measured);
    const double model0 = p.candidates.front().model_step_ms;
    for (size_t i = 0; i < a.candidates.size(); ++i) {
        const PlanCandidate& x = a.candidates[i];
        const PlanCandidate& y = p.candidates[i];
        QCOMPARE(x.verdict, y.verdict);
        if (x.verdict == PlanVerdict::Invalid)
            continue;
        QCOMPARE(x.model_step_ms, y.step_ms);
        QCOMPARE(x.step_ms, measured + (y.step_ms - model0));
        QCOMPARE(x.delta_pct + 100.0, 100.0 * (1 + (y.step_ms - model0) / measured));
    }
    QCOMPARE(a.chosen, p.chosen);
    QCOMPARE(a.front, p.front);
    QVERIFY(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
        return n.find("anchored at the measured [] step") != std::string::npos;
    }));
    QCOMPARE(planToJson(a)["measured_control_ms"].get<double>(), measured);
    QVERIFY(planToJson(p)["measured_control_ms"].is_null());
}

// The sweep's runs that never finished a step are refused by RT30, and the same mlp without linear biases,
// which ran, is not.
void TestStepTime::runsThatNeverFinishedAStepAreRefused()
{
    const QString dl = QString::fromLatin1(kDlocal);
    for (const char* f : { "a/time-dlocal-mlp.log", "a/time-dlocal-core_attn-mlp.log",
             "a/time-dlocal-core_attn-mlp-te.log", "b/time-dlocal-nobias-mlp.log" }) {
        const QString log = dl + QLatin1StringView(f);
        const bool ran = !iterationTimes(log).empty();
        const Validation v = validate(recipeOfLog(log), InputFormat::MegatronFlags);
        const bool refused = std::any_of(v.findings.begin(), v.findings.end(),
            [](const Finding& x) { return x.rule_id == "RT30" && x.severity == Severity::Error; });
        QVERIFY2(refused == !ran, f);
    }
}

// The plan against a measured sweep of one job (issue 31): every choice the plan could pick at targets of
// 12-18 GB run by real Megatron-LM alone on one H100. The plan, anchored at the measured [] step, picks by
// its estimates and predicted steps; --confirm measures its first three (confirmationOrder) and the advisor
// keeps the cheapest measured one that fits. That must be the sweep's own choice. The choices the sweep did
// not run are full uniform 3 and 5-8 (their replay is every layer's, measured at +30-32 % for 1, 2 and 4:
// never the cheapest) and those estimated over 20 GB; the runs of `mlp` never finished a step (RT30), and
// the plan must drop them as invalid.
void TestStepTime::planAgainstAMeasuredSweep_data()
{
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<double>("target_gb");
    QTest::addColumn<QString>("sweeps"); // the measured sweep's choice, written down from the logs
    for (const auto& [gb, choice] : std::initializer_list<std::pair<double, const char*>> {
             { 12.0, "full:block:7" }, { 13.0, "full:block:7" }, { 13.5, "full:block:6" },
             { 14.0, "full:block:6" }, { 15.5, "full:block:5" }, { 17.0, "full:block:4" },
             { 18.0, "full:block:4" }, { 18.5, "full:block:3" } })
        QTest::newRow(qPrintable(u"H100 %1 GB"_s.arg(gb))) << u"H100"_s << gb << QString::fromLatin1(choice);
    // The H200's sweep: the same peaks; at 14 GB core_attn (+23.40 %) and full block 6 (+23.48 %) are
    // 0.08 points apart.
    for (const auto& [gb, choice] : std::initializer_list<std::pair<double, const char*>> {
             { 12.0, "full:block:7" }, { 13.0, "full:block:7" }, { 13.5, "full:block:6" },
             { 14.0, "core_attn" }, { 15.5, "full:block:5" }, { 17.0, "full:block:4" },
             { 18.0, "full:block:4" }, { 18.5, "full:block:3" } })
        QTest::newRow(qPrintable(u"H200 %1 GB"_s.arg(gb))) << u"H200"_s << gb << QString::fromLatin1(choice);
}

void TestStepTime::planAgainstAMeasuredSweep()
{
    QFETCH(QString, gpu);
    QFETCH(double, target_gb);
    QFETCH(QString, sweeps);
    const Sweep& sweep = sweepNamed(gpu);
    const std::vector<SweepRun> runs = dlocalSweep(sweep);
    QCOMPARE(int(runs.size()), 12);
    const SweepRun* measured = cheapestThatFits(runs, target_gb);
    QVERIFY(measured);
    QCOMPARE(QString::fromStdString(measured->choice), sweeps);

    const QString dir = QString::fromLatin1(sweep.dir) + QLatin1StringView(sweep.calls.front());
    const CalibrationRates c = readCalibrationFile(sweep.rates);
    QVERIFY(!c.provisional);
    const Recipe r0
        = validate(recipeOfLog(dir + u"time-dlocal-none.log"_s), InputFormat::MegatronFlags).resolved;
    const double control = steadyMedian(dir + u"time-dlocal-none.log"_s);
    const Plan p
        = planRecompute(r0, InputFormat::MegatronFlags, c, target_gb, kEstimateErrorFraction, control);
    for (const PlanCandidate& x : p.candidates)
        if (x.choice.granularity == "selective"
            && std::find(x.choice.modules.begin(), x.choice.modules.end(), "mlp") != x.choice.modules.end()) {
            QCOMPARE(x.verdict, PlanVerdict::Invalid);
            QCOMPARE(QString::fromStdString(x.rule), u"RT30"_s);
        }
    std::vector<std::string> confirmed;
    for (const size_t i : confirmationOrder(p, 3)) {
        const std::string& label = p.candidates[i].label;
        QVERIFY2(std::any_of(runs.begin(), runs.end(), [&](const SweepRun& x) { return x.choice == label; }),
            qPrintable(u"--confirm would measure %1, which the sweep did not run"_s.arg(
                QString::fromStdString(label))));
        confirmed.push_back(label);
    }
    const SweepRun* advised = confirmed.empty() ? nullptr : cheapestThatFits(runs, target_gb, confirmed);
    const std::string chosen = p.chosen ? p.candidates[*p.chosen].label : std::string("nothing");
    const double noise = sameWorkSpread(runs);
    qInfo("%s: the sweep %s (%+.2f %%, %.3f GB); the plan %s, --confirm measures %zu, keeps %s (%+.2f %%); "
          "runs of one work spread by %.2f points",
        QTest::currentDataTag(), measured->choice.c_str(), measured->delta_pct, measured->peak_bytes / 1e9,
        chosen.c_str(), confirmed.size(), advised ? advised->choice.c_str() : "nothing",
        advised ? advised->delta_pct : 0.0, noise);
    QVERIFY(advised);
    // The sweep's own choice, or one measured inside the sweep's noise of it (the issue's "or inside its
    // noise"): no further from it than runs of the same work are from each other.
    QVERIFY2(advised->choice == measured->choice || advised->delta_pct - measured->delta_pct <= noise,
        qPrintable(u"kept %1, %2 points over the sweep's"_s.arg(QString::fromStdString(advised->choice))
                       .arg(advised->delta_pct - measured->delta_pct)));
}

QTEST_APPLESS_MAIN(TestStepTime)
#include "tst_step_time.moc"

// With FP8 GEMM rates in the record (recompute-bench --calibrate measures them where the GPU runs FP8), an
// FP8 recipe's layer linears run at them and TE's cast-transposes are added: the input's in the forward, the
// output gradient's in the backward, (dtype + 2) bytes an element each; the products' FLOPs are the same.
void TestStepTime::fp8RatesTimeTheLinears()
{
    Recipe r;
    r.num_layers = 2;
    r.hidden_size = 4096;
    r.num_attention_heads = 32;
    r.ffn_hidden_size = 14336;
    r.seq_length = 4096;
    r.micro_batch_size = 1;
    r.global_batch_size = 1;
    r.bf16 = true;
    r.add_bias_linear = false;
    r.transformer_impl = "transformer_engine";
    Recipe fp8 = r;
    fp8.fp8 = "hybrid";
    fp8.fp8_recipe = "tensorwise";
    CalibrationRates rated = h100();
    rated.fp8_matmul = rated.matmul;
    for (GemmRate& g : rated.fp8_matmul)
        g.tflops *= 2;
    const auto mlp = [](const Recipe& job, const CalibrationRates& c, const char* phase) {
        const StepTimeEstimate e = estimateStepTime(validate(job, InputFormat::Json).resolved, c);
        return std::make_pair(termOf(e, phase, "mlp"), e.assumptions);
    };
    const auto [plain, plain_notes] = mlp(fp8, h100(), "forward");
    const auto [timed, timed_notes] = mlp(fp8, rated, "forward");
    const auto [bf16, bf16_notes] = mlp(r, rated, "forward");
    QCOMPARE(plain.ms, bf16.ms); // no FP8 rate: the bf16 job's time
    QCOMPARE(timed.flops, plain.flops);
    // FC1 reads [T, h] and FC2 [T, F], each cast once in the forward.
    const double T = 4096, h = 4096, F = 14336, layers = 2;
    QCOMPARE(timed.bytes - plain.bytes, layers * (T * h + T * F) * (2 + 2));
    QVERIFY2(timed.ms < plain.ms, qPrintable(u"%1 against %2 ms"_s.arg(timed.ms).arg(plain.ms)));
    const auto back = [&](const CalibrationRates& c) { return mlp(fp8, c, "backward").first; };
    // The backward: FC1's output gradient [T, 2F] (SwiGLU off here: [T, F]) and FC2's [T, h].
    QCOMPARE(back(rated).bytes - back(h100()).bytes, layers * (T * F + T * h) * (2 + 2));
    QVERIFY(std::count(timed_notes.begin(), timed_notes.end(), std::string(kFp8Timed)) == 1);
    QVERIFY(std::count(plain_notes.begin(), plain_notes.end(), std::string(kFp8NotTimed)) == 1);
    QVERIFY(std::count(bf16_notes.begin(), bf16_notes.end(), std::string(kFp8Timed)) == 0);
}

// The backward of the causal mask Megatron fills in place into a view of the scores: on the local spec's
// torch softmax path only (not the fused masked-softmax kernel, not scores first copied to fp32, not TE's
// attention), in backward only, the same for every choice.
void TestStepTime::maskOnAViewOfTheScores_data()
{
    QTest::addColumn<QString>("impl");
    QTest::addColumn<bool>("softmaxFp32");
    QTest::addColumn<bool>("fusion");
    QTest::addColumn<bool>("counted");
    QTest::newRow("local, 16-bit softmax") << u"local"_s << false << false << true;
    QTest::newRow("local, fp32 softmax") << u"local"_s << true << false << false;
    // (attention_softmax.h: Megatron's fused masked-softmax kernel is taken to run under the TE spec only.)
    QTest::newRow("local, masked_softmax_fusion on") << u"local"_s << false << true << true;
    QTest::newRow("TE spec, unfused backend") << u"transformer_engine"_s << false << false << false;
}

void TestStepTime::maskOnAViewOfTheScores()
{
    QFETCH(QString, impl);
    QFETCH(bool, softmaxFp32);
    QFETCH(bool, fusion);
    QFETCH(bool, counted);
    Recipe r = smallJob();
    r.bf16 = true;
    r.transformer_impl = impl.toStdString();
    r.attention_backend = "unfused";
    r.attention_softmax_in_fp32 = softmaxFp32;
    r.masked_softmax_fusion = fusion;
    const auto core = [](const Recipe& job, const char* phase) {
        return termOf(
            estimateStepTime(validate(job, InputFormat::Json).resolved, h100()), phase, "core_attn");
    };
    const TimeTerm fwd = core(r, "forward"), bwd = core(r, "backward");
    QCOMPARE(bwd.source.find("view of the scores") != std::string::npos, counted);
    // 11 passes of the scores' bytes (b x heads x s^2 x 2) a layer, in backward only: against the same
    // core on the TE spec's unfused backend (the same chain, no such view), the forward's bytes are equal.
    Recipe te = r;
    te.transformer_impl = "transformer_engine";
    te.masked_softmax_fusion = false;
    const double view_bytes = 2.0 * 11 * 8 * 2048 * 2048 * 2; // layers x passes x heads x s^2 x bf16
    QCOMPARE(fwd.bytes, core(te, "forward").bytes);
    QCOMPARE(bwd.bytes - core(te, "backward").bytes, counted ? view_bytes : 0.0);
}

// An FP8 recipe's prediction says what it is not (no FP8 rate in a record): in the estimate's assumptions and
// the plan's notes; a bf16 recipe's says nothing of FP8.
void TestStepTime::fp8SaysItIsNotTimed()
{
    Recipe r = smallJob();
    r.bf16 = true;
    r.transformer_impl = "transformer_engine";
    Recipe fp8 = r;
    fp8.fp8 = "hybrid";
    fp8.fp8_recipe = "tensorwise";
    const auto says = [](const std::vector<std::string>& lines) {
        return std::count(lines.begin(), lines.end(), std::string(kFp8NotTimed));
    };
    const Recipe a = validate(r, InputFormat::Json).resolved, b = validate(fp8, InputFormat::Json).resolved;
    QCOMPARE(says(estimateStepTime(a, h100()).assumptions), 0);
    QCOMPARE(says(estimateStepTime(b, h100()).assumptions), 1);
    QCOMPARE(says(planRecompute(a, InputFormat::Json, h100(), 80.0, kEstimateErrorFraction).notes), 0);
    QCOMPARE(says(planRecompute(b, InputFormat::Json, h100(), 80.0, kEstimateErrorFraction).notes), 1);
}

// Bridge's LoRA: a frozen linear's backward is its input's gradient alone (one product, not two), and each
// adapted linear adds linear_in [T, h] x [h, dim] and linear_out [T, dim] x [dim, out], trained (their
// backward two products each). Only the adapters' gradients are accumulated.
void TestStepTime::loraSkipsFrozenWeightGradients()
{
    Recipe r;
    r.num_layers = 2;
    r.hidden_size = 1024;
    r.num_attention_heads = 8;
    r.ffn_hidden_size = 4096;
    r.seq_length = 2048;
    r.micro_batch_size = 1;
    r.global_batch_size = 1;
    r.bf16 = true;
    const auto terms = [](const Recipe& job) {
        std::map<std::string, TimeTerm> by;
        const StepTimeEstimate e = estimateStepTime(validate(job, InputFormat::Json).resolved, h100());
        for (const TimeTerm& t : e.ranks.at(0).terms)
            by[t.phase + "/" + t.name] = t;
        return by;
    };
    Recipe lora = r;
    lora.peft = "lora";
    lora.peft_dim = 16;
    lora.peft_target_modules = { "linear_qkv" };
    const auto full = terms(r), peft = terms(lora);
    const double T = 2048, h = 1024, F = 4096, layers = 2;
    // The MLP's two products (no elementwise flops): 2 x backward in the full job, 1 x frozen.
    const double mlp = layers * (2 * T * F * h + 2 * T * h * F);
    QCOMPARE(full.at("forward/mlp").flops, mlp);
    QCOMPARE(full.at("backward/mlp").flops, 2 * mlp);
    QCOMPARE(peft.at("backward/mlp").flops, mlp);
    // Attention's projections: QKV (h -> 3h) and proj (h -> h) frozen; QKV's adapter h -> 16 -> 3h trained.
    const double proj = layers * (2 * T * 3 * h * h + 2 * T * h * h);
    const double adapter = layers * (2 * T * 16 * h + 2 * T * 3 * h * 16);
    QCOMPARE(peft.at("forward/attention_projections").flops, proj + adapter);
    QCOMPARE(peft.at("backward/attention_projections").flops, proj + 2 * adapter);
    // main_grad accumulation (gradient_accumulation_fusion off) over the adapters alone, one micro-batch: the
    // bf16 buffer read and written and the bf16 gradient read, 6 bytes an adapter element.
    QVERIFY(!r.gradient_accumulation_fusion);
    QCOMPARE(peft.at("backward/main_grad accumulation").bytes, layers * 16 * (h + 3 * h) * 6);
}
