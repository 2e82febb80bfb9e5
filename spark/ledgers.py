"""Reading a drill record's ledgers into Spark, with the bad-input rules of RECORD.md. The record's
layout, its files and the parsing of its small files are the record package's (RecordReader);
Spark reads the ledger files it names, local or in S3 alike.

Parsing is Spark's (fast path); diagnostics are Python's and run only when something is wrong:
the number of corrupt rows Spark saw is compared with the torn last lines found by reading
each file's tail, and on a mismatch the offending file and line are located and named.
"""

from __future__ import annotations

import json
import typing
import weakref

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dcdrill.record import models
from dcdrill.record.contents import BadRecord
from dcdrill.record.ledger import DuplicateKey, loads
from dcdrill.record.reader import RecordReader

BadInput = BadRecord  # exit 2: the drill record cannot be verified as it is


S, L, INT = T.StringType(), T.LongType(), T.IntegerType()


def _column(field) -> tuple:
    """A ledger model's field as (Spark type, required, never negative)."""
    kinds = [field.annotation, *typing.get_args(field.annotation)]
    infos = [field] + [m for k in kinds if typing.get_origin(k) is typing.Annotated for m in k.__metadata__]
    constraints = [c for info in infos for c in getattr(info, "metadata", ())]
    plain = {typing.get_args(k)[0] if typing.get_origin(k) is typing.Annotated else k for k in kinds}
    bits = next(
        (i.json_schema_extra["bits"] for i in infos if (getattr(i, "json_schema_extra", None) or {}).get("bits")), 64
    )
    spark_type = (INT if bits == 32 else L) if int in plain else S
    return spark_type, field.is_required(), any(getattr(c, "ge", None) == 0 for c in constraints)


def _columns(kind: str) -> dict:
    model = models.LEDGER_MODELS[kind]
    return {n: _column(f) for n, f in model.model_fields.items() if n not in models.ROUTING_COLUMNS}


# Each ledger's columns as the verifier reads them, from its model (record/models.py): a JSON
# Lines or Parquet ledger is held to the same types. The routing columns of a replicated stack
# are read only where one cluster's rows are picked out (load, below).
SCHEMAS = {kind: {n: c[0] for n, c in _columns(kind).items()} for kind in models.LEDGER_MODELS}
# Columns that must be present and non-null on every row (the rest may be null).
REQUIRED = {kind: tuple(n for n, c in _columns(kind).items() if c[1]) for kind in models.LEDGER_MODELS}
# Columns that are never negative where present.
NON_NEGATIVE = {kind: tuple(n for n, c in _columns(kind).items() if c[2]) for kind in models.LEDGER_MODELS}
PY_TYPES = {S: (str,), L: (int,), INT: (int,)}
BITS = {L: 64, INT: 32}  # what a long and an int column hold: Spark reads a larger number as no value
STATUSES = models.STATUSES
CORRUPT = "_corrupt_record"


def bad_row_sql(kind: str) -> str:
    """A row against RECORD.md, as a Spark SQL condition: it did not parse, lacks a required
    column, holds a negative number, or (produced) has an unknown status or an offset where ok
    says there is none or the reverse (verify.py names the file and line; row_problem is the same
    rule, on one row). SQL text, not Column calls: the scan's narrowing (spark/identities.py)
    builds in one call to the JVM what the Column API built in hundreds."""
    terms = [f"{CORRUPT} IS NOT NULL"] + [f"`{col}` IS NULL" for col in REQUIRED[kind]]
    terms += [f"coalesce(`{col}` < 0, false)" for col in NON_NEGATIVE[kind]]  # null stays allowed, never null-poisons
    if kind == "produced":
        statuses = ", ".join(f"'{s}'" for s in STATUSES)
        terms += [f"NOT status IN ({statuses})", "((status = 'ok') != (`offset` IS NOT NULL))"]
    return f"coalesce({' OR '.join(terms)}, true)"  # undecidable (a null status): bad


def bad_row(kind: str):
    """bad_row_sql as a Column."""
    return F.expr(bad_row_sql(kind))


def row_problem(kind: str, row: dict) -> str | None:
    """The value rules of bad_row_sql, on one parsed row (types checked already)."""
    for col in NON_NEGATIVE[kind]:
        if row.get(col) is not None and row[col] < 0:
            return f"column {col!r} is negative ({row[col]})"
    if kind == "produced":
        if row["status"] not in STATUSES:
            return f"status must be ok, fail or info, got {row['status']!r}"
        if (row["status"] == "ok") != (row.get("offset") is not None):
            return (
                "offset must be set if and only if status is ok "
                f"(status {row['status']!r}, offset {row.get('offset')!r})"
            )
    return None


def locate_produced(record: RecordReader, files: list[str], producer_id: str, seq: int | None = None) -> str | None:
    """Slow path for a JSON Lines produced ledger: 'file:line' of the first row of `producer_id`
    with `seq` (None: the first row of an identity seen before, a duplicate), or None."""
    seen: dict[tuple, str] = {}
    for path in files:
        if not path.endswith(".jsonl"):
            return None
        for n, raw in enumerate(record.read_file(path).split(b"\n"), 1):
            try:
                row = loads(raw)
            except DuplicateKey as exc:  # Spark kept the last value
                return f"{path}:{n}: {exc}"
            except ValueError:
                continue
            if not isinstance(row, dict) or (seq is not None and row.get("producer_id") != producer_id):
                continue
            where, ident = f"{path}:{n}", (row.get("producer_id"), row.get("seq"))
            if seq is None and ident in seen:
                first = seen[ident]
                return f"{where}: producer {ident[0]!r} seq {ident[1]} has a second produced row (the first: {first})"
            seen[ident] = where
            if seq is not None and row.get("seq") == seq:
                return where
    return None


def locate_problem(record: RecordReader, files: list[str], kind: str) -> str:
    """Slow path, only after Spark saw a problem: name the file, line and column."""
    schema, required = SCHEMAS[kind], REQUIRED[kind]
    for path in files:
        lines = record.read_file(path).split(b"\n")
        for n, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                row = loads(raw)
            except DuplicateKey as exc:  # Spark kept the last value
                return f"{path}:{n}: {exc}"
            except ValueError as exc:
                if str(exc).startswith("Extra data"):  # the object closed: not torn, tampered
                    return f"{path}:{n}: text after the JSON object"
                if n == len(lines):  # torn last line: allowed
                    continue
                return f"{path}:{n}: malformed line"
            if not isinstance(row, dict):
                return f"{path}:{n}: a row must be a JSON object"
            for col in required:
                if row.get(col) is None:
                    return f"{path}:{n}: column {col!r} missing or null"
            for col, typ in schema.items():
                v = row.get(col)
                if v is not None and (not isinstance(v, PY_TYPES[typ]) or isinstance(v, bool)):
                    return f"{path}:{n}: column {col!r} has the wrong type ({type(v).__name__})"
                if v is not None and typ in BITS and not -(1 << BITS[typ] - 1) <= v < 1 << BITS[typ] - 1:
                    return f"{path}:{n}: column {col!r} is {v}, beyond a {BITS[typ]}-bit integer"
            if problem := row_problem(kind, row):
                return f"{path}:{n}: {problem}"
    return f"{kind}: a row could not be read (no file or line found to blame)"


def locate_problem_parquet(spark: SparkSession, files: list[str], kind: str) -> str:
    """Slow path for Parquet ledgers: name the file, the column and how many rows."""
    for path in files:
        df = spark.read.parquet(path)
        for col in REQUIRED[kind]:
            nulls = df.filter(F.col(col).isNull()).count()
            if nulls:
                return f"{path}: column {col!r} is null in {nulls} rows"
        bad = df.withColumn(CORRUPT, F.lit(None).cast(S)).filter(bad_row(kind)).limit(1).collect()
        if bad and (problem := row_problem(kind, bad[0].asDict())):
            return f"{path}: {problem}"
    return f"{kind}: a row could not be read (no file to blame)"


# What load() returned, per record object: a replicated verify reads the home cluster's audit for
# the stretched counts, its flow and its loops, and each load is a footer read and a plan.
_LOADED: weakref.WeakKeyDictionary[RecordReader, dict] = weakref.WeakKeyDictionary()


def load(
    spark: SparkSession, record: RecordReader, kind: str, cluster: str | None = None, copies: tuple[str, ...] = ()
) -> tuple[DataFrame, dict]:
    """_load() once per record object, session and arguments."""
    loaded = _LOADED.setdefault(record, {})
    key = (spark, kind, cluster, tuple(copies))
    if key not in loaded:
        loaded[key] = _load(spark, record, kind, cluster, tuple(copies))
    return loaded[key]


def _load(
    spark: SparkSession, record: RecordReader, kind: str, cluster: str | None, copies: tuple[str, ...]
) -> tuple[DataFrame, dict]:
    """The ledger as a DataFrame of its schema's columns (plus the corrupt-record column), and
    {"files", "format", "torn", "empty", "plain", "where"}; the checker counts bad rows in its first pass.
    "plain": for Parquet ledgers whose columns have RECORD.md's types, the ledger as read (no
    cast, no added column, every row); else None. "where": the string tests (column: allowed
    values, None for null) that keep this `cluster`'s rows of "plain"; {} when it keeps them all.

    `cluster`: a replicated stack's cluster whose rows these are (RECORD.md): its own audit file,
    audit/<cluster>.*, and the produced and consumed rows of its own clients (records written to
    another cluster, and consumers failed over to one, are spark/mirrors.py's). `copies`: the
    prefixes of MM2's copies in that cluster (`west.`), whose audit rows are left out too."""
    files, fmt = record.ledger_files(kind)
    if cluster and kind == "audit":
        files = [f for f in files if f.rsplit("/", 1)[-1].rsplit(".", 1)[0] == cluster]
    schema = SCHEMAS[kind]
    if not files:
        empty = T.StructType([T.StructField(c, t) for c, t in schema.items()] + [T.StructField(CORRUPT, S)])
        return spark.createDataFrame([], empty), {
            "files": [],
            "format": fmt,
            "torn": 0,
            "empty": True,
            "plain": None,
            "where": {},
        }
    # the rows' own `cluster` column, read only where a cluster's rows are picked out of others'
    by_cluster = bool(cluster) and kind in ("produced", "consumed")
    if fmt == "parquet":
        footer = _checked_footers(spark, kind, files, schema)
        df = raw = spark.read.schema(footer).parquet(*files)
        picked = by_cluster and "cluster" in df.columns  # rows of other clusters are left out
        if picked:
            df = df.filter(F.col("cluster").isNull() | (F.col("cluster") == cluster))
        # Read as it is (no column cast), the scan may read its column batches (identities.scan):
        # `plain` keeps the uncast ledger for that, and `where` which of its rows are this
        # cluster's, tested as the batches are read.
        plain = (
            raw
            if not (copies and kind == "audit") and all(raw.schema[c].dataType == t for c, t in schema.items())
            else None
        )
        where = {"cluster": [None, cluster]} if picked and plain is not None else {}
        df = df.select(*[F.col(c).cast(t) for c, t in schema.items()]).withColumn(CORRUPT, F.lit(None).cast(S))
        torn = 0
    else:
        struct = T.StructType(
            [T.StructField(c, t) for c, t in schema.items()]
            + [T.StructField(CORRUPT, S)]
            + ([T.StructField("cluster", S)] if by_cluster else [])
        )
        df = (
            spark.read.schema(struct)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
            .json(files)
        )
        if by_cluster:
            df = df.filter(F.col("cluster").isNull() | (F.col("cluster") == cluster)).select(*schema, CORRUPT)
        # RECORD.md: one JSON object per line, no key twice, nothing after it. The JSON source would
        # read an array as several rows, keep the last of two values, and drop trailing text: a
        # byte pass over the lines (spark/jvm/Lines.java) finds such a line, named by the slow path.
        if not spark._jvm.dcdrill.Lines.wellFormed(spark.read.text(files)._jdf):
            raise BadInput(locate_problem(record, files, kind))
        torn = sum(record.torn_last_line(f) for f in files)
        plain = None
    if kind == "produced" and fmt == "jsonl":
        df = _with_in_flight(spark, record, df, cluster if by_cluster else None)
    if copies and kind == "audit":
        df = df.filter(~F.coalesce(F.col("topic"), F.lit("")).rlike("^(" + "|".join(map(_quote, copies)) + ")"))
    return df, {
        "files": files,
        "format": fmt,
        "torn": torn,
        "empty": False,
        "plain": plain,
        "where": where if fmt == "parquet" else {},
    }


def _with_in_flight(spark: SparkSession, record: RecordReader, df: DataFrame, cluster: str | None) -> DataFrame:
    """The produced rows plus what killed producers' intent logs imply (RECORD.md: intents): the
    verifier applies them itself, so it is a function of the record as the crash left it."""
    rows = [r for r in record.in_flight_rows() if cluster is None or r.get("cluster") in (None, cluster)]
    if not rows:
        return df
    schema = SCHEMAS["produced"]
    struct = T.StructType([T.StructField(c, t) for c, t in schema.items()] + [T.StructField(CORRUPT, S)])
    extra = spark.createDataFrame([tuple(r.get(c) for c in schema) + (None,) for r in rows], struct)
    return df.select(*schema, CORRUPT).unionByName(extra)


def _checked_footers(spark, kind: str, files: list[str], schema: dict) -> T.StructType:
    """The Parquet ledgers' schema, each file's footer held to the model's column types (read
    without a Spark job, a footer a file): a file that lacks a column, types one otherwise, or
    types it otherwise than the first file does is refused, named."""
    first, first_name = None, ""
    for file in files:
        footer = T.StructType.fromJson(json.loads(spark._jvm.dcdrill.Columnar.footerSchema(spark._jsparkSession, file)))
        where = file.removeprefix("file:")
        for col, typ in schema.items():
            if col not in footer.names:
                raise BadInput(f"{where}: column {col!r} of the {kind} ledger missing")
            found = footer[col].dataType
            if found not in (typ, T.IntegerType() if typ == L else typ, T.LongType() if typ == INT else typ):
                raise BadInput(f"{where}: column {col!r} is {found.simpleString()}, expected {typ.simpleString()}")
            if first is not None and found != first[col].dataType:
                raise BadInput(
                    f"{where}: column {col!r} is {found.simpleString()} where the first file of the "
                    f"{kind} ledger ({first_name}) has {first[col].dataType.simpleString()}: one type a column"
                )
        if first is None:
            first, first_name = footer, where.rsplit("/", 1)[-1]
    return first


def _quote(prefix: str) -> str:
    return "".join("\\" + ch if not ch.isalnum() else ch for ch in prefix)
