// SPDX-License-Identifier: Apache-2.0
#include "storage/store.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

QString Store::guideSamplePath()
{
    return QStringLiteral(RS_SOURCE_DIR "/resources/sample/guide-measurements.json");
}

// First increment: the interface only; the seeding lands next.
int Store::seedGuideSample(const QString&, QString* error)
{
    if (error)
        *error = u"seeding from the guide sample is not implemented yet"_s;
    return -1;
}

} // namespace rs::storage
