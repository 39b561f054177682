// SPDX-License-Identifier: Apache-2.0
// `recompute report`: the guide's comparison table from the store.
#include <iostream>

#include <QFile>

#include "storage/report.h"
#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute report [--db PATH] [--control RUN] [RUN...] [--recipe-name NAME] [--model NAME]\n"
      "                        [--format md|csv|json|html] [--out FILE] [--strict]\n"
      "  The guide's table: module set, peak allocated, step time, TFLOP/s/GPU, Allocated vs [], Time vs "
      "[],\n"
      "  outcome. With --control, the runs (default: every run linked to it) against that run; otherwise\n"
      "  the runs grouped by their stored matched control. Rows not matched to the control (shape, "
      "precision,\n"
      "  parallelism, backend ...) are flagged with the reason and get no deltas; --strict makes that exit "
      "1.\n";

int reportMain(const std::vector<std::string>& args)
{
    QString db, format = u"md"_s, recipeName, model, outPath;
    std::optional<qint64> control;
    QVector<qint64> runs;
    bool strict = false;
    auto needValue = [&](size_t& i) -> std::optional<QString> {
        if (i + 1 >= args.size()) {
            std::cerr << "recompute report: " << args[i] << " needs a value\n" << kUsage;
            return std::nullopt;
        }
        return QString::fromStdString(args[++i]);
    };
    auto runId = [](const QString& text, const char* what) -> std::optional<qint64> {
        bool ok = false;
        const qint64 id = text.toLongLong(&ok);
        if (!ok || id <= 0) {
            std::cerr << "recompute report: " << what << ": '" << text.toStdString()
                      << "' is not a run id (a positive integer)\n";
            return std::nullopt;
        }
        return id;
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (a == "--db" || a == "--format" || a == "--recipe-name" || a == "--model" || a == "--out"
            || a == "--control") {
            const auto v = needValue(i);
            if (!v)
                return 2;
            if (a == "--db")
                db = *v;
            else if (a == "--format")
                format = *v;
            else if (a == "--recipe-name")
                recipeName = *v;
            else if (a == "--model")
                model = *v;
            else if (a == "--out")
                outPath = *v;
            else {
                control = runId(*v, "--control");
                if (!control)
                    return 2;
            }
        } else if (a == "--strict") {
            strict = true;
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "recompute report: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            const auto id = runId(QString::fromStdString(a), "RUN");
            if (!id)
                return 2;
            runs << *id;
        }
    }
    const auto fmt = rs::storage::reportFormatFromName(format);
    if (!fmt) {
        std::cerr << "recompute report: --format: '" << format.toStdString()
                  << "' is not one of md, csv, json, html\n";
        return 2;
    }
    rs::storage::Store store;
    QString error;
    if (!store.openReadOnly(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute report: " << error.toStdString() << "\n";
        return 2;
    }
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

RS_REGISTER_VERB(
    "report", "print the guide's comparison table of stored runs against their [] control", reportMain);
