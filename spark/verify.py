"""The checker: a pure function of a drill record (RECORD.md), re-runnable offline, as Jepsen's
Kafka checker is of its history. The session is spark/session.py's, the report spark/report_files.py's.

The model:
- A ledger is what one side saw, one row per event. produced: what each producer was told about
  each record it sent (ok with an offset, fail, or info when it never heard back); audit: the
  topic's log read end to end after the drill, what the cluster kept; consumed: what each consumer
  of the drill's group was handed.
- A record's identity is (producer_id, seq). A producer's seqs are dense from 0, and each appears
  in its produced ledger once; the audit and consumed rows carry the identity in the record.
- acked lost: produced ok, absent from the audit. failed present / indeterminate present: a
  record the producer was told failed, or never heard of, that the log holds anyway.
  duplicates in log: an identity at two offsets; delivered twice: handed to the group twice.
  phantom: in the log with an identity no producer sent. reordered: a producer's records in one
  partition out of seq order. divergent offset / ack offset mismatch: the log holds the record at
  another offset than the one acknowledged.
- Each anomaly is split by fault phase (faults.jsonl), and the verdict (spark/verdict.py) checks
  the counts against the promise of topology.json's profile and its predictions.

    dcdrill verify RUN_DIR... [--conf KEY=VALUE]       (local[*] by default)
    spark-submit --jars <the kernel jar> dcdrill/verify_command.py RUN_DIR...   (any master)

RUN_DIR is a local folder or a Hadoop URI such as s3a://bucket/runs/<id>. Writes
RUN_DIR/report/{summary.json,index.html,junit.xml}.
"""

from __future__ import annotations

import concurrent.futures
import sys
import threading
import time
from collections.abc import Callable

from dcdrill.record.reader import RecordReader
from dcdrill.spark import (
    checker,
    clock_alignment,
    coordination,
    identities,
    memory,
    mirrors,
    report,
    report_files,
    session,
    storage,
    transactions,
    verdict,
)
from dcdrill.spark.ledgers import BadInput, bad_row, load, locate_problem, locate_problem_parquet, locate_produced


def reject_bad_rows(spark, record: RecordReader, totals: dict, infos: dict) -> None:
    """Exit 2 naming file and line, unless the only unreadable rows are torn last lines."""
    for kind, col in (("produced", "bad_p"), ("audit", "bad_a"), ("consumed", "bad_c")):
        if totals[col] > infos[kind]["torn"]:
            files = infos[kind]["files"]
            raise BadInput(
                locate_problem_parquet(spark, files, kind)
                if infos[kind]["format"] == "parquet"
                else locate_problem(record, files, kind)
            )
    if totals["too_many_copies"]:
        raise BadInput(
            f"{record.location}: {totals['too_many_copies']} records appear more than {2**identities.FIELD - 1} "
            "times in one ledger; the verifier counts up to that many copies"
        )
    if totals["produced_twice"]:
        where = locate_produced(record, infos["produced"]["files"], "")
        raise BadInput(
            (where + "; " if where else f"{record.uri('produced')}: ")
            + f"{totals['produced_twice']} records (producer_id, seq) have more than one produced row; "
            "a produced ledger holds one outcome per record"
        )


def reject_sparse_seqs(record: RecordReader, P, seqs: list[dict]) -> None:
    """RECORD.md: a producer's seqs are 0, 1, 2, ... densely. With no (producer, seq) twice
    (reject_bad_rows), that is rows = largest seq + 1 and smallest seq = 0 per producer; the
    slow path below names the producer and its first missing seq only when that fails."""
    if all(s["min_seq"] == 0 and s["rows"] == s["max_seq"] + 1 for s in seqs):
        return
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ok = P.filter(~bad_row("produced")).select("producer_id", "seq")
    gaps = (
        ok.withColumn("prev", F.lag("seq").over(Window.partitionBy("producer_id").orderBy("seq")))
        .filter(F.coalesce(F.col("prev"), F.lit(-1)) != F.col("seq") - 1)
        .orderBy("producer_id", "seq")
        .limit(1)
        .collect()
    )
    if gaps:
        g = gaps[0]
        first = 0 if g["prev"] is None else g["prev"] + 1
        files, _ = record.ledger_files("produced")
        where = locate_produced(record, files, g["producer_id"], g["seq"]) or record.uri("produced")
        raise BadInput(
            f"{where}: producer {g['producer_id']!r} has no row for seqs {first} to "
            f"{g['seq'] - 1}; RECORD.md: seqs are dense per producer (a killed producer's unfinished "
            "records are written as info rows from its intent log)"
        )
    raise BadInput(f"{record.uri('produced')}: a producer's seqs are not dense (RECORD.md)")


def verify(
    record: RecordReader | str,
    spark=None,
    quiet: bool = True,
    conf: dict[str, str] | None = None,
    plan: memory.Plan | None = None,
    when_spark_done: Callable[[], None] | None = None,
) -> dict:
    """The summary of the record (a RecordReader, or where one is: a local folder or a Hadoop URI),
    its verdict included; the report is written beside the ledgers. BadInput (exit 2) names what
    is wrong. `when_spark_done`: called once the record's last Spark job has succeeded, while the
    report is still being drawn (a command about to exit ends its JVM there); not for a remote
    record, whose report is written through Spark."""
    t0 = time.monotonic()
    record = record if isinstance(record, RecordReader) else RecordReader(record)
    plan = plan or memory.plan([record.location])

    def progress(step: str) -> None:
        if not quiet:
            print(f"verify: {step} done at {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)

    if spark is None and not quiet and session.jvm_process() is None:  # the first verify of this process
        print("verify: starting Spark (its JVM takes a few seconds)", file=sys.stderr, flush=True)
    if record.remote:  # the record is read through Spark's Hadoop filesystems: the session comes first
        spark = spark or session.session(conf=conf, s3a=record.location.startswith("s3a://"), plan=plan)
        record = RecordReader(record.location, storage.files_for(spark, record.location))
    if not record.exists():
        raise BadInput(f"{record.location}: drill record directory missing")
    if not record.remote and (unsafe := record.unsafe_paths()):
        raise BadInput("; ".join(unsafe))
    if gaps := record.incomplete():  # a crash halfway: the ledgers stop there, so no verdict holds
        raise BadInput(f"{record.location}: an incomplete drill record: " + "; ".join(gaps))
    if skewed := record.clock_problems():  # its send and ack times cannot be set against its fault times
        raise BadInput(f"{record.location}: a client host's clock was off: " + "; ".join(skewed))
    threading.Thread(target=report.warm_up, daemon=True).start()  # matplotlib imports while Spark works
    topology = record.topology()
    faults = clock_alignment.as_acted(record.faults())  # windows from when each fault took effect
    # The producers' rows against the windows as their hosts' clocks saw them (spark/clock_alignment.py).
    clocks = clock_alignment.alignment(record.clocks())
    seen = clock_alignment.on_producer_clocks(faults, clocks["shift_ms"])
    spark = spark or session.session(conf=conf, plan=plan)
    # Not cached: one scan reads each ledger (JSON Lines parsed once); only rare second looks
    # (spark/checker.py) read one again.
    # A replicated record: the stretched counts are the home (source) cluster's; spark/mirrors.py
    # checks the copies and the failed-over consumers.
    home = topology.get("cluster") if topology.get("clusters") else None
    copies = tuple(
        sorted(
            {
                m["remote_topic_prefix"]
                for m in (topology.get("mirrors") or {}).values()
                if m["target"] == home and m["remote_topic_prefix"]
            }
        )
    )
    ledgers = {kind: load(spark, record, kind, home, copies) for kind in ("produced", "audit", "consumed")}
    if ledgers["produced"][1]["empty"]:
        raise BadInput(f"{record.uri('produced')}: the produced ledger is empty")
    (P, _), (A, _), (C, _) = ledgers.values()
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    progress("spark session and ledgers")
    # One scan reads the ledgers; every fold after it reads what the scan kept (spark/jvm/Scan.java).
    plain = {kind: info["plain"] for kind, (_, info) in ledgers.items()}  # read batch by batch where they can be
    where = {kind: info["where"] for kind, (_, info) in ledgers.items()}  # a replicated record's home rows
    scanned = identities.scan(P, A, C, partitions, seen, plain, where)
    # Jobs of their own, each submitted as soon as what it needs is known, so that one's driver
    # work (collecting, parsing) overlaps another's tasks: the single-ledger tables and the
    # identity pass read the scan's cache; the report's first lost or duplicated records are named
    # by a job that reads the ledgers again, while the driver checks and sums what the passes found.
    pool = concurrent.futures.ThreadPoolExecutor(2)
    try:
        try:
            scr = identities.screen(scanned)
            progress(
                f"scan and screen ({scr.totals['suspicious']} buckets of {1 << identities.BUCKET_BITS} records "
                f"to look at, {scr.totals['unmirrored']} whose consumed rows differ from the log)"
            )
            ledgerwise = pool.submit(checker.ledgerwise, scanned, A)
            ident = identities.identity_pass(scanned, C, scr, seen)
            named = pool.submit(checker.examples, P, A, ident, plain, where)
            lw = ledgerwise.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # no job still reading the cache released below
            raise
        finally:
            scanned.release()
        progress(f"identity pass ({ident.totals['anomalous']} anomalous records)")
        reject_bad_rows(spark, record, ident.totals, {k: info for k, (_, info) in ledgers.items()})
        reject_sparse_seqs(record, P, lw.tables["seqs"])
        torn = sum(info["torn"] for _, info in ledgers.values())
        summary = checker.run(P, A, C, ident, seen, lw, torn_lines=torn)
        for f, recorded in zip(summary["faults"], faults):  # the record's own times, as coordination's are
            f["start_ms"], f["end_ms"] = recorded["start_ms"], recorded.get("end_ms")
            if "requested_ms" in recorded:
                f["requested_ms"] = recorded["requested_ms"]
        summary["clock_alignment"] = clocks
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    # Not shut down with cancel_futures here: the examples' job may not have started yet (a small
    # record's sums take milliseconds), and it is awaited below.
    pool.shutdown(wait=False)
    if summary["counts"]["produced"] == 0:
        raise BadInput(f"{record.uri('produced')}: the produced ledger is empty")
    summary["run"] = record.name
    summary["topology"] = topology
    summary["experiment"] = record.experiment_name()
    summary["baseline"] = record.baseline()
    samples = record.coordination()
    coordination.attach(summary["faults"], samples, topology)
    summary["coordination_timeline"] = coordination.timeline(samples, topology)
    # The plots need neither the mirror checks nor the examples: drawn while their jobs run in the
    # JVM, from a copy, since the summary grows meanwhile.
    drawing = concurrent.futures.ThreadPoolExecutor(1)
    plotted = drawing.submit(report.plots, dict(summary))
    drawing.shutdown(wait=False)
    if home:
        topics = {r["topic"] for r in summary["by_partition"]}  # the home cluster's producers'
        summary.update(
            mirrors.check(
                spark,
                record,
                topology,
                summary["faults"],
                record.failovers(),
                record.mirror_waits(),
                record.mirror_events(),
                rows=summary["counts"]["produced"],
                topic=topics.pop() if len(topics) == 1 else None,
            )
        )
    summary["transactions"] = transactions.check(spark, record, A, C)  # None: a record without transactions
    # What ran the check: a verdict is easier to trust (and to reproduce) with its engine named.
    summary["spark"] = {"version": spark.version, "master": spark.sparkContext.master, "shuffle_partitions": partitions}
    if when_spark_done is not None and not record.remote:  # no Spark call below this line
        named.add_done_callback(lambda job: job.cancelled() or job.exception() or when_spark_done())
    imgs = plotted.result()
    summary["examples"] = named.result()
    summary["verdict"], summary["violations"], summary["rules"] = verdict.evaluate(topology, summary)
    summary["prediction_checks"] = verdict.prediction_checks(topology, summary)
    if home:
        summary["mirror_prediction_checks"] = verdict.mirror_prediction_checks(topology, summary)
    summary["verify_seconds"] = round(time.monotonic() - t0, 2)
    report_files.write(record, summary, imgs)
    return summary
