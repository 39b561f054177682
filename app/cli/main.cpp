// SPDX-License-Identifier: Apache-2.0
// `recompute`: the headless twin of Recompute Studio, with git-style verbs.
#include <algorithm>
#include <cstring>
#include <iostream>

#include <QCoreApplication>

#include "verbs.h"

namespace rs::cli {
std::vector<Verb>& verbRegistry()
{
    static std::vector<Verb> verbs;
    return verbs;
}
} // namespace rs::cli

static void printUsage(std::ostream& out)
{
    auto verbs = rs::cli::verbRegistry();
    std::sort(verbs.begin(), verbs.end(),
        [](const rs::cli::Verb& a, const rs::cli::Verb& b) { return std::strcmp(a.name, b.name) < 0; });
    out << "usage: recompute <verb> [args...]   (recompute <verb> --help for each verb)\n\nverbs:\n";
    for (const auto& verb : verbs)
        out << "  " << verb.name << std::string(10 - std::min<size_t>(9, std::strlen(verb.name)), ' ')
            << verb.summary << "\n";
}

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("recompute-studio"));
    QCoreApplication::setOrganizationName(QStringLiteral("recompute-studio"));
    QCoreApplication::setApplicationVersion(QStringLiteral(RS_VERSION));
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")
        || !std::strcmp(argv[1], "help")) {
        printUsage(argc < 2 ? std::cerr : std::cout);
        return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "--version")) {
        std::cout << "recompute " << RS_VERSION << "\n";
        return 0;
    }
    const std::string verbName = argv[1];
    for (const auto& verb : rs::cli::verbRegistry()) {
        if (verbName == verb.name)
            return verb.main(std::vector<std::string>(argv + 2, argv + argc));
    }
    std::cerr << "recompute: unknown verb '" << verbName << "'\n\n";
    printUsage(std::cerr);
    return 2;
}
