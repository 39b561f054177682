// SPDX-License-Identifier: Apache-2.0
// Reports of stored runs, as the guide asks them to be read: per matched comparison, the comparison table
// (Store's own, never comparing unmatched runs), the trade-off chart, each run's recipe diff against its
// control, the environment and revisions, and the validator's findings for every recipe involved (and for
// the recipe being edited). HTML (self-contained, charts embedded) and PDF carry all of it; Markdown and
// CSV carry the comparison tables (storage/report.h's formats).
#pragma once

#include <memory>
#include <optional>

#include <QImage>
#include <QString>
#include <QVector>

#include "core/recipe.h"
#include "core/rules.h"
#include "storage/report.h"

class QTextDocument;

namespace rs::ui {

class ReportWriter {
public:
    // runIds: the runs to report (all when empty), grouped by their stored matched control.
    ReportWriter(const storage::Store& store, const QVector<qint64>& runIds);

    // Adds a section with the findings for the recipe in the editor.
    void setEditedRecipe(const Recipe& recipe, const Validation& validation);
    void setTitle(const QString& title) { m_title = title; }

    const QVector<storage::ReportTable>& tables() const { return m_tables; }
    // embedImages: charts as data: URIs (a standalone .html); otherwise as resource names "chart-N.png"
    // that chartImages() supplies (QTextDocument, for PDF).
    QString html(bool embedImages) const;
    QVector<QImage> chartImages() const { return m_charts; }

    // By suffix: .html/.htm, .pdf, .md, .csv. False with a message naming the file on failure.
    bool write(const QString& path, QString* error) const;
    bool writeHtml(const QString& path, QString* error) const;
    bool writePdf(const QString& path, QString* error) const;
    bool writeText(const QString& path, storage::ReportFormat format, QString* error) const;
    // The first `height` pixels of the report laid out `width` pixels wide, as the PDF draws it (previews,
    // the user guide's screenshot).
    QImage preview(int width, int height) const;
    // The document the PDF prints: laid out on landscape A4 pages `pageWidth` layout pixels wide, each
    // comparison starting a page and no heading left alone at a page's foot.
    std::unique_ptr<QTextDocument> printDocument(qreal pageWidth = kPdfPageWidth) const;
    static constexpr qreal kPdfPageWidth = 1120.0;
    // The first heading that would sit at a page's foot (less than `keep` pixels, or less than the chart
    // after it, below it), by block number. The document must have a page size.
    static std::optional<int> headingAtFoot(const QTextDocument* document, qreal keep = 140.0);
    // A run's stored notes as a reader wants them: the worker's findings JSON ("findings: [{...}]") as
    // "R12 error: message; ..." (messages cut at `maxMessage` characters; the full ones are in the
    // findings section), anything else as it is.
    static QString notesText(const QString& notes, int maxMessage = 110);

private:
    QString tableHtml(const storage::ReportTable& table) const;
    QString environmentHtml(const storage::RunRecord& run) const;
    QString diffHtml(const storage::ReportTable& table) const;
    QString findingsHtml(const storage::ReportTable& table) const;

    const storage::Store& m_store;
    QVector<storage::ReportTable> m_tables;
    QVector<QImage> m_charts; // one trade-off chart per table
    QString m_title;
    std::optional<Recipe> m_edited;
    Validation m_editedValidation;
};

} // namespace rs::ui
