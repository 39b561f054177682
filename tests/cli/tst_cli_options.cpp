// SPDX-License-Identifier: Apache-2.0
// The CLI's declared option table (app/cli/option_table.h), driven from the table itself so that a new
// option is covered: both spellings (--opt VALUE, --opt=VALUE) of every option of every verb, in the
// parser and through the built `recompute`; --db before and after the verb; unknown options and missing
// values named; every verb's help made from the table; the --slurm-* options filled and refused before
// anything starts; every option in the man page.
#include <set>

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "launch/slurm_job.h"
#include "option_table.h"
#include "storage/store.h"
#include "worker_options.h"

using namespace Qt::StringLiterals;
using rs::cli::Arity;

namespace {

struct Cli {
    int code = -1;
    QString out, err;
};

// The built recompute in `cwd`, with a home of its own (the per-user store is never the user's) and a
// worker that does not exist (nothing can start by accident).
Cli recompute(const QStringList& args, const QString& cwd, int timeoutMs = 60000)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"HOME"_s, cwd + u"/home"_s);
    env.insert(u"XDG_DATA_HOME"_s, cwd + u"/home/data"_s);
    env.insert(u"RS_WORKER"_s, cwd + u"/no-such-worker"_s);
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(cwd);
    p.start(QStringLiteral(RS_RECOMPUTE_EXE), args);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs))
        return {};
    return { p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
        QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()) };
}

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

std::vector<std::string> strings(const QStringList& l)
{
    std::vector<std::string> out;
    for (const QString& s : l)
        out.push_back(s.toStdString());
    return out;
}

// The option as the user types it, both ways, with `value` (Values and Rest: two arguments).
QStringList spaced(const rs::cli::OptionSpec& o, const QString& value)
{
    const QString opt = u"--"_s + qs(o.name);
    switch (o.arity) {
    case Arity::Flag:
        return { opt };
    case Arity::Value:
        return { opt, value };
    case Arity::Values:
    case Arity::Rest:
        return { opt, value, value + u"2"_s };
    }
    return {};
}

QStringList joined(const rs::cli::OptionSpec& o, const QString& value)
{
    switch (o.arity) {
    case Arity::Flag:
        return { u"-"_s + qs(o.name) }; // a flag's other spelling: one dash
    case Arity::Value:
        return { u"--"_s + qs(o.name) + u"="_s + value };
    case Arity::Values:
    case Arity::Rest:
        return { u"--"_s + qs(o.name) + u"="_s + value, value + u"2"_s };
    }
    return {};
}

bool sameParse(const rs::cli::ParsedArgs& a, const rs::cli::ParsedArgs& b)
{
    return a.values == b.values && a.groups == b.groups && a.rest == b.rest && a.positionals == b.positionals
        && a.order == b.order && a.help == b.help;
}

// Every (verb, option) pair of the table but --help.
void verbOptionRows(bool valuesOnly)
{
    for (const auto& verb : rs::cli::verbTable()) {
        for (const rs::cli::OptionSpec* o : rs::cli::optionsOf(verb.name)) {
            if (o->name == "help" || (valuesOnly && o->arity == Arity::Flag))
                continue;
            QTest::addRow("%s --%s", verb.name.c_str(), o->name.c_str()) << qs(verb.name) << qs(o->name);
        }
    }
}

// Replaces the folder a command ran in, so two runs in two folders compare.
QString normalised(QString text, const QString& dir)
{
    return text.replace(QDir(dir).canonicalPath(), u"<dir>"_s).replace(dir, u"<dir>"_s);
}

const QString kSample = QStringLiteral(RS_SOURCE_DIR "/resources/sample/guide-measurements.json");

} // namespace

class TestCliOptions : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_guideDb; // the guide's sample measurements, copied for each command that needs a store
    QString m_recipe;

    // A fresh folder holding a copy of the guide's store as x.sqlite and the tiny recipe as tiny.json.
    QString freshFolder()
    {
        static int n = 0;
        const QString dir = m_dir.filePath(u"f%1"_s.arg(++n));
        QDir().mkpath(dir + u"/home"_s);
        QFile::copy(m_guideDb, dir + u"/x.sqlite"_s);
        QFile::copy(m_recipe, dir + u"/tiny.json"_s);
        return dir;
    }

private Q_SLOTS:
    void initTestCase();
    void tableIsConsistent();
    void bothSpellingsParseAlike_data();
    void bothSpellingsParseAlike();
    void bothSpellingsRunAlike_data();
    void bothSpellingsRunAlike();
    void recipeArgumentsKeepTheirMeaning_data();
    void recipeArgumentsKeepTheirMeaning();
    void dbBeforeOrAfterTheVerb_data();
    void dbBeforeOrAfterTheVerb();
    void unknownOptionNamesVerbAndNearest_data();
    void unknownOptionNamesVerbAndNearest();
    void missingValueNamesTheOption_data();
    void missingValueNamesTheOption();
    void errorsBeforeTheVerb_data();
    void errorsBeforeTheVerb();
    void helpFromTheTable_data();
    void helpFromTheTable();
    void slurmOptionsFillTheSettings();
    void slurmRefusedBeforeAnythingStarts_data();
    void slurmRefusedBeforeAnythingStarts();
    void manPageNamesEveryOption();
};

void TestCliOptions::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_guideDb = m_dir.filePath(u"guide.sqlite"_s);
    {
        rs::storage::Store store;
        QString error;
        QVERIFY2(store.open(m_guideDb, &error), qPrintable(error));
        QCOMPARE(store.seedGuideSample(kSample, &error), 12);
    }
    m_recipe = m_dir.filePath(u"tiny.json"_s);
    QFile f(m_recipe);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        R"({"name": "tiny", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "seq_length": 32,
        "micro_batch_size": 1, "global_batch_size": 1, "vocab_size": 256})");
}

void TestCliOptions::tableIsConsistent()
{
    // Every option once; every verb it names exists; every verb takes --help.
    std::set<std::string> names;
    for (const auto& o : rs::cli::optionTable()) {
        QVERIFY2(names.insert(o.name).second, o.name.c_str());
        QVERIFY2(!o.help.empty(), o.name.c_str());
        QVERIFY2((o.arity == Arity::Flag) == o.valueName.empty(), o.name.c_str());
        for (const auto& v : o.verbs)
            QVERIFY2(rs::cli::findVerb(v), (o.name + " names " + v).c_str());
        for (const auto& h : o.helpFor)
            QVERIFY2(o.takenBy(h.verb), (o.name + " has help for " + h.verb).c_str());
    }
    for (const auto& v : rs::cli::verbTable()) {
        QVERIFY2(rs::cli::findOption("help")->takenBy(v.name), v.name.c_str());
        QVERIFY(!v.forms.empty() && !v.summary.empty() && !v.about.empty());
    }
    QVERIFY(rs::cli::findOption("db")->global);
}

void TestCliOptions::bothSpellingsParseAlike_data()
{
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QString>("option");
    verbOptionRows(false);
}

void TestCliOptions::bothSpellingsParseAlike()
{
    QFETCH(QString, verb);
    QFETCH(QString, option);
    const rs::cli::OptionSpec* o = rs::cli::findOption(option.toStdString());
    QVERIFY(o);
    // A value with '=' and a space, and one that looks like an option: both are values.
    for (const QString& value : { u"a=b c"_s, u"-5"_s }) {
        if (o->arity == Arity::Values && value.startsWith(u'-'))
            continue; // a list ends at the next --word; "-5" is still in it, but not worth a second row
        const QStringList before { u"first"_s };
        const auto a = rs::cli::parseVerbArgs(verb.toStdString(), strings(before + spaced(*o, value)));
        const auto b = rs::cli::parseVerbArgs(verb.toStdString(), strings(before + joined(*o, value)));
        QVERIFY2(a.error.empty(), a.error.c_str());
        QVERIFY2(b.error.empty(), b.error.c_str());
        QVERIFY(sameParse(a.args, b.args));
        QVERIFY(a.args.has(o->name));
        QCOMPARE(a.args.positionals, std::vector<std::string> { "first" });
        QCOMPARE(a.args.order, std::vector<std::string> { o->name });
        const std::string v = value.toStdString();
        switch (o->arity) {
        case Arity::Flag:
            break;
        case Arity::Value:
            QCOMPARE(a.args.value(o->name), v);
            break;
        case Arity::Values:
            QCOMPARE(a.args.groups.at(o->name), (std::vector<std::vector<std::string>> { { v, v + "2" } }));
            break;
        case Arity::Rest:
            QCOMPARE(*a.args.rest, (std::vector<std::string> { v, v + "2" }));
            break;
        }
        // Given twice: a repeating option keeps both, another the last.
        if (o->arity == Arity::Value) {
            const auto twice = rs::cli::parseVerbArgs(
                verb.toStdString(), strings(spaced(*o, value) + joined(*o, u"second"_s)));
            QVERIFY2(twice.error.empty(), twice.error.c_str());
            QCOMPARE(twice.args.value(o->name), std::string("second"));
            QCOMPARE(twice.args.all(o->name).size(), size_t(2));
        }
    }
    if (o->arity == Arity::Flag) {
        const auto r = rs::cli::parseVerbArgs(verb.toStdString(), { "--" + o->name + "=yes" });
        QVERIFY2(r.error.find("--" + o->name + " takes no value") != std::string::npos, r.error.c_str());
    }
}

void TestCliOptions::bothSpellingsRunAlike_data()
{
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QString>("option");
    verbOptionRows(true);
}

void TestCliOptions::bothSpellingsRunAlike()
{
    // The built program, each spelling in a folder of its own: the same exit status and the same words,
    // and neither calls the option unknown or short of a value.
    QFETCH(QString, verb);
    QFETCH(QString, option);
    const rs::cli::OptionSpec* o = rs::cli::findOption(option.toStdString());
    QVERIFY(o);
    const QString value = u"7"_s; // a run id, a count, a path, a name: what each option reads, or a refusal
    const QString a = freshFolder(), b = freshFolder();
    const Cli ra = recompute(QStringList { verb } + spaced(*o, value), a);
    const Cli rb = recompute(QStringList { verb } + joined(*o, value), b);
    QVERIFY2(ra.code >= 0 && ra.code <= 2, qPrintable(ra.err));
    QCOMPARE(rb.code, ra.code);
    QCOMPARE(normalised(rb.out, b), normalised(ra.out, a));
    QCOMPARE(normalised(rb.err, b), normalised(ra.err, a));
    QVERIFY2(
        !ra.err.contains(u"unknown argument"_s) && !ra.err.contains(u"needs a value"_s), qPrintable(ra.err));
}

void TestCliOptions::recipeArgumentsKeepTheirMeaning_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("mentions"); // in stdout + stderr
    // --overrides ends at the next --word; --mlm-args takes the rest, but --json is still ours there.
    QTest::newRow("overrides then ours") << QStringList { u"--overrides"_s, u"model.num_layers=2"_s,
        u"model.hidden_size=64"_s, u"model.num_attention_heads=4"_s, u"--json"_s }
                                         << 0 << u"\"format\": \"bridge-overrides\""_s;
    QTest::newRow("overrides=first") << QStringList { u"--overrides=model.num_layers=2"_s,
        u"model.hidden_size=64"_s, u"model.num_attention_heads=4"_s, u"--json"_s }
                                     << 0 << u"\"num_layers\": 2"_s;
    QTest::newRow("--help after --mlm-args is Megatron's")
        << QStringList { u"--mlm-args"_s, u"--num-layers"_s, u"2"_s, u"--help"_s } << 2 << u"--help"_s;
    QTest::newRow("--json after --mlm-args is ours") << QStringList { u"--mlm-args"_s, u"--num-layers"_s,
        u"2"_s, u"--hidden-size"_s, u"64"_s, u"--num-attention-heads"_s, u"4"_s, u"--json"_s }
                                                     << 0 << u"\"format\": \"megatron-flags\""_s;
    QTest::newRow("--profile=P") << QStringList { u"%1"_s, u"--profile=main"_s } << 0
                                 << u"under profile main"_s;
    QTest::newRow("a second recipe") << QStringList { u"%1"_s, u"--overrides"_s, u"model.num_layers=2"_s }
                                     << 2 << u"a second recipe"_s;
    QTest::newRow("stdin") << QStringList { u"-"_s } << 2 << u"stdin"_s; // empty stdin: not JSON
    QTest::newRow("stray positional")
        << QStringList { u"%1"_s, u"extra"_s } << 2 << u"unexpected argument 'extra'"_s;
}

void TestCliOptions::recipeArgumentsKeepTheirMeaning()
{
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, mentions);
    const QString dir = freshFolder();
    args.replaceInStrings(u"%1"_s, dir + u"/tiny.json"_s);
    const Cli r = recompute(QStringList { u"validate"_s } + args, dir);
    QVERIFY2(r.code == code, qPrintable(u"%1\n"_s.arg(r.code) + r.out + r.err));
    QVERIFY2(QString(r.out + r.err).contains(mentions), qPrintable(r.out + r.err));
}

void TestCliOptions::dbBeforeOrAfterTheVerb_data()
{
    // For every verb that takes --db: the same words with --db PATH / --db=PATH before the verb and after
    // it, the store named read (the guide's runs) and the per-user one never made.
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    const std::map<std::string, std::pair<QStringList, QString>> cases = {
        { "advise", { { u"--control"_s, u"1"_s, u"--target-gb"_s, u"36"_s }, u"use moe_act"_s } },
        { "report", { { u"--control"_s, u"1"_s }, u"moe_act"_s } },
        { "export", { { u"--out"_s, u"out"_s, u"1"_s }, u"runs.csv"_s } },
        { "link", { { u"2"_s, u"--control"_s, u"1"_s }, u"run 2: control run 1"_s } },
        { "import", { { u"--sample"_s }, u"already in the store"_s } },
        // The worker does not exist: the run is stored as aborted, in the store named.
        { "run", { { u"tiny.json"_s, u"--iters"_s, u"1"_s }, u"stored as run 13"_s } },
        { "sweep", { { u"tiny.json"_s, u"--modules"_s, u"core_attn"_s }, u"stored as run 13"_s } },
        // --confirm measures through the same session: the control first, stored in the store named.
        { "plan",
            { { u"tiny.json"_s, u"--rates"_s,
                  QStringLiteral(RS_SOURCE_DIR "/resources/calibration/h100-bf16-PROVISIONAL.json"),
                  u"--confirm"_s, u"1"_s, u"--iters"_s, u"1"_s },
                u"stored as run 13"_s } },
    };
    const rs::cli::OptionSpec* db = rs::cli::findOption("db");
    for (const auto& verb : db->verbs) {
        const auto it = cases.find(verb);
        QVERIFY2(it != cases.end(), ("no row for " + verb + " --db").c_str());
        QTest::addRow("%s", verb.c_str()) << qs(verb) << it->second.first << it->second.second;
    }
}

void TestCliOptions::dbBeforeOrAfterTheVerb()
{
    QFETCH(QString, verb);
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const QList<QStringList> spellings = {
        QStringList { u"--db"_s, u"x.sqlite"_s, verb } + args,
        QStringList { u"--db=x.sqlite"_s, verb } + args,
        QStringList { verb } + args + QStringList { u"--db"_s, u"x.sqlite"_s },
        QStringList { verb, u"--db=x.sqlite"_s } + args,
    };
    QString first;
    for (const QStringList& words : spellings) {
        const QString dir = freshFolder();
        const Cli r = recompute(words, dir);
        const QString all = normalised(r.out + r.err, dir);
        QVERIFY2(all.contains(mentions), qPrintable(words.join(u' ') + u"\n"_s + all));
        QVERIFY2(QDirIterator(dir + u"/home"_s, QDir::Files, QDirIterator::Subdirectories).hasNext() == false,
            "the per-user store was opened");
        if (first.isEmpty())
            first = normalised(r.out, dir);
        else
            QCOMPARE(normalised(r.out, dir), first);
    }
    // Given before and after the verb: the later one counts.
    const QString dir = freshFolder();
    const Cli r = recompute(
        QStringList { u"--db"_s, u"none.sqlite"_s, verb } + args + QStringList { u"--db"_s, u"x.sqlite"_s },
        dir);
    QVERIFY2(QString(r.out + r.err).contains(mentions), qPrintable(r.out + r.err));
}

void TestCliOptions::unknownOptionNamesVerbAndNearest_data()
{
    // For every verb, each of its options misspelt (one letter added): named, with the verb and the option
    // meant.
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QString>("option");
    verbOptionRows(false);
}

void TestCliOptions::unknownOptionNamesVerbAndNearest()
{
    QFETCH(QString, verb);
    QFETCH(QString, option);
    const std::string wrong = "--" + option.toStdString() + "q";
    const auto r = rs::cli::parseVerbArgs(verb.toStdString(), { wrong, "1" });
    QVERIFY(!r.args.help);
    QVERIFY2(r.error.find("unknown argument " + wrong) != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("not an option of " + verb.toStdString()) != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("nearest: --" + option.toStdString()) != std::string::npos, r.error.c_str());
    // The program says it, exits 2 and starts nothing.
    if (option == u"db"_s || option == u"json"_s) {
        const QString dir = freshFolder();
        const Cli c = recompute({ verb, qs(wrong), u"1"_s }, dir);
        QCOMPARE(c.code, 2);
        QVERIFY2(c.err.startsWith(u"recompute "_s + verb + u": unknown argument "_s + qs(wrong)),
            qPrintable(c.err));
        QVERIFY2(c.err.contains(u"usage: recompute "_s + verb), qPrintable(c.err));
    }
}

void TestCliOptions::missingValueNamesTheOption_data()
{
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QString>("option");
    for (const auto& verb : rs::cli::verbTable()) {
        for (const rs::cli::OptionSpec* o : rs::cli::optionsOf(verb.name)) {
            if (o->arity == Arity::Value)
                QTest::addRow("%s --%s", verb.name.c_str(), o->name.c_str()) << qs(verb.name) << qs(o->name);
        }
    }
}

void TestCliOptions::missingValueNamesTheOption()
{
    QFETCH(QString, verb);
    QFETCH(QString, option);
    const rs::cli::OptionSpec* o = rs::cli::findOption(option.toStdString());
    const auto r = rs::cli::parseVerbArgs(verb.toStdString(), { "--" + o->name });
    QCOMPARE(r.error, "--" + o->name + " needs a value (" + o->valueNameFor(verb.toStdString()) + ")");
    const QString dir = freshFolder();
    const Cli c = recompute({ verb, u"--"_s + option }, dir);
    QCOMPARE(c.code, 2);
    QVERIFY2(c.err.contains(u"--"_s + option + u" needs a value"_s), qPrintable(c.err));
}

void TestCliOptions::errorsBeforeTheVerb_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("mentions"); // stdout for 0, stderr otherwise
    QTest::newRow("unknown option") << QStringList { u"--dbx"_s, u"a"_s, u"report"_s } << 2
                                    << u"unknown option --dbx before the verb"_s;
    QTest::newRow("nearest") << QStringList { u"--dbx"_s, u"report"_s } << 2 << u"nearest: --db"_s;
    QTest::newRow("a verb's option") << QStringList { u"--json"_s, u"validate"_s } << 2
                                     << u"unknown option --json before the verb"_s;
    QTest::newRow("missing value") << QStringList { u"--db"_s } << 2 << u"--db needs a value (PATH)"_s;
    QTest::newRow("empty --db") << QStringList { u"--db"_s, QString(), u"report"_s } << 2
                                << u"--db: empty; give the store's file path"_s;
    QTest::newRow("empty --db=") << QStringList { u"report"_s, u"--db="_s } << 2
                                 << u"--db: empty; give the store's file path"_s;
    QTest::newRow("no verb") << QStringList {} << 2 << u"usage: recompute"_s;
    QTest::newRow("unknown verb") << QStringList { u"--db"_s, u"x.sqlite"_s, u"reprot"_s } << 2
                                  << u"unknown verb 'reprot'"_s;
    QTest::newRow("--version") << QStringList { u"--version"_s } << 0 << u"recompute "_s;
    QTest::newRow("--help") << QStringList { u"--help"_s } << 0 << u"before the verb:"_s;
    QTest::newRow("help VERB") << QStringList { u"help"_s, u"link"_s } << 0 << u"usage: recompute link"_s;
    QTest::newRow("--help VERB") << QStringList { u"--help"_s, u"report"_s } << 0
                                 << u"usage: recompute report"_s;
    QTest::newRow("help unknown") << QStringList { u"help"_s, u"frob"_s } << 2 << u"unknown verb 'frob'"_s;
    // A verb that reads no store takes --db before it, unused; after it, --db is not its option.
    QTest::newRow("--db before validate")
        << QStringList { u"--db"_s, u"x.sqlite"_s, u"validate"_s, u"tiny.json"_s } << 0 << u"0 error(s)"_s;
    QTest::newRow("--db after validate") << QStringList { u"validate"_s, u"tiny.json"_s, u"--db"_s,
        u"x.sqlite"_s } << 2 << u"not an option of validate (it is one of run, sweep"_s;
}

void TestCliOptions::errorsBeforeTheVerb()
{
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, mentions);
    const QString dir = freshFolder();
    const Cli r = recompute(args, dir);
    QVERIFY2(r.code == code, qPrintable(u"%1\n"_s.arg(r.code) + r.out + r.err));
    QVERIFY2((code == 0 ? r.out : r.err).contains(mentions), qPrintable(r.out + r.err));
}

void TestCliOptions::helpFromTheTable_data()
{
    QTest::addColumn<QString>("verb");
    for (const auto& v : rs::cli::verbTable())
        QTest::addRow("%s", v.name.c_str()) << qs(v.name);
}

void TestCliOptions::helpFromTheTable()
{
    // `VERB --help`, `VERB -h` and `help VERB` print the same text, made from the table: every option of the
    // verb with its value name and its help's first words.
    QFETCH(QString, verb);
    const QString dir = freshFolder();
    const Cli a = recompute({ verb, u"--help"_s }, dir);
    const Cli b = recompute({ verb, u"-h"_s }, dir);
    const Cli c = recompute({ u"help"_s, verb }, dir);
    QCOMPARE(a.code, 0);
    QCOMPARE(b.out, a.out);
    QCOMPARE(c.out, a.out);
    QCOMPARE(a.out, qs(rs::cli::verbHelp(verb.toStdString())));
    QVERIFY(a.out.startsWith(u"usage: recompute "_s + verb));
    for (const rs::cli::OptionSpec* o : rs::cli::optionsOf(verb.toStdString())) {
        QVERIFY2(a.out.contains(qs(o->spelling(verb.toStdString()))), o->name.c_str());
        const std::string help = o->helpText(verb.toStdString());
        QVERIFY2(a.out.contains(qs(help.substr(0, help.find(' ', 12)))), o->name.c_str());
    }
    // --help wins over any error.
    QCOMPARE(recompute({ verb, u"--nonsense"_s, u"--help"_s }, dir).code, 0);
    // The top-level usage lists the verb with its summary.
    const Cli top = recompute({ u"--help"_s }, dir);
    QVERIFY(top.out.contains(qs(rs::cli::findVerb(verb.toStdString())->summary)));
}

void TestCliOptions::slurmOptionsFillTheSettings()
{
    const auto parsed = rs::cli::parseVerbArgs("run",
        { "tiny.json", "--slurm-partition=gpu", "--slurm-nodes", "2", "--slurm-tasks-per-node=4",
            "--slurm-gpus-per-node", "8", "--slurm-time=00:30:00", "--slurm-account", "proj",
            "--slurm-sbatch", "#SBATCH --mem=0", "--slurm-sbatch=#SBATCH --exclusive", "--slurm-workdir",
            "/shared/rs", "--slurm-login-host=me@login", "--slurm-ssh-option", "-p 2222",
            "--slurm-ssh-option=-i", "--slurm-ssh-option", "/k/id", "--device", "cuda" });
    QVERIFY2(parsed.error.empty(), parsed.error.c_str());
    rs::cli::WorkerOptions options;
    std::string error;
    QVERIFY2(rs::cli::readWorkerOptions(parsed.args, &options, &error), error.c_str());
    QVERIFY(options.slurm);
    const rs::launch::SlurmSettings& s = *options.slurm;
    QCOMPARE(s.partition, u"gpu"_s);
    QCOMPARE(s.nodes, 2);
    QCOMPARE(s.tasksPerNode, 4);
    QCOMPARE(s.gpusPerNode, 8);
    QCOMPARE(s.timeLimit, u"00:30:00"_s);
    QCOMPARE(s.account, u"proj"_s);
    QCOMPARE(s.extraSbatchLines, (QStringList { u"#SBATCH --mem=0"_s, u"#SBATCH --exclusive"_s }));
    QCOMPARE(s.workDir, u"/shared/rs"_s);
    QCOMPARE(s.loginHost, u"me@login"_s);
    QCOMPARE(s.sshOptions, (QStringList { u"-p"_s, u"2222"_s, u"-i"_s, u"/k/id"_s }));
    QCOMPARE(options.device, u"cuda"_s);
    QVERIFY(options.sshHost.isEmpty());

    // No --slurm-* option: no Slurm.
    rs::cli::WorkerOptions local;
    QVERIFY(rs::cli::readWorkerOptions(
        rs::cli::parseVerbArgs("sweep", { "tiny.json", "--ranks", "2" }).args, &local, &error));
    QVERIFY(!local.slurm);
    QCOMPARE(local.ranks, 2);
}

void TestCliOptions::slurmRefusedBeforeAnythingStarts_data()
{
    // Each row: the --slurm-* words (with a work folder unless the row is about it) and either the settings
    // launch::checkSlurmSettings refuses (its message must be said) or the words the refusal says.
    QTest::addColumn<QString>("verb");
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions"); // "check" : checkSlurmSettings's message for the settings below
    QTest::addColumn<QJsonObject>("settings");
    const QJsonObject none;
    QTest::newRow("nodes 0") << u"run"_s << QStringList { u"--slurm-nodes"_s, u"0"_s } << u"check"_s
                             << QJsonObject { { u"nodes"_s, 0 } };
    QTest::newRow("tasks 2000") << u"sweep"_s << QStringList { u"--slurm-tasks-per-node=2000"_s }
                                << u"check"_s << QJsonObject { { u"tasksPerNode"_s, 2000 } };
    QTest::newRow("gpus -1") << u"run"_s << QStringList { u"--slurm-gpus-per-node=-1"_s } << u"check"_s
                             << QJsonObject { { u"gpusPerNode"_s, -1 } };
    QTest::newRow("partition with a space") << u"run"_s << QStringList { u"--slurm-partition"_s, u"a b"_s }
                                            << u"check"_s << QJsonObject { { u"partition"_s, u"a b"_s } };
    QTest::newRow("account ;") << u"sweep"_s << QStringList { u"--slurm-account=x;rm"_s } << u"check"_s
                               << QJsonObject { { u"account"_s, u"x;rm"_s } };
    QTest::newRow("time soon") << u"run"_s << QStringList { u"--slurm-time"_s, u"soon"_s } << u"check"_s
                               << QJsonObject { { u"timeLimit"_s, u"soon"_s } };
    QTest::newRow("sbatch line") << u"run"_s << QStringList { u"--slurm-sbatch"_s, u"--mem=1G"_s }
                                 << u"check"_s << QJsonObject { { u"sbatch"_s, u"--mem=1G"_s } };
    QTest::newRow("login host -o") << u"sweep"_s << QStringList { u"--slurm-login-host=-oProxyCommand=x"_s }
                                   << u"check"_s << QJsonObject { { u"loginHost"_s, u"-oProxyCommand=x"_s } };
    QTest::newRow("no work folder") << u"run"_s
                                    << QStringList { u"--slurm-partition"_s, u"gpu"_s, u"!noworkdir"_s }
                                    << u"check"_s
                                    << QJsonObject { { u"partition"_s, u"gpu"_s }, { u"workDir"_s, u""_s } };
    QTest::newRow("nodes x") << u"run"_s << QStringList { u"--slurm-nodes"_s, u"x"_s }
                             << u"--slurm-nodes: 'x' is not an integer"_s << none;
    QTest::newRow("--host and --slurm-partition")
        << u"run"_s << QStringList { u"--host"_s, u"gpu-host"_s, u"--slurm-partition"_s, u"gpu"_s }
        << u"--host and --slurm-partition exclude each other"_s << none;
    QTest::newRow("--slurm-nodes and --host (sweep)")
        << u"sweep"_s << QStringList { u"--slurm-nodes=2"_s, u"--host=gpu-host"_s }
        << u"--host and --slurm-nodes exclude each other"_s << none;
    QTest::newRow("--ranks and --slurm-tasks-per-node")
        << u"run"_s << QStringList { u"--ranks"_s, u"2"_s, u"--slurm-tasks-per-node"_s, u"2"_s }
        << u"--ranks and --slurm-tasks-per-node exclude each other"_s << none;
}

void TestCliOptions::slurmRefusedBeforeAnythingStarts()
{
    QFETCH(QString, verb);
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    QFETCH(QJsonObject, settings);
    const QString dir = freshFolder();
    QFile::remove(dir + u"/x.sqlite"_s);
    if (!args.removeOne(u"!noworkdir"_s))
        args << u"--slurm-workdir"_s << dir + u"/slurm"_s;
    if (mentions == u"check"_s) {
        rs::launch::SlurmSettings s;
        s.workDir
            = settings.contains(u"workDir"_s) ? settings.value(u"workDir"_s).toString() : dir + u"/slurm"_s;
        s.nodes = settings.value(u"nodes"_s).toInt(1);
        s.tasksPerNode = settings.value(u"tasksPerNode"_s).toInt(1);
        s.gpusPerNode = settings.value(u"gpusPerNode"_s).toInt(0);
        s.partition = settings.value(u"partition"_s).toString();
        s.account = settings.value(u"account"_s).toString();
        s.timeLimit = settings.value(u"timeLimit"_s).toString();
        s.loginHost = settings.value(u"loginHost"_s).toString();
        if (settings.contains(u"sbatch"_s))
            s.extraSbatchLines << settings.value(u"sbatch"_s).toString();
        mentions = rs::launch::checkSlurmSettings(s);
        QVERIFY2(!mentions.isEmpty(), "the row's settings are fine: not a refusal");
    }
    const Cli r = recompute(QStringList { verb, u"tiny.json"_s, u"--db"_s, u"x.sqlite"_s } + args, dir);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(mentions), qPrintable(mentions + u"\n---\n"_s + r.err));
    // Refused before anything started: no store, no work folder, no worker looked for.
    QVERIFY(!QFile::exists(dir + u"/x.sqlite"_s));
    QVERIFY(!QFile::exists(dir + u"/slurm"_s));
    QVERIFY2(!r.err.contains(u"no-such-worker"_s), qPrintable(r.err));
}

void TestCliOptions::manPageNamesEveryOption()
{
    QFile man(QStringLiteral(RS_SOURCE_DIR "/packaging/man/recompute.1"));
    QVERIFY(man.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(man.readAll());
    for (const auto& o : rs::cli::optionTable()) {
        QString name = qs(o.name);
        name.replace(u"-"_s, u"\\-"_s);
        QVERIFY2(text.contains(u"\\-\\-"_s + name), o.name.c_str());
    }
    for (const auto& v : rs::cli::verbTable())
        QVERIFY2(text.contains(u".B "_s + qs(v.name) + u" "_s), v.name.c_str());
}

QTEST_GUILESS_MAIN(TestCliOptions)
#include "tst_cli_options.moc"
