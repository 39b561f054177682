// SPDX-License-Identifier: Apache-2.0
#include "core/calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace rs {

namespace {

nlohmann::json gemmsToJson(const std::vector<GemmRate>& v)
{
    nlohmann::json out = nlohmann::json::array();
    for (const auto& g : v)
        out.push_back(
            { { "m", g.m }, { "n", g.n }, { "k", g.k }, { "groups", g.groups }, { "tflops", g.tflops } });
    return out;
}

const nlohmann::json& member(const nlohmann::json& j, const std::string& key, const std::string& path)
{
    if (!j.is_object() || !j.contains(key))
        throw CalibrationError(path + key, "missing");
    return j.at(key);
}

std::string text(const nlohmann::json& j, const std::string& key, const std::string& path = {})
{
    const auto& v = member(j, key, path);
    if (!v.is_string())
        throw CalibrationError(path + key, "expected a string");
    return v.get<std::string>();
}

double positive(const nlohmann::json& j, const std::string& key, const std::string& path = {})
{
    const auto& v = member(j, key, path);
    if (!v.is_number())
        throw CalibrationError(path + key, "expected a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d <= 0)
        throw CalibrationError(path + key, "expected a positive finite number, got " + v.dump());
    return d;
}

int64_t count(const nlohmann::json& j, const std::string& key, const std::string& path)
{
    const auto& v = member(j, key, path);
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
        throw CalibrationError(path + key, "expected an integer of at least 1, got " + v.dump());
    return v.get<int64_t>();
}

std::vector<GemmRate> gemmsFromJson(const nlohmann::json& j, const std::string& key)
{
    const auto& v = member(j, key, "");
    if (!v.is_array() || v.empty())
        throw CalibrationError(key, "expected a non-empty array of {m, n, k, groups, tflops}");
    std::vector<GemmRate> out;
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string path = key + "[" + std::to_string(i) + "].";
        GemmRate g;
        g.m = count(v[i], "m", path);
        g.n = count(v[i], "n", path);
        g.k = count(v[i], "k", path);
        g.groups = v[i].contains("groups") ? count(v[i], "groups", path) : 1;
        g.tflops = positive(v[i], "tflops", path);
        out.push_back(g);
    }
    sortByFlops(out);
    return out;
}

} // namespace

void sortByFlops(std::vector<GemmRate>& rates)
{
    std::stable_sort(rates.begin(), rates.end(),
        [](const GemmRate& a, const GemmRate& b) { return a.flops() < b.flops(); });
}

nlohmann::json calibrationToJson(const CalibrationRates& c)
{
    nlohmann::json j = { { "kind", kCalibrationKind }, { "version", kCalibrationVersion },
        { "device", c.device }, { "dtype", c.dtype }, { "torch_version", c.torch_version },
        { "measured_at", c.measured_at }, { "source", c.source }, { "provisional", c.provisional },
        { "matmul", gemmsToJson(c.matmul) }, { "grouped_gemm", gemmsToJson(c.grouped_gemm) },
        { "attention",
            { { "fwd_tflops", c.attention_fwd_tflops }, { "bwd_tflops", c.attention_bwd_tflops } } },
        { "elementwise_gbps", c.elementwise_gbps }, { "kernel_launch_us", c.kernel_launch_us },
        { "checkpoint_us", c.checkpoint_us }, { "host_sync_us", c.host_sync_us } };
    // Written only when measured: a record from before them reads the same as it was written.
    if (c.unfused_attention_fwd_gscores > 0)
        j["unfused_attention"] = { { "fwd_gscores", c.unfused_attention_fwd_gscores },
            { "bwd_gscores", c.unfused_attention_bwd_gscores } };
    if (c.score_dropout_fwd_gscores > 0)
        j["score_dropout"] = { { "fwd_gscores", c.score_dropout_fwd_gscores },
            { "bwd_gscores", c.score_dropout_bwd_gscores } };
    if (c.accumulate_gbps > 0)
        j["accumulate_gbps"] = c.accumulate_gbps;
    if (!c.fp8_matmul.empty())
        j["fp8_matmul"] = gemmsToJson(c.fp8_matmul);
    return j;
}

CalibrationRates calibrationFromJson(const nlohmann::json& j)
{
    if (!j.is_object())
        throw CalibrationError("record", "expected a JSON object");
    if (text(j, "kind") != kCalibrationKind)
        throw CalibrationError(
            "kind", "expected \"" + std::string(kCalibrationKind) + "\", got " + j["kind"].dump());
    if (!j["version"].is_number_integer() || j["version"].get<int>() != kCalibrationVersion)
        throw CalibrationError("version",
            "this build reads version " + std::to_string(kCalibrationVersion) + ", got "
                + j["version"].dump());
    CalibrationRates c;
    c.device = text(j, "device");
    c.dtype = text(j, "dtype");
    if (c.dtype != "bf16" && c.dtype != "fp16" && c.dtype != "fp32")
        throw CalibrationError("dtype", "expected bf16, fp16 or fp32, got \"" + c.dtype + "\"");
    c.torch_version = j.contains("torch_version") ? text(j, "torch_version") : "";
    c.measured_at = j.contains("measured_at") ? text(j, "measured_at") : "";
    c.source = text(j, "source");
    const auto& prov = member(j, "provisional", "");
    if (!prov.is_boolean())
        throw CalibrationError("provisional", "expected true or false");
    c.provisional = prov.get<bool>();
    c.matmul = gemmsFromJson(j, "matmul");
    c.grouped_gemm = gemmsFromJson(j, "grouped_gemm");
    if (j.contains("fp8_matmul")) // optional: measured where the device runs FP8 GEMMs
        c.fp8_matmul = gemmsFromJson(j, "fp8_matmul");
    const auto& a = member(j, "attention", "");
    c.attention_fwd_tflops = positive(a, "fwd_tflops", "attention.");
    c.attention_bwd_tflops = positive(a, "bwd_tflops", "attention.");
    c.elementwise_gbps = positive(j, "elementwise_gbps");
    c.kernel_launch_us = positive(j, "kernel_launch_us");
    c.checkpoint_us = positive(j, "checkpoint_us");
    c.host_sync_us = positive(j, "host_sync_us");
    // Optional (version 1 records written before they were measured lack them); when present, both rates.
    if (j.contains("unfused_attention")) {
        const auto& u = j.at("unfused_attention");
        c.unfused_attention_fwd_gscores = positive(u, "fwd_gscores", "unfused_attention.");
        c.unfused_attention_bwd_gscores = positive(u, "bwd_gscores", "unfused_attention.");
    }
    if (j.contains("score_dropout")) {
        const auto& u = j.at("score_dropout");
        c.score_dropout_fwd_gscores = positive(u, "fwd_gscores", "score_dropout.");
        c.score_dropout_bwd_gscores = positive(u, "bwd_gscores", "score_dropout.");
    }
    if (j.contains("accumulate_gbps"))
        c.accumulate_gbps = positive(j, "accumulate_gbps");
    return c;
}

CalibrationRates readCalibrationFile(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw CalibrationError("file", "cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
        throw CalibrationError("file", "'" + path + "' is not JSON: " + e.what());
    }
    return calibrationFromJson(j);
}

double gemmRateAt(const std::vector<GemmRate>& measured, double flops)
{
    if (measured.empty())
        return 0;
    if (flops <= measured.front().flops())
        return measured.front().tflops;
    if (flops >= measured.back().flops())
        return measured.back().tflops;
    for (size_t i = 1; i < measured.size(); ++i) {
        const double hi = measured[i].flops();
        if (flops > hi)
            continue;
        const double lo = measured[i - 1].flops();
        const double t = hi > lo ? (std::log(flops) - std::log(lo)) / (std::log(hi) - std::log(lo)) : 0;
        return measured[i - 1].tflops + t * (measured[i].tflops - measured[i - 1].tflops);
    }
    return measured.back().tflops;
}

} // namespace rs
