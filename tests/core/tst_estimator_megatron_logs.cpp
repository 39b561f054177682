// SPDX-License-Identifier: Apache-2.0
// The estimator (Layout::Megatron) against real Megatron-LM runs on one H200: every log under
// tests/fixtures/logs/megatron-lm-h200/ (its first line is its command line) is read back into a recipe
// from its own flags, and the estimate is held to ±5 % of the log's largest `max allocated`.
//
// Until the Megatron-LM flag reader fills the job fields of recipe.h with Megatron-LM's own defaults
// (helper `paste`), applyMegatronLmDefaults() does it here from the same command line, and flags the reader
// does not know yet (logging, fusions) are dropped. A log without a memory line (a run that failed before
// its first report) must be a recipe the rules refuse.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QtTest>

#include "core/estimator.h"
#include "core/gpus.h"
#include "core/model_shape.h"
#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "core/rules.h"

using namespace rs;

namespace {

constexpr double kTolerance = 0.05;
const QString kLogs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200");
// Logs whose first line is the whole command (environment, script, flags), read as the product reads it.
const QStringList kCommandLogs = { QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-te-ranks"),
    QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-hybrid"),
    QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-fp8"),
    QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-fp8/cuda-graphs"),
    QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-peft-mtp/h100"),
    // The measured sweep of the dense local-spec job and the allocator histories (H100, 2026-12-07).
    QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/a"),
    QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/b"),
    QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/snapshot"),
    QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h100-2026-12-07-dlocal/llocal"),
    QStringLiteral(RS_SOURCE_DIR "/bench/gpu/results/h200-2026-12-07-dlocal") };

bool has(const std::vector<std::string>& args, const char* flag)
{
    return std::find(args.begin(), args.end(), flag) != args.end();
}

std::optional<std::string> value(const std::vector<std::string>& args, const char* flag)
{
    const auto it = std::find(args.begin(), args.end(), flag);
    if (it == args.end() || it + 1 == args.end())
        return std::nullopt;
    return *(it + 1);
}

// Megatron-LM's argument defaults (megatron/training/arguments.py) for the job fields of recipe.h.
void applyMegatronLmDefaults(Recipe& r, const std::vector<std::string>& args)
{
    r.attention_softmax_in_fp32 = has(args, "--attention-softmax-in-fp32");
    r.add_bias_linear = !has(args, "--disable-bias-linear");
    r.add_qkv_bias = has(args, "--add-qkv-bias");
    r.position_embedding_type = value(args, "--position-embedding-type").value_or("learned_absolute");
    if (const auto v = value(args, "--max-position-embeddings"))
        r.max_position_embeddings = std::stoi(*v);
    r.untie_embeddings_and_output_weights = has(args, "--untie-embeddings-and-output-weights");
    r.use_distributed_optimizer = has(args, "--use-distributed-optimizer");
    r.grad_reduce_in_fp32 = r.bf16 && !has(args, "--grad-reduce-in-bf16");
    if (!value(args, "--attention-dropout"))
        r.attention_dropout = 0.1;
    if (!value(args, "--hidden-dropout"))
        r.hidden_dropout = 0.1;
    r.transformer_impl = value(args, "--transformer-impl").value_or("transformer_engine");
    r.data_parallel_size = 1; // one GPU
}

struct LogCase {
    std::vector<std::string> args;
    double max_allocated = 0; // bytes
};

LogCase readLog(const QString& path)
{
    QFile f(path);
    LogCase c;
    if (!f.open(QIODevice::ReadOnly))
        return c;
    const QString text = QString::fromUtf8(f.readAll());
    const QString first = text.section(QLatin1Char('\n'), 0, 0);
    const QString tail = first.section(QStringLiteral("pretrain_gpt.py"), 1);
    for (const auto& a : tail.split(QLatin1Char(' '), Qt::SkipEmptyParts))
        c.args.push_back(a.toStdString());
    static const QRegularExpression re(QStringLiteral("max allocated: ([0-9.]+)"));
    auto it = re.globalMatch(text);
    while (it.hasNext())
        c.max_allocated = std::max(c.max_allocated, it.next().captured(1).toDouble() * 1024 * 1024);
    return c;
}

// Reads the flags, dropping the ones the reader does not know (and their value).
Recipe recipeFromFlags(std::vector<std::string> args, QStringList* dropped)
{
    static const QRegularExpression unknown(QStringLiteral("flag (--[\\w-]+): .*unknown Megatron-LM flag"));
    for (int attempt = 0; attempt < 64; ++attempt) {
        std::vector<std::string> in { "--mlm-args" };
        in.insert(in.end(), args.begin(), args.end());
        try {
            return readRecipeInput(in, nullptr).recipe;
        } catch (const std::exception& e) {
            const auto m = unknown.match(QString::fromUtf8(e.what()));
            if (!m.hasMatch())
                throw;
            const auto flag = m.captured(1).toStdString();
            auto it = std::find(args.begin(), args.end(), flag);
            if (it == args.end())
                throw;
            const bool with_value = it + 1 != args.end() && (it + 1)->rfind("--", 0) != 0;
            *dropped << QString::fromStdString(flag);
            args.erase(it, it + (with_value ? 2 : 1));
        }
    }
    throw std::runtime_error("too many unknown flags");
}

const QString kFp8Logs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-fp8");

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The GPU the log's second line names ("...; GPU: NVIDIA H100 80GB HBM3, 81559 MiB, ..."), an environment
// fact the command does not carry, as the recipe's gpu_compute_capability; false when it names none gpus.h
// knows.
bool applyLogGpu(Recipe& r, const QString& text)
{
    static const QRegularExpression gpu(QStringLiteral("GPU: ([^,]+)"));
    const auto m = gpu.match(text.section(QLatin1Char('\n'), 1, 1));
    const auto named = m.hasMatch() ? gpuNamedIn(m.captured(1).toStdString()) : std::nullopt;
    if (named)
        r.gpu_compute_capability = named->compute_capability;
    return named.has_value();
}

// A command log (first line: the whole command) read as the product reads a pasted command, under the profile
// the log names (main), with the Transformer Engine version and the GPU its second line records as the
// recipe's te_version and gpu_compute_capability (the environment's facts, which the command does not carry).
Recipe recipeOfCommandLog(const QString& text)
{
    std::vector<std::string> in { "--profile", "main", "--mlm-args" };
    for (const auto& w : text.section(QLatin1Char('\n'), 0, 0)
                             .remove(QStringLiteral("# command: "))
                             .split(QLatin1Char(' '), Qt::SkipEmptyParts))
        in.push_back(w.toStdString());
    Recipe r = readRecipeInput(in, nullptr).recipe;
    static const QRegularExpression te(QStringLiteral("; TE ([0-9][0-9.]*);"));
    const auto m = te.match(text.section(QLatin1Char('\n'), 1, 1));
    if (m.hasMatch())
        r.te_version = m.captured(1).toStdString();
    applyLogGpu(r, text);
    return r;
}

// bench/gpu/megatron_lm/pretrain_gpt_lora.py's environment (LORA_TARGETS, LORA_DIM, LORA_ALPHA; its defaults
// Bridge's LoRA's): Bridge's LoRA on the job, which a Megatron-LM command line has no flag for. Returns
// whether the command ran it.
bool applyLoraOfCommand(Recipe& r, const QString& text)
{
    const QString command = text.section(QLatin1Char('\n'), 0, 0);
    if (!command.contains(QStringLiteral("pretrain_gpt_lora.py")))
        return false;
    r.peft = "lora";
    r.peft_alpha = 32;
    for (const auto& w : command.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (w.startsWith(QStringLiteral("LORA_TARGETS="))) {
            r.peft_target_modules.clear();
            for (const auto& t : w.mid(13).split(QLatin1Char(','), Qt::SkipEmptyParts))
                r.peft_target_modules.push_back(t.toStdString());
        } else if (w.startsWith(QStringLiteral("LORA_DIM="))) {
            r.peft_dim = w.mid(9).toInt();
        } else if (w.startsWith(QStringLiteral("LORA_ALPHA="))) {
            r.peft_alpha = w.mid(11).toInt();
        }
    }
    return true;
}

const Finding* findingOf(const Validation& v, const std::string& id)
{
    for (const auto& f : v.findings)
        if (f.rule_id == id)
            return &f;
    return nullptr;
}

} // namespace

class TestEstimatorMegatronLogs : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void withinFivePercent_data();
    void withinFivePercent();
    void oneRankOfALayoutWithinFivePercent_data();
    void oneRankOfALayoutWithinFivePercent();
    void fp8RulesAsTheRunsSaid_data();
    void fp8RulesAsTheRunsSaid();
    void layernormIsANoOpUnderTeFp8();
    void localCudaGraphsPoolLeavesTheCounter();
};

void TestEstimatorMegatronLogs::withinFivePercent_data()
{
    QTest::addColumn<QString>("log");
    const QDir dir(kLogs);
    const auto files = dir.entryList({ QStringLiteral("*.log") }, QDir::Files, QDir::Name);
    if (files.isEmpty())
        QSKIP("no Megatron-LM logs under tests/fixtures/logs/megatron-lm-h200 yet");
    for (const auto& f : files)
        QTest::newRow(qPrintable(f)) << dir.filePath(f);
}

void TestEstimatorMegatronLogs::withinFivePercent()
{
    QFETCH(QString, log);
    const LogCase c = readLog(log);
    QVERIFY2(!c.args.empty(), "the log's first line names no pretrain_gpt.py command");
    QStringList dropped;
    Recipe r = recipeFromFlags(c.args, &dropped);
    applyMegatronLmDefaults(r, c.args);
    if (c.max_allocated <= 0) {
        // A run that failed before its first report (the fixtures' README says how): the rules must refuse
        // it (dense-mlp.log: RT30, mlp recompute with linear biases).
        const Validation v = validate(r, InputFormat::MegatronFlags);
        QVERIFY2(v.hasErrors(), "a run that printed no memory line, which no rule refuses");
        return;
    }
    QVERIFY2(applyLogGpu(r, readText(log)), "the log's second line names no GPU that core/gpus.h knows");
    const Recipe resolved = validate(r, InputFormat::MegatronFlags).resolved;
    const MemoryEstimate e = estimateMemory(resolved, Layout::Megatron);
    // `max allocated` is what the estimate's max_allocated_bytes names (its peak less a local CUDA graph
    // pool).
    const double error = (static_cast<double>(e.max_allocated_bytes) - c.max_allocated) / c.max_allocated;
    const auto& hot = e.ranks[static_cast<size_t>(e.hottest)];
    const QString detail
        = QStringLiteral("%1 %2: estimate %3 GB (%4), measured %5 GB: %6% (dropped flags: %7)")
              .arg(QFileInfo(log).fileName(), QString::fromStdString(e.choice))
              .arg(static_cast<double>(e.max_allocated_bytes) / 1e9, 0, 'f', 3)
              .arg(QString::fromStdString(hot.peak_phase))
              .arg(c.max_allocated / 1e9, 0, 'f', 3)
              .arg(100 * error, 0, 'f', 1)
              .arg(dropped.join(QLatin1Char(' ')));
    qInfo("%s", qPrintable(detail));
    QVERIFY2(std::abs(error) <= kTolerance, qPrintable(detail));
}

// One rank of a layout under --fake-process-group, --fp16 (megatron-lm-te-ranks/README.md), and hybrid
// Mamba / attention / MoE stacks (megatron-lm-hybrid/README.md): the log's
// first line, environment and all, read as the product reads a pasted command (WORLD_SIZE gives DP, no
// defaults patched in), and the estimate of that rank's pipeline stage held to ±5 % of its `max allocated`.
void TestEstimatorMegatronLogs::oneRankOfALayoutWithinFivePercent_data()
{
    QTest::addColumn<QString>("log");
    int logs = 0;
    for (const QString& folder : kCommandLogs) {
        const QDir dir(folder);
        for (const auto& f : dir.entryList({ QStringLiteral("*.log") }, QDir::Files, QDir::Name)) {
            QTest::newRow(qPrintable(dir.dirName() + u'/' + f)) << dir.filePath(f);
            ++logs;
        }
    }
    QVERIFY(logs >= 93);
}

void TestEstimatorMegatronLogs::oneRankOfALayoutWithinFivePercent()
{
    QFETCH(QString, log);
    QFile f(log);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(f.readAll());
    std::vector<std::string> in { "--profile", "main", "--mlm-args" };
    int rank = 0;
    for (const auto& w : text.section(QLatin1Char('\n'), 0, 0)
                             .remove(QStringLiteral("# command: "))
                             .split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (w.startsWith(QStringLiteral("RANK=")))
            rank = w.mid(5).toInt();
        in.push_back(w.toStdString());
    }
    static const QRegularExpression re(QStringLiteral("max allocated: ([0-9.]+)"));
    double measured = 0;
    for (auto it = re.globalMatch(text); it.hasNext();)
        measured = std::max(measured, it.next().captured(1).toDouble() * 1024 * 1024);
    Recipe r = readRecipeInput(in, nullptr).recipe;
    if (measured <= 0) {
        // A run that never reported (RT30's: mlp recompute with linear biases) is one the rules refuse.
        QVERIFY2(
            validate(r, InputFormat::MegatronFlags).hasErrors(), "no memory line, and no rule refuses it");
        return;
    }
    QVERIFY2(applyLogGpu(r, text), "the log's second line names no GPU that core/gpus.h knows");
    if (applyLoraOfCommand(r, text)) {
        // The run's own count of what it trains ("> LoRA [...] dim D: N of M parameters trained") is the
        // adapters the estimate builds, exactly.
        static const QRegularExpression lora(
            QStringLiteral("> LoRA .* dim [0-9]+: ([0-9]+) of ([0-9]+) parameters trained"));
        const auto m = lora.match(text);
        QVERIFY2(m.hasMatch(), "a LoRA run that printed no count of its trained parameters");
        const MemoryEstimate e
            = estimateMemory(validate(r, InputFormat::MegatronFlags).resolved, Layout::Megatron);
        QCOMPARE(e.ranks.front().trained_parameters, m.captured(1).toDouble());
        QCOMPARE(e.ranks.front().parameters, m.captured(2).toDouble());
    }
    const Recipe resolved = validate(r, InputFormat::MegatronFlags).resolved;
    const MemoryEstimate e = estimateMemory(resolved, Layout::Megatron);
    const int stage = stageOfRank(parallelSizes(resolved), rank);
    const auto at = std::find_if(
        e.ranks.begin(), e.ranks.end(), [&](const RankEstimate& r) { return r.stage == stage; });
    QVERIFY(at != e.ranks.end());
    const double error = (static_cast<double>(at->max_allocated_bytes) - measured) / measured;
    const QString detail
        = QStringLiteral("%1 (rank %2, stage %3, DP %4): estimate %5 GB, measured %6 GB: %7%")
              .arg(QFileInfo(log).fileName())
              .arg(rank)
              .arg(stage)
              .arg(resolved.data_parallel_size)
              .arg(static_cast<double>(at->max_allocated_bytes) / 1e9, 0, 'f', 3)
              .arg(measured / 1e9, 0, 'f', 3)
              .arg(100 * error, 0, 'f', 1);
    qInfo("%s", qPrintable(detail));
    QVERIFY2(std::abs(error) <= kTolerance, qPrintable(detail));
}

// What the FP8 runs said about the rules, read back from their logs: Megatron's own refusal of delayed
// scaling with moe_act is R17 word for word; delayed scaling with TE 2.17.1 failing at the first forward is
// RT22, whose message carries the log's TypeError; the runs that ran fire neither (the shimmed delayed
// runs do fire RT22: they ran only because the shim dropped those arguments, their third line says so).
void TestEstimatorMegatronLogs::fp8RulesAsTheRunsSaid_data()
{
    QTest::addColumn<QString>("log");
    QTest::addColumn<QString>("rule");
    QTest::addColumn<bool>("fires");
    QTest::addColumn<QString>("logLine"); // the log's own words the finding's message carries
    QTest::newRow("R17 delayed moe_act") << QStringLiteral("refused/fp8-moe-delayed-moe_act.log")
                                         << QStringLiteral("R17") << true << QStringLiteral("ValueError: ");
    QTest::newRow("R17 tensorwise moe_act")
        << QStringLiteral("fp8-moe-tensorwise-moe_act.log") << QStringLiteral("R17") << false << QString();
    QTest::newRow("R17 tensorwise layernorm,moe_act")
        << QStringLiteral("fp8-moe-tensorwise-layernorm-moe_act.log") << QStringLiteral("R17") << false
        << QString();
    QTest::newRow("RT22 unshimmed") << QStringLiteral("refused/fp8-dense-delayed-none-unshimmed.log")
                                    << QStringLiteral("RT22") << true << QStringLiteral("TypeError: ");
    QTest::newRow("RT22 shimmed") << QStringLiteral("fp8-dense-delayed-mlp.log") << QStringLiteral("RT22")
                                  << true << QString();
    QTest::newRow("RT22 tensorwise") << QStringLiteral("fp8-dense-tensorwise-none.log")
                                     << QStringLiteral("RT22") << false << QString();
    QTest::newRow("RT22 moe tensorwise")
        << QStringLiteral("fp8-moe-tensorwise-none.log") << QStringLiteral("RT22") << false << QString();
}

void TestEstimatorMegatronLogs::fp8RulesAsTheRunsSaid()
{
    QFETCH(QString, log);
    QFETCH(QString, rule);
    QFETCH(bool, fires);
    QFETCH(QString, logLine);
    const QString text = readText(kFp8Logs + u'/' + log);
    QVERIFY2(!text.isEmpty(), qPrintable(log));
    const Recipe r = recipeOfCommandLog(text);
    QCOMPARE(r.te_version.value_or(""), std::string("2.17.1"));
    const Validation v = validate(r, InputFormat::MegatronFlags);
    const Finding* f = findingOf(v, rule.toStdString());
    QCOMPARE(f != nullptr, fires);
    if (!f)
        return;
    QCOMPARE(f->severity, Severity::Error);
    if (!logLine.isEmpty()) {
        // The log's line that starts with logLine, its text after it, is in the finding's message.
        const QRegularExpression line(QStringLiteral("^(?:\\[rank0\\]: )?")
                + QRegularExpression::escape(logLine) + QStringLiteral("(.+)$"),
            QRegularExpression::MultilineOption);
        const auto m = line.match(text);
        QVERIFY2(m.hasMatch(), qPrintable(log + u": no line starting " + logLine));
        QVERIFY2(QString::fromStdString(f->message).contains(m.captured(1).trimmed()),
            qPrintable(QString::fromStdString(f->message) + u" does not carry: "_qs + m.captured(1)));
    }
}

// RT1: with the TE layer spec the norms are fused into linear_qkv / linear_fc1, so 'layernorm' changes
// nothing: the real runs' peaks are the same to the MiB, the rule says so, and the estimate agrees.
void TestEstimatorMegatronLogs::layernormIsANoOpUnderTeFp8()
{
    const QString none = readText(kFp8Logs + u"/fp8-dense-tensorwise-none.log"_qs);
    const QString layernorm = readText(kFp8Logs + u"/fp8-dense-tensorwise-layernorm.log"_qs);
    QVERIFY(!none.isEmpty() && !layernorm.isEmpty());
    static const QRegularExpression re(QStringLiteral("max allocated: ([0-9.]+)"));
    const auto peak = [](const QString& text) {
        double m = 0;
        for (auto it = re.globalMatch(text); it.hasNext();)
            m = std::max(m, it.next().captured(1).toDouble());
        return m;
    };
    QVERIFY(peak(none) > 0);
    QCOMPARE(peak(layernorm), peak(none));
    const Validation v = validate(recipeOfCommandLog(layernorm), InputFormat::MegatronFlags);
    const Finding* rt1 = findingOf(v, "RT1");
    QVERIFY2(rt1 && rt1->severity == Severity::Warning, "RT1 does not fire on the layernorm run");
    QVERIFY(!findingOf(validate(recipeOfCommandLog(none), InputFormat::MegatronFlags), "RT1"));
    const auto estimate = [](const QString& text) {
        return estimateMemory(
            validate(recipeOfCommandLog(text), InputFormat::MegatronFlags).resolved, Layout::Megatron)
            .peak_bytes;
    };
    QCOMPARE(estimate(layernorm), estimate(none));
}

// Local CUDA graphs (cuda_graph_impl local): the same stack as fp8-dense-bf16-none, its layers captured. The
// layers' tensors move into the graphs' private pool, which `max allocated` no longer sees: the estimate's
// pool holds at least what left the counter (the eager run's max allocated less the graphed run's), and the
// footprint it gives (max allocated plus the pool) lies within what the allocator reserved. The capture's
// own progress report (cuda_graphs.py _create_cudagraphs: allocated and reserved GiB, one decimal, before
// each graph) bounds the pool: at least what the captures held allocated at once above the start, at most
// what was reserved at the end above the allocated at the start (the cache's partly used segments in it).
void TestEstimatorMegatronLogs::localCudaGraphsPoolLeavesTheCounter()
{
    const QString eager = readText(kFp8Logs + u"/fp8-dense-bf16-none.log"_qs);
    const QString graphed = readText(kFp8Logs + u"/cuda-graphs/cg-dense-local-none.log"_qs);
    QVERIFY(!eager.isEmpty() && !graphed.isEmpty());
    const auto largest = [](const QString& text, const char* what) {
        const QRegularExpression re(QStringLiteral("%1: ([0-9.]+)").arg(QLatin1String(what)));
        double m = 0;
        for (auto it = re.globalMatch(text); it.hasNext();)
            m = std::max(m, it.next().captured(1).toDouble() * 1024 * 1024);
        return m;
    };
    const double left_counter = largest(eager, "max allocated") - largest(graphed, "max allocated");
    QVERIFY(left_counter > 0);
    const Recipe r = validate(recipeOfCommandLog(graphed), InputFormat::MegatronFlags).resolved;
    QCOMPARE(r.cuda_graph_impl, std::string("local"));
    const MemoryEstimate e = estimateMemory(r, Layout::Megatron);
    const RankEstimate& rank = e.ranks.at(static_cast<size_t>(e.hottest));
    const double pool = static_cast<double>(rank.peak().graph_pool_bytes);
    const QString detail
        = QStringLiteral("pool %1 GB, left the counter %2 GB: %3%; footprint %4 GB, max reserved %5 GB")
              .arg(pool / 1e9, 0, 'f', 3)
              .arg(left_counter / 1e9, 0, 'f', 3)
              .arg(100 * (pool - left_counter) / left_counter, 0, 'f', 1)
              .arg(static_cast<double>(e.peak_bytes) / 1e9, 0, 'f', 3)
              .arg(largest(graphed, "max reserved") / 1e9, 0, 'f', 3);
    qInfo("%s", qPrintable(detail));
    QVERIFY2(pool >= left_counter, qPrintable(detail));
    static const QRegularExpression sample(QStringLiteral("mem: alloc ([0-9.]+) gb, res ([0-9.]+) gb"));
    std::vector<std::pair<double, double>> samples; // GiB
    for (auto it = sample.globalMatch(graphed); it.hasNext();) {
        const auto m = it.next();
        samples.emplace_back(m.captured(1).toDouble(), m.captured(2).toDouble());
    }
    QVERIFY(samples.size() >= 2);
    double most = 0;
    for (const auto& [alloc, res] : samples)
        most = std::max(most, alloc);
    const double gib = 1024.0 * 1024 * 1024, half = 0.05; // the report's rounding
    const double lower = (most - half - (samples.front().first + half)) * gib;
    const double upper = (samples.back().second + half - (samples.front().first - half)) * gib;
    QVERIFY2(lower > 0 && pool >= lower && pool <= upper,
        qPrintable(detail
            + QStringLiteral("; the capture's report: %1 to %2 GB")
                  .arg(lower / 1e9, 0, 'f', 3)
                  .arg(upper / 1e9, 0, 'f', 3)));
    qInfo("the capture's report bounds the pool to %.3f-%.3f GB", lower / 1e9, upper / 1e9);
    QCOMPARE(e.peak_bytes - e.max_allocated_bytes, rank.peak().graph_pool_bytes);
    QVERIFY2(static_cast<double>(e.peak_bytes) <= largest(graphed, "max reserved"), qPrintable(detail));
    // Without graphs nothing is in a pool.
    const MemoryEstimate plain = estimateMemory(
        validate(recipeOfCommandLog(eager), InputFormat::MegatronFlags).resolved, Layout::Megatron);
    QCOMPARE(plain.max_allocated_bytes, plain.peak_bytes);
}

QTEST_GUILESS_MAIN(TestEstimatorMegatronLogs)
#include "tst_estimator_megatron_logs.moc"
