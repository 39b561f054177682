// SPDX-License-Identifier: Apache-2.0
// The guide's comparison in core: the explicit [] control of a recipe (whatever way the recipe asks for
// recompute, the deprecated moe_layer_recompute of R19 included), the candidate for one recompute choice,
// the fields that may differ between matched runs, the match check with its reasons, the deltas, and the
// GB text every program prints.
#include <QtTest>

#include "core/comparison.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/sha256.h"
#include "core/units.h"

using namespace Qt::StringLiterals;
using Facts = std::vector<std::pair<std::string, std::optional<std::string>>>;
Q_DECLARE_METATYPE(rs::Recipe)
Q_DECLARE_METATYPE(rs::RunFacts)
Q_DECLARE_METATYPE(rs::MeasuredRun)
Q_DECLARE_METATYPE(std::optional<double>)
Q_DECLARE_METATYPE(std::optional<qint64>)

namespace {

rs::Recipe base()
{
    rs::Recipe r;
    r.name = "tiny";
    r.num_layers = 2;
    r.hidden_size = 64;
    r.num_attention_heads = 4;
    r.seq_length = 32;
    return r;
}

std::string hashOf(const rs::Recipe& r)
{
    return rs::sha256Hex(rs::recipeCanonicalText(r));
}

rs::RunFacts facts(Facts fields, std::optional<nlohmann::json> recipe = std::nullopt, std::int64_t id = 0)
{
    rs::RunFacts f;
    f.run_id = id;
    f.fields = std::move(fields);
    f.recipe = std::move(recipe);
    return f;
}

QStringList q(const std::vector<std::string>& v)
{
    QStringList out;
    for (const auto& s : v)
        out << QString::fromStdString(s);
    return out;
}

} // namespace

class TestComparison : public QObject {
    Q_OBJECT
private slots:
    // Every way of asking for recompute ends in the one [] control, with everything else kept.
    void controlRecipe_data()
    {
        QTest::addColumn<rs::Recipe>("recipe");
        rs::Recipe r = base();
        r.recompute_granularity = "selective";
        r.recompute_modules = std::vector<std::string> { "core_attn", "mlp" };
        QTest::newRow("selective set") << r;
        r = base();
        r.recompute_granularity = "full";
        r.recompute_method = "uniform";
        r.recompute_num_layers = 1;
        r.distribute_saved_activations = true;
        QTest::newRow("full uniform, distributed") << r;
        r = base();
        r.recompute_granularity = "selective";
        r.recompute_modules = std::vector<std::string> { "core_attn" };
        r.moe_layer_recompute = true; // R19: Megatron appends "moe"
        QTest::newRow("moe_layer_recompute") << r;
        r = base();
        r.recompute_activations = true; // M2: selective
        QTest::newRow("--recompute-activations") << r;
        r = base();
        QTest::newRow("no recompute at all") << r;
        r = rs::controlRecipe(base());
        QTest::newRow("already the control") << r;
    }

    void controlRecipe()
    {
        QFETCH(rs::Recipe, recipe);
        const rs::Recipe c = rs::controlRecipe(recipe);
        QCOMPARE(c.recompute_granularity.value_or("?"), std::string("selective"));
        QVERIFY(c.recompute_modules && c.recompute_modules->empty());
        QVERIFY(!c.recompute_method && !c.recompute_num_layers);
        QVERIFY(!c.moe_layer_recompute && !c.recompute_activations && !c.distribute_saved_activations);
        QCOMPARE(c.name, recipe.name); // one name, so the CLI's and the GUI's control hash alike
        QCOMPARE(c.seq_length, recipe.seq_length);
        QVERIFY(rs::isControlRecipe(c));
        QVERIFY(rs::controlRecipe(c) == c);
        // The rules leave it the control: nothing (R19, M2) puts a module back.
        const rs::Validation v = rs::validate(c, rs::InputFormat::Json);
        QVERIFY(!v.hasErrors());
        QVERIFY(v.resolved.recompute_modules && v.resolved.recompute_modules->empty());
        // The control of any candidate of the recipe is the recipe's control: one hash.
        for (const char* choice : { "core_attn", "layernorm,moe_act", "full:block:2" }) {
            const rs::Recipe cand = rs::candidateRecipe(recipe, rs::parseRecomputeChoice(choice));
            QCOMPARE(hashOf(rs::controlRecipe(cand)), hashOf(c));
        }
    }

    // The candidate differs from the control in the recompute choice only, and in nothing the recipe had.
    void candidateRecipe_data()
    {
        QTest::addColumn<QString>("choice");
        QTest::addColumn<QString>("granularity");
        QTest::addColumn<QStringList>("modules"); // "unset" alone: recompute_modules unset
        QTest::addColumn<QString>("label");
        QTest::newRow("one label") << u"core_attn"_s << u"selective"_s << QStringList { u"core_attn"_s }
                                   << u"core_attn"_s;
        QTest::newRow("two labels") << u" layernorm , moe_act "_s << u"selective"_s
                                    << QStringList { u"layernorm"_s, u"moe_act"_s }
                                    << u"layernorm, moe_act"_s;
        QTest::newRow("full uniform")
            << u"full:uniform:1"_s << u"full"_s << QStringList { u"unset"_s } << u"full uniform 1"_s;
        QTest::newRow("full block") << u"full:block:3"_s << u"full"_s << QStringList { u"unset"_s }
                                    << u"full block 3"_s;
    }

    void candidateRecipe()
    {
        QFETCH(QString, choice);
        QFETCH(QString, granularity);
        QFETCH(QStringList, modules);
        QFETCH(QString, label);
        rs::Recipe r = base();
        r.recompute_granularity = "selective";
        r.recompute_modules = std::vector<std::string> { "mlp" };
        r.moe_layer_recompute = true; // must not leak "moe" into a candidate that did not ask for it
        const rs::RecomputeChoice c = rs::parseRecomputeChoice(choice.toStdString());
        QCOMPARE(QString::fromStdString(c.label()), label);
        const rs::Recipe cand = rs::candidateRecipe(r, c);
        QCOMPARE(QString::fromStdString(cand.recompute_granularity.value_or("")), granularity);
        QVERIFY(!cand.moe_layer_recompute);
        if (modules == QStringList { u"unset"_s })
            QVERIFY(!cand.recompute_modules);
        else
            QCOMPARE(q(cand.recompute_modules.value_or(std::vector<std::string> {})), modules);
        // Only fields that may differ between matched runs differ from the control.
        const nlohmann::json a = rs::recipeToJson(cand), b = rs::recipeToJson(rs::controlRecipe(r));
        for (auto it = a.begin(); it != a.end(); ++it) {
            if (!b.contains(it.key()) || b[it.key()] != it.value())
                QVERIFY2(rs::mayDifferBetweenMatchedRuns(it.key()), it.key().c_str());
        }
        QVERIFY(c.sameAs(rs::parseRecomputeChoice(choice.toStdString())));
    }

    void parseRecomputeChoiceRefuses_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("full without method") << u"full:1"_s << u"full recompute is full:METHOD:N"_s;
        QTest::newRow("bad method") << u"full:random:1"_s << u"uniform or block"_s;
        QTest::newRow("zero layers") << u"full:block:0"_s << u"positive integer"_s;
        QTest::newRow("not a number") << u"full:block:x"_s << u"positive integer"_s;
        QTest::newRow("empty label") << u"moe_act,"_s << u"'moe_act,'"_s;
        QTest::newRow("the control") << u"[]"_s << u"always run first"_s;
    }

    void parseRecomputeChoiceRefuses()
    {
        QFETCH(QString, text);
        QFETCH(QString, mentions);
        try {
            rs::parseRecomputeChoice(text.toStdString());
            QFAIL("accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(mentions), e.what());
        }
    }

    void sameChoiceIgnoresOrder()
    {
        QVERIFY(rs::parseRecomputeChoice("moe_act,layernorm")
                    .sameAs(rs::parseRecomputeChoice("layernorm,moe_act")));
        QVERIFY(!rs::parseRecomputeChoice("full:uniform:1").sameAs(rs::parseRecomputeChoice("full:block:1")));
    }

    void matchRuns_data()
    {
        QTest::addColumn<rs::RunFacts>("run");
        QTest::addColumn<rs::RunFacts>("control");
        QTest::addColumn<bool>("matched");
        QTest::addColumn<QStringList>("reasons");
        QTest::addColumn<QStringList>("notes");
        const nlohmann::json recipe = rs::recipeToJson(rs::controlRecipe(base()));
        nlohmann::json candidate
            = rs::recipeToJson(rs::candidateRecipe(base(), rs::parseRecomputeChoice("mlp")));
        candidate["name"] = "another name";
        candidate["memory_target_gb"] = 30.0;
        nlohmann::json dropout = recipe;
        dropout["hidden_dropout"] = 0.0;
        nlohmann::json missing = recipe;
        missing.erase("seq_length");

        QTest::newRow("same facts, same recipe but the recompute choice")
            << facts({ { "seq_length", "32" } }, candidate, 2) << facts({ { "seq_length", "32" } }, recipe, 1)
            << true << QStringList {} << QStringList {};
        QTest::newRow("a fact differs") << facts({ { "seq_length", "4096" }, { "device", "cuda:0" } })
                                        << facts({ { "seq_length", "8192" }, { "device", "cuda:0" } })
                                        << false << QStringList { u"seq_length: 4096 vs 8192"_s }
                                        << QStringList { u"stored fields compared; no full recipe"_s };
        QTest::newRow("a fact unknown on one side")
            << facts({ { "world_size", std::nullopt } }) << facts({ { "world_size", "2" } }) << false
            << QStringList { u"world_size: unknown vs 2"_s }
            << QStringList { u"stored fields compared; no full recipe"_s };
        QTest::newRow("facts in another order")
            << facts({ { "a", "1" }, { "b", "2" } }) << facts({ { "b", "2" }, { "a", "1" } }) << true
            << QStringList {} << QStringList { u"stored fields compared; no full recipe"_s };
        QTest::newRow("another recipe field")
            << facts({}, dropout) << facts({}, recipe) << false
            << QStringList { u"hidden_dropout: 0.0 vs 0.1"_s } << QStringList {};
        QTest::newRow("a key absent on one side")
            << facts({}, missing) << facts({}, recipe) << false
            << QStringList { u"seq_length: absent vs 32"_s } << QStringList {};
        rs::RunFacts keyed = facts({}, dropout);
        keyed.recipe_match_key = "k";
        rs::RunFacts keyedControl = facts({}, recipe);
        keyedControl.recipe_match_key = "k";
        QTest::newRow("equal match keys: the recipes are not read")
            << keyed << keyedControl << true << QStringList {} << QStringList {};
        QTest::newRow("its own control") << facts({}, recipe, 7) << facts({}, recipe, 7) << true
                                         << QStringList {} << QStringList { u"the run is its own control"_s };
    }

    void matchRuns()
    {
        QFETCH(rs::RunFacts, run);
        QFETCH(rs::RunFacts, control);
        QFETCH(bool, matched);
        QFETCH(QStringList, reasons);
        QFETCH(QStringList, notes);
        const rs::MatchResult m = rs::matchRuns(run, control);
        QCOMPARE(m.matched, matched);
        QCOMPARE(q(m.reasons), reasons);
        QCOMPARE(q(m.notes), notes);
    }

    void fieldsThatMayDiffer()
    {
        for (const char* key : { "name", "recompute_granularity", "recompute_modules", "recompute_method",
                 "recompute_num_layers", "moe_layer_recompute", "memory_target_gb" })
            QVERIFY2(rs::mayDifferBetweenMatchedRuns(key), key);
        for (const char* key : { "seq_length", "hidden_dropout", "train_iters", "attention_backend" })
            QVERIFY2(!rs::mayDifferBetweenMatchedRuns(key), key);
    }

    void deltas_data()
    {
        QTest::addColumn<rs::MeasuredRun>("run");
        QTest::addColumn<rs::MeasuredRun>("control");
        QTest::addColumn<std::optional<double>>("allocated");
        QTest::addColumn<std::optional<double>>("time");
        QTest::addColumn<QStringList>("notes");
        const std::string n2 = "after iteration 2";
        // The guide's Moonlight row: moe_act against [].
        QTest::newRow("moonlight moe_act")
            << rs::MeasuredRun { 35941000000, n2, 466.26 } << rs::MeasuredRun { 36618000000, n2, 457.18 }
            << std::optional<double>((35.941 - 36.618) / 36.618 * 100.0)
            << std::optional<double>((466.26 - 457.18) / 457.18 * 100.0) << QStringList {};
        QTest::newRow("peaks taken at different points")
            << rs::MeasuredRun { 2, "after iteration 1", 110.0 } << rs::MeasuredRun { 4, n2, 100.0 }
            << std::optional<double>() << std::optional<double>(10.0)
            << QStringList {
                   u"peak taken after iteration 1, the control's after iteration 2: not compared"_s
               };
        QTest::newRow("no step time on the control")
            << rs::MeasuredRun { 3, "", 100.0 } << rs::MeasuredRun { 4, "", std::nullopt }
            << std::optional<double>(-25.0) << std::optional<double>() << QStringList {};
        QTest::newRow("a zero control peak")
            << rs::MeasuredRun { 3, "", std::nullopt } << rs::MeasuredRun { 0, "", std::nullopt }
            << std::optional<double>() << std::optional<double>() << QStringList {};
    }

    void deltas()
    {
        QFETCH(rs::MeasuredRun, run);
        QFETCH(rs::MeasuredRun, control);
        QFETCH(std::optional<double>, allocated);
        QFETCH(std::optional<double>, time);
        QFETCH(QStringList, notes);
        const rs::ControlDeltas d = rs::deltasAgainstControl(run, control);
        QCOMPARE(d.allocated_pct.has_value(), allocated.has_value());
        if (allocated)
            QVERIFY(std::abs(*d.allocated_pct - *allocated) < 1e-9);
        QCOMPARE(d.time_pct.has_value(), time.has_value());
        if (time)
            QVERIFY(std::abs(*d.time_pct - *time) < 1e-9);
        QCOMPARE(q(d.notes), notes);
    }

    void gigabytes_data()
    {
        QTest::addColumn<std::optional<qint64>>("bytes");
        QTest::addColumn<int>("decimals");
        QTest::addColumn<QString>("plain");
        QTest::addColumn<QString>("withUnit");
        QTest::newRow("the guide's figure")
            << std::optional<qint64>(36618000000) << 3 << u"36.618"_s << u"36.618 GB"_s;
        QTest::newRow("rounded") << std::optional<qint64>(75612345) << 3 << u"0.076"_s << u"0.076 GB"_s;
        QTest::newRow("six places") << std::optional<qint64>(75612345) << 6 << u"0.075612"_s
                                    << u"0.075612 GB"_s;
        QTest::newRow("zero") << std::optional<qint64>(0) << 3 << u"0.000"_s << u"0.000 GB"_s;
        QTest::newRow("unknown") << std::optional<qint64>() << 3 << QString() << u"-"_s;
    }

    void gigabytes()
    {
        QFETCH(std::optional<qint64>, bytes);
        QFETCH(int, decimals);
        QFETCH(QString, plain);
        QFETCH(QString, withUnit);
        std::optional<std::int64_t> b;
        if (bytes)
            b = *bytes;
        QCOMPARE(QString::fromStdString(rs::formatGb(b, decimals)), plain);
        QCOMPARE(QString::fromStdString(rs::formatGbUnit(b, "-", decimals)), withUnit);
    }
};

QTEST_APPLESS_MAIN(TestComparison)
#include "tst_comparison.moc"
