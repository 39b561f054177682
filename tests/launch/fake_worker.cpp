// SPDX-License-Identifier: Apache-2.0
// A test double for the process boundary: writes a recompute-bench stream (docs/stream.md) for the recipe
// file it is given, and misbehaves on request, so the launcher and the store can be tested without the
// real worker. Options (after the recipe file):
//   --kill-after K     SIGKILL itself after K iterations (no result, no rank_summary)
//   --exit-after K     exit(3) after K iterations without a result
//   --status S         the result's status (pass, oom, ...); default pass
//   --delay-ms D       sleep D ms after each iteration
//   --garbage          a stray non-JSON line and a JSON line without "event" in the stream
//   --wrong-type K     iteration K's step_ms written as a string
//   --no-newline-end   the result line is written without its final '\n'
//   --stderr TEXT      write TEXT to stderr first
//   --peak-scale X     multiply every byte count by X (a different recompute choice)
//   --candidate-slow K MS  for a recipe that recomputes (not the [] control): iteration K takes MS ms (one
//   slow
//                      step: a mean moves where the median and the Hodges-Lehmann shift do not)
//   --refuse TEXT      refuse the recipe as the real worker does ("the recipe needs about 281 GB ...; this
//   host
//                      has 25 GB"): result invalid in stage validate, before any iteration
// $FAKE_WORKER_ARGS (space-separated) is appended to the options, for tests that start it through the CLI.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <QByteArray>
#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

static void line(const QJsonObject& o, bool newline = true)
{
    const QByteArray bytes = QJsonDocument(o).toJson(QJsonDocument::Compact);
    std::fwrite(bytes.constData(), 1, size_t(bytes.size()), stdout);
    if (newline)
        std::fputc('\n', stdout);
    std::fflush(stdout);
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: fake_worker RECIPE.json [options]\n");
        return 2;
    }
    int killAfter = -1, exitAfter = -1, delayMs = 0, wrongType = -1;
    double peakScale = 1.0;
    bool garbage = false, noNewlineEnd = false;
    QString status = QStringLiteral("pass");
    std::string refusal;
    int slowIteration = -1;
    double slowMs = 0;
    std::vector<std::string> opts(argv + 2, argv + argc);
    if (const char* extra = std::getenv("FAKE_WORKER_ARGS")) {
        std::istringstream in(extra);
        for (std::string word; in >> word;)
            opts.push_back(word);
    }
    const int n = int(opts.size());
    for (int i = 0; i < n; ++i) {
        const std::string a = opts[size_t(i)];
        auto next = [&] { return i + 1 < n ? opts[size_t(++i)] : std::string(); };
        if (a == "--kill-after")
            killAfter = std::stoi(next());
        else if (a == "--exit-after")
            exitAfter = std::stoi(next());
        else if (a == "--status")
            status = QString::fromStdString(next());
        else if (a == "--delay-ms")
            delayMs = std::stoi(next());
        else if (a == "--wrong-type")
            wrongType = std::stoi(next());
        else if (a == "--garbage")
            garbage = true;
        else if (a == "--no-newline-end")
            noNewlineEnd = true;
        else if (a == "--stderr")
            std::fprintf(stderr, "%s\n", next().c_str());
        else if (a == "--peak-scale")
            peakScale = std::stod(next());
        else if (a == "--refuse")
            refusal = next();
        else if (a == "--candidate-slow") {
            slowIteration = std::stoi(next());
            slowMs = std::stod(next());
        }
    }
    QFile file(QString::fromLocal8Bit(argv[1]));
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "fake_worker: cannot read %s\n", argv[1]);
        return 2;
    }
    const QByteArray text = file.readAll();
    const QJsonObject recipe = QJsonDocument::fromJson(text).object();
    const int iters = recipe.value(QStringLiteral("train_iters")).toInt(6);
    const int warmup = recipe.value(QStringLiteral("warmup_iters")).toInt(2);
    const QJsonValue modules = recipe.value(QStringLiteral("recompute_modules"));
    const bool isControl = modules.isArray() && modules.toArray().isEmpty();
    if (isControl)
        slowIteration = -1;

    line({ { QStringLiteral("event"), QStringLiteral("hello") },
        { QStringLiteral("worker_version"), QStringLiteral("0.0.0-fake") },
        { QStringLiteral("libtorch_version"), QStringLiteral("1.13.1") },
        { QStringLiteral("cuda_version"), QJsonValue::Null },
        { QStringLiteral("nccl_version"), QJsonValue::Null },
        { QStringLiteral("device"), QStringLiteral("cpu") },
        { QStringLiteral("device_kind"), QStringLiteral("cpu") },
        { QStringLiteral("host"), QStringLiteral("fakehost") }, { QStringLiteral("pid"), int(getpid()) },
        { QStringLiteral("rank"), 0 }, { QStringLiteral("world_size"), 1 },
        { QStringLiteral("local_rank"), 0 }, { QStringLiteral("profile"), QStringLiteral("bridge-pin") },
        { QStringLiteral("stream_version"), 1 } });
    if (garbage) {
        std::printf("warning: a stray print from some library\n");
        line({ { QStringLiteral("no_event_key"), 1 } });
    }
    line({ { QStringLiteral("event"), QStringLiteral("recipe") }, { QStringLiteral("recipe"), recipe },
        { QStringLiteral("recipe_hash"),
            QString::fromLatin1(QCryptographicHash::hash(text, QCryptographicHash::Sha256).toHex()) },
        { QStringLiteral("findings"), QJsonArray() },
        { QStringLiteral("stage_scope"), QStringLiteral("all layers") } });
    if (!refusal.empty()) {
        line({ { QStringLiteral("event"), QStringLiteral("result") },
            { QStringLiteral("status"), QStringLiteral("invalid") },
            { QStringLiteral("stage"), QStringLiteral("validate") },
            { QStringLiteral("iteration"), QJsonValue() },
            { QStringLiteral("message"), QString::fromStdString(refusal) } });
        return 0;
    }
    line({ { QStringLiteral("event"), QStringLiteral("phase") },
        { QStringLiteral("phase"), QStringLiteral("build") }, { QStringLiteral("rank"), 0 } });
    auto b = [&](double v) { return double(qint64(v * peakScale)); };
    const auto stepMs = [&](int it) { return it == slowIteration ? slowMs : 100.0 + it; };
    double steadySum = 0;
    for (int it = warmup + 1; it <= iters; ++it)
        steadySum += stepMs(it);
    // The worker's steady step time is the mean of the steady iterations (a slow one moves it).
    const double steadyMean = iters > warmup ? steadySum / (iters - warmup) : 100.0;
    for (int it = 1; it <= iters; ++it) {
        if (it == 1 || it == warmup + 1)
            line({ { QStringLiteral("event"), QStringLiteral("phase") },
                { QStringLiteral("phase"), it == 1 ? QStringLiteral("warmup") : QStringLiteral("steady") },
                { QStringLiteral("rank"), 0 } });
        line({ { QStringLiteral("event"), QStringLiteral("iteration") }, { QStringLiteral("rank"), 0 },
            { QStringLiteral("iteration"), it },
            { QStringLiteral("phase"), it <= warmup ? QStringLiteral("warmup") : QStringLiteral("steady") },
            { QStringLiteral("step_ms"),
                it == wrongType ? QJsonValue(QStringLiteral("slow")) : QJsonValue(stepMs(it)) },
            { QStringLiteral("loss"), 10.0 - 0.1 * it }, { QStringLiteral("loss_finite"), true },
            { QStringLiteral("forward_peak_allocated"), b(1000000 + it) },
            { QStringLiteral("forward_peak_reserved"), b(2000000) },
            { QStringLiteral("backward_peak_allocated"), b(1500000 + it) },
            { QStringLiteral("backward_peak_reserved"), b(2000000) },
            { QStringLiteral("optimizer_peak_allocated"), b(1200000) },
            { QStringLiteral("optimizer_peak_reserved"), b(2000000) },
            { QStringLiteral("allocated_after"), b(500000) },
            { QStringLiteral("reserved_after"), b(2000000) }, { QStringLiteral("alloc_retries"), 0 },
            { QStringLiteral("optimizer_init"), it == 1 } });
        if (delayMs > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
        if (it == killAfter)
            ::kill(::getpid(), SIGKILL);
        if (it == exitAfter)
            return 3;
    }
    line({ { QStringLiteral("event"), QStringLiteral("rank_summary") }, { QStringLiteral("rank"), 0 },
        { QStringLiteral("peak_allocated"), b(1500000 + iters) },
        { QStringLiteral("peak_reserved"), b(2000000) },
        { QStringLiteral("peak_phase"), QStringLiteral("backward") },
        { QStringLiteral("peak_iteration"), iters },
        { QStringLiteral("steady_step_ms"),
            slowIteration > 0 ? steadyMean : 100.0 + (warmup + 1 + iters) / 2.0 },
        { QStringLiteral("steady_step_ms_median"), 100.0 + (warmup + 1 + iters) / 2.0 },
        { QStringLiteral("phase_peaks"),
            QJsonObject { { QStringLiteral("forward"),
                              QJsonObject { { QStringLiteral("allocated"), b(1000000 + iters) },
                                  { QStringLiteral("reserved"), b(2000000) } } },
                { QStringLiteral("backward"),
                    QJsonObject { { QStringLiteral("allocated"), b(1500000 + iters) },
                        { QStringLiteral("reserved"), b(2000000) } } } } } });
    const bool pass = status == QStringLiteral("pass");
    line({ { QStringLiteral("event"), QStringLiteral("result") }, { QStringLiteral("status"), status },
             { QStringLiteral("stage"),
                 pass ? QJsonValue(QJsonValue::Null) : QJsonValue(QStringLiteral("backward")) },
             { QStringLiteral("iteration"), pass ? QJsonValue(QJsonValue::Null) : QJsonValue(iters) },
             { QStringLiteral("message"), pass ? QString() : QStringLiteral("fake failure") },
             { QStringLiteral("steady_step_ms"),
                 slowIteration > 0 ? steadyMean : 100.0 + (warmup + 1 + iters) / 2.0 },
             { QStringLiteral("tokens_per_s"), 4096.0 }, { QStringLiteral("model_tflops"), 1.5 },
             { QStringLiteral("executed_tflops"), 1.75 }, { QStringLiteral("model_flops_per_step"), 1.5e11 },
             { QStringLiteral("executed_flops_per_step"), 1.75e11 } },
        !noNewlineEnd);
    return 0;
}
