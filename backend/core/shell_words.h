// SPDX-License-Identifier: Apache-2.0
// A command line as a POSIX shell (bash) splits it into words: plain words, '...' (a single quote inside
// written '\''), "..." (\\, \", \$ and \` escaped), $'...' (bash's ANSI-C quoting: \n \r \t \\ \' \" \xHH
// \0NN), and a backslash outside quotes. No expansion of variables, globs or substitutions: what a job log's
// "# command: " line holds (session/job_run.h jobLogCommandLine writes it this way) reads back word for word.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rs {

// The words of `line`; nullopt when a quote is left open.
std::optional<std::vector<std::string>> splitShellWords(std::string_view line);

} // namespace rs
