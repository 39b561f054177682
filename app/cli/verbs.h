// SPDX-License-Identifier: Apache-2.0
// The `recompute` CLI's verbs register themselves here, one file each, so adding a verb touches no
// other verb's file.
#pragma once

#include <string>
#include <vector>

namespace rs::cli {

// A verb gets the arguments after its name and returns the process exit code:
// 0 success, 1 the input was read and found wanting (e.g. a rule error), 2 the input itself is unusable.
using VerbMain = int (*)(const std::vector<std::string>& args);

struct Verb {
    const char* name;
    const char* summary; // one line for `recompute --help`
    VerbMain main;
};

std::vector<Verb>& verbRegistry();

struct VerbRegistration {
    VerbRegistration(const char* name, const char* summary, VerbMain main)
    {
        verbRegistry().push_back({ name, summary, main });
    }
};

} // namespace rs::cli

#define RS_REGISTER_VERB(name, summary, fn)                                                                  \
    static const ::rs::cli::VerbRegistration rsVerbRegistration_##fn                                         \
    {                                                                                                        \
        name, summary, fn                                                                                    \
    }
