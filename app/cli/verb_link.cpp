// SPDX-License-Identifier: Apache-2.0
// `recompute link`: give stored runs a control (or take it away), so `recompute report` compares them.
#include <iostream>

#include "storage/store.h"
#include "verb_common.h"
#include "verbs.h"

using namespace Qt::StringLiterals;

namespace {

int linkMain(const std::vector<std::string>& argv)
{
    rs::cli::ParsedArgs args;
    if (const auto done = rs::cli::parseArgs("link", argv, &args))
        return *done;
    const bool automatic = args.has("auto"), haveControl = args.has("control");
    const bool unlink = haveControl && args.value("control") == "none";
    qint64 control = 0;
    if (haveControl && !unlink) {
        const auto id = rs::cli::runIdArg("link", "--control", args.value("control"));
        if (!id)
            return 2;
        control = *id;
    }
    const auto ids = rs::cli::runIdPositionals("link", args);
    if (!ids)
        return 2;
    const QVector<qint64> runs = *ids;
    if (runs.isEmpty() || haveControl == automatic)
        return rs::cli::usageError("link", "give RUN... and either --control RUN|none or --auto");
    rs::storage::Store store;
    if (!rs::cli::openStore("link", args, &store))
        return 2;
    QString error;
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

RS_REGISTER_VERB("link", linkMain);
