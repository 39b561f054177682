// SPDX-License-Identifier: Apache-2.0
#include "core/recipe.h"

namespace rs {

const char* profileName(Profile profile)
{
    switch (profile) {
    case Profile::BridgePin:
        return "bridge-pin";
    case Profile::Guide:
        return "guide";
    case Profile::Main:
        return "main";
    case Profile::Dev:
        return "dev";
    }
    return "bridge-pin";
}

std::optional<Profile> profileFromName(const std::string& name)
{
    for (Profile p : allProfiles()) {
        if (name == profileName(p))
            return p;
    }
    return std::nullopt;
}

const std::vector<Profile>& allProfiles()
{
    static const std::vector<Profile> profiles = { Profile::BridgePin, Profile::Guide, Profile::Main, Profile::Dev };
    return profiles;
}

} // namespace rs
