// SPDX-License-Identifier: Apache-2.0
// `recompute report`: the guide's comparison table from the store.
#include <iostream>

#include <QFile>

#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

int reportMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("report", argv, &args))
        return *done;
    const QString format = rs::cli::text(args, "format", u"md"_s),
                  recipeName = rs::cli::text(args, "recipe-name"), model = rs::cli::text(args, "model"),
                  outPath = rs::cli::text(args, "out");
    const bool strict = args.has("strict");
    std::optional<qint64> control;
    if (args.has("control") && !(control = rs::cli::runIdArg("report", "--control", args.value("control"))))
        return 2;
    const auto ids = rs::cli::runIdPositionals("report", args);
    if (!ids)
        return 2;
    QVector<qint64> runs = *ids;
    const auto fmt = rs::storage::reportFormatFromName(format);
    if (!fmt)
        return rs::cli::inputError(
            "report", "--format: '" + format.toStdString() + "' is not one of md, csv, json, html");
    rs::storage::Store store;
    if (!rs::cli::openStore("report", args, &store, rs::cli::StoreAccess::ReadOnly))
        return 2;
    if (!recipeName.isEmpty() || !model.isEmpty()) {
        rs::storage::RunFilter f;
        f.recipeName = recipeName;
        f.model = model;
        f.ids = runs;
        runs.clear();
        for (const auto& r : store.listRuns(f))
            runs.prepend(r.id);
        if (runs.isEmpty()) {
            std::cerr << "recompute report: no run matches the filter\n";
            return 1;
        }
    }
    for (qint64 id : runs) {
        if (!store.run(id)) {
            std::cerr << "recompute report: run " << id << " is not in " << store.path().toStdString()
                      << "\n";
            return 2;
        }
    }
    if (control && !store.run(*control)) {
        std::cerr << "recompute report: --control: run " << *control << " is not in "
                  << store.path().toStdString() << "\n";
        return 2;
    }
    const auto tables = rs::storage::buildReport(store, control, runs);
    const QByteArray text = rs::storage::formatReport(tables, *fmt).toUtf8();
    if (outPath.isEmpty()) {
        std::cout << text.constData();
    } else {
        QFile f(outPath);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size()) {
            std::cerr << "recompute report: " << outPath.toStdString() << ": "
                      << f.errorString().toStdString() << "\n";
            return 2;
        }
    }
    const int unmatched = rs::storage::unmatchedRows(tables);
    if (unmatched > 0)
        std::cerr
            << "recompute report: " << unmatched
            << " row(s) are not matched to their control and were not compared (see the Matched? column)\n";
    return strict && unmatched > 0 ? 1 : 0;
}

} // namespace

RS_REGISTER_VERB("report", reportMain);
