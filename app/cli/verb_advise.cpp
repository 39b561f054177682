// SPDX-License-Identifier: Apache-2.0
// `recompute advise`: the cheapest stored recompute choice that fits a per-rank memory target, from one
// matched comparison, with the reason every other candidate was not chosen; a difference of step time
// inside the noise of the stored iterations is "not significant" and never decides
// (storage/significance.h).
#include <algorithm>
#include <iostream>

#include <QJsonDocument>

#include "advice_output.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

int adviseMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("advise", argv, &args))
        return *done;
    const QString recipeName = rs::cli::text(args, "recipe-name"),
                  format = rs::cli::text(args, "format", u"text"_s);
    if (!args.positionals.empty())
        return rs::cli::usageError("advise", "unexpected argument '" + args.positionals.front() + "'");
    std::optional<qint64> control;
    if (args.has("control") && !(control = rs::cli::runIdArg("advise", "--control", args.value("control"))))
        return 2;
    std::string error;
    std::optional<double> target = rs::cli::targetGbOption(args, &error);
    if (!error.empty())
        return rs::cli::inputError("advise", error);
    if (format != u"text" && format != u"json")
        return rs::cli::inputError(
            "advise", "--format: '" + format.toStdString() + "' is not one of text, json");
    if (control && !recipeName.isEmpty())
        return rs::cli::inputError("advise", "give --control or --recipe-name, not both");

    rs::storage::Store store;
    if (!rs::cli::openStore("advise", args, &store, rs::cli::StoreAccess::ReadOnly))
        return 2;

    QVector<rs::storage::ReportTable> tables;
    if (control) {
        const auto named = store.run(*control);
        if (!named) {
            std::cerr << "recompute advise: --control: run " << *control << " is not in "
                      << store.path().toStdString() << "\n";
            return 2;
        }
        // A candidate named instead of its control: its comparison is the one meant.
        if (!named->isExplicitControl() && named->controlRunId) {
            std::cerr << "recompute advise: run " << *control
                      << " is a candidate linked to the [] control run " << *named->controlRunId
                      << ": advising on that comparison\n";
            control = named->controlRunId;
        }
        tables = rs::storage::buildReport(store, control, {});
    } else {
        QVector<qint64> ids;
        if (!recipeName.isEmpty()) {
            rs::storage::RunFilter f;
            f.recipeName = recipeName;
            for (const auto& r : store.listRuns(f))
                ids << r.id;
            if (ids.isEmpty()) {
                std::cerr << "recompute advise: --recipe-name: no stored run's recipe name contains '"
                          << rs::storage::terminalText(recipeName).toStdString() << "'\n";
                return 2;
            }
        }
        // Only comparisons with a control: runs without one cannot be compared with anything.
        for (const auto& t : rs::storage::buildReport(store, std::nullopt, ids)) {
            if (t.control)
                tables << t;
        }
        // The newest comparison (highest control id); the others are named so they can be picked.
        std::sort(tables.begin(), tables.end(),
            [](const auto& a, const auto& b) { return a.control->id > b.control->id; });
    }
    if (tables.isEmpty() || tables.first().rows.isEmpty()) {
        std::cerr << "recompute advise: no matched comparison in " << store.path().toStdString()
                  << " (run `recompute sweep RECIPE` first, or `recompute import --sample`)\n";
        return 2;
    }
    const rs::storage::ReportTable& table = tables.first();
    if (!target)
        target = rs::cli::recipeMemoryTarget(table.control->recipeJson);
    if (!target) {
        std::cerr
            << "recompute advise: --target-gb is needed (the control's recipe has no memory_target_gb)\n";
        return 2;
    }

    // As the sweep and the studio: never chosen on a difference of step time inside the noise (the stored
    // steady iterations, repeats pooled); ties go to the narrower boundary. Runs without iterations keep the
    // advisor's choice by their stored step time.
    rs::cli::StoredAdvice advice = rs::cli::adviseOnComparison(store, table.rows, *target);
    if (!advice.significanceNote.isEmpty())
        advice.advice.notes.push_back(advice.significanceNote.toStdString());
    if (format == u"json") {
        std::cout << QJsonDocument(rs::cli::adviceJson(advice)).toJson(QJsonDocument::Indented).constData();
    } else {
        std::cout << rs::cli::adviceText(advice).constData();
    }
    if (tables.size() > 1) {
        QStringList others;
        for (int i = 1; i < tables.size(); ++i)
            others << u"%1 (%2)"_s.arg(tables[i].control->id)
                          .arg(rs::storage::terminalText(tables[i].control->recipeName));
        std::cerr << "recompute advise: advised on the newest comparison (control run " << table.control->id
                  << "); other controls: " << others.join(u", "_s).toStdString()
                  << " (pick one with --control)\n";
    }
    return advice.advice.chosen ? 0 : 1;
}

} // namespace

RS_REGISTER_VERB("advise", adviseMain);
