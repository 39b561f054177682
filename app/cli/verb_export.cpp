// SPDX-License-Identifier: Apache-2.0
// `recompute export`: runs, per-rank peaks, memory reports and iterations as CSV and JSON that pandas reads
// as they are (storage/report.h, exportRuns).
#include <iostream>

#include "storage/report.h"
#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

int exportMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("export", argv, &args))
        return *done;
    const QString out = rs::cli::text(args, "out", u"."_s), format = rs::cli::text(args, "format", u"both"_s),
                  recipeName = rs::cli::text(args, "recipe-name");
    const auto ids = rs::cli::runIdPositionals("export", args);
    if (!ids)
        return 2;
    QVector<qint64> runs = *ids;
    if (format != u"csv" && format != u"json" && format != u"both")
        return rs::cli::inputError(
            "export", "--format: '" + format.toStdString() + "' is not one of csv, json, both");
    rs::storage::Store store;
    if (!rs::cli::openStore("export", args, &store, rs::cli::StoreAccess::ReadOnly))
        return 2;
    QString error;
    // A run that is not in the store is a refusal before anything is written (the last export's files stay).
    for (qint64 id : runs)
        if (!store.run(id))
            return rs::cli::inputError(
                "export", "run " + std::to_string(id) + " is not in " + store.path().toStdString());
    if (!recipeName.isEmpty()) {
        rs::storage::RunFilter f;
        f.recipeName = recipeName;
        f.ids = runs;
        runs.clear();
        for (const auto& r : store.listRuns(f))
            runs.prepend(r.id);
        if (runs.isEmpty()) {
            std::cerr << "recompute export: no run matches --recipe-name " << recipeName.toStdString()
                      << "\n";
            return 1;
        }
    }
    const QStringList files
        = rs::storage::exportRuns(store, runs, out, format != u"json", format != u"csv", &error);
    if (!error.isEmpty()) {
        std::cerr << "recompute export: " << error.toStdString() << "\n";
        return 2;
    }
    for (const QString& f : files)
        std::cout << f.toStdString() << "\n";
    return 0;
}

} // namespace

RS_REGISTER_VERB("export", exportMain);
