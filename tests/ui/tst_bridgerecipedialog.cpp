// SPDX-License-Identifier: Apache-2.0
// File → New from Bridge recipe… (ui/bridgerecipedialog.h), offscreen: the search narrows the list to the
// recipes whose names hold every word, the chosen recipe says what its job is (the data-parallel size its
// GPUs give), a world its layout does not divide cannot be accepted and says why, and accepting hands the
// job Bridge's setup() would run to the main window as a Bridge-overrides recipe.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QDialogButtonBox>
#include <QListView>
#include <QPushButton>
#include <QTimer>
#include <QtTest>

#include "bridgerecipedialog.h"
#include "mainwindow.h"
#include "recipedocument.h"

using namespace rs;
using namespace rs::ui;
using namespace Qt::StringLiterals;

class TestBridgeRecipeDialog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void searchChooseAndAccept();
    void aWorldTheLayoutDoesNotDivideIsNotTaken();
    void theMainWindowOpensTheJob();
};

void TestBridgeRecipeDialog::searchChooseAndAccept()
{
    BridgeRecipeDialog dialog;
    auto* list = dialog.findChild<QListView*>(u"bridgeRecipeList"_s);
    QVERIFY(list);
    QAbstractItemModelTester tester(list->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const int all = dialog.visibleRecipes();
    QVERIFY(all >= 580); // every text-LLM recipe function of Bridge 067f987d; no vision recipe
    dialog.setFilter(u"moonlight 8gpu pretrain"_s);
    QCOMPARE(dialog.visibleRecipes(), 1);
    QVERIFY(dialog.select(u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s));
    QVERIFY2(dialog.description().contains(u"on 8 GPUs: data-parallel size 4"_s),
        qPrintable(dialog.description()));
    dialog.setGpus(16);
    QVERIFY2(dialog.description().contains(u"data-parallel size 8"_s), qPrintable(dialog.description()));
    dialog.accept();
    QCOMPARE(dialog.result(), int(QDialog::Accepted));
    QVERIFY(dialog.job());
    QCOMPARE(dialog.job()->recipe.data_parallel_size, 8);
    QCOMPARE(dialog.job()->recipe.expert_model_parallel_size, 8);
    dialog.setFilter(u"no such recipe anywhere"_s);
    QCOMPARE(dialog.visibleRecipes(), 0);
}

void TestBridgeRecipeDialog::aWorldTheLayoutDoesNotDivideIsNotTaken()
{
    BridgeRecipeDialog dialog;
    dialog.setFilter(u"moonlight_16b_pretrain_8gpu"_s);
    QVERIFY(dialog.select(u"moonlight_16b_pretrain_8gpu_h100_bf16_config"_s));
    dialog.setGpus(3);
    QVERIFY2(dialog.description().contains(u"TP x PP x CP = 2"_s), qPrintable(dialog.description()));
    auto* buttons = dialog.findChild<QDialogButtonBox*>();
    QVERIFY(!buttons->button(QDialogButtonBox::Ok)->isEnabled());
    dialog.accept(); // as Enter would: nothing is taken, the dialog stays
    QVERIFY(!dialog.job());
    QCOMPARE(dialog.result(), int(QDialog::Rejected));
}

void TestBridgeRecipeDialog::theMainWindowOpensTheJob()
{
    QTemporaryDir dir;
    MainWindow window(dir.filePath(u"store.sqlite"_s));
    QAction* action = window.findChild<QAction*>(u"actionNewFromBridge"_s);
    QVERIFY(action);
    // The dialog is modal: choose and accept from inside it once it is up.
    QTimer::singleShot(0, this, [] {
        for (QWidget* w : QApplication::topLevelWidgets()) {
            if (auto* d = qobject_cast<BridgeRecipeDialog*>(w)) {
                d->setFilter(u"llama3_8b_pretrain_2gpu"_s);
                d->select(u"llama3_8b_pretrain_2gpu_h100_bf16_config"_s);
                d->accept();
            }
        }
    });
    action->trigger();
    const Recipe& r = window.document()->recipe();
    QCOMPARE(r.name, std::string("llama3_8b_pretrain_2gpu_h100_bf16_config"));
    QCOMPARE(r.num_layers, 32);
    QCOMPARE(r.context_parallel_size, 2);
    QCOMPARE(window.document()->inputFormat(), InputFormat::BridgeOverrides);
}

QTEST_MAIN(TestBridgeRecipeDialog)
#include "tst_bridgerecipedialog.moc"
