// SPDX-License-Identifier: Apache-2.0
// What the estimate-against-worker tests share: the presets shrunk to small shapes, a one-rank run of the
// worker's step loop (engine::runRecipe with the CPU memory probe) read back from its stream, and the
// relative error. Torch comes before Qt (Qt's keywords are off in these targets, see CMakeLists.txt).
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QtTest>

#include <torch/torch.h>

#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "engine/runner.h"

namespace rs::estimatetest {

inline constexpr double kTolerance = 0.05;

inline Recipe readPreset(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return recipeFromJsonText(f.readAll().toStdString(), path.toStdString());
}

// Small shapes with the preset's architecture (norm, activation, GQA, MLA, MoE with its first dense layer,
// attention backend, dtype), on one rank.
inline Recipe shrink(Recipe r)
{
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.seq_length = 128;
    r.micro_batch_size = 2;
    r.vocab_size = 512;
    r.tensor_model_parallel_size = 1;
    r.expert_model_parallel_size = 1;
    r.context_parallel_size = 1;
    r.pipeline_model_parallel_size = 1;
    r.virtual_pipeline_model_parallel_size.reset();
    r.sequence_parallel = false;
    r.global_batch_size.reset();
    r.transformer_impl = "local";
    r.warmup_iters = 1;
    r.train_iters = 2;
    if (r.num_moe_experts) {
        r.num_layers = 3;
        r.ffn_hidden_size = 192;
        r.moe_layer_freq = { 0, 1, 1 };
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 48;
        if (r.moe_shared_expert_intermediate_size)
            r.moe_shared_expert_intermediate_size = 64;
        r.kv_lora_rank = 32;
        r.qk_head_dim = 16;
        r.qk_pos_emb_head_dim = 8;
        r.v_head_dim = 16;
        if (r.q_lora_rank)
            r.q_lora_rank = 48;
    } else {
        r.num_layers = 2;
        r.ffn_hidden_size = r.gated_linear_unit ? 160 : 256;
        if (r.num_query_groups)
            r.num_query_groups = 2;
        if (r.multi_latent_attention) {
            r.kv_lora_rank = 32;
            r.qk_head_dim = 16;
            r.qk_pos_emb_head_dim = 8;
            r.v_head_dim = 16;
        }
    }
    return r;
}

// The recipe on the TE spec with FP8 (hybrid format, `scaling` tensorwise or delayed); `moe`: its layers MoE
// (4 experts, top 2, grouped GEMM) where the preset's are dense.
inline Recipe fp8Recipe(Recipe r, const QString& scaling, bool moe)
{
    r.transformer_impl = "transformer_engine";
    r.bf16 = true;
    r.fp8 = "hybrid";
    r.fp8_recipe = scaling.toStdString();
    if (moe) {
        r.num_moe_experts = 4;
        r.moe_router_topk = 2;
        r.moe_ffn_hidden_size = 96;
        r.moe_grouped_gemm = true;
        r.moe_layer_freq = { 1 };
    }
    return r;
}

struct Measured {
    int64_t peak = 0;
    std::map<std::string, int64_t> phases;
    std::string error;
    std::vector<std::string> attributions; // peak_attribution events, for RS_DEBUG_TERMS
};

inline Measured runWorker(const Recipe& r)
{
    engine::RunOptions options;
    options.device = "cpu";
    options.warmup = 1;
    options.iters = 1;
    std::ostringstream out;
    const int code = engine::runRecipe(r, InputFormat::Json, options, out);
    Measured m;
    std::istringstream lines(out.str());
    std::string line;
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object())
            continue;
        if (j.value("event", "") == "rank_summary") {
            m.peak = j.value("peak_allocated", int64_t(0));
            for (const auto& [phase, p] : j["phase_peaks"].items())
                m.phases[phase] = p.value("allocated", int64_t(0));
        }
        // RS_DEBUG_TERMS=1: what holds each of the worker's phase peaks (its CPU attribution).
        if (j.value("event", "") == "peak_attribution" && qEnvironmentVariableIsSet("RS_DEBUG_TERMS"))
            qInfo("  worker %s %s", j.value("phase", "").c_str(), line.c_str());
        if (j.value("event", "") == "peak_attribution")
            m.attributions.push_back(line);
        if (j.value("event", "") == "result" && j.value("status", "") != "pass")
            m.error = j.value("message", "");
    }
    if (code != 0 && m.error.empty())
        m.error = "exit " + std::to_string(code);
    return m;
}

// The first rule error of a candidate (its id), empty when it validates: a choice real Megatron cannot
// run (RT30: mlp recompute with linear biases) is one the worker must refuse, naming the rule, rather than
// measure.
inline std::string firstRuleError(const Recipe& candidate)
{
    const Validation v = validate(candidate);
    return v.firstError() ? v.firstError()->rule_id : std::string();
}

inline double err(int64_t estimate, int64_t measured)
{
    return (static_cast<double>(estimate) - static_cast<double>(measured)) / static_cast<double>(measured);
}

// "; forward: E vs M (x%)" for each phase the worker measured: the estimate's phase peak beside it.
inline QString phaseDetails(const RankEstimate& rank, const Measured& m)
{
    QString detail;
    for (const char* phase : { "forward", "backward", "optimizer" }) {
        const auto it = m.phases.find(phase);
        if (it == m.phases.end())
            continue;
        const int64_t est = rank.phase(phase)->peak_bytes;
        detail += QStringLiteral("; %1: %2 vs %3 (%4%)")
                      .arg(QLatin1String(phase))
                      .arg(est)
                      .arg(it->second)
                      .arg(100 * err(est, it->second), 0, 'f', 1);
    }
    return detail;
}

// The check every worker-against-estimate row makes: a candidate Megatron refuses is refused by the worker
// naming the same rule; otherwise the worker runs it and the estimate's peak (Layout::Worker, the hottest
// rank) is within kTolerance of the measured one. The row's figures are printed with `tag`;
// RS_DEBUG_TERMS=1 adds every term of every phase and the worker's phase peaks.
inline void checkAgainstWorker(const Recipe& candidate, const QString& tag)
{
    if (const std::string rule = firstRuleError(candidate); !rule.empty()) {
        const Measured refused = runWorker(candidate);
        QVERIFY2(refused.error.find(rule) != std::string::npos, refused.error.c_str());
        return;
    }
    const Recipe r = validate(candidate).resolved;
    const Measured m = runWorker(r);
    QVERIFY2(m.error.empty(), m.error.c_str());
    const MemoryEstimate e = estimateMemory(r, Layout::Worker);
    QVERIFY2(e.not_estimated.empty(), e.not_estimated.c_str());
    const RankEstimate& rank = e.ranks[static_cast<size_t>(e.hottest)];
    const QString detail = QStringLiteral("%1: peak: estimate %2 (%3), measured %4 (%5%)")
                               .arg(tag)
                               .arg(e.peak_bytes)
                               .arg(QString::fromStdString(rank.peak_phase))
                               .arg(m.peak)
                               .arg(100 * err(e.peak_bytes, m.peak), 0, 'f', 1)
        + phaseDetails(rank, m);
    qInfo("%s", qPrintable(detail));
    if (qEnvironmentVariableIsSet("RS_DEBUG_TERMS")) {
        for (const auto& ph : rank.phases)
            for (const auto& t : ph.terms)
                qInfo("  %s %s %s %lld", ph.phase.c_str(), t.category.c_str(), t.name.c_str(),
                    (long long)t.bytes);
        for (const auto& a : m.attributions)
            qInfo("  %s", a.c_str());
    }
    QVERIFY2(std::abs(err(e.peak_bytes, m.peak)) <= kTolerance, qPrintable(detail));
}

} // namespace rs::estimatetest
