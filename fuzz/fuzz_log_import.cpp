// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the Megatron-LM / Megatron Bridge training-log parser (parseTrainingLog), on the raw
// bytes of a log.
#include <cstddef>
#include <cstdint>

#include <QByteArray>

#include "storage/log_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QByteArray text(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    const rs::storage::ParsedLog log = rs::storage::parseTrainingLog(text);
    (void)log;
    return 0;
}
