// SPDX-License-Identifier: Apache-2.0
// Megatron-LM command-line flags (pretrain_gpt.py's argparse spellings) to and from a recipe.
//
// Reading takes a whole command line: an optional launcher with its options and the script
// (torchrun --nproc-per-node 8 pretrain_gpt.py, python -m torch.distributed.run ..., srun ..., python
// pretrain_gpt.py: every word up to the first *.py, kept in Recipe::launch_command), then every flag of the
// profile's megatron/training/arguments.py (megatron_arg_table.h), each with argparse's arity (nargs) and
// choices; `--flag value` and `--flag=value`. A flag Megatron-LM does not have is a RecipeError naming
// the nearest flag; one it has that no field models is kept verbatim in Recipe::extra_flags. It starts from
// Megatron-LM's defaults (frontEndDefaults(MegatronFlags)) and derives what Megatron-LM derives:
// - --swiglu sets gated_linear_unit=true and activation_func=silu; --squared-relu activation_func=
// squared_relu (with --swiglu a RecipeError: Megatron-LM asserts); --disable-bias-linear
// add_bias_linear=false;
// - --hybrid-override-pattern (deprecated) reads as --hybrid-layer-pattern; both at once is a RecipeError (an
//   assertion of validate_args); --linear-attention-freq takes the --moe-layer-freq grammar;
// - --num-query-groups counts only with --group-query-attention (alone, that means 1 group); without it
//   Megatron-LM ignores the groups, which is a RecipeError here rather than a silent MHA model;
// - --num-layers-per-virtual-pipeline-stage N becomes virtual_pipeline_model_parallel_size =
//   num_layers (+1 for each of --account-for-embedding/loss-in-pipeline-split) / pipeline_model_parallel_size
//   / N; with --decoder-first/last-pipeline-num-layers it is a RecipeError (validate_args asserts);
// - --pipeline-model-parallel-layout gives virtual_pipeline_model_parallel_size = its stages / PP (None for
//   one; left unset where PP does not divide them: M10), and with another spelling of the virtual stages it
//   is a RecipeError (validate_args asserts);
// - with --multi-latent-attention, an absent --q-lora-rank is None and an absent --kv-lora-rank is 32;
// - --attention-backend takes Megatron's enum: local and unfused -> unfused, auto -> fused;
// - grad_reduce_in_fp32 as validate_args sets it: bf16 with --main-grads-dtype fp32 turns it on unless
//   --grad-reduce-in-bf16; --accumulate-allreduce-grads-in-fp32 turns it on;
// - bias_activation_fusion as core_transformer_config_from_args derives it: under --swiglu on unless
//   --no-bias-swiglu-fusion, else on unless --no-bias-gelu-fusion or --disable-bias-linear;
// - data_parallel_size from torchrun's --nproc-per-node x --nnodes (or a WORLD_SIZE=N word of the launcher,
//   as `env RANK=r WORLD_SIZE=N python3 pretrain_gpt.py` sets it) over TP x PP x CP;
// - --checkpoint-activations is stored (checkpoint_activations_flag) so the rules engine raises M1, and
//   --recompute-activations is stored as recompute_activations for M2.
//
// Writing gives what differs from Megatron-LM's defaults or was set explicitly, always --seq-length,
// --micro-batch-size and --attention-backend, then Recipe::extra_flags; flags the profile's Megatron-LM
// lacks are not written (--cpu-offloading: Megatron-LM derives it from --cpu-offloading-num-layers), and a
// value outside the flag's choices at the profile is a RecipeError (--fp4-format nvfp4 where only e2m1
// is allowed). recipeFromMegatronFlags(recipeToMegatronFlags(r)) == r except for these, which have no flag:
// - name, profile, memory_target_gb, warmup_iters, te_version, gpu_compute_capability (ours); a non-MLA
//   recipe's q_lora_rank=None;
// - mamba_chunk_size (Bridge's field; Megatron-LM's mixer keeps its default 128);
// - deallocate_pipeline_outputs=false (Megatron-LM always sets it True);
// - an empty list for a list flag (argparse nargs='+' cannot say []): cuda_graph_modules=[] and
//   cuda_graph_scope=[] come back unset, and recompute_modules=[] without selective granularity too;
// - virtual_pipeline_model_parallel_size beside a pipeline_model_parallel_layout: Megatron-LM takes it from
//   the layout, so it is not written and comes back as the layout's stages / PP.
// And these throw RecipeError instead of writing something that trains differently:
// - recompute_granularity=selective with recompute_modules=[] (Megatron-LM cannot say it: docs/rules.md,
//   "Seen running Megatron Core main");
// - mixed_precision set (a Bridge recipe name; apply B8 first);
// - gated_linear_unit/activation_func other than SwiGLU or plain GeLU;
// - bias_activation_fusion=true for plain GeLU without linear biases (Megatron-LM turns it off).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/recipe.h"

namespace rs {

std::vector<std::string> recipeToMegatronFlags(const Recipe& r);
// Recipe::launch_command (or torchrun --nproc-per-node <world size> pretrain_gpt.py, pretrain_hybrid.py for
// a hybrid stack) and the flags.
std::vector<std::string> recipeToMegatronCommand(const Recipe& r);
// Errors name the flag: RecipeError::where is "flag --seq-length", field the recipe key. The default base
// is Megatron-LM's defaults at the bridge-pin profile; a base's profile picks the flag table.
Recipe recipeFromMegatronFlags(const std::vector<std::string>& args);
Recipe recipeFromMegatronFlags(const std::vector<std::string>& args, Recipe base);

} // namespace rs
