// SPDX-License-Identifier: Apache-2.0
#include "shipped_calibrations.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace rs {

std::optional<CalibrationRates> readCalibrationAt(const QString& path, QString* problem)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *problem = QStringLiteral("%1: cannot be read: %2").arg(path, file.errorString());
        return std::nullopt;
    }
    try {
        return calibrationFromJson(nlohmann::json::parse(file.readAll().toStdString()));
    } catch (const CalibrationError& e) {
        *problem = QStringLiteral("%1: %2").arg(path, QString::fromStdString(e.what()));
    } catch (const nlohmann::json::exception& e) {
        *problem = QStringLiteral("%1: not JSON: %2").arg(path, QString::fromStdString(e.what()));
    }
    return std::nullopt;
}

QVector<ShippedCalibration> shippedCalibrations(QStringList* skipped)
{
    QVector<ShippedCalibration> out;
    const QDir dir(QStringLiteral(":/calibration"));
    for (const QString& file : dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name)) {
        const QString path = dir.filePath(file);
        QString problem;
        if (auto rates = readCalibrationAt(path, &problem))
            out << ShippedCalibration { QFileInfo(file).completeBaseName(), path, std::move(*rates) };
        else if (skipped)
            *skipped << problem;
    }
    return out;
}

} // namespace rs
