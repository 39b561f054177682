// SPDX-License-Identifier: Apache-2.0
#include "option_table.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QStringList>

#include "core/recipe_json.h"
#include "core/rules.h"

namespace rs::cli {

namespace {

const char* kRecipeForm = "(FILE.json | - | --overrides ARGS... | --mlm-args ARGS... | --recipe NAME "
                          "[--overrides ARGS...]) [options]";

const std::vector<std::string> kRecipeVerbs = { "validate", "estimate", "run", "sweep", "plan" };
// plan runs the worker only with --confirm.
const std::vector<std::string> kWorkerVerbs = { "run", "sweep", "plan" };
const std::vector<std::string> kStoreVerbs
    = { "run", "sweep", "advise", "import", "link", "report", "export", "plan" };

std::vector<std::string> allVerbNames();

std::vector<OptionSpec> makeOptionTable()
{
    const std::string slurmOn = " (any --slurm-* option runs the worker as a Slurm batch job)";
    std::vector<OptionSpec> t = {
        // The recipe (core/recipe_input.h reads it).
        { "overrides", "ARGS", Arity::Values, { "validate", "estimate", "run", "sweep", "plan", "import" },
            true, false,
            "the recipe as Megatron Bridge Hydra overrides (model.num_layers=8 ...): the arguments up to the "
            "next one that starts with --",
            { { "import", "",
                "Bridge overrides (model.recompute_modules=[moe_act] ...) for what the log does not print: "
                "the arguments up to the next one that starts with --; given again, they add up" } } },
        { "recipe", "NAME", Arity::Value, kRecipeVerbs, false, false,
            "a Megatron Bridge recipe by name (moonlight_16b_pretrain_8gpu_h100_bf16_config ...): the job it "
            "builds at the profiles' Bridge commit, after Bridge's setup(); --overrides change it" },
        { "gpus", "N", Arity::Value, kRecipeVerbs, false, false,
            "the launch's world size: the data-parallel size is N / (TP x PP x CP); with --recipe, default "
            "the "
            "GPUs its name states" },
        { "nodes", "N", Arity::Value, kRecipeVerbs, false, false,
            "nodes of the launch (with --gpus-per-node)" },
        { "gpus-per-node", "M", Arity::Value, kRecipeVerbs, false, false,
            "GPUs per node (the world size is --nodes x --gpus-per-node)" },
        { "mlm-args", "ARGS", Arity::Rest, kRecipeVerbs, false, false,
            "the recipe as Megatron-LM flags: every argument after it (a whole torchrun ... pretrain_gpt.py "
            "... line too)" },
        { "profile", "P", Arity::Value, kRecipeVerbs, false, false,
            "the rules profile (the Megatron Core revision): bridge-pin, guide, main or dev; default: the "
            "recipe's own, bridge-pin if unset" },
        { "json", "", Arity::Flag, { "validate", "estimate", "explain", "plan" }, false, false, "print JSON",
            { { "plan", "",
                  "print {\"chosen\", \"front\", \"candidates\": [{choice, verdict, reason, "
                  "peak_allocated_bytes, step_ms, delta_pct, ...}], \"rates\", \"provisional\", "
                  "\"step_terms\": the chosen (else the control's) step term by term}" },
                { "validate", "",
                    "print {\"findings\": [...], \"resolved\": the recipe after Megatron's adjustments, "
                    "...}" },
                { "estimate", "",
                    "print {\"peak_allocated_bytes\": the hottest stage's peak, \"ranks\": [...], "
                    "\"choices\": [...]}" },
                { "explain", "", "print the rule as JSON" } },
            true },
        { "layout", "megatron|worker", Arity::Value, { "estimate" }, false, false,
            "megatron (default): what Megatron-LM / Megatron Core allocate on a GPU; worker: what "
            "recompute-bench allocates today (docs/estimator.md says how they differ)" },
        { "all-choices", "", Arity::Flag, { "estimate" }, false, false,
            "also every recompute choice the model can take ([], each label with an effect, full uniform 1, "
            "full block over a whole chunk), one line each; a choice the rules refuse names the rule" },
        { "list", "", Arity::Flag, { "explain" }, false, false, "print every rule id with its summary" },
        { "terms", "", Arity::Flag, { "plan" }, false, false,
            "print the chosen choice's predicted step term by term (the control's where nothing is chosen): "
            "each region's forward, backward and replay, the schedule and the optimizer step, with the "
            "formula and rate each comes from (--json always has them, as step_terms)" },
        { "rates", "FILE|NAME", Arity::Value, { "plan" }, false, false,
            "the device's calibration record (recompute-bench --calibrate --out FILE writes one): the rates "
            "the step times are predicted from; or the name of a record shipped with the program (a name it "
            "does not know is answered with the names it has)" },
        { "control-ms", "MS", Arity::Value, { "plan" }, false, false,
            "the measured steady step of this job's [] control in ms (a run of it: recompute report, or the "
            "real job's log): every choice's step becomes it plus the predicted difference from the model's "
            "own [], so each Δ is the predicted replay over the measured step" },
        { "confirm", "N", Arity::Value, { "plan" }, false, false,
            "measure N choices with the worker (with --job: the user's own training command): the chosen "
            "one, then those within the estimate's error of the target predicted cheaper, then the next that "
            "fit; against the [] control (a stored one measured the same way is reused); print each "
            "prediction beside its measurement and the miss in points, and with a target the choice the "
            "measured peaks and steps make" },

        // The store and what is read from it.
        { "db", "PATH", Arity::Value, kStoreVerbs, false, true,
            "the measurement store (default: the per-user one, shared with recompute-studio)" },
        { "control", "RUN", Arity::Value, { "run", "report", "advise", "import", "link" }, false, false,
            "the [] control run",
            { { "run", "",
                  "the run's matched [] control; without it the latest stored run that is matched and is the "
                  "explicit [] control is linked" },
                { "report", "", "compare the runs (default: every run linked to it) against that run" },
                { "advise", "", "advise on that control's comparison (a candidate's: its control's)" },
                { "import", "", "link every LOG to that run instead of the control found among the logs" },
                { "link", "RUN|none",
                    "make RUN the control of each RUN given, or with none unlink them" } } },
        { "auto", "", Arity::Flag, { "link" }, false, false,
            "link each RUN as an import does: to the newest matched run of its shape without recompute; a "
            "RUN without recompute becomes the control of the matched runs with none" },
        { "recipe-name", "NAME", Arity::Value, { "advise", "report", "export" }, false, false,
            "only the runs whose recipe name contains NAME",
            { { "advise", "", "the newest comparison of the runs whose recipe name contains NAME" } } },
        { "model", "NAME", Arity::Value, { "report" }, false, false, "only the runs of that model" },
        { "target-gb", "X", Arity::Value, { "advise", "sweep", "plan" }, false, false,
            "the per-rank memory target in GB (1 GB = 1e9 bytes); default: the recipe's memory_target_gb" },
        { "format", "FORMAT", Arity::Value, { "advise", "report", "export" }, false, false,
            "the output format",
            { { "advise", "text|json", "text (default) or json" },
                { "report", "md|csv|json|html", "md (default), csv, json or html" },
                { "export", "csv|json|both", "csv, json or both (default)" } } },
        { "out", "PATH", Arity::Value, { "report", "export" }, false, false, "where to write",
            { { "report", "FILE", "write the table to FILE instead of stdout" },
                { "export", "DIR", "the folder the files go to (default: the current one)" } } },
        { "strict", "", Arity::Flag, { "report" }, false, false,
            "exit 1 when a row is not matched to its control" },

        // import
        { "name", "NAME", Arity::Value, { "import" }, false, false,
            "the recipe name stored with the runs (default: from the log)" },
        { "sample", "", Arity::Flag, { "import" }, false, false,
            "seed the store with the guide's published measurements (from FILE.json when given)" },
        { "no-link", "", Arity::Flag, { "import" }, false, false,
            "link nothing (`recompute link` does it later)" },
        { "progress", "", Arity::Flag, { "import" }, false, false,
            "a progress line on stderr (default: when stderr is a terminal)" },
        { "no-progress", "", Arity::Flag, { "import" }, false, false, "no progress line" },

        // run and sweep: what runs, how long, where.
        { "modules", "SET", Arity::Values, { "sweep" }, true, false,
            "the recompute choices to run, one SET each: comma-separated labels (moe_act layernorm,moe_act) "
            "for selective recompute, or full:uniform:N / full:block:N; takes one or more and may repeat "
            "(default: one run per label with an effect on the model)" },
        { "iters", "N", Arity::Value, kWorkerVerbs, false, false,
            "steady (timed) iterations after the warm-up, as the worker reads them (train_iters = warmup + "
            "iters)" },
        { "warmup", "N", Arity::Value, kWorkerVerbs, false, false, "warm-up iterations" },
        { "repeats", "N", Arity::Value, { "sweep" }, false, false,
            "run every choice, the [] control too, N times (each candidate linked to the control's first "
            "run), to "
            "see the spread" },
        { "rerun-control", "", Arity::Flag, { "sweep" }, false, false,
            "run the [] control even when a stored one measured the same way could be reused" },
        { "rerun", "", Arity::Flag, { "sweep" }, false, false,
            "run every choice and the control again, even where stored runs of the same recipe and launch "
            "settings could be reused" },
        { "repeats-max", "N", Arity::Value, { "sweep", "plan" }, false, false,
            "repeat a choice (the [] control too) until the 95 % interval of its median steady step time "
            "is within --interval-target of the median, at most N runs" },
        { "interval-target", "PCT", Arity::Value, { "sweep", "plan" }, false, false,
            "the interval's half-width that ends the repeats, in percent of the median (default 2)" },
        { "no-skip-by-estimate", "", Arity::Flag, { "sweep" }, false, false,
            "run every choice, also those the estimate says cannot fit the target (by default a choice "
            "estimated over --target-gb by more than the estimator's 5 % error is skipped, with the "
            "reason)" },
        { "job", "", Arity::Flag, { "sweep", "plan" }, false, false,
            "run the user's own training command (the Megatron-LM line given to --mlm-args, or Bridge "
            "overrides with --job-launcher) once per choice instead of the worker (plan: what --confirm "
            "runs)" },
        { "one-rank", "", Arity::Flag, { "sweep", "plan" }, false, false,
            "with --job and a Megatron-LM line: run one rank of its layout on this one GPU (Megatron-LM's "
            "--fake-process-group: the rank's real model and allocator, collectives skipped, so NCCL's "
            "buffers and communication time are not measured); the hottest rank by the estimate, or "
            "--rank-of-layout N. An expert-parallel MoE rank runs with symmetric collectives: the skipped "
            "ones filled as if every rank held this rank's tensors, so it receives world x its own "
            "routing's share of tokens (no rank hotter than its own routing)" },
        { "rank-of-layout", "N", Arity::Value, { "sweep", "plan" }, false, false,
            "with --job --one-rank: the global rank of the layout to run (Megatron's tp-cp-ep-dp-pp order)" },
        { "job-iters", "N", Arity::Value, { "sweep", "plan" }, false, false,
            "with --job: training iterations of each short run (default 10, at least 2)" },
        { "job-log-dir", "DIR", Arity::Value, { "sweep", "plan" }, false, false,
            "with --job: where each run's log is kept (default: job-logs beside the database)" },
        { "job-launcher", "WORDS", Arity::Value, { "sweep", "plan" }, false, false,
            "with --job and Bridge overrides: the launch words before them (e.g. 'torchrun "
            "--nproc-per-node 8 run_recipe.py --recipe NAME')" },
        { "device", "DEV", Arity::Value, kWorkerVerbs, false, false,
            "the worker's device: cpu, cuda, cuda:N" },
        { "ranks", "N", Arity::Value, kWorkerVerbs, false, false,
            "N worker processes on this host as data-parallel replicas (one GPU each with --device cuda, "
            "Gloo on CPU); every rank's iterations and peaks are stored" },
        { "worker", "PATH", Arity::Value, kWorkerVerbs, false, false,
            "the worker (default: $RS_WORKER, next to recompute, the build tree, recompute-bench on PATH)" },
        { "host", "HOST", Arity::Value, kWorkerVerbs, false, false,
            "run the worker on [user@]HOST over ssh (BatchMode: your keys and ~/.ssh/config), the recipe on "
            "its stdin" },
        { "ssh-options", "OPTS", Arity::Value, kWorkerVerbs, false, false,
            "ssh options for --host, one string ('-p 2222 -i KEY')" },
        { "remote-worker", "PATH", Arity::Value, kWorkerVerbs, false, false,
            "the worker's path on --host (default: recompute-bench on its PATH)" },
        { "slurm-partition", "NAME", Arity::Value, kWorkerVerbs, false, false,
            "the Slurm partition (default: the cluster's)" + slurmOn },
        { "slurm-nodes", "N", Arity::Value, kWorkerVerbs, false, false, "nodes of the job (default 1)" },
        { "slurm-tasks-per-node", "N", Arity::Value, kWorkerVerbs, false, false,
            "ranks per node (default 1); the job's ranks are nodes x tasks per node" },
        { "slurm-gpus-per-node", "N", Arity::Value, kWorkerVerbs, false, false,
            "GPUs per node (default: no --gpus-per-node line)" },
        { "slurm-time", "TIME", Arity::Value, kWorkerVerbs, false, false,
            "the job's time limit as sbatch --time takes it (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)" },
        { "slurm-account", "NAME", Arity::Value, kWorkerVerbs, false, false,
            "the account charged (default: yours)" },
        { "slurm-sbatch", "LINE", Arity::Value, kWorkerVerbs, true, false,
            "one more whole line of the batch script, '#SBATCH --...'; may repeat" },
        { "slurm-workdir", "DIR", Arity::Value, kWorkerVerbs, false, false,
            "the folder for the script, the recipe and every task's output: one the compute nodes see "
            "(needed)" },
        { "slurm-login-host", "HOST", Arity::Value, kWorkerVerbs, false, false,
            "submit, follow and cancel on [user@]HOST over ssh (default: sbatch on this host)" },
        { "slurm-ssh-option", "OPT", Arity::Value, kWorkerVerbs, true, false,
            "ssh options for --slurm-login-host ('-p 2222'); may repeat" },

        // Every verb.
        { "help", "", Arity::Flag, {}, false, true, "this help", {}, false, "h" },
        { "version", "", Arity::Flag, {}, false, true, "print the version (before the verb)" },
    };
    for (auto& o : t) {
        if (o.name == "help")
            o.verbs = allVerbNames();
    }
    return t;
}

std::vector<VerbSpec> makeVerbTable()
{
    return {
        { "advise", "choose the cheapest stored recompute choice that fits a per-rank memory target",
            { "[options]" },
            "From one matched comparison (the [] control and the runs linked to it), choose the passing run "
            "with the lowest steady step time whose every rank's peak allocated fits X GB (ties: the smaller "
            "peak), and say why each other run was not chosen: did not pass (an OOM that gets farther is "
            "still not a pass), over the target on a rank, not matched to the control, or slower. Where "
            "the runs have stored steady iterations, step times are compared as the sweep does: a "
            "difference inside the noise is \"not significant\" and never decides (ties go to the narrower "
            "recompute boundary, the guide's rule; a note says when that moved the choice). Neither "
            "--control nor --recipe-name: the newest comparison in the store.\nExit: 0 something fits, 1 "
            "nothing fits, 2 unusable input." },
        { "plan", "the cheapest recompute choice that fits, predicted before any run; --confirm measures it",
            { kRecipeForm },
            "Enumerates every recompute choice Megatron can express at the recipe's profile ([], the sets of "
            "labels with an effect on the model, full uniform and block with every recompute_num_layers), "
            "drops those with a rule error (naming the rule), estimates every rank's peak memory and "
            "predicts "
            "the step time of each from --rates (the per-layer regions' forward, backward and replay work at "
            "the device's measured rates, the pipeline bubble, the optimizer step; communication is not "
            "modelled), keeps those whose every rank fits --target-gb less the estimate's 5 % error, and "
            "prints the cheapest, the Pareto front of memory against time and why every other choice was "
            "dropped (over the target: on which stage and by how much; invalid: the rule; dominated: by "
            "which). A choice estimated under the target but inside that 5 % is within-error: only a "
            "measurement can say it fits. Predictions, not measurements: --confirm N measures the chosen "
            "one, the within-error ones predicted cheaper and the next that fit, and the advisor chooses "
            "among the measurements.\nExit: 0 "
            "something fits (or no target), 1 nothing fits or the recipe has a rule error, 2 unusable "
            "input." },
        { "estimate", "predict every rank's peak memory per phase, for one or every recompute choice",
            { kRecipeForm },
            "Predicts every pipeline stage's peak allocated memory per phase (forward, backward, optimizer, "
            "optimizer-init) and category (parameters, main parameters, gradients, optimizer states, "
            "activations, transient, other), hottest stage first, for the recipe after Megatron's "
            "adjustments.\nExit: 0 estimated, 1 the recipe has a rule error (estimated anyway), 2 unusable "
            "input." },
        { "explain", "print a validation rule: profiles, sources, message", { "RULE_ID [--json]", "--list" },
            "Prints a validation rule: severity, the profiles (Megatron Core revisions) where it exists, the "
            "fields it reads, Megatron's message, the fix-it, and its source file:line at each profile's "
            "commit; where the message or condition differs by profile, each form. RULE_ID as `recompute "
            "validate` prints it (R30, B4, M3, RT1, RS06 ...), any case." },
        { "export", "write stored runs, per-rank peaks and iterations as CSV / JSON",
            { "[options] [RUN...]" },
            "Writes runs, rank_peaks, phase_peaks, memory_reports and iterations (.csv and/or .json records) "
            "for the runs given or every stored run, each with <table>.dtypes.json, the pandas dtypes of its "
            "columns:\n    dt = json.load(open('runs.dtypes.json'))\n    pd.read_json('runs.json', dtype=dt) "
            " # or pd.read_csv('runs.csv', dtype=dt)\ngives nullable integers (Int64) and booleans (boolean) "
            "as stored; JSON has arrays as arrays, CSV as JSON text; doubles are written shortest "
            "round-trip; byte counts are the *_bytes columns." },
        { "import", "import Megatron-LM / Bridge training logs (or --sample: the guide's measurements)",
            { "[options] LOG...", "--sample [FILE.json] [--db PATH]" },
            "Reads Megatron-LM and Megatron Bridge training logs: iteration lines, per-rank memory lines, "
            "throughput, losses, skipped / NaN counts, theoretical memory, OOM tracebacks (every form), "
            "printed arguments and Bridge's configuration summary. Values out of range are refused and "
            "noted; a file that holds two runs (logs interleaved, a restart appended) is refused. A saved "
            "worker stream (the spool of `recompute run`) is stored as that run.\nThe logs of one shape "
            "compare themselves: the run without recompute (the explicit [] or Megatron's "
            "recompute_granularity None) becomes the control of the others, whatever order the files come "
            "in; `recompute report` then shows the deltas. Importing the same log twice does not duplicate "
            "it." },
        { "link", "give stored runs a control (the run the report compares them with)",
            { "[--db PATH] RUN... --control RUN|none", "[--db PATH] --auto RUN..." },
            "Makes --control the control of each RUN (the run `recompute report` compares it with), or with "
            "`none` unlinks them. Any run may be a control: the report labels it (the explicit [], "
            "Megatron's recompute_granularity None, or a run that recomputes something) and flags rows that "
            "are not matched with it." },
        { "report", "print the guide's comparison table of stored runs against their [] control",
            { "[options] [RUN...]" },
            "The guide's table: module set, peak allocated, step time, TFLOP/s/GPU, Allocated vs [], Time vs "
            "[], outcome. Without --control, the runs grouped by their stored matched control. Rows not "
            "matched to the control (shape, precision, parallelism, backend ...) are flagged with the reason "
            "and get no deltas." },
        { "run", "run a recipe on the local worker and store the measurements", { kRecipeForm },
            "Starts the worker (recompute-bench) for the recipe, on this host, on --host over ssh, or as a "
            "Slurm job (--slurm-*), shows progress, stores every event in the measurement store and prints "
            "the run's summary. A recipe with rule errors, or bad Slurm settings, is refused before the "
            "worker starts (nothing is stored). A store that cannot be opened does not stop the run: its "
            "stream is spooled to a file for `recompute import`. Ctrl-C stops the worker and keeps what was "
            "measured (the run ends `aborted`).\nExit: 0 pass, 1 the run did not pass, 2 unusable input "
            "(rule errors included) or the worker did not start, 130 interrupted." },
        { "sweep", "run the [] control and one matched run per recompute choice, then compare",
            { kRecipeForm },
            "The guide's matched runs: first the explicit no-recompute control (the recipe with "
            "recompute_granularity=selective, recompute_modules=[]), then one run per SET of --modules, "
            "changing only the recompute choice, each linked to the control. Each choice is validated first; "
            "one with rule errors is reported and skipped. Then the comparison table, and with --target-gb "
            "(or the recipe's memory_target_gb) the advice. A stored passing [] control of the same recipe, "
            "measured with the same worker, arguments, ranks and host, is reused (said on stderr) instead of "
            "run again, and so are stored passing runs of a choice (--rerun runs everything again). Step "
            "times "
            "are compared soundly: the median with its 95 % interval, Δ vs [] with its interval; a "
            "difference "
            "inside the noise is \"not significant\" and never decides the choice (ties go to the narrower "
            "recompute boundary, the guide's rule). With a target, a choice the estimate says cannot fit "
            "(over "
            "it by more than the estimator's 5 % error) is not run: it is reported with its estimate and "
            "the target, and does not change the exit status (--no-skip-by-estimate runs it). --job runs the "
            "user's own training command instead of "
            "the worker: the [] control first (Megatron-LM: recompute off), then one recompute change at a "
            "time written into the command, for a short run; each run's output is imported as it streams, "
            "linked to the control and compared, the estimate printed beside each measured peak; with "
            "--host over ssh, and with --slurm-* each run a Slurm batch job from those settings (its "
            "task output imported as it comes, Slurm's refusal, pending reason, cancel, node failure or "
            "time limit said as such); a stored run of the same recipe hash, command and iterations, "
            "launched the same way, is reused (--rerun-control, --rerun as for the worker). Where the "
            "worker runs (--ranks, --host, --slurm-*) is as for `recompute run`. Ctrl-C "
            "stops the current worker, keeps what was measured and runs no further choice.\nExit: 0 every "
            "choice ran (and, with a target, one fits), 1 a choice was skipped or nothing fits, 2 unusable "
            "input or the worker did not start, 130 interrupted." },
        { "validate", "check a recipe against Megatron's rules for a profile", { kRecipeForm },
            "Checks a recipe against the Megatron Core rules of the profile's revision, in Megatron's "
            "evaluation order. Bridge overrides also get the Megatron Bridge rules ("
                + frontEndRuleRange(InputFormat::BridgeOverrides)
                + "), Megatron-LM flags the Megatron-LM argument rules ("
                + frontEndRuleRange(InputFormat::MegatronFlags)
                + "). Each finding shows its severity, rule id, fields, "
                  "message, fix-it and source (file:line at the profile's commit); `recompute explain "
                  "RULE_ID` "
                  "tells more about a rule.\nExit: 0 no error finding, 1 an error finding, 2 the input is "
                  "unusable." },
    };
}

std::vector<std::string> allVerbNames()
{
    std::vector<std::string> names;
    for (const auto& v : verbTable())
        names.push_back(v.name);
    return names;
}

std::string join(const std::vector<std::string>& words, const std::string& sep)
{
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : sep) + w;
    return out;
}

// Text wrapped to `width` columns, every line after `indent` spaces; the first line's pad is left out when
// the caller already printed `indent` columns (padFirst false). Explicit line breaks are kept, and a line
// that starts with two spaces is kept as it is (an example).
std::string wrap(const std::string& text, size_t indent, size_t width, bool padFirst = true)
{
    std::string out;
    std::istringstream lines(text);
    std::string line;
    bool first = true;
    const std::string pad(indent, ' ');
    while (std::getline(lines, line)) {
        const std::string lead = first && !padFirst ? std::string() : pad;
        first = false;
        if (line.rfind("  ", 0) == 0) {
            out += lead + line + "\n";
            continue;
        }
        std::istringstream words(line);
        std::string word, current;
        bool firstOfLine = true;
        while (words >> word) {
            if (!current.empty() && indent + current.size() + 1 + word.size() > width) {
                out += (firstOfLine ? lead : pad) + current + "\n";
                firstOfLine = false;
                current.clear();
            }
            current += (current.empty() ? "" : " ") + word;
        }
        out += (firstOfLine ? lead : pad) + current + "\n";
    }
    return out;
}

QString latin1(const std::string& bytes)
{
    return QString::fromLatin1(bytes.data(), static_cast<qsizetype>(bytes.size()));
}

std::string bytes(const QString& s)
{
    const QByteArray b = s.toLatin1();
    return std::string(b.constData(), static_cast<size_t>(b.size()));
}

// "--name=value" / "-name" -> name; false for "-", "--" and what does not start with '-'.
bool splitOption(const std::string& arg, std::string* name, std::optional<std::string>* value)
{
    if (arg.size() < 2 || arg[0] != '-' || arg == "--")
        return false;
    const size_t start = arg[1] == '-' ? 2 : 1;
    const size_t eq = arg.find('=', start);
    *name = arg.substr(start, eq == std::string::npos ? std::string::npos : eq - start);
    *value = eq == std::string::npos ? std::nullopt : std::optional<std::string>(arg.substr(eq + 1));
    return true;
}

// The verb's option of that name (or short name), else nullptr.
const OptionSpec* verbOption(const std::string& verb, const std::string& name)
{
    for (const auto& o : optionTable()) {
        if ((o.name == name || (!o.shortName.empty() && o.shortName == name)) && o.takenBy(verb))
            return &o;
    }
    return nullptr;
}

std::string unknownOptionError(const std::string& verb, const std::string& shown, const std::string& name)
{
    std::vector<std::string> mine;
    for (const auto* o : optionsOf(verb))
        mine.push_back(o->name);
    std::string s = "unknown argument " + shown + ": not an option of " + verb;
    if (const OptionSpec* other = findOption(name); other && !other->verbs.empty())
        s += " (it is one of " + join(other->verbs, ", ") + ")";
    if (!mine.empty())
        s += "; nearest: --" + nearestName(name, mine);
    return s;
}

} // namespace

bool OptionSpec::takenBy(const std::string& verb) const
{
    return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

std::string OptionSpec::valueNameFor(const std::string& verb) const
{
    for (const auto& h : helpFor) {
        if (h.verb == verb && !h.valueName.empty())
            return h.valueName;
    }
    return valueName;
}

std::string OptionSpec::helpText(const std::string& verb) const
{
    for (const auto& h : helpFor) {
        if (h.verb == verb && !h.help.empty())
            return h.help;
    }
    return help;
}

std::string OptionSpec::spelling(const std::string& verb) const
{
    std::string s = (shortName.empty() ? "" : "-" + shortName + ", ") + "--" + name;
    if (arity != Arity::Flag)
        s += " " + valueNameFor(verb);
    if (arity == Arity::Values || arity == Arity::Rest)
        s += "...";
    return s;
}

const std::vector<OptionSpec>& optionTable()
{
    static const std::vector<OptionSpec> table = makeOptionTable();
    return table;
}

const std::vector<VerbSpec>& verbTable()
{
    static const std::vector<VerbSpec> table = makeVerbTable();
    return table;
}

const OptionSpec* findOption(const std::string& name)
{
    for (const auto& o : optionTable()) {
        if (o.name == name || (!o.shortName.empty() && o.shortName == name))
            return &o;
    }
    return nullptr;
}

const VerbSpec* findVerb(const std::string& name)
{
    for (const auto& v : verbTable()) {
        if (v.name == name)
            return &v;
    }
    return nullptr;
}

std::vector<const OptionSpec*> optionsOf(const std::string& verb)
{
    std::vector<const OptionSpec*> out;
    for (const auto& o : optionTable()) {
        if (o.takenBy(verb))
            out.push_back(&o);
    }
    return out;
}

bool ParsedArgs::has(const std::string& name) const
{
    if (name == "mlm-args")
        return rest.has_value();
    return values.count(name) > 0 || groups.count(name) > 0;
}

std::string ParsedArgs::value(const std::string& name, const std::string& fallback) const
{
    const auto it = values.find(name);
    return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> ParsedArgs::all(const std::string& name) const
{
    const auto it = values.find(name);
    return it == values.end() ? std::vector<std::string> {} : it->second;
}

ParseResult parseVerbArgs(const std::string& verb, const std::vector<std::string>& args)
{
    ParseResult result;
    ParsedArgs& out = result.args;
    out.verb = verb;
    auto noteUse = [&](const std::string& name) {
        if (std::find(out.order.begin(), out.order.end(), name) == out.order.end())
            out.order.push_back(name);
    };

    // 1. What QCommandLineParser cannot take: the argument lists (--overrides, --modules) and the
    //    Megatron-LM tail (--mlm-args); what is left goes to the parser in its order.
    std::vector<std::string> parserArgs;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            parserArgs.insert(parserArgs.end(), args.begin() + static_cast<long>(i), args.end());
            break;
        }
        std::string name;
        std::optional<std::string> inlineValue;
        const OptionSpec* spec = splitOption(a, &name, &inlineValue) ? verbOption(verb, name) : nullptr;
        if (!spec) {
            parserArgs.push_back(a);
            continue;
        }
        noteUse(spec->name);
        if (spec->arity == Arity::Rest) {
            std::vector<std::string> tail;
            if (inlineValue)
                tail.push_back(*inlineValue);
            for (size_t j = i + 1; j < args.size(); ++j) {
                std::string n;
                std::optional<std::string> v;
                const OptionSpec* ours = splitOption(args[j], &n, &v) && args[j].rfind("--", 0) == 0 && !v
                    ? verbOption(verb, n)
                    : nullptr;
                if (ours && ours->pastMlmArgs)
                    parserArgs.push_back(args[j]); // --json: Megatron-LM has no such flag
                else
                    tail.push_back(args[j]);
            }
            out.rest = tail;
            break;
        }
        if (spec->arity == Arity::Values) {
            std::vector<std::string> group;
            if (inlineValue)
                group.push_back(*inlineValue);
            while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0)
                group.push_back(args[++i]);
            out.groups[spec->name].push_back(group);
            continue;
        }
        parserArgs.push_back(a);
        if (spec->arity == Arity::Value && !inlineValue && i + 1 < args.size())
            parserArgs.push_back(args[++i]); // its value, whatever it looks like
    }

    // 2. The single values and flags, by QCommandLineParser. Bytes travel as Latin-1 (lossless).
    QCommandLineParser parser;
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    const auto specs = optionsOf(verb);
    for (const OptionSpec* o : specs) {
        if (o->arity != Arity::Flag && o->arity != Arity::Value)
            continue;
        QStringList names;
        if (!o->shortName.empty())
            names << QString::fromStdString(o->shortName);
        names << QString::fromStdString(o->name);
        QCommandLineOption option(names);
        if (o->arity == Arity::Value)
            option.setValueName(QString::fromStdString(o->valueNameFor(verb)));
        parser.addOption(option);
    }
    QStringList qargs { QStringLiteral("recompute") };
    for (const auto& a : parserArgs)
        qargs << latin1(a);
    const bool parsed = parser.parse(qargs);
    out.help = parser.isSet(QStringLiteral("help"));
    if (out.help)
        return result;

    if (!parser.unknownOptionNames().isEmpty()) {
        const std::string name = bytes(parser.unknownOptionNames().first());
        std::string shown = "--" + name;
        for (const auto& a : parserArgs) {
            std::string n;
            std::optional<std::string> v;
            if (splitOption(a, &n, &v) && n == name) {
                shown = a.substr(0, a.find('='));
                break;
            }
        }
        result.error = unknownOptionError(verb, shown, name);
        return result;
    }
    if (!parsed) {
        // A value option last without its value, or a flag given a value.
        for (size_t i = 0; i < parserArgs.size(); ++i) {
            std::string n;
            std::optional<std::string> v;
            const OptionSpec* o = splitOption(parserArgs[i], &n, &v) ? verbOption(verb, n) : nullptr;
            if (!o)
                continue;
            if (o->arity == Arity::Flag && v) {
                result.error = "--" + o->name + " takes no value (got '" + *v + "')";
                return result;
            }
            if (o->arity == Arity::Value && !v) {
                if (i + 1 >= parserArgs.size()) {
                    result.error = "--" + o->name + " needs a value (" + o->valueNameFor(verb) + ")";
                    return result;
                }
                ++i;
            }
        }
        result.error = bytes(parser.errorText());
        return result;
    }

    for (const QString& n : parser.optionNames()) {
        if (const OptionSpec* o = verbOption(verb, bytes(n)))
            noteUse(o->name);
    }
    for (const OptionSpec* o : specs) {
        const QString name = QString::fromStdString(o->name);
        if (o->arity == Arity::Flag && parser.isSet(name)) {
            out.values[o->name] = { std::string() };
        } else if (o->arity == Arity::Value && parser.isSet(name)) {
            std::vector<std::string> vs;
            for (const QString& v : parser.values(name))
                vs.push_back(bytes(v));
            out.values[o->name] = vs;
        }
    }
    for (const QString& p : parser.positionalArguments())
        out.positionals.push_back(bytes(p));
    return result;
}

std::optional<int> intOption(
    const ParsedArgs& args, const std::string& option, int minimum, std::string* error)
{
    if (!args.has(option))
        return std::nullopt;
    const std::string v = args.value(option);
    bool ok = false;
    const int n = QString::fromStdString(v).toInt(&ok);
    if (!ok || n < minimum) {
        *error = "--" + option + ": '" + v + "' is not "
            + (minimum == 0        ? "a non-negative integer"
                    : minimum == 1 ? "a positive integer"
                                   : "an integer of at least " + std::to_string(minimum));
        return std::nullopt;
    }
    return n;
}

namespace {

// --NAME X: a positive finite number; *error says what X was not ("--NAME: 'X' is not WHAT").
std::optional<double> positiveOption(
    const ParsedArgs& args, const std::string& name, const char* what, std::string* error)
{
    if (!args.has(name))
        return std::nullopt;
    const std::string v = args.value(name);
    bool ok = false;
    const double x = QString::fromStdString(v).toDouble(&ok);
    if (!ok || !std::isfinite(x) || x <= 0) {
        *error = "--" + name + ": '" + v + "' is not " + what;
        return std::nullopt;
    }
    return x;
}

} // namespace

std::optional<double> targetGbOption(const ParsedArgs& args, std::string* error)
{
    return positiveOption(
        args, "target-gb", "a per-rank memory target (a positive number of GB, 1 GB = 1e9 bytes)", error);
}

std::optional<double> controlMsOption(const ParsedArgs& args, std::string* error)
{
    return positiveOption(args, "control-ms", "a step time (a positive number of milliseconds)", error);
}

CommandLine parseCommandLine(const std::vector<std::string>& argv)
{
    CommandLine cl;
    QCommandLineParser parser;
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    // Everything from the verb on is the verb's.
    parser.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    std::vector<const OptionSpec*> globals;
    for (const auto& o : optionTable()) {
        if (!o.global)
            continue;
        globals.push_back(&o);
        QStringList names;
        if (!o.shortName.empty())
            names << QString::fromStdString(o.shortName);
        names << QString::fromStdString(o.name);
        QCommandLineOption option(names);
        if (o.arity == Arity::Value)
            option.setValueName(QString::fromStdString(o.valueName));
        parser.addOption(option);
    }
    QStringList qargs { QStringLiteral("recompute") };
    for (const auto& a : argv)
        qargs << latin1(a);
    const bool parsed = parser.parse(qargs);
    std::vector<std::string> positionals;
    for (const QString& p : parser.positionalArguments())
        positionals.push_back(bytes(p));
    cl.help = parser.isSet(QStringLiteral("help"));
    cl.version = parser.isSet(QStringLiteral("version"));
    if (!positionals.empty() && positionals[0] == "help") {
        cl.help = true;
        if (positionals.size() > 1)
            cl.helpVerb = positionals[1];
        return cl;
    }
    if (cl.help) {
        if (!positionals.empty())
            cl.helpVerb = positionals[0];
        return cl;
    }
    if (!parser.unknownOptionNames().isEmpty()) {
        const std::string name = bytes(parser.unknownOptionNames().first());
        std::vector<std::string> names;
        std::string list;
        for (const OptionSpec* o : globals) {
            names.push_back(o->name);
            list += (list.empty() ? "" : ", ") + o->spelling("");
        }
        cl.error = "unknown option --" + name + " before the verb (the options that may stand there: " + list
            + "; nearest: --" + nearestName(name, names) + ")";
        return cl;
    }
    if (!parsed) {
        for (const OptionSpec* o : globals) {
            if (o->arity == Arity::Value && !argv.empty()
                && (argv.back() == "--" + o->name || argv.back() == "-" + o->name)) {
                cl.error = "--" + o->name + " needs a value (" + o->valueName + ")";
                return cl;
            }
        }
        cl.error = bytes(parser.errorText());
        return cl;
    }
    if (cl.version)
        return cl;
    if (positionals.empty()) {
        cl.error = "no verb given";
        return cl;
    }
    cl.verb = positionals[0];
    for (const OptionSpec* o : globals) {
        if (o->arity != Arity::Value)
            continue;
        for (const QString& v : parser.values(QString::fromStdString(o->name))) {
            cl.globals.push_back("--" + o->name);
            cl.globals.push_back(bytes(v));
            if (o->takenBy(cl.verb)) {
                cl.verbArgs.push_back("--" + o->name);
                cl.verbArgs.push_back(bytes(v));
            }
        }
    }
    cl.verbArgs.insert(cl.verbArgs.end(), positionals.begin() + 1, positionals.end());
    return cl;
}

std::string usage()
{
    std::string s = "usage: recompute [--db PATH] <verb> [args...]   (recompute help VERB, or recompute VERB "
                    "--help, for each verb)\n\nverbs:\n";
    std::vector<const VerbSpec*> verbs;
    for (const auto& v : verbTable())
        verbs.push_back(&v);
    std::sort(
        verbs.begin(), verbs.end(), [](const VerbSpec* a, const VerbSpec* b) { return a->name < b->name; });
    for (const VerbSpec* v : verbs)
        s += "  " + v->name + std::string(10 - std::min<size_t>(9, v->name.size()), ' ') + v->summary + "\n";
    s += "\nbefore the verb:\n";
    for (const auto& o : optionTable()) {
        if (!o.global)
            continue;
        const std::string left = "  " + o.spelling("");
        s += left + std::string(left.size() < 26 ? 26 - left.size() : 1, ' ');
        std::string help = o.help;
        if (!o.verbs.empty() && o.name != "help")
            help += " (for " + join(o.verbs, ", ") + "; the other verbs do not use it)";
        s += wrap(help, 26, 110, false);
    }
    return s;
}

std::string usageLine(const std::string& verb)
{
    const VerbSpec* v = findVerb(verb);
    if (!v)
        return "usage: recompute " + verb + "\n";
    return "usage: recompute " + verb + " " + (v->forms.empty() ? std::string() : v->forms.front())
        + "   (recompute help " + verb + ")\n";
}

std::string verbHelp(const std::string& verb)
{
    const VerbSpec* v = findVerb(verb);
    if (!v)
        return {};
    std::string s;
    for (size_t i = 0; i < v->forms.size(); ++i)
        s += std::string(i == 0 ? "usage: " : "       ") + "recompute " + verb + " " + v->forms[i] + "\n";
    s += wrap(v->about, 2, 110);
    s += "options:\n";
    std::vector<std::string> before;
    for (const OptionSpec* o : optionsOf(verb)) {
        const std::string left = "  " + o->spelling(verb);
        std::string help = o->helpText(verb);
        if (o->repeats && help.find("repeat") == std::string::npos && help.find("again") == std::string::npos)
            help += "; may repeat";
        if (left.size() + 2 > 28) {
            s += left + "\n" + wrap(help, 28, 110);
        } else {
            s += left + std::string(28 - left.size(), ' ') + wrap(help, 28, 110, false);
        }
        if (o->global && o->arity == Arity::Value)
            before.push_back(o->spelling(verb));
    }
    if (!before.empty())
        s += "before the verb too: recompute " + join(before, " ") + " " + verb + " ...\n";
    return s;
}

} // namespace rs::cli
