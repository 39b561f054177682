// SPDX-License-Identifier: Apache-2.0
// The regexes follow megatron-rules.md (e): Megatron-LM `training_log` / `report_memory`, Megatron Bridge
// `training_log` / its GB memory report, the theoretical-memory line, and the OOM message. Lines are matched
// unanchored, so launcher prefixes ("0: ", "[rank0]: ") do not matter.
#include "storage/log_import.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "core/overrides.h"
#include "core/recipe_json.h"

using namespace Qt::StringLiterals;

namespace rs::storage {

namespace {

const QString kFloat = u"([-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?|nan|inf|-inf)"_s;

const QRegularExpression& re(const QString& pattern)
{
    // One compiled expression per pattern text, kept for the process; std::map's nodes do not move, so the
    // references handed out stay valid as the cache grows, and the expressions are freed at exit.
    static std::map<QString, QRegularExpression> cache;
    auto it = cache.find(pattern);
    if (it == cache.end()) {
        it = cache.emplace(pattern, QRegularExpression(pattern)).first;
        it->second.optimize();
    }
    return it->second;
}

std::optional<double> parseFloat(const QString& text)
{
    if (text == u"nan")
        return std::nan("");
    if (text == u"inf")
        return HUGE_VAL;
    if (text == u"-inf")
        return -HUGE_VAL;
    bool ok = false;
    const double v = text.toDouble(&ok);
    return ok ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> field(const QString& line, const QString& pattern)
{
    const auto m = re(pattern).match(line);
    if (!m.hasMatch())
        return std::nullopt;
    return parseFloat(m.captured(1));
}

// MLM's report_memory divides by 1024*1024 ("MB"); Bridge divides by 1e9 ("gigabytes").
qint64 mibToBytes(double mb)
{
    return std::llround(mb * 1024.0 * 1024.0);
}
qint64 gbToBytes(double gb)
{
    return std::llround(gb * 1e9);
}

// The argument's value as Python printed it: None, True/False, numbers, lists ['a', 'b'], enums.
QJsonValue pythonValue(const QString& text)
{
    const QString t = text.trimmed();
    if (t == u"None")
        return QJsonValue();
    if (t == u"True")
        return true;
    if (t == u"False")
        return false;
    bool ok = false;
    const qlonglong i = t.toLongLong(&ok);
    if (ok)
        return double(i);
    const double d = t.toDouble(&ok);
    if (ok)
        return d;
    if (t.startsWith(u'[') && t.endsWith(u']')) {
        QJsonArray arr;
        const QString inner = t.mid(1, t.size() - 2).trimmed();
        if (!inner.isEmpty()) {
            for (QString item : inner.split(u',')) {
                item = item.trimmed();
                if (item.size() >= 2 && (item.front() == u'\'' || item.front() == u'"'))
                    item = item.mid(1, item.size() - 2);
                arr.append(item);
            }
        }
        return arr;
    }
    if (t.size() >= 2 && (t.front() == u'\'' || t.front() == u'"') && t.back() == t.front())
        return t.mid(1, t.size() - 2);
    return t;
}

void parseMemory(const QString& line, ParsedLog* log)
{
    // Unsynchronised ranks can write two reports onto one line: take each "[Rank N]" piece on its own.
    const auto& head = re(u"\\[Rank (\\d+)\\] \\(after (\\d+) iterations\\) memory \\((MB|GB)\\)"_s);
    auto it = head.globalMatch(line);
    QVector<QRegularExpressionMatch> heads;
    while (it.hasNext())
        heads << it.next();
    for (int h = 0; h < heads.size(); ++h) {
        const auto& m = heads[h];
        const qsizetype end = h + 1 < heads.size() ? heads[h + 1].capturedStart() : line.size();
        const QString body = line.mid(m.capturedEnd(), end - m.capturedEnd());
        MemoryReport r;
        r.rank = m.captured(1).toInt();
        r.afterIteration = m.captured(2).toInt();
        if (m.captured(3) == u"MB") {
            // All four values and the line's end (or the optional total) must be there: a cut number is not
            // one.
            const auto v = re(u"^ \\| allocated: "_s + kFloat + u" \\| max allocated: "_s + kFloat
                + u" \\| reserved: "_s + kFloat + u" \\| max reserved: "_s + kFloat
                + u"(?: \\| total device memory used: "_s + kFloat + u")?\\s*$"_s)
                               .match(body);
            if (!v.hasMatch()) {
                ++log->ignoredLines;
                continue;
            }
            r.allocated = mibToBytes(v.captured(1).toDouble());
            r.maxAllocated = mibToBytes(v.captured(2).toDouble());
            r.reserved = mibToBytes(v.captured(3).toDouble());
            r.maxReserved = mibToBytes(v.captured(4).toDouble());
        } else {
            auto kv = re(u"\\|\\s*([a-z-]+):\\s*([-+0-9.eE]+)"_s).globalMatch(body);
            while (kv.hasNext()) {
                const auto k = kv.next();
                const QString key = k.captured(1);
                const double value = k.captured(2).toDouble();
                if (key == u"mem-allocated-gigabytes")
                    r.allocated = gbToBytes(value);
                else if (key == u"mem-max-allocated-gigabytes")
                    r.maxAllocated = gbToBytes(value);
                else if (key == u"mem-reserved-gigabytes")
                    r.reserved = gbToBytes(value);
                else if (key == u"mem-max-reserved-gigabytes")
                    r.maxReserved = gbToBytes(value);
                else if (key == u"mem-alloc-retires") // sic: Bridge's key has this typo
                    r.allocRetries = int(value);
            }
            if (!r.maxAllocated && !r.allocated) {
                ++log->ignoredLines;
                continue;
            }
        }
        // A rank reporting the same iteration twice: the later line wins.
        auto same = std::find_if(log->memory.begin(), log->memory.end(),
            [&](const MemoryReport& x) { return x.rank == r.rank && x.afterIteration == r.afterIteration; });
        if (same != log->memory.end())
            *same = r;
        else
            log->memory << r;
    }
}

bool parseIteration(const QString& line, ParsedLog* log)
{
    const auto m = re(u"iteration\\s+(\\d+)/\\s*(\\d+)\\s*\\|"_s).match(line);
    if (!m.hasMatch())
        return false;
    // The last field of a complete line; without it the line was cut (or is not Megatron's).
    const auto nanIt = re(u"number of nan iterations:\\s*(\\d+)\\s*\\|"_s).match(line);
    const auto skipped = re(u"number of skipped iterations:\\s*(\\d+)\\s*\\|"_s).match(line);
    if (!nanIt.hasMatch() || !skipped.hasMatch()) {
        ++log->ignoredLines;
        return true;
    }
    IterationRow row;
    row.iteration = m.captured(1).toInt();
    log->trainIters = m.captured(2).toInt();
    row.stepMs = field(line, u"elapsed time per iteration \\(ms\\):\\s*([0-9.]+)\\s*\\|"_s);
    row.tflops = field(line, u"throughput per GPU \\(TFLOP/s/GPU\\):\\s*([0-9.]+)\\s*\\|"_s);
    const auto gbs = field(line, u"global batch size:\\s*(\\d+)\\s*\\|"_s);
    if (gbs)
        log->globalBatchSize = int(*gbs);
    // Megatron prints a loss only when its average is >= 0, so a NaN loss is an absent key.
    row.loss = field(line, u"\\|\\s*lm loss:\\s*([-+]?[0-9.]+E[-+][0-9]+|nan|inf|-inf)\\s*\\|"_s);
    if (row.loss && !std::isfinite(*row.loss))
        row.loss.reset();
    row.lossFinite = row.loss.has_value();
    if (!row.loss)
        log->lossDroppedSomewhere = true;
    row.skippedIterations = skipped.captured(1).toInt();
    row.nanIterations = nanIt.captured(1).toInt();
    log->skippedIterations += *row.skippedIterations;
    log->nanIterations += *row.nanIterations;
    auto same = std::find_if(log->iterations.begin(), log->iterations.end(),
        [&](const IterationRow& x) { return x.iteration == row.iteration; });
    if (same != log->iterations.end())
        *same = row;
    else
        log->iterations << row;
    return true;
}

} // namespace

ParsedLog parseTrainingLog(const QByteArray& bytes)
{
    ParsedLog log;
    // Logs are UTF-8 in practice; invalid bytes (binary junk) decode to U+FFFD and the line is just ignored.
    QString text = QString::fromUtf8(bytes);
    QStringList lines = text.split(u'\n');
    if (!lines.isEmpty() && lines.last().isEmpty()) {
        lines.removeLast();
    } else if (!lines.isEmpty()) {
        log.truncatedLastLine = true; // written up to here when the job died: not trusted
        lines.removeLast();
    }
    bool inArguments = false;
    bool sawMlmMemory = false, sawBridgeMemory = false, sawMicroseconds = false, sawTimestampWithout = false;
    int lastIterationSeen = 0;
    QStringList traceback;
    for (QString line : lines) {
        if (line.endsWith(u'\r'))
            line.chop(1);
        if (line.contains(u"------------------------ arguments ------------------------"_s)) {
            inArguments = true;
            continue;
        }
        if (inArguments) {
            if (line.contains(u"-------------------- end of arguments ---------------------"_s)) {
                inArguments = false;
                continue;
            }
            // "  name ..... value" (48 - len(name) dots; none for long names)
            const auto m = re(u"^(?:.*?\\s)?\\s([A-Za-z_][A-Za-z0-9_]*) \\.* ?(.*)$"_s).match(line);
            if (m.hasMatch())
                log.arguments.insert(m.captured(1), m.captured(2));
            else
                ++log.ignoredLines;
            continue;
        }
        if (line.contains(u"] (after "_s) && line.contains(u"[Rank "_s)) {
            if (line.contains(u"memory (MB)"_s))
                sawMlmMemory = true;
            if (line.contains(u"memory (GB)"_s))
                sawBridgeMemory = true;
            parseMemory(line, &log);
            continue;
        }
        if (line.contains(u"iteration"_s) && parseIteration(line, &log)) {
            const auto ts
                = re(u"\\[\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d(\\.\\d+)?\\] iteration"_s).match(line);
            if (ts.hasMatch())
                (ts.captured(1).isEmpty() ? sawTimestampWithout : sawMicroseconds) = true;
            if (!log.iterations.isEmpty())
                lastIterationSeen = std::max(lastIterationSeen, log.iterations.last().iteration);
            continue;
        }
        const auto theo
            = re(u"Theoretical memory footprints: weight and optimizer=([0-9.]+) MB(?:, activation=([0-9.]+) "
                 "MB, total=([0-9.]+) MB)?"_s)
                  .match(line);
        if (theo.hasMatch()) {
            log.theoreticalWeightOptimizerMb = theo.captured(1).toDouble();
            if (theo.hasCaptured(2) && !theo.captured(2).isEmpty()) {
                log.theoreticalActivationMb = theo.captured(2).toDouble();
                log.theoreticalTotalMb = theo.captured(3).toDouble();
            }
            continue;
        }
        if (line.contains(u"Traceback (most recent call last)"_s)) {
            traceback.clear();
            traceback << line;
            continue;
        }
        if (!traceback.isEmpty() && !log.oom)
            traceback << line;
        if (re(u"torch\\.(?:cuda\\.)?OutOfMemoryError|CUDA out of memory"_s).match(line).hasMatch()) {
            if (!log.oom) {
                log.oom = true;
                // The step that was running: one past the last one the log reported as done.
                int done = lastIterationSeen;
                for (const auto& m : log.memory)
                    done = std::max(done, m.afterIteration);
                log.oomIteration = done + 1;
                const auto msg
                    = re(u"((?:torch\\.(?:cuda\\.)?OutOfMemoryError: )?CUDA out of memory.*)$"_s).match(line);
                log.oomMessage = (msg.hasMatch() ? msg.captured(1) : line.trimmed()).left(400);
                // The innermost frame that names a stage.
                for (qsizetype i = traceback.size() - 1; i >= 0 && log.oomStage.isEmpty(); --i) {
                    const QString& frame = traceback[i];
                    if (!frame.contains(u"File \""_s))
                        continue;
                    if (frame.contains(u"optimizer"_s) || frame.contains(u"in step"_s))
                        log.oomStage = u"optimizer"_s;
                    else if (frame.contains(u"backward"_s) || frame.contains(u"torch/autograd"_s))
                        log.oomStage = u"backward"_s;
                    else if (frame.contains(u"in forward"_s))
                        log.oomStage = u"forward"_s;
                }
            }
            continue;
        }
        if (!line.trimmed().isEmpty())
            ++log.ignoredLines;
    }
    std::sort(log.iterations.begin(), log.iterations.end(),
        [](const IterationRow& a, const IterationRow& b) { return a.iteration < b.iteration; });
    std::sort(log.memory.begin(), log.memory.end(), [](const MemoryReport& a, const MemoryReport& b) {
        return a.afterIteration != b.afterIteration ? a.afterIteration < b.afterIteration : a.rank < b.rank;
    });
    if (sawBridgeMemory || (sawTimestampWithout && !sawMicroseconds && !sawMlmMemory))
        log.format = u"megatron-bridge"_s;
    else if (sawMlmMemory || sawMicroseconds || !log.arguments.isEmpty())
        log.format = u"megatron-lm"_s;
    else
        log.format = u"unknown"_s;
    return log;
}

namespace {

// The recipe-relevant fields of Megatron-LM's printed arguments, as recipe JSON keys.
QJsonObject recipeFromArguments(const QMap<QString, QString>& args)
{
    QJsonObject r;
    static const QStringList same = {
        u"num_layers"_s,
        u"hidden_size"_s,
        u"ffn_hidden_size"_s,
        u"num_attention_heads"_s,
        u"seq_length"_s,
        u"micro_batch_size"_s,
        u"global_batch_size"_s,
        u"bf16"_s,
        u"fp16"_s,
        u"fp8"_s,
        u"fp8_recipe"_s,
        u"fp4"_s,
        u"tensor_model_parallel_size"_s,
        u"pipeline_model_parallel_size"_s,
        u"virtual_pipeline_model_parallel_size"_s,
        u"context_parallel_size"_s,
        u"expert_model_parallel_size"_s,
        u"sequence_parallel"_s,
        u"moe_router_topk"_s,
        u"multi_latent_attention"_s,
        u"recompute_granularity"_s,
        u"recompute_modules"_s,
        u"recompute_method"_s,
        u"recompute_num_layers"_s,
        u"distribute_saved_activations"_s,
        u"train_iters"_s,
        u"moe_grouped_gemm"_s,
        u"transformer_impl"_s,
        u"cuda_graph_impl"_s,
        u"kv_lora_rank"_s,
        u"q_lora_rank"_s,
    };
    for (const QString& key : same) {
        if (args.contains(key))
            r.insert(key, pythonValue(args.value(key)));
    }
    // Megatron-LM calls it --num-experts; the config field is num_moe_experts.
    if (args.contains(u"num_experts"_s))
        r.insert(u"num_moe_experts"_s, pythonValue(args.value(u"num_experts"_s)));
    // num_query_groups is printed (default 1) but means something only with --group-query-attention.
    if (args.value(u"group_query_attention"_s) == u"True")
        r.insert(u"num_query_groups"_s, pythonValue(args.value(u"num_query_groups"_s)));
    if (args.contains(u"attention_backend"_s)) {
        QString backend = args.value(u"attention_backend"_s);
        backend = backend.mid(backend.lastIndexOf(u'.') + 1); // "AttnBackend.fused" → "fused"
        r.insert(u"attention_backend"_s, backend);
    }
    return r;
}

// The keys an override names: "model.recompute_modules=[...]" → "recompute_modules".
QString overrideKey(QString o)
{
    // The reader also takes an override quoted as a whole: 'model.recompute_modules=[moe]'
    if (o.size() >= 2 && (o.front() == u'\'' || o.front() == u'"') && o.back() == o.front())
        o = o.mid(1, o.size() - 2);
    while (o.startsWith(u'+'))
        o.remove(0, 1);
    o = o.left(o.indexOf(u'='));
    for (const QString& prefix : { u"model."_s, u"studio."_s, u"train."_s })
        if (o.startsWith(prefix))
            return o.mid(prefix.size());
    return o;
}

} // namespace

ImportResult importTrainingLog(Store* store, const QString& path, const ImportOptions& options)
{
    ImportResult result;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        result.error = path + u": "_s + file.errorString();
        return result;
    }
    const QByteArray bytes = file.readAll();
    const QString digest
        = QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
    if (const auto earlier = store->runByImportDigest(digest)) {
        result.runId = *earlier;
        result.duplicate = true;
        return result;
    }
    const ParsedLog log = parseTrainingLog(bytes);
    if (log.iterations.isEmpty() && log.memory.isEmpty() && !log.oom && log.arguments.isEmpty()) {
        result.error = path
            + u": not a Megatron-LM or Megatron Bridge training log (no iteration, memory, "
              "arguments or OOM lines)"_s;
        return result;
    }

    // The recipe as far as the log and the overrides tell it.
    QJsonObject recipe = recipeFromArguments(log.arguments);
    if (!options.overrides.isEmpty()) {
        std::vector<std::string> overrides;
        for (const QString& o : options.overrides)
            overrides.push_back(o.toStdString());
        try {
            const Recipe parsed = recipeFromBridgeOverrides(overrides);
            const QJsonObject full
                = QJsonDocument::fromJson(QByteArray::fromStdString(recipeToJson(parsed).dump())).object();
            for (const QString& o : options.overrides) {
                const QString key = overrideKey(o);
                if (key == u"comm_overlap.overlap_moe_expert_parallel_comm")
                    recipe.insert(key,
                        full.value(u"comm_overlap"_s)
                            .toObject()
                            .value(u"overlap_moe_expert_parallel_comm"_s));
                else if (full.contains(key))
                    recipe.insert(key, full.value(key));
            }
        } catch (const std::exception& e) {
            result.error = path + u": --overrides: "_s + QString::fromUtf8(e.what());
            return result;
        }
    }
    if (log.globalBatchSize && !recipe.contains(u"global_batch_size"_s))
        recipe.insert(u"global_batch_size"_s, *log.globalBatchSize);
    if (log.trainIters && !recipe.contains(u"train_iters"_s))
        recipe.insert(u"train_iters"_s, *log.trainIters);

    RunRecord run;
    run.source = source::Import;
    run.provenance = QFileInfo(path).absoluteFilePath();
    run.recipeName = options.recipeName.isEmpty() ? QFileInfo(path).completeBaseName() : options.recipeName;
    fillFromRecipeJson(&run, recipe);
    run.recipeJson.clear(); // a partial recipe: the fields above are what is known, not a full recipe
    if (!recipe.contains(u"bf16"_s) && !recipe.contains(u"fp16"_s))
        run.precision.clear(); // unknown, not fp32
    if (!recipe.contains(u"ffn_hidden_size"_s))
        run.ffnHiddenSize.reset();
    if (!recipe.contains(u"num_query_groups"_s) && !log.arguments.contains(u"group_query_attention"_s))
        run.numQueryGroups.reset();
    run.overrides = options.overrides;
    // Neither printed arguments nor overrides: the recompute choice is not known, which is not "none".
    if (!recipe.contains(u"recompute_granularity"_s)) {
        run.recomputeGranularity = u"unknown"_s;
        run.recomputeModules.reset();
    }
    if (log.arguments.contains(u"world_size"_s)) {
        run.worldSize = log.arguments.value(u"world_size"_s).toInt();
        run.gpuCount = run.worldSize;
    }
    run.importPath = run.provenance;
    run.importSha256 = digest;
    run.importFormat = log.format;
    run.theoreticalWeightOptimizerMb = log.theoreticalWeightOptimizerMb;
    run.theoreticalActivationMb = log.theoreticalActivationMb;
    run.theoreticalTotalMb = log.theoreticalTotalMb;

    // Peaks: the largest max-allocated any rank reported (the guide's contract reads it after iteration 2).
    QMap<int, RankPeak> ranks;
    for (const MemoryReport& m : log.memory) {
        RankPeak& p = ranks[m.rank];
        p.rank = m.rank;
        if (m.maxAllocated && (!p.peakAllocated || *m.maxAllocated > *p.peakAllocated)) {
            p.peakAllocated = m.maxAllocated;
            p.peakIteration = m.afterIteration;
        }
        if (m.maxReserved && (!p.peakReserved || *m.maxReserved > *p.peakReserved))
            p.peakReserved = m.maxReserved;
        if (m.maxAllocated && (!run.peakAllocated || *m.maxAllocated > *run.peakAllocated)) {
            run.peakAllocated = m.maxAllocated;
            run.peakRank = m.rank;
            run.peakNote = u"after iteration %1"_s.arg(m.afterIteration);
        }
        if (m.maxReserved && (!run.peakReserved || *m.maxReserved > *run.peakReserved))
            run.peakReserved = m.maxReserved;
    }

    // Steady state: the second half of the run (the guide's 11-20 of 20, 7-12 of 12) unless told.
    const int planned
        = log.trainIters.value_or(log.iterations.isEmpty() ? 0 : log.iterations.last().iteration);
    const int steadyFrom = options.steadyFrom > 0 ? options.steadyFrom : planned / 2 + 1;
    double stepSum = 0, tflopsSum = 0;
    int stepN = 0, tflopsN = 0, last = 0;
    for (const IterationRow& it : log.iterations) {
        last = std::max(last, it.iteration);
        if (it.iteration < steadyFrom)
            continue;
        if (it.stepMs) {
            stepSum += *it.stepMs;
            ++stepN;
        }
        if (it.tflops) {
            tflopsSum += *it.tflops;
            ++tflopsN;
        }
    }
    if (stepN > 0) {
        run.steadyStepMs = stepSum / stepN;
        run.steadyWindow = u"iterations %1-%2 (%3 logged)"_s.arg(steadyFrom).arg(last).arg(stepN);
    }
    if (tflopsN > 0)
        run.modelTflops = tflopsSum / tflopsN;
    if (!log.iterations.isEmpty()) {
        run.lossFinite = !log.lossDroppedSomewhere && log.nanIterations == 0;
        run.skippedIterations = log.skippedIterations;
        run.nanIterations = log.nanIterations;
    }

    if (log.oom) {
        run.outcome = outcome::Oom;
        run.failureIteration = log.oomIteration;
        run.failureStage = log.oomStage;
        run.message = log.oomMessage;
    } else if (log.lossDroppedSomewhere || log.nanIterations > 0) {
        run.outcome = outcome::Nonfinite;
        for (const IterationRow& it : log.iterations) {
            if (!it.lossFinite.value_or(true) || it.nanIterations.value_or(0) > 0) {
                run.failureIteration = it.iteration;
                break;
            }
        }
        run.message
            = u"a loss was not finite (dropped from the iteration line) or NaN iterations were counted"_s;
    } else if (log.iterations.isEmpty() || (log.trainIters && last < *log.trainIters)) {
        run.outcome = outcome::Aborted;
        run.message = log.iterations.isEmpty()
            ? u"the log has no iteration line"_s
            : u"the log ends at iteration %1 of %2"_s.arg(last).arg(*log.trainIters);
    } else {
        run.outcome = outcome::Pass;
    }
    QStringList notes;
    if (run.recomputeGranularity == u"unknown")
        notes << u"the log does not print the recompute settings: give them with --overrides"_s;
    if (log.truncatedLastLine)
        notes << u"the last line was cut off and not used"_s;
    if (log.ignoredLines > 0)
        notes << u"%1 line(s) not recognised"_s.arg(log.ignoredLines);
    if (log.oom && log.arguments.value(u"log_interval"_s, u"1"_s) != u"1")
        notes << u"log_interval is %1: the OOM iteration is a lower bound"_s.arg(
            log.arguments.value(u"log_interval"_s));
    run.notes = notes.join(u"; "_s);

    if (!store->beginWrite()) {
        result.error = store->lastError();
        return result;
    }
    auto fail = [&]() {
        result.error = path + u": "_s + store->lastError();
        store->rollbackWrite();
        // Another process imported the same bytes at the same moment (unique digest).
        if (const auto earlier = store->runByImportDigest(digest)) {
            result.error.clear();
            result.runId = *earlier;
            result.duplicate = true;
        }
        return result;
    };
    const qint64 id = store->insertRun(run);
    if (id == 0)
        return fail();
    for (IterationRow it : log.iterations) {
        it.runId = id;
        it.phase = it.iteration >= steadyFrom ? u"steady"_s : u"warmup"_s;
        if (!store->insertIteration(it))
            return fail();
    }
    for (MemoryReport m : log.memory) {
        m.runId = id;
        if (!store->insertMemoryReport(m))
            return fail();
    }
    for (RankPeak p : ranks) {
        p.runId = id;
        if (!store->insertRankPeak(p))
            return fail();
    }
    if (!run.isExplicitControl()) {
        if (const auto control = store->findLatestControlFor(id))
            store->setControl(id, control);
    }
    if (!store->commitWrite())
        return fail();
    result.runId = id;
    return result;
}

} // namespace rs::storage
