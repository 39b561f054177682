// SPDX-License-Identifier: Apache-2.0
// Hostile input to the recipe readers (issue 16): every crash seen while fuzzing is a row here. Deep
// nesting, number overflow, bytes that are not UTF-8 and huge or deeply nested --moe-layer-freq
// expressions end in a RecipeError that names the field and what is allowed; never a stack overflow, an
// uncaught exception or a bad_alloc. Impossible sizes read fine but validate() refuses them.
#include <nlohmann/json.hpp>

#include <QtTest>

#include "core/megatron_flags.h"
#include "core/overrides.h"
#include "core/recipe_json.h"
#include "core/rules.h"

using namespace rs;

namespace {

std::vector<std::string> words(const QByteArray& text)
{
    std::vector<std::string> out;
    for (const QByteArray& w : text.split('\x1f'))
        out.push_back(w.toStdString());
    return out;
}

// Reads `text` as the given format; returns the RecipeError's what() ("" when it read).
QByteArray readError(const QByteArray& format, const QByteArray& text, std::string* field = nullptr)
{
    try {
        if (format == "json")
            recipeFromJsonText(text.toStdString(), "fuzz.json");
        else if (format == "bridge")
            recipeFromBridgeOverrides(words(text));
        else
            recipeFromMegatronFlags(words(text));
    } catch (const RecipeError& e) {
        if (field)
            *field = e.field;
        return QByteArray(e.what());
    }
    return {};
}

QByteArray nested(int depth, const char* open, const char* close, const char* inner = "1")
{
    QByteArray s;
    s.reserve(depth * 2 + 8);
    for (int i = 0; i < depth; ++i)
        s += open;
    s += inner;
    for (int i = 0; i < depth; ++i)
        s += close;
    return s;
}

} // namespace

class TestHostileInput : public QObject {
    Q_OBJECT

private slots:
    void refusedWithTheField_data();
    void refusedWithTheField();
    void deepValueOfAParsedDocument();
    void nonUtf8NeverThrowsLater();
    void boundedDumpIsBounded();
    void impossibleSizesAreErrors_data();
    void impossibleSizesAreErrors();
};

void TestHostileInput::refusedWithTheField_data()
{
    QTest::addColumn<QByteArray>("format");
    QTest::addColumn<QByteArray>("text"); // arguments separated by \x1f
    QTest::addColumn<QByteArray>("field");
    QTest::addColumn<QByteArray>("says");

    const QByteArray deepList = nested(200000, "[", "]");
    QTest::newRow("JSON: 200000 nested lists for a known field")
        << QByteArray("json") << QByteArray("{\"hidden_size\": " + deepList + "}")
        << QByteArray("hidden_size") << QByteArray("nested more than 32 levels");
    QTest::newRow("JSON: nested objects inside comm_overlap")
        << QByteArray("json")
        << QByteArray("{\"comm_overlap\": {\"overlap_moe_expert_parallel_comm\": "
               + nested(5000, "{\"a\":", "}") + "}}")
        << QByteArray("comm_overlap.overlap_moe_expert_parallel_comm") << QByteArray("nested more than");
    QTest::newRow("JSON: 33 levels of a wrong type (the message is built)")
        << QByteArray("json") << QByteArray("{\"name\": " + nested(31, "[", "]") + "}") << QByteArray("name")
        << QByteArray("expected a string, got [[[[");
    QTest::newRow("JSON: number overflow names the key")
        << QByteArray("json") << QByteArray(R"({"num_layers": 2, "hidden_dropout": 1e400})")
        << QByteArray("hidden_dropout") << QByteArray("out of range: a number must be finite");
    QTest::newRow("JSON: integer beyond int")
        << QByteArray("json") << QByteArray(R"({"num_layers": 2147483648})") << QByteArray("num_layers")
        << QByteArray("allowed: -2147483648 to 2147483647");
    QTest::newRow("overrides: double overflow, not 'stod'")
        << QByteArray("bridge") << QByteArray("model.hidden_dropout=1e999") << QByteArray("hidden_dropout")
        << QByteArray("out of range: a number must be finite");
    QTest::newRow("overrides: integer beyond 64 bits")
        << QByteArray("bridge") << QByteArray("model.num_layers=99999999999999999999999")
        << QByteArray("num_layers") << QByteArray("allowed: -2147483648 to 2147483647");
    QTest::newRow("overrides: a 100000-digit number (std::regex recursion)")
        << QByteArray("bridge") << QByteArray("model.num_layers=" + QByteArray(100000, '7'))
        << QByteArray("num_layers") << QByteArray("expected an integer");
    QTest::newRow("overrides: name not UTF-8")
        << QByteArray("bridge") << QByteArray("# studio: name=ab\xff\xfe") << QByteArray("name")
        << QByteArray("not valid UTF-8");
    QTest::newRow("overrides: label not UTF-8")
        << QByteArray("bridge") << QByteArray("model.recompute_modules=[core_attn,\xc3\x28]")
        << QByteArray("recompute_modules") << QByteArray("not valid UTF-8");
    QTest::newRow("flags: integer overflow") << QByteArray("flags")
                                             << QByteArray("--hidden-size\x1f"
                                                           "99999999999999999999")
                                             << QByteArray("hidden_size") << QByteArray("out of range");
    QTest::newRow("flags: double overflow") << QByteArray("flags")
                                            << QByteArray("--hidden-dropout\x1f"
                                                          "1e999")
                                            << QByteArray("hidden_dropout") << QByteArray("out of range");
    QTest::newRow("flags: nan") << QByteArray("flags")
                                << QByteArray("--attention-dropout\x1f"
                                              "nan")
                                << QByteArray("attention_dropout") << QByteArray("must be finite");
    QTest::newRow("flags: --moe-layer-freq 100000 parentheses deep")
        << QByteArray("flags") << QByteArray("--moe-layer-freq\x1f" + nested(100000, "(", ")", "[1]"))
        << QByteArray("moe_layer_freq") << QByteArray("more than 32 levels deep");
    QTest::newRow("flags: --moe-layer-freq of 10^12 layers (no bad_alloc)")
        << QByteArray("flags") << QByteArray("--moe-layer-freq\x1f[1]*999999*999999")
        << QByteArray("moe_layer_freq") << QByteArray("more than 1000000 entries");
    QTest::newRow("flags: --moe-layer-freq sum of 2^21 entries")
        << QByteArray("flags") << QByteArray("--moe-layer-freq\x1f([1]*1024*1024)+([1]*1024*1024)")
        << QByteArray("moe_layer_freq") << QByteArray("more than 1000000 entries");
}

void TestHostileInput::refusedWithTheField()
{
    QFETCH(QByteArray, format);
    QFETCH(QByteArray, text);
    QFETCH(QByteArray, field);
    QFETCH(QByteArray, says);
    std::string gotField;
    const QByteArray what = readError(format, text, &gotField);
    QVERIFY2(!what.isEmpty(), "read without an error");
    QCOMPARE(QByteArray::fromStdString(gotField), field);
    QVERIFY2(what.contains(says), what.left(400).constData());
    QVERIFY2(what.size() < 2000, "the message quotes the whole input");
    QVERIFY(isValidUtf8(what.toStdString())); // printable: validate --json can encode it
}

// A document parsed elsewhere (nlohmann's own parser is iterative) reaches recipeFromJson with any depth:
// the type error's message is built without walking it.
void TestHostileInput::deepValueOfAParsedDocument()
{
    const nlohmann::json doc
        = nlohmann::json::parse("{\"num_layers\": " + nested(100000, "[", "]").toStdString() + "}");
    try {
        recipeFromJson(doc, "doc");
        QFAIL("read");
    } catch (const RecipeError& e) {
        QCOMPARE(QByteArray::fromStdString(e.field), QByteArray("num_layers"));
        QVERIFY(std::string(e.what()).size() < 400);
    }
}

// Bytes that are not UTF-8 never get into a recipe, so its canonical text (the hash), recipeToJson().dump()
// and the worker's stream never throw nlohmann's type_error 316; the message escapes them.
void TestHostileInput::nonUtf8NeverThrowsLater()
{
    for (const std::string& bad : { std::string("\xff"), std::string("a\xc0\xafz"),
             std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82") }) {
        QVERIFY(!isValidUtf8(bad));
        Recipe r;
        try {
            setRecipeField(r, "name", nlohmann::json(bad), "test");
            QFAIL("accepted");
        } catch (const RecipeError& e) {
            QCOMPARE(QByteArray::fromStdString(e.field), QByteArray("name"));
            QVERIFY(isValidUtf8(e.what()));
            QVERIFY(std::string(e.what()).find("\\x") != std::string::npos);
            (void)nlohmann::json(e.what()).dump(); // would throw on raw bytes
        }
    }
    for (const std::string& good : { std::string("plain"), std::string("Kimi \xe2\x80\x94 K2"),
             std::string("\xf0\x9f\x98\x80"), std::string() })
        QVERIFY(isValidUtf8(good));
    // A key that is not UTF-8 (an override key typed in a Latin-1 terminal) is named, escaped.
    try {
        recipeFromBridgeOverrides({ "model.num_l\xe4yers=2" });
        QFAIL("accepted");
    } catch (const RecipeError& e) {
        QVERIFY(isValidUtf8(e.what()));
        QVERIFY(isValidUtf8(e.field));
    }
}

void TestHostileInput::boundedDumpIsBounded()
{
    const nlohmann::json deep = nlohmann::json::parse(nested(50000, "[", "]").toStdString());
    const std::string d = boundedDump(deep);
    QVERIFY(d.size() < 200);
    QVERIFY(d.rfind("[[[[", 0) == 0);
    nlohmann::json wide = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i)
        wide.push_back(i);
    QVERIFY(boundedDump(wide, 50).size() < 60);
    QCOMPARE(boundedDump(nlohmann::json(7)), std::string("7"));
    QCOMPARE(boundedDump(nlohmann::json::parse(R"({"a":[1,"x"]})")), std::string(R"({"a":[1,"x"]})"));
    QVERIFY(isValidUtf8(boundedDump(nlohmann::json(std::string("a\xff")))));
}

void TestHostileInput::impossibleSizesAreErrors_data()
{
    QTest::addColumn<QByteArray>("recipe");
    QTest::addColumn<QByteArray>("rule");
    QTest::addColumn<QByteArray>("flagsRule"); // Megatron-LM's own check where it has one
    const QByteArray base = R"("num_layers": 4, "hidden_size": 256, "num_attention_heads": 4, )";
    QTest::newRow("num_query_groups 0 (SIGFPE in the worker)")
        << QByteArray("{" + base + R"("num_query_groups": 0})") << QByteArray("RS23") << QByteArray("RS23");
    QTest::newRow("pp x vpp overflows int (SIGFPE in the worker)")
        << QByteArray("{" + base
               + R"("pipeline_model_parallel_size": 65536, "virtual_pipeline_model_parallel_size": 65536})")
        << QByteArray("RS28") << QByteArray("RS28");
    QTest::newRow("zero layers") << QByteArray(R"({"hidden_size": 256, "num_attention_heads": 4})")
                                 << QByteArray("RS23") << QByteArray("RS23");
    QTest::newRow("negative micro-batch")
        << QByteArray("{" + base + R"("micro_batch_size": -1})") << QByteArray("RS23") << QByteArray("RS23");
    QTest::newRow("hidden not a multiple of heads")
        << QByteArray(R"({"num_layers": 4, "hidden_size": 250, "num_attention_heads": 4})")
        << QByteArray("RS24") << QByteArray("M7");
    QTest::newRow("heads not a multiple of groups")
        << QByteArray("{" + base + R"("num_query_groups": 3})") << QByteArray("RS25") << QByteArray("RS25");
    QTest::newRow("dropout 2") << QByteArray("{" + base + R"("hidden_dropout": 2.0})") << QByteArray("RS26")
                               << QByteArray("RS26");
    QTest::newRow("top-k above experts")
        << QByteArray("{" + base + R"("num_moe_experts": 4, "moe_router_topk": 5})") << QByteArray("RS27")
        << QByteArray("RS27");
    QTest::newRow("2^31-1 layers x 2^31-1 hidden x 2^31-1 sequence") << QByteArray(
        R"({"num_layers": 2147483647, "hidden_size": 2147483647, "num_attention_heads": 1, "seq_length": 2147483647, "micro_batch_size": 2147483647})")
                                                                     << QByteArray("RS29")
                                                                     << QByteArray("RS29");
    QTest::newRow("zero experts") << QByteArray("{" + base + R"("num_moe_experts": 0})") << QByteArray("R40")
                                  << QByteArray("R40");
}

void TestHostileInput::impossibleSizesAreErrors()
{
    QFETCH(QByteArray, recipe);
    QFETCH(QByteArray, rule);
    QFETCH(QByteArray, flagsRule);
    for (InputFormat format :
        { InputFormat::Json, InputFormat::BridgeOverrides, InputFormat::MegatronFlags }) {
        if (format == InputFormat::MegatronFlags)
            rule = flagsRule;
        const Validation v = validate(recipeFromJsonText(recipe.toStdString()), format);
        bool found = false;
        for (const Finding& f : v.findings)
            found = found || (f.rule_id == rule.toStdString() && f.severity == Severity::Error);
        QVERIFY2(found && v.hasErrors(), rule.constData());
        (void)recipeCanonicalText(v.resolved);
    }
}

QTEST_GUILESS_MAIN(TestHostileInput)
#include "tst_hostile_input.moc"
