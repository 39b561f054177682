// SPDX-License-Identifier: Apache-2.0
// The worker's stream (docs/stream.md): event order, every documented key, integers for bytes, the
// invalid / error / oom endings, and the executable's stdout/stderr split and --help.
#include <csignal>
#include <sstream>

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "core/recipe_json.h"
#include "engine/runner.h"
#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;
using nlohmann::json;

namespace {

void expectKeys(const json& j, std::initializer_list<const char*> keys)
{
    for (const char* k : keys)
        QVERIFY2(j.contains(k),
            qPrintable(
                QStringLiteral("%1 lacks '%2'").arg(QString::fromStdString(j.dump()), QLatin1String(k))));
}

QString recompBench()
{
    return QStringLiteral(RS_BINARY_DIR "/app/bench/recompute-bench");
}

} // namespace

class TestEngineStream : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void passingRunFollowsTheContract();
    void invalidRecipeEndsBeforeAnythingIsAllocated();
    void unmodelledLabelIsRefused();
    void outOfMemoryIsReportedWithItsStage();
    void executableWritesOnlyTheStreamToStdout();
    void aWorkerNobodyReadsEnds();
    void helpNamesEveryOption();
};

void TestEngineStream::passingRunFollowsTheContract()
{
    Recipe r = selective(tinyRecipe(Arch::DenseUnfused), { "core_attn" });
    engine::RunOptions options;
    options.warmup = 1;
    options.iters = 2;
    int code = -1;
    const auto lines = runStream(r, options, &code);
    QCOMPARE(code, int(engine::kPass));
    std::vector<std::string> events;
    for (const auto& j : lines)
        events.push_back(j.at("event").get<std::string>()
            + (j.contains("phase") && j.at("event") == "phase" ? ":" + j.at("phase").get<std::string>()
                                                               : std::string()));
    const std::vector<std::string> expected
        = { "hello", "recipe", "phase:build", "memory_layout", "phase:warmup", "phase:optimizer-init",
              "iteration", "phase:steady", "iteration", "iteration", "peak_attribution", "peak_attribution",
              "peak_attribution", "peak_attribution", "rank_summary", "result" };
    QCOMPARE(events, expected);

    expectKeys(lines[0],
        { "worker_version", "libtorch_version", "cuda_version", "nccl_version", "device", "device_kind",
            "host", "pid", "rank", "world_size", "local_rank", "profile", "stream_version" });
    QCOMPARE(lines[0].at("device_kind").get<std::string>(), std::string("cpu"));
    QVERIFY(lines[0].at("cuda_version").is_null());
    expectKeys(lines[1], { "recipe", "recipe_hash", "findings", "stage_scope" });
    QCOMPARE(lines[1].at("recipe_hash").get<std::string>().size(), size_t(64));
    QCOMPARE(lines[1].at("recipe_hash").get<std::string>(),
        sha256Hex(recipeCanonicalText(recipeFromJson(lines[1].at("recipe")))));

    expectKeys(lines[3],
        { "rank", "micro_batches", "data_parallel_size", "distributed_optimizer", "grad_buffer_dtype",
            "grad_buffer_bytes", "parameters", "parameter_bytes", "main_parameter_bytes", "shard_elements",
            "padded_vocab_size", "tied_embeddings", "one_pass_optimizer" });
    for (int i = 10; i < 14; ++i) {
        expectKeys(lines[i],
            { "rank", "phase", "iteration", "peak_allocated", "attributed", "categories", "activations" });
        // The categories account for the phase's peak (the CPU probe traces every allocation).
        QCOMPARE(lines[i].at("attributed").get<int64_t>(), lines[i].at("peak_allocated").get<int64_t>());
    }
    const json& first = lines[6];
    expectKeys(first,
        { "rank", "iteration", "phase", "step_ms", "forward_ms", "backward_ms", "optimizer_ms", "loss",
            "loss_finite", "forward_peak_allocated", "forward_peak_reserved", "backward_peak_allocated",
            "backward_peak_reserved", "optimizer_peak_allocated", "optimizer_peak_reserved",
            "allocated_after", "reserved_after", "alloc_retries", "optimizer_init" });
    QCOMPARE(first.at("iteration").get<int>(), 1);
    QCOMPARE(first.at("phase").get<std::string>(), std::string("warmup"));
    QVERIFY(first.at("optimizer_init").get<bool>());
    QVERIFY(!lines[8].at("optimizer_init").get<bool>());
    for (const char* k : { "forward_peak_allocated", "backward_peak_allocated", "optimizer_peak_allocated",
             "allocated_after", "reserved_after" })
        QVERIFY2(first.at(k).is_number_integer() && first.at(k).get<int64_t>() > 0, k);
    // The phases' times are parts of the step: each positive, together no more than the step.
    for (int i : { 6, 8, 9 }) {
        double phases = 0;
        for (const char* k : { "forward_ms", "backward_ms", "optimizer_ms" }) {
            QVERIFY2(lines[i].at(k).get<double>() > 0, k);
            phases += lines[i].at(k).get<double>();
        }
        QVERIFY(phases <= lines[i].at("step_ms").get<double>());
    }
    // The moments allocated at the first step stay: later steps start above the first one's forward.
    QVERIFY(lines[8].at("forward_peak_allocated").get<int64_t>()
        > first.at("forward_peak_allocated").get<int64_t>());

    const json& summary = lines[14];
    expectKeys(summary,
        { "rank", "peak_allocated", "peak_reserved", "peak_phase", "peak_iteration", "steady_step_ms",
            "steady_step_ms_median", "phase_peaks" });
    for (const char* phase : { "forward", "backward", "optimizer", "optimizer-init" })
        QVERIFY2(summary.at("phase_peaks").contains(phase), phase);
    int64_t max_peak = 0;
    for (int i : { 6, 8, 9 })
        for (const char* k :
            { "forward_peak_allocated", "backward_peak_allocated", "optimizer_peak_allocated" })
            max_peak = std::max(max_peak, lines[i].at(k).get<int64_t>());
    QCOMPARE(summary.at("peak_allocated").get<int64_t>(), max_peak);

    const json& result = lines[15];
    expectKeys(result,
        { "status", "stage", "iteration", "message", "steady_step_ms", "tokens_per_s", "model_tflops",
            "executed_tflops", "model_flops_per_step", "executed_flops_per_step" });
    QCOMPARE(result.at("status").get<std::string>(), std::string("pass"));
    QVERIFY(result.at("stage").is_null());
    // core_attn replays attention: executed FLOPs exceed 3 x the first pass.
    QVERIFY(result.at("replay_flops_per_step").get<double>() > 0);
    QVERIFY(
        result.at("executed_flops_per_step").get<double>() > result.at("model_flops_per_step").get<double>());
}

void TestEngineStream::invalidRecipeEndsBeforeAnythingIsAllocated()
{
    // R05: an unknown label is a Megatron validation error.
    Recipe r = selective(tinyRecipe(Arch::DenseUnfused), { "core_attn", "not_a_label" });
    int code = -1;
    const auto lines = runStream(r, {}, &code);
    QCOMPARE(code, int(engine::kInvalid));
    QCOMPARE(lines.size(), size_t(3));
    QCOMPARE(lines[1].at("event").get<std::string>(), std::string("recipe"));
    QVERIFY(!lines[1].at("findings").empty());
    QCOMPARE(lines[2].at("event").get<std::string>(), std::string("result"));
    QCOMPARE(lines[2].at("status").get<std::string>(), std::string("invalid"));
    QCOMPARE(lines[2].at("stage").get<std::string>(), std::string("validate"));
}

void TestEngineStream::unmodelledLabelIsRefused()
{
    // FP8 with block scales: the worker quantizes per tensor only.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.transformer_impl = "transformer_engine";
    r.fp8 = "hybrid";
    r.fp8_recipe = "blockwise";
    r.bf16 = true;
    int code = -1;
    const auto lines = runStream(r, {}, &code);
    const json& last = lines.back();
    if (last.at("status") == "invalid") // the rules may already reject this fp8 recipe
        QSKIP("the rules engine rejects this fp8 recipe before the engine sees it");
    QCOMPARE(code, int(engine::kError));
    QCOMPARE(last.at("status").get<std::string>(), std::string("error"));
    QCOMPARE(last.at("stage").get<std::string>(), std::string("build"));
    QCOMPARE(last.at("field").get<std::string>(), std::string("fp8_recipe"));
    for (const auto& j : lines)
        QVERIFY(j.at("event") != "phase");
}

void TestEngineStream::outOfMemoryIsReportedWithItsStage()
{
    // A 2^21 x 2^19 fp32 embedding is 4 TiB: more than this host holds, so the worker refuses it before it
    // allocates anything (an invalid result naming the footprint and the host's memory), never a bad_alloc.
    Recipe r = tinyRecipe(Arch::DenseUnfused);
    r.vocab_size = 1 << 21;
    r.hidden_size = 1 << 19;
    r.num_attention_heads = 1 << 10;
    r.ffn_hidden_size = 64;
    int code = -1;
    const auto lines = runStream(r, {}, &code);
    const json& last = lines.back();
    QCOMPARE(last.at("status").get<std::string>(), std::string("invalid"));
    const std::string message = last.at("message").get<std::string>();
    QVERIFY2(message.find("this host has") != std::string::npos, message.c_str());
    QVERIFY(last.at("iteration").is_null());
    QCOMPARE(code, int(engine::kInvalid));
}

void TestEngineStream::executableWritesOnlyTheStreamToStdout()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("tiny.json"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(
            recipeToJson(selective(tinyRecipe(Arch::MlaMoe), { "moe_act" })).dump()));
    }
    QProcess p;
    p.start(recompBench(),
        { path, QStringLiteral("--warmup"), QStringLiteral("1"), QStringLiteral("--iters"),
            QStringLiteral("1"), QStringLiteral("--seed"), QStringLiteral("7") });
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto lines = streamLines(p.readAllStandardOutput().toStdString());
    QCOMPARE(lines.back().at("status").get<std::string>(), std::string("pass"));
    QCOMPARE(lines.front().at("event").get<std::string>(), std::string("hello"));

    QProcess bad;
    bad.start(recompBench(), { path, QStringLiteral("--iters"), QStringLiteral("many") });
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), int(engine::kInvalid));
    QVERIFY(bad.readAllStandardOutput().isEmpty());
    QVERIFY(QString::fromUtf8(bad.readAllStandardError()).contains(QStringLiteral("--iters")));

    // Issue 30: a run length whose sum would overflow an int is refused, naming the option.
    QProcess huge;
    huge.start(recompBench(), { path, QStringLiteral("--iters"), QStringLiteral("2147483647") });
    QVERIFY(huge.waitForFinished(60000));
    QCOMPARE(huge.exitCode(), int(engine::kInvalid));
    QVERIFY(QString::fromUtf8(huge.readAllStandardError())
                .contains(QStringLiteral("--iters: 2147483647 is out of range")));

    QProcess missing;
    missing.start(recompBench(), { dir.filePath(QStringLiteral("absent.json")) });
    QVERIFY(missing.waitForFinished(60000));
    QCOMPARE(missing.exitCode(), int(engine::kInvalid));
    const auto missing_lines = streamLines(missing.readAllStandardOutput().toStdString());
    QCOMPARE(missing_lines.back().at("status").get<std::string>(), std::string("invalid"));
}

// The worker ignores SIGPIPE (a peer rank's dead socket must not end it before its result): when the reader
// of its stream goes away, the stream's failed write ends it as the signal did, instead of training on.
void TestEngineStream::aWorkerNobodyReadsEnds()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("tiny.json"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            QByteArray::fromStdString(recipeToJson(selective(tinyRecipe(Arch::DenseUnfused), {})).dump()));
    }
    // `recompute-bench … | head -n 1`: head reads the first line and ends, closing the pipe.
    QProcess p, head;
    p.setStandardOutputProcess(&head);
    head.start(QStringLiteral("head"), { QStringLiteral("-n"), QStringLiteral("1") });
    p.start(recompBench(), { path, QStringLiteral("--iters"), QStringLiteral("100000") });
    QVERIFY(head.waitForFinished(60000));
    QVERIFY(head.readAllStandardOutput().contains("\"event\":\"hello\""));
    QVERIFY2(p.waitForFinished(60000), "the worker trained on with nobody reading its stream");
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 128 + SIGPIPE);
}

void TestEngineStream::helpNamesEveryOption()
{
    QProcess p;
    p.start(recompBench(), { QStringLiteral("--help") });
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    const QString help = QString::fromUtf8(p.readAllStandardOutput());
    for (const char* option :
        { "--overrides", "--mlm-args", "--profile", "--device", "--warmup", "--iters", "--seed" })
        QVERIFY2(help.contains(QLatin1String(option)), option);
}

QTEST_GUILESS_MAIN(TestEngineStream)
#include "tst_engine_stream.moc"
