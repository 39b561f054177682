// SPDX-License-Identifier: Apache-2.0
#include "session/run_session.h"

#include <algorithm>

#include <QFileInfo>
#include <QSysInfo>
#include <QTimer>

#include "core/comparison.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/sha256.h"
#include "core/step_stats.h"
#include "storage/ingest.h"
#include "storage/significance.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;

namespace rs::session {

// The launcher's pieces (backend/launch) this session drives.
using namespace rs::launch;

namespace {

const QString kSignatureMark = u" | launch: "_s;

} // namespace

// The real worker stores the resolved recipe's hash; a recipe without silent adjustments has one hash.
QStringList RunSession::recipeHashes(const Recipe& r)
{
    QStringList out { QString::fromStdString(sha256Hex(recipeCanonicalText(r))) };
    const QString resolved
        = QString::fromStdString(sha256Hex(recipeCanonicalText(validate(r, InputFormat::Json).resolved)));
    if (!out.contains(resolved))
        out << resolved;
    return out;
}

QString RunSession::signatureMark()
{
    return kSignatureMark;
}

RunSession::RunSession(storage::Store* store, QObject* parent)
    : QObject(parent)
    , m_store(store)
    , m_launcher(std::make_unique<WorkerLauncher>())
{
    connect(m_launcher.get(), &WorkerLauncher::streamEvent, this, [this](const stream::Event& e) {
        if (m_ingest && !m_ingest->ingest(e) && !m_storeFailed) {
            m_storeFailed = true;
            emit message(tr("the store refused a row: %1").arg(m_ingest->error()));
        }
        emit streamEvent(e);
    });
    connect(m_launcher.get(), &WorkerLauncher::started, this, [this] { m_workerStarted = true; });
    connect(m_launcher.get(), &WorkerLauncher::iteration, this, &RunSession::iteration);
    connect(m_launcher.get(), &WorkerLauncher::stderrText, this, &RunSession::stderrText);
    connect(m_launcher.get(), &WorkerLauncher::note, this, &RunSession::message);
    connect(m_launcher.get(), &WorkerLauncher::malformedLine, this, &RunSession::malformedLine);
    connect(m_launcher.get(), &WorkerLauncher::finished, this, &RunSession::onLauncherFinished);
}

RunSession::~RunSession()
{
    // The launcher kills a running worker; what was measured is kept (the ingest ends the run aborted).
    m_launcher.reset();
    m_ingest.reset();
}

QStringList RunSession::ruleErrors(const QVector<Recipe>& recipes, InputFormat format)
{
    QStringList out;
    for (const Recipe& r : recipes) {
        const Validation v = validate(r, format);
        for (const Finding& f : v.findings) {
            if (f.severity == Severity::Error)
                out << u"[%1] %2 error: %3"_s.arg(
                    recomputeLabel(r), QString::fromStdString(f.rule_id), QString::fromStdString(f.message));
        }
    }
    out.removeDuplicates();
    return out;
}

QString RunSession::recomputeLabel(const Recipe& r)
{
    const std::string g = r.recompute_granularity.value_or("");
    if (g == "full") {
        QString label = u"full"_s;
        if (r.recompute_method)
            label += u' ' + QString::fromStdString(*r.recompute_method);
        if (r.recompute_num_layers)
            label += u' ' + QString::number(*r.recompute_num_layers);
        return label;
    }
    if (g.empty())
        return u"none"_s;
    if (!r.recompute_modules)
        return u"core_attn (default)"_s;
    RecomputeChoice c;
    c.modules = *r.recompute_modules;
    return QString::fromStdString(c.label());
}

QString RunSession::launchSignature(const LaunchOptions& o)
{
    QString worker;
    if (o.slurm && !o.slurm->loginHost.isEmpty()) {
        worker = u"%1 %2"_s.arg(
            o.slurm->loginHost, o.remoteWorker.isEmpty() ? u"recompute-bench"_s : o.remoteWorker);
    } else if (!o.sshHost.isEmpty()) {
        worker
            = u"ssh %1 %2"_s.arg(o.sshHost, o.remoteWorker.isEmpty() ? u"recompute-bench"_s : o.remoteWorker);
        if (!o.sshOptions.isEmpty())
            worker += u" (ssh "_s + o.sshOptions.join(u' ') + u')';
    } else {
        const QString path = o.workerPath.isEmpty() ? findWorker() : o.workerPath;
        worker = path.isEmpty() ? u"recompute-bench"_s : QFileInfo(path).absoluteFilePath();
    }
    QString s = u"worker %1, ranks %2"_s.arg(worker).arg(launchRanks(o));
    if (!o.extraArguments.isEmpty())
        s += u", arguments "_s + o.extraArguments.join(u' ');
    if (o.slurm) {
        // What places the ranks and their devices (not the time limit, account or folders): a control
        // measured on Slurm stands in only for Slurm runs of the same allocation.
        s += u", "_s + slurmAllocationSignature(*o.slurm);
    }
    return s;
}

std::optional<qint64> RunSession::findReusableControl(
    const Recipe& control, const LaunchOptions& options) const
{
    const QVector<qint64> runs = findReusableRuns(control, options, true);
    return runs.isEmpty() ? std::nullopt : std::optional<qint64>(runs.front());
}

QVector<qint64> RunSession::findReusableRuns(
    const Recipe& recipe, const LaunchOptions& options, bool explicitControlOnly) const
{
    if (!m_store || !m_store->isOpen())
        return {};
    ReuseKey key;
    key.source = storage::source::Worker;
    key.recipeHashes = recipeHashes(recipe);
    key.signature = kSignatureMark + launchSignature(options);
    key.worldSize = launchRanks(options);
    key.explicitControlOnly = explicitControlOnly;
    return findStoredRuns(*m_store, key);
}

QVector<qint64> RunSession::findStoredRuns(const storage::Store& store, const ReuseKey& key)
{
    QVector<qint64> out;
    if (!store.isOpen())
        return out;
    storage::RunFilter f;
    if (key.explicitControlOnly)
        f.moduleSet = QStringList {}; // explicit [] controls, newest first
    f.source = key.source;
    f.outcome = storage::outcome::Pass;
    const QString thisHost = QSysInfo::machineHostName();
    for (const storage::RunRecord& r : store.listRuns(f)) {
        // Launched from this machine (a store copied from elsewhere names other paths and hosts).
        if ((key.explicitControlOnly && !r.isExplicitControl())
            || (key.worldSize && r.worldSize.value_or(1) != *key.worldSize) || r.ingestHost != thisHost
            || !r.provenance.endsWith(key.signature))
            continue;
        if (key.recipeHashes.contains(r.recipeHash)) {
            out << r.id;
            continue;
        }
        if (r.recipeJson.isEmpty())
            continue;
        try {
            // The stored (resolved) recipe, hashed as ours: a worker that hashes differently still matches.
            const Recipe stored = recipeFromJsonText(r.recipeJson.toStdString(), "stored run");
            for (const QString& h : recipeHashes(stored)) {
                if (key.recipeHashes.contains(h)) {
                    out << r.id;
                    break;
                }
            }
        } catch (const std::exception&) {
            // a recipe this build cannot read is not reused
        }
    }
    return out;
}

std::optional<double> RunSession::intervalHalfWidthPct(const QVector<qint64>& runs) const
{
    if (!m_store || !m_store->isOpen())
        return std::nullopt;
    return storage::pooledIntervalHalfWidthPct(*m_store, runs);
}

bool RunSession::start(const QVector<Recipe>& candidates, const SessionOptions& options)
{
    m_refusal.clear();
    if (m_running) {
        m_refusal = tr("a launch is already running");
        return false;
    }
    if (!m_store) {
        m_refusal = tr("no measurement store is open; nothing would be kept");
        return false;
    }
    // A store that could not be opened loses nothing: each run's ingest spools its stream beside it.
    if (!m_store->isOpen())
        emit message(tr("the store is not open: every run's stream will be spooled to a file"));
    if (candidates.isEmpty()) {
        m_refusal = tr("nothing to run");
        return false;
    }
    if (options.repeats < 1) {
        m_refusal = tr("repeats: %1; at least 1").arg(options.repeats);
        return false;
    }
    // A host ssh could not reach (or would read as an option) is refused before any run row exists.
    if (!options.launch.sshHost.isEmpty()) {
        QString destination, port, problem;
        if (!parseSshHost(options.launch.sshHost, &destination, &port, &problem)) {
            m_refusal = problem;
            return false;
        }
    }
    m_options = options;
    m_jobs.clear();
    m_current = -1;
    m_cancelled = false;
    m_storeFailed = false;
    m_controlReused = false;
    m_reusedDate = {};
    m_controlRun = options.control;
    m_startError.clear();
    m_controlRefusal.clear();

    const bool withControl = options.controlFirst && !options.control;
    const Recipe control = controlRecipe(candidates.front());
    QVector<Recipe> checked;
    if (withControl)
        checked << control;
    for (const Recipe& r : candidates) {
        // The [] control as a candidate is the control itself: run (or reused) once.
        if (!(withControl && isControlRecipe(r)))
            checked << r;
    }
    const QStringList errors = ruleErrors(checked, options.format);
    if (!errors.isEmpty()) {
        m_refusal = tr("refused: the recipe has rule errors, nothing was started or stored:\n  %1")
                        .arg(errors.join(u"\n  "_s));
        return false;
    }

    const bool untilNarrow = options.repeatsMax > options.repeats;
    const int cap = untilNarrow ? options.repeatsMax : options.repeats;
    // Every choice (the control first) with the stored runs that may stand in for it, oldest first.
    struct Planned {
        Recipe recipe;
        bool isControl;
        QVector<qint64> reuse;
    };
    std::vector<Planned> choices;
    auto add = [&](const Recipe& r, bool isControl, QVector<qint64> reuse) {
        if (reuse.size() > cap)
            reuse.resize(cap); // the newest
        std::reverse(reuse.begin(), reuse.end()); // oldest first, as they were measured
        choices.push_back({ r, isControl, reuse });
    };
    if (withControl) {
        // The control is a choice like the others: run `repeats` times too, so that its median step time
        // is known as well as theirs (the candidates link to its first run; the others pool with it).
        add(control, true,
            options.reuseControl ? findReusableRuns(control, options.launch, true) : QVector<qint64> {});
    }
    for (const Recipe& r : candidates) {
        if (withControl && isControlRecipe(r))
            continue;
        add(r, false, options.reuseCandidates ? findReusableRuns(r, options.launch) : QVector<qint64> {});
    }
    // In rounds: the control's run i, then each candidate's run i, then round i + 1. A drift of the host's
    // speed over the launch (a neighbour's load, clocks) then falls on every choice alike instead of on
    // whichever choice ran while it lasted.
    int rounds = 0;
    for (const Planned& c : choices)
        rounds = std::max(rounds, std::max(options.repeats, int(c.reuse.size())));
    for (int i = 1; i <= rounds; ++i) {
        for (const Planned& c : choices) {
            const int runs = std::max(options.repeats, int(c.reuse.size()));
            if (i > runs)
                continue;
            SessionJob job;
            job.label = c.isControl ? u"[]"_s : recomputeLabel(c.recipe);
            job.recipe = c.recipe;
            job.isControl = c.isControl;
            job.repeat = i;
            job.repeats = untilNarrow ? options.repeatsMax : runs;
            if (i <= c.reuse.size()) {
                job.runId = c.reuse[i - 1];
                job.reused = true;
            }
            m_jobs.push_back(job);
        }
    }
    if (withControl && m_jobs.front().reused) {
        const qint64 first = m_jobs.front().runId;
        const auto run = m_store->run(first);
        m_controlRun = first;
        m_controlReused = true;
        m_reusedDate = run ? run->createdAt : QDateTime();
        emit message(tr("[] control: reusing stored run %1 of %2 (same recipe, same launch settings); "
                        "not run again")
                         .arg(first)
                         .arg(m_reusedDate.toString(u"yyyy-MM-dd HH:mm 'UTC'"_s)));
    }
    m_narrow.clear();
    m_running = true;
    QTimer::singleShot(0, this, &RunSession::startNext);
    return true;
}

void RunSession::cancel(int graceMs)
{
    if (!m_running)
        return;
    m_cancelled = true;
    if (m_launcher->isRunning())
        m_launcher->cancel(graceMs);
    else if (!m_ingest)
        QTimer::singleShot(0, this, &RunSession::finish);
}

const SessionJob* RunSession::currentJob() const
{
    return m_current >= 0 && m_current < m_jobs.size() ? &m_jobs[m_current] : nullptr;
}

QVector<qint64> RunSession::storedRuns() const
{
    QVector<qint64> out;
    for (const SessionJob& j : m_jobs) {
        if (j.runId && !j.reused)
            out << j.runId;
    }
    return out;
}

QVector<qint64> RunSession::candidateRuns() const
{
    QVector<qint64> out;
    for (const SessionJob& j : m_jobs) {
        if (j.runId && !j.isControl)
            out << j.runId;
    }
    return out;
}

std::optional<qint64> RunSession::currentPeakAllocated() const
{
    return m_ingest ? m_ingest->currentPeakAllocated() : std::nullopt;
}

int RunSession::currentIterations() const
{
    return m_ingest ? m_ingest->iterationCount() : 0;
}

void RunSession::startNext()
{
    if (!m_running)
        return;
    if (m_cancelled || m_current + 1 >= m_jobs.size()) {
        finish();
        return;
    }
    ++m_current;
    SessionJob& job = m_jobs[m_current];
    if (job.reused) {
        // Measured before with this recipe and these settings: taken, not run again.
        emit jobStarted(m_current);
        const auto run = m_store->run(job.runId);
        if (!(job.isControl && job.runId == m_controlRun)) // start() said so for the control's first
            emit message(
                tr("[%1]: reusing stored run %2 of %3 (same recipe, same launch settings); not run again")
                    .arg(job.label)
                    .arg(job.runId)
                    .arg(run ? run->createdAt.toString(u"yyyy-MM-dd HH:mm 'UTC'"_s) : QString()));
        emit jobFinished(m_current);
        repeatIfWide(m_current);
        QTimer::singleShot(0, this, &RunSession::startNext);
        return;
    }
    const nlohmann::json recipe = recipeToJson(job.recipe);
    m_ingest = std::make_unique<storage::RunIngest>(m_store);
    m_ingest->setRecipe(recipe);
    // A locked or unwritable store is waited on or spooled by the ingest; the user hears why.
    m_ingest->setNotifier([this](const QString& text) { emit message(text); });
    QString provenance = m_options.provenance;
    if (job.repeats > 1)
        provenance += u" (repeat %1 of %2)"_s.arg(job.repeat).arg(job.repeats);
    m_ingest->setProvenance(provenance + kSignatureMark + launchSignature(m_options.launch));
    if (job.isControl)
        m_ingest->setControl(std::nullopt);
    else if (m_controlRun)
        m_ingest->setControl(m_controlRun);
    emit jobStarted(m_current);
    m_workerStarted = false;
    QString error;
    if (!m_launcher->start(recipe, m_options.launch, &error)) {
        // Said and stored (an aborted run that names why), and nothing further runs.
        m_startError = error;
        emit message(error);
        m_ingest->finish(error);
        job.runId = m_ingest->runId();
        job.aborted = true;
        job.reason = error;
        m_ingest.reset();
        emit jobFinished(m_current);
        finish();
    }
}

void RunSession::onLauncherFinished(bool aborted, int, const QString& reason)
{
    if (m_current < 0 || m_current >= m_jobs.size() || !m_ingest)
        return;
    SessionJob& job = m_jobs[m_current];
    job.aborted = aborted;
    job.reason = aborted ? reason : QString();
    if (!m_ingest->finish(aborted
                ? (reason.isEmpty() ? u"the worker's stream ended without a result"_s : reason)
                : QString()))
        emit message(m_ingest->error());
    job.runId = m_ingest->runId();
    job.spoolPath = m_ingest->spoolPath();
    if (!job.spoolPath.isEmpty())
        emit message(u"the run is not in the store (%1); every event the worker sent is kept in %2; "
                     "`recompute import %2` stores it"_s.arg(m_ingest->spoolReason(), job.spoolPath));
    m_ingest.reset();
    if (job.isControl && job.runId && !m_controlRun)
        m_controlRun = job.runId; // the first; repeats of the control pool with it
    if (!m_workerStarted && aborted) {
        // The process never started (a path that is not an executable): said, and nothing further runs.
        m_startError = reason;
        emit message(reason);
        emit jobFinished(m_current);
        finish();
        return;
    }
    if (!job.isControl && job.runId && m_controlRun) {
        const storage::MatchCheck m = m_store->matchCheck(job.runId, *m_controlRun);
        if (!m.matched)
            emit message(tr("run %1 [%2] is NOT MATCHED with the control run %3, not compared: %4")
                             .arg(job.runId)
                             .arg(job.label)
                             .arg(*m_controlRun)
                             .arg(m.reasons.join(u"; "_s)));
    }
    // The worker refused the [] control itself (an invalid recipe for this host: "needs about 281 GB, this
    // host has 25 GB"): every candidate has its shape and would be refused alike, and none could be compared
    // with it. Nothing further runs, and the session says why.
    if (job.isControl && job.runId && !aborted) {
        const auto run = m_store->run(job.runId);
        if (run && run->outcome == storage::outcome::Invalid) {
            m_controlRefusal = tr("the worker refused the [] control (run %1): %2; the candidates have its "
                                  "shape and were not run")
                                   .arg(job.runId)
                                   .arg(run->message.isEmpty() ? run->outcome : run->message);
            emit message(m_controlRefusal);
            emit jobFinished(m_current);
            finish();
            return;
        }
    }
    emit jobFinished(m_current);
    repeatIfWide(m_current);
    // The next worker starts from the event loop, not inside the finished process's own signal.
    QTimer::singleShot(0, this, &RunSession::startNext);
}

void RunSession::repeatIfWide(int index)
{
    // Decided once a round is over (the last planned job done): every choice whose interval is still wide
    // gets one more run, all of them in one new round, the control first.
    if (m_options.repeatsMax <= m_options.repeats || m_cancelled || index != m_jobs.size() - 1)
        return;
    QVector<int> lastOfChoice; // per choice, its last job, in plan order
    auto sameChoice = [](const SessionJob& a, const SessionJob& b) {
        return a.isControl == b.isControl && (a.isControl || a.recipe == b.recipe);
    };
    for (int k = 0; k < m_jobs.size(); ++k) {
        auto it = std::find_if(lastOfChoice.begin(), lastOfChoice.end(),
            [&](int j) { return sameChoice(m_jobs[j], m_jobs[k]); });
        if (it == lastOfChoice.end())
            lastOfChoice << k;
        else
            *it = k;
    }
    QVector<SessionJob> round;
    for (int last : lastOfChoice) {
        const SessionJob& job = m_jobs[last];
        if (m_narrow.contains(last) || job.aborted || !job.runId)
            continue; // settled, or a run that ended without a result stops the repeats of its choice
        QVector<qint64> runs;
        for (const SessionJob& o : m_jobs) {
            if (sameChoice(o, job) && o.runId && !o.aborted)
                runs << o.runId;
        }
        const std::optional<double> hw = intervalHalfWidthPct(runs);
        const QString width = hw ? u"+-%1 %"_s.arg(*hw, 0, 'f', 2) : tr("no interval yet");
        if (hw && *hw <= m_options.intervalTargetPct) {
            m_narrow << last;
            emit message(tr("[%1]: the 95 % interval of the median step time is %2 after %3 run(s), within "
                            "the %4 % target")
                             .arg(job.label, width)
                             .arg(runs.size())
                             .arg(m_options.intervalTargetPct));
            continue;
        }
        if (runs.size() >= m_options.repeatsMax) {
            m_narrow << last;
            emit message(tr("[%1]: the 95 % interval of the median step time is still %2 after %3 run(s), "
                            "wider than the %4 % target; the cap of %5 runs is reached")
                             .arg(job.label, width)
                             .arg(runs.size())
                             .arg(m_options.intervalTargetPct)
                             .arg(m_options.repeatsMax));
            continue;
        }
        SessionJob next;
        next.label = job.label;
        next.recipe = job.recipe;
        next.isControl = job.isControl;
        next.repeat = int(runs.size()) + 1;
        next.repeats = m_options.repeatsMax;
        round << next;
        emit message(tr("[%1]: the 95 % interval of the median step time is %2 after %3 run(s), wider than "
                        "the %4 % target: run %5 of at most %6")
                         .arg(job.label, width)
                         .arg(runs.size())
                         .arg(m_options.intervalTargetPct)
                         .arg(next.repeat)
                         .arg(m_options.repeatsMax));
    }
    // A settled choice's last job keeps its index: the new round goes after every planned job.
    m_jobs += round;
}

void RunSession::finish()
{
    if (!m_running)
        return;
    m_running = false;
    emit finished();
}

} // namespace rs::session
