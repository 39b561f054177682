// SPDX-License-Identifier: Apache-2.0
// The `recompute` CLI's declared interface: every verb (name, summary, what it takes besides options, what
// it does) and every option once (name, value name, help, the verbs that take it, whether it repeats,
// whether it may stand before the verb). The parser (Qt's QCommandLineParser underneath), every verb's
// `--help` / `recompute help VERB` and the top-level usage are made from these tables, so an option is
// added in one row here and read by name in its verbs.
//
// Spellings: every option takes `--opt VALUE` and `--opt=VALUE` (`-opt` too, and `-h` for --help).
// Two kinds are not single values: `--overrides ARGS...` / `--modules SET...` take the arguments up to the
// next one that starts with `--` (`--opt=FIRST MORE...` too), and `--mlm-args ARGS...` takes every argument
// after it (they are Megatron-LM's: only options marked pastMlmArgs, --json, are still ours there).
// Arguments are kept as the bytes they came as (a recipe's text need not be UTF-8 to be reported).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rs::cli {

enum class Arity {
    Flag, // --opt
    Value, // --opt VALUE | --opt=VALUE
    Values, // --opt A B ... (up to the next --word) | --opt=A B ...
    Rest, // --opt ARGS... (every argument after it)
};

struct OptionHelp {
    std::string verb;
    std::string valueName; // "" = the option's own
    std::string help;
};

struct OptionSpec {
    std::string name; // without the dashes: "db"
    std::string valueName; // "PATH"; "" for a flag
    Arity arity = Arity::Flag;
    std::vector<std::string> verbs; // the verbs that take it (after the verb)
    bool repeats = false; // its values add up (all()); an option that does not repeat: the last one counts
    bool global = false; // may also stand before the verb: `recompute --db x.sqlite report`
    std::string help;
    std::vector<OptionHelp> helpFor = {}; // where it means something more precise for one verb
    bool pastMlmArgs = false; // still ours after --mlm-args (Megatron-LM has no flag of that name)
    std::string shortName = {}; // "h"

    bool takenBy(const std::string& verb) const;
    std::string valueNameFor(const std::string& verb) const;
    std::string helpText(const std::string& verb) const;
    std::string spelling(const std::string& verb) const; // "--db PATH", "--modules SET...", "--json"
};

struct VerbSpec {
    std::string name;
    std::string summary; // one line for `recompute --help`
    std::vector<std::string> forms; // what the verb takes, one usage line each (options listed below)
    std::string about; // what it does, exit status included
};

const std::vector<OptionSpec>& optionTable();
const std::vector<VerbSpec>& verbTable();
const OptionSpec* findOption(const std::string& name);
const VerbSpec* findVerb(const std::string& name);
std::vector<const OptionSpec*> optionsOf(const std::string& verb);

// A verb's arguments after parsing. Values are the bytes given.
struct ParsedArgs {
    std::string verb;
    std::map<std::string, std::vector<std::string>> values; // Value: each value; Flag: one "" per use
    std::map<std::string, std::vector<std::vector<std::string>>> groups; // Values: each use's arguments
    std::vector<std::string> positionals; // in order
    std::optional<std::vector<std::string>> rest; // after --mlm-args (nullopt: not given)
    std::vector<std::string> order; // the options given, in order (first use of each)
    bool help = false;

    bool has(const std::string& name) const; // given at all (Flag, Value, Values, Rest)
    std::string value(const std::string& name, const std::string& fallback = {}) const; // the last value
    std::vector<std::string> all(const std::string& name) const;
};

struct ParseResult {
    ParsedArgs args;
    std::string error; // "" when parsed; else one line, without the "recompute VERB: " prefix
};

// Parses `args` (what follows the verb) for `verb` by the table. --help wins over every error.
ParseResult parseVerbArgs(const std::string& verb, const std::vector<std::string>& args);

// --NAME's value as an integer of at least `minimum` (0: "a non-negative", 1: "a positive" integer); empty
// when not given; *error names the option and the value when it is not one.
std::optional<int> intOption(
    const ParsedArgs& args, const std::string& option, int minimum, std::string* error);
// --target-gb: a positive number of GB; *error when it is not.
std::optional<double> targetGbOption(const ParsedArgs& args, std::string* error);
// --control-ms: a positive number of milliseconds; *error when it is not.
std::optional<double> controlMsOption(const ParsedArgs& args, std::string* error);

// What stands before the verb: global options, the verb, and its arguments (the global options the verb
// takes are put before them; one it does not take, --db before `validate`, is accepted and unused).
struct CommandLine {
    std::vector<std::string> globals; // e.g. {"--db", "x.sqlite"}
    std::string verb; // "" when none
    std::vector<std::string> verbArgs;
    bool help = false; // `recompute --help` / `-h` / `help` (helpVerb: `help VERB`)
    std::string helpVerb;
    bool version = false;
    std::string error;
};
CommandLine parseCommandLine(const std::vector<std::string>& argv); // argv without the program name

// The texts made from the tables.
std::string usage(); // `recompute --help`
std::string verbHelp(const std::string& verb); // `recompute VERB --help`, starts "usage: recompute VERB"
std::string usageLine(const std::string& verb); // the first form, for error messages

} // namespace rs::cli
