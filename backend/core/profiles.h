// SPDX-License-Identifier: Apache-2.0
// The profile table: the Megatron revisions the project reads its rules, flag tables and recompute labels
// at, one row per profile (profiles.cpp), and every per-profile fact the code decides on. Code that
// differs by profile reads a row here instead of switching on the Profile enumerator.
//
// Adding a profile: an enumerator in recipe.h's Profile, one row in profiles.cpp, the flag table of its
// commit in megatron_arg_table.cpp (generated), and in the rule table (rules_table.cpp) a source only where
// the new commit's line differs from the profile it is based on; docs/rules.md says how.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/recipe.h"

namespace rs {

struct ProfileInfo {
    Profile id;
    const char* name; // as recipes and the command line spell it
    const char* megatron_commit; // Megatron-LM (Megatron Core), all 40 hex digits
    const char* bridge_commit; // the Megatron-Bridge revision its Bridge rules are read at
    const char* role; // what the revision is, in one line
    // A rule that lists profiles exists here when it lists this profile or the one it is based on (and so
    // on up); a source this profile does not give is the based-on profile's, cited at that commit.
    // nullptr: read on its own (every rule lists it by name where it exists).
    const char* based_on;
    // The profile whose line a rule cites where neither a profile nor its bases give one (the reference
    // reads main first). Exactly one row sets it.
    bool reference = false;
    std::vector<std::string> recompute_labels; // R11's allowed set, in the source's order
    // experimental_attention_variant values under which gdn_norm_out is accepted (R14).
    std::vector<std::string> gdn_variants;
    // The field that turns hyper-connections (the 'mhc' label) on: enable_mhc_connections (main),
    // enable_hyper_connections (dev); empty where the revision has none.
    std::string hyper_connections_flag;
    bool full_recompute_under_ep_overlap = false; // dev allows it under conditions (docs/rules.md#g7)

    std::string shortCommit() const { return std::string(megatron_commit).substr(0, 8); }
    std::string shortBridgeCommit() const { return std::string(bridge_commit).substr(0, 8); }
};

// Every profile, in the order the command line and the studio list them.
const std::vector<ProfileInfo>& profileTable();
const ProfileInfo& profileInfo(Profile p);
const ProfileInfo* findProfileInfo(std::string_view name);
std::size_t profileIndex(Profile p); // its row in profileTable()
const ProfileInfo& referenceProfile();
// Is `p` the profile named `name`, or based on it (directly or further up)?
bool profileIsOrIsBasedOn(Profile p, std::string_view name);

} // namespace rs
