// SPDX-License-Identifier: Apache-2.0
// THE profile table (profiles.h). The facts are docs/rules.md#profiles and the rule sections of
// docs/rules.md: R11 for the labels, R14 for the GatedDeltaNet variants, R20 / appendix G for the
// hyper-connections field, R36 / G7 for full recompute under expert-parallel overlap.
#include "core/profiles.h"

#include <stdexcept>

namespace rs {

namespace {

const std::vector<std::string> kPinLabels
    = { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", "gdn_norm_out" };

} // namespace

const std::vector<ProfileInfo>& profileTable()
{
    static const std::vector<ProfileInfo> table = {
        { Profile::BridgePin, "bridge-pin", "2a75ac12c54ba6a42b34024756820bf819a2e25f",
            "067f987df03b8355b03192d88d70f1709fedf51a",
            "the Megatron Core that Megatron-Bridge HEAD pins (3rdparty/Megatron-LM)", nullptr, false,
            kPinLabels, { "gdn", "gdn2", "gated_delta_net" }, "", false },
        { Profile::Guide, "guide", "24bad8e677d22625d86ef2a54c9506b6e4992c93",
            "067f987df03b8355b03192d88d70f1709fedf51a",
            "the revision of the guide's Moonlight / Nemotron measurements", nullptr, false, kPinLabels,
            { "gated_delta_net" }, "", false },
        { Profile::Main, "main", "d98e8a64ddf34856e74b24714e3bedb2f5a39553",
            "067f987df03b8355b03192d88d70f1709fedf51a", "Megatron-LM main", nullptr, true,
            { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts",
                "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc" },
            { "gdn", "gdn2", "gated_delta_net" }, "enable_mhc_connections", false },
        { Profile::Dev, "dev", "d48bd6be0a85cc0d6d3cc71e8750cf357cc6bdb1",
            "067f987df03b8355b03192d88d70f1709fedf51a",
            "the development branch (mhc / gdn labels, full recompute under EP overlap)", nullptr, false,
            { "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", "mhc",
                "gdn", "gdn_norm_out" },
            { "gated_delta_net" }, "enable_hyper_connections", true },
    };
    return table;
}

std::size_t profileIndex(Profile p)
{
    const auto& t = profileTable();
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i].id == p)
            return i;
    throw std::logic_error("a Profile enumerator without a row in the profile table (profiles.cpp)");
}

const ProfileInfo& profileInfo(Profile p)
{
    return profileTable()[profileIndex(p)];
}

const ProfileInfo* findProfileInfo(std::string_view name)
{
    for (const auto& row : profileTable())
        if (name == row.name)
            return &row;
    return nullptr;
}

const ProfileInfo& referenceProfile()
{
    for (const auto& row : profileTable())
        if (row.reference)
            return row;
    return profileTable().front();
}

bool profileIsOrIsBasedOn(Profile p, std::string_view name)
{
    const ProfileInfo* row = &profileInfo(p);
    for (std::size_t hops = 0; row && hops <= profileTable().size(); ++hops) {
        if (name == row->name)
            return true;
        row = row->based_on ? findProfileInfo(row->based_on) : nullptr;
    }
    return false;
}

} // namespace rs
