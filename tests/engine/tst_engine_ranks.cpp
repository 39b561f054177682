// SPDX-License-Identifier: Apache-2.0
// Several ranks of one run, for real: two recompute-bench processes on this machine meet at a TCPStore and
// average their gradients over Gloo (c10d), as torchrun would start them. Rank 0's stream carries every
// rank's figures; a rank that dies ends the run instead of leaving the other blocked; a rendezvous that
// never completes ends with an error naming where it waited.
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "core/recipe_json.h"
#include "engine/distributed.h"
#include "engine/runner.h"
#include "engine_test_util.h"

using namespace rs;
using namespace rs::enginetest;
using nlohmann::json;

namespace {

std::vector<json> parseLines(const QByteArray& text)
{
    std::vector<json> lines;
    std::istringstream in(text.toStdString());
    std::string line;
    while (std::getline(in, line))
        if (!line.empty())
            lines.push_back(json::parse(line));
    return lines;
}

// A port nobody listens on right now: bind to port 0, read what the kernel chose, let it go.
int freePort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        return 29500 + static_cast<int>(::getpid() % 1000);
    const int port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

class Rank : public QProcess {
public:
    Rank(int rank, int world, int port, const QStringList& args, int rendezvous_timeout_s = 60)
    {
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("RANK"), QString::number(rank));
        env.insert(QStringLiteral("LOCAL_RANK"), QString::number(rank));
        env.insert(QStringLiteral("WORLD_SIZE"), QString::number(world));
        env.insert(QStringLiteral("MASTER_ADDR"), QStringLiteral("127.0.0.1"));
        env.insert(QStringLiteral("MASTER_PORT"), QString::number(port));
        env.insert(QStringLiteral("RS_RENDEZVOUS_TIMEOUT_S"), QString::number(rendezvous_timeout_s));
        setProcessEnvironment(env);
        start(QStringLiteral(RS_BINARY_DIR "/app/bench/recompute-bench"), args);
    }
};

std::vector<json> events(const std::vector<json>& lines, const std::string& name)
{
    std::vector<json> out;
    for (const auto& j : lines)
        if (j.at("event") == name)
            out.push_back(j);
    return out;
}

} // namespace

class TestEngineRanks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void twoRanksAverageTheirGradients();
    void twoRanksShardTheDistributedOptimizer();
    void aRankThatDiesEndsTheRun();
    void anIncompleteRendezvousNamesWhereItWaited();

private:
    QTemporaryDir dir_;
    QString recipe_;
};

void TestEngineRanks::initTestCase()
{
    if (engine::collectiveBackends().empty()
        || std::find(engine::collectiveBackends().begin(), engine::collectiveBackends().end(), "gloo")
            == engine::collectiveBackends().end())
        QSKIP("this worker was built without Gloo (libgloo-dev): several ranks on CPU are refused");
    QVERIFY(dir_.isValid());
    recipe_ = dir_.filePath(QStringLiteral("tiny.json"));
    QFile f(recipe_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(
        recipeToJson(selective(tinyRecipe(Arch::DenseUnfused), { "core_attn" })).dump()));
}

void TestEngineRanks::twoRanksAverageTheirGradients()
{
    const QStringList args { recipe_, QStringLiteral("--warmup"), QStringLiteral("1"),
        QStringLiteral("--iters"), QStringLiteral("2") };
    const int port = freePort();
    Rank one(1, 2, port, args);
    Rank zero(0, 2, port, args);
    QVERIFY(zero.waitForFinished(120000));
    QVERIFY(one.waitForFinished(120000));
    QCOMPARE(zero.exitCode(), int(engine::kPass));
    QCOMPARE(one.exitCode(), int(engine::kPass));
    QVERIFY2(one.readAllStandardOutput().isEmpty(), "only rank 0 writes the stream");

    const auto lines = parseLines(zero.readAllStandardOutput());
    QCOMPARE(lines.front().at("world_size").get<int>(), 2);
    const auto iterations = events(lines, "iteration");
    QCOMPARE(iterations.size(), size_t(6)); // 3 steps x 2 ranks, in rank order within a step
    for (size_t i = 0; i < iterations.size(); ++i) {
        QCOMPARE(iterations[i].at("rank").get<int>(), int(i % 2));
        QCOMPARE(iterations[i].at("iteration").get<int>(), int(i / 2 + 1));
        QVERIFY(iterations[i].at("grad_reduce_ms").get<double>() > 0);
        QVERIFY(iterations[i].at("optimizer_peak_allocated").get<int64_t>() > 0);
    }
    // Each replica trains on its own micro-batch...
    QVERIFY(iterations[0].at("loss").get<double>() != iterations[1].at("loss").get<double>());
    // ...the same memory for the same shapes...
    QCOMPARE(iterations[4].at("allocated_after").get<int64_t>(),
        iterations[5].at("allocated_after").get<int64_t>());
    // ...and after averaged steps both hold the same parameters.
    const json result = lines.back();
    QCOMPARE(result.at("status").get<std::string>(), std::string("pass"));
    QCOMPARE(result.at("world_size").get<int>(), 2);
    QCOMPARE(result.at("collective_backend").get<std::string>(), std::string("gloo"));
    QVERIFY(result.at("dp_replicas_identical").get<bool>());
    QCOMPARE(events(lines, "rank_summary").size(), size_t(2));

    // The averaged gradient is not rank 0's own: alone, rank 0's second step starts from another place.
    QProcess alone;
    alone.start(QStringLiteral(RS_BINARY_DIR "/app/bench/recompute-bench"), args);
    QVERIFY(alone.waitForFinished(120000));
    const auto alone_iterations = events(parseLines(alone.readAllStandardOutput()), "iteration");
    QCOMPARE(alone_iterations.size(), size_t(3));
    QCOMPARE(alone_iterations[0].at("loss").get<double>(), iterations[0].at("loss").get<double>());
    QVERIFY(alone_iterations[1].at("loss").get<double>() != iterations[2].at("loss").get<double>());
}

void TestEngineRanks::twoRanksShardTheDistributedOptimizer()
{
    // Two micro-batches a step on each of two ranks; each rank updates its half of the buffer and the
    // shards are exchanged: the same training as without the distributed optimizer, half the state.
    const auto runPair = [this](bool distributed, std::vector<json>* lines) {
        Recipe r = selective(tinyRecipe(Arch::DenseUnfused), { "core_attn" });
        r.global_batch_size = 2 * 2 * r.micro_batch_size;
        r.use_distributed_optimizer = distributed;
        const QString path
            = dir_.filePath(distributed ? QStringLiteral("dist.json") : QStringLiteral("ddp.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(recipeToJson(r).dump()));
        f.close();
        const QStringList args { path, QStringLiteral("--warmup"), QStringLiteral("1"),
            QStringLiteral("--iters"), QStringLiteral("2") };
        const int port = freePort();
        Rank one(1, 2, port, args);
        Rank zero(0, 2, port, args);
        QVERIFY(zero.waitForFinished(120000));
        QVERIFY(one.waitForFinished(120000));
        QCOMPARE(zero.exitCode(), int(engine::kPass));
        QCOMPARE(one.exitCode(), int(engine::kPass));
        *lines = parseLines(zero.readAllStandardOutput());
    };
    std::vector<json> ddp, dist;
    runPair(false, &ddp);
    runPair(true, &dist);
    QVERIFY(!ddp.empty() && !dist.empty());
    const auto layout = events(dist, "memory_layout").at(0);
    QCOMPARE(layout.at("micro_batches").get<int>(), 2);
    QCOMPARE(layout.at("data_parallel_size").get<int>(), 2);
    QVERIFY(layout.at("distributed_optimizer").get<bool>());
    // fp32 buffer: 4 bytes an element, two shards.
    QCOMPARE(
        layout.at("shard_elements").get<int64_t>() * 2 * 4, layout.at("grad_buffer_bytes").get<int64_t>());
    QVERIFY(dist.back().at("dp_replicas_identical").get<bool>());
    const auto a = events(ddp, "iteration"), b = events(dist, "iteration");
    QCOMPARE(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        QVERIFY(std::abs(b[i].at("loss").get<double>() - a[i].at("loss").get<double>())
            <= 1e-5 * std::abs(a[i].at("loss").get<double>()));
}

void TestEngineRanks::aRankThatDiesEndsTheRun()
{
    const QStringList args { recipe_, QStringLiteral("--warmup"), QStringLiteral("1"),
        QStringLiteral("--iters"), QStringLiteral("400") };
    const int port = freePort();
    Rank one(1, 2, port, args);
    Rank zero(0, 2, port, args);
    // Let the run get going, then kill rank 1 the hard way: it can report nothing.
    QByteArray seen;
    QElapsedTimer t;
    t.start();
    while (!seen.contains("\"event\":\"iteration\"") && t.elapsed() < 120000) {
        zero.waitForReadyRead(1000);
        seen += zero.readAllStandardOutput();
    }
    QVERIFY2(seen.contains("\"event\":\"iteration\""), "the two ranks never ran a step");
    one.kill();
    QVERIFY(one.waitForFinished(10000));
    QVERIFY2(zero.waitForFinished(120000), "rank 0 stayed blocked after its peer died");
    seen += zero.readAllStandardOutput();
    // Rank 0 ends by itself, having written its result, however its peer's death reached it (a read that
    // fails, or a write to the dead socket: SIGPIPE once killed it here before the result was out).
    const QByteArray diagnostics = "exit status " + QByteArray::number(int(zero.exitStatus())) + ", code "
        + QByteArray::number(zero.exitCode()) + "; last output: " + seen.right(300)
        + "; stderr: " + zero.readAllStandardError().right(300);
    QVERIFY2(zero.exitStatus() == QProcess::NormalExit, diagnostics.constData());
    const auto lines = parseLines(seen);
    QVERIFY2(!lines.empty(), diagnostics.constData());
    QVERIFY2(lines.back().at("event").get<std::string>() == "result", diagnostics.constData());
    QCOMPARE(lines.back().at("status").get<std::string>(), std::string("error"));
    QVERIFY(!lines.back().at("stage").is_null());
    QCOMPARE(zero.exitCode(), int(engine::kError));
}

void TestEngineRanks::anIncompleteRendezvousNamesWhereItWaited()
{
    const int port = freePort();
    Rank zero(0, 2, port, { recipe_, QStringLiteral("--iters"), QStringLiteral("1") }, 2);
    QVERIFY(zero.waitForFinished(60000));
    QCOMPARE(zero.exitCode(), int(engine::kError));
    const auto lines = parseLines(zero.readAllStandardOutput());
    const json result = lines.back();
    QCOMPARE(result.at("status").get<std::string>(), std::string("error"));
    QCOMPARE(result.at("stage").get<std::string>(), std::string("build"));
    const std::string message = result.at("message").get<std::string>();
    QVERIFY2(message.find("MASTER_ADDR:MASTER_PORT = 127.0.0.1:" + std::to_string(port)) != std::string::npos,
        message.c_str());
}

QTEST_GUILESS_MAIN(TestEngineRanks)
#include "tst_engine_ranks.moc"
