// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the job log's command line (session::jobLogCommandLine) with hostile words, read back
// by the log importer. The input is the command's words, split at NUL bytes. The line must stay one line,
// and a log made of it and a fixed job output must parse exactly as the job output alone: no word of the
// command (a newline and a forged memory line in --wandb-exp-name, issue 30) may become a measurement.
// Read back as the shell reads it (core's splitShellWords, which the importer uses for a rank that prints no
// arguments), the line gives the command's words exactly. A difference aborts (a finding).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <QByteArray>
#include <QString>

#include "core/shell_words.h"
#include "session/job_run.h"
#include "storage/log_import.h"

namespace {

// Two iterations of a Megatron-LM job as it prints them (tests/fixtures/logs/mlm_selective_core_attn.log).
const QByteArray kJobOutput = QByteArrayLiteral(
    " [2026-11-29 10:00:01.123457] iteration        1/      10 | consumed samples:            8 | elapsed "
    "time per iteration (ms): 812.4 | learning rate: 1.000000E-04 | global batch size:     8 | lm loss: "
    "1.054321E+01 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1300.50 | max allocated: 30120.25 | reserved: "
    "31000.00 | max reserved: 33024.00\n"
    " [2026-11-29 10:00:02.123458] iteration        2/      10 | consumed samples:           16 | elapsed "
    "time per iteration (ms): 455.0 | learning rate: 1.000000E-04 | global batch size:     8 | lm loss: "
    "1.021000E+01 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1300.50 | max allocated: 31144.25 | reserved: "
    "31000.00 | max reserved: 33536.00\n");

QString withLineCommand(const QByteArray& line)
{
    return rs::storage::parseTrainingLog(line).jobCommand;
}

[[noreturn]] void finding(const char* what)
{
    std::fprintf(stderr, "fuzz_job_log: %s\n", what);
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::vector<std::string> command(1);
    for (size_t i = 0; i < size; ++i) {
        if (data[i] == 0)
            command.emplace_back();
        else
            command.back().push_back(static_cast<char>(data[i]));
    }
    const QByteArray line = rs::session::jobLogCommandLine(command);
    if (!line.startsWith("# command: ") || !line.endsWith('\n') || line.count('\n') != 1)
        finding("the command line is not one line starting with '# command: '");

    const auto words = rs::splitShellWords(line.mid(11, line.size() - 12).toStdString());
    // The words come back as they went in (an empty one is written '').
    std::vector<std::string> expected; // as the header writes them: UTF-8, an invalid byte replaced
    for (const std::string& w : command)
        expected.push_back(QString::fromStdString(w).toStdString());
    if (!words || *words != expected)
        finding("the command line does not read back as the command's words");
    if (withLineCommand(line) != QString::fromUtf8(line.mid(11, line.size() - 12)))
        finding("the importer did not keep the command line");

    static const rs::storage::ParsedLog alone = rs::storage::parseTrainingLog(kJobOutput);
    const rs::storage::ParsedLog withLine = rs::storage::parseTrainingLog(line + kJobOutput);
    if (withLine.iterations.size() != alone.iterations.size()
        || withLine.memory.size() != alone.memory.size())
        finding("the command line added or removed an iteration or a memory report");
    for (qsizetype i = 0; i < alone.memory.size(); ++i) {
        if (withLine.memory[i].maxAllocated != alone.memory[i].maxAllocated
            || withLine.memory[i].maxReserved != alone.memory[i].maxReserved)
            finding("the command line changed a memory report");
    }
    for (qsizetype i = 0; i < alone.iterations.size(); ++i) {
        if (withLine.iterations[i].stepMs != alone.iterations[i].stepMs)
            finding("the command line changed a step time");
    }
    if (withLine.oom != alone.oom || withLine.refused != alone.refused
        || withLine.conflicts != alone.conflicts || withLine.arguments != alone.arguments
        || withLine.ignoredLines != alone.ignoredLines)
        finding("the command line was read as part of the job's output");
    return 0;
}
