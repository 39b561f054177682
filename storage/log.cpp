// SPDX-License-Identifier: Apache-2.0
#include "storage/log.h"

namespace rs::storage {
Q_LOGGING_CATEGORY(lcStore, "recompute.store", QtInfoMsg)
}
