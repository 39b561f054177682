// SPDX-License-Identifier: Apache-2.0
// `recompute export`: runs, per-rank peaks, memory reports and iterations as CSV and JSON that pandas reads
// as they are (storage/report.h, exportRuns).
#include <iostream>

#include "storage/report.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute export [--db PATH] [--out DIR] [--format csv|json|both] [--recipe-name NAME]\n"
      "                        [RUN...]\n"
      "  Writes runs, rank_peaks, phase_peaks, memory_reports and iterations (.csv and/or .json records)\n"
      "  to DIR (default: the current folder), for the runs given or every stored run, each with\n"
      "  <table>.dtypes.json, the pandas dtypes of its columns:\n"
      "    dt = json.load(open('runs.dtypes.json'))\n"
      "    pd.read_json('runs.json', dtype=dt)  # or pd.read_csv('runs.csv', dtype=dt)\n"
      "  gives nullable integers (Int64) and booleans (boolean) as stored; JSON has arrays as arrays, CSV\n"
      "  as JSON text; doubles are written shortest round-trip; byte counts are the *_bytes columns.\n";

int exportMain(const std::vector<std::string>& args)
{
    QString db, out = u"."_s, format = u"both"_s, recipeName;
    QVector<qint64> runs;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (a == "--db" || a == "--out" || a == "--format" || a == "--recipe-name") {
            if (i + 1 >= args.size()) {
                std::cerr << "recompute export: " << a << " needs a value\n" << kUsage;
                return 2;
            }
            const QString v = QString::fromStdString(args[++i]);
            (a == "--db" ? db : a == "--out" ? out : a == "--format" ? format : recipeName) = v;
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "recompute export: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            bool ok = false;
            const qint64 id = QString::fromStdString(a).toLongLong(&ok);
            if (!ok || id <= 0) {
                std::cerr << "recompute export: RUN: '" << a << "' is not a run id (a positive integer)\n";
                return 2;
            }
            runs << id;
        }
    }
    if (format != u"csv" && format != u"json" && format != u"both") {
        std::cerr << "recompute export: --format: '" << format.toStdString()
                  << "' is not one of csv, json, both\n";
        return 2;
    }
    rs::storage::Store store;
    QString error;
    if (!store.open(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute export: " << error.toStdString() << "\n";
        return 2;
    }
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

RS_REGISTER_VERB("export", "write stored runs, per-rank peaks and iterations as CSV / JSON", exportMain);
