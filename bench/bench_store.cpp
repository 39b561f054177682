// SPDX-License-Identifier: Apache-2.0
// Benchmark of the measurement store on a real SQLite file (WAL, synchronous=NORMAL, as the product opens
// it): ingest rate of iteration rows through RunIngest, as typed events (core/stream.h: what the launcher
// decodes and `recompute run` stores) under the live commit policy and under batching, and as JSON lines (a
// saved stream); and the report time over 10,000 stored runs (buildReport + formatReport, as `recompute
// report` does). Prints a Markdown table for docs/benchmarks.md.
//   bench_store [--rows N] [--runs N] [--repeat N] [--dir DIR]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSysInfo>
#include <QTemporaryDir>

#include "core/stream.h"
#include "storage/ingest.h"
#include "storage/report.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {

QJsonObject recipe(const QJsonValue& modules, int variant)
{
    return QJsonObject { { u"name"_s, u"bench-%1"_s.arg(variant) }, { u"num_layers"_s, 32 },
        { u"hidden_size"_s, 4096 }, { u"ffn_hidden_size"_s, 14336 }, { u"num_attention_heads"_s, 32 },
        { u"num_query_groups"_s, 8 }, { u"seq_length"_s, 4096 + 1024 * (variant % 4) },
        { u"micro_batch_size"_s, 1 }, { u"global_batch_size"_s, 8 }, { u"bf16"_s, true },
        { u"attention_backend"_s, u"fused"_s }, { u"tensor_model_parallel_size"_s, 1 + variant % 2 },
        { u"pipeline_model_parallel_size"_s, 1 }, { u"context_parallel_size"_s, 1 },
        { u"expert_model_parallel_size"_s, 1 }, { u"sequence_parallel"_s, false },
        { u"recompute_granularity"_s, u"selective"_s }, { u"recompute_modules"_s, modules },
        { u"profile"_s, u"bridge-pin"_s }, { u"train_iters"_s, 20 }, { u"warmup_iters"_s, 5 } };
}

// A stream line as the launcher decodes it.
rs::stream::Event decoded(const QJsonObject& o)
{
    return rs::stream::decodeLine(QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString());
}

QJsonObject hello()
{
    return QJsonObject { { u"event"_s, u"hello"_s }, { u"worker_version"_s, u"bench"_s },
        { u"libtorch_version"_s, u"1.13.1"_s }, { u"device"_s, u"cpu"_s }, { u"device_kind"_s, u"cpu"_s },
        { u"host"_s, u"bench"_s }, { u"world_size"_s, 1 }, { u"profile"_s, u"bridge-pin"_s } };
}

// The iteration events, every stream key filled. Written as QJsonObjects (compact text: the lines), as
// the bench always has, so the JSON-lines figures compare across commits.
std::vector<QJsonObject> iterationEvents(int rows)
{
    std::vector<QJsonObject> events;
    events.reserve(size_t(rows));
    for (int i = 0; i < rows; ++i) {
        const double base = 30e9 + i;
        events.push_back(QJsonObject { { u"event"_s, u"iteration"_s }, { u"rank"_s, i % 8 },
            { u"iteration"_s, i / 8 + 1 }, { u"phase"_s, u"steady"_s }, { u"step_ms"_s, 450.0 + (i % 13) },
            { u"loss"_s, 9.5 - i * 1e-6 }, { u"loss_finite"_s, true }, { u"forward_peak_allocated"_s, base },
            { u"forward_peak_reserved"_s, base + 2e9 }, { u"backward_peak_allocated"_s, base + 1e9 },
            { u"backward_peak_reserved"_s, base + 2e9 }, { u"optimizer_peak_allocated"_s, base + 5e8 },
            { u"optimizer_peak_reserved"_s, base + 2e9 }, { u"allocated_after"_s, base - 1e9 },
            { u"reserved_after"_s, base + 2e9 }, { u"alloc_retries"_s, 0 }, { u"optimizer_init"_s, i < 8 } });
    }
    return events;
}

struct IngestFigure {
    double seconds = 0;
    int rows = 0;
};

// One timed ingest of `items` into a fresh run: `feed` hands one item to the ingest (a typed event, or a
// JSON line as a saved stream holds it). The rows are read back and counted after the timer stops.
template <typename Item, typename Feed>
IngestFigure timedIngest(const QString& path, const std::vector<Item>& items, int commitRows, Feed feed)
{
    Store store;
    QString error;
    if (!store.open(path, &error)) {
        std::fprintf(stderr, "bench_store: %s\n", qPrintable(error));
        std::exit(2);
    }
    RunIngest ingest(&store);
    ingest.setCommitPolicy(commitRows, 0);
    ingest.ingest(decoded(hello()));
    ingest.ingest(
        decoded(QJsonObject { { u"event"_s, u"recipe"_s }, { u"recipe"_s, recipe(QJsonArray(), 0) } }));
    QElapsedTimer t;
    t.start();
    for (const auto& item : items) {
        if (!feed(ingest, item)) {
            std::fprintf(stderr, "bench_store: %s\n", qPrintable(ingest.error()));
            std::exit(2);
        }
    }
    ingest.finish();
    IngestFigure f;
    f.seconds = t.nsecsElapsed() / 1e9;
    f.rows = int(items.size());
    const auto stored = store.iterations(ingest.runId()).size();
    if (stored != f.rows || ingest.malformedLines() != 0) {
        std::fprintf(stderr, "bench_store: stored %lld rows (%d malformed lines), expected %d\n",
            static_cast<long long>(stored), int(ingest.malformedLines()), f.rows);
        std::exit(2);
    }
    return f;
}

IngestFigure ingestOnce(const QString& path, const std::vector<rs::stream::Event>& events, int commitRows)
{
    return timedIngest(
        path, events, commitRows, [](RunIngest& in, const rs::stream::Event& e) { return in.ingest(e); });
}

// The same events as JSON lines, as a saved stream holds them (RunIngest::ingestLine).
IngestFigure ingestLinesOnce(const QString& path, const std::vector<QByteArray>& lines, int commitRows)
{
    return timedIngest(
        path, lines, commitRows, [](RunIngest& in, const QByteArray& line) { return in.ingestLine(line); });
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    int rows = 200000, runs = 10000, repeat = 5;
    QString dirArg;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_store: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--rows")
            rows = std::stoi(next());
        else if (a == "--runs")
            runs = std::stoi(next());
        else if (a == "--repeat")
            repeat = std::max(1, std::stoi(next()));
        else if (a == "--dir")
            dirArg = QString::fromStdString(next());
        else {
            std::fprintf(stderr, "usage: bench_store [--rows N] [--runs N] [--repeat N] [--dir DIR]\n");
            return 2;
        }
    }
    QTemporaryDir tmp(
        dirArg.isEmpty() ? QDir::tempPath() + u"/bench_store-XXXXXX"_s : dirArg + u"/bench_store-XXXXXX"_s);
    if (!tmp.isValid()) {
        std::fprintf(stderr, "bench_store: cannot create a temporary folder\n");
        return 2;
    }

    // --- ingest ---
    std::vector<QByteArray> lines;
    std::vector<rs::stream::Event> events; // each line decoded, as the launcher hands it on
    lines.reserve(size_t(rows));
    events.reserve(size_t(rows));
    for (const QJsonObject& o : iterationEvents(rows)) {
        lines.push_back(QJsonDocument(o).toJson(QJsonDocument::Compact));
        events.push_back(rs::stream::decodeLine(lines.back().toStdString()));
    }
    struct Policy {
        const char* name;
        int commitRows;
        int rowsUsed;
    };
    // Live: one transaction per event (what `recompute run` does; a real step takes far longer than this).
    const Policy policies[]
        = { { "typed events (RunIngest::ingest), live: commit every row", 1, std::min(rows, 20000) },
              { "typed events (RunIngest::ingest): commit every 1,000 rows", 1000, rows },
              { "typed events (RunIngest::ingest): commit every 10,000 rows", 10000, rows } };
    std::printf(
        "| ingest policy | rows | median time (s) | rows/s (median of %d) |\n| --- | --- | --- | --- |\n",
        repeat);
    {
        // The store alone (Store::insertIteration in one transaction, no stream decoding): the ceiling.
        std::vector<double> secs;
        for (int r = 0; r < repeat; ++r) {
            Store store;
            if (!store.open(tmp.filePath(u"raw-%1.sqlite"_s.arg(r))))
                return 2;
            RunRecord run;
            run.source = source::Worker;
            const qint64 id = store.insertRun(run);
            IterationRow row;
            row.runId = id;
            row.phase = u"steady"_s;
            QElapsedTimer t;
            t.start();
            store.beginWrite();
            for (int i = 0; i < rows; ++i) {
                row.rank = i % 8;
                row.iteration = i / 8 + 1;
                row.stepMs = 450.0 + (i % 13);
                row.loss = 9.5;
                row.lossFinite = true;
                row.forwardPeakAllocated = row.forwardPeakReserved = row.backwardPeakAllocated
                    = row.backwardPeakReserved = row.optimizerPeakAllocated = row.optimizerPeakReserved
                    = row.allocatedAfter = row.reservedAfter = qint64(30e9) + i;
                row.allocRetries = 0;
                if (!store.insertIteration(row))
                    return 2;
            }
            store.commitWrite();
            secs.push_back(t.nsecsElapsed() / 1e9);
        }
        const double s = median(secs);
        std::printf("| store only: Store::insertIteration, one transaction | %d | %.3f | %.0f |\n", rows, s,
            rows / s);
    }
    int file = 0;
    for (const Policy& p : policies) {
        const std::vector<rs::stream::Event> slice(events.begin(), events.begin() + p.rowsUsed);
        std::vector<double> secs;
        for (int r = 0; r < repeat; ++r)
            secs.push_back(
                ingestOnce(tmp.filePath(u"ingest-%1.sqlite"_s.arg(file++)), slice, p.commitRows).seconds);
        const double s = median(secs);
        std::printf("| %s | %d | %.3f | %.0f |\n", p.name, p.rowsUsed, s, p.rowsUsed / s);
        std::fflush(stdout);
    }

    {
        std::vector<double> secs;
        for (int r = 0; r < repeat; ++r)
            secs.push_back(ingestLinesOnce(tmp.filePath(u"lines-%1.sqlite"_s.arg(r)), lines, 10000).seconds);
        const double s = median(secs);
        std::printf("| JSON lines (RunIngest::ingestLine): commit every 10,000 rows | %d | %.3f | %.0f |\n",
            rows, s, rows / s);
    }

    // --- report over N stored runs ---
    const QString reportDb = tmp.filePath(u"report.sqlite"_s);
    {
        Store store;
        if (!store.open(reportDb))
            return 2;
        store.beginWrite();
        const QStringList sets[] = { {}, { u"core_attn"_s }, { u"moe_act"_s },
            { u"layernorm"_s, u"moe_act"_s }, { u"mla_up_proj"_s }, { u"mlp"_s }, { u"moe"_s },
            { u"moe"_s, u"layernorm"_s }, { u"shared_experts"_s }, { u"mla_up_proj"_s, u"mlp"_s } };
        qint64 control = 0;
        for (int i = 0; i < runs; ++i) {
            const int study = i / 10;
            const QStringList& modules = sets[i % 10];
            RunRecord r;
            r.source = source::Worker;
            fillFromRecipeJson(&r, recipe(QJsonArray::fromStringList(modules), study));
            r.device = u"NVIDIA H200"_s;
            r.host = u"bench"_s;
            r.profile = u"bridge-pin"_s;
            r.outcome = outcome::Pass;
            r.peakAllocated = qint64(36e9) - (i % 10) * qint64(1e8);
            r.peakReserved = qint64(40e9);
            r.steadyStepMs = 457.0 + (i % 10) * 5;
            r.modelTflops = 77.0 - (i % 10);
            r.controlRunId = modules.isEmpty() ? std::nullopt : std::optional<qint64>(control);
            const qint64 id = store.insertRun(r);
            if (modules.isEmpty())
                control = id;
        }
        store.commitWrite();
    }
    Store store;
    if (!store.open(reportDb))
        return 2;
    std::vector<double> build, format, total;
    int tables = 0, rowsOut = 0;
    qsizetype bytes = 0;
    for (int r = 0; r < repeat; ++r) {
        QElapsedTimer t;
        t.start();
        const auto report = buildReport(store, std::nullopt, {});
        const double b = t.nsecsElapsed() / 1e6;
        const QString md = formatReport(report, ReportFormat::Markdown);
        const double all = t.nsecsElapsed() / 1e6;
        build.push_back(b);
        format.push_back(all - b);
        total.push_back(all);
        tables = int(report.size());
        rowsOut = 0;
        for (const auto& tb : report)
            rowsOut += int(tb.rows.size());
        bytes = md.size();
    }
    std::vector<double> read;
    for (int r = 0; r < repeat; ++r) {
        QElapsedTimer t;
        t.start();
        const auto all = store.listRuns();
        read.push_back(t.nsecsElapsed() / 1e6);
        if (all.size() != runs)
            return 2;
    }
    // One study's table, as `recompute report --control RUN` prints it.
    std::vector<double> one;
    for (int r = 0; r < repeat; ++r) {
        QElapsedTimer t;
        t.start();
        const auto report = buildReport(store, qint64(runs - 9), {});
        (void)formatReport(report, ReportFormat::Markdown);
        one.push_back(t.nsecsElapsed() / 1e6);
    }
    std::printf("\n| report over %d stored runs | median of %d (ms) |\n| --- | --- |\n", runs, repeat);
    std::printf("| every run, grouped by control (%d tables, %d rows, %lld characters): build | %.1f |\n",
        tables, rowsOut, static_cast<long long>(bytes), median(build));
    std::printf("| every run: of which reading the %d runs (Store::listRuns) | %.1f |\n", runs, median(read));
    std::printf("| every run: format Markdown | %.1f |\n", median(format));
    std::printf("| every run: total | %.1f |\n", median(total));
    std::printf("| one study (`--control RUN`, 10 rows): total | %.2f |\n", median(one));
    std::printf("\nmachine: %s, %s; Qt %s; SQLite file on %s\n", qPrintable(QSysInfo::prettyProductName()),
        qPrintable(QSysInfo::currentCpuArchitecture()), qVersion(),
        qPrintable(QFileInfo(reportDb).absolutePath()));
    return 0;
}
