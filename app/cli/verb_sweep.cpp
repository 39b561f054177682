// SPDX-License-Identifier: Apache-2.0
// `recompute sweep`: the guide's matched runs on this host's worker: the explicit [] control first, then
// one run per recompute choice, each changing only the recompute choice and linked to the control; then
// the comparison table and, with a target, the advice.
#include <algorithm>
#include <cmath>
#include <iostream>

#include "advice_output.h"
#include "core/recipe_input.h"
#include "core/rules.h"
#include "run_session.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute sweep (FILE.json | - | --overrides ARGS... | --mlm-args ARGS...) [--profile P]\n"
      "                       [--modules SET...] [--target-gb X] [--db PATH] [--device D] [--iters N]\n"
      "                       [--warmup N] [--ranks N] [--worker PATH]\n"
      "                       [--host HOST [--ssh-options OPTS] [--remote-worker PATH]]\n"
      "  The guide's matched runs: first the explicit no-recompute control (the recipe with\n"
      "  recompute_granularity=selective, recompute_modules=[]), then one run per SET, changing only the\n"
      "  recompute choice, each linked to the control. SET: comma-separated labels (moe_act,\n"
      "  layernorm,moe_act) for selective recompute, or full:uniform:N / full:block:N for full recompute;\n"
      "  --modules takes one or more SETs and may repeat. Without --modules: one run per label that has an\n"
      "  effect on the model. Each choice is validated first; one with rule errors is reported and skipped.\n"
      "  Then the comparison table, and with --target-gb (or the recipe's memory_target_gb) the advice.\n"
      "  --ranks N runs every choice as N data-parallel worker processes on this host, --host on HOST over\n"
      "  ssh (both as recompute run).\n"
      "  Ctrl-C stops the current worker, keeps what was measured and runs no further choice.\n"
      "  Exit: 0 every choice ran (and, with a target, one fits), 1 a choice was skipped or nothing fits,\n"
      "  2 unusable input or the worker did not start, 130 interrupted.\n";

struct ModuleSet {
    QString text; // as given
    std::string granularity; // selective | full
    std::vector<std::string> modules; // selective
    std::string method; // full
    int numLayers = 0; // full
    QString label() const
    {
        if (granularity == "full")
            return u"full %1 %2"_s.arg(QString::fromStdString(method)).arg(numLayers);
        QStringList l;
        for (const auto& m : modules)
            l << QString::fromStdString(m);
        return l.join(u", "_s);
    }
};

// "moe_act" | "layernorm,moe_act" | "full:uniform:1" | "full:block:2"; throws with a message naming the set.
ModuleSet parseModuleSet(const QString& text)
{
    ModuleSet s;
    s.text = text;
    const QString t = text.trimmed();
    if (t.startsWith(u"full"_s) && (t.size() == 4 || t[4] == u':')) {
        const QStringList parts = t.split(u':');
        bool ok = false;
        const int n = parts.size() == 3 ? parts[2].toInt(&ok) : 0;
        if (parts.size() != 3 || (parts[1] != u"uniform" && parts[1] != u"block") || !ok || n < 1)
            throw std::invalid_argument("--modules: '" + text.toStdString()
                + "': full recompute is full:METHOD:N with recompute_method uniform or block and "
                  "recompute_num_layers a positive integer (e.g. full:uniform:1)");
        s.granularity = "full";
        s.method = parts[1].toStdString();
        s.numLayers = n;
        return s;
    }
    s.granularity = "selective";
    for (const QString& part : t.split(u',')) {
        const QString label = part.trimmed();
        if (label.isEmpty() || label == u"[]")
            throw std::invalid_argument("--modules: '" + text.toStdString()
                + "': a set is one or more recompute_modules labels separated by commas (e.g. "
                  "layernorm,moe_act); the [] control is always run first");
        s.modules.push_back(label.toStdString());
    }
    return s;
}

// Only the recompute choice differs from the recipe: the contract of a matched comparison.
rs::Recipe withRecompute(rs::Recipe r, const std::string& granularity,
    std::optional<std::vector<std::string>> modules, std::optional<std::string> method,
    std::optional<int> numLayers)
{
    r.recompute_granularity = granularity;
    r.recompute_modules = std::move(modules);
    r.recompute_method = std::move(method);
    r.recompute_num_layers = numLayers;
    return r;
}

// Prints the rule errors; true when there are none.
bool validated(const rs::Recipe& recipe, rs::InputFormat format, const QString& label)
{
    const rs::Validation v = rs::validate(recipe, format);
    if (!v.hasErrors())
        return true;
    std::cerr << "recompute sweep: [" << label.toStdString() << "] has rule errors, not run:\n";
    for (const auto& f : v.findings) {
        if (f.severity == rs::Severity::Error)
            std::cerr << "  " << f.rule_id << " error: " << f.message << "\n";
    }
    return false;
}

QString oneLine(const rs::storage::Store& store, qint64 runId)
{
    const auto run = store.run(runId);
    if (!run)
        return u"run %1 was not stored"_s.arg(runId);
    QString s = u"run %1 (%2): %3"_s.arg(run->id).arg(run->moduleSetLabel(), run->outcome);
    if (!run->failureStage.isEmpty())
        s += u" in "_s + run->failureStage;
    s += u", peak allocated %1 GB"_s.arg(rs::storage::formatGigabytes(run->peakAllocated));
    if (run->steadyStepMs)
        s += u", %1 ms/step"_s.arg(*run->steadyStepMs, 0, 'f', 2);
    return s;
}

int sweepMain(const std::vector<std::string>& args)
{
    std::vector<std::string> rest;
    rs::RecipeInput input;
    if (const auto done = rs::cli::readRunRecipe("sweep", kUsage, args, &input, &rest))
        return *done;
    QString db;
    std::optional<int> steadyIters, warmupIters;
    rs::cli::RunSessionOptions options;
    std::optional<double> target = input.recipe.memory_target_gb;
    std::vector<ModuleSet> sets;
    try {
        for (size_t i = 0; i < rest.size(); ++i) {
            const std::string& a = rest[i];
            if (a == "--modules") {
                size_t taken = 0;
                while (i + 1 < rest.size() && rest[i + 1].rfind("--", 0) != 0) {
                    sets.push_back(parseModuleSet(QString::fromStdString(rest[++i])));
                    ++taken;
                }
                if (taken == 0)
                    throw std::invalid_argument(
                        "--modules needs one or more SETs (e.g. moe_act layernorm,moe_act)");
                continue;
            }
            if (!rs::cli::isWorkerFlag(a) && a != "--db" && a != "--iters" && a != "--warmup"
                && a != "--target-gb")
                throw std::invalid_argument("unknown argument " + a);
            if (i + 1 >= rest.size())
                throw std::invalid_argument(a + " needs a value");
            const QString v = QString::fromStdString(rest[++i]);
            if (rs::cli::isWorkerFlag(a)) {
                rs::cli::takeWorkerFlag(a, v, &options);
            } else if (a == "--db") {
                db = v;
            } else if (a == "--target-gb") {
                bool ok = false;
                const double gb = v.toDouble(&ok);
                if (!ok || !std::isfinite(gb) || gb <= 0)
                    throw std::invalid_argument("--target-gb: '" + v.toStdString()
                        + "' is not a per-rank memory target (a positive number of GB, 1 GB = 1e9 bytes)");
                target = gb;
            } else {
                bool ok = false;
                const int n = v.toInt(&ok);
                const bool warmup = a == "--warmup";
                if (!ok || n < (warmup ? 0 : 1))
                    throw std::invalid_argument(a + ": '" + v.toStdString() + "' is not "
                        + (warmup ? "a non-negative" : "a positive") + " integer");
                (warmup ? warmupIters : steadyIters) = n;
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "recompute sweep: " << e.what() << "\n" << kUsage;
        return 2;
    }

    // The recipe carries the run length, so every run of the sweep has the same one (a match condition).
    rs::Recipe base = input.recipe;
    rs::cli::applyRunLength(base, warmupIters, steadyIters);

    const rs::Recipe controlRecipe = withRecompute(base, "selective", std::vector<std::string> {}, {}, {});
    if (sets.empty()) {
        // The guide: one label at a time, and only labels that act on this architecture.
        for (const auto& label : rs::allowedRecomputeModules(base.profile)) {
            if (rs::recomputeLabelEffect(controlRecipe, label).has_effect)
                sets.push_back(parseModuleSet(QString::fromStdString(label)));
        }
        QStringList names;
        for (const auto& s : sets)
            names << s.label();
        std::cerr << "recompute sweep: no --modules given: one run per label with an effect on this model: "
                  << names.join(u" | "_s).toStdString() << "\n";
    }
    // The same choice twice would be two runs of one thing.
    std::vector<ModuleSet> unique;
    for (const auto& s : sets) {
        auto same = [&](const ModuleSet& o) {
            auto a = o.modules, b = s.modules;
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            return o.granularity == s.granularity && a == b && o.method == s.method
                && o.numLayers == s.numLayers;
        };
        if (std::any_of(unique.begin(), unique.end(), same))
            std::cerr << "recompute sweep: [" << s.label().toStdString() << "] given twice, run once\n";
        else
            unique.push_back(s);
    }

    if (!validated(controlRecipe, input.format, u"[]"_s)) {
        std::cerr << "recompute sweep: the [] control of this recipe does not validate: nothing was run\n";
        return 1;
    }
    std::vector<std::pair<ModuleSet, rs::Recipe>> runnable;
    int skipped = 0;
    for (const auto& s : unique) {
        rs::Recipe r = s.granularity == "full"
            ? withRecompute(base, "full", std::nullopt, s.method, s.numLayers)
            : withRecompute(base, "selective", s.modules, {}, {});
        if (validated(r, input.format, s.label()))
            runnable.emplace_back(s, r);
        else
            ++skipped;
    }

    rs::storage::Store store;
    QString error;
    if (!store.open(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute sweep: " << error.toStdString() << "\n";
        return 2;
    }

    rs::cli::InterruptScope interrupts;
    options.verb = u"sweep"_s;
    options.provenance = u"recompute sweep "_s + QString::fromStdString(input.origin);
    options.progressLabel = u"[]"_s;
    std::cerr << "recompute sweep: the [] control, then " << runnable.size() << " recompute choice(s), "
              << base.train_iters << " iterations each (" << base.warmup_iters << " warm-up)\n";
    const rs::cli::RunSessionResult controlRun = rs::cli::runSession(store, controlRecipe, options);
    if (!controlRun.started)
        return 2;
    std::cout << oneLine(store, controlRun.runId).toStdString() << "\n" << std::flush;
    const qint64 controlId = controlRun.runId;
    QVector<qint64> ids;
    bool interrupted = controlRun.interrupted;
    for (const auto& [set, recipe] : runnable) {
        if (interrupted || rs::cli::InterruptScope::count() > 0) {
            interrupted = true;
            break;
        }
        options.control = controlId;
        options.progressLabel = u"["_s + set.label() + u"]"_s;
        const rs::cli::RunSessionResult r = rs::cli::runSession(store, recipe, options);
        if (!r.started) {
            std::cerr << "recompute sweep: the worker did not start for [" << set.label().toStdString()
                      << "]; the sweep stops\n";
            return 2;
        }
        ids << r.runId;
        interrupted = r.interrupted;
        std::cout << oneLine(store, r.runId).toStdString() << "\n" << std::flush;
    }

    std::cout << "\n"
              << rs::storage::formatReport(
                     rs::storage::buildReport(store, controlId, ids), rs::storage::ReportFormat::Markdown)
                     .toStdString();
    bool fits = true;
    if (target) {
        const auto rows = store.compare(controlId, ids);
        const rs::cli::StoredAdvice advice = rs::cli::adviseOnComparison(store, rows, *target);
        std::cout << "\n" << rs::cli::adviceText(advice).constData();
        fits = advice.advice.chosen.has_value();
    }
    std::cout << "stored in " << store.path().toStdString() << " (control run " << controlId << ")\n";
    if (interrupted) {
        std::cerr << "recompute sweep: interrupted; " << ids.size() << " of " << runnable.size()
                  << " recompute choice(s) were run\n";
        return 130;
    }
    return skipped > 0 || !fits ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB(
    "sweep", "run the [] control and one matched run per recompute choice, then compare", sweepMain);
