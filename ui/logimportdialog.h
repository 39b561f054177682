// SPDX-License-Identifier: Apache-2.0
// The GUI's import of training logs: several files at once, with a QProgressDialog (bytes read, file by
// file, cancellable), each run linked as `recompute import` links it (the logs of one shape compare
// themselves against their run without recompute).
#pragma once

#include <QStringList>
#include <QVector>

class QWidget;

namespace rs::storage {
class Store;
}

namespace rs::ui {

struct LogImportSummary {
    QVector<qint64> runIds; // imported (or imported before), in the order of the files
    QStringList errors; // one per file that could not be imported
    QStringList lines; // what happened to each file, for the user
    int linked = 0; // runs linked to a control
    bool cancelled = false;
};

// Imports `paths` into `store`, showing progress in a modal QProgressDialog over `parent` (none when
// `parent` is null, as in tests).
LogImportSummary importLogsWithProgress(storage::Store* store, const QStringList& paths, QWidget* parent);

} // namespace rs::ui
