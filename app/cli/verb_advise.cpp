// SPDX-License-Identifier: Apache-2.0
// `recompute advise`: the cheapest stored recompute choice that fits a per-rank memory target, from one
// matched comparison, with the reason every other candidate was not chosen.
#include <algorithm>
#include <cmath>
#include <iostream>

#include <QJsonDocument>

#include "advice_output.h"
#include "storage/report.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute advise [--target-gb X] [--control RUN | --recipe-name NAME] [--db PATH]\n"
      "                        [--format text|json]\n"
      "  From one matched comparison (the [] control and the runs linked to it), choose the passing run\n"
      "  with the lowest steady step time whose every rank's peak allocated fits X GB (1 GB = 1e9 bytes;\n"
      "  ties: the smaller peak), and say why each other run was not chosen: did not pass (an OOM that gets\n"
      "  farther is still not a pass), over the target on a rank, not matched to the control, or slower.\n"
      "  --control RUN: that control's comparison. --recipe-name NAME (substring): the newest comparison of\n"
      "  the runs with that recipe name. Neither: the newest comparison in the store. Without --target-gb\n"
      "  the control recipe's memory_target_gb is used.\n"
      "  Exit: 0 something fits, 1 nothing fits, 2 unusable input.\n";

int adviseMain(const std::vector<std::string>& args)
{
    QString db, recipeName, format = u"text"_s;
    std::optional<qint64> control;
    std::optional<double> target;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (a != "--db" && a != "--control" && a != "--recipe-name" && a != "--format"
            && a != "--target-gb") {
            std::cerr << "recompute advise: unknown argument " << a << "\n" << kUsage;
            return 2;
        }
        if (i + 1 >= args.size()) {
            std::cerr << "recompute advise: " << a << " needs a value\n";
            return 2;
        }
        const QString v = QString::fromStdString(args[++i]);
        if (a == "--db") {
            db = v;
        } else if (a == "--recipe-name") {
            recipeName = v;
        } else if (a == "--format") {
            format = v;
        } else if (a == "--control") {
            bool ok = false;
            const qint64 id = v.toLongLong(&ok);
            if (!ok || id <= 0) {
                std::cerr << "recompute advise: --control: '" << v.toStdString()
                          << "' is not a run id (a positive integer)\n";
                return 2;
            }
            control = id;
        } else {
            bool ok = false;
            const double gb = v.toDouble(&ok);
            if (!ok || !std::isfinite(gb) || gb <= 0) {
                std::cerr
                    << "recompute advise: --target-gb: '" << v.toStdString()
                    << "' is not a per-rank memory target (a positive number of GB, 1 GB = 1e9 bytes)\n";
                return 2;
            }
            target = gb;
        }
    }
    if (format != u"text" && format != u"json") {
        std::cerr << "recompute advise: --format: '" << format.toStdString()
                  << "' is not one of text, json\n";
        return 2;
    }
    if (control && !recipeName.isEmpty()) {
        std::cerr << "recompute advise: give --control or --recipe-name, not both\n";
        return 2;
    }

    rs::storage::Store store;
    QString error;
    if (!store.open(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute advise: " << error.toStdString() << "\n";
        return 2;
    }

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
                          << recipeName.toStdString() << "'\n";
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

    const rs::cli::StoredAdvice advice = rs::cli::adviseOnComparison(store, table.rows, *target);
    if (format == u"json") {
        std::cout << QJsonDocument(rs::cli::adviceJson(advice)).toJson(QJsonDocument::Indented).constData();
    } else {
        std::cout << rs::cli::adviceText(advice).constData();
    }
    if (tables.size() > 1) {
        QStringList others;
        for (int i = 1; i < tables.size(); ++i)
            others << u"%1 (%2)"_s.arg(tables[i].control->id).arg(tables[i].control->recipeName);
        std::cerr << "recompute advise: advised on the newest comparison (control run " << table.control->id
                  << "); other controls: " << others.join(u", "_s).toStdString()
                  << " (pick one with --control)\n";
    }
    return advice.advice.chosen ? 0 : 1;
}

} // namespace

RS_REGISTER_VERB(
    "advise", "choose the cheapest stored recompute choice that fits a per-rank memory target", adviseMain);
