// SPDX-License-Identifier: Apache-2.0
// Megatron-LM command-line flags (pretrain_gpt.py's argparse spellings) to and from a recipe.
//
// Reading accepts `--flag value` and `--flag=value`; list flags (--recompute-modules, --cuda-graph-modules,
// --cuda-graph-scope, --offload-modules) take the following arguments up to the next `--flag`. Flags not
// given keep the base recipe's values, except where Megatron-LM itself derives a value:
// - --swiglu sets gated_linear_unit=true and activation_func=silu;
// - --num-query-groups counts only with --group-query-attention (alone, that means 1 group); without it
//   Megatron-LM ignores the groups, which is a RecipeError here rather than a silent MHA model;
// - --num-layers-per-virtual-pipeline-stage N becomes virtual_pipeline_model_parallel_size =
//   num_layers / pipeline_model_parallel_size / N (--num-virtual-stages-per-pipeline-rank and
//   --virtual-pipeline-model-parallel-size give it directly);
// - with --multi-latent-attention, an absent --q-lora-rank is None and an absent --kv-lora-rank is 32
//   (Megatron-LM's argparse defaults, unlike MLATransformerConfig's 512/512);
// - --attention-backend takes Megatron's enum: local and unfused -> unfused, auto -> fused;
// - --checkpoint-activations is stored (checkpoint_activations_flag) so the rules engine raises M1, and
//   --recompute-activations is stored as recompute_activations for M2;
// - --no-check-for-nan-in-loss-and-grad sets check_for_nan_in_loss=false.
// Flags that change neither activation memory nor recompute (--lr, --data-path, --save, ...) are ignored
// with their values (knownIrrelevantFlags); any other flag is a RecipeError naming the nearest known flag.
//
// Writing gives only what differs from Recipe{} (MLA ranks always, see above), and
// recipeFromMegatronFlags(recipeToMegatronFlags(r)) == r except for these, which have no flag:
// - not written, they come back at the base recipe's values: name, profile, memory_target_gb,
//   warmup_iters, te_version (ours); a non-MLA recipe's q_lora_rank=None;
// - an empty list for a list flag (argparse nargs='+' cannot say []): cuda_graph_modules=[] and
//   cuda_graph_scope=[] come back unset (R26 turns the unset default "full" into [] anyway), and
//   recompute_modules=[] without selective granularity comes back unset (it is not read then).
// And these throw RecipeError instead of writing something that trains differently:
// - recompute_granularity=selective with recompute_modules=[] (megatron-rules.md (i)): Megatron-LM's
//   --recompute-modules needs at least one label; as flags the no-recompute control is the absence of
//   --recompute-granularity;
// - mixed_precision set (a Bridge recipe name; apply B8 first);
// - gated_linear_unit/activation_func other than SwiGLU or plain GeLU.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/recipe.h"

namespace rs {

std::vector<std::string> recipeToMegatronFlags(const Recipe& r);
// Errors name the flag: RecipeError::where is "flag --seq-length", field the recipe key.
Recipe recipeFromMegatronFlags(const std::vector<std::string>& args, Recipe base = Recipe {});
// Flags accepted and ignored, each with the number of values it takes: 0, 1, or -1 (all up to the next flag).
const std::vector<std::pair<std::string, int>>& knownIrrelevantFlags();

} // namespace rs
