// SPDX-License-Identifier: Apache-2.0
// Lookups on the generated Megatron-LM flag table (megatron_arg_table.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/megatron_arg_table.h"

namespace rs {

namespace {

std::vector<std::string> splitBar(const char* s)
{
    std::vector<std::string> out;
    std::string current;
    for (const char* p = s; *p; ++p) {
        if (*p == '|') {
            out.push_back(current);
            current.clear();
        } else {
            current.push_back(*p);
        }
    }
    if (!current.empty() || !out.empty())
        out.push_back(current);
    return out;
}

} // namespace

int MegatronArg::minValues() const
{
    const std::string n = nargs;
    if (n == "0" || n == "?" || n == "*")
        return 0;
    if (n.empty() || n == "+")
        return 1;
    return std::atoi(nargs);
}

int MegatronArg::maxValues() const
{
    const std::string n = nargs;
    if (n == "0")
        return 0;
    if (n.empty() || n == "?")
        return 1;
    if (n == "*" || n == "+")
        return -1;
    return std::atoi(nargs);
}

std::vector<std::string> MegatronArg::choiceList() const
{
    return splitBar(choices);
}

const MegatronArg* MegatronArgTable::find(const std::string& flag) const
{
    for (std::size_t i = 0; i < count; ++i) {
        if (flag == args[i].flag)
            return &args[i];
    }
    return nullptr;
}

const ConfigField* MegatronArgTable::field(const std::string& name) const
{
    for (std::size_t i = 0; i < field_count; ++i) {
        if (name == fields[i].name)
            return &fields[i];
    }
    return nullptr;
}

std::vector<std::string> MegatronArgTable::flags() const
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count; ++i)
        out.emplace_back(args[i].flag);
    return out;
}

std::vector<std::string> MegatronArgTable::fieldNames() const
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < field_count; ++i)
        out.emplace_back(fields[i].name);
    return out;
}

bool configFieldAllows(const ConfigField& f, const std::string& kind, const std::string& text)
{
    // Python does not enforce annotations and Bridge's own recipes rely on that: None goes into fields
    // annotated str, and Literal choices are not checked. What is refused is a value of the wrong kind
    // (text for an int, a list for a bool), and a string that names no member of an Enum (Hydra converts
    // enums by member name).
    if (kind == "none")
        return true;
    bool anyString = false;
    std::vector<std::string> enumMembers;
    const std::string kinds = f.kinds;
    std::size_t start = 0;
    while (start <= kinds.size()) {
        const std::size_t comma = kinds.find(',', start);
        const std::string k
            = kinds.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? kinds.size() + 1 : comma + 1;
        if (k == "any" || k == kind)
            return true;
        if (kind == "int" && k == "float")
            return true; // a float field takes 3 as 3.0
        if (k == "str" || k.rfind("literal:", 0) == 0)
            anyString = true;
        if (k.rfind("enum:", 0) == 0) {
            for (const std::string& c : splitBar(k.c_str() + 5))
                enumMembers.push_back(c);
        }
    }
    if (kind != "str")
        return false;
    return anyString || std::find(enumMembers.begin(), enumMembers.end(), text) != enumMembers.end();
}

} // namespace rs
