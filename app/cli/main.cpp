// SPDX-License-Identifier: Apache-2.0
// `recompute`: the headless twin of Recompute Studio, with git-style verbs. The global options (--db,
// --help, --version) may stand before the verb; option_table.cpp declares them all.
#include <iostream>

#include <QCoreApplication>

#include "option_table.h"
#include "verbs.h"

namespace rs::cli {
std::vector<Verb>& verbRegistry()
{
    static std::vector<Verb> verbs;
    return verbs;
}
} // namespace rs::cli

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("recompute-studio"));
    QCoreApplication::setOrganizationName(QStringLiteral("recompute-studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(RS_VERSION));
    const rs::cli::CommandLine cl
        = rs::cli::parseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
    if (cl.help) {
        if (cl.helpVerb.empty()) {
            std::cout << rs::cli::usage();
            return 0;
        }
        if (!rs::cli::findVerb(cl.helpVerb)) {
            std::cerr << "recompute: help: unknown verb '" << cl.helpVerb << "'\n\n" << rs::cli::usage();
            return 2;
        }
        std::cout << rs::cli::verbHelp(cl.helpVerb);
        return 0;
    }
    if (cl.version) {
        std::cout << "recompute " << RS_VERSION << "\n";
        return 0;
    }
    if (!cl.error.empty()) {
        std::cerr << "recompute: " << cl.error << "\n\n" << rs::cli::usage();
        return 2;
    }
    for (const auto& verb : rs::cli::verbRegistry()) {
        if (cl.verb == verb.name)
            return verb.main(cl.verbArgs);
    }
    std::cerr << "recompute: unknown verb '" << cl.verb << "'\n\n" << rs::cli::usage();
    return 2;
}
