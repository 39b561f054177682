// SPDX-License-Identifier: Apache-2.0
// Real-job runs (issue 15): one recompute change written into the user's own Megatron-LM command (and
// Bridge overrides) in its own syntax with the short-run flags; the log importer fed line by line gives what
// the one-pass import gives; and JobRun runs the stand-in training command (real H200 logs replayed at
// their pace), its iterations arriving while it still runs.
#include <QtTest>

#include "core/megatron_flags.h"
#include "core/recipe_input.h"
#include "core/recipe_json.h"
#include "session/job_run.h"
#include "storage/log_import.h"

using namespace Qt::StringLiterals;
Q_DECLARE_METATYPE(std::optional<rs::RecomputeChoice>)

namespace {

const QString kLogs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200");

// The fixture's own command line (its first line), the recompute flags taken out: the dense [] shape.
std::vector<std::string> fixtureCommand(const QString& program = u"torchrun"_s)
{
    QFile f(kLogs + u"/dense-none.log"_s);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QString first = QString::fromUtf8(f.readLine()).trimmed();
    first.remove(0, QStringLiteral("# command: ").size());
    std::vector<std::string> out;
    const QStringList words = first.split(u' ', Qt::SkipEmptyParts);
    for (int i = 0; i < words.size(); ++i)
        out.push_back(i == 0 ? program.toStdString() : words[i].toStdString());
    return out;
}

rs::Recipe mlmRecipe(const QString& program = u"torchrun"_s)
{
    std::vector<std::string> args { "--profile", "main", "--mlm-args" };
    for (const std::string& w : fixtureCommand(program))
        args.push_back(w);
    return rs::readRecipeInput(args, nullptr).recipe;
}

int count(const std::vector<std::string>& v, const std::string& w)
{
    return int(std::count(v.begin(), v.end(), w));
}

std::string after(const std::vector<std::string>& v, const std::string& w)
{
    const auto it = std::find(v.begin(), v.end(), w);
    return it != v.end() && it + 1 != v.end() ? *(it + 1) : std::string();
}

} // namespace

class TestJobRun : public QObject {
    Q_OBJECT
private slots:
    void megatronCommand_data()
    {
        QTest::addColumn<std::optional<rs::RecomputeChoice>>("choice");
        QTest::addColumn<QString>("granularity"); // "" none
        QTest::addColumn<QString>("modules");
        QTest::addColumn<QString>("method");
        QTest::addColumn<QString>("layers");
        QTest::newRow("[] control: recompute off")
            << std::optional<rs::RecomputeChoice>() << QString() << QString() << QString() << QString();
        QTest::newRow("core_attn") << std::optional(rs::parseRecomputeChoice("core_attn")) << u"selective"_s
                                   << u"core_attn"_s << QString() << QString();
        QTest::newRow("layernorm,mlp") << std::optional(rs::parseRecomputeChoice("layernorm,mlp"))
                                       << u"selective"_s << u"layernorm"_s << QString() << QString();
        QTest::newRow("full uniform 1") << std::optional(rs::parseRecomputeChoice("full:uniform:1"))
                                        << u"full"_s << QString() << u"uniform"_s << u"1"_s;
        QTest::newRow("full block 4") << std::optional(rs::parseRecomputeChoice("full:block:4")) << u"full"_s
                                      << QString() << u"block"_s << u"4"_s;
    }
    void megatronCommand()
    {
        QFETCH(std::optional<rs::RecomputeChoice>, choice);
        QFETCH(QString, granularity);
        QFETCH(QString, modules);
        QFETCH(QString, method);
        QFETCH(QString, layers);
        const rs::Recipe base = mlmRecipe();
        const std::vector<std::string> cmd
            = rs::session::jobCommand(base, rs::InputFormat::MegatronFlags, choice, { 7 });
        // The user's launcher and script first, their own flags kept.
        QCOMPARE(cmd.front(), std::string("torchrun"));
        QCOMPARE(count(cmd, "--standalone"), 1);
        QCOMPARE(count(cmd, "pretrain_gpt.py"), 1);
        QCOMPARE(count(cmd, "--mock-data"), 1);
        QCOMPARE(after(cmd, "--hidden-size"), std::string("2048"));
        // The short run, once each (the user's --train-iters 6 and intervals replaced).
        QCOMPARE(count(cmd, "--train-iters"), 1);
        QCOMPARE(after(cmd, "--train-iters"), std::string("7"));
        QCOMPARE(after(cmd, "--log-interval"), std::string("1"));
        QCOMPARE(after(cmd, "--log-memory-interval"), std::string("1")); // arguments.py at main has it
        // The one recompute change, in Megatron-LM's spelling.
        QCOMPARE(QString::fromStdString(after(cmd, "--recompute-granularity")), granularity);
        QCOMPARE(QString::fromStdString(after(cmd, "--recompute-modules")), modules);
        QCOMPARE(QString::fromStdString(after(cmd, "--recompute-method")), method);
        QCOMPARE(QString::fromStdString(after(cmd, "--recompute-num-layers")), layers);
        // Read back, it is the recipe of that choice and nothing else changed.
        const rs::Recipe back = rs::recipeFromMegatronFlags(
            cmd, rs::frontEndDefaults(rs::InputFormat::MegatronFlags, rs::Profile::Main));
        const rs::Recipe want = rs::session::jobRecipe(base, rs::InputFormat::MegatronFlags, choice);
        QCOMPARE(back.recompute_granularity, want.recompute_granularity);
        QCOMPARE(back.recompute_modules, want.recompute_modules);
        QCOMPARE(back.num_layers, base.num_layers);
        QCOMPARE(back.seq_length, base.seq_length);
        QCOMPARE(back.train_iters, 7);
    }

    void bridgeCommand_data()
    {
        QTest::addColumn<std::optional<rs::RecomputeChoice>>("choice");
        QTest::addColumn<QString>("expected");
        QTest::newRow("[] control: the explicit []")
            << std::optional<rs::RecomputeChoice>() << u"model.recompute_modules=[]"_s;
        QTest::newRow("moe_act") << std::optional(rs::parseRecomputeChoice("layernorm,moe_act"))
                                 << u"model.recompute_modules=[layernorm,moe_act]"_s;
        QTest::newRow("full") << std::optional(rs::parseRecomputeChoice("full:uniform:2"))
                              << u"model.recompute_method=uniform"_s;
    }
    void bridgeCommand()
    {
        QFETCH(std::optional<rs::RecomputeChoice>, choice);
        QFETCH(QString, expected);
        const rs::Recipe base = rs::readRecipeInput(
            { "--overrides", "model.num_layers=4", "model.hidden_size=256", "model.num_attention_heads=4",
                "train.train_iters=1000", "logger.log_interval=10" },
            nullptr)
                                    .recipe;
        const std::vector<std::string> launcher { "torchrun", "--nproc-per-node", "8",
            "scripts/training/run_recipe.py", "--recipe", "llama3_8b_pretrain_config" };
        const auto cmd
            = rs::session::jobCommand(base, rs::InputFormat::BridgeOverrides, choice, { 12 }, launcher);
        QVERIFY(std::equal(launcher.begin(), launcher.end(), cmd.begin()));
        QStringList words;
        for (const auto& w : cmd)
            words << QString::fromStdString(w);
        QVERIFY2(words.contains(expected), qPrintable(words.join(u' ')));
        QCOMPARE(words.filter(u"train.train_iters="_s), QStringList { u"train.train_iters=12"_s });
        QCOMPARE(words.filter(u"logger.log_interval="_s), QStringList { u"logger.log_interval=1"_s });
        QVERIFY(words.contains(u"model.num_layers=4"_s));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
            rs::session::jobCommand(base, rs::InputFormat::BridgeOverrides, choice, { 12 }));
    }

    // One rank of the layout on one GPU (issue 28): the launcher's words give way to one process with the
    // rank and the world in Megatron-LM's variables and --fake-process-group; read back, the command is the
    // same job (its data-parallel size from WORLD_SIZE).
    void oneRankCommand_data()
    {
        QTest::addColumn<QString>("line"); // the user's Megatron-LM line
        QTest::addColumn<int>("requested"); // -1: the hottest
        QTest::addColumn<QString>("rank");
        QTest::addColumn<QString>("world");
        QTest::addColumn<QString>("python");
        const QString shape = u"pretrain_gpt.py --num-layers 8 --hidden-size 1024 --num-attention-heads 16 "
                              "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
                              "--global-batch-size 16 --bf16 --use-distributed-optimizer"_s;
        // The estimate's hottest is the last stage here (0.851 GB against stage 0's 0.842: the output
        // layer's logits and the loss outweigh the first stage's extra micro-batch at this width): its first
        // rank, 4 = stage 1 x (TP 2 x DP 2).
        QTest::newRow("TP 2 SP x PP 2 on 8: the hottest, stage 1")
            << u"torchrun --nproc-per-node 8 "_s + shape
                + u" --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2"_s
            << -1 << u"RANK=4"_s << u"WORLD_SIZE=8"_s << u"python3"_s;
        QTest::newRow("the same, rank 1 (stage 0)") << u"torchrun --nproc-per-node 8 "_s + shape
                + u" --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 2"_s
                                                    << 1 << u"RANK=1"_s << u"WORLD_SIZE=8"_s << u"python3"_s;
        // srun's task count is not read: the world is the model-parallel size, PP 4.
        QTest::newRow("srun gives way to python3")
            << u"srun --ntasks 4 python3 "_s + shape + u" --pipeline-model-parallel-size 4"_s << -1
            << u"RANK=0"_s << u"WORLD_SIZE=4"_s << u"python3"_s;
        QTest::newRow("two nodes, the launcher's interpreter kept")
            << u"/opt/venv/bin/python -m torch.distributed.run --nproc-per-node 4 --nnodes 2 "_s + shape
                + u" --pipeline-model-parallel-size 4"_s
            << -1 << u"RANK=0"_s << u"WORLD_SIZE=8"_s << u"/opt/venv/bin/python"_s;
    }
    void oneRankCommand()
    {
        QFETCH(QString, line);
        QFETCH(int, requested);
        QFETCH(QString, rank);
        QFETCH(QString, world);
        QFETCH(QString, python);
        std::vector<std::string> args { "--profile", "main", "--mlm-args" };
        for (const QString& w : line.split(u' '))
            args.push_back(w.toStdString());
        const rs::Recipe base = rs::readRecipeInput(args, nullptr).recipe;
        rs::session::OneRankOfLayout one;
        if (requested >= 0)
            one.rank = requested;
        const auto choice = std::optional(rs::parseRecomputeChoice("mlp"));
        const std::vector<std::string> cmd
            = rs::session::jobCommand(base, rs::InputFormat::MegatronFlags, choice, { 5, one });
        QStringList words;
        for (const auto& w : cmd)
            words << QString::fromStdString(w);
        QCOMPARE(words.mid(0, 6),
            (QStringList { u"env"_s, rank, world, u"LOCAL_RANK=0"_s, python, u"pretrain_gpt.py"_s }));
        QCOMPARE(words.count(u"--fake-process-group"_s), 1);
        QCOMPARE(words.last(), u"--fake-process-group"_s);
        QVERIFY(!words.contains(u"torchrun"_s) && !words.contains(u"--nproc-per-node"_s));
        QCOMPARE(after(cmd, "--train-iters"), std::string("5"));
        QCOMPARE(after(cmd, "--recompute-modules"), std::string("mlp"));
        const rs::Recipe back = rs::recipeFromMegatronFlags(
            cmd, rs::frontEndDefaults(rs::InputFormat::MegatronFlags, rs::Profile::Main));
        QCOMPARE(back.data_parallel_size, base.data_parallel_size);
        QCOMPARE(back.pipeline_model_parallel_size, base.pipeline_model_parallel_size);
        const rs::session::LayoutRankChoice c
            = rs::session::layoutRankChoice(base, rs::InputFormat::MegatronFlags, one);
        QCOMPARE(u"RANK=%1"_s.arg(c.rank), rank);
        QCOMPARE(u"WORLD_SIZE=%1"_s.arg(c.world), world);
        QCOMPARE(c.hottest, requested < 0);
    }

    // An expert-parallel MoE rank (issue 28): the skipped all-to-all would leave the token counts it
    // receives unset, so Python first runs the symmetric-ranks shim, passed whole in the command (`-c`, one
    // base64 word: no file has to reach an ssh or Slurm host), then the script as __main__.
    void oneRankOfAnExpertParallelLayout_data()
    {
        QTest::addColumn<QString>("parallel");
        QTest::addColumn<bool>("symmetric");
        QTest::newRow("EP 2 x TP 2 SP") << u"--tensor-model-parallel-size 2 --sequence-parallel "
                                           "--expert-model-parallel-size 2"_s
                                        << true;
        // Megatron's expert-TP defaults to TP (core/model_shape.h parallelSizes).
        QTest::newRow("expert-TP 2 (TP 2's default)")
            << u"--tensor-model-parallel-size 2 --sequence-parallel"_s << true;
        // Experts whole on every rank: nothing crosses ranks, no shim.
        QTest::newRow("DP 8, experts whole") << u"--use-distributed-optimizer"_s << false;
    }
    void oneRankOfAnExpertParallelLayout()
    {
        QFETCH(QString, parallel);
        QFETCH(bool, symmetric);
        const QString line = u"torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 512 "
                             "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
                             "--micro-batch-size 1 --global-batch-size 8 --bf16 --num-experts 8 "
                             "--moe-router-topk 2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "_s
            + parallel;
        std::vector<std::string> args { "--profile", "main", "--mlm-args" };
        for (const QString& w : line.split(u' '))
            args.push_back(w.toStdString());
        const rs::Recipe base = rs::readRecipeInput(args, nullptr).recipe;
        const rs::session::LayoutRankChoice c
            = rs::session::layoutRankChoice(base, rs::InputFormat::MegatronFlags, {});
        QCOMPARE(c.symmetricCollectives, symmetric);
        const std::vector<std::string> cmd = rs::session::jobCommand(
            base, rs::InputFormat::MegatronFlags, std::nullopt, { 5, rs::session::OneRankOfLayout {} });
        QStringList words;
        for (const auto& w : cmd)
            words << QString::fromStdString(w);
        QCOMPARE(words.mid(0, 5),
            (QStringList {
                u"env"_s, u"RANK=%1"_s.arg(c.rank), u"WORLD_SIZE=8"_s, u"LOCAL_RANK=0"_s, u"python3"_s }));
        QCOMPARE(words.last(), u"--fake-process-group"_s);
        if (!symmetric) {
            QCOMPARE(words.at(5), u"pretrain_gpt.py"_s);
            QVERIFY(!words.contains(u"-c"_s));
            return;
        }
        QCOMPARE(words.at(5), u"-c"_s);
        QCOMPARE(words.at(7), u"pretrain_gpt.py"_s);
        // Shown to a person, the bootstrap is named, every other word as it is.
        const QStringList shown = rs::session::commandForDisplay(words);
        QCOMPARE(shown.size(), words.size());
        for (qsizetype i = 0; i < words.size(); ++i)
            QCOMPARE(shown[i] == words[i], i != 6);
        QVERIFY(shown[6].contains(u"symmetric-ranks shim"_s));
        // The code is the shipped shim, byte for byte, then the script's run as __main__.
        static const QRegularExpression b64(u"b64decode\\('([A-Za-z0-9+/=]+)'\\)"_s);
        const auto m = b64.match(words.at(6));
        QVERIFY2(m.hasMatch(), qPrintable(words.at(6).left(120)));
        QVERIFY(!words.at(6).contains(u'\n'));
        const QByteArray code = QByteArray::fromBase64(m.captured(1).toLatin1());
        QFile shim(QStringLiteral(RS_SOURCE_DIR "/resources/megatron/symmetric_ranks.py"));
        QVERIFY(shim.open(QIODevice::ReadOnly));
        const QByteArray text = shim.readAll();
        QVERIFY(text.contains("all_to_all_single"));
        QVERIFY(code.startsWith(text));
        QVERIFY(code.mid(text.size()).contains("runpy.run_path(_sys.argv[0], run_name=\"__main__\")"));
        // Read back, the command is the same job: the launcher words end at the script.
        const rs::Recipe back = rs::recipeFromMegatronFlags(
            cmd, rs::frontEndDefaults(rs::InputFormat::MegatronFlags, rs::Profile::Main));
        QCOMPARE(back.expert_model_parallel_size, base.expert_model_parallel_size);
        QCOMPARE(back.data_parallel_size, base.data_parallel_size);
        QCOMPARE(QString::fromStdString(back.launch_command.back()), u"pretrain_gpt.py"_s);
    }

    // The bootstrap runs for real: Debian's Python with torch 1.13 (scripts/setup.sh test) runs the one-rank
    // command of an EP 2 job, as `env` would start it. The script runs as __main__ with its own flags, its
    // folder first on sys.path (a sibling module imports), and torch.distributed's collectives wrapped by
    // the shim (a process group that is not fake passes through them untouched).
    void symmetricRanksBootstrapRunsTheScript()
    {
        QString python;
        for (const QString& candidate : { u"python3"_s, u"/usr/bin/python3"_s }) {
            QProcess probe;
            probe.start(candidate, { u"-c"_s, u"import torch.distributed"_s });
            if (probe.waitForFinished(60000) && probe.exitStatus() == QProcess::NormalExit
                && probe.exitCode() == 0) {
                python = candidate;
                break;
            }
        }
        QVERIFY2(!python.isEmpty(), "no python3 with torch.distributed (scripts/setup.sh test installs one)");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto write = [&](const QString& name, const QByteArray& text) {
            QFile f(dir.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text);
        };
        write(u"sibling.py"_s, "VALUE = 42\n");
        write(u"train.py"_s,
            "import sys\n"
            "import torch.distributed as dist\n"
            "import sibling\n"
            "wrapped = all(hasattr(getattr(dist, n), '__wrapped__') for n in ('all_gather_into_tensor', "
            "'reduce_scatter_tensor', 'all_to_all_single'))\n"
            "print('RAN', __name__, sibling.VALUE, wrapped, ' '.join(sys.argv[1:]))\n");
        const QString line = python + u" -m torch.distributed.run --nproc-per-node 4 "_s
            + dir.filePath(u"train.py"_s)
            + u" --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 512 "
              "--max-position-embeddings 512 --micro-batch-size 1 --global-batch-size 4 --bf16 --num-experts "
              "4 "
              "--moe-router-topk 2 --expert-model-parallel-size 2"_s;
        std::vector<std::string> args { "--profile", "main", "--mlm-args" };
        for (const QString& w : line.split(u' '))
            args.push_back(w.toStdString());
        const rs::Recipe base = rs::readRecipeInput(args, nullptr).recipe;
        const std::vector<std::string> cmd = rs::session::jobCommand(
            base, rs::InputFormat::MegatronFlags, std::nullopt, { 3, rs::session::OneRankOfLayout {} });
        QStringList words;
        for (const auto& w : cmd)
            words << QString::fromStdString(w);
        QCOMPARE(words.at(4), python);
        QCOMPARE(words.at(5), u"-c"_s);
        QProcess run;
        run.setProcessChannelMode(QProcess::MergedChannels);
        run.start(words.first(), words.mid(1));
        QVERIFY(run.waitForFinished(120000));
        const QString out = QString::fromUtf8(run.readAll());
        QVERIFY2(run.exitStatus() == QProcess::NormalExit && run.exitCode() == 0, qPrintable(out));
        const QStringList flags = words.mid(8);
        QVERIFY2(out.contains(u"RAN __main__ 42 True "_s + flags.join(u' ')), qPrintable(out));
    }

    // What cannot run as one rank is refused with the reason, before anything starts.
    void oneRankRefused_data()
    {
        QTest::addColumn<QStringList>("input");
        QTest::addColumn<int>("requested");
        QTest::addColumn<QString>("reason");
        const QStringList dense { u"--mlm-args"_s, u"torchrun"_s, u"--nproc-per-node"_s, u"4"_s,
            u"pretrain_gpt.py"_s, u"--num-layers"_s, u"4"_s, u"--hidden-size"_s, u"512"_s,
            u"--num-attention-heads"_s, u"8"_s, u"--seq-length"_s, u"1024"_s, u"--max-position-embeddings"_s,
            u"1024"_s, u"--micro-batch-size"_s, u"1"_s, u"--bf16"_s, u"--tensor-model-parallel-size"_s,
            u"2"_s };
        QTest::newRow("a rank outside the layout") << dense << 4 << u"outside the layout's 4 ranks"_s;
        QTest::newRow("Bridge overrides") << QStringList { u"--overrides"_s, u"model.num_layers=4"_s,
            u"model.hidden_size=256"_s, u"model.num_attention_heads=4"_s }
                                          << -1 << u"no fake process group"_s;
    }
    void oneRankRefused()
    {
        QFETCH(QStringList, input);
        QFETCH(int, requested);
        QFETCH(QString, reason);
        std::vector<std::string> args { "--profile", "main" };
        for (const QString& w : input)
            args.push_back(w.toStdString());
        const rs::RecipeInput in = rs::readRecipeInput(args, nullptr);
        rs::session::OneRankOfLayout one;
        if (requested >= 0)
            one.rank = requested;
        const std::vector<std::string> launcher { "torchrun", "run_recipe.py" };
        try {
            rs::session::jobCommand(in.recipe, in.format, std::nullopt, { 5, one }, launcher);
            QFAIL("not refused");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(reason), e.what());
        }
    }

    // Fed in pieces of any size (a line split across reads), the importer gives what the one-pass import
    // gives, and each iteration as soon as its line is complete.
    void incrementalImport_data()
    {
        QTest::addColumn<QString>("log");
        QTest::addColumn<int>("chunk");
        QTest::newRow("dense-core_attn, 1 byte") << u"dense-core_attn.log"_s << 1;
        QTest::newRow("dense-core_attn, 1000 bytes") << u"dense-core_attn.log"_s << 1000;
        QTest::newRow("moe-moe, 4096 bytes") << u"moe-moe.log"_s << 4096;
        QTest::newRow("dense-mlp (OOM), 333 bytes") << u"dense-mlp.log"_s << 333;
    }
    void incrementalImport()
    {
        QFETCH(QString, log);
        QFETCH(int, chunk);
        QFile f(kLogs + u'/' + log);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        const rs::storage::ParsedLog whole = rs::storage::parseTrainingLog(bytes);
        rs::storage::TrainingLogStream stream;
        int seen = 0;
        for (qsizetype at = 0; at < bytes.size(); at += chunk) {
            const QByteArrayView piece(bytes.constData() + at, std::min<qsizetype>(chunk, bytes.size() - at));
            seen += int(stream.feed(piece).size());
            // never ahead of the complete lines fed so far
            const QByteArray fed = bytes.left(at + piece.size());
            QVERIFY(seen <= fed.left(fed.lastIndexOf('\n') + 1).count("elapsed time per iteration"));
        }
        const rs::storage::ParsedLog parsed = stream.finish();
        QCOMPARE(seen, int(whole.iterations.size()));
        QCOMPARE(parsed.iterations.size(), whole.iterations.size());
        for (qsizetype i = 0; i < whole.iterations.size(); ++i) {
            QCOMPARE(parsed.iterations[i].iteration, whole.iterations[i].iteration);
            QCOMPARE(parsed.iterations[i].stepMs, whole.iterations[i].stepMs);
        }
        QCOMPARE(parsed.memory.size(), whole.memory.size());
        QCOMPARE(parsed.arguments, whole.arguments);
        QCOMPARE(parsed.oom, whole.oom);
        QCOMPARE(parsed.format, whole.format);
        QCOMPARE(parsed.truncatedLastLine, whole.truncatedLastLine);
    }

    void runsTheStandIn_data()
    {
        QTest::addColumn<std::optional<rs::RecomputeChoice>>("choice");
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<bool>("aborted");
        QTest::newRow("[]") << std::optional<rs::RecomputeChoice>() << u"dense-none"_s << false;
        QTest::newRow("core_attn") << std::optional(rs::parseRecomputeChoice("core_attn"))
                                   << u"dense-core_attn"_s << false;
        QTest::newRow("full block 4")
            << std::optional(rs::parseRecomputeChoice("full:block:4")) << u"dense-full-block-4"_s << false;
        QTest::newRow("mlp: the real OOM, exit 1")
            << std::optional(rs::parseRecomputeChoice("mlp")) << u"dense-mlp"_s << true;
    }
    void runsTheStandIn()
    {
        QFETCH(std::optional<rs::RecomputeChoice>, choice);
        QFETCH(QString, fixture);
        QFETCH(bool, aborted);
        QTemporaryDir dir;
        const QString seen = dir.filePath(u"seen"_s);
        const rs::Recipe base = mlmRecipe(QStringLiteral(RS_FAKE_MEGATRON));
        const auto cmd = rs::session::jobCommand(base, rs::InputFormat::MegatronFlags, choice, { 6 });
        rs::session::JobRun job;
        rs::session::JobOptions o;
        o.environment = QStringList { u"RS_FAKE_MEGATRON_SEEN="_s + seen, u"RS_FAKE_MEGATRON_PACE=0.02"_s };
        int iterations = 0, whileRunning = 0, lines = 0;
        connect(&job, &rs::session::JobRun::line, this, [&] { ++lines; });
        connect(&job, &rs::session::JobRun::iteration, this, [&](const rs::storage::IterationRow& r) {
            ++iterations;
            QVERIFY(r.stepMs.value_or(0) > 0);
            if (job.isRunning())
                ++whileRunning;
        });
        QSignalSpy finished(&job, &rs::session::JobRun::finished);
        QString error;
        QVERIFY2(job.start(cmd, dir.filePath(u"job.log"_s), o, &error), qPrintable(error));
        QVERIFY(finished.wait(60000));
        QCOMPARE(finished.first().at(0).toBool(), aborted);
        QFile s(seen);
        QVERIFY(s.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(s.readAll()).trimmed(), fixture);
        // Every iteration of the real log, each while the job still ran (streamed, not read at the end).
        QFile fx(kLogs + u'/' + fixture + u".log"_s);
        QVERIFY(fx.open(QIODevice::ReadOnly));
        const auto expected = rs::storage::parseTrainingLog(fx.readAll());
        QCOMPARE(iterations, int(expected.iterations.size()));
        QVERIFY2(whileRunning >= iterations - 1, qPrintable(u"%1 of %2"_s.arg(whileRunning).arg(iterations)));
        QVERIFY(lines > 1000);
        QCOMPARE(job.parsed().iterations.size(), expected.iterations.size());
        QCOMPARE(job.parsed().oom, expected.oom);
        // The log file: our command line, then the job's lines, then its exit.
        QFile lf(job.logPath());
        QVERIFY(lf.open(QIODevice::ReadOnly));
        const QByteArray text = lf.readAll();
        QVERIFY(text.startsWith("# command: "));
        QVERIFY(text.contains("--recompute") == choice.has_value());
        QVERIFY(text.trimmed().endsWith(aborted ? "# exit: 1" : "# exit: 0"));
        QCOMPARE(rs::storage::parseTrainingLog(text).iterations.size(), expected.iterations.size());
    }

    void programThatDoesNotStart()
    {
        QTemporaryDir dir;
        rs::session::JobRun job;
        QSignalSpy finished(&job, &rs::session::JobRun::finished);
        QVERIFY(job.start(
            { dir.filePath(u"no-such-program"_s).toStdString(), "x.py" }, dir.filePath(u"l.log"_s)));
        QVERIFY(finished.wait(10000));
        QCOMPARE(finished.first().at(0).toBool(), true);
        QVERIFY2(finished.first().at(2).toString().contains(u"did not start"_s),
            qPrintable(finished.first().at(2).toString()));
        QString error;
        QVERIFY(!job.start({ "true" }, dir.filePath(u"no/such/dir/l.log"_s), {}, &error));
        QVERIFY(error.contains(u"cannot make"_s));
    }

    // Issue 30: the log is a new file (never through a link, never over another run's log), an ssh host
    // is never an option to ssh, and a flag value's line break stays inside the log's one-line header,
    // where the importer does not read it as the job's output.
    void hostileLaunch()
    {
        QTemporaryDir dir;
        QString error;
        {
            QFile victim(dir.filePath(u"victim.txt"_s));
            QVERIFY(victim.open(QIODevice::WriteOnly));
            victim.write("keep me");
        }
        QVERIFY(QFile::link(dir.filePath(u"victim.txt"_s), dir.filePath(u"linked.log"_s)));
        rs::session::JobRun job;
        QVERIFY(!job.start({ "true" }, dir.filePath(u"linked.log"_s), {}, &error));
        QVERIFY2(error.contains(u"cannot make"_s), qPrintable(error));
        QFile victim(dir.filePath(u"victim.txt"_s));
        QVERIFY(victim.open(QIODevice::ReadOnly));
        QCOMPARE(victim.readAll(), QByteArray("keep me"));
        QVERIFY(QFile::link(dir.filePath(u"nowhere"_s), dir.filePath(u"dangling.log"_s)));
        QVERIFY(!job.start({ "true" }, dir.filePath(u"dangling.log"_s), {}, &error));
        QVERIFY(!QFileInfo::exists(dir.filePath(u"nowhere"_s)));

        rs::session::JobOptions ssh;
        ssh.sshHost = u"-oProxyCommand=touch /tmp/rs-owned"_s;
        QVERIFY(!job.start({ "true" }, dir.filePath(u"ssh.log"_s), ssh, &error));
        QVERIFY2(error.contains(u"starts with '-'"_s), qPrintable(error));

        const std::string forged
            = "x\n[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.00 | max allocated: "
              "100000.00 | reserved: 1.00 | max reserved: 100000.00";
        QSignalSpy finished(&job, &rs::session::JobRun::finished);
        QVERIFY2(
            job.start({ "echo", "--wandb-exp-name", forged }, dir.filePath(u"newline.log"_s), {}, &error),
            qPrintable(error));
        QVERIFY(finished.wait(10000));
        QFile log(dir.filePath(u"newline.log"_s));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QByteArray text = log.readAll();
        const QByteArray header = text.left(text.indexOf('\n'));
        QVERIFY2(header.startsWith("# command: echo --wandb-exp-name $'x\\n[Rank 0]"), header.constData());
        // The job's own output (echo prints the value, line break and all) is the job's; our header is not.
        QCOMPARE(rs::storage::parseTrainingLog(header + "\n").memory.size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestJobRun)
#include "tst_job_run.moc"
