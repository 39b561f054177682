// SPDX-License-Identifier: Apache-2.0
// The recipe's input and output: JSON, Bridge Hydra overrides, Megatron-LM flags, the recipe arguments of
// the CLI, the Bridge mixed-precision table, SHA-256, and the preset files.
#include <iostream>
#include <sstream>

#include <QDir>
#include <QFile>
#include <QtTest>

#include "core/megatron_arg_table.h"
#include "core/megatron_flags.h"
#include "core/mixed_precision.h"
#include "core/overrides.h"
#include "core/recipe_input.h"
#include "core/recipe_json.h"

using namespace rs;

namespace rs {
// QCOMPARE prints a recipe that differs as its canonical JSON.
char* toString(const Recipe& r)
{
    return qstrdup(recipeCanonicalText(r).c_str());
}
} // namespace rs

namespace {

std::vector<std::string> toStd(const QStringList& list)
{
    std::vector<std::string> out;
    for (const QString& s : list)
        out.push_back(s.toStdString());
    return out;
}

QStringList L(std::initializer_list<std::string> items)
{
    QStringList out;
    for (const std::string& s : items)
        out << QString::fromStdString(s);
    return out;
}

QString join(const std::vector<std::string>& v)
{
    QStringList out;
    for (const std::string& s : v)
        out << QString::fromStdString(s);
    return out.join(QLatin1Char(' '));
}

// Every field away from its default, so a round trip of it covers the whole field table (checked by
// fullRecipeTouchesEveryField).
Recipe fullRecipe()
{
    Recipe r;
    r.name = "full: it's \"quoted\", [x]=1";
    r.num_layers = 8;
    r.hidden_size = 256;
    r.ffn_hidden_size = 1024;
    r.num_attention_heads = 8;
    r.num_query_groups = 2;
    r.kv_channels = 32;
    r.seq_length = 1024;
    r.micro_batch_size = 2;
    r.global_batch_size = 16;
    r.create_attention_mask_in_dataloader = false;
    r.normalization = "RMSNorm";
    r.gated_linear_unit = true;
    r.activation_func = "silu";
    r.bias_activation_fusion = true;
    r.vocab_size = 1000;
    r.make_vocab_size_divisible_by = 64;
    r.add_bias_linear = false;
    r.add_qkv_bias = true;
    r.qk_layernorm = true;
    r.position_embedding_type = "rope";
    r.max_position_embeddings = 8192;
    r.rotary_percent = 0.5;
    r.rotary_base = 500000;
    r.untie_embeddings_and_output_weights = true;
    r.attention_softmax_in_fp32 = false;
    r.apply_query_key_layer_scaling = true;
    r.masked_softmax_fusion = true;
    r.gradient_accumulation_fusion = true;
    r.multi_latent_attention = true;
    r.q_lora_rank = 64;
    r.kv_lora_rank = 32;
    r.qk_head_dim = 16;
    r.qk_pos_emb_head_dim = 8;
    r.v_head_dim = 16;
    r.experimental_attention_variant
        = "gated_delta_net"; // a choice of --experimental-attention-variant at dev
    r.linear_attention_freq = { 1, 1, 1, 0, 1, 1, 1, 0 };
    r.linear_conv_kernel_dim = 3;
    r.linear_key_head_dim = 64;
    r.linear_value_head_dim = 96;
    r.linear_num_key_heads = 4;
    r.linear_num_value_heads = 8;
    r.dsa_indexer_n_heads = 16;
    r.dsa_indexer_head_dim = 64;
    r.dsa_indexer_topk = 512;
    r.dsa_indexer_topk_freq = 2;
    r.dsa_indexer_skip_topk_offset = 1;
    r.dsa_indexer_loss_coeff = 0.001;
    r.dsa_indexer_use_sparse_loss = true;
    r.dsa_kernel_backend = "cudnn";
    r.hybrid_layer_pattern = "M*M-MEGE";
    r.is_hybrid_model = true;
    r.mamba_num_heads = 16;
    r.mamba_head_dim = 32;
    r.mamba_state_dim = 64;
    r.mamba_num_groups = 4;
    r.mamba_chunk_size = 64;
    r.use_fused_weighted_squared_relu = true;
    r.cross_entropy_loss_fusion = true;
    r.cross_entropy_fusion_impl = "te";
    r.num_moe_experts = 4;
    r.moe_router_topk = 3;
    r.moe_ffn_hidden_size = 128;
    r.moe_grouped_gemm = true;
    r.moe_shared_expert_intermediate_size = 256;
    r.moe_shared_expert_overlap = true;
    r.moe_latent_size = 32;
    r.moe_layer_freq = { 0, 1, 1, 1, 1, 1, 1, 1 };
    r.moe_token_dispatcher_type = "alltoall";
    r.moe_input_jitter_eps = 0.01;
    r.mtp_num_layers = 1;
    r.mtp_use_repeated_layer = true;
    r.mtp_hybrid_override_pattern = "*E";
    r.moe_aux_loss_coeff = 0.01;
    r.moe_router_load_balancing_type = "seq_aux_loss";
    r.moe_expert_capacity_factor = 1.25;
    r.enable_mhc_connections = true;
    r.enable_hyper_connections = true;
    r.mhc_recompute_layer_num = 2;
    r.tensor_model_parallel_size = 2;
    r.pipeline_model_parallel_size = 2;
    r.virtual_pipeline_model_parallel_size = 2;
    r.context_parallel_size = 2;
    r.expert_model_parallel_size = 4;
    r.expert_tensor_parallel_size = 2;
    r.sequence_parallel = true;
    r.data_parallel_size = 4;
    // Four stages: with PP 2 the layout's VPP is the recipe's (the flag reader derives it, the writer does
    // not write it beside a layout of a GPT model; this hybrid recipe keeps it).
    r.pipeline_model_parallel_layout = "Et|(tt|)*2,tL";
    r.num_layers_in_first_pipeline_stage = 3;
    r.num_layers_in_last_pipeline_stage = 5;
    r.account_for_embedding_in_pipeline_split = true;
    r.account_for_loss_in_pipeline_split = true;
    r.deallocate_pipeline_outputs = true;
    r.use_distributed_optimizer = true;
    r.grad_reduce_in_fp32 = true;
    r.main_grads_dtype = "bf16";
    r.main_params_dtype = "fp16";
    r.exp_avg_dtype = "bf16";
    r.exp_avg_sq_dtype = "fp8";
    r.store_param_remainders = false;
    r.use_precision_aware_optimizer = true;
    r.bf16 = true;
    r.fp16 = true;
    r.fp8 = "hybrid";
    r.fp8_recipe = "tensorwise";
    r.fp8_param_gather = true;
    r.fp4 = "e2m1";
    r.mixed_precision = "bf16_mixed";
    r.te_version = "2.5.0";
    r.attention_backend = "flash";
    r.transformer_impl = "local";
    r.adam_implementation = "torch"; // what Megatron-LM flags with the local spec read back
    r.attention_dropout = 0.0;
    r.hidden_dropout = 0.05;
    r.cuda_graph_impl = "transformer_engine";
    r.cuda_graph_modules = std::vector<std::string> { "attn", "moe_router" };
    r.cuda_graph_scope = std::vector<std::string> { "mlp" };
    r.enable_cuda_graph = true;
    r.external_cuda_graph = true;
    r.use_te_rng_tracker = true;
    r.cpu_offloading = true;
    r.cpu_offloading_num_layers = 2;
    r.fine_grained_activation_offloading = true;
    r.offload_modules = { "attn_norm" };
    r.recompute_granularity = "full";
    r.recompute_modules = std::vector<std::string> { "core_attn", "moe_act" };
    r.recompute_method = "uniform";
    r.recompute_num_layers = 1;
    r.distribute_saved_activations = true;
    r.moe_layer_recompute = true;
    r.delay_wgrad_compute = true;
    r.overlap_moe_expert_parallel_comm = true;
    r.check_for_nan_in_loss = false;
    r.peft = "lora";
    r.peft_dim = 8;
    r.peft_alpha = 16;
    r.peft_dropout = 0.05;
    r.peft_target_modules = { "linear_qkv", "linear_proj" };
    r.profile = Profile::Dev;
    r.memory_target_gb = 70.5;
    r.gpu_compute_capability = 100;
    r.warmup_iters = 2;
    r.train_iters = 20;
    r.checkpoint_activations_flag = "--checkpoint-activations";
    r.recompute_activations = true;
    r.front_end = InputFormat::MegatronFlags;
    r.extra_overrides = { "logger.log_interval=5" };
    r.extra_flags = { "--lr", "3e-4" };
    r.launch_command = { "torchrun", "--nproc-per-node", "8", "pretrain_gpt.py" };
    r.explicit_keys = { "num_layers" };
    return r;
}

// The settings with no Megatron-LM flag come back at the base recipe's values (megatron_flags.h).
Recipe withoutFlaglessFields(Recipe r)
{
    const Recipe defaults = frontEndDefaults(InputFormat::MegatronFlags, r.profile);
    r.name = defaults.name;
    r.memory_target_gb = defaults.memory_target_gb;
    r.warmup_iters = defaults.warmup_iters;
    r.te_version = defaults.te_version;
    r.gpu_compute_capability = defaults.gpu_compute_capability;
    r.front_end = defaults.front_end;
    r.extra_overrides = defaults.extra_overrides;
    r.launch_command = defaults.launch_command;
    r.data_parallel_size = defaults.data_parallel_size;
    // No Megatron-LM flag at any profile (Megatron-LM derives it from --cpu-offloading-num-layers), or
    // none at this one.
    r.cpu_offloading = defaults.cpu_offloading;
    r.deallocate_pipeline_outputs = defaults.deallocate_pipeline_outputs; // always True, no flag
    // Bridge's PEFT section: no flag (a recipe with peft set is refused as flags).
    r.peft_dim = defaults.peft_dim;
    r.peft_alpha = defaults.peft_alpha;
    r.peft_dropout = defaults.peft_dropout;
    r.peft_target_modules = defaults.peft_target_modules;
    r.mamba_chunk_size = defaults.mamba_chunk_size; // Bridge's field; Megatron-LM's mixer keeps 128
    const MegatronArgTable table = megatronArgTable(r.profile);
    if (!table.find("--enable-hyper-connections"))
        r.enable_hyper_connections = defaults.enable_hyper_connections;
    if (!table.find("--enable-mhc-connections"))
        r.enable_mhc_connections = defaults.enable_mhc_connections;
    if (!table.find("--mhc-recompute-layer-num"))
        r.mhc_recompute_layer_num = defaults.mhc_recompute_layer_num;
    return r;
}

// What a Bridge override line cannot hold: Megatron-LM's own words.
Recipe withoutOverridelessFields(Recipe r)
{
    r.extra_flags.clear();
    r.launch_command.clear();
    return r;
}

// The overrides as the text view writes them: the '# studio:' comment first.
std::vector<std::string> overridesWithComment(const Recipe& r)
{
    std::vector<std::string> out = { studioCommentLine(r) };
    const std::vector<std::string> overrides = recipeToBridgeOverrides(r);
    out.insert(out.end(), overrides.begin(), overrides.end());
    return out;
}

QString presetsDir()
{
    return QStringLiteral(RS_SOURCE_DIR "/resources/presets");
}

std::string readText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll().toStdString();
}

std::vector<std::pair<QString, Recipe>> presets()
{
    std::vector<std::pair<QString, Recipe>> out;
    const QStringList files
        = QDir(presetsDir()).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const QString& f : files) {
        const QString path = presetsDir() + QLatin1Char('/') + f;
        out.emplace_back(f, recipeFromJsonText(readText(path), path.toStdString()));
    }
    return out;
}

} // namespace

class TestRecipeIo : public QObject {
    Q_OBJECT

private slots:
    // --- SHA-256 ---
    void sha256_data();
    void sha256();

    // --- JSON ---
    void fullRecipeTouchesEveryField();
    void equalityComparesEveryField();
    void jsonRoundTrip();
    void jsonWritesEveryFieldWithSchemaVersion();
    void jsonUnsetKeysTakeDefaults();
    void jsonReadsKeptOverridesThatAreFieldsNow();
    void jsonKeepsValuesTheRulesEngineJudges();
    void jsonMoeLayerFreqIntOrList();
    void jsonErrors_data();
    void jsonErrors();
    void jsonMalformedNamesPosition_data();
    void jsonMalformedNamesPosition();
    void canonicalTextAndHash();

    // --- Bridge overrides ---
    void overrideForms_data();
    void overrideForms();
    void overrideErrors_data();
    void overrideErrors();
    void overridesWriteOnlyDifferences();
    void overridesRoundTrip();
    void overridesKeptVerbatim();

    // --- Megatron-LM flags ---
    void flagForms_data();
    void flagForms();
    void flagErrors_data();
    void flagErrors();
    void flagsWriteExactly();
    void flagsRoundTrip();
    void flagsLossyCases();
    void flagsMlaDefaults();
    void maskedSoftmaxFusionPerFrontEnd();
    void deallocatePipelineOutputsPerFrontEnd();

    // --- mixed precision ---
    void mixedPrecisionTable();

    // --- recipe arguments ---
    void recipeInputForms();
    void recipeInputStdin();
    void recipeInputErrors_data();
    void recipeInputErrors();

    // --- presets ---
    void presetsLoad();
};

// --- SHA-256: FIPS 180-4 / NIST example vectors, and lengths around the padding boundaries ---

void TestRecipeIo::sha256_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("digest");
    QTest::newRow("empty") << QByteArray()
                           << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    QTest::newRow("abc") << QByteArray("abc")
                         << "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    QTest::newRow("448 bits") << QByteArray("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                              << "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
    QTest::newRow("896 bits") << QByteArray("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                                            "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
                              << "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1";
    QTest::newRow("55 a") << QByteArray(55, 'a')
                          << "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318";
    QTest::newRow("56 a") << QByteArray(56, 'a')
                          << "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a";
    QTest::newRow("63 a") << QByteArray(63, 'a')
                          << "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34";
    QTest::newRow("64 a") << QByteArray(64, 'a')
                          << "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb";
    QTest::newRow("119 a") << QByteArray(119, 'a')
                           << "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb";
    QTest::newRow("million a") << QByteArray(1000000, 'a')
                               << "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
}

void TestRecipeIo::sha256()
{
    QFETCH(QByteArray, input);
    QFETCH(QString, digest);
    QCOMPARE(QString::fromStdString(sha256Hex(input.toStdString())), digest);
}

// --- JSON ---

void TestRecipeIo::fullRecipeTouchesEveryField()
{
    const Recipe full = fullRecipe();
    const Recipe defaults;
    for (const std::string& key : recipeFieldKeys()) {
        QVERIFY2(recipeFieldValue(full, key) != recipeFieldValue(defaults, key),
            ("fullRecipe() leaves " + key + " at its default").c_str());
    }
}

void TestRecipeIo::equalityComparesEveryField()
{
    QVERIFY(Recipe {} == Recipe {});
    QVERIFY(fullRecipe() == fullRecipe());
    const Recipe full = fullRecipe();
    for (const std::string& key : recipeFieldKeys()) {
        if (key == "explicit_keys")
            continue; // how values were set, deliberately not part of equality
        Recipe r;
        setRecipeField(r, key, recipeFieldValue(full, key), "test");
        QVERIFY2(r != Recipe {}, ("operator== ignores " + key).c_str());
    }
    Recipe marked;
    markExplicit(marked, "num_layers");
    QCOMPARE(marked, Recipe {});
}

void TestRecipeIo::jsonRoundTrip()
{
    for (const Recipe& r : { Recipe {}, fullRecipe() }) {
        QCOMPARE(recipeFromJson(recipeToJson(r)), r);
        QCOMPARE(recipeFromJsonText(recipeToJson(r).dump(2)), r);
        QCOMPARE(recipeFromJsonText(recipeCanonicalText(r)), r);
    }
}

void TestRecipeIo::jsonWritesEveryFieldWithSchemaVersion()
{
    const nlohmann::json j = recipeToJson(Recipe {});
    QCOMPARE(j.at("schema_version").get<int>(), Recipe::kSchemaVersion);
    QCOMPARE(j.at("comm_overlap").at("overlap_moe_expert_parallel_comm"), nlohmann::json(false));
    QCOMPARE(j.at("rerun_state_machine").at("check_for_nan_in_loss"), nlohmann::json(true));
    QCOMPARE(j.at("profile"), nlohmann::json("bridge-pin"));
    QVERIFY(j.at("recompute_granularity").is_null());
    QVERIFY(j.at("recompute_modules").is_null());
    QVERIFY(j.at("ffn_hidden_size").is_null());
    QCOMPARE(j.at("q_lora_rank"), nlohmann::json(512));
    QCOMPARE(j.at("moe_layer_freq"), nlohmann::json(1));
    QVERIFY(j.at("peft").at("scheme").is_null());
    QCOMPARE(j.at("peft").at("dim"), nlohmann::json(32));
    // schema_version, the three nested objects, and every flat key.
    std::size_t flat = 0;
    for (const std::string& key : recipeFieldKeys())
        flat += key.find('.') == std::string::npos ? 1 : 0;
    QCOMPARE(j.size(), flat + 4);
}

void TestRecipeIo::jsonUnsetKeysTakeDefaults()
{
    QCOMPARE(recipeFromJsonText("{}"), Recipe {});
    const Recipe r = recipeFromJsonText(R"({"schema_version": 1, "num_layers": 4,
        "comm_overlap": {"overlap_moe_expert_parallel_comm": true}})");
    Recipe expected;
    expected.num_layers = 4;
    expected.overlap_moe_expert_parallel_comm = true;
    QCOMPARE(r, expected);
}

// A recipe stored by an earlier version kept the overrides no field modelled then (a Bridge recipe's
// pipeline layout, its peft section) verbatim in extra_overrides: read now, those that name a field are read
// into it, the others stay kept; a value the field refuses names extra_overrides.
void TestRecipeIo::jsonReadsKeptOverridesThatAreFieldsNow()
{
    const Recipe r = recipeFromJsonText(R"({"num_layers": 8, "front_end": "bridge_overrides",
        "extra_overrides": ["peft=lora", "peft.dim=8", "model.pipeline_model_parallel_layout=Ett|ttL",
                            "model.apply_rope_fusion=true", "++model.new_thing=1", "~model.other"]})");
    QCOMPARE(r.peft, std::optional<std::string>("lora"));
    QCOMPARE(r.peft_dim, 8);
    QVERIFY(r.pipeline_model_parallel_layout.has_value());
    QCOMPARE(r.extra_overrides,
        (std::vector<std::string> { "model.apply_rope_fusion=true", "++model.new_thing=1", "~model.other" }));
    // Written and read again, the same recipe.
    QCOMPARE(recipeFromJson(recipeToJson(r)), r);
    try {
        recipeFromJsonText(R"({"extra_overrides": ["peft.dim=eight"]})");
        QFAIL("a kept override that its field refuses was taken");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), QStringLiteral("peft.dim"));
        QVERIFY2(QString::fromStdString(e.message).startsWith(QStringLiteral("extra_overrides: ")), e.what());
    }
}

void TestRecipeIo::jsonKeepsValuesTheRulesEngineJudges()
{
    // R04/R05 and the per-profile label checks belong to the rules engine: the reader keeps them as read.
    const Recipe r = recipeFromJsonText(
        R"({"recompute_granularity": "partial", "recompute_method": "diagonal", "recompute_modules": ["moe_layer", "mhc"],
            "cuda_graph_modules": ["full"]})");
    QCOMPARE(r.recompute_granularity.value_or(""), std::string("partial"));
    QCOMPARE(r.recompute_method.value_or(""), std::string("diagonal"));
    QCOMPARE(r.recompute_modules.value_or(std::vector<std::string> {}),
        (std::vector<std::string> { "moe_layer", "mhc" }));
    QCOMPARE(r.cuda_graph_modules.value_or(std::vector<std::string> {}), std::vector<std::string> { "full" });
    QCOMPARE(recipeFromJson(recipeToJson(r)), r);
}

void TestRecipeIo::jsonMoeLayerFreqIntOrList()
{
    QCOMPARE(recipeFromJsonText(R"({"moe_layer_freq": 2})").moe_layer_freq, std::vector<int> { 2 });
    QCOMPARE(recipeFromJsonText(R"({"moe_layer_freq": [0, 1, 1]})").moe_layer_freq,
        (std::vector<int> { 0, 1, 1 }));
    Recipe r;
    r.moe_layer_freq = { 2 };
    QCOMPARE(recipeToJson(r).at("moe_layer_freq"), nlohmann::json(2));
    r.moe_layer_freq = { 0 };
    QCOMPARE(recipeToJson(r).at("moe_layer_freq"), nlohmann::json::parse("[0]"));
    QCOMPARE(recipeFromJson(recipeToJson(r)), r);
}

void TestRecipeIo::jsonErrors_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");

    QTest::newRow("unknown key") << R"({"num_layer": 2})"
                                 << "num_layer"
                                 << "unknown key; did you mean 'num_layers'?";
    QTest::newRow("unknown nested key") << R"({"comm_overlap": {"overlap_moe_expert_paralel_comm": true}})"
                                        << "comm_overlap.overlap_moe_expert_paralel_comm"
                                        << "did you mean 'comm_overlap.overlap_moe_expert_parallel_comm'?";
    QTest::newRow("dotted key at top level") << R"({"rerun_state_machine.check_for_nan_in_loss": false})"
                                             << "rerun_state_machine.check_for_nan_in_loss"
                                             << "unknown key";
    QTest::newRow("nested not an object") << R"({"comm_overlap": true})"
                                          << "comm_overlap"
                                          << "expected an object, got true";
    QTest::newRow("layout character") << R"({"pipeline_model_parallel_layout": "Et|tx|L"})"
                                      << "pipeline_model_parallel_layout"
                                      << "'x' is not a layer of a pipeline layout (stage 1 of 'Et|tx|L' once "
                                         "unrolled: 'tx...'); allowed: E";
    QTest::newRow("layout without layers") << R"({"pipeline_model_parallel_layout": "|(|)*3"})"
                                           << "pipeline_model_parallel_layout"
                                           << "holds no layer";
    QTest::newRow("layout encoder") << R"({"pipeline_model_parallel_layout": [["embedding", "encoder"]]})"
                                    << "pipeline_model_parallel_layout"
                                    << "'encoder' layers are not supported";
    QTest::newRow("layout stage not a list")
        << R"({"pipeline_model_parallel_layout": [["embedding", "decoder"], "loss"]})"
        << "pipeline_model_parallel_layout"
        << "got the stage \"loss\"";
    QTest::newRow("layout type") << R"({"pipeline_model_parallel_layout": 42})"
                                 << "pipeline_model_parallel_layout"
                                 << "expected a layout string";
    QTest::newRow("first stage size type") << R"({"num_layers_in_first_pipeline_stage": "4"})"
                                           << "num_layers_in_first_pipeline_stage"
                                           << "expected an integer or null";
    QTest::newRow("int as string") << R"({"num_layers": "32"})"
                                   << "num_layers"
                                   << "expected an integer, got \"32\"";
    QTest::newRow("int as float") << R"({"num_layers": 3.5})"
                                  << "num_layers"
                                  << "expected an integer, got 3.5";
    QTest::newRow("int out of range") << R"({"seq_length": 99999999999})"
                                      << "seq_length"
                                      << "out of range";
    QTest::newRow("optional int") << R"({"ffn_hidden_size": true})"
                                  << "ffn_hidden_size"
                                  << "expected an integer or null, got true";
    QTest::newRow("bool as int") << R"({"bf16": 1})"
                                 << "bf16"
                                 << "expected true or false, got 1";
    QTest::newRow("nested bool") << R"({"rerun_state_machine": {"check_for_nan_in_loss": "no"}})"
                                 << "rerun_state_machine.check_for_nan_in_loss"
                                 << "expected true or false";
    QTest::newRow("double as string") << R"({"attention_dropout": "0.1"})"
                                      << "attention_dropout"
                                      << "expected a number";
    QTest::newRow("list as string") << R"({"recompute_modules": "core_attn"})"
                                    << "recompute_modules"
                                    << "expected a list of strings or null, got \"core_attn\"";
    QTest::newRow("list element") << R"({"recompute_modules": ["core_attn", 1]})"
                                  << "recompute_modules"
                                  << "got the element 1";
    QTest::newRow("string as int") << R"({"name": 5})"
                                   << "name"
                                   << "expected a string, got 5";
    QTest::newRow("layer freq pattern") << R"({"moe_layer_freq": [0, 2]})"
                                        << "moe_layer_freq"
                                        << "list of 0/1, got the element 2";
    QTest::newRow("layer freq zero") << R"({"moe_layer_freq": 0})"
                                     << "moe_layer_freq"
                                     << "expected an integer >= 1";
    QTest::newRow("layer freq empty") << R"({"moe_layer_freq": []})"
                                      << "moe_layer_freq"
                                      << "non-empty list";
    QTest::newRow("normalization") << R"({"normalization": "rmsnorm"})"
                                   << "normalization"
                                   << "'rmsnorm' is not allowed; allowed: LayerNorm, RMSNorm";
    QTest::newRow("activation_func") << R"({"activation_func": "relu"})"
                                     << "activation_func"
                                     << "allowed: gelu, silu";
    QTest::newRow("attention_backend") << R"({"attention_backend": "local"})"
                                       << "attention_backend"
                                       << "allowed: fused, flash, unfused";
    QTest::newRow("transformer_impl") << R"({"transformer_impl": "te"})"
                                      << "transformer_impl"
                                      << "allowed: transformer_engine, local";
    QTest::newRow("cuda_graph_impl") << R"({"cuda_graph_impl": "full"})"
                                     << "cuda_graph_impl"
                                     << "allowed: none, local, transformer_engine, full_iteration";
    QTest::newRow("fp8") << R"({"fp8": "e5m2"})"
                         << "fp8"
                         << "allowed: e4m3, hybrid";
    QTest::newRow("fp8_recipe") << R"({"fp8_recipe": "current"})"
                                << "fp8_recipe"
                                << "allowed: delayed, tensorwise, blockwise, mxfp8";
    QTest::newRow("moe_token_dispatcher_type") << R"({"moe_token_dispatcher_type": "a2a"})"
                                               << "moe_token_dispatcher_type"
                                               << "allowed: allgather, alltoall, flex";
    QTest::newRow("profile") << R"({"profile": "nightly"})"
                             << "profile"
                             << "'nightly' is not allowed; allowed: bridge-pin, guide, main, dev";
    QTest::newRow("newer schema") << R"({"schema_version": 2, "a_key_of_version_2": 1})"
                                  << "schema_version"
                                  << "schema_version 2 is newer than this program reads (1)";
    QTest::newRow("schema zero") << R"({"schema_version": 0})"
                                 << "schema_version"
                                 << "must be >= 1";
    QTest::newRow("schema as string") << R"({"schema_version": "1"})"
                                      << "schema_version"
                                      << "expected an integer";
    QTest::newRow("duplicate key") << R"({"num_layers": 4, "hidden_size": 64, "num_layers": 8})"
                                   << "num_layers"
                                   << "duplicate key";
    QTest::newRow("duplicate nested key")
        << R"({"comm_overlap": {"overlap_moe_expert_parallel_comm": true, "overlap_moe_expert_parallel_comm": false}})"
        << "comm_overlap.overlap_moe_expert_parallel_comm"
        << "duplicate key";
    QTest::newRow("not an object") << "[1, 2]"
                                   << ""
                                   << "a recipe is a JSON object, got array";
}

void TestRecipeIo::jsonErrors()
{
    QFETCH(QString, text);
    QFETCH(QString, field);
    QFETCH(QString, message);
    try {
        recipeFromJsonText(text.toStdString(), "test.json");
        QFAIL("no RecipeError");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), field);
        QCOMPARE(QString::fromStdString(e.where), QStringLiteral("test.json"));
        QVERIFY2(QString::fromStdString(e.message).contains(message), e.what());
        QVERIFY(QString::fromUtf8(e.what()).startsWith(QStringLiteral("test.json: ")));
    }
}

void TestRecipeIo::jsonMalformedNamesPosition_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("position");
    QTest::newRow("missing value") << "{\n  \"num_layers\": 32,\n  \"hidden_size\": ,\n}"
                                   << "line 3, column 18";
    QTest::newRow("trailing comma") << "{\"num_layers\": 32,\n}"
                                    << "line 2, column 1";
    QTest::newRow("truncated") << "{\"num_layers\": 32"
                               << "line 1, column 18";
    QTest::newRow("unexpected string") << "{\n  \"num_layers\": 4\n  \"hidden_size\": 64\n}"
                                       << "line 3, column 3";
    QTest::newRow("bad literal") << "{\n\t\"bf16\": tru\n}"
                                 << "line 2, column 10";
    QTest::newRow("empty") << ""
                           << "line 1, column 1";
}

void TestRecipeIo::jsonMalformedNamesPosition()
{
    QFETCH(QString, text);
    QFETCH(QString, position);
    try {
        recipeFromJsonText(text.toStdString(), "bad.json");
        QFAIL("no RecipeError");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.where), QStringLiteral("bad.json"));
        QVERIFY2(
            QString::fromStdString(e.message).startsWith(QStringLiteral("malformed JSON at ") + position),
            e.what());
    }
}

void TestRecipeIo::canonicalTextAndHash()
{
    const Recipe r = fullRecipe();
    const std::string text = recipeCanonicalText(r);
    // Compact with sorted keys: the first key is the alphabetically first field, and no indentation.
    QVERIFY(QString::fromStdString(text).startsWith(
        QStringLiteral("{\"account_for_embedding_in_pipeline_split\":true,")));
    QVERIFY(text.find('\n') == std::string::npos);
    QVERIFY(text.find("\": ") == std::string::npos);
    // The same recipe read from differently formatted text hashes the same; any field change does not.
    const Recipe reread = recipeFromJsonText(recipeToJson(r).dump(4));
    QCOMPARE(sha256Hex(recipeCanonicalText(reread)), sha256Hex(text));
    Recipe changed = r;
    changed.recompute_modules = std::vector<std::string> { "core_attn" };
    QVERIFY(sha256Hex(recipeCanonicalText(changed)) != sha256Hex(text));
    QCOMPARE(sha256Hex(text).size(), std::size_t(64));
}

// --- Bridge overrides ---

void TestRecipeIo::overrideForms_data()
{
    QTest::addColumn<QString>("override");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value"); // JSON

    QTest::newRow("granularity") << "model.recompute_granularity=selective"
                                 << "recompute_granularity"
                                 << R"("selective")";
    QTest::newRow("hydra list") << "model.recompute_modules=[core_attn,moe_act]"
                                << "recompute_modules"
                                << R"(["core_attn","moe_act"])";
    QTest::newRow("literal single quotes") << "'model.recompute_modules=[core_attn,moe_act]'"
                                           << "recompute_modules"
                                           << R"(["core_attn","moe_act"])";
    QTest::newRow("literal double quotes") << "\"model.recompute_modules=[core_attn,moe_act]\""
                                           << "recompute_modules"
                                           << R"(["core_attn","moe_act"])";
    QTest::newRow("repr list") << "model.recompute_modules=['core_attn', 'moe_act']"
                               << "recompute_modules"
                               << R"(["core_attn","moe_act"])";
    QTest::newRow("double-quoted elements") << "model.recompute_modules=[\"core_attn\", \"moe_act\"]"
                                            << "recompute_modules"
                                            << R"(["core_attn","moe_act"])";
    QTest::newRow("spaces in list") << "model.recompute_modules=[ core_attn , moe_act ]"
                                    << "recompute_modules"
                                    << R"(["core_attn","moe_act"])";
    QTest::newRow("empty list") << "model.recompute_modules=[]"
                                << "recompute_modules"
                                << "[]";
    QTest::newRow("null list") << "model.recompute_modules=null"
                               << "recompute_modules"
                               << "null";
    QTest::newRow("null string") << "model.recompute_granularity=null"
                                 << "recompute_granularity"
                                 << "null";
    QTest::newRow("method") << "model.recompute_method=uniform"
                            << "recompute_method"
                            << R"("uniform")";
    QTest::newRow("int") << "model.recompute_num_layers=2"
                         << "recompute_num_layers"
                         << "2";
    QTest::newRow("null int") << "model.q_lora_rank=null"
                              << "q_lora_rank"
                              << "null";
    QTest::newRow("float") << "model.attention_dropout=0.0"
                           << "attention_dropout"
                           << "0.0";
    QTest::newRow("float exponent") << "model.hidden_dropout=1e-2"
                                    << "hidden_dropout"
                                    << "0.01";
    QTest::newRow("int into float") << "model.hidden_dropout=0"
                                    << "hidden_dropout"
                                    << "0.0";
    QTest::newRow("optional float") << "model.moe_input_jitter_eps=0.01"
                                    << "moe_input_jitter_eps"
                                    << "0.01";
    QTest::newRow("true") << "model.sequence_parallel=true"
                          << "sequence_parallel"
                          << "true";
    QTest::newRow("True") << "model.moe_grouped_gemm=True"
                          << "moe_grouped_gemm"
                          << "true";
    QTest::newRow("false") << "model.bf16=false"
                           << "bf16"
                           << "false";
    QTest::newRow("EP overlap") << "comm_overlap.overlap_moe_expert_parallel_comm=true"
                                << "comm_overlap.overlap_moe_expert_parallel_comm"
                                << "true";
    QTest::newRow("NaN check") << "rerun_state_machine.check_for_nan_in_loss=false"
                               << "rerun_state_machine.check_for_nan_in_loss"
                               << "false";
    QTest::newRow("mixed precision") << "mixed_precision=bf16_with_fp8_delayed_scaling_mixed"
                                     << "mixed_precision"
                                     << R"("bf16_with_fp8_delayed_scaling_mixed")";
    QTest::newRow("mixed precision hyphens") << "mixed_precision=bf16-mixed"
                                             << "mixed_precision"
                                             << R"("bf16-mixed")";
    QTest::newRow("mixed precision null") << "mixed_precision=null"
                                          << "mixed_precision"
                                          << "null";
    QTest::newRow("plus plus") << "++model.num_layers=4"
                               << "num_layers"
                               << "4";
    QTest::newRow("quoted string") << "# studio: name='my run, [1]'"
                                   << "name"
                                   << R"("my run, [1]")";
    QTest::newRow("number as string field") << "# studio: name=123"
                                            << "name"
                                            << R"("123")";
    QTest::newRow("profile") << "# studio: profile=guide"
                             << "profile"
                             << R"("guide")";
    QTest::newRow("memory target") << "# studio: memory_target_gb=70.5"
                                   << "memory_target_gb"
                                   << "70.5";
    QTest::newRow("GPU compute capability") << "# studio: gpu_compute_capability=100"
                                            << "gpu_compute_capability"
                                            << "100";
    QTest::newRow("warmup") << "# studio: warmup_iters=2"
                            << "warmup_iters"
                            << "2";
    QTest::newRow("train iters") << "train.train_iters=50"
                                 << "train_iters"
                                 << "50";
    QTest::newRow("hybrid pattern") << "model.hybrid_layer_pattern=MEMEM*EME"
                                    << "hybrid_layer_pattern"
                                    << R"("MEMEM*EME")";
    QTest::newRow("hybrid override pattern") << "model.hybrid_override_pattern='M*M-'"
                                             << "hybrid_layer_pattern"
                                             << R"("M*M-")";
    QTest::newRow("mamba heads") << "model.mamba_num_heads=64"
                                 << "mamba_num_heads"
                                 << "64";
    QTest::newRow("mamba chunk") << "model.mamba_chunk_size=256"
                                 << "mamba_chunk_size"
                                 << "256";
    QTest::newRow("moe latent size") << "model.moe_latent_size=1024"
                                     << "moe_latent_size"
                                     << "1024";
    QTest::newRow("moe latent size null") << "model.moe_latent_size=null"
                                          << "moe_latent_size"
                                          << "null";
    // Megatron Core's pipeline layout: its string form (quoted, as Hydra needs for '(' ')'), or its list form
    // (Hydra's nested list, or Python's repr of one), kept as the string form.
    QTest::newRow("layout quoted") << "model.pipeline_model_parallel_layout='Et|(tt|)*30mL'"
                                   << "pipeline_model_parallel_layout"
                                   << R"("Et|(tt|)*30mL")";
    QTest::newRow("layout bare") << "model.pipeline_model_parallel_layout=Et*4|(t*4|)*14tmL"
                                 << "pipeline_model_parallel_layout"
                                 << R"("Et*4|(t*4|)*14tmL")";
    QTest::newRow("layout list")
        << "model.pipeline_model_parallel_layout=[[embedding,decoder],[decoder,loss]]"
        << "pipeline_model_parallel_layout"
        << R"("Et|tL")";
    QTest::newRow("layout list repr")
        << "model.pipeline_model_parallel_layout=[['embedding', 'decoder'], [], ['decoder', 'mtp', 'loss']]"
        << "pipeline_model_parallel_layout"
        << R"("Et||tmL")";
    QTest::newRow("layout null") << "model.pipeline_model_parallel_layout=null"
                                 << "pipeline_model_parallel_layout"
                                 << "null";
    QTest::newRow("first stage size") << "model.num_layers_in_first_pipeline_stage=10"
                                      << "num_layers_in_first_pipeline_stage"
                                      << "10";
    QTest::newRow("last stage size") << "model.num_layers_in_last_pipeline_stage=4"
                                     << "num_layers_in_last_pipeline_stage"
                                     << "4";
    QTest::newRow("embedding in the split") << "model.account_for_embedding_in_pipeline_split=True"
                                            << "account_for_embedding_in_pipeline_split"
                                            << "true";
    QTest::newRow("loss in the split") << "model.account_for_loss_in_pipeline_split=true"
                                       << "account_for_loss_in_pipeline_split"
                                       << "true";
    QTest::newRow("squared relu") << "model.activation_func=squared_relu"
                                  << "activation_func"
                                  << R"("squared_relu")";
    QTest::newRow("linear attention list") << "model.linear_attention_freq=[1,1,1,0]"
                                           << "linear_attention_freq"
                                           << "[1,1,1,0]";
    QTest::newRow("linear attention null") << "model.linear_attention_freq=null"
                                           << "linear_attention_freq"
                                           << "null";
    QTest::newRow("attention backend") << "model.attention_backend=flash"
                                       << "attention_backend"
                                       << R"("flash")";
    QTest::newRow("attention backend local") << "model.attention_backend=local"
                                             << "attention_backend"
                                             << R"("unfused")";
    QTest::newRow("attention backend auto") << "model.attention_backend=auto"
                                            << "attention_backend"
                                            << R"("fused")";
    QTest::newRow("layer freq list") << "model.moe_layer_freq=[0,1,1]"
                                     << "moe_layer_freq"
                                     << "[0,1,1]";
    QTest::newRow("layer freq int") << "model.moe_layer_freq=2"
                                    << "moe_layer_freq"
                                    << "2";
    QTest::newRow("cuda graph modules") << "model.cuda_graph_modules=[attn,moe_router]"
                                        << "cuda_graph_modules"
                                        << R"(["attn","moe_router"])";
    QTest::newRow("fp8") << "model.fp8=e4m3"
                         << "fp8"
                         << R"("e4m3")";
    QTest::newRow("fp8 null") << "model.fp8=null"
                              << "fp8"
                              << "null";
    QTest::newRow("checkpoint flag") << "# studio: checkpoint_activations_flag=--checkpoint-activations"
                                     << "checkpoint_activations_flag"
                                     << R"("--checkpoint-activations")";
    QTest::newRow("data parallel") << "# studio: data_parallel_size=8"
                                   << "data_parallel_size"
                                   << "8";
    QTest::newRow("Null") << "model.recompute_granularity=Null"
                          << "recompute_granularity"
                          << "null";
    QTest::newRow("NULL") << "model.fp8=NULL"
                          << "fp8"
                          << "null";
    QTest::newRow("tilde") << "model.fp8=~"
                           << "fp8"
                           << "null";
    QTest::newRow("quoted None is a string") << "model.experimental_attention_variant='None'"
                                             << "experimental_attention_variant"
                                             << R"("None")";
    QTest::newRow("global batch") << "train.global_batch_size=256"
                                  << "global_batch_size"
                                  << "256";
    QTest::newRow("micro batch") << "train.micro_batch_size=2"
                                 << "micro_batch_size"
                                 << "2";
    QTest::newRow("dataset seq") << "dataset.seq_length=8192"
                                 << "seq_length"
                                 << "8192";
    QTest::newRow("model seq") << "model.seq_length=8192"
                               << "seq_length"
                               << "8192";
    QTest::newRow("ddp distributed optimizer") << "ddp.use_distributed_optimizer=true"
                                               << "use_distributed_optimizer"
                                               << "true";
    QTest::newRow("optimizer distributed optimizer") << "optimizer.use_distributed_optimizer=true"
                                                     << "use_distributed_optimizer"
                                                     << "true";
    QTest::newRow("ddp grad reduce") << "ddp.grad_reduce_in_fp32=true"
                                     << "grad_reduce_in_fp32"
                                     << "true";
    QTest::newRow("precision-aware optimizer") << "optimizer.use_precision_aware_optimizer=true"
                                               << "use_precision_aware_optimizer"
                                               << "true";
    QTest::newRow("untied") << "model.share_embeddings_and_output_weights=false"
                            << "untie_embeddings_and_output_weights"
                            << "true";
    QTest::newRow("cuda graph scope full") << R"(model.cuda_graph_scope="full")"
                                           << "cuda_graph_scope"
                                           << "null";
    QTest::newRow("cuda graph scope one") << "model.cuda_graph_scope=attn"
                                          << "cuda_graph_scope"
                                          << R"(["attn"])";
    QTest::newRow("offload modules null") << "model.offload_modules=null"
                                          << "offload_modules"
                                          << "[]";
    QTest::newRow("plus plus on ours") << "++train.global_batch_size=64"
                                       << "global_batch_size"
                                       << "64";
    QTest::newRow("fp8 recipe custom") << "model.fp8_recipe=custom"
                                       << "fp8_recipe"
                                       << R"("custom")";
    QTest::newRow("bias activation fusion") << "model.bias_activation_fusion=true"
                                            << "bias_activation_fusion"
                                            << "true";
    QTest::newRow("no softmax fusion") << "model.masked_softmax_fusion=false"
                                       << "masked_softmax_fusion"
                                       << "false";
}

void TestRecipeIo::overrideForms()
{
    QFETCH(QString, override);
    QFETCH(QString, field);
    QFETCH(QString, value);
    const Recipe r = recipeFromBridgeOverrides({ override.toStdString() });
    QCOMPARE(QString::fromStdString(recipeFieldValue(r, field.toStdString()).dump()),
        QString::fromStdString(nlohmann::json::parse(value.toStdString()).dump()));
    QVERIFY(isExplicit(r, field.toStdString()));
    QVERIFY(r.extra_overrides.empty());
    // Nothing else changed: the rest are Bridge's defaults.
    Recipe expected = frontEndDefaults(InputFormat::BridgeOverrides);
    setRecipeField(expected, field.toStdString(), recipeFieldValue(r, field.toStdString()), "test");
    QCOMPARE(r, expected);
}

void TestRecipeIo::overrideErrors_data()
{
    QTest::addColumn<QStringList>("overrides");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");

    QTest::newRow("unknown key") << L({ "model.num_layer=2" }) << "override 1"
                                 << "model.num_layer"
                                 << "did you mean 'model.num_layers'?";
    QTest::newRow("both hybrid patterns")
        << L({ "model.hybrid_layer_pattern=M*", "model.hybrid_override_pattern=MM" }) << "override 2"
        << "model.hybrid_override_pattern"
        << "cannot both be specified";
    QTest::newRow("layout character")
        << L({ "model.pipeline_model_parallel_layout=Et|(tt|)*3tX" }) << "override 1"
        << "pipeline_model_parallel_layout"
        << "'X' is not a layer of a pipeline layout";
    QTest::newRow("layout None") << L({ "model.pipeline_model_parallel_layout=None" }) << "override 1"
                                 << "pipeline_model_parallel_layout"
                                 << "Hydra reads None as the string 'None'";
    QTest::newRow("layout three deep")
        << L({ "model.pipeline_model_parallel_layout=[[[embedding]]]" }) << "override 1"
        << "pipeline_model_parallel_layout"
        << "nested more than two deep";
    QTest::newRow("layout flat list")
        << L({ "model.pipeline_model_parallel_layout=[embedding,loss]" }) << "override 1"
        << "pipeline_model_parallel_layout"
        << "got the stage \"embedding\"";
    QTest::newRow("activation not built") << L({ "model.activation_func=relu" }) << "override 1"
                                          << "activation_func"
                                          << "allowed: gelu, silu, squared_relu";
    QTest::newRow("unknown second") << L({ "model.num_layers=2", "model.recompute_module=[core_attn]" })
                                    << "override 2"
                                    << "model.recompute_module"
                                    << "did you mean 'model.recompute_modules'?";
    QTest::newRow("unknown section") << L({ "optimiser.lr=1e-4" }) << "override 1"
                                     << "optimiser.lr"
                                     << "no section 'optimiser'; did you mean 'optimizer'?";
    QTest::newRow("studio is no section") << L({ "studio.num_layers=2" }) << "override 1"
                                          << "studio.num_layers"
                                          << "'# studio: KEY=VALUE' comment";
    QTest::newRow("unknown model field") << L({ "model.cuda_graph_warmup_step=3" }) << "override 1"
                                         << "model.cuda_graph_warmup_step"
                                         << "did you mean 'model.cuda_graph_warmup_steps'?";
    QTest::newRow("batch under model") << L({ "model.global_batch_size=8" }) << "override 1"
                                       << "model.global_batch_size"
                                       << "did you mean 'train.global_batch_size'?";
    QTest::newRow("unmodelled field type") << L({ "model.cuda_graph_warmup_steps=abc" }) << "override 1"
                                           << "model.cuda_graph_warmup_steps"
                                           << "annotation allows int";
    QTest::newRow("None is a string") << L({ "model.recompute_granularity=None" }) << "override 1"
                                      << "recompute_granularity"
                                      << "Megatron rejects recompute_granularity='None'";
    QTest::newRow("None for a list") << L({ "model.offload_modules=None" }) << "override 1"
                                     << "offload_modules"
                                     << "write offload_modules=null";
    QTest::newRow("plus on an existing key") << L({ "+model.num_layers=4" }) << "override 1"
                                             << "model.num_layers"
                                             << "Hydra refuses +model.num_layers";
    QTest::newRow("plus on an unmodelled key") << L({ "+model.cuda_graph_warmup_steps=3" }) << "override 1"
                                               << "model.cuda_graph_warmup_steps"
                                               << "Hydra refuses";
    QTest::newRow("unknown logger field") << L({ "logger.log_intervall=5" }) << "override 1"
                                          << "logger.log_intervall"
                                          << "did you mean 'logger.log_interval'?";
    QTest::newRow("section field type") << L({ "logger.log_interval=often" }) << "override 1"
                                        << "logger.log_interval"
                                        << "annotation allows int";
    QTest::newRow("plus on a section field") << L({ "+logger.log_interval=5" }) << "override 1"
                                             << "logger.log_interval"
                                             << "Hydra refuses";
    QTest::newRow("studio comment key") << L({ "# studio: num_layers=2" }) << "override 1"
                                        << "num_layers"
                                        << "our own settings";
    QTest::newRow("EP overlap under model")
        << L({ "comm_overlap.overlap_moe_expert_parallel=true" }) << "override 1"
        << "comm_overlap.overlap_moe_expert_parallel"
        << "did you mean 'comm_overlap.overlap_moe_expert_parallel_comm'?";
    QTest::newRow("no equals") << L({ "model.recompute_modules" }) << "override 1"
                               << ""
                               << "expected KEY=VALUE";
    QTest::newRow("no key") << L({ "=3" }) << "override 1"
                            << ""
                            << "expected KEY=VALUE";
    QTest::newRow("int from text") << L({ "model.num_layers=abc" }) << "override 1"
                                   << "num_layers"
                                   << "expected an integer, got \"abc\"";
    QTest::newRow("int from float") << L({ "model.num_layers=2.5" }) << "override 1"
                                    << "num_layers"
                                    << "expected an integer, got 2.5";
    QTest::newRow("bool from text") << L({ "model.sequence_parallel=yes" }) << "override 1"
                                    << "sequence_parallel"
                                    << "expected true or false";
    QTest::newRow("bool from int") << L({ "comm_overlap.overlap_moe_expert_parallel_comm=1" }) << "override 1"
                                   << "comm_overlap.overlap_moe_expert_parallel_comm"
                                   << "expected true or false";
    QTest::newRow("enum") << L({ "model.normalization=rmsnorm" }) << "override 1"
                          << "normalization"
                          << "allowed: LayerNorm, RMSNorm";
    QTest::newRow("mixed precision") << L({ "mixed_precision=bf16_mixd" }) << "override 1"
                                     << "mixed_precision"
                                     << "did you mean 'bf16_mixed'?";
    QTest::newRow("nested list") << L({ "model.recompute_modules=[core_attn,[x]]" }) << "override 1"
                                 << "recompute_modules"
                                 << "nested lists are not supported";
    QTest::newRow("unclosed list") << L({ "model.recompute_modules=[core_attn," }) << "override 1"
                                   << "recompute_modules"
                                   << "a list must end with ']'";
    QTest::newRow("empty element") << L({ "model.recompute_modules=[core_attn,,moe_act]" }) << "override 1"
                                   << "recompute_modules"
                                   << "empty list element";
    QTest::newRow("unterminated quote") << L({ "model.recompute_modules=['core_attn]" }) << "override 1"
                                        << "recompute_modules"
                                        << "unterminated quote";
    QTest::newRow("stray quote") << L({ "model.normalization=it's" }) << "override 1"
                                 << "normalization"
                                 << "cannot read the value";
    QTest::newRow("list for int") << L({ "model.num_layers=[1]" }) << "override 1"
                                  << "num_layers"
                                  << "expected an integer";
}

void TestRecipeIo::overrideErrors()
{
    QFETCH(QStringList, overrides);
    QFETCH(QString, where);
    QFETCH(QString, field);
    QFETCH(QString, message);
    try {
        recipeFromBridgeOverrides(toStd(overrides));
        QFAIL("no RecipeError");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.where), where);
        QCOMPARE(QString::fromStdString(e.field), field);
        QVERIFY2(QString::fromStdString(e.message).contains(message), e.what());
    }
}

void TestRecipeIo::overridesWriteOnlyDifferences()
{
    QVERIFY(recipeToBridgeOverrides(frontEndDefaults(InputFormat::BridgeOverrides)).empty());
    QCOMPARE(QString::fromStdString(studioCommentLine(frontEndDefaults(InputFormat::BridgeOverrides))),
        QStringLiteral("# studio: profile=bridge-pin"));
    Recipe r = frontEndDefaults(InputFormat::BridgeOverrides);
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> { "core_attn", "moe_act" };
    r.overlap_moe_expert_parallel_comm = true;
    r.mixed_precision = "bf16_mixed";
    r.name = "null";
    r.train_iters = 30;
    r.global_batch_size = 256;
    r.use_distributed_optimizer = true;
    r.untie_embeddings_and_output_weights = true;
    // R16's fix-it sets moe_shared_expert_overlap=false: a value the user set is written at its default.
    markExplicit(r, "moe_shared_expert_overlap");
    r.extra_overrides = { "logger.log_interval=5" };
    const std::vector<std::string> expected = { "train.global_batch_size=256",
        "model.share_embeddings_and_output_weights=false", "model.moe_shared_expert_overlap=false",
        "ddp.use_distributed_optimizer=true", "mixed_precision=bf16_mixed",
        "model.recompute_granularity=selective", "model.recompute_modules=[core_attn,moe_act]",
        "comm_overlap.overlap_moe_expert_parallel_comm=true", "train.train_iters=30",
        "logger.log_interval=5" };
    QCOMPARE(join(recipeToBridgeOverrides(r)), join(expected));
    QCOMPARE(QString::fromStdString(studioCommentLine(r)),
        QStringLiteral("# studio: name='null' profile=bridge-pin"));
    // A JSON recipe (TransformerConfig's defaults) carries its seq_length to Bridge, whose default is 1024,
    // its attention mask (Bridge skips it), its attention_softmax_in_fp32 True, its masked_softmax_fusion,
    // gradient_accumulation_fusion and deallocate_pipeline_outputs False (GPTModelProvider's are False, True,
    // True and True).
    const std::vector<std::string> json = recipeToBridgeOverrides(Recipe {});
    QCOMPARE(join(json),
        QStringLiteral(
            "model.seq_length=4096 dataset.seq_length=4096 "
            "dataset.skip_getting_attention_mask_from_dataset=false model.attention_softmax_in_fp32=true "
            "model.masked_softmax_fusion=false model.gradient_accumulation_fusion=false "
            "model.deallocate_pipeline_outputs=false"));
    r.recompute_modules = std::vector<std::string> {};
    r.q_lora_rank = std::nullopt;
    const std::vector<std::string> out = recipeToBridgeOverrides(r);
    QVERIFY(std::find(out.begin(), out.end(), "model.recompute_modules=[]") != out.end());
    QVERIFY(std::find(out.begin(), out.end(), "model.q_lora_rank=null") != out.end());
}

void TestRecipeIo::overridesRoundTrip()
{
    std::vector<Recipe> recipes = { Recipe {}, fullRecipe() };
    Recipe tricky;
    for (const char* name :
        { "", "null", "None", "true", "123", "1e5", "a b", "x=y", "it's", "back\\slash", "[x]" }) {
        tricky.name = name;
        recipes.push_back(tricky);
    }
    tricky.recompute_modules = std::vector<std::string> {};
    tricky.cuda_graph_modules = std::vector<std::string> { "123", "null" };
    tricky.hidden_dropout = 1e-7;
    recipes.push_back(tricky);
    for (const auto& [file, preset] : presets())
        recipes.push_back(preset);
    for (const Recipe& r : recipes) {
        const std::vector<std::string> overrides = overridesWithComment(r);
        try {
            QCOMPARE(recipeFromBridgeOverrides(overrides), withoutOverridelessFields(r));
        } catch (const RecipeError& e) {
            QFAIL(
                qPrintable(QString::fromUtf8(e.what()) + QStringLiteral(" reading back ") + join(overrides)));
        }
    }
}

void TestRecipeIo::overridesKeptVerbatim()
{
    const std::vector<std::string> in = { "model.num_layers=4", "model.cuda_graph_warmup_steps=3",
        R"(model.cuda_graph_scope="full")", "logger.log_interval=5", "checkpoint.save=/ckpt",
        "optimizer.lr=1e-4", "++model.not_in_any_config=1", "~model.num_layers" };
    const Recipe r = recipeFromBridgeOverrides(in);
    QCOMPARE(r.num_layers, frontEndDefaults(InputFormat::BridgeOverrides).num_layers); // ~ deleted it
    QVERIFY(!isExplicit(r, "num_layers"));
    QVERIFY(!r.cuda_graph_scope.has_value());
    const std::vector<std::string> kept = { "model.cuda_graph_warmup_steps=3", "logger.log_interval=5",
        "checkpoint.save=/ckpt", "optimizer.lr=1e-4", "++model.not_in_any_config=1", "~model.num_layers" };
    QCOMPARE(join(r.extra_overrides), join(kept));
    const std::vector<std::string> out = recipeToBridgeOverrides(r);
    QCOMPARE(join(std::vector<std::string>(out.end() - std::ptrdiff_t(kept.size()), out.end())), join(kept));
    QVERIFY(join(out).contains(QStringLiteral("model.cuda_graph_scope=null")));
    QVERIFY(QString::fromStdString(keptSettingsNote(r)).contains(QStringLiteral("logger.log_interval")));
    QCOMPARE(recipeFromBridgeOverrides(out), r);
}

// --- Megatron-LM flags ---

void TestRecipeIo::flagForms_data()
{
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("value"); // JSON

    auto row = [](const char* name, std::initializer_list<std::string> flags, const char* field,
                   const char* value) {
        QTest::newRow(name) << L(flags) << QString::fromLatin1(field) << QString::fromLatin1(value);
    };
    row("granularity", { "--recompute-granularity", "full" }, "recompute_granularity", R"("full")");
    // bias_activation_fusion as core_transformer_config_from_args derives it (both fusions on by default).
    row("gelu fusion default", { "--num-layers", "2" }, "bias_activation_fusion", "true");
    row("no gelu fusion", { "--no-bias-gelu-fusion" }, "bias_activation_fusion", "false");
    row("gelu fusion without biases", { "--disable-bias-linear" }, "bias_activation_fusion", "false");
    row("swiglu fusion default", { "--swiglu" }, "bias_activation_fusion", "true");
    row("swiglu fusion without biases", { "--swiglu", "--disable-bias-linear" }, "bias_activation_fusion",
        "true");
    row("no swiglu fusion", { "--swiglu", "--no-bias-swiglu-fusion" }, "bias_activation_fusion", "false");
    row("no gelu fusion under swiglu", { "--swiglu", "--no-bias-gelu-fusion" }, "bias_activation_fusion",
        "true");
    row("no swiglu fusion under gelu", { "--no-bias-swiglu-fusion" }, "bias_activation_fusion", "true");
    row("method", { "--recompute-method", "block" }, "recompute_method", R"("block")");
    row("num layers", { "--recompute-num-layers", "2" }, "recompute_num_layers", "2");
    row("modules", { "--recompute-modules", "core_attn", "moe_act" }, "recompute_modules",
        R"(["core_attn","moe_act"])");
    row("modules =", { "--recompute-modules=core_attn" }, "recompute_modules", R"(["core_attn"])");
    row("recompute activations", { "--recompute-activations" }, "recompute_activations", "true");
    row("moe layer recompute", { "--moe-layer-recompute" }, "moe_layer_recompute", "true");
    row("distribute", { "--distribute-saved-activations" }, "distribute_saved_activations", "true");
    row("checkpoint activations", { "--checkpoint-activations" }, "checkpoint_activations_flag",
        R"("--checkpoint-activations")");
    row("fp8 e4m3", { "--fp8-format", "e4m3" }, "fp8", R"("e4m3")");
    row("fp8 hybrid", { "--fp8-format=hybrid" }, "fp8", R"("hybrid")");
    row("fp8 recipe", { "--fp8-recipe", "tensorwise" }, "fp8_recipe", R"("tensorwise")");
    row("fp4", { "--fp4-format", "e2m1" }, "fp4", R"("e2m1")");
    row("bf16", { "--bf16" }, "bf16", "true");
    row("fp16", { "--fp16" }, "fp16", "true");
    row("tp", { "--tensor-model-parallel-size", "4" }, "tensor_model_parallel_size", "4");
    row("pp", { "--pipeline-model-parallel-size", "4" }, "pipeline_model_parallel_size", "4");
    row("layers per virtual stage",
        { "--num-layers-per-virtual-pipeline-stage", "2", "--num-layers", "32",
            "--pipeline-model-parallel-size", "4" },
        "virtual_pipeline_model_parallel_size", "4");
    row("virtual stages", { "--num-virtual-stages-per-pipeline-rank", "3" },
        "virtual_pipeline_model_parallel_size", "3");
    row("cp", { "--context-parallel-size", "2" }, "context_parallel_size", "2");
    row("ep", { "--expert-model-parallel-size", "8" }, "expert_model_parallel_size", "8");
    row("etp", { "--expert-tensor-parallel-size", "1" }, "expert_tensor_parallel_size", "1");
    row("sp", { "--sequence-parallel" }, "sequence_parallel", "true");
    row("num layers", { "--num-layers", "32" }, "num_layers", "32");
    row("hidden", { "--hidden-size", "4096" }, "hidden_size", "4096");
    row("ffn", { "--ffn-hidden-size", "14336" }, "ffn_hidden_size", "14336");
    row("heads", { "--num-attention-heads", "32" }, "num_attention_heads", "32");
    row("gqa", { "--group-query-attention", "--num-query-groups", "8" }, "num_query_groups", "8");
    row("gqa after groups", { "--num-query-groups", "8", "--group-query-attention" }, "num_query_groups",
        "8");
    row("gqa alone", { "--group-query-attention" }, "num_query_groups", "1");
    row("kv channels", { "--kv-channels", "128" }, "kv_channels", "128");
    row("seq", { "--seq-length", "8192" }, "seq_length", "8192");
    row("seq =", { "--seq-length=4096" }, "seq_length", "4096");
    row("mbs", { "--micro-batch-size", "2" }, "micro_batch_size", "2");
    row("gbs", { "--global-batch-size", "64" }, "global_batch_size", "64");
    row("normalization", { "--normalization", "RMSNorm" }, "normalization", R"("RMSNorm")");
    row("swiglu gated", { "--swiglu" }, "gated_linear_unit", "true");
    row("swiglu silu", { "--swiglu" }, "activation_func", R"("silu")");
    row("mla", { "--multi-latent-attention" }, "multi_latent_attention", "true");
    row("q lora", { "--q-lora-rank", "1536" }, "q_lora_rank", "1536");
    row("kv lora", { "--kv-lora-rank", "512" }, "kv_lora_rank", "512");
    row("qk head", { "--qk-head-dim", "192" }, "qk_head_dim", "192");
    row("qk pos", { "--qk-pos-emb-head-dim", "32" }, "qk_pos_emb_head_dim", "32");
    row("v head", { "--v-head-dim", "96" }, "v_head_dim", "96");
    row("attention variant", { "--experimental-attention-variant", "gated_delta_net" },
        "experimental_attention_variant", R"("gated_delta_net")");
    row("experts", { "--num-experts", "64" }, "num_moe_experts", "64");
    row("hybrid pattern", { "--hybrid-layer-pattern", "M*M-ME" }, "hybrid_layer_pattern", R"("M*M-ME")");
    row("hybrid override pattern", { "--hybrid-override-pattern", "MEM*" }, "hybrid_layer_pattern",
        R"("MEM*")");
    row("hybrid model", { "--is-hybrid-model" }, "is_hybrid_model", "true");
    row("mamba heads", { "--mamba-num-heads", "64" }, "mamba_num_heads", "64");
    row("mamba head dim", { "--mamba-head-dim", "80" }, "mamba_head_dim", "80");
    row("mamba state", { "--mamba-state-dim", "64" }, "mamba_state_dim", "64");
    row("mamba groups", { "--mamba-num-groups", "4" }, "mamba_num_groups", "4");
    row("squared relu", { "--squared-relu" }, "activation_func", R"("squared_relu")");
    row("squared relu not gated", { "--squared-relu" }, "gated_linear_unit", "false");
    row("fused weighted squared relu", { "--use-fused-weighted-squared-relu" },
        "use_fused_weighted_squared_relu", "true");
    row("cross entropy fusion", { "--cross-entropy-loss-fusion" }, "cross_entropy_loss_fusion", "true");
    row("cross entropy te", { "--cross-entropy-fusion-impl", "te" }, "cross_entropy_fusion_impl", R"("te")");
    row("linear attention freq", { "--linear-attention-freq", "4" }, "linear_attention_freq", "4");
    row("linear attention list", { "--linear-attention-freq", "([1]*3+[0])*2" }, "linear_attention_freq",
        "[1,1,1,0,1,1,1,0]");
    row("linear key heads", { "--linear-num-key-heads", "8" }, "linear_num_key_heads", "8");
    row("linear value heads", { "--linear-num-value-heads", "16" }, "linear_num_value_heads", "16");
    row("DSA indexer heads", { "--dsa-indexer-n-heads", "32" }, "dsa_indexer_n_heads", "32");
    row("DSA indexer head dim", { "--dsa-indexer-head-dim", "128" }, "dsa_indexer_head_dim", "128");
    row("DSA top-k", { "--dsa-indexer-topk", "2048" }, "dsa_indexer_topk", "2048");
    row("DSA top-k frequency", { "--dsa-indexer-topk-freq", "4" }, "dsa_indexer_topk_freq", "4");
    row("DSA top-k offset", { "--dsa-indexer-skip-topk-offset", "3" }, "dsa_indexer_skip_topk_offset", "3");
    row("DSA indexer loss", { "--dsa-indexer-loss-coeff", "0.001" }, "dsa_indexer_loss_coeff", "0.001");
    row("DSA sparse loss", { "--dsa-indexer-use-sparse-loss" }, "dsa_indexer_use_sparse_loss", "true");
    row("DSA kernels", { "--dsa-kernel-backend", "cudnn" }, "dsa_kernel_backend", R"("cudnn")");
    row("linear key dim", { "--linear-key-head-dim", "64" }, "linear_key_head_dim", "64");
    row("linear value dim", { "--linear-value-head-dim", "96" }, "linear_value_head_dim", "96");
    row("linear conv", { "--linear-conv-kernel-dim", "3" }, "linear_conv_kernel_dim", "3");
    row("no linear attention by default", {}, "linear_attention_freq", "null");
    row("topk", { "--moe-router-topk", "6" }, "moe_router_topk", "6");
    row("moe ffn", { "--moe-ffn-hidden-size", "1408" }, "moe_ffn_hidden_size", "1408");
    row("moe latent", { "--moe-latent-size", "1024" }, "moe_latent_size", "1024");
    row("layout", { "--pipeline-model-parallel-layout", "Et|(tt|)*30mL" }, "pipeline_model_parallel_layout",
        R"("Et|(tt|)*30mL")");
    row("layout quoted", { "--pipeline-model-parallel-layout", "'Et|(tt|)*30mL'" },
        "pipeline_model_parallel_layout", R"("Et|(tt|)*30mL")");
    // validate_args: the layout's stages / PP are the virtual stages (None for one).
    row("layout gives vpp",
        { "--pipeline-model-parallel-size", "8", "--pipeline-model-parallel-layout", "Et|(tt|)*30mL" },
        "virtual_pipeline_model_parallel_size", "4");
    row("layout of one stage a rank",
        { "--pipeline-model-parallel-layout", "Et|(tt|)*30mL", "--pipeline-model-parallel-size", "32" },
        "virtual_pipeline_model_parallel_size", "null");
    row("layout PP does not divide",
        { "--pipeline-model-parallel-layout", "Et|(tt|)*30mL", "--pipeline-model-parallel-size", "5" },
        "virtual_pipeline_model_parallel_size", "null"); // M10 says why
    row("first stage", { "--decoder-first-pipeline-num-layers", "10" }, "num_layers_in_first_pipeline_stage",
        "10");
    row("last stage", { "--decoder-last-pipeline-num-layers", "4" }, "num_layers_in_last_pipeline_stage",
        "4");
    row("no first stage by default", {}, "num_layers_in_first_pipeline_stage", "null");
    row("embedding in the split", { "--account-for-embedding-in-pipeline-split" },
        "account_for_embedding_in_pipeline_split", "true");
    row("loss in the split", { "--account-for-loss-in-pipeline-split" }, "account_for_loss_in_pipeline_split",
        "true");
    // arguments.py:928-940: the embedding and the loss count in the layers per virtual stage (Llama 3.1
    // 405B).
    row("layers per virtual stage with the embedding and loss",
        { "--num-layers", "126", "--pipeline-model-parallel-size", "16",
            "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
            "--num-layers-per-virtual-pipeline-stage", "1" },
        "virtual_pipeline_model_parallel_size", "8");
    row("no moe latent by default", {}, "moe_latent_size", "null");
    row("grouped gemm", { "--moe-grouped-gemm" }, "moe_grouped_gemm", "true");
    row("shared expert", { "--moe-shared-expert-intermediate-size", "2816" },
        "moe_shared_expert_intermediate_size", "2816");
    row("shared overlap", { "--moe-shared-expert-overlap" }, "moe_shared_expert_overlap", "true");
    row("layer freq int", { "--moe-layer-freq", "2" }, "moe_layer_freq", "2");
    row("layer freq expression", { "--moe-layer-freq", "[0]+[1]*3" }, "moe_layer_freq", "[0,1,1,1]");
    row("layer freq quoted", { "--moe-layer-freq", "'([1]*2+[0])*2'" }, "moe_layer_freq", "[1,1,0,1,1,0]");
    row("layer freq list =", { "--moe-layer-freq=[0, 1]" }, "moe_layer_freq", "[0,1]");
    row("dispatcher", { "--moe-token-dispatcher-type", "alltoall" }, "moe_token_dispatcher_type",
        R"("alltoall")");
    row("jitter", { "--moe-input-jitter-eps", "0.01" }, "moe_input_jitter_eps", "0.01");
    row("cuda graph impl", { "--cuda-graph-impl", "transformer_engine" }, "cuda_graph_impl",
        R"("transformer_engine")");
    row("cuda graph modules", { "--cuda-graph-modules", "attn", "moe_router" }, "cuda_graph_modules",
        R"(["attn","moe_router"])");
    row("cuda graph scope", { "--cuda-graph-scope", "full" }, "cuda_graph_scope", R"(["full"])");
    row("enable cuda graph", { "--enable-cuda-graph" }, "enable_cuda_graph", "true");
    row("external cuda graph", { "--external-cuda-graph" }, "external_cuda_graph", "true");
    row("te rng tracker", { "--te-rng-tracker" }, "use_te_rng_tracker", "true");
    row("attention dropout", { "--attention-dropout", "0.0" }, "attention_dropout", "0.0");
    row("hidden dropout", { "--hidden-dropout", "0.05" }, "hidden_dropout", "0.05");
    row("cpu offloading layers", { "--cpu-offloading-num-layers", "2" }, "cpu_offloading_num_layers", "2");
    row("fine-grained offloading", { "--fine-grained-activation-offloading" },
        "fine_grained_activation_offloading", "true");
    row("offload modules", { "--offload-modules", "attn_norm", "qkv_linear" }, "offload_modules",
        R"(["attn_norm","qkv_linear"])");
    row("EP overlap", { "--overlap-moe-expert-parallel-comm" },
        "comm_overlap.overlap_moe_expert_parallel_comm", "true");
    row("delay wgrad", { "--delay-wgrad-compute" }, "delay_wgrad_compute", "true");
    row("NaN check off", { "--no-check-for-nan-in-loss-and-grad" },
        "rerun_state_machine.check_for_nan_in_loss", "false");
    row("backend flash", { "--attention-backend", "flash" }, "attention_backend", R"("flash")");
    row("backend fused", { "--attention-backend", "fused" }, "attention_backend", R"("fused")");
    row("backend unfused", { "--attention-backend", "unfused" }, "attention_backend", R"("unfused")");
    row("backend local", { "--attention-backend", "local" }, "attention_backend", R"("unfused")");
    row("backend auto",
        { "--attention-backend=auto", "--attention-backend", "flash", "--attention-backend", "auto" },
        "attention_backend", R"("fused")");
    row("transformer impl", { "--transformer-impl", "local" }, "transformer_impl", R"("local")");
    row("train iters", { "--train-iters", "100" }, "train_iters", "100");
    row("mtp", { "--mtp-num-layers", "1" }, "mtp_num_layers", "1");
    row("mtp repeated layer", { "--mtp-use-repeated-layer" }, "mtp_use_repeated_layer", "true");
    row("mtp hybrid pattern", { "--mtp-hybrid-override-pattern", "*E" }, "mtp_hybrid_override_pattern",
        R"("*E")");
    row("vocab", { "--vocab-size", "128256" }, "vocab_size", "128256");
    row("fp8 recipe custom", { "--fp8-recipe", "custom" }, "fp8_recipe", R"("custom")");
    row("softmax fp16 by default", {}, "attention_softmax_in_fp32", "false");
    row("softmax fp32", { "--attention-softmax-in-fp32" }, "attention_softmax_in_fp32", "true");
    row("softmax fusion by default", {}, "masked_softmax_fusion", "true");
    row("no softmax fusion", { "--no-masked-softmax-fusion" }, "masked_softmax_fusion", "false");
    row("gradient accumulation fused by default", {}, "gradient_accumulation_fusion", "true");
    row("no gradient accumulation fusion", { "--no-gradient-accumulation-fusion" },
        "gradient_accumulation_fusion", "false");
    row("attention mask by default", {}, "create_attention_mask_in_dataloader", "true");
    row("no attention mask", { "--no-create-attention-mask-in-dataloader" },
        "create_attention_mask_in_dataloader", "false");
    row("bias by default", {}, "add_bias_linear", "true");
    row("no bias", { "--disable-bias-linear" }, "add_bias_linear", "false");
    row("qkv bias", { "--add-qkv-bias" }, "add_qkv_bias", "true");
    row("qk layernorm", { "--qk-layernorm" }, "qk_layernorm", "true");
    row("rope", { "--position-embedding-type", "rope" }, "position_embedding_type", R"("rope")");
    row("rotary base", { "--rotary-base", "500000" }, "rotary_base", "500000");
    row("rotary percent", { "--rotary-percent", "0.5" }, "rotary_percent", "0.5");
    row("max positions", { "--max-position-embeddings", "8192" }, "max_position_embeddings", "8192");
    row("untied", { "--untie-embeddings-and-output-weights" }, "untie_embeddings_and_output_weights", "true");
    row("vocab padding", { "--make-vocab-size-divisible-by", "64" }, "make_vocab_size_divisible_by", "64");
    row("aux loss", { "--moe-aux-loss-coeff", "0.01" }, "moe_aux_loss_coeff", "0.01");
    row("capacity", { "--moe-expert-capacity-factor", "1.25" }, "moe_expert_capacity_factor", "1.25");
    row("distributed optimizer", { "--use-distributed-optimizer" }, "use_distributed_optimizer", "true");
    row("bf16 grads in fp32", { "--bf16" }, "grad_reduce_in_fp32", "true");
    row("bf16 main grads bf16", { "--bf16", "--main-grads-dtype", "bf16" }, "grad_reduce_in_fp32", "false");
    row("bf16 grad reduce bf16", { "--bf16", "--grad-reduce-in-bf16" }, "grad_reduce_in_fp32", "false");
    row("fp32 accumulate", { "--accumulate-allreduce-grads-in-fp32" }, "grad_reduce_in_fp32", "true");
    row("fp32 by default", {}, "grad_reduce_in_fp32", "false");
    row("torchrun",
        { "torchrun", "--nproc-per-node", "8", "--nnodes", "2", "pretrain_gpt.py",
            "--tensor-model-parallel-size", "2" },
        "data_parallel_size", "8");
    row("torchrun words", { "torchrun", "--nproc_per_node=4", "pretrain_gpt.py", "--num-layers", "2" },
        "launch_command", R"(["torchrun","--nproc_per_node=4","pretrain_gpt.py"])");
    row("python -m",
        { "python", "-m", "torch.distributed.run", "--nproc-per-node", "2",
            "/workspace/megatron/pretrain_gpt.py", "--num-layers", "2" },
        "num_layers", "2");
    row("srun", { "srun", "-N", "2", "--ntasks-per-node", "8", "python", "pretrain_gpt.py", "--bf16" },
        "bf16", "true");
    row("kept flags",
        { "--lr", "3e-4", "--no-persist-layer-norm", "--data-path", "1.0", "/a", "0.5", "/b", "--num-layers",
            "2" },
        "extra_flags", R"(["--lr","3e-4","--no-persist-layer-norm","--data-path","1.0","/a","0.5","/b"])");
    row("irrelevant flags skipped",
        { "--lr", "3e-4", "--data-path", "1.0", "/data/a", "0.5", "/data/b", "--mock-data", "--save=/ckpt",
            "--num-layers", "4", "--profile", "--use-distributed-optimizer" },
        "num_layers", "4");
}

void TestRecipeIo::flagForms()
{
    QFETCH(QStringList, flags);
    QFETCH(QString, field);
    QFETCH(QString, value);
    const Recipe r = recipeFromMegatronFlags(toStd(flags));
    QCOMPARE(QString::fromStdString(recipeFieldValue(r, field.toStdString()).dump()),
        QString::fromStdString(nlohmann::json::parse(value.toStdString()).dump()));
}

void TestRecipeIo::flagErrors_data()
{
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("message");

    auto row = [](const char* name, std::initializer_list<std::string> flags, const char* where,
                   const char* message) {
        QTest::newRow(name) << L(flags) << QString::fromLatin1(where) << QString::fromLatin1(message);
    };
    row("unknown flag", { "--num-layerz", "4" }, "flag --num-layerz",
        "Megatron-LM has no such flag at profile bridge-pin (arguments.py at 2a75ac12); did you mean "
        "'--num-layers'?");
    // argparse: --flag=value gives a nargs='+' flag that one value; the next word is a stray argument.
    row("list = then more", { "--recompute-modules=core_attn", "moe_act" }, "argument 2",
        "unexpected argument 'moe_act'");
    row("granularity choices", { "--recompute-granularity", "partial" }, "flag --recompute-granularity",
        "invalid choice 'partial' (Megatron-LM allows full, selective)");
    row("both hybrid patterns", { "--hybrid-layer-pattern", "M*", "--hybrid-override-pattern", "M*" },
        "flag --hybrid-override-pattern", "cannot both be specified");
    row("squared relu with swiglu", { "--swiglu", "--squared-relu" }, "flag --squared-relu",
        "asserts not args.swiglu");
    row("no cpu-offloading flag", { "--cpu-offloading" }, "flag --cpu-offloading", "has no such flag");
    row("fp4 nvfp4", { "--fp4-format", "nvfp4" }, "flag --fp4-format", "Megatron-LM allows e2m1");
    row("no script", { "torchrun", "--nproc-per-node", "8" }, "argument 1", "no .py script was found");
    row("unknown flag =", { "--recompute-module=core_attn" }, "flag --recompute-module",
        "did you mean '--recompute-modules'?");
    row("missing value at end", { "--seq-length" }, "flag --seq-length", "expects a value");
    row("missing value before flag", { "--seq-length", "--bf16" }, "flag --seq-length", "expects a value");
    row("missing list", { "--recompute-modules" }, "flag --recompute-modules", "expects at least 1 value");
    row("missing list before flag", { "--recompute-modules", "--bf16" }, "flag --recompute-modules",
        "expects at least 1 value");
    row("irrelevant flag missing value", { "--lr" }, "flag --lr", "expects a value");
    row("not an integer", { "--seq-length", "4k" }, "flag --seq-length", "expects an integer, got '4k'");
    row("not a number", { "--attention-dropout", "none" }, "flag --attention-dropout", "expects a number");
    row("enum", { "--fp8-format", "e5m2" }, "flag --fp8-format", "Megatron-LM allows e4m3, hybrid");
    row("normalization", { "--normalization", "rmsnorm" }, "flag --normalization",
        "Megatron-LM allows LayerNorm, RMSNorm");
    row("switch with value", { "--bf16=true" }, "flag --bf16", "takes no value");
    row("stray value", { "--bf16", "yes" }, "argument 2", "unexpected argument 'yes'");
    row("groups without gqa", { "--num-query-groups", "8" }, "flag --num-query-groups",
        "ignores --num-query-groups without --group-query-attention");
    row("virtual stage split",
        { "--num-layers", "32", "--pipeline-model-parallel-size", "4",
            "--num-layers-per-virtual-pipeline-stage", "3" },
        "flag --num-layers-per-virtual-pipeline-stage", "do not split into virtual stages of 3 layers");
    row("virtual stage needs layers", { "--num-layers-per-virtual-pipeline-stage", "2" },
        "flag --num-layers-per-virtual-pipeline-stage", "needs --num-layers");
    row("virtual stage twice",
        { "--num-layers", "8", "--num-layers-per-virtual-pipeline-stage", "2",
            "--num-virtual-stages-per-pipeline-rank", "4" },
        "flag --num-layers-per-virtual-pipeline-stage", "not both");
    row("layout with virtual stages",
        { "--pipeline-model-parallel-layout", "Et|tL", "--num-virtual-stages-per-pipeline-rank", "2" },
        "flag --pipeline-model-parallel-layout", "No more than one of the following arguments");
    row("layout with layers per virtual stage",
        { "--num-layers", "2", "--num-layers-per-virtual-pipeline-stage", "1",
            "--pipeline-model-parallel-layout", "Et|tL" },
        "flag --pipeline-model-parallel-layout", "No more than one of the following arguments");
    row("layers per virtual stage with uneven stages",
        { "--num-layers", "8", "--pipeline-model-parallel-size", "2", "--decoder-first-pipeline-num-layers",
            "2", "--num-layers-per-virtual-pipeline-stage", "1" },
        "flag --num-layers-per-virtual-pipeline-stage", "please use --num-virtual-stages-per-pipeline-rank");
    row("layout character", { "--pipeline-model-parallel-layout", "Et|t*L" },
        "flag --pipeline-model-parallel-layout", "'*' is not a layer of a pipeline layout");
    row("layer freq expression", { "--moe-layer-freq", "[0,1" }, "flag --moe-layer-freq",
        "expects an integer or a list expression");
    row("layer freq pattern", { "--moe-layer-freq", "[0]+[2]" }, "flag --moe-layer-freq", "list of 0/1");
}

void TestRecipeIo::flagErrors()
{
    QFETCH(QStringList, flags);
    QFETCH(QString, where);
    QFETCH(QString, message);
    try {
        recipeFromMegatronFlags(toStd(flags));
        QFAIL("no RecipeError");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.where), where);
        QVERIFY2(QString::fromStdString(e.message).contains(message), e.what());
    }
}

void TestRecipeIo::flagsWriteExactly()
{
    // What Megatron-LM needs or defaults differently is always written.
    QCOMPARE(join(recipeToMegatronFlags(frontEndDefaults(InputFormat::MegatronFlags))),
        QStringLiteral("--seq-length 4096 --micro-batch-size 1 --attention-backend fused"));
    Recipe r = frontEndDefaults(InputFormat::MegatronFlags);
    r.num_layers = 32;
    r.num_query_groups = 8;
    r.gated_linear_unit = true;
    r.activation_func = "silu";
    r.moe_layer_freq = { 0, 1, 1, 1 };
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> { "core_attn", "moe_act" };
    r.attention_backend = "unfused";
    r.check_for_nan_in_loss = false;
    r.bf16 = true;
    r.grad_reduce_in_fp32 = false; // Megatron-LM would turn it on under bf16
    r.attention_softmax_in_fp32 = true;
    r.add_bias_linear = false;
    r.extra_flags = { "--lr", "3e-4" };
    const std::vector<std::string> expected = { "--num-layers", "32", "--group-query-attention",
        "--num-query-groups", "8", "--seq-length", "4096", "--micro-batch-size", "1", "--swiglu",
        "--disable-bias-linear", "--attention-softmax-in-fp32", "--moe-layer-freq", "[0]+[1]*3",
        "--grad-reduce-in-bf16", "--bf16", "--attention-backend", "unfused", "--recompute-granularity",
        "selective", "--recompute-modules", "core_attn", "moe_act", "--no-check-for-nan-in-loss-and-grad",
        "--lr", "3e-4" };
    QCOMPARE(join(recipeToMegatronFlags(r)), join(expected));
    // A value set explicitly is written even at Megatron-LM's default.
    Recipe hidden = frontEndDefaults(InputFormat::MegatronFlags);
    markExplicit(hidden, "hidden_dropout");
    QVERIFY(join(recipeToMegatronFlags(hidden)).contains(QStringLiteral("--hidden-dropout 0.1")));
    // No profile's Megatron-LM has --cpu-offloading: it is not written.
    Recipe offload = frontEndDefaults(InputFormat::MegatronFlags);
    offload.cpu_offloading = true;
    offload.cpu_offloading_num_layers = 2;
    for (Profile p : allProfiles()) {
        offload.profile = p;
        const QString flags = join(recipeToMegatronFlags(offload));
        QVERIFY(!flags.contains(QStringLiteral("--cpu-offloading ")));
        QVERIFY(flags.contains(QStringLiteral("--cpu-offloading-num-layers 2")));
    }
    // Values outside the profile's choices are refused; custom fp8 recipes are allowed.
    Recipe fp4 = frontEndDefaults(InputFormat::MegatronFlags);
    fp4.fp4 = "nvfp4";
    QVERIFY_THROWS_EXCEPTION(RecipeError, recipeToMegatronFlags(fp4));
    Recipe lora;
    lora.peft = "lora";
    try {
        recipeToMegatronFlags(lora);
        QFAIL("a LoRA job written as Megatron-LM flags");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), QStringLiteral("peft.scheme"));
        QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("Megatron-LM has no LoRA")));
    }
    fp4.fp4 = "e2m1";
    fp4.fp8_recipe = "custom";
    QVERIFY(
        join(recipeToMegatronFlags(fp4)).contains(QStringLiteral("--fp8-recipe custom --fp4-format e2m1")));
    // The command: the launcher as read, then the flags.
    const Recipe launched = recipeFromMegatronFlags({ "torchrun", "--nproc-per-node", "8", "pretrain_gpt.py",
        "--num-layers", "2", "--seq-length", "512" });
    QCOMPARE(join(recipeToMegatronCommand(launched)),
        QStringLiteral("torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 2 --seq-length 512 "
                       "--micro-batch-size 1 --attention-backend fused"));
}

void TestRecipeIo::flagsRoundTrip()
{
    Recipe full = fullRecipe();
    full.mixed_precision = std::nullopt; // a Bridge recipe name has no flag (flagsLossyCases)
    full.store_param_remainders = true; // no flag either: Megatron-LM always keeps the remainders
    full.peft.reset(); // Megatron-LM has no LoRA (flagsLossyCases)
    std::vector<Recipe> recipes = { Recipe {}, full };
    Recipe dense;
    dense.num_layers = 12;
    dense.recompute_granularity = "full";
    dense.recompute_method = "block";
    dense.recompute_num_layers = 4;
    dense.distribute_saved_activations = true;
    dense.tensor_model_parallel_size = 2;
    recipes.push_back(dense);
    for (const auto& [file, preset] : presets())
        recipes.push_back(preset);
    for (const Recipe& r : recipes) {
        try {
            const std::vector<std::string> flags = recipeToMegatronFlags(r);
            QCOMPARE(recipeFromMegatronFlags(flags, frontEndDefaults(InputFormat::MegatronFlags, r.profile)),
                withoutFlaglessFields(r));
        } catch (const RecipeError& e) {
            QFAIL(e.what());
        }
    }
}

void TestRecipeIo::flagsLossyCases()
{
    // megatron-rules.md (i): Megatron-LM cannot write recompute_modules=[]; the control is the absence of
    // --recompute-granularity, so a selective [] recipe is refused rather than written as something else.
    Recipe control;
    control.recompute_granularity = "selective";
    control.recompute_modules = std::vector<std::string> {};
    try {
        recipeToMegatronFlags(control);
        QFAIL("selective [] written as flags");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), QStringLiteral("recompute_modules"));
        QVERIFY(
            QString::fromStdString(e.message).contains(QStringLiteral("absence of --recompute-granularity")));
    }
    // The flag form of that control: no --recompute-granularity at all.
    control.recompute_granularity = std::nullopt;
    control.recompute_modules = std::nullopt;
    QVERIFY(!join(recipeToMegatronFlags(control)).contains(QStringLiteral("--recompute")));

    Recipe bridge;
    bridge.mixed_precision = "bf16_with_fp8_delayed_scaling_mixed";
    QVERIFY_THROWS_EXCEPTION(RecipeError, recipeToMegatronFlags(bridge));

    Recipe remainders;
    remainders.store_param_remainders = false;
    QVERIFY_THROWS_EXCEPTION(RecipeError, recipeToMegatronFlags(remainders));

    Recipe geglu;
    geglu.gated_linear_unit = true;
    QVERIFY_THROWS_EXCEPTION(RecipeError, recipeToMegatronFlags(geglu));

    // Megatron-LM turns the bias-GeLU fusion off without linear biases: a fused GeLU MLP without biases
    // has no command line (R41 refuses it too).
    Recipe gelu;
    gelu.add_bias_linear = false;
    gelu.bias_activation_fusion = true;
    try {
        recipeToMegatronFlags(gelu);
        QFAIL("fused GeLU without biases written as flags");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), QStringLiteral("bias_activation_fusion"));
    }
    gelu.bias_activation_fusion = false;
    QVERIFY(!join(recipeToMegatronFlags(gelu)).contains(QStringLiteral("bias-gelu-fusion")));
    QVERIFY(!join(recipeToMegatronFlags(gelu)).contains(QStringLiteral("bias-swiglu-fusion")));

    // [] for a nargs='+' list flag has no spelling: it comes back unset (R26 makes the unset default []).
    Recipe graphs;
    graphs.cuda_graph_impl = "transformer_engine";
    graphs.cuda_graph_modules = std::vector<std::string> {};
    const Recipe back = recipeFromMegatronFlags(recipeToMegatronFlags(graphs));
    QVERIFY(!back.cuda_graph_modules.has_value());
    QCOMPARE(back.cuda_graph_impl, graphs.cuda_graph_impl);
}

void TestRecipeIo::deallocatePipelineOutputsPerFrontEnd()
{
    // ModelParallelConfig's default is False; Megatron-LM always sets True (no flag); Bridge's
    // GPTModelProvider True.
    QCOMPARE(recipeFromJsonText("{}", "test").deallocate_pipeline_outputs, false);
    QCOMPARE(
        recipeFromJsonText(R"({"deallocate_pipeline_outputs": true})", "test").deallocate_pipeline_outputs,
        true);
    QCOMPARE(recipeFromMegatronFlags({ "--num-layers", "2" }).deallocate_pipeline_outputs, true);
    QCOMPARE(recipeFromBridgeOverrides({ "model.num_layers=2" }).deallocate_pipeline_outputs, true);
    QCOMPARE(
        recipeFromBridgeOverrides({ "model.deallocate_pipeline_outputs=false" }).deallocate_pipeline_outputs,
        false);
    // Megatron-LM cannot say False: a JSON recipe written as flags comes back True (megatron_flags.h).
    Recipe json;
    json.num_layers = 2;
    QCOMPARE(recipeFromMegatronFlags(recipeToMegatronFlags(json)).deallocate_pipeline_outputs, true);
    QCOMPARE(recipeFromBridgeOverrides(recipeToBridgeOverrides(json)).deallocate_pipeline_outputs, false);
}

void TestRecipeIo::maskedSoftmaxFusionPerFrontEnd()
{
    // TransformerConfig's default is False; Megatron-LM's --no-masked-softmax-fusion is store_false
    // (default True); Bridge's GPTModelProvider sets True.
    QCOMPARE(Recipe {}.masked_softmax_fusion, false);
    QCOMPARE(recipeFromJsonText("{}", "test").masked_softmax_fusion, false);
    QCOMPARE(recipeFromMegatronFlags({ "--num-layers", "2" }).masked_softmax_fusion, true);
    QCOMPARE(recipeFromBridgeOverrides({ "model.num_layers=2" }).masked_softmax_fusion, true);
    // Each writer spells it only where it differs from its front end's default.
    QVERIFY(join(recipeToMegatronFlags(Recipe {})).contains(QStringLiteral("--no-masked-softmax-fusion")));
    QVERIFY(!join(recipeToMegatronFlags(frontEndDefaults(InputFormat::MegatronFlags)))
                 .contains(QStringLiteral("masked-softmax")));
    Recipe bridge = frontEndDefaults(InputFormat::BridgeOverrides);
    QVERIFY(recipeToBridgeOverrides(bridge).empty());
    bridge.masked_softmax_fusion = false;
    const std::vector<std::string> written = recipeToBridgeOverrides(bridge);
    QCOMPARE(written.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(written[0]), QStringLiteral("model.masked_softmax_fusion=false"));
    QCOMPARE(recipeFromBridgeOverrides(written), bridge);
    // A JSON recipe (fusion off) written as flags and read back keeps it off; read as overrides too.
    Recipe json;
    json.num_layers = 2;
    QCOMPARE(recipeFromMegatronFlags(recipeToMegatronFlags(json)).masked_softmax_fusion, false);
    QCOMPARE(recipeFromBridgeOverrides(recipeToBridgeOverrides(json)).masked_softmax_fusion, false);
    QCOMPARE(recipeFromJson(recipeToJson(bridge), "test").masked_softmax_fusion, false);
}

void TestRecipeIo::flagsMlaDefaults()
{
    // Megatron-LM's argparse: --q-lora-rank None, --kv-lora-rank 32 when MLA is on and they are absent.
    const Recipe r = recipeFromMegatronFlags({ "--multi-latent-attention" });
    QVERIFY(!r.q_lora_rank.has_value());
    QCOMPARE(r.kv_lora_rank, 32);
    // So with MLA on the ranks are always written.
    Recipe mla = frontEndDefaults(InputFormat::MegatronFlags);
    mla.multi_latent_attention = true;
    const std::vector<std::string> flags = recipeToMegatronFlags(mla);
    QCOMPARE(join(flags),
        QStringLiteral("--seq-length 4096 --micro-batch-size 1 --multi-latent-attention --q-lora-rank 512 "
                       "--kv-lora-rank 512 --attention-backend fused"));
    mla.q_lora_rank = std::nullopt;
    QCOMPARE(join(recipeToMegatronFlags(mla)),
        QStringLiteral("--seq-length 4096 --micro-batch-size 1 --multi-latent-attention --kv-lora-rank 512 "
                       "--attention-backend fused"));
    QCOMPARE(recipeFromMegatronFlags(recipeToMegatronFlags(mla)), mla);
}

// --- mixed precision (B8) ---

void TestRecipeIo::mixedPrecisionTable()
{
    const MixedPrecisionRecipe* delayed = findMixedPrecision("bf16_with_fp8_delayed_scaling_mixed");
    QVERIFY(delayed);
    QVERIFY(delayed->bf16 && !delayed->fp16);
    QCOMPARE(delayed->fp8.value_or(""), std::string("hybrid"));
    QCOMPARE(delayed->fp8_recipe, std::string("delayed"));

    const MixedPrecisionRecipe* mx = findMixedPrecision("bf16-with-mxfp8-mixed"); // Bridge's hyphen spelling
    QVERIFY(mx);
    QCOMPARE(std::string(mx->name), std::string("bf16_with_mxfp8_mixed"));
    QCOMPARE(mx->fp8.value_or(""), std::string("e4m3"));
    QCOMPARE(mx->fp8_recipe, std::string("mxfp8"));

    QCOMPARE(
        findMixedPrecision("bf16_with_fp8_current_scaling_mixed")->fp8_recipe, std::string("tensorwise"));
    QCOMPARE(findMixedPrecision("nanov2_bf16_with_fp8_current_scaling_mixed")->fp8_recipe,
        std::string("blockwise"));
    QCOMPARE(
        findMixedPrecision("fp16_with_fp8_subchannel_scaling_mixed")->fp8_recipe, std::string("blockwise"));
    QVERIFY(findMixedPrecision("fp16_with_fp8_subchannel_scaling_mixed")->fp16);

    const MixedPrecisionRecipe* fp4 = findMixedPrecision("bf16_with_nvfp4_mixed");
    QVERIFY(fp4);
    QVERIFY(!fp4->fp8.has_value());
    QCOMPARE(fp4->fp4.value_or(""), std::string("e2m1"));

    const MixedPrecisionRecipe* plain = findMixedPrecision("bf16_mixed");
    QVERIFY(plain && !plain->fp8 && !plain->fp4);
    QCOMPARE(plain->fp8_recipe, std::string("tensorwise")); // MixedPrecisionConfig's default, not MCore's

    QVERIFY(!findMixedPrecision("bf16"));
    QVERIFY(!findMixedPrecision(""));
    // Names are unique and each one finds itself.
    for (const MixedPrecisionRecipe& m : mixedPrecisionRecipes())
        QCOMPARE(findMixedPrecision(m.name), &m);
}

// --- recipe arguments ---

void TestRecipeIo::recipeInputForms()
{
    const std::string fixture = RS_FIXTURES_DIR "/recipe-minimal.json";
    {
        std::vector<std::string> rest;
        const RecipeInput in = readRecipeInput({ fixture, "--report", "out.json", "--json" }, &rest);
        QCOMPARE(int(in.format), int(InputFormat::Json));
        QCOMPARE(in.origin, fixture);
        QCOMPARE(in.recipe.num_layers, 4);
        QCOMPARE(in.recipe.profile, Profile::Main); // the file's own
        QVERIFY(!in.recipe.bias_activation_fusion); // TransformerConfig's default
        QCOMPARE(join(rest), QStringLiteral("--report out.json --json"));
    }
    {
        std::vector<std::string> rest;
        const RecipeInput in = readRecipeInput({ "--profile", "dev", fixture }, &rest);
        QCOMPARE(in.recipe.profile, Profile::Dev); // --profile wins over the file's
        QVERIFY(rest.empty());
    }
    {
        std::vector<std::string> rest;
        const RecipeInput in
            = readRecipeInput({ "--profile=guide", "--overrides", "model.num_layers=4",
                                  "'model.recompute_modules=[core_attn,moe_act]'", "--json" },
                &rest);
        QCOMPARE(int(in.format), int(InputFormat::BridgeOverrides));
        QCOMPARE(in.origin, std::string("overrides"));
        QCOMPARE(in.recipe.num_layers, 4);
        QCOMPARE(in.recipe.recompute_modules.value_or(std::vector<std::string> {}),
            (std::vector<std::string> { "core_attn", "moe_act" }));
        QCOMPARE(in.recipe.profile, Profile::Guide);
        QVERIFY(!in.recipe.bias_activation_fusion); // GPTModelProvider keeps TransformerConfig's False
        QCOMPARE(join(rest), QStringLiteral("--json"));
    }
    {
        const RecipeInput in
            = readRecipeInput({ "--overrides", "model.gated_linear_unit=true", "model.activation_func=silu",
                                  "model.bias_activation_fusion=true" },
                nullptr);
        QVERIFY(in.recipe.bias_activation_fusion);
        QVERIFY(in.recipe.extra_overrides.empty());
    }
    {
        // --mlm-args takes everything after it, Megatron-LM's own --profile flag included.
        std::vector<std::string> rest;
        const RecipeInput in = readRecipeInput(
            { "--json", "--profile", "main", "--mlm-args", "--num-layers", "4", "--profile", "--bf16" },
            &rest);
        QCOMPARE(int(in.format), int(InputFormat::MegatronFlags));
        QCOMPARE(in.origin, std::string("mlm-args"));
        QCOMPARE(in.recipe.num_layers, 4);
        QVERIFY(in.recipe.bf16);
        QCOMPARE(in.recipe.profile, Profile::Main);
        QVERIFY(in.recipe.bias_activation_fusion); // bias_gelu_fusion's default (argument_utils.py)
        QCOMPARE(join(rest), QStringLiteral("--json"));
    }
    {
        // SwiGLU from Megatron-LM flags: fused unless --no-bias-swiglu-fusion.
        const RecipeInput fused = readRecipeInput({ "--mlm-args", "--num-layers", "4", "--swiglu" }, nullptr);
        QVERIFY(fused.recipe.bias_activation_fusion);
        const RecipeInput eager = readRecipeInput(
            { "--mlm-args", "--num-layers", "4", "--swiglu", "--no-bias-swiglu-fusion" }, nullptr);
        QVERIFY(!eager.recipe.bias_activation_fusion);
        QVERIFY(eager.recipe.extra_flags.empty());
        QVERIFY(
            join(recipeToMegatronFlags(eager.recipe)).contains(QStringLiteral("--no-bias-swiglu-fusion")));
        QVERIFY(!join(recipeToMegatronFlags(fused.recipe)).contains(QStringLiteral("fusion")));
    }
    {
        // The first .json is the recipe; a later one is the verb's.
        std::vector<std::string> rest;
        const RecipeInput in = readRecipeInput({ fixture, "other.json" }, &rest);
        QCOMPARE(in.origin, fixture);
        QCOMPARE(join(rest), QStringLiteral("other.json"));
    }
}

void TestRecipeIo::recipeInputStdin()
{
    std::istringstream text(R"({"schema_version": 1, "hidden_size": 64})");
    std::streambuf* saved = std::cin.rdbuf(text.rdbuf());
    RecipeInput in;
    try {
        in = readRecipeInput({ "-" }, nullptr);
    } catch (...) {
        std::cin.rdbuf(saved);
        throw;
    }
    std::cin.rdbuf(saved);
    QCOMPARE(int(in.format), int(InputFormat::Json));
    QCOMPARE(in.origin, std::string("stdin"));
    QCOMPARE(in.recipe.hidden_size, 64);
}

void TestRecipeIo::recipeInputErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("message");
    const std::string fixture = RS_FIXTURES_DIR "/recipe-minimal.json";
    QTest::newRow("nothing") << L({}) << ""
                             << "no recipe given";
    QTest::newRow("only profile") << L({ "--profile", "main" }) << ""
                                  << "no recipe given";
    QTest::newRow("unknown profile") << L({ "--profile", "nightly", fixture }) << "profile"
                                     << "unknown profile 'nightly'; allowed: bridge-pin, guide, main, dev";
    QTest::newRow("profile without name") << L({ fixture, "--profile" }) << "profile"
                                          << "expects a profile name";
    QTest::newRow("two recipes") << L({ fixture, "--overrides", "model.num_layers=2" }) << ""
                                 << "a second recipe";
    QTest::newRow("missing file") << L({ RS_FIXTURES_DIR "/no-such-recipe.json" }) << ""
                                  << "cannot read the recipe file";
    QTest::newRow("newer file") << L({ RS_FIXTURES_DIR "/recipe-newer-schema.json" }) << "schema_version"
                                << "newer than this program reads";
    QTest::newRow("malformed file") << L({ RS_FIXTURES_DIR "/recipe-malformed.json" }) << ""
                                    << "malformed JSON at line 4, column 3";
    QTest::newRow("bad override") << L({ "--overrides", "model.num_layer=2" }) << "model.num_layer"
                                  << "did you mean 'model.num_layers'?";
    QTest::newRow("bad flag") << L({ "--mlm-args", "--num-layer", "2" }) << "--num-layer"
                              << "did you mean '--num-layers'?";
    QTest::newRow("no rest") << L({ fixture, "--json" }) << ""
                             << "unexpected argument '--json'";
}

void TestRecipeIo::recipeInputErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, field);
    QFETCH(QString, message);
    std::vector<std::string> rest;
    try {
        // "no rest" passes no rest vector: then arguments it does not own are an error.
        readRecipeInput(toStd(args),
            QString::fromLatin1(QTest::currentDataTag()) == QLatin1String("no rest") ? nullptr : &rest);
        QFAIL("no RecipeError");
    } catch (const RecipeError& e) {
        QCOMPARE(QString::fromStdString(e.field), field);
        QVERIFY2(QString::fromStdString(e.message).contains(message), e.what());
    }
}

// --- presets ---

void TestRecipeIo::presetsLoad()
{
    const auto all = presets(); // throws, failing the test, if any preset does not load
    QStringList names;
    for (const auto& [file, recipe] : all) {
        names << file;
        QVERIFY2(!recipe.name.empty(), qPrintable(file));
        QVERIFY2(recipe.num_layers > 0 && recipe.hidden_size > 0 && recipe.num_attention_heads > 0,
            qPrintable(file));
        QCOMPARE(recipe.recompute_granularity.value_or(""), std::string("selective"));
        QCOMPARE(recipeFromJson(recipeToJson(recipe)), recipe);
    }
    QVERIFY(names.contains(QStringLiteral("dense-gqa-swiglu.json")));
    QVERIFY(names.contains(QStringLiteral("moonlight-mla-moe.json")));
    QVERIFY(names.contains(QStringLiteral("gpt-unfused.json")));

    auto find = [&](const char* file) {
        for (const auto& [f, r] : all) {
            if (f == QLatin1String(file))
                return r;
        }
        return Recipe {};
    };
    const Recipe dense = find("dense-gqa-swiglu.json");
    QCOMPARE(dense.num_layers, 32);
    QCOMPARE(dense.hidden_size, 4096);
    QCOMPARE(dense.num_query_groups.value_or(0), 8);
    QCOMPARE(dense.ffn_hidden_size.value_or(0), 14336);
    QCOMPARE(dense.seq_length, 8192);
    QVERIFY(dense.gated_linear_unit && dense.activation_func == "silu" && dense.normalization == "RMSNorm");
    QCOMPARE(dense.recompute_modules.value_or(std::vector<std::string> {}),
        std::vector<std::string> { "core_attn" });

    const Recipe moon = find("moonlight-mla-moe.json");
    QCOMPARE(moon.num_layers, 27);
    QCOMPARE(moon.moe_layer_freq.size(), std::size_t(27));
    QCOMPARE(moon.moe_layer_freq.front(), 0);
    QCOMPARE(std::count(moon.moe_layer_freq.begin(), moon.moe_layer_freq.end(), 1), 26L);
    QVERIFY(moon.multi_latent_attention && !moon.q_lora_rank.has_value());
    QCOMPARE(moon.kv_lora_rank, 512);
    QCOMPARE(moon.num_moe_experts.value_or(0), 64);
    QCOMPARE(moon.moe_router_topk, 6);
    QCOMPARE(moon.moe_ffn_hidden_size.value_or(0), 1408);
    QCOMPARE(moon.ffn_hidden_size.value_or(0), 11264);
    QCOMPARE(moon.moe_shared_expert_intermediate_size.value_or(0), 2816);
    QVERIFY(moon.moe_grouped_gemm && moon.bf16);
    QCOMPARE(moon.tensor_model_parallel_size, 2);
    QCOMPARE(moon.expert_model_parallel_size, 8);
    QCOMPARE(moon.global_batch_size.value_or(0), 4);
    QCOMPARE(
        moon.recompute_modules.value_or(std::vector<std::string> {}), std::vector<std::string> { "moe_act" });
    QCOMPARE(moon.profile, Profile::Guide);

    const Recipe gpt = find("gpt-unfused.json");
    QCOMPARE(gpt.num_layers, 24);
    QCOMPARE(gpt.attention_backend, std::string("unfused"));
    QCOMPARE(gpt.normalization, std::string("LayerNorm"));
    QCOMPARE(gpt.activation_func, std::string("gelu"));
    QCOMPARE(gpt.seq_length, 2048);
}

QTEST_GUILESS_MAIN(TestRecipeIo)
#include "tst_recipe_io.moc"
