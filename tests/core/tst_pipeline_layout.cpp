// SPDX-License-Identifier: Apache-2.0
// Megatron Core's pipeline_model_parallel_layout and the pipeline split (core/pipeline_layout.h,
// core/model_shape.h pipelineStage): the string form unrolled as parse_str_to_list unrolls it (every form the
// Bridge recipes use, and what Python's two substitutions leave behind), the list form, the errors; each
// stage's layers, chunk by chunk, for a layout, first / last stage sizes, the embedding and the loss counted
// in the even split, and the even split, worked out by hand from Megatron's get_layer_offset /
// get_num_layers_to_build / get_transformer_layer_offset; and the splits Megatron refuses.
#include <QtTest>

#include "core/model_shape.h"
#include "core/pipeline_layout.h"
#include "core/recipe_json.h"

using namespace rs;
using namespace Qt::StringLiterals;

namespace {

// A recipe: 8 layers unless the patch says otherwise.
Recipe recipeOf(const QByteArray& patch)
{
    nlohmann::json j
        = nlohmann::json::parse(R"({"num_layers": 8, "hidden_size": 64, "num_attention_heads": 4})");
    j.merge_patch(nlohmann::json::parse(patch.toStdString()));
    return recipeFromJson(j, "case");
}

// A stage as "E{0-1}{4-5}L m1": 'E' where it builds the embedding, each chunk's layers in braces (a range
// each where they follow one another), 'L' where it builds the loss, its MTP layers.
QString describe(const PipelineStage& s, int chunks)
{
    QString out = s.first ? QStringLiteral("E") : QString();
    for (int v = 0; v < chunks; ++v) {
        QStringList ranges;
        int start = -1, last = -2;
        for (size_t i = 0; i < s.layers.size(); ++i) {
            if (s.chunk[i] != v)
                continue;
            if (s.layers[i] != last + 1) {
                if (start >= 0)
                    ranges << QStringLiteral("%1-%2").arg(start).arg(last);
                start = s.layers[i];
            }
            last = s.layers[i];
        }
        if (start >= 0)
            ranges << QStringLiteral("%1-%2").arg(start).arg(last);
        out += u'{' + ranges.join(u',') + u'}';
    }
    if (s.last)
        out += u'L';
    if (s.mtp_layers > 0)
        out += QStringLiteral(" m%1").arg(s.mtp_layers);
    return out;
}

} // namespace

class TestPipelineLayout : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesTheStringForm_data();
    void parsesTheStringForm();
    void refusesWhatIsNoLayout_data();
    void refusesWhatIsNoLayout();
    void readsTheListForm_data();
    void readsTheListForm();
    void stageLayers_data();
    void stageLayers();
    void splitProblems_data();
    void splitProblems();
};

void TestPipelineLayout::parsesTheStringForm_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("stages"); // the unrolled stages, joined by '|'

    const QString t4 = QStringLiteral("tttt|");
    // Bridge's recipes (recipes-067f987d.json): DeepSeek-V3 on GB300 / VR200, on H100, Kimi-K2 on H100, Llama
    // 3 70B, Qwen3-Next.
    QTest::newRow("Et*4|(t*4|)*14tmL") << "Et*4|(t*4|)*14tmL" << u"Etttt|"_s + t4.repeated(14) + u"tmL"_s;
    QTest::newRow("Et*4|(tttt|)*14tmL") << "Et*4|(tttt|)*14tmL" << u"Etttt|"_s + t4.repeated(14) + u"tmL"_s;
    QTest::newRow("Et|(tt|)*30mL") << "Et|(tt|)*30mL" << u"Et|"_s + u"tt|"_s.repeated(30) + u"mL"_s;
    QTest::newRow("Et|(tt|)*30L") << "Et|(tt|)*30L" << u"Et|"_s + u"tt|"_s.repeated(30) + u"L"_s;
    QTest::newRow("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL")
        << "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"
        << u"Ett|"_s + u"tt|"_s.repeated(34) + u"ttt|"_s + u"tt|"_s.repeated(3) + u"tL"_s;
    QTest::newRow("Et*4|(t*7|)*5t*8|tmL")
        << "Et*4|(t*7|)*5t*8|tmL" << u"Etttt|"_s + u"ttttttt|"_s.repeated(5) + u"tttttttt|tmL"_s;
    // GLM-5.2's: written out, with stages that hold nothing.
    QTest::newRow("empty stages") << "Et|t||tttt|L"
                                  << "Et|t||tttt|L";
    // TransformerConfig's docstring: 'E|(tt|)*2,(t|)*4,mL' is PP 2 x VPP 4.
    QTest::newRow("docstring") << "E|(tt|)*2,(t|)*4,mL"
                               << "E|tt|tt|t|t|t|t|mL";
    // What the two substitutions do beyond that: a repeat inside parentheses, a count of 0, leading zeros, a
    // repeated '|', commas anywhere; a layer kind dropped by "*0" is never looked at.
    QTest::newRow("repeat inside parentheses") << "E(t*2)*3L"
                                               << "EttttttL";
    QTest::newRow("count 0") << "Et*0|tL"
                             << "E|tL";
    QTest::newRow("leading zero") << "Et*02L"
                                  << "EttL";
    QTest::newRow("repeated pipe") << "E|*3tL"
                                   << "E|||tL";
    QTest::newRow("commas") << "E,t,,t|t,L"
                            << "Ett|tL";
    QTest::newRow("dropped by *0") << "Ex*0tL"
                                   << "EtL";
    QTest::newRow("a group dropped by *0") << "E(xyz)*0tL"
                                           << "EtL";
}

void TestPipelineLayout::parsesTheStringForm()
{
    QFETCH(QString, text);
    QFETCH(QString, stages);
    const PipelineLayout layout = parsePipelineLayout(text.toStdString());
    QCOMPARE(QString::fromStdString(pipelineLayoutText(layout)), stages);
    // The string form reads back to the same stages.
    QCOMPARE(parsePipelineLayout(pipelineLayoutText(layout)).stages, layout.stages);
}

void TestPipelineLayout::refusesWhatIsNoLayout_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");

    QTest::newRow("unknown kind")
        << "Et|tX|L"
        << "'X' is not a layer of a pipeline layout (stage 1 of 'Et|tX|L' once unrolled: "
           "'tX...'); allowed: E (the embedding), t (a decoder layer), m (an MTP layer), "
           "L (the loss), '|' between stages, X*N and (...)*N to repeat, ',' for "
           "readability";
    QTest::newRow("blank") << "Et |tL"
                           << "' ' is not a layer";
    QTest::newRow("parentheses without a count") << "E(t)L"
                                                 << "'(' is not a layer";
    // Python's regular expression does not unroll nested parentheses: "((tt)*2)*3" leaves "(tt(tt)))".
    QTest::newRow("nested parentheses") << "((tt)*2)*3"
                                        << "'(' is not a layer";
    QTest::newRow("empty parentheses") << "E()*3L"
                                       << "'(' is not a layer";
    QTest::newRow("two counts") << "Et*2*3L"
                                << "'*' is not a layer";
    QTest::newRow("star without a count") << "Et*L"
                                          << "'*' is not a layer";
    QTest::newRow("non-ASCII") << "Etéé|L"
                               << "'é' is not a layer";
    QTest::newRow("empty") << ""
                           << "holds no layer";
    QTest::newRow("stages without layers") << "||"
                                           << "holds no layer";
    QTest::newRow("too many") << "Et*999999999L"
                              << "repeats to more than 262144 layers";
    QTest::newRow("too many groups") << "E(tttt)*99999L"
                                     << "repeats to more than 262144 layers";
}

void TestPipelineLayout::refusesWhatIsNoLayout()
{
    QFETCH(QString, text);
    QFETCH(QString, message);
    try {
        parsePipelineLayout(text.toStdString());
        QFAIL("no PipelineLayoutError");
    } catch (const PipelineLayoutError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
    }
}

void TestPipelineLayout::readsTheListForm_data()
{
    QTest::addColumn<QByteArray>("list"); // JSON, as the recipe reader takes it
    QTest::addColumn<QString>("stages"); // the string form it is kept as; or "error: ..."

    QTest::newRow("TransformerConfig's docstring")
        << QByteArray(R"([["embedding", "decoder"], ["decoder", "decoder", "decoder", "loss"]])")
        << "Et|tttL";
    QTest::newRow("names stripped, any case")
        << QByteArray(R"([[" Embedding\t", "DECODER"], ["Decoder", "mtp", "LOSS "]])") << "Et|tmL";
    QTest::newRow("an empty stage") << QByteArray(R"([["embedding"], [], ["decoder", "loss"]])") << "E||tL";
    QTest::newRow("encoder") << QByteArray(R"([["embedding", "encoder"], ["loss"]])")
                             << "error: 'encoder' layers are not supported in a pipeline layout";
    QTest::newRow("not a layer") << QByteArray(R"([["embedding", "attention"], ["loss"]])")
                                 << "error: stage 0: 'attention' is not a layer of a pipeline layout";
    QTest::newRow("no layers") << QByteArray(R"([[], []])") << "error: holds no layer";
    QTest::newRow("no stages") << QByteArray(R"([])") << "error: holds no layer";
}

void TestPipelineLayout::readsTheListForm()
{
    QFETCH(QByteArray, list);
    QFETCH(QString, stages);
    Recipe r;
    try {
        setRecipeField(
            r, "pipeline_model_parallel_layout", nlohmann::json::parse(list.toStdString()), "test");
        QVERIFY2(!stages.startsWith(u"error: "_s), qPrintable(stages));
        QCOMPARE(QString::fromStdString(*r.pipeline_model_parallel_layout), stages);
    } catch (const RecipeError& e) {
        QVERIFY2(stages.startsWith(u"error: "_s), e.what());
        QCOMPARE(QString::fromStdString(e.field), u"pipeline_model_parallel_layout"_s);
        QVERIFY2(QString::fromStdString(e.message).contains(stages.mid(7)), e.what());
    }
}

void TestPipelineLayout::stageLayers_data()
{
    QTest::addColumn<QByteArray>("recipe"); // JSON patch on 8 layers
    QTest::addColumn<QStringList>("stages"); // describe() of each stage, 0 to PP - 1

    const auto L = [](std::initializer_list<const char*> s) {
        QStringList out;
        for (const char* x : s)
            out << QString::fromUtf8(x);
        return out;
    };
    // The even split: chunk v of stage p starts at v x (L / VPP) + p x (L / (PP x VPP)).
    QTest::newRow("even") << QByteArray(R"({"pipeline_model_parallel_size": 2})")
                          << L({ "E{0-3}", "{4-7}L" });
    QTest::newRow("even, interleaved")
        << QByteArray(R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2})")
        << L({ "E{0-1}{4-5}", "{2-3}{6-7}L" });
    QTest::newRow("even, MTP on the last stage")
        << QByteArray(R"({"pipeline_model_parallel_size": 2, "mtp_num_layers": 1})")
        << L({ "E{0-3}", "{4-7}L m1" });
    // A layout: stage i is chunk i / PP of rank i % PP; its decoder layers are the next in the flat order.
    QTest::newRow("layout, two stages a rank") << QByteArray(
        R"({"num_layers": 6, "pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Et|(tt|)*2,tL"})")
                                               << L({ "E{0-0}{3-4}", "{1-2}{5-5}L" });
    QTest::newRow("layout, stages of the embedding and the loss alone") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "E|tttt|tttt|L"})")
                                                                        << L({ "E{}{4-7}", "{0-3}{}L" });
    QTest::newRow("layout, uneven ranks") << QByteArray(
        R"({"pipeline_model_parallel_size": 3, "pipeline_model_parallel_layout": "Etttttt|t|tmL", "mtp_num_layers": 1})")
                                          << L({ "E{0-5}", "{6-6}", "{7-7}L m1" });
    // DeepSeek-V3 on 1024 H100s, "Et|(tt|)*30mL" with PP 8: 32 stages, 4 a rank. Rank 0 holds stages 0, 8, 16
    // and 24: layer 0, then 1 + 7 x 2 = 15 and 16, 31 and 32, 47 and 48.
    QTest::newRow("DeepSeek-V3 Et|(tt|)*30mL") << QByteArray(
        R"({"num_layers": 61, "pipeline_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "Et|(tt|)*30mL", "mtp_num_layers": 1})")
                                               << L({ "E{0-0}{15-16}{31-32}{47-48}",
                                                      "{1-2}{17-18}{33-34}{49-50}",
                                                      "{3-4}{19-20}{35-36}{51-52}",
                                                      "{5-6}{21-22}{37-38}{53-54}",
                                                      "{7-8}{23-24}{39-40}{55-56}",
                                                      "{9-10}{25-26}{41-42}{57-58}",
                                                      "{11-12}{27-28}{43-44}{59-60}",
                                                      "{13-14}{29-30}{45-46}{}L m1" });
    // The list form is the same split.
    QTest::newRow("layout, list form") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": [["embedding", "decoder", "decoder"], ["decoder"], ["decoder", "decoder", "decoder"], ["decoder", "decoder", "loss"]]})")
                                       << L({ "E{0-1}{3-5}", "{2-2}{6-7}L" });
    // First / last stage sizes: the others split the rest (GLM-4.5-Air: 46 layers, 11 first and last).
    QTest::newRow("first and last") << QByteArray(
        R"({"num_layers": 46, "pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 11, "num_layers_in_last_pipeline_stage": 11})")
                                    << L({ "E{0-10}", "{11-22}", "{23-34}", "{35-45}L" });
    QTest::newRow("last only") << QByteArray(
        R"({"num_layers": 88, "pipeline_model_parallel_size": 8, "num_layers_in_last_pipeline_stage": 4})")
                               << L({ "E{0-11}", "{12-23}", "{24-35}", "{36-47}", "{48-59}", "{60-71}",
                                      "{72-83}", "{84-87}L" });
    // With virtual stages: each chunk of the first stage 2 / 2, of the last 2 / 2, of a middle one (12 / 2) /
    // 2; a virtual stage holds 1 + 6 + 1 = 8 layers.
    QTest::newRow("first and last, interleaved") << QByteArray(
        R"({"num_layers": 16, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2, "num_layers_in_last_pipeline_stage": 2})")
                                                 << L({ "E{0-0}{8-8}", "{1-3}{9-11}", "{4-6}{12-14}",
                                                        "{7-7}{15-15}L" });
    // The embedding and the loss counted as layers (Llama 3.1 405B: 126 + 2 over PP 16): the first and the
    // last stage one decoder layer fewer.
    QTest::newRow("embedding and loss in the split") << QByteArray(
        R"({"num_layers": 14, "pipeline_model_parallel_size": 4, "account_for_embedding_in_pipeline_split": true, "account_for_loss_in_pipeline_split": true})")
                                                     << L({ "E{0-2}", "{3-6}", "{7-10}", "{11-13}L" });
    // ... with virtual stages: 16 in 4 x 2 chunks of 2; the first chunk of rank 0 holds the embedding and one
    // layer, the last chunk of rank 3 one layer and the loss; offsets one less after the embedding.
    QTest::newRow("embedding and loss in the split, interleaved") << QByteArray(
        R"({"num_layers": 14, "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true, "account_for_loss_in_pipeline_split": true})")
                                                                  << L({ "E{0-0}{7-8}", "{1-2}{9-10}",
                                                                         "{3-4}{11-12}", "{5-6}{13-13}L" });
    QTest::newRow("embedding only in the split") << QByteArray(
        R"({"num_layers": 7, "pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})")
                                                 << L({ "E{0-2}", "{3-6}L" });
    // A hybrid stack takes its layers from its pattern: '|' segments, or first / last sizes without them.
    QTest::newRow("hybrid segments") << QByteArray(
        R"({"num_layers": 10, "hybrid_layer_pattern": "M*M|*M*|M*|M*", "pipeline_model_parallel_size": 2})")
                                     << L({ "E{0-2}{6-7}", "{3-5}{8-9}L" });
    QTest::newRow("hybrid, first and last") << QByteArray(
        R"({"hybrid_layer_pattern": "M*M*M*M*", "pipeline_model_parallel_size": 3, "num_layers_in_first_pipeline_stage": 2, "num_layers_in_last_pipeline_stage": 3})")
                                            << L({ "E{0-1}", "{2-4}", "{5-7}L" });
}

void TestPipelineLayout::stageLayers()
{
    QFETCH(QByteArray, recipe);
    QFETCH(QStringList, stages);
    const Recipe r = recipeOf(recipe);
    const ParallelSizes p = parallelSizes(r);
    QCOMPARE(p.pp, int(stages.size()));
    QVERIFY2(pipelineSplitProblem(r).empty(), pipelineSplitProblem(r).c_str());
    const std::vector<PipelineStage> all = pipelineStages(r);
    QCOMPARE(all.size(), size_t(p.pp));
    std::vector<int> seen(size_t(r.num_layers), 0);
    int most = 0;
    for (int s = 0; s < p.pp; ++s) {
        QCOMPARE(describe(all[size_t(s)], p.vpp), stages[s]);
        // One stage alone is the same as in the pass over all of them.
        const PipelineStage one = pipelineStage(r, s);
        QCOMPARE(one.layers, all[size_t(s)].layers);
        QCOMPARE(one.chunk, all[size_t(s)].chunk);
        std::vector<int> perChunk(size_t(p.vpp), 0);
        for (size_t i = 0; i < one.layers.size(); ++i) {
            ++seen[size_t(one.layers[i])];
            most = std::max(most, ++perChunk[size_t(one.chunk[i])]);
        }
    }
    // Every layer on exactly one chunk.
    for (size_t layer = 0; layer < seen.size(); ++layer)
        QVERIFY2(seen[layer] == 1,
            qPrintable(QStringLiteral("layer %1 on %2 chunks").arg(layer).arg(seen[layer])));
    QCOMPARE(largestChunkLayers(r), most);
}

void TestPipelineLayout::splitProblems_data()
{
    QTest::addColumn<QByteArray>("recipe");
    QTest::addColumn<QString>("problem"); // in pipelineSplitProblem's text; "" where there is none

    // 78 layers over 19 stages: the even split put 4 on each and left 2 out; Megatron asserts (RT28).
    // GLM-5.2's layout on 608 H100s places them all (6 on the first stage).
    QTest::newRow("78 over 19")
        << QByteArray(R"({"num_layers": 78, "pipeline_model_parallel_size": 19})")
        << "layer 76 of 78 is on no pipeline chunk: num_layers does not split evenly over "
           "pipeline_model_parallel_size x virtual_pipeline_model_parallel_size (RT28)";
    QTest::newRow("78 over 19 with GLM-5.2's layout") << QByteArray(
        R"({"num_layers": 78, "pipeline_model_parallel_size": 19, "mtp_num_layers": 1, "pipeline_model_parallel_layout": "Etttttt|(tttt|)*17,ttttmL"})")
                                                      << "";
    QTest::newRow("stages PP does not divide")
        << QByteArray(
               R"({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ettt|ttt|ttL"})")
        << "the layout's 3 stages are no multiple of pipeline_model_parallel_size=2 (R47, M10)";
    QTest::newRow("virtual stages the layout does not have") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Etttt|ttttL"})")
                                                             << "virtual_pipeline_model_parallel_size=2 is "
                                                                "not the layout's 1 stages per pipeline rank "
                                                                "(R48)";
    QTest::newRow("decoder layers not num_layers") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ettt|ttttL"})")
                                                   << "the layout holds 7 decoder layers, num_layers=8 (R49)";
    QTest::newRow("loss first") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "pipeline_model_parallel_layout": "Ltttt|ttttE"})")
                                << "the embedding once, first, and the loss once, last (R49)";
    QTest::newRow("middle layers the middle stages do not split")
        << QByteArray(R"({"pipeline_model_parallel_size": 4, "num_layers_in_first_pipeline_stage": 3})")
        << "(R50)";
    QTest::newRow("first and last overlap") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 6, "num_layers_in_last_pipeline_stage": 6})")
                                            << "on more than one chunk";
    // A size no model of that many layers has is refused before a stage is filled from it (not 2e9 layers).
    QTest::newRow("first stage larger than the model") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 1000, "num_layers_in_first_pipeline_stage": 2000000000})")
                                                       << "a first / last stage size of 2000000000 for 8 "
                                                          "layers (R50)";
    QTest::newRow("no middle stage, interleaved") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 4})")
                                                  << "(RT29)";
    QTest::newRow("embedding counted, not divisible") << QByteArray(
        R"({"pipeline_model_parallel_size": 2, "account_for_embedding_in_pipeline_split": true})")
                                                      << "(R51)";
    QTest::newRow("even, divisible") << QByteArray(R"({"pipeline_model_parallel_size": 4})") << "";
}

void TestPipelineLayout::splitProblems()
{
    QFETCH(QByteArray, recipe);
    QFETCH(QString, problem);
    const std::string found = pipelineSplitProblem(recipeOf(recipe));
    if (problem.isEmpty())
        QVERIFY2(found.empty(), found.c_str());
    else
        QVERIFY2(QString::fromStdString(found).contains(problem), found.c_str());
}

QTEST_GUILESS_MAIN(TestPipelineLayout)
#include "tst_pipeline_layout.moc"
