// SPDX-License-Identifier: Apache-2.0
// The calibration records shipped with the program (resources/calibration/*.json, compiled into the
// executables that link rs_resources under ":/calibration/"), and reading a record at a path Qt opens: one
// place for the studio's Plan tab, `recompute-studio --plan NAME` and `recompute plan --rates NAME`.
#pragma once

#include <optional>

#include <QString>
#include <QStringList>
#include <QVector>

#include "core/calibration.h"

namespace rs {

struct ShippedCalibration {
    QString name; // the file name without ".json": "h200-bf16"
    QString path; // ":/calibration/h200-bf16.json"
    CalibrationRates rates;
};

// The record at `path` (a file, or a resource path); nullopt with the path, the field and the reason in
// `problem` when it cannot be read or is not a record.
std::optional<CalibrationRates> readCalibrationAt(const QString& path, QString* problem);

// Every shipped record that reads, by name; one that does not is left out, its problem added to `skipped`.
QVector<ShippedCalibration> shippedCalibrations(QStringList* skipped = nullptr);

} // namespace rs
