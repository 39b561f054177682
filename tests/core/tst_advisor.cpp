// SPDX-License-Identifier: Apache-2.0
// The advisor's choice on the guide's own tables (Moonlight 16B, Nemotron 3 Nano) and on the edge cases
// of the rule "the smallest measured replay cost that satisfies the per-rank memory target": failed runs,
// unmatched runs, per-rank peaks, ties, missing measurements, the exact boundary.
#include <cmath>
#include <stdexcept>

#include <QtTest>

#include "core/advisor.h"

using namespace Qt::StringLiterals;
using Candidates = std::vector<rs::AdviceCandidate>;
Q_DECLARE_METATYPE(Candidates)

namespace {

// A candidate from the guide's units: GB (1e9 bytes) and ms. peaks: {rank, GB} pairs.
rs::AdviceCandidate cand(const std::string& label, const std::string& outcome,
    std::vector<std::pair<int, double>> peaks, std::optional<double> ms, bool control = false)
{
    rs::AdviceCandidate c;
    c.label = label;
    c.outcome = outcome;
    for (const auto& [rank, gb] : peaks)
        c.rank_peaks.push_back({ rank, std::int64_t(std::llround(gb * 1e9)) });
    c.steady_step_ms = ms;
    c.is_control = control;
    return c;
}

rs::AdviceCandidate failed(const std::string& label, const std::string& stage, std::optional<int> iteration,
    std::vector<std::pair<int, double>> peaks, bool control = false)
{
    rs::AdviceCandidate c = cand(label, "oom", std::move(peaks), std::nullopt, control);
    c.failure_stage = stage;
    c.failure_iteration = iteration;
    return c;
}

// Moonlight 16B, the guide's matched H100 table (peak = max over ranks after iteration 2).
Candidates moonlight()
{
    return { cand("[]", "pass", { { -1, 36.618 } }, 457.18, true),
        cand("core_attn", "pass", { { -1, 36.614 } }, 474.80),
        cand("mla_up_proj", "pass", { { -1, 35.902 } }, 480.89),
        cand("mla_up_proj, mlp", "pass", { { -1, 35.917 } }, 496.73),
        cand("moe_act", "pass", { { -1, 35.941 } }, 466.26),
        cand("layernorm, moe_act", "pass", { { -1, 35.949 } }, 506.53) };
}

// Nemotron 3 Nano, the guide's table (rank-0 peaks; four OOM rows).
Candidates nemotron()
{
    Candidates c { failed("[]", "forward", 2, { { 0, 66.297 } }, true), failed("core_attn", "", 1, {}),
        failed("moe_act", "", 2, { { 0, 62.103 } }), failed("layernorm, moe_act", "", 1, {}),
        cand("moe", "pass", { { 0, 64.653 } }, 657.42),
        cand("moe, layernorm", "pass", { { 0, 63.639 } }, 677.62) };
    for (auto& x : c)
        x.ranks_expected = 16;
    return c;
}

} // namespace

class TestAdvisor : public QObject {
    Q_OBJECT
private slots:
    void choice_data();
    void choice();
    void rankCoverageNote();
    void badTarget();
};

void TestAdvisor::choice_data()
{
    QTest::addColumn<Candidates>("candidates");
    QTest::addColumn<double>("target");
    QTest::addColumn<QString>("chosen"); // label; "" when nothing fits
    QTest::addColumn<QString>("closest"); // label when nothing fits
    QTest::addColumn<QStringList>("verdicts"); // verdictName of each candidate, in order
    QTest::addColumn<QStringList>("reasons"); // "INDEX:substring" that candidate's reasons contain
    QTest::addColumn<QString>("summary"); // substring of the summary

    QTest::newRow("guide Moonlight 36 GB: moe_act, mla_up_proj fits but is slower")
        << moonlight() << 36.0 << u"moe_act"_s << QString()
        << QStringList { u"over-target"_s, u"over-target"_s, u"slower"_s, u"slower"_s, u"chosen"_s,
               u"slower"_s }
        << QStringList { u"0:over the 36.000 GB target on max over ranks by 0.618 GB (36.618 GB)"_s,
               u"1:by 0.614 GB"_s, u"2:fits (35.902 GB on max over ranks, 0.098 GB under the target)"_s,
               u"2:slower than moe_act by 3.14% (480.89 vs 466.26 ms)"_s, u"3:slower than moe_act by 6.53%"_s,
               u"4:466.26 ms, the lowest steady step time of 4 that fit"_s,
               u"5:slower than moe_act by 8.64%"_s }
        << u"use moe_act: 35.941 GB on max over ranks fits the 36.000 GB target at 466.26 ms"_s;
    QTest::newRow("Moonlight 35.91 GB: only mla_up_proj fits")
        << moonlight() << 35.91 << u"mla_up_proj"_s << QString()
        << QStringList { u"over-target"_s, u"over-target"_s, u"chosen"_s, u"over-target"_s, u"over-target"_s,
               u"over-target"_s }
        << QStringList { u"3:by 0.007 GB"_s, u"4:by 0.031 GB (35.941 GB)"_s } << u"use mla_up_proj"_s;
    QTest::newRow("Moonlight 37 GB: the [] control fits and is the cheapest (no recompute)")
        << moonlight() << 37.0 << u"[]"_s << QString()
        << QStringList { u"chosen"_s, u"slower"_s, u"slower"_s, u"slower"_s, u"slower"_s, u"slower"_s }
        << QStringList { u"4:slower than [] by 1.99%"_s, u"1:slower than [] by 3.85%"_s } << u"use []"_s;
    QTest::newRow("Moonlight 35 GB: nothing fits, mla_up_proj closest")
        << moonlight() << 35.0 << QString() << u"mla_up_proj"_s
        << QStringList { u"over-target"_s, u"over-target"_s, u"over-target"_s, u"over-target"_s,
               u"over-target"_s, u"over-target"_s }
        << QStringList { u"2:by 0.902 GB"_s }
        << u"nothing fits the 35.000 GB target; closest: mla_up_proj (35.902 GB on max over ranks, 0.902 GB over)"_s;
    QTest::newRow("guide Nemotron 65 GB: moe; OOM rows are not passes")
        << nemotron() << 65.0 << u"moe"_s << QString()
        << QStringList { u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"chosen"_s,
               u"slower"_s }
        << QStringList { u"0:did not pass: oom in forward at iteration 2"_s,
               u"0:over the 65.000 GB target on rank 0 by 1.297 GB"_s,
               u"1:did not pass: oom at iteration 1"_s,
               u"2:did not pass: oom at iteration 2; its 62.103 GB on rank 0 before it stopped is under the target but is not the peak of a completed step"_s,
               u"5:slower than moe by 3.07%"_s }
        << u"use moe: 64.653 GB on rank 0"_s;
    QTest::newRow("guide Nemotron 64 GB: moe, layernorm")
        << nemotron() << 64.0 << u"moe, layernorm"_s << QString()
        << QStringList { u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"over-target"_s,
               u"chosen"_s }
        << QStringList { u"4:over the 64.000 GB target on rank 0 by 0.653 GB"_s,
               u"2:did not pass: oom at iteration 2"_s }
        << u"use moe, layernorm: 63.639 GB on rank 0"_s;
    QTest::newRow("Nemotron 63 GB: nothing fits; the closest passing run, not the lower peak of an OOM")
        << nemotron() << 63.0 << QString() << u"moe, layernorm"_s
        << QStringList { u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"not-passed"_s, u"over-target"_s,
               u"over-target"_s }
        << QStringList { u"2:its 62.103 GB on rank 0 before it stopped is under the target"_s }
        << u"closest: moe, layernorm (63.639 GB on rank 0, 0.639 GB over)"_s;
    {
        // A candidate that gets farther than the failing control but still OOMs is not a pass.
        Candidates c { failed("[]", "forward", 1, { { 0, 70.0 } }, true),
            failed("moe_act", "optimizer-init", 1, { { 0, 60.0 } }),
            failed("layernorm", "backward", 2, { { 0, 61.0 } }) };
        QTest::newRow("gets farther but still OOMs")
            << c << 65.0 << QString() << u"moe_act"_s
            << QStringList { u"not-passed"_s, u"not-passed"_s, u"not-passed"_s }
            << QStringList { u"1:gets farther than the [] control, which failed oom in forward at iteration 1"_s,
                   u"2:gets farther than the [] control"_s }
            << u"closest: moe_act (60.000 GB on rank 0, oom in optimizer-init at iteration 1)"_s;
    }
    {
        // The fastest fitting run differs in seq_length: never compared, whatever its numbers.
        Candidates c = moonlight();
        rs::AdviceCandidate other = cand("core_attn", "pass", { { -1, 30.0 } }, 400.0);
        other.matched = false;
        other.unmatched_reasons = { "seq_length: 8192 vs 4096", "model: X vs Moonlight 16B" };
        c.push_back(other);
        QTest::newRow("an unmatched candidate is not compared")
            << c << 36.0 << u"moe_act"_s << QString()
            << QStringList { u"over-target"_s, u"over-target"_s, u"slower"_s, u"slower"_s, u"chosen"_s,
                   u"slower"_s, u"not-matched"_s }
            << QStringList { u"6:not matched to the control, not compared: seq_length: 8192 vs 4096; model: X vs Moonlight 16B"_s }
            << u"use moe_act"_s;
    }
    {
        // Every rank must fit: the hot rank decides, whichever it is.
        Candidates c { cand("[]", "pass", { { 0, 50.0 }, { 1, 52.0 } }, 100.0, true),
            cand("moe_act", "pass", { { 0, 40.0 }, { 1, 41.0 }, { 2, 48.5 }, { 3, 44.0 } }, 105.0),
            cand("layernorm", "pass", { { 0, 47.0 }, { 1, 47.9 } }, 110.0) };
        QTest::newRow("per-rank peaks: the hot rank decides")
            << c << 48.0 << u"layernorm"_s << QString()
            << QStringList { u"over-target"_s, u"over-target"_s, u"chosen"_s }
            << QStringList { u"0:on rank 1 by 4.000 GB"_s, u"1:on rank 2 by 0.500 GB (48.500 GB)"_s,
                   u"2:fits (47.900 GB on rank 1, 0.100 GB under the target)"_s }
            << u"use layernorm: 47.900 GB on rank 1"_s;
    }
    {
        Candidates c { cand("[]", "pass", { { 0, 50.0 } }, 100.0, true),
            cand("moe_act", "pass", { { 0, 44.0 } }, 105.0),
            cand("layernorm", "pass", { { 0, 43.0 } }, 105.0) };
        QTest::newRow("equal step time: the smaller peak")
            << c << 48.0 << u"layernorm"_s << QString()
            << QStringList { u"over-target"_s, u"slower"_s, u"chosen"_s }
            << QStringList { u"1:as fast as layernorm (105.00 ms) but with a larger peak (44.000 vs 43.000 GB)"_s }
            << u"use layernorm"_s;
    }
    {
        Candidates c { cand("[]", "pass", { { 0, 50.0 } }, 100.0, true), cand("moe_act", "pass", {}, 101.0),
            cand("layernorm", "pass", { { 0, 40.0 } }, std::nullopt),
            cand("moe", "pass", { { 0, 48.0 } }, 130.0) };
        QTest::newRow("a pass without a peak or a step time is not chosen")
            << c << 48.0 << u"moe"_s << QString()
            << QStringList { u"over-target"_s, u"no-peak"_s, u"no-step-time"_s, u"chosen"_s }
            << QStringList { u"1:no peak allocated was measured"_s,
                   u"2:fits (40.000 GB on rank 0) but no steady step time was measured"_s,
                   u"3:fits (48.000 GB on rank 0, 0.000 GB under the target)"_s }
            << u"use moe: 48.000 GB on rank 0 fits the 48.000 GB target"_s;
    }
    {
        Candidates c { cand("[]", "pass", { { 0, 50.0 } }, 100.0, true),
            cand("moe_act", "nonfinite", { { 0, 40.0 } }, 101.0),
            cand("full uniform 1", "aborted", { { 0, 30.0 } }, std::nullopt) };
        QTest::newRow("nonfinite and aborted runs are not passes")
            << c << 45.0 << QString() << u"[]"_s
            << QStringList { u"over-target"_s, u"not-passed"_s, u"not-passed"_s }
            << QStringList { u"1:did not pass: nonfinite"_s, u"2:did not pass: aborted"_s }
            << u"nothing fits the 45.000 GB target; closest: [] (50.000 GB on rank 0, 5.000 GB over)"_s;
    }
    {
        // A CPU smoke test's peaks are megabytes: a sub-GB target is shown with 6 decimals.
        Candidates c { cand("[]", "pass", { { 0, 0.002417 } }, 34.76, true),
            cand("mlp", "pass", { { 0, 0.001903 } }, 45.05) };
        QTest::newRow("sub-GB target")
            << c << 0.002 << u"mlp"_s << QString() << QStringList { u"over-target"_s, u"chosen"_s }
            << QStringList { u"0:over the 0.002000 GB target on rank 0 by 0.000417 GB (0.002417 GB)"_s }
            << u"use mlp: 0.001903 GB on rank 0 fits the 0.002000 GB target"_s;
    }
    QTest::newRow("no candidates")
        << Candidates {} << 10.0 << QString() << QString() << QStringList {} << QStringList {}
        << u"nothing fits the 10.000 GB target; no candidate has a measured peak"_s;
}

void TestAdvisor::choice()
{
    QFETCH(Candidates, candidates);
    QFETCH(double, target);
    QFETCH(QString, chosen);
    QFETCH(QString, closest);
    QFETCH(QStringList, verdicts);
    QFETCH(QStringList, reasons);
    QFETCH(QString, summary);

    const rs::Advice a = rs::adviseRecompute(candidates, target);
    QCOMPARE(a.verdicts.size(), candidates.size());
    QCOMPARE(a.chosen.has_value(), !chosen.isEmpty());
    if (a.chosen)
        QCOMPARE(QString::fromStdString(candidates[*a.chosen].label), chosen);
    QCOMPARE(a.closest.has_value(), !closest.isEmpty());
    if (a.closest)
        QCOMPARE(QString::fromStdString(candidates[*a.closest].label), closest);
    QStringList got;
    for (const auto& v : a.verdicts)
        got << QString::fromLatin1(rs::verdictName(v.verdict));
    QCOMPARE(got, verdicts);
    for (std::size_t i = 0; i < a.verdicts.size(); ++i) {
        QVERIFY2(!a.verdicts[i].reasons.empty(), qPrintable(u"candidate %1 has no reason"_s.arg(i)));
        QCOMPARE(a.verdicts[i].verdict == rs::Verdict::Chosen, a.chosen == i);
    }
    for (const QString& r : reasons) {
        const int colon = r.indexOf(u':');
        const auto i = std::size_t(r.left(colon).toInt());
        const QString want = r.mid(colon + 1);
        QString all;
        for (const auto& s : a.verdicts.at(i).reasons)
            all += QString::fromStdString(s) + u" | "_s;
        QVERIFY2(all.contains(want), qPrintable(u"candidate %1: '%2' not in '%3'"_s.arg(i).arg(want, all)));
    }
    QVERIFY2(QString::fromStdString(a.summary).contains(summary), a.summary.c_str());
}

void TestAdvisor::rankCoverageNote()
{
    // The guide's Nemotron peaks are rank 0's of 16 GPUs: the choice says so.
    const rs::Advice a = rs::adviseRecompute(nemotron(), 65.0);
    QCOMPARE(a.notes.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(a.notes[0]),
        u"the peak of moe is known for rank(s) 0 of 16 only: other ranks may peak higher"_s);
    // Moonlight's peaks are the max over ranks: nothing to add.
    QVERIFY(rs::adviseRecompute(moonlight(), 36.0).notes.empty());
    Candidates noControl = moonlight();
    noControl.erase(noControl.begin());
    const rs::Advice b = rs::adviseRecompute(noControl, 36.0);
    QCOMPARE(b.notes.size(), std::size_t(1));
    QVERIFY(QString::fromStdString(b.notes[0]).startsWith(u"no [] control"_s));
}

void TestAdvisor::badTarget()
{
    for (double t : { 0.0, -1.0, std::nan(""), HUGE_VAL }) {
        try {
            rs::adviseRecompute(moonlight(), t);
            QFAIL(qPrintable(u"target %1 accepted"_s.arg(t)));
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString::fromLatin1(e.what()).startsWith(u"target_gb: "_s), e.what());
        }
    }
}

QTEST_GUILESS_MAIN(TestAdvisor)
#include "tst_advisor.moc"
