// SPDX-License-Identifier: Apache-2.0
// A stand-in for a Megatron-LM training command in CI (a real Megatron-LM cannot run without a GPU): it
// takes a Megatron-LM command line (`fake_megatron [launcher options] pretrain_gpt.py --flags...`), picks
// the real H200 log in tests/fixtures/logs/megatron-lm-h200/ that matches the recompute flags it was given
// (and the shape: --num-experts → moe-*, --swiglu → llama-*, else dense-*), and replays its lines at
// their pace: before each iteration line it sleeps the logged "elapsed time per iteration (ms)" times
// $RS_FAKE_MEGATRON_PACE (default 0.01). It exits with the log's own "# exit: N". The logs' "# " lines
// (our own notes) are not replayed.
//   dense-none, dense-core_attn (selective, no --recompute-modules: Megatron's default), dense-mlp,
//   dense-full-uniform-1, dense-full-block-4, llama-*, moe-moe, moe-shared_experts, ...
// $RS_FAKE_MEGATRON_LOGS names another folder; $RS_FAKE_MEGATRON_SEEN, when set, is a file each run
// appends its fixture's name to (the tests check which log was replayed).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#ifndef RS_FAKE_MEGATRON_LOGS
#define RS_FAKE_MEGATRON_LOGS ""
#endif

namespace {

bool endsWith(const std::string& s, const std::string& tail)
{
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    std::size_t script = 0;
    while (script < args.size() && !endsWith(args[script], ".py"))
        ++script;
    if (script == args.size()) {
        std::cerr << "fake_megatron: no *.py script among the arguments\n";
        return 2;
    }
    std::string granularity, method, layers;
    std::vector<std::string> modules;
    std::string shape = "dense";
    for (std::size_t i = script + 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
        if (a == "--recompute-granularity")
            granularity = value();
        else if (a == "--recompute-method")
            method = value();
        else if (a == "--recompute-num-layers")
            layers = value();
        else if (a == "--recompute-modules") {
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                modules.push_back(args[++i]);
        } else if (a == "--num-experts")
            shape = "moe";
        else if (a == "--swiglu" && shape != "moe")
            shape = "llama";
    }
    std::string choice;
    if (granularity.empty())
        choice = "none";
    else if (granularity == "full")
        choice = "full-" + method + "-" + layers;
    else if (modules.empty())
        choice = "core_attn"; // Megatron's default for selective
    else
        for (const std::string& m : modules)
            choice += (choice.empty() ? "" : "-") + m;
    const char* dirEnv = std::getenv("RS_FAKE_MEGATRON_LOGS");
    const std::string dir = dirEnv && *dirEnv ? dirEnv : RS_FAKE_MEGATRON_LOGS;
    const std::string name = shape + "-" + choice;
    std::ifstream log(dir + "/" + name + ".log");
    if (!log) {
        std::cerr << "fake_megatron: no real log " << name << ".log in " << dir
                  << " for these recompute flags\n";
        return 3;
    }
    if (const char* seen = std::getenv("RS_FAKE_MEGATRON_SEEN"); seen && *seen)
        std::ofstream(seen, std::ios::app) << name << "\n";
    double pace = 0.01;
    if (const char* p = std::getenv("RS_FAKE_MEGATRON_PACE"); p && *p)
        pace = std::atof(p);
    int exitCode = 0;
    std::string line;
    const std::string elapsed = "elapsed time per iteration (ms): ";
    while (std::getline(log, line)) {
        if (line.rfind("# exit: ", 0) == 0) {
            exitCode = std::atoi(line.c_str() + 8);
            continue;
        }
        if (line.rfind("# ", 0) == 0)
            continue;
        if (const auto at = line.find(elapsed); at != std::string::npos) {
            const double ms = std::atof(line.c_str() + at + elapsed.size());
            if (ms > 0 && pace > 0)
                std::this_thread::sleep_for(std::chrono::microseconds(long(ms * pace * 1000.0)));
        }
        std::cout << line << "\n" << std::flush;
    }
    return exitCode;
}
