// SPDX-License-Identifier: Apache-2.0
#include "launch/log.h"

namespace rs::launch {
Q_LOGGING_CATEGORY(lcLaunch, "recompute.launch", QtInfoMsg)
}
