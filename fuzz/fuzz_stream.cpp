// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the worker's stream as the CLI and the GUI read it: bytes through JsonLinesReader
// (fed in two chunks, split where the input says), every typed event into RunIngest on an in-memory store,
// and the same bytes line by line through RunIngest::ingestLine (the bulk path).
#include <cstddef>
#include <cstdint>

#include <QByteArray>
#include <QCoreApplication>

#include "launch/json_lines.h"
#include "storage/ingest.h"
#include "storage/store.h"

namespace {
rs::storage::Store& store()
{
    static int argc = 1;
    static char name[] = "fuzz_stream";
    static char* argv[] = { name, nullptr };
    // Never destroyed: at exit Qt's SQL driver registry may already be gone, and a Store closing after it
    // would touch freed memory (the pointers stay reachable, so no leak is reported).
    static auto* app = new QCoreApplication(argc, argv);
    static auto* s = new rs::storage::Store;
    (void)app;
    if (!s->isOpen() && !s->open(QStringLiteral(":memory:")))
        abort();
    return *s;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    rs::storage::Store& s = store();
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    const qsizetype cut = size > 0 ? data[0] % (bytes.size() + 1) : 0;
    {
        rs::launch::JsonLinesReader reader;
        rs::storage::RunIngest ingest(&s);
        ingest.setSpoolEnabled(false);
        for (const rs::stream::Event& e : reader.feed(bytes.left(cut)))
            ingest.ingest(e);
        for (const rs::stream::Event& e : reader.feed(bytes.mid(cut)))
            ingest.ingest(e);
        for (const rs::stream::Event& e : reader.finish())
            ingest.ingest(e);
        (void)reader.takeMalformed();
        ingest.finish(QStringLiteral("fuzz: end of input"));
    }
    {
        rs::storage::RunIngest ingest(&s);
        ingest.setSpoolEnabled(false);
        ingest.setCommitPolicy(100, 0);
        for (const QByteArray& line : bytes.split('\n'))
            ingest.ingestLine(line);
        ingest.finish(QStringLiteral("fuzz: end of input"));
    }
    // Keep the in-memory store small: each input starts from an empty one.
    for (const auto& run : s.listRuns())
        s.deleteRun(run.id);
    return 0;
}
