// SPDX-License-Identifier: Apache-2.0
// The recipe editor as a user drives it: a form edit updates the findings (and marks the field), a fix-it
// clears its finding, the override / flag / JSON text and the form stay in step both ways, and a bad edit
// is refused with a message naming the field.
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextCursor>

#include "core/recipe_json.h"
#include "editorpage.h"
#include "findingspanel.h"
#include "models/findingsmodel.h"
#include "models/recipediffmodel.h"
#include "models/recomputelabelsmodel.h"
#include "presets.h"
#include "recipedocument.h"
#include "recipeform.h"
#include "recipetextview.h"

using namespace rs;
using namespace rs::ui;

namespace {

bool hasFinding(const FindingsModel* model, const QString& rule)
{
    for (int row = 0; row < model->rowCount(); ++row) {
        if (model->index(row, FindingsModel::RuleColumn).data().toString() == rule)
            return true;
    }
    return false;
}

int findingRow(const FindingsModel* model, const QString& rule)
{
    for (int row = 0; row < model->rowCount(); ++row) {
        if (model->index(row, FindingsModel::RuleColumn).data().toString() == rule)
            return row;
    }
    return -1;
}

int labelRow(const RecomputeLabelsModel* model, const QString& label)
{
    return int(model->labels().indexOf(label));
}

} // namespace

class TestRecipeEditor : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_document = new RecipeDocument;
        m_page = new EditorPage(m_document);
    }
    void cleanup()
    {
        delete m_page;
        delete m_document;
    }

    void presetsAreCompiledIn()
    {
        const QStringList names = presetNames();
        QVERIFY2(names.contains(QStringLiteral("dense-gqa-swiglu")), qPrintable(names.join(u',')));
        QVERIFY(names.contains(QStringLiteral("moonlight-mla-moe")));
        QVERIFY(names.contains(QStringLiteral("gpt-unfused")));
        for (const QString& n : names)
            QVERIFY2(!presetRecipe(n).name.empty(), qPrintable(n));
    }

    // Unchecking moe_grouped_gemm on an MoE recipe recomputing moe_act: R12 appears, the field is marked,
    // and its fix-it (set moe_grouped_gemm=true) clears it again.
    void editUpdatesFindingsAndFixItClearsIt()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        FindingsModel* findings = m_page->findings()->model();
        QVERIFY(!hasFinding(findings, QStringLiteral("R12")));
        QCOMPARE(m_page->form()->marking("moe_grouped_gemm"), QString());

        auto* grouped = qobject_cast<QCheckBox*>(m_page->form()->editor("moe_grouped_gemm"));
        QVERIFY(grouped);
        QVERIFY(grouped->isChecked());
        grouped->click(); // a user's click, through the signal the form listens to
        QVERIFY(!m_document->recipe().moe_grouped_gemm);
        const int row = findingRow(findings, QStringLiteral("R12"));
        QVERIFY2(row >= 0, "R12 (moe_act needs moe_grouped_gemm) expected after the edit");
        QCOMPARE(
            findings->index(row, FindingsModel::SeverityColumn).data().toString(), QStringLiteral("error"));
        QVERIFY(findings->index(row, FindingsModel::MessageColumn)
                    .data()
                    .toString()
                    .contains(QStringLiteral("moe_grouped_gemm")));
        QVERIFY(!findings->index(row, FindingsModel::SourceColumn).data().toString().isEmpty());
        QCOMPARE(m_page->form()->marking("moe_grouped_gemm"), QStringLiteral("error"));
        QVERIFY(findings->data(findings->index(row, 0), FindingsModel::HasFixItRole).toBool());

        QVERIFY(m_page->findings()->applyFixIt(row));
        QVERIFY(!hasFinding(findings, QStringLiteral("R12")));
        QVERIFY(m_document->recipe().moe_grouped_gemm);
        QVERIFY(grouped->isChecked());
        QCOMPARE(m_page->form()->marking("moe_grouped_gemm"), QString());
    }

    // Checking a label in the checklist changes recompute_modules and the findings: mla_up_proj on a
    // dense model without MLA is R13, and the label shows it has no effect there.
    void labelChecklistEditsModules()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        RecomputeLabelsModel* labels = m_page->form()->labelsModel();
        const int row = labelRow(labels, QStringLiteral("mla_up_proj"));
        QVERIFY(row >= 0);
        QVERIFY(labels->index(row, 0).data(RecomputeLabelsModel::ExistsRole).toBool());
        QVERIFY(!labels->index(row, 0).data(RecomputeLabelsModel::HasEffectRole).toBool());
        QVERIFY(labels->setData(labels->index(row, 0), Qt::Checked, Qt::CheckStateRole));
        const auto& modules = m_document->recipe().recompute_modules;
        QVERIFY(modules.has_value());
        QVERIFY(std::find(modules->begin(), modules->end(), "mla_up_proj") != modules->end());
        QVERIFY(hasFinding(m_page->findings()->model(), QStringLiteral("R13")));
        QCOMPARE(m_page->form()->marking("recompute_modules"), QStringLiteral("error"));
        // and off again
        QVERIFY(labels->setData(labels->index(labelRow(labels, QStringLiteral("mla_up_proj")), 0),
            Qt::Unchecked, Qt::CheckStateRole));
        QVERIFY(!hasFinding(m_page->findings()->model(), QStringLiteral("R13")));
    }

    // A label only the main profile knows is marked as absent on the pinned profile.
    void labelsShowTheProfile()
    {
        Recipe r = presetRecipe(QStringLiteral("dense-gqa-swiglu"));
        r.profile = Profile::BridgePin;
        m_document->setRecipe(r);
        RecomputeLabelsModel* labels = m_page->form()->labelsModel();
        const int mhc = labelRow(labels, QStringLiteral("mhc"));
        QVERIFY(mhc >= 0);
        QVERIFY(!labels->index(mhc, 0).data(RecomputeLabelsModel::ExistsRole).toBool());
        r.profile = Profile::Main;
        m_document->setRecipe(r);
        QVERIFY(labels->index(labelRow(labels, QStringLiteral("mhc")), 0)
                    .data(RecomputeLabelsModel::ExistsRole)
                    .toBool());
    }

    void formEditReachesOverrideAndFlagText()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        auto* layers = qobject_cast<QSpinBox*>(m_page->form()->editor("num_layers"));
        QVERIFY(layers);
        layers->setValue(40);
        QCOMPARE(m_document->recipe().num_layers, 40);
        QVERIFY2(
            m_page->overridesView()->editor()->toPlainText().contains(QStringLiteral("model.num_layers=40")),
            qPrintable(m_page->overridesView()->editor()->toPlainText()));
        QVERIFY(m_page->flagsView()->editor()->toPlainText().contains(QStringLiteral("--num-layers 40")));
        QVERIFY(m_page->jsonView()->editor()->toPlainText().contains(QStringLiteral("\"num_layers\": 40")));
    }

    // The memory layout's fields (what the estimate and the worker's rank depend on) are form fields too:
    // an edit reaches the recipe and the JSON text.
    void memoryLayoutFieldReachesTheRecipe_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<int>("value"); // a spin box's value, or 1 = checked
        QTest::addColumn<QString>("json");
        QTest::addRow("data_parallel_size")
            << u"data_parallel_size"_qs << 4 << u"\"data_parallel_size\": 4"_qs;
        QTest::addRow("use_distributed_optimizer")
            << u"use_distributed_optimizer"_qs << 1 << u"\"use_distributed_optimizer\": true"_qs;
        QTest::addRow("grad_reduce_in_fp32")
            << u"grad_reduce_in_fp32"_qs << 1 << u"\"grad_reduce_in_fp32\": true"_qs;
        QTest::addRow("deallocate_pipeline_outputs")
            << u"deallocate_pipeline_outputs"_qs << 1 << u"\"deallocate_pipeline_outputs\": true"_qs;
    }
    void memoryLayoutFieldReachesTheRecipe()
    {
        QFETCH(QString, key);
        QFETCH(int, value);
        QFETCH(QString, json);
        Recipe r = presetRecipe(QStringLiteral("dense-gqa-swiglu"));
        r.data_parallel_size = 1;
        r.use_distributed_optimizer = r.grad_reduce_in_fp32 = r.deallocate_pipeline_outputs = false;
        m_document->setRecipe(r);
        QWidget* editor = m_page->form()->editor(key.toStdString());
        QVERIFY2(editor, qPrintable(key));
        if (auto* spin = qobject_cast<QSpinBox*>(editor))
            spin->setValue(value);
        else
            qobject_cast<QCheckBox*>(editor)->setChecked(value == 1);
        const Recipe& now = m_document->recipe();
        if (key == u"data_parallel_size"_qs)
            QCOMPARE(now.data_parallel_size, value);
        else if (key == u"use_distributed_optimizer"_qs)
            QVERIFY(now.use_distributed_optimizer);
        else if (key == u"grad_reduce_in_fp32"_qs)
            QVERIFY(now.grad_reduce_in_fp32);
        else
            QVERIFY(now.deallocate_pipeline_outputs);
        QVERIFY2(m_page->jsonView()->editor()->toPlainText().contains(json),
            qPrintable(m_page->jsonView()->editor()->toPlainText()));
    }

    // Issue 27: a hybrid stack is written in the form too: the pattern, the Mamba mixer's widths and the
    // GatedDeltaNet fields reach the recipe (the estimate reads them) and the JSON text; a list that does not
    // read is refused naming its own field.
    void hybridFieldReachesTheRecipe_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("typed"); // a line edit's text, or a spin box's value
        QTest::addColumn<QString>("json");
        QTest::addRow("hybrid_layer_pattern")
            << u"hybrid_layer_pattern"_qs << u"MEM*EM-"_qs << u"\"hybrid_layer_pattern\": \"MEM*EM-\""_qs;
        QTest::addRow("mamba_num_heads")
            << u"mamba_num_heads"_qs << u"48"_qs << u"\"mamba_num_heads\": 48"_qs;
        QTest::addRow("mamba_state_dim")
            << u"mamba_state_dim"_qs << u"64"_qs << u"\"mamba_state_dim\": 64"_qs;
        QTest::addRow("linear_attention_freq")
            << u"linear_attention_freq"_qs << u"[1,1,1,0]"_qs << u"\"linear_attention_freq\": ["_qs;
        QTest::addRow("linear_num_value_heads")
            << u"linear_num_value_heads"_qs << u"16"_qs << u"\"linear_num_value_heads\": 16"_qs;
    }
    void hybridFieldReachesTheRecipe()
    {
        QFETCH(QString, key);
        QFETCH(QString, typed);
        QFETCH(QString, json);
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        QWidget* editor = m_page->form()->editor(key.toStdString());
        QVERIFY2(editor, qPrintable(key));
        if (auto* spin = qobject_cast<QSpinBox*>(editor)) {
            spin->setValue(typed.toInt());
        } else {
            auto* line = qobject_cast<QLineEdit*>(editor);
            QVERIFY2(line, qPrintable(key));
            line->clear();
            QTest::keyClicks(line, typed);
        }
        const Recipe& now = m_document->recipe();
        if (key == u"hybrid_layer_pattern"_qs)
            QCOMPARE(QString::fromStdString(now.hybrid_layer_pattern.value_or("")), typed);
        else if (key == u"mamba_num_heads"_qs)
            QCOMPARE(now.mamba_num_heads.value_or(0), typed.toInt());
        else if (key == u"mamba_state_dim"_qs)
            QCOMPARE(now.mamba_state_dim, typed.toInt());
        else if (key == u"linear_attention_freq"_qs)
            QCOMPARE(now.linear_attention_freq, (std::vector<int> { 1, 1, 1, 0 }));
        else
            QCOMPARE(now.linear_num_value_heads, typed.toInt());
        QVERIFY2(m_page->jsonView()->editor()->toPlainText().contains(json),
            qPrintable(m_page->jsonView()->editor()->toPlainText()));
    }
    void badLayerListNamesItsField()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        auto* line = qobject_cast<QLineEdit*>(m_page->form()->editor("linear_attention_freq"));
        QVERIFY(line);
        QSignalSpy rejected(m_page->form(), &RecipeForm::editRejected);
        QTest::keyClicks(line, u"[1,x]"_qs);
        QVERIFY(!rejected.isEmpty());
        QVERIFY2(
            rejected.last().at(0).toString().startsWith(u"linear_attention_freq: 'x' is not an integer"_qs),
            qPrintable(rejected.last().at(0).toString()));
        QVERIFY(m_document->recipe().linear_attention_freq.empty());
    }

    void overrideTextEditReachesForm_data()
    {
        QTest::addColumn<QString>("find");
        QTest::addColumn<QString>("replace");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("expected");
        QTest::addRow("int") << QStringLiteral("model.num_layers=32") << QStringLiteral("model.num_layers=48")
                             << QStringLiteral("num_layers") << QStringLiteral("48");
        QTest::addRow("list") << QStringLiteral("'model.recompute_modules=[core_attn]'")
                              << QStringLiteral("'model.recompute_modules=[core_attn,mlp]'")
                              << QStringLiteral("recompute_modules") << QStringLiteral("core_attn,mlp");
        QTest::addRow("repr list") << QStringLiteral("'model.recompute_modules=[core_attn]'")
                                   << QStringLiteral("\"model.recompute_modules=['mlp']\"")
                                   << QStringLiteral("recompute_modules") << QStringLiteral("mlp");
    }

    // Editing the override text moves the form: the spin box, or the checklist.
    void overrideTextEditReachesForm()
    {
        QFETCH(QString, find);
        QFETCH(QString, replace);
        QFETCH(QString, key);
        QFETCH(QString, expected);
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        QPlainTextEdit* text = m_page->overridesView()->editor();
        QString t = text->toPlainText();
        QVERIFY2(t.contains(find), qPrintable(t));
        t.replace(find, replace);
        text->setPlainText(t); // emits textChanged, as typing does
        QCOMPARE(m_page->overridesView()->errorText(), QString());
        if (key == QLatin1String("num_layers")) {
            QCOMPARE(
                qobject_cast<QSpinBox*>(m_page->form()->editor("num_layers"))->value(), expected.toInt());
        } else {
            QCOMPARE(m_page->form()->labelsModel()->checkedLabels().join(u','), expected);
        }
        // the other views follow
        QVERIFY(m_page->flagsView()->editor()->toPlainText().contains(expected.section(u',', -1)));
    }

    void badOverrideIsRefusedNamingTheField()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        const Recipe before = m_document->recipe();
        QPlainTextEdit* text = m_page->overridesView()->editor();
        text->setPlainText(text->toPlainText() + QStringLiteral(" \\\nmodel.num_layerz=3"));
        const QString error = m_page->overridesView()->errorText();
        QVERIFY2(error.contains(QStringLiteral("num_layerz")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("num_layers")), qPrintable(error)); // the nearest known key
        QVERIFY(m_document->recipe() == before);
    }

    void unknownLabelGetsDidYouMean_data()
    {
        QTest::addColumn<QString>("label");
        QTest::addColumn<QString>("meant");
        QTest::newRow("core_atn") << QStringLiteral("core_atn") << QStringLiteral("core_attn");
        QTest::newRow("moe_ac") << QStringLiteral("moe_ac") << QStringLiteral("moe_act");
        QTest::newRow("mla_upproj") << QStringLiteral("mla_upproj") << QStringLiteral("mla_up_proj");
        QTest::newRow("layer_norm") << QStringLiteral("layer_norm") << QStringLiteral("layernorm");
    }
    void unknownLabelGetsDidYouMean()
    {
        QFETCH(QString, label);
        QFETCH(QString, meant);
        m_document->setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        // typed into the JSON text, as a user would
        QString error;
        QVERIFY(m_document->setField("recompute_granularity", "selective", nullptr, &error));
        QVERIFY(m_document->setField(
            "recompute_modules", nlohmann::json::array({ label.toStdString() }), nullptr, &error));
        const FindingsModel* findings = m_page->findings()->model();
        const int row = findingRow(findings, QStringLiteral("R11"));
        QVERIFY(row >= 0);
        const QString message = findings->index(row, FindingsModel::MessageColumn).data().toString();
        const QString expected = QStringLiteral("did you mean '%1' for '%2'?").arg(meant, label);
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY(findings->index(row, FindingsModel::MessageColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(expected.toHtmlEscaped()));
        // Megatron's own words stay first
        QVERIFY(message.startsWith(QStringLiteral("Invalid choices for recompute_modules")));
        // Fix applies what the hint says (issue 29 item 5): the candidate stays a candidate.
        QVERIFY(m_page->findings()->applyFixIt(row));
        QCOMPARE(m_document->recipe().recompute_modules.value_or(std::vector<std::string> {}),
            std::vector<std::string> { meant.toStdString() });
        QVERIFY(!hasFinding(findings, QStringLiteral("R11")));
    }

    // Issue 29 item 4: text being fixed in the overrides or flags view (a bad key beside a valid
    // hidden_size) is the user's work; a form edit meanwhile leaves it as it is and says so, Revert takes the
    // recipe's text, and Undo brings the typed text back.
    void textBeingFixedSurvivesAFormEdit_data()
    {
        QTest::addColumn<int>("view"); // 0 overrides, 1 flags
        QTest::addColumn<QString>("typed");
        QTest::newRow("overrides") << 0
                                   << QStringLiteral(" \\\nmodel.num_layerz=3 \\\nmodel.hidden_size=1024");
        QTest::newRow("flags") << 1 << QStringLiteral(" \\\n--num-layerz 3 \\\n--hidden-size 1024");
    }
    void textBeingFixedSurvivesAFormEdit()
    {
        QFETCH(int, view);
        QFETCH(QString, typed);
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        RecipeTextView* v = view == 0 ? m_page->overridesView() : m_page->flagsView();
        m_page->textTabs()->setCurrentWidget(v);
        QPlainTextEdit* text = v->editor();
        QTextCursor end(text->document());
        end.movePosition(QTextCursor::End);
        end.insertText(typed); // typed, as a user types: undoable
        const QString mine = text->toPlainText();
        QVERIFY2(!v->errorText().isEmpty(), "the typed text must not read");
        // A form field changes meanwhile.
        auto* seq = qobject_cast<QSpinBox*>(m_page->form()->editor("seq_length"));
        QVERIFY(seq);
        seq->setValue(seq->value() / 2);
        QCOMPARE(m_document->recipe().seq_length, seq->value());
        QCOMPARE(text->toPlainText(), mine); // nothing the user typed is lost
        QVERIFY(v->heldBack());
        QVERIFY2(
            v->statusLabel()->text().contains(QStringLiteral("kept")), qPrintable(v->statusLabel()->text()));
        // Revert takes the recipe's text (the form's seq_length in it); Undo brings the typed text back.
        v->revert();
        QVERIFY(v->errorText().isEmpty());
        QVERIFY(!v->heldBack());
        QVERIFY(text->toPlainText().contains(QString::number(seq->value())));
        text->undo();
        QCOMPARE(text->toPlainText(), mine);
    }

    void textThatDoesNotReadIsFlaggedAndNotCopied_data()
    {
        QTest::addColumn<int>("view"); // 0 overrides, 1 flags, 2 JSON
        QTest::addColumn<QString>("bad");
        QTest::newRow("JSON") << 2 << QStringLiteral("{ \"num_layers\": 3, ");
        QTest::newRow("overrides") << 0 << QStringLiteral("model.num_layerz=3");
        QTest::newRow("flags") << 1 << QStringLiteral("--num-layerz 3");
    }
    void textThatDoesNotReadIsFlaggedAndNotCopied()
    {
        QFETCH(int, view);
        QFETCH(QString, bad);
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        const Recipe before = m_document->recipe();
        RecipeTextView* text = view == 0 ? m_page->overridesView()
            : view == 1                  ? m_page->flagsView()
                                         : m_page->jsonView();
        m_page->textTabs()->setCurrentWidget(text);
        text->editor()->setPlainText(bad);
        // the form keeps the last good recipe, and the view says so plainly
        QVERIFY(m_document->recipe() == before);
        QVERIFY(!text->errorText().isEmpty());
        QVERIFY(text->errorText().contains(QStringLiteral("does not read as a recipe")));
        QVERIFY(!text->statusLabel()->styleSheet().isEmpty());
        QVERIFY(!text->revertButton()->isHidden());
        // Copy hands out the recipe the form holds, not the bad text, and says so
        QApplication::clipboard()->clear();
        const QString copied = text->copyToClipboard();
        QCOMPARE(copied, RecipeTextView::textFor(before, text->syntax()));
        QCOMPARE(QApplication::clipboard()->text(), copied);
        QVERIFY(text->statusLabel()->text().contains(QStringLiteral("Copied the last recipe")));
        // Revert puts the good text back
        text->revert();
        QCOMPARE(text->editor()->toPlainText(), copied);
        QVERIFY(text->errorText().isEmpty());
        QVERIFY(text->revertButton()->isHidden());
        QCOMPARE(text->copyToClipboard(), copied);
    }

    // Issue 29 item 7: a whole Megatron-LM line pasted into the flags view is another job: it takes its own
    // name (never the recipe open before) and the Megatron-LM rules (M1-M12).
    void aWholeLinePastedIntoTheFlagsIsANewJob()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        m_document->setInputFormat(InputFormat::Json);
        m_page->textTabs()->setCurrentWidget(m_page->flagsView());
        m_page->flagsView()->editor()->setPlainText(QStringLiteral(
            "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
            "--num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 "
            "--global-batch-size 64 --bf16"));
        QVERIFY2(m_page->flagsView()->errorText().isEmpty(), qPrintable(m_page->flagsView()->errorText()));
        QCOMPARE(m_document->recipe().num_layers, 32);
        QCOMPARE(m_document->inputFormat(), InputFormat::MegatronFlags);
        QCOMPARE(QString::fromStdString(m_document->recipe().name),
            QStringLiteral("pretrain_gpt.py, 32 layers, hidden 4096"));
        // An edit of the flags alone keeps the job and its name.
        m_page->flagsView()->editor()->setPlainText(m_page->flagsView()->editor()->toPlainText().replace(
            QStringLiteral("--num-layers 32"), QStringLiteral("--num-layers 16")));
        QCOMPARE(m_document->recipe().num_layers, 16);
        QCOMPARE(QString::fromStdString(m_document->recipe().name),
            QStringLiteral("pretrain_gpt.py, 32 layers, hidden 4096"));
    }

    void flagTextEditReachesForm()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("gpt-unfused")));
        QPlainTextEdit* text = m_page->flagsView()->editor();
        QString t = text->toPlainText();
        QVERIFY2(t.contains(QStringLiteral("--seq-length 2048")), qPrintable(t));
        t.replace(QStringLiteral("--seq-length 2048"), QStringLiteral("--seq-length 4096"));
        text->setPlainText(t);
        QCOMPARE(m_page->flagsView()->errorText(), QString());
        QCOMPARE(m_document->recipe().seq_length, 4096);
        QCOMPARE(qobject_cast<QSpinBox*>(m_page->form()->editor("seq_length"))->value(), 4096);
        // the name has no flag and is kept
        QCOMPARE(m_document->recipe().name, presetRecipe(QStringLiteral("gpt-unfused")).name);
    }

    // The explicit [] control has no Megatron-LM spelling: the flag view says so instead of writing flags.
    void controlHasNoFlagSpelling()
    {
        m_document->setRecipe(RecipeDocument::controlFor(presetRecipe(QStringLiteral("gpt-unfused"))));
        QVERIFY(!m_page->flagsView()->errorText().isEmpty());
        QVERIFY(m_page->overridesView()->editor()->toPlainText().contains(
            QStringLiteral("model.recompute_modules=[]")));
    }

    void diffAgainstControl()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        const auto& diff = m_page->diffModel()->differences();
        QCOMPARE(int(diff.size()), 1);
        QCOMPARE(QString::fromStdString(diff.front().key), QStringLiteral("recompute_modules"));
        QCOMPARE(QString::fromStdString(diff.front().control), QStringLiteral("[]"));
        QCOMPARE(QString::fromStdString(diff.front().recipe), QStringLiteral("[\"moe_act\"]"));
    }

    void rejectedFormEditKeepsTheRecipe()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("dense-gqa-swiglu")));
        QString error;
        QVERIFY(!m_document->setField("fp8_recipe", "quarterwise", nullptr, &error));
        QVERIFY2(error.contains(QStringLiteral("fp8_recipe")), qPrintable(error));
        QCOMPARE(QString::fromStdString(m_document->recipe().fp8_recipe), QStringLiteral("delayed"));
    }

    void saveAndLoadRoundTrip()
    {
        m_document->setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("saved.recipe.json"));
        QString error;
        QVERIFY2(m_document->save(path, &error), qPrintable(error));
        QVERIFY(!m_document->isModified());
        RecipeDocument other;
        QVERIFY2(other.load(path, &error), qPrintable(error));
        QVERIFY(other.recipe() == m_document->recipe());
    }

private:
    RecipeDocument* m_document = nullptr;
    EditorPage* m_page = nullptr;
};

QTEST_MAIN(TestRecipeEditor)
#include "tst_recipeeditor.moc"
