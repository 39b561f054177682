// SPDX-License-Identifier: Apache-2.0
// The GUI's two latency goals (docs/benchmarks.md, "## GUI"):
//  1. an edit in the recipe form until the findings (and every other view of the recipe) are up to date
//     and repainted: goal < 16 ms;
//  2. a redraw of the trade-off chart over a store of 10,000 runs: goal < 100 ms.
// Runs offscreen (QT_QPA_PLATFORM=offscreen unless a display is given); wall-clock times from
// QElapsedTimer, median / p90 / max over many repetitions. Usage: bench_gui [--edits N] [--redraws N]
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>

#include "charts/chartview.h"
#include "editorpage.h"
#include "findingspanel.h"
#include "models/findingsmodel.h"
#include "presets.h"
#include "recipedocument.h"
#include "recipeform.h"
#include "runspage.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;

namespace {

struct Stats {
    double median, p90, max;
};

Stats stats(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))]; };
    return { at(0.5), at(0.9), v.back() };
}

void print(const char* what, const std::vector<double>& ms)
{
    const Stats s = stats(ms);
    std::printf("| %s | %zu | %.3f | %.3f | %.3f |\n", what, ms.size(), s.median, s.p90, s.max);
}

int argValue(int argc, char** argv, const char* name, int fallback)
{
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == name)
            return std::atoi(argv[i + 1]);
    return fallback;
}

// 10,000 runs: 250 matched comparisons of 8 module sets, 5 repeats each; one in ten failed.
bool fillStore(storage::Store* store, int comparisons)
{
    const QStringList sets[] = { {}, { QStringLiteral("core_attn") }, { QStringLiteral("moe_act") },
        { QStringLiteral("mla_up_proj") }, { QStringLiteral("layernorm"), QStringLiteral("moe_act") },
        { QStringLiteral("moe") }, { QStringLiteral("mlp") },
        { QStringLiteral("moe"), QStringLiteral("layernorm") } };
    if (!store->beginWrite())
        return false;
    int n = 0;
    for (int c = 0; c < comparisons; ++c) {
        qint64 control = 0;
        for (int s = 0; s < 8; ++s) {
            for (int repeat = 0; repeat < 5; ++repeat) {
                storage::RunRecord r;
                r.source = storage::source::Worker;
                r.createdAt = QDateTime::currentDateTimeUtc();
                r.recipeName = QStringLiteral("sweep %1").arg(c);
                r.model = QStringLiteral("model %1").arg(c);
                r.host = QStringLiteral("node%1").arg(c % 16);
                r.device = QStringLiteral("NVIDIA H200");
                r.seqLength = 4096;
                r.recomputeGranularity = QStringLiteral("selective");
                r.recomputeModules = sets[s];
                const bool failed = (++n % 10) == 0;
                r.outcome = failed ? storage::outcome::Oom : storage::outcome::Pass;
                r.peakAllocated = qint64((40.0 - s * 0.5 + repeat * 0.01 + c * 0.001) * 1e9);
                r.peakReserved = qint64((44.0 - s * 0.4) * 1e9);
                if (!failed)
                    r.steadyStepMs = 450.0 + s * 12.0 + repeat * 0.5;
                if (control)
                    r.controlRunId = control;
                const qint64 id = store->insertRun(r);
                if (!id)
                    return false;
                if (s == 0 && repeat == 0)
                    control = id;
            }
        }
    }
    return store->commitWrite();
}

} // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const int edits = argValue(argc, argv, "--edits", 400);
    const int redraws = argValue(argc, argv, "--redraws", 30);
    const int part = argValue(argc, argv, "--part", 0); // 1: edits only, 2: charts only, 0: both

    std::printf("| what | n | median ms | p90 ms | max ms |\n| --- | ---: | ---: | ---: | ---: |\n");

    // --- 1. edit -> findings ---
    if (part == 0 || part == 1) {
        RecipeDocument document;
        EditorPage page(&document);
        page.resize(1400, 860);
        page.show();
        document.setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        QApplication::processEvents();
        auto* layers = qobject_cast<QSpinBox*>(page.form()->editor("num_layers"));
        auto* grouped = qobject_cast<QCheckBox*>(page.form()->editor("moe_grouped_gemm"));
        std::vector<double> sync, painted, full, toggles;
        for (int i = 0; i < edits; ++i) {
            QElapsedTimer t;
            t.start();
            layers->setValue(i % 2 ? 27 : 28); // as a user's edit: valueChanged -> document -> every view
            sync.push_back(t.nsecsElapsed() / 1e6);
            QApplication::processEvents(); // what the event loop does next: layout and repaint what changed
            painted.push_back(t.nsecsElapsed() / 1e6);
        }
        for (int i = 0; i < edits; ++i) {
            QElapsedTimer t;
            t.start();
            layers->setValue(i % 2 ? 27 : 28);
            page.repaint(); // worst case: the whole 1400x860 page painted again
            QApplication::processEvents();
            full.push_back(t.nsecsElapsed() / 1e6);
        }
        for (int i = 0; i < edits; ++i) {
            const int before = page.findings()->model()->rowCount();
            QElapsedTimer t;
            t.start();
            grouped->click(); // R12 appears / disappears: the findings table changes shape
            QApplication::processEvents();
            toggles.push_back(t.nsecsElapsed() / 1e6);
            if (page.findings()->model()->rowCount() == before) {
                std::fprintf(stderr, "bench_gui: the moe_grouped_gemm toggle did not change the findings\n");
                return 1;
            }
        }
        print("edit num_layers -> findings and all views updated (synchronous)", sync);
        print("edit num_layers -> updated and repainted", painted);
        print("edit num_layers -> updated, whole page repainted (worst case)", full);
        print("toggle moe_grouped_gemm (R12 appears/clears) -> updated and repainted", toggles);
    }

    // --- 2. chart redraw with 10,000 runs ---
    if (part == 0 || part >= 2) {
        QTemporaryDir dir;
        storage::Store store;
        QString error;
        if (!store.open(dir.filePath(QStringLiteral("bench.sqlite")), &error) || !fillStore(&store, 250)) {
            std::fprintf(stderr, "bench_gui: cannot fill the store: %s %s\n", qPrintable(error),
                qPrintable(store.lastError()));
            return 1;
        }
        QElapsedTimer t;
        t.start();
        RunsPage page(&store);
        page.resize(1400, 860);
        page.show();
        QApplication::processEvents();
        const double firstLoad = t.nsecsElapsed() / 1e6;
        std::vector<double> reloads, one, all;
        for (int i = 0; i < redraws; ++i) {
            t.restart();
            page.reload(); // re-read 10,000 runs, rebuild table, filters and chart
            page.repaint();
            QApplication::processEvents();
            reloads.push_back(t.nsecsElapsed() / 1e6);
        }
        // One comparison (the default view) drawn out of 10,000 runs, then every run at once.
        std::vector<double> oneData, onePaint, idle, chartOnly;
        for (int i = 0; i < 5; ++i) {
            t.restart();
            QApplication::processEvents();
            idle.push_back(t.nsecsElapsed() / 1e6);
        }
        print("  idle event loop", idle);
        {
            TradeoffChart alone;
            alone.resize(1200, 500);
            alone.show();
            const TradeoffData d = page.tradeoffChart()->data();
            for (int i = 0; i < 10; ++i) {
                t.restart();
                alone.setData(d);
                alone.repaint();
                QApplication::processEvents();
                chartOnly.push_back(t.nsecsElapsed() / 1e6);
            }
            print("  a lone TradeoffChart: setData, repaint, event loop", chartOnly);
        }
        for (int i = 0; i < redraws; ++i) {
            t.restart();
            page.redrawTradeoff();
            oneData.push_back(t.nsecsElapsed() / 1e6);
            page.tradeoffChart()->repaint();
            onePaint.push_back(t.nsecsElapsed() / 1e6);
            QApplication::processEvents();
            one.push_back(t.nsecsElapsed() / 1e6);
        }
        print("  of which: runs collected, points built, series replaced (before painting)", oneData);
        print("  of which: ... and the chart repainted", onePaint);
        print("  total with the event loop", one);
        const int points1 = page.tradeoffChart()->data().points.size();

        // "all shown runs" is the comparison chooser's last entry.
        for (QComboBox* box : page.findChildren<QComboBox*>()) {
            const int i = box->findText(QStringLiteral("all shown runs"));
            if (i >= 0)
                box->setCurrentIndex(i);
        }
        for (int i = 0; i < redraws; ++i) {
            t.restart();
            page.redrawTradeoff();
            page.tradeoffChart()->repaint();
            QApplication::processEvents();
            all.push_back(t.nsecsElapsed() / 1e6);
        }
        const int pointsAll = page.tradeoffChart()->data().points.size();
        // To look at what was timed: BENCH_GUI_CHART=file.png saves the all-runs chart.
        if (qEnvironmentVariableIsSet("BENCH_GUI_CHART")) {
            QString ignored;
            page.tradeoffChart()->exportImage(qEnvironmentVariable("BENCH_GUI_CHART"), &ignored);
        }
        std::printf("| first load of the runs page (10,000 runs) | 1 | %.3f | | |\n", firstLoad);
        print("reload: 10,000 runs re-read, table, filters, chart, repaint", reloads);
        char label[160];
        std::snprintf(
            label, sizeof label, "trade-off redraw, one comparison of 10,000 runs (%d points)", points1);
        print(label, one);
        std::snprintf(
            label, sizeof label, "trade-off redraw, all 10,000 runs (%d points, 250 comparisons)", pointsAll);
        print(label, all);
    }
    return 0;
}
