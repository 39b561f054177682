// SPDX-License-Identifier: Apache-2.0
// Megatron-LM's argparse spellings of the recipe. Most flags set one recipe field and go through the JSON
// reader's field access (so type and allowed-value messages are shared); the few that Megatron-LM derives
// (--swiglu, --group-query-attention, --num-layers-per-virtual-pipeline-stage, MLA's argparse defaults,
// --attention-backend's enum) are resolved after the whole command line is read, as Megatron-LM does.
#include "core/megatron_flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/megatron_arg_table.h"
#include "core/pipeline_layout.h"
#include "core/recipe_json.h"

namespace rs {

namespace {

enum class Arity { Switch, Value, List, OptionalList };

struct FlagDef {
    const char* flag;
    Arity arity;
    const char* field; // the recipe key it sets; "" where the flag is resolved specially
};

// In the order recipeToMegatronFlags writes them.
const std::vector<FlagDef>& flagDefs()
{
    static const std::vector<FlagDef> defs = {
        { "--num-layers", Arity::Value, "num_layers" },
        { "--hidden-size", Arity::Value, "hidden_size" },
        { "--ffn-hidden-size", Arity::Value, "ffn_hidden_size" },
        { "--num-attention-heads", Arity::Value, "num_attention_heads" },
        { "--group-query-attention", Arity::Switch, "" },
        { "--num-query-groups", Arity::Value, "" },
        { "--kv-channels", Arity::Value, "kv_channels" },
        { "--seq-length", Arity::Value, "seq_length" },
        { "--micro-batch-size", Arity::Value, "micro_batch_size" },
        { "--global-batch-size", Arity::Value, "global_batch_size" },
        { "--normalization", Arity::Value, "normalization" },
        { "--swiglu", Arity::Switch, "" },
        { "--squared-relu", Arity::Switch, "" },
        { "--use-fused-weighted-squared-relu", Arity::Switch, "use_fused_weighted_squared_relu" },
        { "--cross-entropy-loss-fusion", Arity::Switch, "cross_entropy_loss_fusion" },
        { "--cross-entropy-fusion-impl", Arity::Value, "cross_entropy_fusion_impl" },
        { "--vocab-size", Arity::Value, "vocab_size" },
        { "--make-vocab-size-divisible-by", Arity::Value, "make_vocab_size_divisible_by" },
        { "--disable-bias-linear", Arity::Switch, "" },
        { "--no-bias-swiglu-fusion", Arity::Switch, "" },
        { "--no-bias-gelu-fusion", Arity::Switch, "" },
        { "--add-qkv-bias", Arity::Switch, "add_qkv_bias" },
        { "--qk-layernorm", Arity::Switch, "qk_layernorm" },
        { "--position-embedding-type", Arity::Value, "position_embedding_type" },
        { "--max-position-embeddings", Arity::Value, "max_position_embeddings" },
        { "--rotary-percent", Arity::Value, "rotary_percent" },
        { "--rotary-base", Arity::Value, "rotary_base" },
        { "--untie-embeddings-and-output-weights", Arity::Switch, "untie_embeddings_and_output_weights" },
        { "--attention-softmax-in-fp32", Arity::Switch, "attention_softmax_in_fp32" },
        { "--apply-query-key-layer-scaling", Arity::Switch, "apply_query_key_layer_scaling" },
        { "--no-masked-softmax-fusion", Arity::Switch, "" },
        { "--no-gradient-accumulation-fusion", Arity::Switch, "" },
        { "--no-create-attention-mask-in-dataloader", Arity::Switch, "" },
        { "--multi-latent-attention", Arity::Switch, "multi_latent_attention" },
        { "--q-lora-rank", Arity::Value, "q_lora_rank" },
        { "--kv-lora-rank", Arity::Value, "kv_lora_rank" },
        { "--qk-head-dim", Arity::Value, "qk_head_dim" },
        { "--qk-pos-emb-head-dim", Arity::Value, "qk_pos_emb_head_dim" },
        { "--v-head-dim", Arity::Value, "v_head_dim" },
        { "--experimental-attention-variant", Arity::Value, "experimental_attention_variant" },
        { "--dsa-indexer-n-heads", Arity::Value, "dsa_indexer_n_heads" },
        { "--dsa-indexer-head-dim", Arity::Value, "dsa_indexer_head_dim" },
        { "--dsa-indexer-topk", Arity::Value, "dsa_indexer_topk" },
        { "--dsa-indexer-topk-freq", Arity::Value, "dsa_indexer_topk_freq" },
        { "--dsa-indexer-skip-topk-offset", Arity::Value, "dsa_indexer_skip_topk_offset" },
        { "--dsa-indexer-loss-coeff", Arity::Value, "dsa_indexer_loss_coeff" },
        { "--dsa-indexer-use-sparse-loss", Arity::Switch, "dsa_indexer_use_sparse_loss" },
        { "--dsa-kernel-backend", Arity::Value, "dsa_kernel_backend" },
        { "--linear-attention-freq", Arity::Value, "" },
        { "--linear-conv-kernel-dim", Arity::Value, "linear_conv_kernel_dim" },
        { "--linear-key-head-dim", Arity::Value, "linear_key_head_dim" },
        { "--linear-value-head-dim", Arity::Value, "linear_value_head_dim" },
        { "--linear-num-key-heads", Arity::Value, "linear_num_key_heads" },
        { "--linear-num-value-heads", Arity::Value, "linear_num_value_heads" },
        { "--hybrid-layer-pattern", Arity::Value, "hybrid_layer_pattern" },
        { "--hybrid-override-pattern", Arity::Value, "" },
        { "--is-hybrid-model", Arity::Switch, "is_hybrid_model" },
        { "--mamba-num-heads", Arity::Value, "mamba_num_heads" },
        { "--mamba-head-dim", Arity::Value, "mamba_head_dim" },
        { "--mamba-state-dim", Arity::Value, "mamba_state_dim" },
        { "--mamba-num-groups", Arity::Value, "mamba_num_groups" },
        { "--num-experts", Arity::Value, "num_moe_experts" },
        { "--moe-router-topk", Arity::Value, "moe_router_topk" },
        { "--moe-ffn-hidden-size", Arity::Value, "moe_ffn_hidden_size" },
        { "--moe-grouped-gemm", Arity::Switch, "moe_grouped_gemm" },
        { "--moe-shared-expert-intermediate-size", Arity::Value, "moe_shared_expert_intermediate_size" },
        { "--moe-shared-expert-overlap", Arity::Switch, "moe_shared_expert_overlap" },
        { "--moe-latent-size", Arity::Value, "moe_latent_size" },
        { "--moe-layer-freq", Arity::Value, "" },
        { "--moe-token-dispatcher-type", Arity::Value, "moe_token_dispatcher_type" },
        { "--moe-input-jitter-eps", Arity::Value, "moe_input_jitter_eps" },
        { "--mtp-num-layers", Arity::Value, "mtp_num_layers" },
        { "--mtp-use-repeated-layer", Arity::Switch, "mtp_use_repeated_layer" },
        { "--mtp-hybrid-override-pattern", Arity::Value, "mtp_hybrid_override_pattern" },
        { "--moe-aux-loss-coeff", Arity::Value, "moe_aux_loss_coeff" },
        { "--moe-router-load-balancing-type", Arity::Value, "moe_router_load_balancing_type" },
        { "--moe-expert-capacity-factor", Arity::Value, "moe_expert_capacity_factor" },
        { "--enable-mhc-connections", Arity::Switch, "enable_mhc_connections" },
        { "--enable-hyper-connections", Arity::Switch, "enable_hyper_connections" },
        { "--mhc-recompute-layer-num", Arity::Value, "mhc_recompute_layer_num" },
        { "--tensor-model-parallel-size", Arity::Value, "tensor_model_parallel_size" },
        { "--pipeline-model-parallel-size", Arity::Value, "pipeline_model_parallel_size" },
        { "--num-virtual-stages-per-pipeline-rank", Arity::Value, "virtual_pipeline_model_parallel_size" },
        { "--virtual-pipeline-model-parallel-size", Arity::Value, "virtual_pipeline_model_parallel_size" },
        { "--num-layers-per-virtual-pipeline-stage", Arity::Value, "" },
        { "--pipeline-model-parallel-layout", Arity::Value, "pipeline_model_parallel_layout" },
        { "--decoder-first-pipeline-num-layers", Arity::Value, "num_layers_in_first_pipeline_stage" },
        { "--decoder-last-pipeline-num-layers", Arity::Value, "num_layers_in_last_pipeline_stage" },
        { "--account-for-embedding-in-pipeline-split", Arity::Switch,
            "account_for_embedding_in_pipeline_split" },
        { "--account-for-loss-in-pipeline-split", Arity::Switch, "account_for_loss_in_pipeline_split" },
        { "--context-parallel-size", Arity::Value, "context_parallel_size" },
        { "--expert-model-parallel-size", Arity::Value, "expert_model_parallel_size" },
        { "--expert-tensor-parallel-size", Arity::Value, "expert_tensor_parallel_size" },
        { "--sequence-parallel", Arity::Switch, "sequence_parallel" },
        { "--use-distributed-optimizer", Arity::Switch, "use_distributed_optimizer" },
        { "--accumulate-allreduce-grads-in-fp32", Arity::Switch, "" },
        { "--grad-reduce-in-bf16", Arity::Switch, "" },
        { "--main-grads-dtype", Arity::Value, "main_grads_dtype" },
        { "--main-params-dtype", Arity::Value, "main_params_dtype" },
        { "--exp-avg-dtype", Arity::Value, "exp_avg_dtype" },
        { "--exp-avg-sq-dtype", Arity::Value, "exp_avg_sq_dtype" },
        { "--use-precision-aware-optimizer", Arity::Switch, "use_precision_aware_optimizer" },
        { "--bf16", Arity::Switch, "bf16" },
        { "--fp16", Arity::Switch, "fp16" },
        { "--fp8-format", Arity::Value, "fp8" },
        { "--fp8-recipe", Arity::Value, "fp8_recipe" },
        { "--fp8-param-gather", Arity::Switch, "fp8_param_gather" },
        { "--fp4-format", Arity::Value, "fp4" },
        { "--attention-backend", Arity::Value, "" },
        { "--transformer-impl", Arity::Value, "transformer_impl" },
        { "--attention-dropout", Arity::Value, "attention_dropout" },
        { "--hidden-dropout", Arity::Value, "hidden_dropout" },
        { "--cuda-graph-impl", Arity::Value, "cuda_graph_impl" },
        { "--cuda-graph-modules", Arity::List, "cuda_graph_modules" },
        { "--cuda-graph-scope", Arity::List, "cuda_graph_scope" },
        { "--enable-cuda-graph", Arity::Switch, "enable_cuda_graph" },
        { "--external-cuda-graph", Arity::Switch, "external_cuda_graph" },
        { "--te-rng-tracker", Arity::Switch, "use_te_rng_tracker" },
        { "--cpu-offloading", Arity::Switch, "cpu_offloading" },
        { "--cpu-offloading-num-layers", Arity::Value, "cpu_offloading_num_layers" },
        { "--fine-grained-activation-offloading", Arity::Switch, "fine_grained_activation_offloading" },
        { "--offload-modules", Arity::OptionalList, "offload_modules" },
        { "--checkpoint-activations", Arity::Switch, "" },
        { "--recompute-activations", Arity::Switch, "recompute_activations" },
        { "--recompute-granularity", Arity::Value, "recompute_granularity" },
        { "--recompute-method", Arity::Value, "recompute_method" },
        { "--recompute-num-layers", Arity::Value, "recompute_num_layers" },
        { "--recompute-modules", Arity::List, "recompute_modules" },
        { "--distribute-saved-activations", Arity::Switch, "distribute_saved_activations" },
        { "--moe-layer-recompute", Arity::Switch, "moe_layer_recompute" },
        { "--overlap-moe-expert-parallel-comm", Arity::Switch,
            "comm_overlap.overlap_moe_expert_parallel_comm" },
        { "--delay-wgrad-compute", Arity::Switch, "delay_wgrad_compute" },
        { "--no-check-for-nan-in-loss-and-grad", Arity::Switch, "" },
        { "--train-iters", Arity::Value, "train_iters" },
    };
    return defs;
}

const FlagDef* findFlag(const std::string& flag)
{
    for (const FlagDef& d : flagDefs()) {
        if (flag == d.flag)
            return &d;
    }
    return nullptr;
}

bool isFlag(const std::string& arg)
{
    return arg.size() > 2 && arg.compare(0, 2, "--") == 0;
}

nlohmann::json parseInt(const std::string& text, const std::string& field, const std::string& where)
{
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE)
        throw RecipeError(
            field, where, "the integer '" + text + "' is out of range (allowed: -2147483648 to 2147483647)");
    if (text.empty() || *end != '\0')
        throw RecipeError(field, where, "expects an integer, got '" + text + "'");
    return nlohmann::json(v);
}

nlohmann::json parseDouble(const std::string& text, const std::string& field, const std::string& where)
{
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (errno == ERANGE && std::abs(v) > 1.0)
        throw RecipeError(field, where,
            "the number '" + text
                + "' is out of range: a number must be finite, at most 1.8e308 in magnitude");
    if (text.empty() || *end != '\0')
        throw RecipeError(field, where, "expects a number, got '" + text + "'");
    if (!std::isfinite(v))
        throw RecipeError(field, where, "expects a number, got '" + text + "' (a number must be finite)");
    return nlohmann::json(v);
}

// --moe-layer-freq as Megatron-LM's moe_freq_type reads it: an int, or a Python list expression such as
// "[0]+[1]*26" or "([1]*3+[0])*2" (Megatron evaluates it; we read that grammar: lists of ints, +, *int,
// parentheses).
class FreqExpression {
public:
    FreqExpression(std::string text, std::string where)
        : s_(std::move(text))
        , where_(std::move(where))
    {
    }
    std::vector<int> parse()
    {
        std::vector<int> v = expr();
        skipSpace();
        if (pos_ != s_.size())
            fail();
        return v;
    }

private:
    static constexpr int kMaxDepth = 32;
    static constexpr std::size_t kMaxLength = 1000000; // layers
    [[noreturn]] void failLength() const
    {
        throw RecipeError("moe_layer_freq", where_,
            "the list expression makes more than " + std::to_string(kMaxLength) + " entries (one per layer)");
    }
    [[noreturn]] void fail() const
    {
        throw RecipeError("moe_layer_freq", where_,
            "expects an integer or a list expression such as [0]+[1]*26, got '" + s_ + "'");
    }
    void skipSpace()
    {
        while (pos_ < s_.size() && s_[pos_] == ' ')
            ++pos_;
    }
    bool eat(char c)
    {
        skipSpace();
        if (pos_ < s_.size() && s_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    int number()
    {
        skipSpace();
        const std::size_t start = pos_;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
            ++pos_;
        if (start == pos_ || pos_ - start > 6)
            fail();
        return std::stoi(s_.substr(start, pos_ - start));
    }
    std::vector<int> expr()
    {
        // Each '(' recurses once: bound the depth, so "((((...))))" cannot overflow the stack.
        if (++depth_ > kMaxDepth)
            throw RecipeError("moe_layer_freq", where_,
                "the list expression nests parentheses more than " + std::to_string(kMaxDepth)
                    + " levels deep");
        std::vector<int> v = term();
        while (eat('+')) {
            std::vector<int> more = term();
            if (v.size() + more.size() > kMaxLength)
                failLength();
            v.insert(v.end(), more.begin(), more.end());
        }
        --depth_;
        return v;
    }
    std::vector<int> term()
    {
        std::vector<int> v = primary();
        while (eat('*')) {
            const int n = number();
            if (!v.empty() && std::size_t(n) > kMaxLength / v.size())
                failLength();
            std::vector<int> repeated;
            for (int i = 0; i < n; ++i)
                repeated.insert(repeated.end(), v.begin(), v.end());
            v = std::move(repeated);
        }
        return v;
    }
    std::vector<int> primary()
    {
        if (eat('(')) {
            std::vector<int> v = expr();
            if (!eat(')'))
                fail();
            return v;
        }
        if (!eat('['))
            fail();
        std::vector<int> v;
        if (eat(']'))
            return v;
        do {
            v.push_back(number());
        } while (eat(','));
        if (!eat(']'))
            fail();
        return v;
    }

    std::string s_;
    std::string where_;
    std::size_t pos_ = 0;
    int depth_ = 0;
};

std::string stripQuotes(const std::string& s)
{
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

// The text a value flag takes for a JSON value of the recipe.
std::string flagValueText(const nlohmann::json& v)
{
    if (v.is_string())
        return v.get<std::string>();
    return v.dump(); // integers, and doubles in their shortest round-trip form
}

std::string layerFreqText(const std::vector<int>& pattern)
{
    if (pattern.size() == 1 && pattern[0] >= 1)
        return std::to_string(pattern[0]);
    std::string out;
    for (std::size_t i = 0; i < pattern.size();) {
        std::size_t j = i;
        while (j < pattern.size() && pattern[j] == pattern[i])
            ++j;
        if (!out.empty())
            out += "+";
        out += "[" + std::to_string(pattern[i]) + "]";
        if (j - i > 1)
            out += "*" + std::to_string(j - i);
        i = j;
    }
    return out;
}

bool endsWithPy(const std::string& word)
{
    return word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0;
}

} // namespace

Recipe recipeFromMegatronFlags(const std::vector<std::string>& args)
{
    return recipeFromMegatronFlags(args, frontEndDefaults(InputFormat::MegatronFlags));
}

Recipe recipeFromMegatronFlags(const std::vector<std::string>& args, Recipe base)
{
    const MegatronArgTable table = megatronArgTable(base.profile);
    bool groupQueryAttention = false;
    std::optional<int> numQueryGroups;
    std::optional<int> layersPerVirtualStage;
    bool vppGiven = false, qLoraGiven = false, kvLoraGiven = false;
    bool accumulateInFp32 = false, gradReduceInBf16 = false;
    bool biasSwigluFusion = true, biasGeluFusion = true; // argparse: store_false, default True
    bool swiglu = false, squaredRelu = false, overridePattern = false, layerPattern = false;

    std::size_t first = 0;
    // The launcher and the script: everything up to the first word that names a .py file.
    if (!args.empty() && !isFlag(args[0])) {
        std::size_t script = 0;
        while (script < args.size() && !endsWithPy(args[script]))
            ++script;
        if (script == args.size()) {
            throw RecipeError("", "argument 1",
                "unexpected argument '" + args[0]
                    + "': a Megatron-LM command line is [launcher and its options] SCRIPT.py --flags..., "
                      "and no .py script was found");
        }
        base.launch_command.assign(args.begin(), args.begin() + std::ptrdiff_t(script) + 1);
        first = script + 1;
    }

    for (std::size_t i = first; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (!isFlag(arg)) {
            throw RecipeError("", "argument " + std::to_string(i + 1),
                "unexpected argument '" + arg + "': not a flag's value");
        }
        const auto eq = arg.find('=');
        const std::string flag = arg.substr(0, eq);
        const std::optional<std::string> inlineValue
            = eq == std::string::npos ? std::nullopt : std::optional<std::string>(arg.substr(eq + 1));
        const std::string where = "flag " + flag;
        const MegatronArg* row = table.find(flag);
        if (!row) {
            throw RecipeError(flag, where,
                std::string("Megatron-LM has no such flag at profile ") + profileName(base.profile)
                    + " (arguments.py at " + std::string(table.commit).substr(0, 8) + "); did you mean '"
                    + nearestName(flag, table.flags()) + "'?");
        }
        const FlagDef* def = findFlag(flag);
        const std::string fieldName = def ? def->field : row->dest;

        // Gather the values as argparse does, by the flag's nargs.
        std::vector<std::string> values;
        const int minValues = row->minValues();
        const int maxValues = row->maxValues();
        const std::size_t start = i;
        if (inlineValue) {
            if (maxValues == 0)
                throw RecipeError(fieldName, where, "takes no value, got '" + *inlineValue + "'");
            values.push_back(*inlineValue);
        } else {
            while (i + 1 < args.size() && !isFlag(args[i + 1])
                && (maxValues < 0 || int(values.size()) < maxValues))
                values.push_back(args[++i]);
        }
        if (int(values.size()) < minValues) {
            throw RecipeError(fieldName, where,
                minValues == 1 && maxValues == 1
                    ? std::string("expects a value")
                    : "expects at least " + std::to_string(minValues) + " value(s)");
        }
        if (row->has_choices && std::string(row->choices) != "?") {
            const std::vector<std::string> choices = row->choiceList();
            for (const std::string& v : values) {
                if (std::find(choices.begin(), choices.end(), stripQuotes(v)) == choices.end())
                    throw RecipeError(fieldName, where,
                        "invalid choice '" + v + "' (Megatron-LM allows " + joinNames(choices) + ")");
            }
        }
        if (!def || (flag == "--moe-aux-loss-coeff" && values.size() != 1)
            || (flag == "--moe-router-load-balancing-type" && values.size() != 1)) {
            // A flag of Megatron-LM's that no field models (or a per-layer list of one that does): kept.
            base.extra_flags.insert(base.extra_flags.end(), args.begin() + std::ptrdiff_t(start),
                args.begin() + std::ptrdiff_t(i) + 1);
            continue;
        }
        if (def->field[0] != '\0')
            markExplicit(base, def->field);

        // The flags Megatron-LM resolves itself.
        if (flag == "--group-query-attention") {
            groupQueryAttention = true;
        } else if (flag == "--num-query-groups") {
            numQueryGroups = parseInt(values[0], "num_query_groups", where).get<int>();
            markExplicit(base, "num_query_groups");
        } else if (flag == "--swiglu") {
            base.gated_linear_unit = true;
            base.activation_func = "silu";
            markExplicit(base, "gated_linear_unit");
            markExplicit(base, "activation_func");
            swiglu = true;
        } else if (flag == "--squared-relu") {
            squaredRelu = true; // argument_utils.py core_transformer_config_from_args: after the whole line
        } else if (flag == "--linear-attention-freq") {
            // la_freq_type, as moe_freq_type: an int, or a Python list expression Megatron-LM evaluates.
            const std::string text = stripQuotes(values[0]);
            nlohmann::json freq;
            if (text.find('[') == std::string::npos)
                freq = parseInt(text, "linear_attention_freq", where);
            else
                freq = FreqExpression(text, where).parse();
            setRecipeField(base, "linear_attention_freq", freq, where);
            markExplicit(base, "linear_attention_freq");
        } else if (flag == "--hybrid-override-pattern" || flag == "--hybrid-layer-pattern") {
            // validate_args: the deprecated spelling is copied into hybrid_layer_pattern; both at once is
            // an assertion (arguments.py:743-755 at d98e8a64).
            (flag == "--hybrid-override-pattern" ? overridePattern : layerPattern) = true;
            if (overridePattern && layerPattern)
                throw RecipeError("hybrid_layer_pattern", where,
                    "--hybrid-override-pattern and --hybrid-layer-pattern cannot both be specified. "
                    "--hybrid-override-pattern is deprecated; use --hybrid-layer-pattern instead.");
            setRecipeField(base, "hybrid_layer_pattern", stripQuotes(values[0]), where);
            markExplicit(base, "hybrid_layer_pattern");
        } else if (flag == "--pipeline-model-parallel-layout") {
            setRecipeField(base, "pipeline_model_parallel_layout", stripQuotes(values[0]), where);
        } else if (flag == "--num-layers-per-virtual-pipeline-stage") {
            layersPerVirtualStage
                = parseInt(values[0], "virtual_pipeline_model_parallel_size", where).get<int>();
        } else if (flag == "--moe-layer-freq") {
            const std::string text = stripQuotes(values[0]);
            nlohmann::json freq;
            if (text.find('[') == std::string::npos)
                freq = parseInt(text, "moe_layer_freq", where);
            else
                freq = FreqExpression(text, where).parse();
            setRecipeField(base, "moe_layer_freq", freq, where);
            markExplicit(base, "moe_layer_freq");
        } else if (flag == "--attention-backend") {
            // Megatron's AttnBackend enum; ours names what runs: local is the unfused path, auto lets TE
            // pick (fused on the GPUs we run on).
            std::string v = values[0];
            if (v == "local")
                v = "unfused";
            else if (v == "auto")
                v = "fused";
            setRecipeField(base, "attention_backend", v, where);
            markExplicit(base, "attention_backend");
        } else if (flag == "--no-gradient-accumulation-fusion") {
            base.gradient_accumulation_fusion = false; // store_false, dest gradient_accumulation_fusion
            markExplicit(base, "gradient_accumulation_fusion");
        } else if (flag == "--no-masked-softmax-fusion") {
            base.masked_softmax_fusion = false; // store_false, dest masked_softmax_fusion
            markExplicit(base, "masked_softmax_fusion");
        } else if (flag == "--no-create-attention-mask-in-dataloader") {
            base.create_attention_mask_in_dataloader = false; // store_false, same dest
            markExplicit(base, "create_attention_mask_in_dataloader");
        } else if (flag == "--checkpoint-activations") {
            base.checkpoint_activations_flag = flag; // the rules engine raises M1 for it
        } else if (flag == "--no-check-for-nan-in-loss-and-grad") {
            base.check_for_nan_in_loss = false;
            markExplicit(base, "rerun_state_machine.check_for_nan_in_loss");
        } else if (flag == "--disable-bias-linear") {
            base.add_bias_linear = false;
            markExplicit(base, "add_bias_linear");
        } else if (flag == "--no-bias-swiglu-fusion") {
            biasSwigluFusion = false;
            markExplicit(base, "bias_activation_fusion");
        } else if (flag == "--no-bias-gelu-fusion") {
            biasGeluFusion = false;
            markExplicit(base, "bias_activation_fusion");
        } else if (flag == "--accumulate-allreduce-grads-in-fp32") {
            accumulateInFp32 = true;
        } else if (flag == "--grad-reduce-in-bf16") {
            gradReduceInBf16 = true;
        } else {
            const std::string field = def->field;
            const RecipeFieldType type = *recipeFieldType(field);
            nlohmann::json value;
            switch (type) {
            case RecipeFieldType::Bool:
                value = true;
                break;
            case RecipeFieldType::Int:
            case RecipeFieldType::OptionalInt:
                value = parseInt(values[0], field, where);
                break;
            case RecipeFieldType::Double:
            case RecipeFieldType::OptionalDouble:
                value = parseDouble(values[0], field, where);
                break;
            case RecipeFieldType::StringList:
            case RecipeFieldType::OptionalStringList:
                value = values;
                break;
            default:
                value = values[0];
                break;
            }
            setRecipeField(base, field, value, where);
            if (field == "virtual_pipeline_model_parallel_size")
                vppGiven = true;
            qLoraGiven = qLoraGiven || field == "q_lora_rank";
            kvLoraGiven = kvLoraGiven || field == "kv_lora_rank";
        }
    }

    // Megatron-LM passes num_query_groups only with --group-query-attention (its argparse default is 1).
    if (groupQueryAttention) {
        base.num_query_groups = numQueryGroups.value_or(1);
    } else if (numQueryGroups) {
        throw RecipeError("num_query_groups", "flag --num-query-groups",
            "Megatron-LM ignores --num-query-groups without --group-query-attention (the model would be "
            "multi-head attention); add --group-query-attention or drop --num-query-groups");
    }
    // validate_args: at most one of the three ways to give virtual stages (arguments.py:893-905 at 2a75ac12;
    // the flag reader takes --num-virtual-stages-per-pipeline-rank and its older spelling as one field).
    // A hybrid stack refuses a layout before that (M12), and takes its virtual stages from its pattern.
    const bool gptLayout = base.pipeline_model_parallel_layout && !base.hybrid_layer_pattern;
    if (gptLayout && (vppGiven || layersPerVirtualStage))
        throw RecipeError("pipeline_model_parallel_layout", "flag --pipeline-model-parallel-layout",
            "No more than one of the following arguments can be set at the same time: "
            "--num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-pipeline-rank,"
            "--pipeline-model-parallel-layout (Megatron-LM's assertion, "
            "megatron/training/arguments.py:894-905 "
            "at 2a75ac12): the layout gives the virtual stages");
    if (gptLayout) {
        // validate_args takes the virtual stages from the layout: its stages / PP, None for one
        // (arguments.py:907-918 at 2a75ac12); M10 says when PP does not divide them.
        const std::size_t stages = parsePipelineLayout(*base.pipeline_model_parallel_layout).stages.size();
        const int pp = base.pipeline_model_parallel_size;
        if (pp >= 1 && stages % static_cast<std::size_t>(pp) == 0) {
            const std::size_t vpp = stages / static_cast<std::size_t>(pp);
            base.virtual_pipeline_model_parallel_size
                = vpp == 1 ? std::nullopt : std::optional<int>(static_cast<int>(vpp));
        }
    }
    if (layersPerVirtualStage) {
        const std::string where = "flag --num-layers-per-virtual-pipeline-stage";
        if (vppGiven) {
            throw RecipeError("virtual_pipeline_model_parallel_size", where,
                "give either --num-layers-per-virtual-pipeline-stage or the number of virtual stages, not "
                "both");
        }
        if (base.num_layers_in_first_pipeline_stage || base.num_layers_in_last_pipeline_stage)
            throw RecipeError("virtual_pipeline_model_parallel_size", where,
                "please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel "
                "degree "
                "when enable uneven pipeline parallelism (Megatron-LM's assertion with "
                "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, "
                "megatron/training/arguments.py:921-922 at 2a75ac12)");
        const int pp = base.pipeline_model_parallel_size;
        if (base.num_layers <= 0 || pp <= 0 || *layersPerVirtualStage <= 0)
            throw RecipeError("virtual_pipeline_model_parallel_size", where,
                "needs --num-layers, --pipeline-model-parallel-size and a positive number of layers per "
                "stage");
        // The embedding and the loss count as layers where the split accounts for them
        // (arguments.py:928-932).
        const long long layers = static_cast<long long>(base.num_layers)
            + (base.account_for_embedding_in_pipeline_split ? 1 : 0)
            + (base.account_for_loss_in_pipeline_split ? 1 : 0);
        const long long perRank = layers / pp;
        if (layers % pp != 0 || perRank % *layersPerVirtualStage != 0) {
            throw RecipeError("virtual_pipeline_model_parallel_size", where,
                std::to_string(layers) + " layers over " + std::to_string(pp)
                    + " pipeline ranks do not split into virtual stages of "
                    + std::to_string(*layersPerVirtualStage) + " layers");
        }
        base.virtual_pipeline_model_parallel_size = static_cast<int>(perRank / *layersPerVirtualStage);
    }
    // core_transformer_config_from_args (argument_utils.py:320-322 at d98e8a64): --squared-relu asserts
    // not --swiglu and sets activation_func to megatron.core.activations.squared_relu.
    if (squaredRelu) {
        if (swiglu)
            throw RecipeError("activation_func", "flag --squared-relu",
                "--squared-relu with --swiglu: Megatron-LM asserts not args.swiglu "
                "(megatron/training/argument_utils.py:320-322); give one activation");
        base.activation_func = "squared_relu";
        markExplicit(base, "activation_func");
    }
    // validate_args turns bias_gelu_fusion off without linear biases; core_transformer_config_from_args
    // (argument_utils.py) takes bias_activation_fusion from bias_swiglu_fusion under --swiglu, else from
    // bias_gelu_fusion.
    base.bias_activation_fusion = base.gated_linear_unit && base.activation_func == "silu"
        ? biasSwigluFusion
        : biasGeluFusion && base.add_bias_linear;
    // validate_args: under bf16, gradients accumulate and all-reduce in fp32 unless --grad-reduce-in-bf16
    // or --main-grads-dtype bf16 says otherwise; --accumulate-allreduce-grads-in-fp32 asks for it always.
    if (accumulateInFp32 || gradReduceInBf16) {
        base.grad_reduce_in_fp32 = accumulateInFp32 && !gradReduceInBf16;
        markExplicit(base, "grad_reduce_in_fp32");
    } else if (base.bf16 && base.main_grads_dtype == "fp32") {
        base.grad_reduce_in_fp32 = true;
    }
    // The data-parallel size from torchrun's --nproc-per-node and --nnodes, when the launcher says them, or
    // from a WORLD_SIZE=N word before the script (`env RANK=0 WORLD_SIZE=16 python3 pretrain_gpt.py
    // --fake-process-group`: arguments.py reads args.world_size from that variable).
    int procs = 0, nodes = 1;
    for (std::size_t i = 0; i < base.launch_command.size(); ++i) {
        const std::string& w = base.launch_command[i];
        if (w.rfind("WORLD_SIZE=", 0) == 0) {
            const std::string v = w.substr(11);
            if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() <= 6) {
                procs = std::stoi(v);
                nodes = 1;
            }
            continue;
        }
        for (const char* name : { "--nproc-per-node", "--nproc_per_node", "--nnodes" }) {
            const std::string n = name;
            std::string v;
            if (w == n && i + 1 < base.launch_command.size())
                v = base.launch_command[i + 1];
            else if (w.rfind(n + "=", 0) == 0)
                v = w.substr(n.size() + 1);
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6)
                continue;
            (n == "--nnodes" ? nodes : procs) = std::stoi(v);
        }
    }
    // Each size is an int the user wrote, their product need not be: computed where it cannot overflow.
    const double mp = double(base.tensor_model_parallel_size) * base.pipeline_model_parallel_size
        * base.context_parallel_size;
    const long long modelParallel = mp > 0 && mp < 4e18 ? static_cast<long long>(mp) : 0;
    const long long world = static_cast<long long>(procs) * nodes;
    if (procs > 0 && nodes > 0 && modelParallel > 0 && world % modelParallel == 0)
        base.data_parallel_size = static_cast<int>(world / modelParallel);
    // The local spec's core attention is Megatron's own DotProductAttention (gpt_layer_specs.py,
    // get_gpt_layer_local_spec): scores materialised, softmax in torch. That is our unfused path whatever
    // --attention-backend would pick under Transformer Engine.
    if (base.transformer_impl == "local"
        && std::find(base.explicit_keys.begin(), base.explicit_keys.end(), "attention_backend")
            == base.explicit_keys.end())
        base.attention_backend = "unfused";
    // Without Transformer Engine (what the local spec suggests) and without Apex, Megatron's Adam is
    // torch.optim.AdamW (megatron/core/optimizer/__init__.py, its import fallback).
    if (base.transformer_impl == "local"
        && std::find(base.explicit_keys.begin(), base.explicit_keys.end(), "adam_implementation")
            == base.explicit_keys.end())
        base.adam_implementation = "torch";
    // Megatron-LM's MLA argparse defaults differ from MLATransformerConfig's: --q-lora-rank None (no Q
    // compression) and --kv-lora-rank 32.
    if (base.multi_latent_attention) {
        if (!qLoraGiven)
            base.q_lora_rank = std::nullopt;
        if (!kvLoraGiven)
            base.kv_lora_rank = 32;
    }
    return base;
}

std::vector<std::string> recipeToMegatronFlags(const Recipe& r)
{
    const Recipe defaults = frontEndDefaults(InputFormat::MegatronFlags, r.profile);
    const MegatronArgTable table = megatronArgTable(r.profile);
    const std::string where = "Megatron-LM flags";
    if (r.mixed_precision) {
        throw RecipeError("mixed_precision", where,
            "'" + *r.mixed_precision
                + "' is a Megatron Bridge mixed-precision recipe with no Megatron-LM flag; set bf16/fp16/fp8/"
                  "fp8_recipe/fp4 instead (the rules engine's B8 adjustment does it)");
    }
    if (r.peft) {
        throw RecipeError("peft.scheme", where,
            "Megatron-LM has no LoRA: peft='" + *r.peft
                + "' is Megatron Bridge's (ConfigContainer.peft), and pretrain_gpt.py would train every "
                  "parameter; run the job as a Bridge recipe, or write peft=null for full training");
    }
    if (!r.store_param_remainders) {
        throw RecipeError("store_param_remainders", where,
            "Megatron-LM has no flag for store_param_remainders: its OptimizerConfig keeps the default True "
            "(megatron/core/optimizer/optimizer_config.py); Bridge's optimizer.store_param_remainders=false "
            "has no Megatron-LM command line");
    }
    if (r.recompute_granularity == "selective" && r.recompute_modules && r.recompute_modules->empty()) {
        throw RecipeError("recompute_modules", where,
            "Megatron-LM cannot write recompute_modules=[]: --recompute-modules needs at least one label. "
            "Written as flags, the no-recompute control is the absence of --recompute-granularity");
    }
    if (r.gated_linear_unit != (r.activation_func == "silu")) {
        throw RecipeError("activation_func", where,
            "Megatron-LM has a flag for SwiGLU (--swiglu: gated_linear_unit with silu), squared ReLU "
            "(--squared-relu, not gated) and plain GeLU only, not for gated_linear_unit="
                + std::string(r.gated_linear_unit ? "true" : "false")
                + " with activation_func=" + r.activation_func);
    }

    std::vector<std::string> out;
    // Megatron-LM derives grad_reduce_in_fp32 (validate_args); a flag only where the recipe differs.
    const bool derivedFp32 = r.bf16 && r.main_grads_dtype == "fp32";
    for (const FlagDef& def : flagDefs()) {
        const std::string flag = def.flag;
        if (!table.find(flag))
            continue; // no such flag at this profile (--cpu-offloading: derived from the layer count)
        if (flag == "--group-query-attention" || flag == "--virtual-pipeline-model-parallel-size"
            || flag == "--num-layers-per-virtual-pipeline-stage")
            continue; // written with --num-query-groups; one spelling of the virtual stages is enough
        if (flag == "--num-virtual-stages-per-pipeline-rank" && !table.find(flag))
            continue;
        // With a layout validate_args takes the virtual stages from it and refuses a second spelling of them.
        if (flag == "--num-virtual-stages-per-pipeline-rank" && r.pipeline_model_parallel_layout
            && !r.hybrid_layer_pattern)
            continue;
        if (flag == "--num-query-groups") {
            if (r.num_query_groups)
                out.insert(
                    out.end(), { "--group-query-attention", flag, std::to_string(*r.num_query_groups) });
            continue;
        }
        if (flag == "--swiglu") {
            if (r.gated_linear_unit)
                out.push_back(flag);
            continue;
        }
        if (flag == "--squared-relu") {
            if (r.activation_func == "squared_relu")
                out.push_back(flag);
            continue;
        }
        if (flag == "--hybrid-override-pattern")
            continue; // read as hybrid_layer_pattern; written in today's spelling
        if (flag == "--linear-attention-freq") {
            if (!r.linear_attention_freq.empty())
                out.insert(out.end(), { flag, layerFreqText(r.linear_attention_freq) });
            continue;
        }
        if (flag == "--disable-bias-linear") {
            if (!r.add_bias_linear)
                out.push_back(flag);
            continue;
        }
        if (flag == "--no-bias-swiglu-fusion" || flag == "--no-bias-gelu-fusion") {
            // Written only where the fusion Megatron-LM derives (on, except GeLU without linear biases)
            // is off; its own flag for the recipe's activation.
            const bool swiglu = r.gated_linear_unit;
            if (swiglu != (flag == "--no-bias-swiglu-fusion"))
                continue;
            const bool derived = swiglu || r.add_bias_linear;
            if (r.bias_activation_fusion && !derived)
                throw RecipeError("bias_activation_fusion", where,
                    "Megatron-LM turns the bias-GeLU fusion off without linear biases (validate_args); "
                    "bias_activation_fusion=true needs add_bias_linear or SwiGLU");
            if (!r.bias_activation_fusion && derived)
                out.push_back(flag);
            continue;
        }
        if (flag == "--accumulate-allreduce-grads-in-fp32") {
            if (r.grad_reduce_in_fp32 && !derivedFp32)
                out.push_back(flag);
            continue;
        }
        if (flag == "--grad-reduce-in-bf16") {
            if (!r.grad_reduce_in_fp32 && derivedFp32)
                out.push_back(flag);
            continue;
        }
        if (flag == "--moe-layer-freq") {
            if (r.moe_layer_freq != defaults.moe_layer_freq || isExplicit(r, "moe_layer_freq"))
                out.insert(out.end(), { flag, layerFreqText(r.moe_layer_freq) });
            continue;
        }
        if (flag == "--attention-backend") {
            out.insert(out.end(), { flag, r.attention_backend }); // always: Megatron-LM's default is auto
            continue;
        }
        if (flag == "--no-masked-softmax-fusion") {
            if (!r.masked_softmax_fusion)
                out.push_back(flag);
            continue;
        }
        if (flag == "--no-gradient-accumulation-fusion") {
            if (!r.gradient_accumulation_fusion)
                out.push_back(flag);
            continue;
        }
        if (flag == "--no-create-attention-mask-in-dataloader") {
            if (!r.create_attention_mask_in_dataloader)
                out.push_back(flag);
            continue;
        }
        if (flag == "--checkpoint-activations") {
            if (r.checkpoint_activations_flag)
                out.push_back(flag);
            continue;
        }
        if (flag == "--no-check-for-nan-in-loss-and-grad") {
            if (!r.check_for_nan_in_loss)
                out.push_back(flag);
            continue;
        }
        const std::string field = def.field;
        const nlohmann::json value = recipeFieldValue(r, field);
        bool write = value != recipeFieldValue(defaults, field) || isExplicit(r, field);
        // Megatron-LM needs these (its defaults are None): always written.
        if (field == "seq_length" || field == "micro_batch_size")
            write = true;
        // With MLA on, the ranks are always written: Megatron-LM's argparse defaults differ from ours.
        if (r.multi_latent_attention && (field == "q_lora_rank" || field == "kv_lora_rank"))
            write = !value.is_null();
        if (!write || value.is_null())
            continue; // unset optionals are Megatron-LM's defaults too (lossy only where noted in the header)
        if (def.arity == Arity::Switch) {
            if (value == true)
                out.push_back(flag);
        } else if (def.arity == Arity::List || def.arity == Arity::OptionalList) {
            if (value.empty())
                continue; // [] has no spelling for nargs='+'; see the header
            out.push_back(flag);
            for (const nlohmann::json& item : value)
                out.push_back(item.get<std::string>());
        } else {
            out.insert(out.end(), { flag, flagValueText(value) });
        }
    }
    // Every value we write must be one Megatron-LM's argparse takes at this profile.
    for (std::size_t i = 0; i < out.size(); ++i) {
        const MegatronArg* row = table.find(out[i]);
        if (!row || !row->has_choices || std::string(row->choices) == "?")
            continue;
        const std::vector<std::string> choices = row->choiceList();
        for (std::size_t j = i + 1; j < out.size() && !isFlag(out[j]); ++j) {
            if (std::find(choices.begin(), choices.end(), out[j]) == choices.end())
                throw RecipeError(row->dest, where,
                    out[i] + " " + out[j] + ": Megatron-LM at profile " + profileName(r.profile)
                        + " allows only " + joinNames(choices));
        }
    }
    out.insert(out.end(), r.extra_flags.begin(), r.extra_flags.end());
    return out;
}

std::vector<std::string> recipeToMegatronCommand(const Recipe& r)
{
    std::vector<std::string> out = r.launch_command;
    if (out.empty())
        out = { "torchrun", "--nproc-per-node",
            std::to_string(r.data_parallel_size * r.tensor_model_parallel_size
                * r.pipeline_model_parallel_size * r.context_parallel_size),
            r.hybrid_layer_pattern ? "pretrain_hybrid.py" : "pretrain_gpt.py" };
    const std::vector<std::string> flags = recipeToMegatronFlags(r);
    out.insert(out.end(), flags.begin(), flags.end());
    return out;
}

} // namespace rs
