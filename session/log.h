// SPDX-License-Identifier: Apache-2.0
// The session library's logging category: QT_LOGGING_RULES="recompute.session.debug=true" shows what the
// sessions plan, reuse and start.
#pragma once

#include <QLoggingCategory>

namespace rs::session {
Q_DECLARE_LOGGING_CATEGORY(lcSession)
}
