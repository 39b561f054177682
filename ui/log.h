// SPDX-License-Identifier: Apache-2.0
// This library's logging category (debug output, off by default): QT_LOGGING_RULES="recompute.ui.debug=true".
#pragma once

#include <QLoggingCategory>

namespace rs::ui {
Q_DECLARE_LOGGING_CATEGORY(lcUi)
}
