// SPDX-License-Identifier: Apache-2.0
// `recompute validate` and `recompute explain` as a user runs them: exit codes 0/1/2, the human output, the
// --json shape, every input form (file, stdin, Bridge overrides, Megatron-LM flags).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace Qt::StringLiterals;

namespace {

struct Run {
    int code = -1;
    QByteArray out;
    QByteArray err;
};

Run recompute(const QStringList& args, const QByteArray& stdinData = {})
{
    QProcess p;
    p.start(QStringLiteral(RS_RECOMPUTE_EXE), args);
    if (!p.waitForStarted(10000))
        return {};
    if (!stdinData.isEmpty())
        p.write(stdinData);
    p.closeWriteChannel();
    p.waitForFinished(30000);
    return { p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
        p.readAllStandardError() };
}

} // namespace

class TestCliValidate : public QObject {
    Q_OBJECT

    QTemporaryDir dir;

    QString write(const QString& name, const QByteArray& text)
    {
        QFile f(dir.filePath(name));
        if (!f.open(QIODevice::WriteOnly))
            return {};
        f.write(text);
        return f.fileName();
    }

private slots:
    void exitCodes_data();
    void exitCodes();
    void jsonShape();
    void humanOutput();
    void stdinInput();
    void explain();
    void help();
};

void TestCliValidate::exitCodes_data()
{
    QTest::addColumn<QByteArray>("recipe"); // written to a file when it starts with '{'
    QTest::addColumn<QStringList>("args"); // %1 is the file
    QTest::addColumn<int>("code");
    QTest::addColumn<QByteArray>("mentions"); // in stdout (0/1) or stderr (2)
    QTest::newRow("clean json") << QByteArray(
        R"({"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 8})")
                                << QStringList { u"%1"_s } << 0 << QByteArray("0 error(s)");
    QTest::newRow("R30 error json") << QByteArray(
        R"({"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 8, "recompute_granularity": "full",
                          "recompute_method": "uniform", "recompute_num_layers": 1, "cuda_graph_impl": "transformer_engine"})")
                                    << QStringList { u"%1"_s, u"--profile"_s, u"main"_s } << 1
                                    << QByteArray("R30");
    QTest::newRow("bridge B4") << QByteArray()
                               << QStringList { u"--overrides"_s, u"model.num_layers=8"_s,
                                      u"model.num_moe_experts=8"_s, u"model.expert_model_parallel_size=2"_s,
                                      u"model.moe_token_dispatcher_type=alltoall"_s, u"model.bf16=true"_s,
                                      u"comm_overlap.overlap_moe_expert_parallel_comm=true"_s,
                                      u"model.recompute_granularity=selective"_s,
                                      u"model.recompute_modules=[moe]"_s }
                               << 1 << QByteArray("B4");
    QTest::newRow("mlm flags M4") << QByteArray()
                                  << QStringList { u"--profile"_s, u"guide"_s, u"--mlm-args"_s,
                                         u"--num-layers"_s, u"8"_s, u"--recompute-granularity"_s,
                                         u"selective"_s, u"--recompute-method"_s, u"uniform"_s }
                                  << 1 << QByteArray("M4");
    QTest::newRow("unknown key") << QByteArray(R"({"num_layers": 8, "recompute_granularty": "full"})")
                                 << QStringList { u"%1"_s } << 2 << QByteArray("recompute_granularty");
    QTest::newRow("malformed json") << QByteArray("{\"num_layers\": 8,,}") << QStringList { u"%1"_s } << 2
                                    << QByteArray("recipe.json");
    QTest::newRow("missing file") << QByteArray() << QStringList { u"/nonexistent/recipe.json"_s } << 2
                                  << QByteArray("/nonexistent/recipe.json");
    QTest::newRow("unknown profile") << QByteArray(R"({"num_layers": 8})")
                                     << QStringList { u"%1"_s, u"--profile"_s, u"trunk"_s } << 2
                                     << QByteArray("trunk");
    QTest::newRow("no recipe") << QByteArray() << QStringList { u"--profile"_s, u"main"_s } << 2
                               << QByteArray("no recipe given");
    QTest::newRow("stray argument") << QByteArray(R"({"num_layers": 8})")
                                    << QStringList { u"%1"_s, u"extra"_s } << 2 << QByteArray("extra");
}

void TestCliValidate::exitCodes()
{
    QFETCH(QByteArray, recipe);
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QByteArray, mentions);
    QVERIFY(dir.isValid());
    const QString file = recipe.isEmpty() ? QString() : write(u"recipe.json"_s, recipe);
    QStringList a;
    for (const QString& s : args)
        a << (s == u"%1"_s ? file : s);
    const Run r = recompute(QStringList { u"validate"_s } + a);
    QVERIFY2(r.code == code, QByteArray(QByteArray::number(r.code) + "\n" + r.out + r.err).constData());
    QVERIFY2((code == 2 ? r.err : r.out).contains(mentions), QByteArray(r.out + r.err).constData());
}

void TestCliValidate::jsonShape()
{
    const QString file
        = write(u"moe.json"_s, R"({"num_layers": 27, "hidden_size": 2048, "num_attention_heads": 16,
        "multi_latent_attention": true, "num_moe_experts": 64, "moe_grouped_gemm": true, "recompute_granularity": "selective",
        "recompute_modules": ["moe_act", "mlp"], "profile": "guide"})");
    const Run r = recompute({ u"validate"_s, file, u"--json"_s });
    QCOMPARE(r.code, 0);
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(r.out, &error);
    QVERIFY2(error.error == QJsonParseError::NoError, r.out.constData());
    const QJsonObject o = doc.object();
    QCOMPARE(o.value(u"profile"_s).toString(), u"guide"_s);
    QCOMPARE(o.value(u"has_errors"_s).toBool(true), false);
    QVERIFY(o.value(u"findings"_s).isArray());
    const QJsonArray findings = o.value(u"findings"_s).toArray();
    QVERIFY(!findings.isEmpty());
    bool rt4 = false;
    for (const auto& v : findings) {
        const QJsonObject f = v.toObject();
        for (const char* key : { "rule_id", "severity", "fields", "message", "fixit", "source" })
            QVERIFY2(f.contains(QLatin1String(key)), key);
        QVERIFY(f.value(u"fields"_s).isArray());
        rt4 = rt4 || (f.value(u"rule_id"_s).toString() == u"RT4"_s && f.value(u"fixit"_s).isObject());
    }
    QVERIFY(rt4); // mlp on a pure-MoE model, with its fix-it
    const QJsonObject resolved = o.value(u"resolved"_s).toObject();
    QCOMPARE(resolved.value(u"num_layers"_s).toInt(), 27);
    QCOMPARE(resolved.value(u"cuda_graph_modules"_s).toArray().size(), 0);
}

void TestCliValidate::humanOutput()
{
    const QString file
        = write(u"cg.json"_s, R"({"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 8,
        "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1, "cuda_graph_impl": "local"})");
    const Run r = recompute({ u"validate"_s, file, u"--profile"_s, u"bridge-pin"_s });
    QCOMPARE(r.code, 1);
    QVERIFY(r.out.contains("error R30 [recompute_granularity, cuda_graph_impl]"));
    QVERIFY(r.out.contains("  full recompute is only supported with full iteration CUDA graph.\n"));
    QVERIFY(r.out.contains("fix-it: set cuda_graph_impl=full_iteration"));
    QVERIFY(r.out.contains(
        "source: megatron/core/transformer/transformer_config.py:2613-2617 @ Megatron-LM 2a75ac12"));
    QVERIFY(r.out.contains("under profile bridge-pin (json)"));
}

void TestCliValidate::stdinInput()
{
    const Run r = recompute({ u"validate"_s, u"-"_s, u"--json"_s },
        R"({"num_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "recompute_granularity": "selective"})");
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o.value(u"input"_s).toString(), u"stdin"_s);
    QCOMPARE(o.value(u"resolved"_s).toObject().value(u"recompute_modules"_s).toArray().first().toString(),
        u"core_attn"_s);
}

void TestCliValidate::explain()
{
    Run r = recompute({ u"explain"_s, u"r14"_s });
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("R14 (error)"));
    QVERIFY(r.out.contains("profiles: bridge-pin, guide, main, dev"));
    QVERIFY(r.out.contains("experimental_attention_variant='gated_delta_net'."));
    QVERIFY(r.out.contains("@ Megatron-LM 24bad8e6 (guide)"));
    r = recompute({ u"explain"_s, u"R22"_s, u"--json"_s });
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o.value(u"profiles"_s).toArray(), QJsonArray { u"main"_s });
    r = recompute({ u"explain"_s, u"R99"_s });
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("unknown rule 'R99'"));
    r = recompute({ u"explain"_s, u"--list"_s });
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("RS01") && r.out.contains("B8") && r.out.contains("M3"));
}

void TestCliValidate::help()
{
    for (const char* verb : { "validate", "explain" }) {
        const Run r = recompute({ QString::fromLatin1(verb), u"--help"_s });
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith(QByteArray(QByteArray("usage: recompute ") + verb)));
    }
    QCOMPARE(recompute({ u"validate"_s }).code, 2);
}

QTEST_GUILESS_MAIN(TestCliValidate)
#include "tst_cli_validate.moc"
