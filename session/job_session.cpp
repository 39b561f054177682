// SPDX-License-Identifier: Apache-2.0
#include "session/job_session.h"

#include <algorithm>

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QSysInfo>
#include <QTimer>

#include "core/advisor.h"
#include "core/rules.h"
#include "core/units.h"
#include "session/log.h"
#include "session/run_session.h"
#include "storage/significance.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;

namespace rs::session {

std::vector<std::optional<QString>> skipsByEstimate(const Recipe& base, InputFormat format,
    const std::vector<RecomputeChoice>& choices, std::optional<double> targetGb, Layout layout,
    QString* error)
{
    std::vector<std::optional<QString>> out(choices.size());
    if (!targetGb || choices.empty())
        return out;
    try {
        const Recipe resolved = validate(controlRecipe(base), format).resolved;
        const int dp = *targetGb < 1.0 ? 6 : 3;
        for (const RankedCandidate& c :
            rankCandidatesByEstimate(resolved, choices, targetGb, layout, -kEstimateErrorFraction)) {
            if (c.fits || c.index >= out.size())
                continue;
            out[c.index] = QString::fromStdString("estimated " + formatGb(c.peak_bytes, dp) + " GB (stage "
                + std::to_string(c.hottest_stage) + ", the hottest rank, " + layoutName(layout)
                + " layout) > target " + formatFixed(*targetGb, dp) + " GB, over it by more than the "
                + "estimator's " + formatFixed(kEstimateErrorFraction * 100.0, 0) + " % error");
        }
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromUtf8(e.what());
        return std::vector<std::optional<QString>>(choices.size());
    }
    return out;
}

JobSession::JobSession(storage::Store* store, QObject* parent)
    : QObject(parent)
    , m_store(store)
{
}

JobSession::~JobSession() = default;

bool JobSession::plan(const Recipe& base, InputFormat format, const std::vector<RecomputeChoice>& choices,
    const JobSessionOptions& options)
{
    m_options = options;
    m_format = format;
    m_plan.clear();
    m_estimateSkips.clear();
    m_skippedByRules = 0;
    m_refusal.clear();
    m_refusedByRules = false;
    m_recipeName = !options.recipeName.isEmpty() ? options.recipeName
        : base.name.empty()                      ? u"job"_s
                                                 : QString::fromStdString(base.name);
    // What Megatron-LM would allocate: the Megatron layout.
    QString estimateError;
    const std::vector<std::optional<QString>> overTarget = options.skipByEstimate
        ? skipsByEstimate(base, format, choices, options.targetGb, Layout::Megatron, &estimateError)
        : std::vector<std::optional<QString>>(choices.size());
    if (!estimateError.isEmpty())
        Q_EMIT message(u"no estimate ("_s + estimateError + u"): no candidate is skipped by it"_s);
    m_layoutRank.reset();
    try {
        if (options.oneRank) {
            m_layoutRank = layoutRankChoice(base, format, *options.oneRank);
            Q_EMIT message(QString::fromStdString("one rank of the layout on this GPU: rank "
                + std::to_string(m_layoutRank->rank) + " of " + std::to_string(m_layoutRank->world)
                + " (pipeline stage " + std::to_string(m_layoutRank->stage)
                + (m_layoutRank->hottest ? ", the hottest by the estimate" : "")
                + ") with Megatron-LM's --fake-process-group: the rank's real model, tensors and allocator, "
                  "every collective skipped, so NCCL's buffers and the communication time are not in its "
                  "memory or its step time"
                + (m_layoutRank->symmetricCollectives
                        ? "; MoE tokens cross ranks here, so the skipped collectives are filled as if every "
                          "rank held this rank's tensors (symmetric ranks): it receives its own routing's "
                          "share from each rank, no hotter expert than its own routing makes"
                        : "")));
        }
        for (int i = -1; i < int(choices.size()); ++i) {
            JobChoice p;
            if (i >= 0)
                p.choice = choices[std::size_t(i)];
            p.label = p.choice ? QString::fromStdString(p.choice->label()) : u"[]"_s;
            if (i >= 0 && overTarget[std::size_t(i)]) {
                m_estimateSkips.push_back({ p.label, *overTarget[std::size_t(i)] });
                Q_EMIT message(u"["_s + p.label + u"] skipped by its estimate, not run: "_s
                    + *overTarget[std::size_t(i)] + u" (--no-skip-by-estimate runs it)"_s);
                continue;
            }
            p.recipe = jobRecipe(base, format, p.choice);
            const Validation v = validate(p.recipe, format);
            if (v.hasErrors()) {
                QString text = u"["_s + p.label + u"] has rule errors, not run:"_s;
                for (const auto& f : v.findings)
                    if (f.severity == Severity::Error)
                        text += QString::fromStdString("\n  " + f.rule_id + " error: " + f.message);
                Q_EMIT message(text);
                if (!p.choice) {
                    m_refusedByRules = true;
                    m_refusal = u"the [] control of this job does not validate: nothing was run"_s;
                    return false;
                }
                ++m_skippedByRules;
                continue;
            }
            p.command = jobCommand(
                base, format, p.choice, { options.iters, options.oneRank }, options.bridgeLauncher);
            m_plan.push_back(std::move(p));
        }
    } catch (const std::exception& e) {
        m_refusal = QString::fromUtf8(e.what());
        return false;
    }
    return true;
}

bool JobSession::start()
{
    if (m_running || m_plan.empty() || !m_store) {
        m_refusal = m_running ? u"a sweep is already running"_s : u"nothing is planned"_s;
        return false;
    }
    m_logDir = m_options.logDir.isEmpty() ? QFileInfo(m_store->path()).absolutePath() + u"/job-logs"_s
                                          : m_options.logDir;
    if (!QDir().mkpath(m_logDir)) {
        m_refusal = u"cannot make the log folder "_s + m_logDir;
        return false;
    }
    // Two sweeps into one folder in the same second never share a log: the process id is in the name, and
    // JobRun makes each log as a new file.
    m_stamp = QDateTime::currentDateTimeUtc().toString(u"yyyyMMdd-HHmmss"_s) + u'-'
        + QString::number(QCoreApplication::applicationPid());
    m_controlRun.reset();
    m_candidateRuns.clear();
    m_moreControls.clear();
    m_reused = 0;
    m_cancelled = m_startFailed = false;
    m_failure.clear();
    m_running = true;
    m_current = 0;
    m_repeat = 0;
    qCDebug(lcSession) << "job sweep:" << m_plan.size() << "choices, logs in" << m_logDir;
    QTimer::singleShot(0, this, [this] {
        nextChoice();
        startNext();
    });
    return true;
}

void JobSession::cancel()
{
    m_cancelled = true;
    if (m_job && m_job->isRunning())
        m_job->cancel();
}

void JobSession::nextChoice()
{
    // The current choice's reuse key: its recipe hash, the same command (iterations included), launched
    // the same way (RunSession's lookup, as worker runs are reused).
    const JobChoice& p = m_plan[m_current];
    m_repeat = 0;
    m_signature = RunSession::signatureMark() + jobSignature(p.command, m_options.job);
    Recipe trained = p.recipe;
    trained.train_iters = m_options.iters;
    m_hashes = RunSession::recipeHashes(trained);
    m_reusable.clear();
    if (p.choice ? m_options.reuseCandidates : m_options.reuseControl) {
        const int cap = std::max(m_options.repeats, m_options.repeatsMax);
        m_reusable = RunSession::findStoredRuns(
            *m_store, { storage::source::Import, m_hashes, m_signature, std::nullopt, false });
        // Only a run that measured this very choice: a stored run whose own recompute settings differ (a
        // job that ignored the flags once) stands in for nothing.
        const RecomputeChoice planned = p.choice.value_or(RecomputeChoice {});
        m_reusable.erase(std::remove_if(m_reusable.begin(), m_reusable.end(),
                             [&](qint64 id) {
                                 const auto run = m_store->run(id);
                                 return !run || !storage::storedChoice(*run).sameAs(planned);
                             }),
            m_reusable.end());
        if (m_reusable.size() > cap)
            m_reusable.resize(cap); // the newest
        std::reverse(m_reusable.begin(), m_reusable.end()); // oldest first, as they were measured
    }
}

void JobSession::take(qint64 runId)
{
    JobChoice& p = m_plan[m_current];
    p.runs << runId;
    if (!p.choice) {
        if (!m_controlRun)
            m_controlRun = runId;
        else
            m_moreControls << runId;
    } else {
        m_candidateRuns << runId;
    }
}

void JobSession::startNext()
{
    while (m_current < m_plan.size()) {
        JobChoice& p = m_plan[m_current];
        const int cap = std::max(m_options.repeats, m_options.repeatsMax);
        ++m_repeat;
        bool done = m_cancelled || m_repeat > cap;
        if (!done && m_repeat > m_options.repeats) {
            const auto hw = storage::pooledIntervalHalfWidthPct(*m_store, p.runs);
            if (hw && *hw <= m_options.intervalTargetPct)
                done = true;
            else
                Q_EMIT message(u"["_s + p.label + u"]: the interval is "_s
                    + (hw ? u"+-"_s + QString::fromStdString(formatFixed(*hw, 2)) + u" %"_s
                          : u"not known yet"_s)
                    + u", wider than "_s + QString::fromStdString(formatFixed(m_options.intervalTargetPct, 2))
                    + u" %: run "_s + QString::number(m_repeat) + u" of at most "_s + QString::number(cap));
        }
        if (done) {
            if (m_cancelled)
                break;
            if (++m_current < m_plan.size())
                nextChoice();
            continue;
        }
        if (!m_reusable.isEmpty()) {
            const qint64 id = m_reusable.takeFirst();
            ++m_reused;
            take(id);
            Q_EMIT runStored(p.label, id, true, {});
            Q_EMIT message(u"["_s + p.label + u"] run "_s + QString::number(id)
                + u" reused: stored with the same recipe hash, command and iterations, launched the same way "
                  "(--rerun"_s
                + (p.choice ? QString() : u"-control or --rerun"_s) + u" runs it again)"_s);
            continue;
        }
        QString name = p.label;
        name.replace(u' ', u'-').replace(u',', u'+');
        if (name == u"[]"_s)
            name = u"control"_s;
        m_logPath = u"%1/%2-%3-%4.log"_s.arg(m_logDir, m_stamp, name).arg(m_repeat);
        for (int k = 2; QFileInfo(m_logPath).exists() || QFileInfo(m_logPath).isSymLink(); ++k)
            m_logPath = u"%1/%2-%3-%4-%5.log"_s.arg(m_logDir, m_stamp, name).arg(m_repeat).arg(k);
        m_tail.clear();
        m_job = std::make_unique<JobRun>();
        const QString label = p.label;
        connect(m_job.get(), &JobRun::line, this, [this, label](const QString& l) {
            m_tail << l;
            if (m_tail.size() > 20)
                m_tail.removeFirst();
            Q_EMIT line(label, l);
        });
        connect(m_job.get(), &JobRun::note, this, [this, label](const QString& n) { Q_EMIT note(label, n); });
        connect(m_job.get(), &JobRun::iteration, this,
            [this, label](const storage::IterationRow& row) { Q_EMIT iteration(label, row); });
        connect(m_job.get(), &JobRun::finished, this,
            [this](bool aborted, int, const QString& reason) { onRunFinished(aborted, reason); });
        QStringList words;
        for (const std::string& w : p.command)
            words << QString::fromStdString(w);
        Q_EMIT runStarted(label, words, m_logPath);
        QString error;
        if (!m_job->start(p.command, m_logPath, m_options.job, &error)) {
            m_failure = error;
            m_startFailed = true;
            break;
        }
        qCDebug(lcSession) << "job run" << label << "repeat" << m_repeat << "log" << m_logPath;
        return; // onRunFinished continues
    }
    finish();
}

void JobSession::onRunFinished(bool aborted, const QString& reason)
{
    JobChoice& p = m_plan[m_current];
    if (aborted)
        Q_EMIT runFailed(p.label, reason, m_tail);
    storage::ImportOptions io;
    io.recipeName = m_recipeName;
    io.autoLink = false;
    if (p.choice && m_controlRun)
        io.control = m_controlRun;
    // The log may have moved (its folder filled up) or be lost (no folder took it).
    m_logPath = m_job->logPath();
    storage::ImportResult imported;
    if (m_logPath.isEmpty())
        imported.error = u"its log could not be written: "_s + m_job->logFailures().join(u"; "_s);
    else
        imported = storage::importTrainingLog(m_store, m_logPath, io);
    if (!imported.runId) {
        m_failure = u"["_s + p.label + u"] was not stored: "_s + imported.error;
        // A log that holds the run, refused by the store (a full disk, a lock held too long): kept, and said
        // how to store it later, as the worker's spool is.
        if (!m_logPath.isEmpty() && !m_job->iterations().isEmpty())
            m_failure += u"; its %1 iteration(s) are kept in %2: `recompute import %2 --db %3` stores them"_s
                             .arg(m_job->iterations().size())
                             .arg(m_logPath, m_store->path());
        Q_EMIT message(m_failure);
        if (!p.choice) {
            finish();
            return;
        }
        m_repeat = std::max(m_options.repeats, m_options.repeatsMax); // this choice ends here
        QTimer::singleShot(0, this, &JobSession::startNext);
        return;
    }
    // A run that measured another choice (a launcher that dropped the recompute flags, a job that ignored
    // them) is kept in the store as what it measured, and stands in for nothing: this choice was not
    // measured, and ends here (the sweep exits 1 for it).
    if (const auto run = m_store->run(imported.runId)) {
        const RecomputeChoice planned = p.choice.value_or(RecomputeChoice {});
        if (run->recomputeGranularity == u"unknown"_s || !storage::storedChoice(*run).sameAs(planned)) {
            m_failure = u"["_s + p.label + u"] run "_s + QString::number(imported.runId) + u" measured "_s
                + (run->recomputeGranularity == u"unknown"_s ? u"a recompute choice its log does not tell"_s
                                                             : u"recompute "_s + run->moduleSetLabel())
                + u", not the planned "_s + p.label
                + u": the job did not take the recompute flags; kept in the store, not this choice's measurement"_s;
            Q_EMIT message(m_failure);
            if (!p.choice) {
                finish();
                return;
            }
            m_repeat = std::max(m_options.repeats, m_options.repeatsMax); // this choice ends here
            QTimer::singleShot(0, this, &JobSession::startNext);
            return;
        }
    }
    // What the reuse lookup reads: the recipe's hash, this machine, how it was launched.
    if (auto run = m_store->run(imported.runId)) {
        run->recipeHash = m_hashes.front();
        run->ingestHost = QSysInfo::machineHostName();
        if (m_layoutRank) // said on every such run (before the signature, which the reuse lookup reads last)
            run->provenance += QString::fromStdString("; one rank of the layout (rank "
                + std::to_string(m_layoutRank->rank) + " of " + std::to_string(m_layoutRank->world)
                + ") under --fake-process-group: NCCL's buffers and communication time are not in it");
        run->provenance += m_signature;
        if (!m_store->updateRun(*run))
            Q_EMIT message(u"run "_s + QString::number(imported.runId)
                + u": its launch could not be stored; it will not be reused"_s);
    }
    take(imported.runId);
    Q_EMIT runStored(p.label, imported.runId, false, imported.notes);
    // Calibration: the estimate of the same recipe beside the measured peak.
    const auto run = m_store->run(imported.runId);
    try {
        const MemoryEstimate e = estimateMemory(validate(p.recipe, m_format).resolved);
        std::optional<qint64> estimate = e.peak_bytes;
        if (m_layoutRank) // the rank that ran: its stage's peak
            for (const RankEstimate& r : e.ranks)
                if (r.stage == m_layoutRank->stage)
                    estimate = r.peak_bytes;
        Q_EMIT calibration(p.label, estimate, run ? run->peakAllocated : std::nullopt, {});
    } catch (const std::exception& ex) {
        Q_EMIT calibration(
            p.label, std::nullopt, run ? run->peakAllocated : std::nullopt, QString::fromUtf8(ex.what()));
    }
    if (aborted)
        m_repeat = std::max(m_options.repeats, m_options.repeatsMax); // a failed run is not repeated
    QTimer::singleShot(0, this, &JobSession::startNext);
}

void JobSession::finish()
{
    m_running = false;
    Q_EMIT finished();
}

} // namespace rs::session
