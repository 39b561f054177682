// SPDX-License-Identifier: Apache-2.0
#include "reportwriter.h"

#include <cmath>
#include <map>

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QDateTime>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPrinter>
#include <QSaveFile>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFrame>

#include "charts/chartview.h"
#include "core/recipe_json.h"
#include "core/step_stats.h"
#include "models/recipediffmodel.h"

namespace rs::ui {

using storage::RunRecord;

namespace {

QString esc(const QString& s)
{
    return s.toHtmlEscaped();
}

std::optional<Recipe> recipeOf(const RunRecord& run)
{
    if (run.recipeJson.isEmpty())
        return std::nullopt;
    try {
        return recipeFromJsonText(run.recipeJson.toStdString(), "run " + std::to_string(run.id));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

QString findingsTable(const std::vector<Finding>& findings)
{
    if (findings.empty())
        return QStringLiteral("<p>No findings: Megatron accepts this recipe.</p>");
    QString html = QStringLiteral(
        "<table class='grid'><tr><th>Severity</th><th>Rule</th><th>Message</th><th>Fix-it</th>"
        "<th>Source</th></tr>");
    for (const auto& f : findings) {
        html += QStringLiteral(
            "<tr><td class='%1'>%1</td><td>%2</td><td>%3</td><td>%4</td><td class='src'>%5</td></tr>")
                    .arg(QString::fromLatin1(severityName(f.severity)),
                        esc(QString::fromStdString(f.rule_id)), esc(QString::fromStdString(f.message)),
                        f.fixit ? esc(QString::fromStdString(f.fixit->description)) : QString(),
                        esc(QString::fromStdString(f.source)));
    }
    return html + QStringLiteral("</table>");
}

QString pngDataUri(const QImage& image)
{
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(bytes.toBase64());
}

} // namespace

ReportWriter::ReportWriter(const storage::Store& store, const QVector<qint64>& runIds)
    : m_store(store)
    , m_tables(storage::buildReport(store, std::nullopt, runIds))
    , m_title(QStringLiteral("Recompute Studio report"))
{
    // One trade-off chart per comparison, drawn off screen at a fixed size.
    for (const auto& table : m_tables) {
        QVector<RunRecord> runs;
        for (const auto& row : table.rows)
            runs << row.run;
        TradeoffChart chart;
        chart.setData(buildTradeoff(runs, TradeoffAxis::Absolute));
        m_charts << (chart.isEmpty() ? QImage() : chart.toImage(QSize(720, 380)));
    }
}

void ReportWriter::setEditedRecipe(const Recipe& recipe, const Validation& validation)
{
    m_edited = recipe;
    m_editedValidation = validation;
}

QString ReportWriter::tableHtml(const storage::ReportTable& table) const
{
    // A header row that repeats on each page the table runs onto; the notes column takes what is left.
    QString html = QStringLiteral(
        "<table class='grid' width='100%'><thead><tr><th>Run</th><th>Module set</th><th>Outcome</th>"
        "<th>Peak allocated (GB)</th><th>Step time (ms)</th><th>TFLOP/s/GPU</th>"
        "<th>Allocated vs []</th><th title='%1'>%2 vs []</th><th>Notes</th></tr></thead>")
                       .arg(QString::fromUtf8(kStepDeltaDefinition).toHtmlEscaped(),
                           QString::fromUtf8(kStepDeltaName));
    // Notes say what differs from the control; what holds for the whole table is said once below it.
    const QString controlPeakNote = table.control ? table.control->peakNote : QString();
    QStringList tableNotes;
    // Long notes (the guide's per-run provenance runs to a paragraph) go under the table as numbered notes:
    // in the cell they made each row a page tall.
    QStringList footnotes;
    auto cellNotes = [&footnotes](const QStringList& parts) {
        QStringList shortParts;
        for (const QString& part : parts) {
            if (part.size() <= 90) {
                shortParts << esc(part);
                continue;
            }
            qsizetype n = footnotes.indexOf(part);
            if (n < 0) {
                footnotes << part;
                n = footnotes.size() - 1;
            }
            shortParts << QStringLiteral("<i>note %1</i>").arg(n + 1);
        }
        return shortParts.join(QStringLiteral("; "));
    };
    for (const auto& row : table.rows) {
        const RunRecord& r = row.run;
        QString outcome = r.outcome;
        if (!r.failureStage.isEmpty())
            outcome += QStringLiteral(" in ") + r.failureStage;
        QStringList notes = row.match.reasons;
        for (const QString& n : row.match.notes) {
            if (!tableNotes.contains(n))
                tableNotes << n;
        }
        if (!r.peakNote.isEmpty() && (row.isControl || r.peakNote != controlPeakNote))
            notes.prepend(QStringLiteral("peak ") + r.peakNote);
        const QString controlNotes = table.control ? table.control->notes : QString();
        const QString runNotes = notesText(r.notes);
        if (!r.notes.isEmpty() && r.notes != controlNotes)
            notes << runNotes;
        else if (!r.notes.isEmpty() && !tableNotes.contains(runNotes))
            tableNotes.prepend(runNotes);
        if (!row.isControl && !row.match.matched)
            notes.prepend(QStringLiteral("NOT MATCHED with the control: no deltas"));
        html += QStringLiteral("<tr%1><td>%2</td><td>%3</td><td class='%4'>%5</td><td class='num'>%6</td>"
                               "<td class='num'>%7</td><td class='num'>%8</td><td class='num'>%9</td>")
                    .arg(row.isControl ? QStringLiteral(" class='control'") : QString())
                    .arg(r.id)
                    .arg(esc(r.moduleSetLabel()),
                        r.outcome == storage::outcome::Pass ? QStringLiteral("pass") : QStringLiteral("fail"),
                        esc(outcome), storage::formatGigabytes(r.peakAllocated),
                        r.steadyStepMs ? QString::number(*r.steadyStepMs, 'f', 2) : QString(),
                        r.modelTflops ? QString::number(*r.modelTflops, 'f', 2) : QString(),
                        row.isControl ? QStringLiteral("control")
                                      : storage::formatPercent(row.allocatedVsControlPct));
        html += QStringLiteral("<td class='num'>%1</td><td class='notes'>%2</td></tr>")
                    .arg(esc(storage::formatStepDelta(row)), cellNotes(notes));
    }
    html += QStringLiteral("</table>");
    for (int i = 0; i < footnotes.size(); ++i)
        html += QStringLiteral("<p class='muted'>Note %1: %2</p>").arg(i + 1).arg(esc(footnotes[i]));
    if (!tableNotes.isEmpty())
        html += QStringLiteral("<p class='muted'>%1</p>").arg(esc(tableNotes.join(QStringLiteral("; "))));
    return html;
}

QString ReportWriter::notesText(const QString& notes, int maxMessage)
{
    static const QString prefix = QStringLiteral("findings: ");
    if (!notes.startsWith(prefix))
        return notes;
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(notes.mid(prefix.size()).toUtf8(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isArray())
        return notes;
    QStringList parts;
    for (const QJsonValue& v : doc.array()) {
        const QJsonObject f = v.toObject();
        QString message = f.value(QStringLiteral("message")).toString().simplified();
        if (message.size() > maxMessage)
            message = message.left(maxMessage - 1).trimmed() + QChar(0x2026);
        parts << QStringLiteral("%1 %2: %3")
                     .arg(f.value(QStringLiteral("rule_id")).toString(),
                         f.value(QStringLiteral("severity")).toString(), message);
    }
    return parts.isEmpty() ? QString() : QStringLiteral("validator: ") + parts.join(QStringLiteral("; "));
}

QString ReportWriter::environmentHtml(const RunRecord& r) const
{
    auto opt = [](const auto& v) { return v ? QString::number(*v) : QStringLiteral("—"); };
    auto text = [](const QString& v) { return v.isEmpty() ? QStringLiteral("—") : v; };
    const QList<QPair<QString, QString>> rows = {
        { QStringLiteral("Source"),
            text(r.source) + (r.provenance.isEmpty() ? QString() : QStringLiteral(": ") + r.provenance) },
        { QStringLiteral("Device"),
            text(r.device) + QStringLiteral(" × ") + opt(r.gpuCount ? r.gpuCount : r.worldSize) },
        { QStringLiteral("Host"), text(r.host) },
        { QStringLiteral("Megatron Core revision"), text(r.megatronCoreRevision) },
        { QStringLiteral("Megatron Bridge revision"), text(r.bridgeRevision) },
        { QStringLiteral("Rules profile"), text(r.profile) },
        { QStringLiteral("Worker / LibTorch / CUDA / NCCL"),
            QStringList {
                text(r.workerVersion), text(r.libtorchVersion), text(r.cudaVersion), text(r.ncclVersion) }
                .join(QStringLiteral(" / ")) },
        { QStringLiteral("Precision, attention backend"),
            text(r.precision) + QStringLiteral(", ") + text(r.attentionBackend) },
        { QStringLiteral("seq / MBS / GBS"),
            QStringLiteral("%1 / %2 / %3")
                .arg(opt(r.seqLength), opt(r.microBatchSize), opt(r.globalBatchSize)) },
        { QStringLiteral("TP / PP / VPP / CP / EP"),
            QStringLiteral("%1 / %2 / %3 / %4 / %5")
                .arg(opt(r.tensorModelParallelSize), opt(r.pipelineModelParallelSize),
                    opt(r.virtualPipelineModelParallelSize), opt(r.contextParallelSize),
                    opt(r.expertModelParallelSize)) },
        { QStringLiteral("Steady window"), text(r.steadyWindow) },
    };
    QString html = QStringLiteral("<table class='kv'>");
    for (const auto& [k, v] : rows)
        html += QStringLiteral("<tr><th>%1</th><td>%2</td></tr>").arg(esc(k), esc(v));
    return html + QStringLiteral("</table>");
}

QString ReportWriter::diffHtml(const storage::ReportTable& table) const
{
    if (!table.control)
        return {};
    const std::optional<Recipe> control = recipeOf(*table.control);
    QString html = QStringLiteral(
        "<table class='grid'><tr><th>Run</th><th>Field</th><th>Control</th><th>This run</th></tr>");
    for (const auto& row : table.rows) {
        if (row.isControl)
            continue;
        const std::optional<Recipe> recipe = recipeOf(row.run);
        if (control && recipe) {
            const auto diff = diffRecipes(*control, *recipe);
            if (diff.empty())
                html += QStringLiteral("<tr><td>%1</td><td colspan='3'>identical recipes</td></tr>")
                            .arg(row.run.id);
            for (const auto& d : diff)
                html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                            .arg(row.run.id)
                            .arg(esc(QString::fromStdString(d.key)), esc(QString::fromStdString(d.control)),
                                esc(QString::fromStdString(d.recipe)));
        } else {
            // Imported and guide runs keep the measurement contract's fields, not a full recipe.
            html += QStringLiteral(
                "<tr><td>%1</td><td>recompute (stored fields)</td><td>%2</td><td>%3</td></tr>")
                        .arg(row.run.id)
                        .arg(esc(table.control->moduleSetLabel()), esc(row.run.moduleSetLabel()));
        }
    }
    return html + QStringLiteral("</table>");
}

QString ReportWriter::findingsHtml(const storage::ReportTable& table) const
{
    // One findings list per distinct recipe (by hash) of the comparison.
    QString html;
    QStringList seen;
    int withoutRecipe = 0;
    for (const auto& row : table.rows) {
        const std::optional<Recipe> recipe = recipeOf(row.run);
        if (!recipe) {
            ++withoutRecipe;
            continue;
        }
        const QString key = row.run.recipeHash.isEmpty() ? row.run.recipeJson : row.run.recipeHash;
        if (seen.contains(key))
            continue;
        seen << key;
        html
            += QStringLiteral("<p><b>Run %1 (%2)</b></p>").arg(row.run.id).arg(esc(row.run.moduleSetLabel()));
        html += findingsTable(validate(*recipe).findings);
    }
    if (withoutRecipe)
        html += QStringLiteral(
            "<p class='muted'>%1 run(s) carry no full recipe (imported or from the guide): the validator "
            "had nothing to check for them.</p>")
                    .arg(withoutRecipe);
    return html;
}

QString ReportWriter::html(bool embedImages) const
{
    QString html = QStringLiteral(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>%1</title><style>"
        "body { font-family: sans-serif; font-size: 10pt; margin: 1.5em; }"
        "h1 { font-size: 16pt; } h2 { font-size: 13pt; margin-top: 1.4em; } h3 { font-size: 11pt; }"
        "table.grid { border-collapse: collapse; margin: 0.4em 0; }"
        "table.grid th, table.grid td { border: 1px solid #999; padding: 2px 6px; }"
        "table.grid th { background: #e8eef5; } tr.control td { font-weight: bold; }"
        "td.num { text-align: right; } td.fail, td.error { color: #c62828; } td.warning { color: #b26a00; }"
        "td.note { color: #1e5aa8; } td.src, td.notes, .muted { color: #555; font-size: 9pt; }"
        "table.kv th { text-align: left; padding-right: 1em; font-weight: normal; color: #444; }"
        ".guide { background: #eef4fb; border: 1px solid #b6cde6; padding: 4px; }"
        "</style></head><body>")
                       .arg(esc(m_title));
    html += QStringLiteral("<h1>%1</h1><p class='muted'>Generated %2 by Recompute Studio %3 from %4.</p>")
                .arg(esc(m_title), QDateTime::currentDateTimeUtc().toString(Qt::ISODate),
                    QStringLiteral(RS_VERSION), esc(m_store.path()));
    if (!m_tables.isEmpty())
        html += QStringLiteral("<p class='muted'>%1: %2</p>")
                    .arg(QString::fromUtf8(kStepDeltaName), esc(QString::fromUtf8(kStepDeltaDefinition)));
    if (m_tables.isEmpty())
        html += QStringLiteral("<p>No runs to report.</p>");
    for (int i = 0; i < m_tables.size(); ++i) {
        const auto& table = m_tables[i];
        const RunRecord* first = table.control ? &*table.control
            : table.rows.isEmpty()             ? nullptr
                                               : &table.rows.front().run;
        const QString name = first ? (first->model.isEmpty() ? first->recipeName : first->model) : QString();
        html += table.control ? QStringLiteral("<h2>%1: matched comparison against control run %2</h2>")
                                    .arg(esc(name))
                                    .arg(table.control->id)
                              : QStringLiteral("<h2>Runs without a matched control</h2>");
        bool guide = false;
        for (const auto& row : table.rows)
            guide |= row.run.source == storage::source::Guide;
        if (guide)
            html += QStringLiteral(
                "<p class='guide'>Imported from the guide: these are the guide's published matched H100 "
                "measurements, not runs measured by this installation.</p>");
        html += QStringLiteral("<h3>Comparison</h3>") + tableHtml(table);
        if (!m_charts.value(i).isNull()) {
            const QString src = embedImages ? pngDataUri(m_charts[i]) : QStringLiteral("chart-%1.png").arg(i);
            html += QStringLiteral("<h3>Trade-off</h3><p><img src='%1' width='580'></p>").arg(src);
        }
        if (table.control) {
            html += QStringLiteral("<h3>Recipe differences against the control</h3>") + diffHtml(table);
            html += QStringLiteral("<h3>Environment and revisions (control run)</h3>")
                + environmentHtml(*table.control);
        }
        html += QStringLiteral("<h3>Validator findings</h3>") + findingsHtml(table);
    }
    if (m_edited) {
        html += QStringLiteral("<h2>The recipe being edited: %1</h2>")
                    .arg(esc(QString::fromStdString(m_edited->name)));
        html += QStringLiteral("<p>Rules profile %1.</p>")
                    .arg(QString::fromLatin1(profileName(m_edited->profile)));
        html += findingsTable(m_editedValidation.findings);
    }
    return html + QStringLiteral("</body></html>");
}

bool ReportWriter::write(const QString& path, QString* error) const
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("html") || suffix == QLatin1String("htm"))
        return writeHtml(path, error);
    if (suffix == QLatin1String("pdf"))
        return writePdf(path, error);
    if (suffix == QLatin1String("md"))
        return writeText(path, storage::ReportFormat::Markdown, error);
    if (suffix == QLatin1String("csv"))
        return writeText(path, storage::ReportFormat::Csv, error);
    *error = QStringLiteral("%1: unknown report type '%2'; use .html, .pdf, .md or .csv").arg(path, suffix);
    return false;
}

static bool saveText(const QString& path, const QByteArray& bytes, QString* error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        *error = QStringLiteral("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

bool ReportWriter::writeHtml(const QString& path, QString* error) const
{
    return saveText(path, html(true).toUtf8(), error);
}

bool ReportWriter::writeText(const QString& path, storage::ReportFormat format, QString* error) const
{
    QString text = storage::formatReport(m_tables, format);
    if (format == storage::ReportFormat::Markdown)
        text = QStringLiteral("# %1\n\n").arg(m_title) + text;
    return saveText(path, text.toUtf8(), error);
}

static void fillDocument(QTextDocument* document, const QString& html, const QVector<QImage>& charts)
{
    for (int i = 0; i < charts.size(); ++i) {
        if (!charts[i].isNull())
            document->addResource(
                QTextDocument::ImageResource, QUrl(QStringLiteral("chart-%1.png").arg(i)), charts[i]);
    }
    document->setHtml(html);
}

QImage ReportWriter::preview(int width, int height) const
{
    QTextDocument document;
    fillDocument(&document, html(false), m_charts);
    document.setTextWidth(width);
    QImage image(width, height, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter painter(&image);
    document.drawContents(&painter, QRectF(0, 0, width, height));
    return image;
}

namespace {
const QMarginsF kPdfMarginsMm(12, 12, 12, 12);
}

std::optional<int> ReportWriter::headingAtFoot(const QTextDocument* document, qreal keep)
{
    const qreal pageHeight = document->pageSize().height();
    if (!(pageHeight > 0) || pageHeight > 1e8)
        return std::nullopt;
    QAbstractTextDocumentLayout* layout = document->documentLayout();
    for (QTextBlock block = document->begin(); block.isValid(); block = block.next()) {
        if (block.blockFormat().headingLevel() <= 0
            || block.blockFormat().pageBreakPolicy() & QTextFormat::PageBreak_AlwaysBefore)
            continue;
        const QRectF r = layout->blockBoundingRect(block);
        const qreal pageEnd = (std::floor(r.top() / pageHeight) + 1.0) * pageHeight;
        // Room for what follows: a few lines, or all of a chart (an image is never split).
        qreal needed = std::min(keep, pageHeight / 3);
        if (block.next().isValid())
            needed = std::max(
                needed, std::min(layout->blockBoundingRect(block.next()).height(), pageHeight * 0.6));
        if (pageEnd - r.bottom() < needed)
            return block.blockNumber();
    }
    return std::nullopt;
}

std::unique_ptr<QTextDocument> ReportWriter::printDocument(qreal pageWidth) const
{
    // The printable area of landscape A4 inside the margins, at `pageWidth` layout pixels across: the
    // document is paginated here, so what is measured (headings, tables) is what prints.
    const QPageLayout page(
        QPageSize(QPageSize::A4), QPageLayout::Landscape, kPdfMarginsMm, QPageLayout::Millimeter);
    const QSizeF area = page.paintRect(QPageLayout::Millimeter).size();
    const QSizeF pageSize(pageWidth, pageWidth * area.height() / area.width());
    const QString text = html(false);
    // Each comparison (h2) after the first starts a page; then, one at a time from the top, each heading
    // left at a page's foot gets a break before it. Every try is a fresh document laid out whole: set by
    // CSS or changed block by block in place, Qt 6.4's layout left text blocks unpainted.
    auto make = [&](const QVector<int>& breaks) {
        auto d = std::make_unique<QTextDocument>();
        fillDocument(d.get(), text, m_charts);
        QTextBlockFormat format;
        format.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
        for (int n : breaks)
            QTextCursor(d->findBlockByNumber(n)).mergeBlockFormat(format);
        d->setPageSize(pageSize);
        return d;
    };
    QVector<int> breaks;
    {
        QTextDocument sections;
        fillDocument(&sections, text, m_charts);
        bool first = true;
        for (QTextBlock b = sections.begin(); b.isValid(); b = b.next()) {
            if (b.blockFormat().headingLevel() != 2)
                continue;
            if (!first)
                breaks << b.blockNumber();
            first = false;
        }
    }
    auto document = make(breaks);
    for (int tries = 0; tries < 50; ++tries) {
        const std::optional<int> foot = headingAtFoot(document.get());
        if (!foot)
            break;
        breaks << *foot;
        document = make(breaks);
    }
    return document;
}

bool ReportWriter::writePdf(const QString& path, QString* error) const
{
    const std::unique_ptr<QTextDocument> document = printDocument();
    QPrinter printer(QPrinter::HighResolution);
    printer.setOutputFormat(QPrinter::PdfFormat);
    printer.setOutputFileName(path);
    printer.setPageLayout(QPageLayout(
        QPageSize(QPageSize::A4), QPageLayout::Landscape, kPdfMarginsMm, QPageLayout::Millimeter));
    printer.setDocName(m_title);
    printer.setCreator(QStringLiteral("Recompute Studio"));
    // Page by page from the layout measured above (QTextDocument::print lost the text blocks of the pages
    // after a forced page break): each page is the document's page rectangle, scaled to the paper.
    QPainter painter;
    if (!painter.begin(&printer)) {
        *error = QStringLiteral("Cannot write %1").arg(path);
        return false;
    }
    const QSizeF page = document->pageSize();
    const qreal scale = std::min(printer.width() / page.width(), printer.height() / page.height());
    const int pages = document->pageCount();
    for (int i = 0; i < pages; ++i) {
        if (i > 0)
            printer.newPage();
        painter.save();
        painter.scale(scale, scale);
        painter.translate(0, -i * page.height());
        document->drawContents(&painter, QRectF(QPointF(0, i * page.height()), page));
        painter.restore();
    }
    painter.end();
    if (!QFileInfo(path).exists() || QFileInfo(path).size() == 0) {
        *error = QStringLiteral("Cannot write %1").arg(path);
        return false;
    }
    return true;
}

} // namespace rs::ui
