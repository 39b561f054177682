// SPDX-License-Identifier: Apache-2.0
// The advisor's choice on the guide's own tables (Moonlight 16B, Nemotron 3 Nano) and on the edge cases
// of the rule "the smallest measured replay cost that satisfies the per-rank memory target": failed runs,
// unmatched runs, per-rank peaks, ties, missing measurements, the exact boundary.
#include <algorithm>
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

// A candidate with the estimator's hottest-rank peak (GB) for its choice; outcome "" = not run yet.
rs::AdviceCandidate est(rs::AdviceCandidate c, double estimatedGb, std::optional<int> stage = 0)
{
    c.estimated_peak_bytes = std::int64_t(std::llround(estimatedGb * 1e9));
    c.estimated_stage = stage;
    return c;
}
rs::AdviceCandidate planned(const std::string& label, double estimatedGb, bool control = false)
{
    return est(cand(label, "", {}, std::nullopt, control), estimatedGb);
}

} // namespace

class TestAdvisor : public QObject {
    Q_OBJECT
private slots:
    void choice_data();
    void choice();
    void rankCoverageNote();
    void workerStepOnMoeNote();
    void badTarget();
    void byEstimate_data();
    void byEstimate();
    void estimateBesideMeasurement();
    void attributePeak_data();
    void attributePeak();
    void regionLabels_data();
    void regionLabels();
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

// Worker step times on MoE are the GPU's work only (issue 28): the advice says so once, and nothing when the
// runs are imported real ones.
void TestAdvisor::workerStepOnMoeNote()
{
    Candidates worker = moonlight();
    for (auto& c : worker)
        c.worker_on_moe = true;
    const rs::Advice a = rs::adviseRecompute(worker, 36.0);
    QCOMPARE(std::count(a.notes.begin(), a.notes.end(), std::string(rs::kWorkerStepOnMoeNote)), 1);
    QVERIFY(QString::fromLatin1(rs::kWorkerStepOnMoeNote).contains(u"--one-rank"_s));
    QVERIFY(rs::adviseRecompute(moonlight(), 36.0).notes.empty());
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

// Candidates not yet run: skipped when the estimate exceeds the target by more than the estimator's error
// (5 %), the rest in the guide's order (control, selective by estimated peak from the highest, full last).
void TestAdvisor::byEstimate_data()
{
    QTest::addColumn<Candidates>("candidates");
    QTest::addColumn<double>("target");
    QTest::addColumn<QStringList>("verdicts");
    QTest::addColumn<QStringList>("order"); // labels, in Advice::order
    QTest::addColumn<QString>("next"); // label of Advice::next, "" when none
    QTest::addColumn<QStringList>("reasons"); // "INDEX:substring"

    QTest::newRow("quiet: 81.2 GB against 80 GB is within the estimator's 5 % error, not skipped")
        << Candidates { planned("[]", 81.2, true) } << 80.0 << QStringList { u"not-measured"_s }
        << QStringList { u"[]"_s } << u"[]"_s
        << QStringList {
               u"0:not measured yet: estimated 81.2 GB on stage 0 is over the target 80 GB by less than the estimator's 5 % error"_s
           };
    QTest::newRow("fires: 84.1 GB against 80 GB is skipped with the reason")
        << Candidates { planned("[]", 84.1, true), planned("moe_act", 70.0) } << 80.0
        << QStringList { u"skipped-by-estimate"_s, u"not-measured"_s }
        << QStringList { u"moe_act"_s, u"[]"_s } << u"moe_act"_s
        << QStringList {
               u"0:estimated 84.1 GB > target 80 GB (the hottest rank: stage 0; over it by more than the estimator's 5 % error): skipped, not run"_s,
               u"1:not measured yet: estimated 70 GB on stage 0 fits the target 80 GB"_s
           };
    QTest::newRow("quiet: exactly target plus 5 % is not skipped")
        << Candidates { planned("moe_act", 84.0) } << 80.0 << QStringList { u"not-measured"_s }
        << QStringList { u"moe_act"_s } << u"moe_act"_s << QStringList {};
    QTest::newRow("quiet: under the target, nothing skipped")
        << Candidates { planned("[]", 60.0, true), planned("core_attn", 59.0) } << 80.0
        << QStringList { u"not-measured"_s, u"not-measured"_s } << QStringList { u"[]"_s, u"core_attn"_s }
        << u"[]"_s << QStringList { u"1:fits the target 80 GB"_s };
    QTest::newRow("the guide's order: control, narrowest (highest fitting estimate) first, full last")
        << Candidates { planned("full uniform 1", 40.0), planned("moe", 62.0), planned("[]", 90.0, true),
               planned("moe_act", 78.0), planned("layernorm, moe_act", 77.0), planned("mlp", 85.0) }
        << 80.0
        << QStringList { u"not-measured"_s, u"not-measured"_s, u"skipped-by-estimate"_s, u"not-measured"_s,
               u"not-measured"_s, u"skipped-by-estimate"_s }
        << QStringList { u"moe_act"_s, u"layernorm, moe_act"_s, u"moe"_s, u"full uniform 1"_s, u"mlp"_s,
               u"[]"_s }
        << u"moe_act"_s
        << QStringList { u"5:estimated 85 GB > target 80 GB"_s, u"2:estimated 90 GB > target 80 GB"_s };
    QTest::newRow("measured candidates keep their verdicts; the unmeasured one is next")
        << Candidates { cand("[]", "pass", { { 0, 36.618 } }, 457.18, true),
               cand("moe_act", "pass", { { 0, 35.941 } }, 466.26), planned("mla_up_proj", 35.5) }
        << 36.0 << QStringList { u"over-target"_s, u"chosen"_s, u"not-measured"_s }
        << QStringList { u"[]"_s, u"mla_up_proj"_s, u"moe_act"_s } << u"mla_up_proj"_s
        << QStringList { u"2:not measured yet: estimated 35.5 GB"_s };
    QTest::newRow("quiet: no estimates, the input order and no skip")
        << moonlight() << 36.0
        << QStringList { u"over-target"_s, u"over-target"_s, u"slower"_s, u"slower"_s, u"chosen"_s,
               u"slower"_s }
        << QStringList { u"[]"_s, u"core_attn"_s, u"mla_up_proj"_s, u"mla_up_proj, mlp"_s, u"moe_act"_s,
               u"layernorm, moe_act"_s }
        << QString() << QStringList {};
    QTest::newRow("a sub-GB target (CPU): 0.0024 GB against 0.002 GB is skipped")
        << Candidates { planned("[]", 0.0024, true), planned("mlp", 0.0019) } << 0.002
        << QStringList { u"skipped-by-estimate"_s, u"not-measured"_s } << QStringList { u"mlp"_s, u"[]"_s }
        << u"mlp"_s << QStringList { u"0:estimated 0.0024 GB > target 0.002 GB"_s };
}

void TestAdvisor::byEstimate()
{
    QFETCH(Candidates, candidates);
    QFETCH(double, target);
    QFETCH(QStringList, verdicts);
    QFETCH(QStringList, order);
    QFETCH(QString, next);
    QFETCH(QStringList, reasons);

    const rs::Advice a = rs::adviseRecompute(candidates, target);
    QStringList got, gotOrder;
    for (const auto& v : a.verdicts)
        got << QString::fromLatin1(rs::verdictName(v.verdict));
    QCOMPARE(got, verdicts);
    for (std::size_t i : a.order)
        gotOrder << QString::fromStdString(candidates.at(i).label);
    QCOMPARE(gotOrder, order);
    QCOMPARE(a.next.has_value(), !next.isEmpty());
    if (a.next) {
        QCOMPARE(QString::fromStdString(candidates[*a.next].label), next);
        QVERIFY2(QString::fromStdString(a.summary).contains(u"next: "_s + next), a.summary.c_str());
    }
    for (std::size_t i = 0; i < a.verdicts.size(); ++i)
        QVERIFY2(!a.verdicts[i].reasons.empty(), qPrintable(u"candidate %1 has no reason"_s.arg(i)));
    for (const QString& r : reasons) {
        const int colon = r.indexOf(u':');
        const auto i = std::size_t(r.left(colon).toInt());
        const QString want = r.mid(colon + 1);
        const QString first = QString::fromStdString(a.verdicts.at(i).reasons.front());
        QVERIFY2(
            first.contains(want), qPrintable(u"candidate %1: '%2' not in '%3'"_s.arg(i).arg(want, first)));
    }
    // A skipped candidate is never chosen, and the notes list it.
    bool anySkipped = false;
    for (std::size_t i = 0; i < a.verdicts.size(); ++i) {
        if (a.verdicts[i].verdict != rs::Verdict::SkippedByEstimate)
            continue;
        anySkipped = true;
        QVERIFY(a.chosen != i);
    }
    QCOMPARE(std::any_of(a.notes.begin(), a.notes.end(),
                 [](const std::string& n) { return n.rfind("skipped by the estimate", 0) == 0; }),
        anySkipped);
}

// A measured candidate keeps the measurement's verdict; its estimate stands beside it with the error.
void TestAdvisor::estimateBesideMeasurement()
{
    Candidates c { est(cand("[]", "pass", { { 0, 36.618 } }, 457.18, true), 35.0),
        est(cand("moe_act", "pass", { { 0, 35.941 } }, 466.26), 40.0) };
    const rs::Advice a = rs::adviseRecompute(c, 36.0);
    QCOMPARE(
        a.verdicts[0].verdict, rs::Verdict::OverTarget); // the measurement decides, not the 35 GB estimate
    QCOMPARE(a.verdicts[1].verdict, rs::Verdict::Chosen); // though its estimate was over by 11 %
    QVERIFY(a.verdicts[0].estimate_error_pct);
    QVERIFY(std::abs(*a.verdicts[0].estimate_error_pct - (35.0 - 36.618) / 36.618 * 100) < 1e-6);
    QCOMPARE(QString::fromStdString(a.verdicts[0].reasons.back()),
        u"estimated 35 GB on stage 0 (-4.4 % against the measured 36.618 GB)"_s);
    QVERIFY(QString::fromStdString(a.verdicts[1].reasons.back())
                .endsWith(u"the estimate said it would not fit, the measurement decides"_s));
    QVERIFY(!a.next);
    QVERIFY(a.order.size() == 2 && a.order[0] == 0);
}

using Categories = std::vector<std::pair<std::string, double>>; // name -> GB
Q_DECLARE_METATYPE(Categories)

void TestAdvisor::attributePeak_data()
{
    QTest::addColumn<bool>("onControl");
    QTest::addColumn<double>("peakGb");
    QTest::addColumn<Categories>("categories");
    QTest::addColumn<Categories>("regions");
    QTest::addColumn<QString>("line");
    QTest::addColumn<QString>("label");

    const Categories dense { { "parameters", 4.0 }, { "main_parameters", 0.0 }, { "gradient_buffer", 8.0 },
        { "optimizer_states", 16.0 }, { "activations", 30.0 }, { "backward", 0.0 }, { "workspace", 2.0 },
        { "other", 0.0 } };
    // The guide's dense case: core_attn holds most of the saved activations.
    QTest::newRow("activations, core_attn largest")
        << true << 60.0 << dense
        << Categories { { "core_attn", 22.55 }, { "mlp", 5.0 }, { "embedding", 2.45 } }
        << u"the peak (forward, 60.000 GB) is held by: activations 30.000 GB (largest region core_attn: "
           u"22.550 GB), optimizer states 16.000 GB, gradient buffer 8.000 GB, parameters 4.000 GB, "
           u"workspace 2.000 GB; try core_attn first: its region holds the most activations"_s
        << u"core_attn"_s;
    QTest::newRow("layernorm regions map to layernorm")
        << true << 60.0 << dense
        << Categories { { "input_layernorm", 12.0 }, { "mlp", 10.0 }, { "pre_mlp_layernorm", 8.0 } }
        << u"the peak (forward, 60.000 GB) is held by: activations 30.000 GB (largest region "
           u"input_layernorm: "
           u"12.000 GB), optimizer states 16.000 GB, gradient buffer 8.000 GB, parameters 4.000 GB, "
           u"workspace 2.000 GB; try layernorm first: its region holds the most activations"_s
        << u"layernorm"_s;
    // The largest region is one no label replays: the line, no candidate.
    QTest::newRow("largest region has no label")
        << true << 60.0 << dense << Categories { { "embedding", 20.0 }, { "mlp", 10.0 } }
        << u"the peak (forward, 60.000 GB) is held by: activations 30.000 GB (largest region embedding: "
           u"20.000 GB), optimizer states 16.000 GB, gradient buffer 8.000 GB, parameters 4.000 GB, "
           u"workspace 2.000 GB"_s
        << QString();
    // Activations hold under 10 % of the peak: recompute takes little back, no candidate named.
    QTest::newRow("activations a small share")
        << true << 60.0
        << Categories { { "parameters", 10.0 }, { "optimizer_states", 45.0 }, { "activations", 5.0 } }
        << Categories { { "mlp", 5.0 } }
        << u"the peak (forward, 60.000 GB) is held by: optimizer states 45.000 GB, parameters 10.000 GB, "
           u"activations 5.000 GB (largest region mlp: 5.000 GB)"_s
        << QString();
    // Only the control's attribution is read: on another candidate, quiet.
    QTest::newRow("attribution not on the control")
        << false << 60.0 << dense << Categories { { "core_attn", 22.55 } } << QString() << QString();
    QTest::newRow("no bytes") << true << 60.0 << Categories { { "activations", 0.0 } } << Categories {}
                              << QString() << QString();
}

void TestAdvisor::attributePeak()
{
    QFETCH(bool, onControl);
    QFETCH(double, peakGb);
    QFETCH(Categories, categories);
    QFETCH(Categories, regions);
    QFETCH(QString, line);
    QFETCH(QString, label);
    auto bytes = [](double gb) { return std::int64_t(std::llround(gb * 1e9)); };
    rs::PeakAttributionBytes a;
    a.phase = "forward";
    a.peak_bytes = bytes(peakGb);
    for (const auto& [name, gb] : categories)
        a.categories.emplace_back(name, bytes(gb));
    for (const auto& [name, gb] : regions)
        a.regions.emplace_back(name, bytes(gb));
    Candidates c { cand("[]", "pass", { { 0, peakGb } }, 457.18, true),
        cand("core_attn", "pass", { { 0, 39.5 } }, 474.80) };
    c[onControl ? 0 : 1].peak_attribution = a;
    const rs::Advice adv = rs::adviseRecompute(c, 45.0);
    QCOMPARE(QString::fromStdString(adv.peak_attribution), line);
    QCOMPARE(QString::fromStdString(adv.attribution_label), label);
    QCOMPARE(adv.chosen, std::optional<std::size_t>(1)); // the attribution informs, the measurement decides
}

void TestAdvisor::regionLabels_data()
{
    QTest::addColumn<QString>("region");
    QTest::addColumn<QString>("label");
    for (const char* same : { "core_attn", "mlp", "moe", "moe_act", "shared_experts", "mla_up_proj" })
        QTest::newRow(same) << QString::fromLatin1(same) << QString::fromLatin1(same);
    QTest::newRow("input_layernorm") << u"input_layernorm"_s << u"layernorm"_s;
    QTest::newRow("pre_mlp_layernorm") << u"pre_mlp_layernorm"_s << u"layernorm"_s;
    for (const char* none : { "self_attention", "embedding", "output", "" })
        QTest::newRow(*none ? none : "empty") << QString::fromLatin1(none) << QString();
}

void TestAdvisor::regionLabels()
{
    QFETCH(QString, region);
    QFETCH(QString, label);
    QCOMPARE(QString::fromStdString(rs::recomputeLabelOfRegion(region.toStdString())), label);
}

QTEST_GUILESS_MAIN(TestAdvisor)
#include "tst_advisor.moc"
