// SPDX-License-Identifier: Apache-2.0
// The recompute label table (core/recompute_labels.h): every label of every profile has a row with each
// piece the code decides on (a rule that gates it, whether it acts on a recipe, the estimator's region or
// a reason, a boundary width), and a label added to the table alone fails the coverage check, naming each
// piece it still lacks. The worker's half is tests/engine/tst_engine_recompute.cpp.
#include <QtTest>

#include "core/advisor.h"
#include "core/estimator.h"
#include "core/profiles.h"
#include "core/recompute_labels.h"
#include "core/rules.h"
#include "core/step_stats.h"

using namespace rs;

namespace {

bool mentions(const std::vector<std::string>& problems, const std::string& label, const std::string& what)
{
    for (const auto& p : problems)
        if (p.rfind(label + ":", 0) == 0 && p.find(what) != std::string::npos)
            return true;
    return false;
}

QString joined(const std::vector<std::string>& problems)
{
    QStringList out;
    for (const auto& p : problems)
        out << QString::fromStdString(p);
    return out.join(u"; ");
}

} // namespace

class TestRecomputeLabels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyLabelOfEveryProfileIsCovered();
    void aLabelInTheTableAloneFailsCoverage();
    void eachRowFeedsItsReaders_data();
    void eachRowFeedsItsReaders();
    void unsetModulesAreTheDefaultLabel();
};

void TestRecomputeLabels::everyLabelOfEveryProfileIsCovered()
{
    const auto problems = recomputeLabelCoverage();
    QVERIFY2(problems.empty(), qPrintable(joined(problems)));
    for (const auto& row : recomputeLabels())
        QVERIFY2(!profilesKnowing(row.name).empty(), row.name.data()); // no row for a label nobody knows
}

// Adding a label is one row plus its pieces: the row alone names every piece still missing.
void TestRecomputeLabels::aLabelInTheTableAloneFailsCoverage()
{
    std::vector<RecomputeLabel> table = recomputeLabels();
    RecomputeLabel row;
    row.name = "test_label";
    row.kind = CheckpointKind::OutputDiscard;
    row.what = "a region no code knows yet";
    row.worker_regions = { "test_region" };
    table.push_back(row);
    const auto problems = recomputeLabelCoverage(table, { "core_attn", "test_label", "no_row" });
    QVERIFY2(mentions(problems, "test_label", "effect"), qPrintable(joined(problems)));
    QVERIFY2(mentions(problems, "test_label", "R11"), qPrintable(joined(problems)));
    QVERIFY2(mentions(problems, "test_label", "boundary width"), qPrintable(joined(problems)));
    QVERIFY2(mentions(problems, "test_label", "estimator has no region"), qPrintable(joined(problems)));
    QVERIFY2(mentions(problems, "no_row", "no row"), qPrintable(joined(problems)));
    QVERIFY2(!mentions(problems, "core_attn", ""), qPrintable(joined(problems)));

    // Each piece given, the row passes; a rule id the rule table lacks, or a parent with no row, does not.
    table.back().effect = recomputeLabels().front().effect;
    table.back().rules = { "R11" };
    table.back().boundary_width = 2;
    table.back().not_estimated = "the estimator models no test region";
    QVERIFY2(recomputeLabelCoverage(table, { "test_label" }).empty(),
        qPrintable(joined(recomputeLabelCoverage(table, { "test_label" }))));
    table.back().rules = { "R11", "R999" };
    table.back().parent = "no_such_label";
    const auto wrong = recomputeLabelCoverage(table, { "test_label" });
    QVERIFY2(mentions(wrong, "test_label", "rule R999"), qPrintable(joined(wrong)));
    QVERIFY2(mentions(wrong, "test_label", "parent no_such_label"), qPrintable(joined(wrong)));
    // A reason not to estimate a label the estimator does model is a contradiction too.
    for (auto& r : table)
        if (r.name == "moe_act")
            r.not_estimated = "stale";
    QVERIFY2(mentions(recomputeLabelCoverage(table, { "moe_act" }), "moe_act", "estimator models it"),
        qPrintable(joined(recomputeLabelCoverage(table, { "moe_act" }))));
}

// What each reader takes from a row: the advisor's region -> label, the step statistics' width, the
// estimator's region, R11's membership.
void TestRecomputeLabels::eachRowFeedsItsReaders_data()
{
    QTest::addColumn<QString>("label");
    for (const auto& row : recomputeLabels())
        QTest::newRow(row.name.data()) << QString::fromLatin1(row.name.data(), int(row.name.size()));
}

void TestRecomputeLabels::eachRowFeedsItsReaders()
{
    QFETCH(QString, label);
    const RecomputeLabel* row = findRecomputeLabel(label.toStdString());
    QVERIFY(row);
    for (const auto& region : row->worker_regions)
        QCOMPARE(recomputeLabelOfRegion(region), label.toStdString());
    RecomputeChoice choice;
    choice.granularity = "selective";
    choice.modules = { label.toStdString() };
    QCOMPARE(boundaryWidth(choice), row->boundary_width);
    QCOMPARE(estimatorModelsLabel(row->name), row->not_estimated.empty());
    for (Profile p : profilesKnowing(row->name)) {
        Recipe r;
        r.profile = p;
        QVERIFY(recomputeLabelEffect(r, label.toStdString()).exists);
    }
}

void TestRecomputeLabels::unsetModulesAreTheDefaultLabel()
{
    Recipe r;
    QCOMPARE(effectiveRecomputeModules(r), std::vector<std::string> { "core_attn" });
    r.recompute_modules = std::vector<std::string> {};
    QVERIFY(effectiveRecomputeModules(r).empty()); // [] is the control, not the default
    QCOMPARE(findRecomputeLabel(kDefaultRecomputeLabel)->name, std::string_view("core_attn"));
}

QTEST_GUILESS_MAIN(TestRecomputeLabels)
#include "tst_recompute_labels.moc"
