// SPDX-License-Identifier: Apache-2.0
#include "logimportdialog.h"

#include <memory>

#include <QCoreApplication>
#include <QFileInfo>
#include <QProgressDialog>

#include "storage/log_import.h"
#include "storage/store.h"

namespace rs::ui {

LogImportSummary importLogsWithProgress(storage::Store* store, const QStringList& paths, QWidget* parent)
{
    LogImportSummary summary;
    qint64 totalBytes = 0;
    for (const QString& p : paths)
        totalBytes += std::max<qint64>(1, QFileInfo(p).size());
    std::unique_ptr<QProgressDialog> progress;
    if (parent) {
        progress = std::make_unique<QProgressDialog>(
            QCoreApplication::translate("LogImport", "Importing training logs…"),
            QCoreApplication::translate("LogImport", "Cancel"), 0, 1000, parent);
        progress->setWindowModality(Qt::WindowModal);
        progress->setMinimumDuration(300);
        progress->setValue(0);
    }
    qint64 doneBefore = 0;
    for (int n = 0; n < paths.size(); ++n) {
        const QString& path = paths[n];
        storage::ImportOptions options;
        if (progress) {
            progress->setLabelText(QCoreApplication::translate("LogImport", "Importing %1 (%2 of %3)…")
                                       .arg(QFileInfo(path).fileName())
                                       .arg(n + 1)
                                       .arg(paths.size()));
            options.progress = [&](qint64 done, qint64) {
                progress->setValue(int((doneBefore + done) * 1000 / std::max<qint64>(1, totalBytes)));
                QCoreApplication::processEvents();
                return !progress->wasCanceled();
            };
        }
        const auto result = storage::importTrainingLog(store, path, options);
        doneBefore += std::max<qint64>(1, QFileInfo(path).size());
        if (result.cancelled) {
            summary.cancelled = true;
            break;
        }
        if (!result.runId) {
            summary.errors << (result.error.isEmpty()
                    ? QCoreApplication::translate("LogImport", "%1: nothing could be imported").arg(path)
                    : result.error);
            continue;
        }
        summary.runIds << result.runId;
        if (result.duplicate) {
            summary.lines << QCoreApplication::translate("LogImport", "%1 was imported before, as run %2")
                                 .arg(QFileInfo(path).fileName())
                                 .arg(result.runId);
            continue;
        }
        QString line = QCoreApplication::translate("LogImport", "%1: run %2")
                           .arg(QFileInfo(path).fileName())
                           .arg(result.runId);
        if (result.controlRunId) {
            ++summary.linked;
            line += QCoreApplication::translate("LogImport", ", compared with run %1")
                        .arg(*result.controlRunId);
        }
        if (result.runsLinkedToIt > 0) {
            summary.linked += result.runsLinkedToIt;
            line += QCoreApplication::translate(
                "LogImport", ", the control of %n run(s)", nullptr, result.runsLinkedToIt);
        }
        summary.lines << line;
    }
    if (progress)
        progress->setValue(1000);
    return summary;
}

} // namespace rs::ui
