// SPDX-License-Identifier: Apache-2.0
// The `recompute` CLI's verbs register their code here, one file each, so adding a verb touches no other
// verb's file. What a verb is called, what it does and which options it takes are declared in
// option_table.cpp; a verb reads its options with parseArgs (verb_common.h).
#pragma once

#include <string>
#include <vector>

namespace rs::cli {

// A verb gets the arguments after its name (the global options it takes, given before the verb, first)
// and returns the process exit code: 0 success, 1 the input was read and found wanting (e.g. a rule
// error), 2 the input itself is unusable.
using VerbMain = int (*)(const std::vector<std::string>& args);

struct Verb {
    const char* name; // as in verbTable()
    VerbMain main;
};

std::vector<Verb>& verbRegistry();

struct VerbRegistration {
    VerbRegistration(const char* name, VerbMain main) { verbRegistry().push_back({ name, main }); }
};

} // namespace rs::cli

#define RS_REGISTER_VERB(name, fn)                                                                           \
    static const ::rs::cli::VerbRegistration rsVerbRegistration_##fn                                         \
    {                                                                                                        \
        name, fn                                                                                             \
    }
