// SPDX-License-Identifier: Apache-2.0
// Private to the store's sources (store_schema.cpp, store_write.cpp, store_read.cpp, store_recovery.cpp,
// store_links.cpp): the runs column table and the value conversions they share. Not installed, not
// included outside storage/.
#pragma once

#include <functional>
#include <optional>
#include <type_traits>

#include <QSqlQuery>
#include <QString>
#include <QVariant>
#include <QVector>

#include "storage/store.h"

#ifdef RS_HAVE_SQLITE3
#include <sqlite3.h>

#include <QSqlDatabase>
#include <QSqlDriver>
#endif

namespace rs::storage::detail {

// --- the runs table, column by column: one list drives CREATE, INSERT, UPDATE and SELECT ---
struct Column {
    QString name;
    QString type;
    int sinceVersion;
    std::function<QVariant(const RunRecord&)> get;
    std::function<void(RunRecord&, const QVariant&)> set;
};

inline QVariant nullOf(QMetaType::Type t)
{
    return QVariant(QMetaType(t));
}

template <typename T> QVariant optVar(const std::optional<T>& v)
{
    if constexpr (std::is_same_v<T, bool>)
        return v ? QVariant(int(*v)) : nullOf(QMetaType::Int);
    else if constexpr (std::is_same_v<T, double>)
        return v ? QVariant(*v) : nullOf(QMetaType::Double);
    else if constexpr (std::is_same_v<T, qint64>)
        return v ? QVariant(*v) : nullOf(QMetaType::LongLong);
    else
        return v ? QVariant(*v) : nullOf(QMetaType::Int);
}

template <typename T> std::optional<T> varOpt(const QVariant& v)
{
    if (v.isNull() || !v.isValid())
        return std::nullopt;
    if constexpr (std::is_same_v<T, bool>)
        return v.toInt() != 0;
    else if constexpr (std::is_same_v<T, double>)
        return v.toDouble();
    else if constexpr (std::is_same_v<T, qint64>)
        return v.toLongLong();
    else
        return v.toInt();
}

inline QVariant textVar(const QString& s)
{
    return s.isEmpty() ? nullOf(QMetaType::QString) : QVariant(s);
}

// The runs table's columns, in table order (store_schema.cpp), and those a file of `version` has.
const QVector<Column>& runColumns();
QVector<const Column*> columnsFor(int version);
// Filtering by module set ignores order: "layernorm, moe_act" and "moe_act, layernorm" are one set.
QString moduleKey(const std::optional<QStringList>& modules);
QString sqlError(const QSqlQuery& q);
QString joinInts(const QVector<qint64>& ids);
QString sqlType(ColumnType t);
// The index in iterationColumns() of the column a stream key fills (-1: none; columns not from the stream
// are not found).
int iterationColumnIndex(const QByteArray& key);
int iterationColumnIndex(const QString& key);
QString columnDefinition(const QString& name, ColumnType type, const QString& constraint);

// One byte count of an attribution: a category, or the activations of one (layer, region).
struct AttributionBytesRow {
    qint64 runId = 0;
    int rank = 0;
    QString phase;
    QString kind; // category | activation
    QString name; // the category, or the region
    std::optional<int> layer;
    qint64 bytes = 0;
};
const QVector<TableColumn<PeakAttributionRow>>& peakAttributionColumns();
const QVector<TableColumn<AttributionBytesRow>>& attributionBytesColumns();
const QVector<TableColumn<MemoryLayoutRow>>& memoryLayoutColumns();

// INSERT OR REPLACE of one row through a column table (every column).
template <typename Row>
bool insertRow(const QSqlDatabase& db, const QString& table, const QVector<TableColumn<Row>>& columns,
    const Row& row, QString* error)
{
    QStringList names, marks;
    for (const auto& c : columns) {
        names << c.name;
        marks << QStringLiteral("?");
    }
    QSqlQuery q(db);
    q.prepare(QStringLiteral("INSERT OR REPLACE INTO %1 (%2) VALUES (%3)")
                  .arg(table, names.join(u','), marks.join(u',')));
    for (const auto& c : columns)
        q.addBindValue(c.get(row));
    if (!q.exec()) {
        *error = sqlError(q);
        return false;
    }
    return true;
}

// SELECT of rows through a column table; `where` binds `binds`.
template <typename Row>
QVector<Row> selectRows(const QSqlDatabase& db, const QString& table,
    const QVector<TableColumn<Row>>& columns, const QString& where, const QVariantList& binds,
    const QString& orderBy)
{
    QStringList names;
    for (const auto& c : columns)
        names << c.name;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    QString sql = QStringLiteral("SELECT %1 FROM %2").arg(names.join(u','), table);
    if (!where.isEmpty())
        sql += QStringLiteral(" WHERE ") + where;
    if (!orderBy.isEmpty())
        sql += QStringLiteral(" ORDER BY ") + orderBy;
    q.prepare(sql);
    for (const auto& b : binds)
        q.addBindValue(b);
    QVector<Row> out;
    if (!q.exec())
        return out;
    while (q.next()) {
        Row r;
        for (int i = 0; i < columns.size(); ++i)
            columns[i].set(r, q.value(i));
        out << r;
    }
    return out;
}

#ifdef RS_HAVE_SQLITE3
// The QSQLITE connection's own sqlite3 handle (the driver links the same system libsqlite3).
inline sqlite3* sqliteHandle(const QSqlDatabase& db)
{
    const QVariant v = db.driver()->handle();
    if (!v.isValid() || qstrcmp(v.typeName(), "sqlite3*") != 0)
        return nullptr;
    return *static_cast<sqlite3* const*>(v.constData());
}
template <typename T> int bindOpt(sqlite3_stmt* st, int i, const std::optional<T>& v)
{
    if (!v)
        return sqlite3_bind_null(st, i);
    if constexpr (std::is_same_v<T, double>)
        return sqlite3_bind_double(st, i, *v);
    else
        return sqlite3_bind_int64(st, i, sqlite3_int64(*v));
}
#endif

} // namespace rs::storage::detail
