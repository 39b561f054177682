// SPDX-License-Identifier: Apache-2.0
// `recompute link`: give stored runs a control (or take it away), so `recompute report` compares them.
#include <iostream>

#include "storage/store.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

const char* kUsage
    = "usage: recompute link [--db PATH] RUN... --control RUN|none\n"
      "       recompute link [--db PATH] --auto RUN...\n"
      "  Makes --control the control of each RUN (the run `recompute report` compares it with), or with\n"
      "  `none` unlinks them. Any run may be a control: the report labels it (the explicit [], Megatron's\n"
      "  recompute_granularity None, or a run that recomputes something) and flags rows that are not\n"
      "  matched with it. --auto links each RUN as an import does: to the newest matched run of its shape\n"
      "  without recompute, and a RUN without recompute becomes the control of the matched runs with none.\n";

int linkMain(const std::vector<std::string>& args)
{
    QString db;
    bool unlink = false, automatic = false, haveControl = false;
    qint64 control = 0;
    QVector<qint64> runs;
    auto runId = [](const std::string& text, const char* what) -> qint64 {
        bool ok = false;
        const qint64 id = QString::fromStdString(text).toLongLong(&ok);
        if (!ok || id <= 0) {
            std::cerr << "recompute link: " << what << ": '" << text
                      << "' is not a run id (a positive integer)\n";
            return 0;
        }
        return id;
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (a == "--db" || a == "--control") {
            if (i + 1 >= args.size()) {
                std::cerr << "recompute link: " << a << " needs a value\n" << kUsage;
                return 2;
            }
            const std::string v = args[++i];
            if (a == "--db") {
                db = QString::fromStdString(v);
            } else {
                haveControl = true;
                if (v == "none") {
                    unlink = true;
                } else if (!(control = runId(v, "--control"))) {
                    return 2;
                }
            }
        } else if (a == "--auto") {
            automatic = true;
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "recompute link: unknown option " << a << "\n" << kUsage;
            return 2;
        } else {
            const qint64 id = runId(a, "RUN");
            if (!id)
                return 2;
            runs << id;
        }
    }
    if (runs.isEmpty() || haveControl == automatic) {
        std::cerr << "recompute link: give RUN... and either --control RUN|none or --auto\n" << kUsage;
        return 2;
    }
    rs::storage::Store store;
    QString error;
    if (!store.open(db.isEmpty() ? rs::storage::Store::defaultPath() : db, &error)) {
        std::cerr << "recompute link: " << error.toStdString() << "\n";
        return 2;
    }
    if (!store.beginWrite()) {
        std::cerr << "recompute link: " << store.lastError().toStdString() << "\n";
        return 2;
    }
    QStringList lines;
    for (qint64 id : runs) {
        if (automatic) {
            if (!store.run(id)) {
                store.rollbackWrite();
                std::cerr << "recompute link: run " << id << " is not in " << store.path().toStdString()
                          << "\n";
                return 2;
            }
            const auto link = store.autoLinkControl(id);
            QString line = u"run %1: "_s.arg(id);
            line += link.control ? u"control run %1"_s.arg(*link.control) : u"no matched control"_s;
            if (!link.linked.isEmpty()) {
                QStringList ids;
                for (qint64 l : link.linked)
                    ids << QString::number(l);
                line += u"; the control of run(s) %1"_s.arg(ids.join(u", "_s));
            }
            lines << line;
            continue;
        }
        const std::optional<qint64> target = unlink ? std::nullopt : std::optional<qint64>(control);
        if (!store.linkControl(id, target, &error)) {
            store.rollbackWrite();
            std::cerr << "recompute link: " << error.toStdString() << "\n";
            return 2;
        }
        if (unlink) {
            lines << u"run %1: no control"_s.arg(id);
            continue;
        }
        const auto check = store.matchCheck(id, control);
        const auto c = store.run(control);
        QString line = u"run %1: control run %2 (%3)"_s.arg(id).arg(control).arg(
            c ? c->controlKindLabel() : QString());
        if (!check.matched)
            line += u"; NOT MATCHED, the report shows no deltas: "_s + check.reasons.join(u"; "_s);
        lines << line;
    }
    if (!store.commitWrite()) {
        std::cerr << "recompute link: " << store.lastError().toStdString() << "\n";
        return 2;
    }
    for (const QString& l : lines)
        std::cout << l.toStdString() << "\n";
    return 0;
}

} // namespace

RS_REGISTER_VERB("link", "give stored runs a control (the run the report compares them with)", linkMain);
