// SPDX-License-Identifier: Apache-2.0
#include "session/log.h"

namespace rs::session {
Q_LOGGING_CATEGORY(lcSession, "recompute.session", QtInfoMsg)
}
