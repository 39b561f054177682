// SPDX-License-Identifier: Apache-2.0
// The advisor's output for `recompute advise` and `recompute sweep`: text for people or JSON for tools.
// The advice itself (candidates from the store's comparison rows, rs::adviseRecompute's choice) is
// storage/advice.h's, shared with the studio.
#pragma once

#include <optional>
#include <vector>

#include <QByteArray>
#include <QJsonObject>
#include <QVector>

#include "core/advisor.h"
#include "storage/advice.h"
#include "storage/store.h"

namespace rs::cli {

// The GUI-free part lives in storage/advice.h (the studio's runs page uses it too).
using storage::adviseOnComparison;
using storage::recipeMemoryTarget;
using storage::recomputeOverrides;
using storage::StoredAdvice;

QByteArray adviceText(const StoredAdvice& a);
QJsonObject adviceJson(const StoredAdvice& a);

} // namespace rs::cli
