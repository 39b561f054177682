// SPDX-License-Identifier: Apache-2.0
// The stream's event types (core/stream.h): every event reads back what it writes, unknown keys survive
// a round trip, null is absent, and a key of the wrong type is an error that names the event and the key;
// decodeLine, the launcher's reader, gives the typed Event of a line or says why the line is none.
#include <algorithm>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "core/stream.h"

using namespace rs;
using nlohmann::json;

Q_DECLARE_METATYPE(std::string)

namespace {
json roundTrip(const json& j)
{
    switch (stream::eventKind(j)) {
    case stream::EventKind::Hello:
        return stream::Hello::fromJson(j).toJson();
    case stream::EventKind::Recipe:
        return stream::RecipeEvent::fromJson(j).toJson();
    case stream::EventKind::Note:
        return stream::Note::fromJson(j).toJson();
    case stream::EventKind::Phase:
        return stream::Phase::fromJson(j).toJson();
    case stream::EventKind::MemoryLayout:
        return stream::MemoryLayout::fromJson(j).toJson();
    case stream::EventKind::Iteration:
        return stream::Iteration::fromJson(j).toJson();
    case stream::EventKind::PeakAttribution:
        return stream::PeakAttribution::fromJson(j).toJson();
    case stream::EventKind::RankSummary:
        return stream::RankSummary::fromJson(j).toJson();
    case stream::EventKind::Result:
        return stream::Result::fromJson(j).toJson();
    case stream::EventKind::Unknown:
        break;
    }
    return json();
}
} // namespace

class TestStream : public QObject {
    Q_OBJECT
private slots:
    void roundTrips_data()
    {
        QTest::addColumn<std::string>("line");
        QTest::newRow("hello") << std::string(
            R"({"event":"hello","worker_version":"0.1.0","libtorch_version":"1.13.1","cuda_version":null,)"
            R"("nccl_version":null,"device":"cpu","device_kind":"cpu","host":"dev1","pid":4242,"rank":0,)"
            R"("world_size":1,"local_rank":0,"profile":"bridge-pin","stream_version":1,"cpu_threads":2})");
        QTest::newRow("recipe") << std::string(
            R"({"event":"recipe","recipe":{"num_layers":2},"recipe_hash":"9f2c","findings":[],"stage_scope":"all layers"})");
        QTest::newRow("note") << std::string(
            R"({"event":"note","kind":"ignored_flags","flags":["--data-path"],"message":"not modelled"})");
        QTest::newRow("phase") << std::string(R"({"event":"phase","phase":"build","rank":0})");
        QTest::newRow("memory_layout") << std::string(
            R"({"event":"memory_layout","rank":0,"micro_batches":4,"data_parallel_size":1,"distributed_optimizer":false,)"
            R"("grad_buffer_dtype":"fp32","grad_buffer_bytes":4096,"parameters":12,"parameter_bytes":2048,)"
            R"("main_parameter_bytes":4096,"shard_elements":1024,"padded_vocab_size":128,"tied_embeddings":true,)"
            R"("one_pass_optimizer":false})");
        QTest::newRow("memory_layout, a rank with experts") << std::string(
            R"({"event":"memory_layout","rank":0,"micro_batches":4,"data_parallel_size":8,"distributed_optimizer":true,)"
            R"("grad_buffer_dtype":"fp32","grad_buffer_bytes":4096,"parameters":12,"parameter_bytes":2048,)"
            R"("main_parameter_bytes":4096,"shard_elements":128,"padded_vocab_size":128,"tied_embeddings":false,)"
            R"("one_pass_optimizer":false,"expert_data_parallel_size":1})");
        QTest::newRow("iteration, one rank") << std::string(
            R"({"event":"iteration","rank":0,"iteration":3,"phase":"steady","step_ms":12.5,"forward_ms":4.0,)"
            R"("backward_ms":7.0,"optimizer_ms":1.0,"loss":10.4,"loss_finite":true,"forward_peak_allocated":100,)"
            R"("forward_peak_reserved":200,"backward_peak_allocated":150,"backward_peak_reserved":200,)"
            R"("optimizer_peak_allocated":120,"optimizer_peak_reserved":200,"allocated_after":90,"reserved_after":200,)"
            R"("alloc_retries":0,"optimizer_init":false,"forward_allocated_after":95})");
        QTest::newRow("iteration, several ranks, a key of a newer worker") << std::string(
            R"({"event":"iteration","rank":1,"iteration":1,"phase":"warmup","step_ms":12.5,"forward_ms":4.0,)"
            R"("backward_ms":7.0,"optimizer_ms":1.0,"grad_reduce_ms":0.5,"loss":null,"loss_finite":false,)"
            R"("forward_peak_allocated":100,"forward_peak_reserved":200,"backward_peak_allocated":150,)"
            R"("backward_peak_reserved":200,"optimizer_peak_allocated":120,"optimizer_peak_reserved":200,)"
            R"("allocated_after":90,"reserved_after":200,"alloc_retries":0,"optimizer_init":true,)"
            R"("forward_allocated_after":95,"newer_key":[1,2]})");
        QTest::newRow("peak_attribution") << std::string(
            R"({"event":"peak_attribution","rank":0,"phase":"backward","iteration":2,"peak_allocated":1000,)"
            R"("attributed":1000,"categories":{"activations":600,"parameters":400},)"
            R"("activations":[{"layer":0,"region":"core_attn","bytes":500},{"layer":null,"region":"embedding","bytes":100}]})");
        QTest::newRow("rank_summary") << std::string(
            R"({"event":"rank_summary","rank":0,"peak_allocated":1000,"peak_reserved":2000,"peak_phase":"backward",)"
            R"("peak_iteration":2,"steady_step_ms":12.5,"steady_step_ms_median":12.0,)"
            R"("phase_peaks":{"backward":{"allocated":1000,"reserved":2000},"forward":{"allocated":900,"reserved":2000}}})");
        QTest::newRow("rank_summary with the steady step's spread") << std::string(
            R"({"event":"rank_summary","rank":0,"peak_allocated":1000,"peak_reserved":2000,"peak_phase":"backward",)"
            R"("peak_iteration":2,"steady_step_ms":12.5,"steady_step_ms_median":12.0,"phase_peaks":{},)"
            R"("steady_step_ms_p2_5":11.0,"steady_step_ms_p97_5":14.0,"steady_step_ms_median_ci95":[11.5,12.5],)"
            R"("steady_iterations":20})");
        QTest::newRow("note, one rank of a layout") << std::string(
            R"({"event":"note","kind":"layout_rank","flags":[],"message":"rank 4 of 8","rank_of_layout":4,)"
            R"("layout_world_size":8,"stage":1,"in_flight_micro_batches":3})");
        QTest::newRow("result, pass, one rank of a layout") << std::string(
            R"({"event":"result","status":"pass","stage":null,"iteration":null,"message":"","steady_step_ms":12.5,)"
            R"("tokens_per_s":100.0,"model_tflops":1.5,"executed_tflops":2.0,"model_flops_per_step":1e12,)"
            R"("executed_flops_per_step":2e12,"steady_step_ms_median":12.0,"steady_step_ms_p2_5":11.0,)"
            R"("steady_step_ms_p97_5":14.0,"steady_step_ms_median_ci95":[11.5,12.5],"rank_of_layout":4,)"
            R"("layout_world_size":8})");
        QTest::newRow("result, pass") << std::string(
            R"({"event":"result","status":"pass","stage":null,"iteration":null,"message":"","steady_step_ms":12.5,)"
            R"("tokens_per_s":100.0,"model_tflops":1.5,"executed_tflops":2.0,"model_flops_per_step":1e12,)"
            R"("executed_flops_per_step":2e12,"replay_flops_per_step":0.0})");
        QTest::newRow("result, a rank failed") << std::string(
            R"({"event":"result","status":"oom","stage":"backward","iteration":3,"message":"rank 1: out of memory",)"
            R"("steady_step_ms":null,"tokens_per_s":null,"model_tflops":null,"executed_tflops":null,)"
            R"("model_flops_per_step":null,"executed_flops_per_step":null,"rank":1,"world_size":2})");
    }
    void roundTrips()
    {
        QFETCH(std::string, line);
        const json in = json::parse(line);
        QVERIFY(stream::eventKind(in) != stream::EventKind::Unknown);
        QCOMPARE(QString::fromStdString(roundTrip(in).dump()), QString::fromStdString(in.dump()));
        // The same through the typed Event a line decodes to.
        const stream::Event e = stream::decodeLine(line);
        QCOMPARE(stream::kindOf(e), stream::eventKind(in));
        QCOMPARE(QString::fromStdString(stream::toJson(e).dump()), QString::fromStdString(in.dump()));
    }

    // The iteration's key list (forEachIterationField) is what toJson writes: every key once, in its
    // order, grad_reduce_ms only when set.
    void iterationKeysAreTheFieldList()
    {
        std::vector<std::string> listed;
        const stream::Iteration probe;
        stream::forEachIterationField(probe, [&](const char* key, const auto&) { listed.emplace_back(key); });
        stream::Iteration it;
        it.grad_reduce_ms = 1.0;
        std::vector<std::string> written;
        const json j = it.toJson();
        for (const auto& [key, value] : j.items())
            if (key != "event")
                written.push_back(key);
        std::vector<std::string> sorted = listed;
        std::sort(sorted.begin(), sorted.end());
        QVERIFY(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()); // no key twice
        QVERIFY(sorted == written); // nlohmann writes keys sorted
        QVERIFY(!stream::Iteration().toJson().contains("grad_reduce_ms"));
    }

    void unknownEventIsKeptAsItCame()
    {
        const std::string line = R"({"event":"progress","done":0.5,"nested":{"a":[1,2]}})";
        const stream::Event e = stream::decodeLine(line);
        QCOMPARE(stream::kindOf(e), stream::EventKind::Unknown);
        QCOMPARE(std::get<stream::UnknownEvent>(e).event, std::string("progress"));
        QCOMPARE(stream::toJson(e).dump(), json::parse(line).dump());
    }

    // What is no event at all: a StreamError with no event and no key, saying why.
    void decodeLineRefusesWhatIsNoEvent_data()
    {
        QTest::addColumn<std::string>("line");
        QTest::addColumn<QString>("message");
        QTest::newRow("text") << std::string("warning: a stray print")
                              << QStringLiteral("not JSON (byte 1: ");
        QTest::newRow("truncated") << std::string("{\"event\":\"iteration\",\"ra")
                                   << QStringLiteral("not JSON (byte ");
        QTest::newRow("number overflow") << std::string(R"({"event":"iteration","step_ms":1e999})")
                                         << QStringLiteral("not JSON (number overflow parsing '1e999')");
        QTest::newRow("not UTF-8") << std::string("{\"event\":\"note\",\"message\":\"caf\xe9\"}")
                                   << QStringLiteral("not JSON (byte ");
        QTest::newRow("array") << std::string("[1,2]") << QStringLiteral("not a JSON object");
        QTest::newRow("no event") << std::string(R"({"rank":0})")
                                  << QStringLiteral("no string \"event\" key");
        QTest::newRow("event a number")
            << std::string(R"({"event":3})") << QStringLiteral("no string \"event\" key");
        QTest::newRow("nested too deep")
            << std::string(R"({"event":"note","x":)") + std::string(300, '[') + std::string(300, ']') + "}"
            << QStringLiteral("nested deeper than 256 levels");
    }
    void decodeLineRefusesWhatIsNoEvent()
    {
        QFETCH(std::string, line);
        QFETCH(QString, message);
        try {
            stream::decodeLine(line);
            QFAIL("no error");
        } catch (const stream::StreamError& e) {
            QVERIFY2(QString::fromStdString(e.what()).startsWith(message), e.what());
            QVERIFY(e.event().empty());
            QVERIFY(e.key().empty());
        }
    }

    void nestingUpToTheLimitReads()
    {
        // 256 levels, brackets inside strings not counted
        const std::string line = std::string("{\"event\":\"note\",\"s\":\"[[[[\",\"x\":")
            + std::string(255, '[') + std::string(255, ']') + "}";
        const stream::Event e = stream::decodeLine(line);
        QCOMPARE(stream::kindOf(e), stream::EventKind::Note);
    }

    void absentAndNullAreDefaults()
    {
        const auto it
            = stream::Iteration::fromJson(json::parse(R"({"event":"iteration","rank":null,"iteration":2})"));
        QCOMPARE(it.rank, 0);
        QCOMPARE(it.iteration, 2);
        QVERIFY(!it.step_ms);
        QVERIFY(!it.forward_peak_allocated);
        // Integral numbers written as doubles (QJsonDocument) read as integers.
        const auto s = stream::RankSummary::fromJson(
            json::parse(R"({"event":"rank_summary","peak_allocated":4096.0})"));
        QCOMPARE(*s.peak_allocated, int64_t(4096));
    }

    void spreadAndLayoutRankAreTyped()
    {
        const auto s = stream::RankSummary::fromJson(json::parse(
            R"({"event":"rank_summary","steady_step_ms_p2_5":11.0,"steady_step_ms_median_ci95":[11.5,12.5],)"
            R"("steady_iterations":20})"));
        QCOMPARE(*s.spread.p2_5, 11.0);
        QVERIFY(!s.spread.p97_5);
        QCOMPARE(s.spread.median_ci95->second, 12.5);
        QCOMPARE(*s.spread.iterations, 20);
        QVERIFY(s.extra.empty());
        const auto n = stream::Note::fromJson(json::parse(
            R"({"event":"note","kind":"layout_rank","rank_of_layout":3,"in_flight_micro_batches":2})"));
        QCOMPARE(*n.rank_of_layout, 3);
        QCOMPARE(*n.in_flight_micro_batches, 2);
        QVERIFY(!n.stage);
        QVERIFY(n.extra.empty());
        // Not set: not written (a one-rank run's result has no layout keys).
        const json r = stream::Result().toJson();
        QVERIFY(!r.contains("rank_of_layout"));
        QVERIFY(!r.contains("steady_step_ms_p2_5"));
    }

    void eventNames()
    {
        for (auto kind : { stream::EventKind::Hello, stream::EventKind::Recipe, stream::EventKind::Note,
                 stream::EventKind::Phase, stream::EventKind::MemoryLayout, stream::EventKind::Iteration,
                 stream::EventKind::PeakAttribution, stream::EventKind::RankSummary,
                 stream::EventKind::Result })
            QCOMPARE(stream::eventKindFromName(stream::eventName(kind)), kind);
        QCOMPARE(stream::eventKindFromName("progress"), stream::EventKind::Unknown);
        QCOMPARE(stream::eventKind(json::parse(R"({"no_event":1})")), stream::EventKind::Unknown);
        QCOMPARE(stream::Hello().toJson().at("stream_version").get<int>(), stream::kStreamVersion);
    }

    void malformedNamesEventAndKey_data()
    {
        QTest::addColumn<std::string>("line");
        QTest::addColumn<QString>("message");
        QTest::newRow("bytes as text")
            << std::string(R"({"event":"iteration","rank":0,"forward_peak_allocated":"lots"})")
            << QStringLiteral(
                   R"(iteration event: 'forward_peak_allocated': expected an integer (bytes or a count), got "lots")");
        QTest::newRow("fractional rank")
            << std::string(R"({"event":"phase","phase":"build","rank":0.5})")
            << QStringLiteral("phase event: 'rank': expected an integer, got 0.5");
        QTest::newRow("status a number")
            << std::string(R"({"event":"result","status":3})")
            << QStringLiteral("result event: 'status': expected a string, got 3");
        QTest::newRow("bool as number")
            << std::string(R"({"event":"iteration","optimizer_init":1})")
            << QStringLiteral("iteration event: 'optimizer_init': expected true or false, got 1");
        QTest::newRow("category as text")
            << std::string(R"({"event":"peak_attribution","categories":{"parameters":"x"}})")
            << QStringLiteral(
                   R"(peak_attribution event: 'categories.parameters': expected an integer (bytes or a count), got "x")");
        QTest::newRow("activation region")
            << std::string(R"({"event":"peak_attribution","activations":[{"region":7}]})")
            << QStringLiteral("peak_attribution event: 'activations[0].region': expected a string, got 7");
        QTest::newRow("phase peaks") << std::string(R"({"event":"rank_summary","phase_peaks":{"forward":3}})")
                                     << QStringLiteral("rank_summary event: 'phase_peaks.forward': expected "
                                                       "an object {allocated, reserved}, got 3");
        QTest::newRow("recipe not an object")
            << std::string(R"({"event":"recipe","recipe":[1]})")
            << QStringLiteral("recipe event: 'recipe': expected an object (the resolved recipe), got [1]");
        QTest::newRow("flags")
            << std::string(R"({"event":"note","flags":"--data-path"})")
            << QStringLiteral(R"(note event: 'flags': expected an array of strings, got "--data-path")");
        QTest::newRow("median interval not a pair")
            << std::string(R"({"event":"rank_summary","steady_step_ms_median_ci95":[1]})")
            << QStringLiteral(
                   "rank_summary event: 'steady_step_ms_median_ci95': expected an array of two numbers "
                   "[low, high], got [1]");
        QTest::newRow("grad reduce")
            << std::string(R"({"event":"iteration","grad_reduce_ms":"x"})")
            << QStringLiteral(R"(iteration event: 'grad_reduce_ms': expected a number, got "x")");
    }
    void malformedNamesEventAndKey()
    {
        QFETCH(std::string, line);
        QFETCH(QString, message);
        try {
            stream::decodeEvent(json::parse(line));
            QFAIL("no error");
        } catch (const stream::StreamError& e) {
            QCOMPARE(QString::fromStdString(e.what()), message);
            QVERIFY(!e.event().empty());
        }
        // The launcher's reader says the same.
        try {
            stream::decodeLine(line);
            QFAIL("no error from decodeLine");
        } catch (const stream::StreamError& e) {
            QCOMPARE(QString::fromStdString(e.what()), message);
        }
    }
};

QTEST_APPLESS_MAIN(TestStream)
#include "tst_stream.moc"
