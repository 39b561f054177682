// SPDX-License-Identifier: Apache-2.0
// Real material, collected by scripts/extract_real_recipes.py into fixtures/: the settings of every
// Megatron Bridge performance recipe and the command lines of Megatron-LM's examples/ launch scripts.
// Each is taken, its recompute settings read right, and written back runnable: the overrides as
// Debian's python3-omegaconf reads them (OmegaConf.from_dotlist), the flags against the profile's whole
// Megatron-LM flag table (flag, arity, choices). Every preset's written overrides and flags are checked
// the same way, and a recipe round-tripped through every format is unchanged.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QtTest>

#include "core/megatron_arg_table.h"
#include "core/megatron_flags.h"
#include "core/overrides.h"
#include "core/recipe_json.h"

using namespace rs;

namespace rs {
char* toString(const Recipe& r)
{
    return qstrdup(recipeCanonicalText(r).c_str());
}
} // namespace rs

namespace {

nlohmann::json readFixture(const char* name)
{
    QFile f(QStringLiteral(RS_FIXTURES_DIR "/") + QLatin1String(name));
    if (!f.open(QIODevice::ReadOnly))
        return nullptr;
    return nlohmann::json::parse(f.readAll().toStdString());
}

std::vector<std::pair<QString, Recipe>> presets()
{
    std::vector<std::pair<QString, Recipe>> out;
    const QString dir = QStringLiteral(RS_SOURCE_DIR "/resources/presets");
    for (const QString& f : QDir(dir).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name)) {
        QFile file(dir + QLatin1Char('/') + f);
        if (file.open(QIODevice::ReadOnly))
            out.emplace_back(f, recipeFromJsonText(file.readAll().toStdString(), f.toStdString()));
    }
    return out;
}

// "" when every word is a flag of the table (after a launcher up to the .py script) with a number of
// values its nargs allows and values among its choices; else what is wrong.
std::string checkAgainstTable(const std::vector<std::string>& words, const MegatronArgTable& table)
{
    std::size_t i = 0;
    if (!words.empty() && words[0].rfind("--", 0) != 0) {
        while (i < words.size() && !(words[i].size() > 3 && words[i].substr(words[i].size() - 3) == ".py"))
            ++i;
        if (i == words.size())
            return "no script";
        ++i;
    }
    while (i < words.size()) {
        const std::string flag = words[i].substr(0, words[i].find('='));
        const MegatronArg* row = table.find(flag);
        if (!row)
            return "no such flag: " + flag;
        std::vector<std::string> values;
        if (words[i].find('=') != std::string::npos)
            values.push_back(words[i].substr(words[i].find('=') + 1));
        ++i;
        while (i < words.size() && words[i].rfind("--", 0) != 0)
            values.push_back(words[i++]);
        const int n = int(values.size());
        if (n < row->minValues() || (row->maxValues() >= 0 && n > row->maxValues()))
            return flag + ": " + std::to_string(n) + " value(s) for nargs '" + row->nargs + "'";
        if (row->has_choices && std::string(row->choices) != "?") {
            const std::vector<std::string> choices = row->choiceList();
            for (const std::string& v : values) {
                if (std::find(choices.begin(), choices.end(), v) == choices.end())
                    return flag + ": '" + v + "' is not among its choices";
            }
        }
    }
    return {};
}

// What OmegaConf.from_dotlist makes of each named list; null when python3-omegaconf is missing.
nlohmann::json omegaconfRead(const nlohmann::json& lists)
{
    QProcess p;
    p.start(QStringLiteral("/usr/bin/python3"),
        { QStringLiteral(RS_SOURCE_DIR "/tests/core/omegaconf_dotlist.py") });
    if (!p.waitForStarted())
        return nullptr;
    p.write(QByteArray::fromStdString(lists.dump()));
    p.closeWriteChannel();
    p.waitForFinished(120000);
    if (p.exitCode() != 0) {
        qWarning("%s", p.readAllStandardError().constData());
        return nullptr;
    }
    return nlohmann::json::parse(p.readAllStandardOutput().toStdString());
}

// The value at a dotted key of a nested container; a missing key is the string "<missing>".
nlohmann::json at(const nlohmann::json& tree, const std::string& key)
{
    const nlohmann::json* node = &tree;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = key.find('.', start);
        const std::string part
            = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!node->is_object() || !node->contains(part))
            return "<missing>";
        node = &(*node)[part];
        if (dot == std::string::npos)
            return *node;
        start = dot + 1;
    }
}

// The recipe value an override key of ours stands for; null-and-false when it is not a recipe field.
std::optional<nlohmann::json> recipeValueFor(const Recipe& r, const std::string& key)
{
    const std::string section = key.substr(0, key.find('.'));
    if (section != "model" && section != "train" && section != "dataset" && section != "ddp"
        && section != "optimizer" && !recipeFieldType(key))
        return std::nullopt; // logger.*, checkpoint.*, mixed_precision.* ...: kept, not recipe fields
    if (key == "model.share_embeddings_and_output_weights")
        return nlohmann::json(!r.untie_embeddings_and_output_weights);
    // The recipe's fp8_param_gather is DDP's (ddp.fp8_param_gather, where mixed_precision copies it); the
    // performance recipes also set an attribute of that name on the model config, which MCore's
    // TransformerConfig does not have (its own is fp8_param): kept verbatim, not this field.
    if (key == "model.fp8_param_gather")
        return std::nullopt;
    if (recipeFieldType(key))
        return recipeFieldValue(r, key); // comm_overlap.*, rerun_state_machine.*, mixed_precision
    const std::string field = key.substr(key.find('.') + 1);
    if (recipeFieldType(field))
        return recipeFieldValue(r, field);
    return std::nullopt;
}

bool looselyEqual(const nlohmann::json& a, const nlohmann::json& b)
{
    if (a.is_number() && b.is_number())
        return a.get<double>() == b.get<double>();
    return a == b;
}

// A performance recipe's overrides. The Python recipes also set attributes that the config dataclasses
// lack (Python lets them; Hydra needs ++KEY to add a key): such an override, refused as written, is
// taken with Hydra's ++ and counted.
int gAdded = 0;
Recipe readPerfRecipe(std::vector<std::string>* args)
{
    for (std::size_t attempt = 0; attempt <= args->size(); ++attempt) {
        try {
            return recipeFromBridgeOverrides(*args);
        } catch (const RecipeError& e) {
            const bool missing = e.message.find("no such field") != std::string::npos
                || e.message.find("has no field") != std::string::npos;
            const std::size_t n = std::size_t(std::stoul(e.where.substr(std::string("override ").size())));
            if (!missing || (*args)[n - 1].rfind("++", 0) == 0)
                throw;
            (*args)[n - 1] = "++" + (*args)[n - 1];
            ++gAdded;
        }
    }
    return {};
}

const char* const kRecomputeKeys[]
    = { "recompute_granularity", "recompute_modules", "recompute_method", "recompute_num_layers" };

} // namespace

class TestRealRecipes : public QObject {
    Q_OBJECT

private slots:
    void bridgePerfRecipes_data();
    void bridgePerfRecipes();
    void bridgePerfRecipesAllTaken();
    void megatronLmExamples_data();
    void megatronLmExamples();
    void writtenOverridesReadByOmegaConf();
    void presetFlagsAgainstTheWholeTable();
    void roundTripThroughEveryFormat();
};

void TestRealRecipes::bridgePerfRecipes_data()
{
    QTest::addColumn<QString>("function");
    QTest::addColumn<QStringList>("overrides");
    const nlohmann::json fixture = readFixture("bridge_perf_recipes.json");
    QVERIFY2(!fixture.is_null(), "fixtures/bridge_perf_recipes.json is missing");
    for (const nlohmann::json& recipe : fixture["recipes"]) {
        QStringList overrides;
        for (const nlohmann::json& o : recipe["overrides"])
            overrides << QString::fromStdString(o.get<std::string>());
        const std::string name
            = recipe["path"].get<std::string>() + ":" + recipe["function"].get<std::string>();
        QTest::newRow(name.c_str()) << QString::fromStdString(recipe["function"].get<std::string>())
                                    << overrides;
    }
}

void TestRealRecipes::bridgePerfRecipes()
{
    QFETCH(QStringList, overrides);
    std::vector<std::string> args;
    for (const QString& o : overrides)
        args.push_back(o.toStdString());
    Recipe r;
    try {
        r = readPerfRecipe(&args);
    } catch (const RecipeError& e) {
        QFAIL(e.what());
    }
    // The recompute settings are read as the recipe sets them last (Python None -> null -> unset).
    for (const char* key : kRecomputeKeys) {
        const std::string prefix = std::string("model.") + key + "=";
        std::string o;
        for (const std::string& a : args) {
            if (a.rfind(prefix, 0) == 0)
                o = a;
        }
        {
            if (o.empty())
                continue;
            const std::string text = o.substr(prefix.size());
            const nlohmann::json value = recipeFieldValue(r, key);
            if (text == "null") {
                QVERIFY2(value.is_null(), o.c_str());
            } else if (text.front() == '[') {
                QVERIFY2(value.is_array(), o.c_str());
                std::string joined = "[";
                for (std::size_t i = 0; i < value.size(); ++i)
                    joined += (i ? "," : "") + value[i].get<std::string>();
                QCOMPARE(QString::fromStdString(joined + "]"), QString::fromStdString(text));
            } else {
                QCOMPARE(QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump()),
                    QString::fromStdString(text));
            }
        }
    }
    // Written back: what was kept comes back verbatim, and the whole reads back to the same recipe.
    const std::vector<std::string> written = recipeToBridgeOverrides(r);
    for (const std::string& kept : r.extra_overrides)
        QVERIFY(std::find(written.begin(), written.end(), kept) != written.end());
    for (const std::string& w : written)
        QVERIFY2(w.rfind("studio.", 0) != 0, w.c_str());
    QCOMPARE(recipeFromBridgeOverrides(written), r);
}

void TestRealRecipes::bridgePerfRecipesAllTaken()
{
    const nlohmann::json fixture = readFixture("bridge_perf_recipes.json");
    QVERIFY(fixture["recipes"].size() > 50);
    int withGraphs = 0, kept = 0;
    std::vector<std::string> notes;
    for (const nlohmann::json& recipe : fixture["recipes"]) {
        std::vector<std::string> args = recipe["overrides"].get<std::vector<std::string>>();
        const Recipe r = readPerfRecipe(&args);
        withGraphs += r.cuda_graph_impl != "none";
        kept += !r.extra_overrides.empty();
        if (!r.extra_overrides.empty())
            notes.push_back(keptSettingsNote(r));
    }
    QVERIFY(withGraphs > 0);
    qInfo("%d overrides set attributes the pinned config dataclasses lack (taken with ++)", gAdded);
    QVERIFY(kept > 0);
    QVERIFY(QString::fromStdString(notes.front()).startsWith(QStringLiteral("kept as given")));
}

void TestRealRecipes::megatronLmExamples_data()
{
    QTest::addColumn<QStringList>("command");
    QTest::addColumn<bool>("recomputeActivations");
    const nlohmann::json fixture = readFixture("megatron_lm_examples.json");
    QVERIFY2(!fixture.is_null(), "fixtures/megatron_lm_examples.json is missing");
    QVERIFY(fixture["scripts"].size() >= 4);
    for (const nlohmann::json& script : fixture["scripts"]) {
        QStringList words;
        bool recompute = false;
        for (const nlohmann::json& w : script["command"]) {
            words << QString::fromStdString(w.get<std::string>());
            recompute = recompute || w == "--recompute-activations";
        }
        QTest::newRow(script["path"].get<std::string>().c_str()) << words << recompute;
    }
}

void TestRealRecipes::megatronLmExamples()
{
    QFETCH(QStringList, command);
    QFETCH(bool, recomputeActivations);
    std::vector<std::string> args;
    for (const QString& w : command)
        args.push_back(w.toStdString());
    // The examples are those of main.
    const Recipe base = frontEndDefaults(InputFormat::MegatronFlags, Profile::Main);
    // gpt3's script passes its quoted schedule through an unquoted ${ARRAY[@]}, so bash splits it and
    // Megatron-LM's argparse refuses the pieces; so do we. Joined again, the rest of the line is taken.
    const auto schedule = std::find(args.begin(), args.end(), "--step-batch-size-schedule");
    if (schedule != args.end() && schedule + 2 < args.end() && schedule[2].rfind("--", 0) != 0) {
        try {
            recipeFromMegatronFlags(args, base);
            QFAIL("the split schedule was taken");
        } catch (const RecipeError& e) {
            QVERIFY2(e.message.find("unexpected argument") != std::string::npos, e.what());
        }
        const std::size_t at = std::size_t(schedule - args.begin()) + 1;
        std::size_t end = at;
        std::string joined;
        while (end < args.size() && args[end].rfind("--", 0) != 0)
            joined += (joined.empty() ? "" : " ") + args[end++];
        args.erase(args.begin() + std::ptrdiff_t(at), args.begin() + std::ptrdiff_t(end));
        args.insert(args.begin() + std::ptrdiff_t(at), joined);
    }
    Recipe r;
    try {
        r = recipeFromMegatronFlags(args, base);
    } catch (const RecipeError& e) {
        QFAIL(e.what());
    }
    QVERIFY(!r.launch_command.empty());
    QCOMPARE(QString::fromStdString(r.launch_command.back()), QStringLiteral("pretrain_gpt.py"));
    QCOMPARE(r.recompute_activations, recomputeActivations);
    QVERIFY(!r.recompute_granularity.has_value()); // none of them sets --recompute-granularity
    QVERIFY(r.num_layers > 0 && r.hidden_size > 0);
    QCOMPARE(QString::fromStdString(checkAgainstTable(args, megatronArgTable(Profile::Main))), QString());
    const std::vector<std::string> written = recipeToMegatronCommand(r);
    QCOMPARE(QString::fromStdString(checkAgainstTable(written, megatronArgTable(Profile::Main))), QString());
    QCOMPARE(recipeFromMegatronFlags(written, base), r);
}

void TestRealRecipes::writtenOverridesReadByOmegaConf()
{
    nlohmann::json lists = nlohmann::json::object();
    std::map<std::string, Recipe> recipes;
    for (const auto& [file, preset] : presets()) {
        for (Profile p : allProfiles()) {
            Recipe r = preset;
            r.profile = p;
            const std::string name = file.toStdString() + "@" + profileName(p);
            lists[name] = recipeToBridgeOverrides(r);
            recipes[name] = r;
        }
    }
    const nlohmann::json fixture = readFixture("bridge_perf_recipes.json");
    for (const nlohmann::json& recipe : fixture["recipes"]) {
        std::vector<std::string> args = recipe["overrides"].get<std::vector<std::string>>();
        const Recipe r = readPerfRecipe(&args);
        lists[recipe["function"].get<std::string>()] = recipeToBridgeOverrides(r);
        recipes[recipe["function"].get<std::string>()] = r;
    }
    const nlohmann::json read = omegaconfRead(lists);
    if (read.is_null())
        QFAIL("/usr/bin/python3 with python3-omegaconf is needed (scripts/setup.sh installs it)");
    int compared = 0;
    for (auto it = lists.begin(); it != lists.end(); ++it) {
        const nlohmann::json& tree = read[it.key()];
        QVERIFY2(!tree.contains("error"), (it.key() + ": " + tree.dump()).c_str());
        for (const nlohmann::json& o : it.value()) {
            const std::string text = o.get<std::string>();
            const std::string key = text.substr(0, text.find('='));
            const nlohmann::json value = at(tree, key);
            QVERIFY2(value != "<missing>", (it.key() + ": " + key).c_str());
            if (const auto expected = recipeValueFor(recipes[it.key()], key)) {
                QVERIFY2(looselyEqual(value, *expected),
                    (it.key() + ": " + text + " reads as " + value.dump() + ", the recipe holds "
                        + expected->dump())
                        .c_str());
                ++compared;
            }
        }
    }
    QVERIFY(compared > 100);
}

void TestRealRecipes::presetFlagsAgainstTheWholeTable()
{
    int checked = 0;
    for (const auto& [file, preset] : presets()) {
        for (Profile p : allProfiles()) {
            Recipe r = preset;
            r.profile = p;
            r.mixed_precision = std::nullopt; // a Bridge recipe name has no flag
            std::vector<std::string> flags;
            try {
                flags = recipeToMegatronCommand(r);
            } catch (const RecipeError& e) {
                continue; // refused rather than written wrong (selective [], ...)
            }
            const std::string problem = checkAgainstTable(flags, megatronArgTable(p));
            QVERIFY2(problem.empty(), (file.toStdString() + "@" + profileName(p) + ": " + problem).c_str());
            ++checked;
        }
    }
    QVERIFY(checked > 0);
}

void TestRealRecipes::roundTripThroughEveryFormat()
{
    for (const auto& [file, preset] : presets()) {
        for (InputFormat front :
            { InputFormat::Json, InputFormat::BridgeOverrides, InputFormat::MegatronFlags }) {
            Recipe r = preset;
            r.front_end = front;
            r.mixed_precision = std::nullopt;
            if (r.recompute_granularity == "selective" && r.recompute_modules && r.recompute_modules->empty())
                r.recompute_granularity = std::nullopt, r.recompute_modules = std::nullopt;
            // JSON
            const Recipe fromJson = recipeFromJsonText(recipeToJson(r).dump());
            QCOMPARE(fromJson, r);
            QCOMPARE(fromJson.explicit_keys, r.explicit_keys);
            // Bridge overrides with the '# studio:' line
            std::vector<std::string> overrides = { studioCommentLine(r) };
            for (const std::string& o : recipeToBridgeOverrides(r))
                overrides.push_back(o);
            const Recipe fromOverrides = recipeFromBridgeOverrides(overrides);
            QCOMPARE(fromOverrides, r);
            // Megatron-LM flags, then back to JSON: the flag-carried fields are unchanged
            Recipe flagBase = frontEndDefaults(InputFormat::MegatronFlags, r.profile);
            flagBase.name = r.name;
            flagBase.memory_target_gb = r.memory_target_gb;
            flagBase.warmup_iters = r.warmup_iters;
            flagBase.te_version = r.te_version;
            flagBase.gpu_compute_capability = r.gpu_compute_capability;
            flagBase.front_end = r.front_end;
            flagBase.data_parallel_size = r.data_parallel_size;
            flagBase.cpu_offloading = r.cpu_offloading;
            // No flag: Megatron-LM always sets it True (megatron_flags.h).
            flagBase.deallocate_pipeline_outputs = r.deallocate_pipeline_outputs;
            flagBase.enable_hyper_connections = r.enable_hyper_connections;
            flagBase.enable_mhc_connections = r.enable_mhc_connections;
            flagBase.mhc_recompute_layer_num = r.mhc_recompute_layer_num;
            if (!r.cuda_graph_modules || r.cuda_graph_modules->empty())
                flagBase.cuda_graph_modules = r.cuda_graph_modules;
            if (!r.recompute_granularity)
                flagBase.recompute_modules = r.recompute_modules;
            const Recipe fromFlags = recipeFromMegatronFlags(recipeToMegatronFlags(r), flagBase);
            QCOMPARE(recipeFromJsonText(recipeToJson(fromFlags).dump()), r);
        }
    }
}

QTEST_GUILESS_MAIN(TestRealRecipes)
#include "tst_real_recipes.moc"
