"""Verify a drill record: counts, fault-window splits, verdict, report.

    spark-submit --jars .cache/spark-kernel/dcdrill-kernel.jar spark/verify.py RUN_DIR...
                                                   (any master: --master, --conf as usual)
    dcdrill verify RUN_DIR... [--conf KEY=VALUE]   (the same code, local[*] by default)

RUN_DIR is a local folder or a Hadoop URI such as s3a://bucket/runs/<id> (the s3a jars come
from `make setup`; endpoint and credentials are the usual spark.hadoop.fs.s3a.* settings).
Writes RUN_DIR/report/{summary.json,index.html,junit.xml}. Several records are verified in one
Spark session: the first pays for a fresh JVM, the others do not.
Exit 0 = verdict pass, 1 = verdict fail, 2 = bad input (with several records, the worst).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.constants import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS  # noqa: E402
from record.drill_record import REPORT, DrillRecord  # noqa: E402
from spark import (cds, checker, coordination, identities, junit, memory, mirror_report, mirrors, options,  # noqa: E402
                   report, storage, verdict)
from spark.ledgers import (BadInput, bad_row, load, locate_problem, locate_problem_parquet,  # noqa: E402
                           read_baseline, read_coordination, read_experiment_name, read_failovers, read_faults,
                           read_mirror_events, read_mirror_waits, read_topology)

# A verify run is a short-lived JVM on a couple of cores: the C2 compiler's time (about 40 s of CPU
# on a 10M record) competes with the tasks. A smaller inlining budget makes C2 compiles cheaper
# for code that runs a few seconds, and whole-stage code generation writes methods above HotSpot's
# 8000-byte limit, which would otherwise stay interpreted however hot they are. Paired runs on a
# 10M record: the inlining budget cuts the wall time by 16%, huge-method compiling 4% more.
# C2 also compiles some 3,000 methods in a 10M run, most of them driver code run a few thousand
# times; raising its thresholds 3-4x leaves those to C1 and C2 to the really hot loops: 6% less
# CPU (7 of 8 paired runs, 10M and a 35k-record drill), 4% less wall time at 10M.
# The scan's cache is 2 MB chunks (spark/jvm/Scan.java), each a humongous object for G1, and G1
# checks its marking threshold at every one: with the adaptive threshold, on a heap still growing,
# a 10M verify started 10 concurrent marking cycles (6 remarks), each a thread competing with the
# tasks for 2 cores. A fixed 85% started 4 (1 remark): 3 sets of 5-6 interleaved runs, medians
# 0.26-1.2 s faster, and steadier. (-Xms at the planned heap was slower; ParallelGC and SerialGC
# as fast, but their old-generation collections stop everything, on heaps planned up to 60% of
# the machine.) DCDRILL_SPARK_JAVA_OPTIONS comes after, so it can override these.
GC_OPTIONS = "-XX:-G1UseAdaptiveIHOP -XX:InitiatingHeapOccupancyPercent=85"
JIT_OPTIONS = ("-XX:FreqInlineSize=100 -XX:InlineSmallCode=1000 -XX:-DontCompileHugeMethods "
               "-XX:Tier4InvocationThreshold=20000 -XX:Tier4MinInvocationThreshold=2400 "
               "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=160000")


def session(master: str | None = None, conf: dict[str, str] | None = None, s3a: bool = False,
            plan: memory.Plan | None = None):
    """The verifier's Spark session. `conf`: extra Spark settings (what --conf gives). `s3a`: put
    hadoop-aws and the AWS SDK on the classpath, for s3a:// records. `plan`: the heap and shuffle
    width for the records to verify (spark/memory.py; without one, as for a small record).
    Under spark-submit, its options win: the defaults below only fill what it left unset."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # spark-submit starts the JVM and hands this process its gateway: --master, --conf and
    # --jars are already in the JVM's SparkConf, and JVM options can no longer change.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if submitted:
        SparkContext._ensure_initialized()  # attach to that JVM, so SparkConf reads what it was given
    given = dict(SparkConf().getAll()) if submitted else {}
    conf = conf or {}
    chosen = conf.get("spark.master") or given.get("spark.master") or master or \
        os.environ.get("DCDRILL_SPARK_MASTER", "local[*]")
    # local[N] and local-cluster[...] keep every JVM on this machine: Spark binds to loopback
    # only, the verifier needs no network beyond it. A cluster's executors must reach the driver.
    on_this_machine = chosen.startswith("local")
    if on_this_machine:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    plan = plan or memory.plan([])
    settings = {
        "spark.app.name": "dcdrill-verify",
        # Two tasks per core: on 2 cores, 4 partitions beat 8 by ~2.5% (paired 10M runs): fewer
        # tasks to plan and fewer, longer window partitions, with a task still to fill each tail.
        # More as the record grows (spark/memory.py), so a reducer's states stay bounded.
        "spark.sql.shuffle.partitions": os.environ.get("DCDRILL_SHUFFLE_PARTITIONS", str(plan.partitions)),
        # Adaptive execution re-plans (and re-generates code for) every query after each stage.
        # The verifier's plans need none of it (broadcasts are explicit, partitions are few),
        # and on 2 cores the re-planning is driver CPU the tasks wait for: paired 10M runs with
        # it off took 0.90x the time.
        "spark.sql.adaptive.enabled": "false",
        # The checker's shuffles (spark/jvm) carry 64-bit hashes, which LZ4 cannot shrink:
        # 4 paired 10M runs without compression took 0.84, 1.01, 0.96 and 0.97 the time.
        "spark.shuffle.compress": "false",
        # One producer's rows in one partition are a window partition: keep up to 4M in memory
        # (the default, 4096, spills every longer one to disk).
        "spark.sql.windowExec.buffer.in.memory.threshold": str(1 << 22),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
    }
    if on_this_machine:
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    if not submitted and not os.environ.get("SPARK_LOCAL_DIRS") and "spark.local.dir" not in conf:
        settings["spark.local.dir"] = _local_dir()
    if not submitted and "master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        settings |= {
            "spark.master": chosen,
            "spark.driver.memory": os.environ.get("DCDRILL_SPARK_DRIVER_MEMORY", plan.heap_setting),
            # The checker's folds (spark/jvm): on the driver's own classpath, where py4j finds them.
            "spark.driver.extraClassPath": str(cds.kernel_jar()),
            "spark.driver.extraJavaOptions":
                f"{cds.java_options()} {JIT_OPTIONS} {GC_OPTIONS} {memory.JVM_OPTIONS} {_tmpdir_option(settings)} "
                f"{os.environ.get('DCDRILL_SPARK_JAVA_OPTIONS', '')}".strip(),
        }
    if not submitted and not cds.kernel_jar().exists():
        raise BadInput(f"the verifier's JVM kernels are missing ({cds.kernel_jar()}): run `make setup`")
    jars = []
    if not submitted and not (chosen == "local" or chosen.startswith("local[")):
        jars.append(str(cds.kernel_jar()))  # executors in JVMs of their own load the kernels from spark.jars
    if s3a and not submitted:
        if not cds.s3a_jars():
            raise BadInput("s3a:// records need hadoop-aws and the AWS SDK: run `make setup` "
                           "(infra/toolchain/s3a-pom.xml)")
        jars += cds.s3a_jars()
    if jars:
        settings["spark.jars"] = ",".join(jars)
    b = SparkSession.builder
    for key, value in {**settings, **conf}.items():
        if key not in given:
            b = b.config(key, value)
    with cds.spark_java_home():
        spark = b.getOrCreate()
    # A failure reaches the user as one line naming its cause (run()), not as Spark's stack traces.
    spark.sparkContext.setLogLevel(os.environ.get("DCDRILL_SPARK_LOG_LEVEL", "FATAL"))
    from py4j.java_gateway import JavaClass

    if not isinstance(spark._jvm.dcdrill.Screen, JavaClass):  # spark-submit without --jars
        raise BadInput(f"the verifier's JVM kernels are not on Spark's classpath: pass --jars {cds.kernel_jar()} "
                       "to spark-submit (`make setup` builds it)")
    return spark


# Spark's scratch space (its cache spilled to disk, shuffle files) in a folder of this process's
# own: a JVM that ends at its first OutOfMemoryError (spark/memory.py) runs no shutdown hook, and
# its folders in /tmp (gigabytes for a big record) used to stay behind. Removed when the session
# ends (spark_scope), or when this process does.
_LOCAL_DIRS: list[str] = []


def _local_dir() -> str:
    import atexit
    import tempfile

    path = tempfile.mkdtemp(prefix="dcdrill-spark-")
    if not _LOCAL_DIRS:
        atexit.register(_remove_local_dirs)
    _LOCAL_DIRS.append(path)
    return path


def _tmpdir_option(settings: dict) -> str:
    """The JVM's own temporary files (Spark makes some outside spark.local.dir) in the same folder."""
    local = settings.get("spark.local.dir")
    return f"-Djava.io.tmpdir={local}" if local in _LOCAL_DIRS else ""


def _remove_local_dirs() -> None:
    import shutil

    while _LOCAL_DIRS:
        shutil.rmtree(_LOCAL_DIRS.pop(), ignore_errors=True)


def reject_bad_rows(spark, run_dir: str, totals: dict, infos: dict) -> None:
    """Exit 2 naming file and line, unless the only unreadable rows are torn last lines."""
    for kind, col in (("produced", "bad_p"), ("audit", "bad_a"), ("consumed", "bad_c")):
        if totals[col] > infos[kind]["torn"]:
            files = infos[kind]["files"]
            raise BadInput(locate_problem_parquet(spark, files, kind) if infos[kind]["format"] == "parquet"
                           else locate_problem(spark, files, kind))
    if totals["too_many_copies"]:
        raise BadInput(f"{run_dir}: {totals['too_many_copies']} records appear more than {2**identities.FIELD - 1} "
                       "times in one ledger; the verifier counts up to that many copies")
    if totals["produced_twice"]:
        raise BadInput(f"{run_dir}/produced: {totals['produced_twice']} records (producer_id, seq) have more than "
                       "one produced row; a produced ledger holds one outcome per record")


def reject_sparse_seqs(run_dir: str, P, seqs: list[dict]) -> None:
    """RECORD.md: a producer's seqs are 0, 1, 2, ... densely. With no (producer, seq) twice
    (reject_bad_rows), that is rows = largest seq + 1 and smallest seq = 0 per producer; the
    slow path below names the producer and its first missing seq only when that fails."""
    if all(s["min_seq"] == 0 and s["rows"] == s["max_seq"] + 1 for s in seqs):
        return
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ok = P.filter(~bad_row("produced")).select("producer_id", "seq")
    gaps = ok.withColumn("prev", F.lag("seq").over(Window.partitionBy("producer_id").orderBy("seq"))) \
        .filter(F.coalesce(F.col("prev"), F.lit(-1)) != F.col("seq") - 1) \
        .orderBy("producer_id", "seq").limit(1).collect()
    if gaps:
        g = gaps[0]
        first = 0 if g["prev"] is None else g["prev"] + 1
        raise BadInput(f"{run_dir}/produced: producer {g['producer_id']!r} has no row for seqs {first} to "
                       f"{g['seq'] - 1}; RECORD.md: seqs are dense per producer (a killed producer's unfinished "
                       "records are written as info rows from its intent log)")
    raise BadInput(f"{run_dir}/produced: a producer's seqs are not dense (RECORD.md)")


def verify(run_dir: str, spark=None, quiet: bool = True, conf: dict[str, str] | None = None,
           plan: memory.Plan | None = None) -> tuple[int, dict]:
    t0 = time.monotonic()
    plan = plan or memory.plan([run_dir])

    def progress(step: str) -> None:
        if not quiet:
            print(f"verify: {step} done at {time.monotonic() - t0:.1f}s", file=sys.stderr, flush=True)

    run_dir = run_dir.removeprefix("file://")  # a local URI is a local folder
    remote = storage.is_remote(run_dir)
    if remote:  # the record is read through Spark's Hadoop filesystems: the session comes first
        spark = spark or session(conf=conf, s3a=run_dir.startswith("s3a://"), plan=plan)
    if not storage.is_dir(spark, run_dir):
        raise BadInput(f"{run_dir}: drill record directory missing")
    if not remote and (unsafe := DrillRecord(run_dir).unsafe_paths()):
        raise BadInput("; ".join(unsafe))
    threading.Thread(target=report.warm_up, daemon=True).start()  # matplotlib imports while Spark works
    topology = read_topology(run_dir, spark=spark)
    faults = read_faults(run_dir, spark=spark)
    spark = spark or session(conf=conf, plan=plan)
    # Not cached: one scan reads each ledger (JSON Lines parsed once); only rare second looks
    # (spark/checker.py) read one again. Caching the parsed JSON cost more than it saved: 2M
    # records, 20.4 s with it, 14.0 s without.
    # A replicated record: the stretched counts are the home (source) cluster's; spark/mirrors.py
    # checks the copies and the failed-over consumers.
    home = topology.get("cluster") if topology.get("clusters") else None
    copies = tuple(sorted({m["remote_topic_prefix"] for m in (topology.get("mirrors") or {}).values()
                           if m["target"] == home and m["remote_topic_prefix"]}))
    ledgers = {kind: load(spark, run_dir, kind, home, copies) for kind in ("produced", "audit", "consumed")}
    if ledgers["produced"][1]["empty"]:
        raise BadInput(f"{run_dir}/produced: the produced ledger is empty")
    (P, _), (A, _), (C, _) = ledgers.values()
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    progress("spark session and ledgers")
    # One scan reads the ledgers; every fold after it reads what the scan kept (spark/jvm/Scan.java).
    plain = {kind: info["plain"] for kind, (_, info) in ledgers.items()}  # read batch by batch where they can be
    scanned = identities.scan(P, A, C, partitions, faults, plain)
    # Jobs of their own, each submitted as soon as what it needs is known, so that one's driver
    # work (collecting, parsing) overlaps another's tasks: the single-ledger tables and the
    # identity pass read the scan's cache; the report's first lost or duplicated records are named
    # by a job that reads the ledgers again, while the driver checks and sums what the passes found.
    pool = concurrent.futures.ThreadPoolExecutor(2)
    try:
        try:
            scr = identities.screen(scanned)
            progress(f"scan and screen ({scr.totals['suspicious']} buckets of {1 << identities.BUCKET_BITS} records "
                     f"to look at, {scr.totals['unmirrored']} whose consumed rows differ from the log)")
            ledgerwise = pool.submit(checker.ledgerwise, scanned, A)
            ident = identities.identity_pass(scanned, C, scr, faults)
            named = pool.submit(checker.examples, P, A, ident, plain)
            lw = ledgerwise.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # no job still reading the cache released below
            raise
        finally:
            scanned.release()
        progress(f"identity pass ({ident.totals['anomalous']} anomalous records)")
        reject_bad_rows(spark, run_dir, ident.totals, {k: info for k, (_, info) in ledgers.items()})
        reject_sparse_seqs(run_dir, P, lw.tables["seqs"])
        torn = sum(info["torn"] for _, info in ledgers.values())
        summary = checker.run(P, A, C, ident, faults, lw, torn_lines=torn)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    # Not shut down with cancel_futures here: the examples' job may not have started yet (a small
    # record's sums take milliseconds), and it is awaited below.
    pool.shutdown(wait=False)
    if summary["counts"]["produced"] == 0:
        raise BadInput(f"{run_dir}/produced: the produced ledger is empty")
    summary["run"] = run_dir if remote else Path(run_dir).name
    summary["topology"] = topology
    summary["experiment"] = read_experiment_name(run_dir, spark=spark)
    summary["baseline"] = read_baseline(run_dir, spark=spark)
    samples = read_coordination(run_dir, spark=spark)
    coordination.attach(summary["faults"], samples, topology)
    summary["coordination_timeline"] = coordination.timeline(samples, topology)
    if home:
        summary.update(mirrors.check(spark, run_dir, topology, summary["faults"], read_failovers(run_dir, spark=spark),
                                     read_mirror_waits(run_dir, spark=spark), read_mirror_events(run_dir, spark=spark),
                                     rows=summary["counts"]["produced"]))
    imgs = report.plots(summary)  # drawn while the examples' job runs (they are not plotted)
    summary["examples"] = named.result()
    summary["verdict"], summary["violations"], summary["rules"] = verdict.evaluate(topology, summary)
    summary["prediction_checks"] = verdict.prediction_checks(topology, summary)
    if home:
        summary["mirror_prediction_checks"] = verdict.mirror_prediction_checks(topology, summary)
    summary["verify_seconds"] = round(time.monotonic() - t0, 2)
    # What ran the check: a verdict is easier to trust (and to reproduce) with its engine named.
    summary["spark"] = {"version": spark.version, "master": spark.sparkContext.master, "shuffle_partitions": partitions}
    write(spark, run_dir, summary, imgs)
    return (EXIT_PASS if summary["verdict"] == "pass" else EXIT_FAIL), summary


def write(spark, run_dir: str, summary: dict, imgs: dict[str, str] | None = None) -> None:
    """The report next to the ledgers, remote records included (`imgs`: its plots, if drawn)."""
    files = {"summary.json": json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n",
             "index.html": report.render_html(summary, imgs),
             "junit.xml": junit.verdict_xml(summary, summary["topology"].get("stack"), summary.get("experiment"),
                                            summary["verify_seconds"])}
    for name, text in files.items():
        storage.write_bytes(spark, storage.join(run_dir, REPORT, name), text.encode())


def one_screen(summary: dict) -> str:
    c = summary["counts"]
    lines = [f"verdict: {summary['verdict'].upper()}  ({summary['topology'].get('profile')}, "
             f"verified in {summary['verify_seconds']}s)",
             f"  produced {c['produced']}: acked {c['acked']}, failed {c['failed']}, indeterminate {c['indeterminate']}",
             f"  acked lost {c['acked_lost']}, acked unseen {c['acked_unseen']}, failed present {c['failed_present']}, "
             f"indeterminate present {c['indeterminate_present']}",
             f"  duplicates in log {c['duplicates_in_log']}, delivered {c['duplicates_delivered']}, phantoms {c['phantoms']}, "
             f"reordered {c['reordered']}, divergent offsets {c['divergent_offsets']}, "
             f"offset mismatches {c['ack_offset_mismatch']}",
             f"  max ack gap {c['max_ack_gap_ms']} ms, torn lines {c['torn_lines']}"]
    for f in summary["faults"]:
        lines.append(f"  fault {f['fault']} {f['target']}: {((f.get('end_ms') or 0) - f['start_ms']) / 1000:.1f}s, "
                     f"recovery {f['recovery_ms']} ms, "
                     + ("writes continued" if f["writes_continued"] else "not every partition back before the heal"))
        if f.get("coordination"):
            lines.append(f"    coordination: {report.coordination_text(f)}")
    for p in summary["prediction_checks"]:
        lines.append(f"  losing {p['target']}: {report.prediction_text(p)}")
    lines += mirror_report.text(summary)
    for v in summary["violations"]:
        lines.append(f"  VIOLATION [{v['rule']}] {v['message']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark-submit spark/verify.py", description=__doc__.split("\n\n")[0],
                                epilog="Exit 0 = verdict pass, 1 = verdict fail, 2 = bad input; "
                                       "with several records, the worst.")
    options.add_arguments(p)
    return run(p.parse_args(argv))


def heap_given(conf: dict[str, str], plan: memory.Plan) -> str:
    """The heap a session of ours gets: --conf, then DCDRILL_SPARK_DRIVER_MEMORY, then the plan."""
    return conf.get("spark.driver.memory") or os.environ.get("DCDRILL_SPARK_DRIVER_MEMORY") or plan.heap_setting


def run(args: argparse.Namespace) -> int:
    """Verify each record, print its one-screen summary (or --json), return the worst exit code.
    A record with bad input is reported and the others are still verified."""
    codes, summaries = [], []
    plan = memory.plan(args.run_dirs)
    conf = dict(args.conf)
    heap = heap_given(conf, plan)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # a dead JVM is reported below, in one line
    with spark_scope():
        if any(d.startswith("s3a://") for d in args.run_dirs):  # one session serves every record:
            try:  # with the s3a jars if one needs them
                session(conf=conf, s3a=True, plan=plan)
            except BadInput as exc:
                print(f"verify: bad input: {exc}", file=sys.stderr)
                return EXIT_BAD_INPUT
        for run_dir in args.run_dirs:
            if len(args.run_dirs) > 1 and not args.quiet:
                print(f"verify: {run_dir}", file=sys.stderr, flush=True)
            try:
                code, summary = verify(run_dir, quiet=args.quiet, conf=conf, plan=plan)
            except BadInput as exc:
                print(f"verify: bad input: {exc}", file=sys.stderr)
                codes.append(EXIT_BAD_INPUT)
                continue
            except Exception as exc:  # noqa: BLE001 - one record's failure is that record's, not the call's
                # Exit 1 would read as a verdict. Anything unforeseen in a record is bad input for
                # that record, named; the other records of the call are still verified. Running
                # out of memory names the setting to raise.
                print(f"verify: bad input: {run_dir}: {memory.failure(exc, heap)}", file=sys.stderr)
                codes.append(EXIT_BAD_INPUT)
                continue
            codes.append(code)
            summaries.append(summary)
            if not args.json:
                print(one_screen(summary))
                print(f"report: {storage.join(run_dir, REPORT, 'index.html')}")
    if args.json and summaries:
        print(json.dumps(summaries[0] if len(args.run_dirs) == 1 else summaries, indent=2, default=str))
    return max(codes)


@contextlib.contextmanager
def spark_scope():
    """Stop the Spark session started inside, and the JVM if this process launched it (ending
    that JVM is how its session stops): a command returns with Spark's clean-up (shuffle and
    temporary files) done, not with a JVM still tidying up behind it. A session that was already
    running is left as it was."""
    before = _active_session()
    try:
        yield
    finally:
        if _jvm_ended():  # killed, or halted by Spark after running out of memory (spark/memory.py)
            from pyspark import SparkContext
            SparkContext._active_spark_context = SparkContext._gateway = SparkContext._jvm = None
            _remove_local_dirs()
        elif (started := _active_session()) is not None and started is not before:
            if before is None and _launched_here():
                _forget_session(started)
                _end_jvm()  # its exit stops Spark (Spark's own shutdown hook): 0.1 s, against 0.3-0.6 s
                _remove_local_dirs()
            else:
                started.stop()


def _jvm_ended() -> bool:
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    return proc is not None and proc.poll() is not None


def _launched_here() -> bool:
    from pyspark import SparkContext

    return getattr(SparkContext._gateway, "proc", None) is not None


def _forget_session(started) -> None:
    """What SparkSession.stop() undoes on this side, for a JVM that is about to end."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, SQLContext

    sc = started.sparkContext
    if getattr(sc, "_accumulatorServer", None):
        sc._accumulatorServer.shutdown()
        sc._accumulatorServer = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = SparkSession._activeSession = None
    SQLContext._instantiatedContext = None


def _end_jvm() -> None:
    """End the JVM this process launched, and wait for it: left alone, it exits only once it sees
    this process end (its stdin closing). Under spark-submit the JVM is our parent: nothing to do."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None  # a later session launches a new JVM
    proc.stdin.close()
    proc.wait(timeout=120)


def _active_session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


if __name__ == "__main__":
    sys.exit(main())
