# SPDX-License-Identifier: Apache-2.0
"""Loads what `recompute export` and `recompute report --format csv|json` wrote with pandas (Debian's
python3-pandas) and checks that it reads as it is: integers as (nullable) integers, booleans as booleans,
arrays as arrays, doubles in their shortest round-trip text, byte counts in *_bytes columns, and the values
the store holds (given as JSON by the test).

    check_export_pandas.py EXPORT_DIR REPORT_CSV REPORT_JSON EXPECTED_JSON
"""
import json
import math
import re
import sys

import pandas as pd

TABLES = ["runs", "rank_peaks", "phase_peaks", "memory_reports", "iterations"]
ARRAYS = {"overrides", "recompute_modules"}
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def digits(text):
    mantissa = text.lower().split("e")[0].lstrip("+-").replace(".", "")
    return len(mantissa.strip("0")) or 1


def shortest(cell):
    """The cell is the shortest text that reads back as its double (321.4, not 321.39999999999998)."""
    return float(cell) == float(repr(float(cell))) and digits(cell) <= digits(repr(float(cell)))


def same(a, b):
    if a is None or (not isinstance(a, (list, str)) and pd.isna(a)):
        return b is None or (not isinstance(b, (list, str)) and pd.isna(b))
    if isinstance(a, float) or isinstance(b, float):
        return float(a) == float(b)
    return a == b


export_dir, report_csv, report_json, expected_path = sys.argv[1:5]
expected = json.load(open(expected_path))

for table in TABLES:
    dtypes = json.load(open(f"{export_dir}/{table}.dtypes.json"))
    check(all(v in ("Int64", "boolean", "float64", "object") for v in dtypes.values()), f"{table}: dtypes {dtypes}")
    for column in dtypes:
        if "allocated" in column or "reserved" in column:
            check(column.endswith("_bytes"), f"{table}.{column}: a byte count without _bytes in its name")
    arrays = [c for c in dtypes if c in ARRAYS]
    from_json = pd.read_json(f"{export_dir}/{table}.json", orient="records", dtype=dtypes)
    if len(from_json) == 0:  # an empty array has no columns to read: the dtypes file has them
        check(len(from_json.columns) == 0, f"{table}.json: columns without rows")
        from_json = pd.DataFrame({c: pd.Series(dtype=t) for c, t in dtypes.items()})
        if "created_at" in dtypes:
            from_json["created_at"] = pd.Series(dtype="datetime64[ns]")
    from_csv = pd.read_csv(
        f"{export_dir}/{table}.csv",
        dtype={c: t for c, t in dtypes.items() if c not in ARRAYS},
        converters={c: (lambda s: json.loads(s) if s else None) for c in arrays},
    )
    header = list(pd.read_csv(f"{export_dir}/{table}.csv", nrows=0).columns)
    check([c for c in header if c != "created_at"] == list(dtypes), f"{table}: dtypes for {list(dtypes)}, columns {header}")
    for frame, source in ((from_json, "json"), (from_csv, "csv")):
        check(sorted(frame.columns) == sorted(header), f"{table}.{source}: columns {list(frame.columns)}")
        if source == "json" and "created_at" in header:
            got = str(frame["created_at"].dtype)
            check(got.startswith("datetime64"), f"{table}.json.created_at: {got}")
        for column, dtype in dtypes.items():
            got = str(frame[column].dtype)
            check(got == dtype, f"{table}.{source}.{column}: {got}, not {dtype}")
        for column in arrays:
            for value in frame[column]:
                check(value is None or isinstance(value, list), f"{table}.{source}.{column}: {value!r} is not a list")
    # The two files hold the same values.
    check(len(from_json) == len(from_csv), f"{table}: {len(from_json)} JSON rows, {len(from_csv)} CSV rows")
    for column in dtypes:
        if column == "created_at":
            continue
        for i, (a, b) in enumerate(zip(from_json[column], from_csv[column])):
            check(same(a, b), f"{table}[{i}].{column}: JSON {a!r} vs CSV {b!r}")
    # The CSV text itself: no "1.0" for an integer, true/false, shortest doubles.
    raw = pd.read_csv(f"{export_dir}/{table}.csv", dtype=str, keep_default_na=False)
    for column, dtype in dtypes.items():
        for cell in raw[column]:
            if cell == "":
                continue
            if dtype == "Int64":
                check(re.fullmatch(r"-?\d+", cell) is not None, f"{table}.csv.{column}: {cell!r} is not an integer")
            elif dtype == "boolean":
                check(cell in ("true", "false"), f"{table}.csv.{column}: {cell!r} is not true/false")
            elif dtype == "float64":
                check(shortest(cell), f"{table}.csv.{column}: {cell!r} is not the shortest round-trip text")
    # The values the store holds.
    for row in expected.get(table, []):
        key = "id" if table == "runs" else "run_id"
        match = from_json[from_json[key] == row[key]]
        check(len(match) >= 1, f"{table}: no row with {key} {row[key]}")
        if len(match) == 0:
            continue
        for column, value in row.items():
            got = match.iloc[0][column]
            got = got if not hasattr(got, "item") else got.item()
            check(same(got, value), f"{table}.{column} of {row[key]}: {got!r}, expected {value!r}")
            if isinstance(value, bool):
                check(isinstance(got, bool), f"{table}.{column}: {got!r} is not a boolean")
            if isinstance(value, int) and not isinstance(value, bool):
                check(isinstance(got, int), f"{table}.{column}: {got!r} is not an integer")

# The report's CSV and JSON.
report = pd.read_csv(report_csv, dtype={"failure_iteration": "Int64", "peak_allocated_bytes": "Int64"})
check(str(report["run_id"].dtype) == "int64", f"report.csv run_id: {report['run_id'].dtype}")
check(str(report["control_run_id"].dtype) == "int64", f"report.csv control_run_id: {report['control_run_id'].dtype}")
check(str(report["is_control"].dtype) == "bool", f"report.csv is_control: {report['is_control'].dtype}")
check(str(report["matched"].dtype) == "bool", f"report.csv matched: {report['matched'].dtype}")
check(str(report["allocated_vs_control_pct"].dtype) == "float64", "report.csv allocated_vs_control_pct")
raw = pd.read_csv(report_csv, dtype=str, keep_default_na=False)
for column in ("steady_step_ms", "tflops_per_gpu", "allocated_vs_control_pct", "time_vs_control_pct", "peak_allocated_gb"):
    for cell in raw[column]:
        check(cell == "" or shortest(cell), f"report.csv {column}: {cell!r}")
for column in ("failure_iteration", "peak_allocated_bytes", "run_id"):
    for cell in raw[column]:
        check(cell == "" or re.fullmatch(r"\d+", cell) is not None, f"report.csv {column}: {cell!r}")
tables = json.load(open(report_json))
rows = pd.json_normalize(tables, "rows", ["control_run_id", "control_kind"])
check(str(rows["is_control"].dtype) == "bool", f"report.json is_control: {rows['is_control'].dtype}")
check(str(rows["run_id"].dtype) == "int64", f"report.json run_id: {rows['run_id'].dtype}")
check(all(v is None or isinstance(v, list) for v in rows["recompute_modules"]), "report.json recompute_modules")
for row in expected.get("report", []):
    match = rows[rows["run_id"] == row["run_id"]]
    check(len(match) == 1, f"report.json: run {row['run_id']}")
    for column, value in row.items():
        got = match.iloc[0][column]
        got = got.item() if hasattr(got, "item") else got
        check(same(got, value), f"report.json {column} of run {row['run_id']}: {got!r}, expected {value!r}")

if failures:
    print("\n".join(failures[:40]))
    sys.exit(1)
print(f"pandas {pd.__version__}: {len(TABLES)} tables and the report read as they are")
