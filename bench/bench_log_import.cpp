// SPDX-License-Identifier: Apache-2.0
// Benchmark of `recompute import` on large Megatron-LM logs: a generated log (the printed arguments block,
// then one iteration line per step and the per-rank memory lines of 8 ranks after iterations 1 and 2 and
// every 100 steps, as --log-memory-interval 100 prints them) of each size asked for, parsed
// (parseTrainingLog) and imported into a fresh store on disk (importTrainingLog, as the CLI does).
// Prints a Markdown table for docs/benchmarks.md.
//   bench_log_import [--mb N ...] [--repeat N] [--dir DIR]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSysInfo>
#include <QTemporaryDir>

#include "storage/log_import.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {

QByteArray generateLog(qint64 targetBytes, int* iterations)
{
    QByteArray out;
    out.reserve(targetBytes + 4096);
    out += "------------------------ arguments ------------------------\n";
    const char* args[][2] = { { "bf16", "True" }, { "global_batch_size", "8" }, { "hidden_size", "4096" },
        { "num_attention_heads", "32" }, { "num_layers", "32" }, { "seq_length", "4096" },
        { "micro_batch_size", "1" }, { "recompute_granularity", "selective" },
        { "recompute_modules", "['core_attn']" }, { "tensor_model_parallel_size", "1" },
        { "pipeline_model_parallel_size", "1" }, { "world_size", "8" }, { "log_interval", "1" } };
    for (const auto& a : args) {
        QByteArray line = "  " + QByteArray(a[0]) + ' ';
        line += QByteArray(std::max<qsizetype>(3, 48 - qstrlen(a[0])), '.') + ' ' + a[1] + '\n';
        out += line;
    }
    out += "-------------------- end of arguments ---------------------\n";
    // Lines of one step are ~430 bytes: the total is known once the first is written.
    const qint64 perStep = 430;
    const int steps = int(std::max<qint64>(1, targetBytes / perStep));
    char buf[1024];
    for (int it = 1; it <= steps; ++it) {
        const int n = std::snprintf(buf, sizeof buf,
            " [2026-12-01 10:%02d:%02d.%06d] iteration %8d/%8d | consumed samples: %12lld | elapsed time "
            "per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: "
            "1.000000E-04 | global batch size:     8 | lm loss: %.6E | loss scale: 1.0 | grad norm: 1.234 | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |\n",
            (it / 60) % 60, it % 60, it % 1000000, it, steps, 8LL * it, 450.0 + (it % 17) * 0.1,
            380.0 + (it % 7) * 0.1, 10.0 - it * 1e-7);
        out.append(buf, n);
        if (it <= 2 || it % 100 == 0) {
            for (int r = 0; r < 8; ++r) {
                const int m = std::snprintf(buf, sizeof buf,
                    "[Rank %d] (after %d iterations) memory (MB) | allocated: %.2f | max allocated: %.2f | "
                    "reserved: %.2f | max reserved: %.2f\n",
                    r, it, 1300.5 + r, 30000.25 + r + (it <= 2 ? it : 2), 31000.0, 33000.0);
                out.append(buf, m);
            }
        }
    }
    *iterations = steps;
    return out;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    std::vector<int> sizesMb;
    int repeat = 1;
    QString dirArg;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--mb") && i + 1 < argc) {
            while (i + 1 < argc && argv[i + 1][0] != '-')
                sizesMb.push_back(std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) {
            dirArg = QString::fromLocal8Bit(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: bench_log_import [--mb N ...] [--repeat N] [--dir DIR]\n");
            return 2;
        }
    }
    if (sizesMb.empty())
        sizesMb = { 10, 100 };
    QTemporaryDir tmp(dirArg.isEmpty() ? QString() : dirArg + u"/bench_log_import-XXXXXX"_s);
    if (!tmp.isValid()) {
        std::fprintf(stderr, "bench_log_import: cannot create a temporary folder\n");
        return 2;
    }
    std::printf("Machine: %s, %s, Qt %s\n\n", qPrintable(QSysInfo::prettyProductName()),
        qPrintable(QSysInfo::currentCpuArchitecture()), qVersion());
    std::printf("| log | lines | iterations | parse (s) | import into a new store (s) | MB/s (import) |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int mb : sizesMb) {
        int steps = 0;
        const QByteArray log = generateLog(qint64(mb) * 1000 * 1000, &steps);
        const QString path = tmp.filePath(u"log-%1.log"_s.arg(mb));
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly) || f.write(log) != log.size()) {
            std::fprintf(stderr, "bench_log_import: cannot write %s\n", qPrintable(path));
            return 2;
        }
        f.close();
        double bestParse = 1e300, bestImport = 1e300;
        for (int r = 0; r < repeat; ++r) {
            QElapsedTimer t;
            t.start();
            const ParsedLog parsed = parseTrainingLog(log);
            bestParse = std::min(bestParse, t.nsecsElapsed() / 1e9);
            if (parsed.iterations.size() != steps) {
                std::fprintf(stderr, "bench_log_import: parsed %lld of %d iterations\n",
                    static_cast<long long>(parsed.iterations.size()), steps);
                return 1;
            }
            Store store;
            QString error;
            if (!store.open(tmp.filePath(u"store-%1-%2.sqlite"_s.arg(mb).arg(r)), &error)) {
                std::fprintf(stderr, "bench_log_import: %s\n", qPrintable(error));
                return 2;
            }
            t.restart();
            const ImportResult result = importTrainingLog(&store, path);
            bestImport = std::min(bestImport, t.nsecsElapsed() / 1e9);
            if (!result.error.isEmpty() || store.iterations(result.runId).size() != steps) {
                std::fprintf(stderr, "bench_log_import: %s\n", qPrintable(result.error));
                return 1;
            }
        }
        long long lines = log.count('\n');
        std::printf("| %d MB | %lld | %d | %.2f | %.2f | %.1f |\n", mb, lines, steps, bestParse, bestImport,
            double(log.size()) / 1e6 / bestImport);
        std::fflush(stdout);
    }
    return 0;
}
