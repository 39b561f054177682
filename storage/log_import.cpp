// SPDX-License-Identifier: Apache-2.0
#include "storage/log_import.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

// First increment: the interface only; the parser lands next.
ParsedLog parseTrainingLog(const QByteArray&)
{
    ParsedLog log;
    log.format = u"unknown"_s;
    return log;
}

ImportResult importTrainingLog(Store*, const QString& path, const ImportOptions&)
{
    ImportResult r;
    r.error = path + u": log import is not implemented yet"_s;
    return r;
}

} // namespace rs::storage
