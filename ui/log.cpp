// SPDX-License-Identifier: Apache-2.0
#include "log.h"

namespace rs::ui {
Q_LOGGING_CATEGORY(lcUi, "recompute.ui", QtInfoMsg)
}
