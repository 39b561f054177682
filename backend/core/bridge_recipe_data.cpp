// SPDX-License-Identifier: Apache-2.0
// The Bridge recipe table (RS_BRIDGE_RECIPES_JSON, resources/bridge/recipes-*.json) linked into the program
// as read-only bytes, ended by a NUL, so no file has to travel with the worker or the CLI. The build passes
// the file's SHA-256 too (RS_BRIDGE_RECIPES_SHA256), so a compiler cache never serves an object of other
// bytes.
#if !defined(RS_BRIDGE_RECIPES_JSON) || !defined(RS_BRIDGE_RECIPES_SHA256)
#error "the build names the recipe table (backend/core/CMakeLists.txt)"
#endif

__asm__(".section .rodata.rs_bridge_recipes,\"a\",@progbits\n"
        ".global rs_bridge_recipes_json\n"
        ".hidden rs_bridge_recipes_json\n"
        ".type rs_bridge_recipes_json, @object\n"
        ".balign 16\n"
        "rs_bridge_recipes_json:\n"
        ".incbin \"" RS_BRIDGE_RECIPES_JSON "\"\n"
        ".byte 0\n"
        ".size rs_bridge_recipes_json, . - rs_bridge_recipes_json\n"
        ".previous\n");

// The digest, kept in the object so that the cache key above is what the bytes are.
extern "C" const char rs_bridge_recipes_sha256[] = RS_BRIDGE_RECIPES_SHA256;
