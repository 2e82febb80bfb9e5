"""The verifier's Spark session: its settings (heap and shuffle width from spark/memory.py, the
JIT and GC options, scratch space), the kernels on its classpath, and its end (spark_scope).
Used as-is under spark-submit, whose own options win."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from dcdrill.spark import java_runtime, kernels, memory
from dcdrill.spark.ledgers import BadInput


class JvmEnded(RuntimeError):
    """The JVM this process launched for Spark has ended: a new one needs a new process."""


class _Jvm:
    """The py4j gateway to the JVM that runs Spark for this process: launched by the first
    session() with pyspark's launch_gateway and handed to SparkContext, so that this process
    holds it and can end that JVM (end_jvm) without pyspark's internals. Under spark-submit
    it reaches the JVM that spark-submit started, and nothing here ends that one."""

    gateway = None
    context_made = False
    ending = False  # begin_ending_jvm() was called: no Spark call may follow
    early: threading.Thread | None = None  # start_early()'s, until await_early()


_JVM = _Jvm()
LOWEST_PRIORITY = 19  # nice


def start_early() -> None:
    """Start the verifier's JVM and Spark session in the background, at the lowest CPU priority:
    a drill's lab needs the CPUs until its verify, which then finds Spark started (a few seconds
    of `make drill`). The thread's priority is Linux's per thread, and the JVM forked from it
    inherits it; await_early() gives the JVM its normal priority back. A failed start is left
    for the verify's own session() to meet again. Its plan is a small record's (the plan's floor,
    which a drill's record stays under)."""
    if _JVM.gateway is not None or _JVM.early is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return

    def start() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)  # raising one's own: always allowed
        with contextlib.suppress(Exception):  # the verify's session() meets the same failure, and says it
            session()

    _JVM.early = threading.Thread(target=start, daemon=True, name="dcdrill spark start")
    _JVM.early.start()


def await_early() -> None:
    """Wait for start_early()'s session, then give its JVM's threads this process's priority
    (lowering a nice value needs root, as the lab does; without it they stay low, on a machine
    whose lab is idle by then)."""
    early, _JVM.early = _JVM.early, None
    if early is None:
        return
    early.join()
    proc = jvm_process()
    if proc is None or proc.poll() is not None:
        return
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    for task in Path(f"/proc/{proc.pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # a thread that ended, or no right to raise a priority
            os.setpriority(os.PRIO_PROCESS, int(task.name), mine)


def _submitted_conf() -> dict[str, str]:
    """What spark-submit gave the JVM (--master, --conf, --jars), read from the JVM's own SparkConf."""
    from pyspark.java_gateway import launch_gateway

    if _JVM.gateway is None:
        _JVM.gateway = launch_gateway()  # with PYSPARK_GATEWAY_PORT set: reaches spark-submit's JVM
    pairs = _JVM.gateway.jvm.org.apache.spark.SparkConf(True).getAll()
    return {pair._1(): pair._2() for pair in pairs}


LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
# What the JVM prints at every start that says nothing about the record: Spark 4's launcher opens
# packages JDK 25 no longer has, and adds an incubator module the JVM announces.
JVM_NOISE = ("WARNING: Using incubator modules:", "WARNING: package sun.security.action not in java.base")


def _log_options() -> str:
    level = os.environ.get("DCDRILL_SPARK_LOG_LEVEL", "FATAL")
    return f"-Dlog4j2.configurationFile={LOG_CONFIG} -Ddcdrill.log.level={level}"


def _forward_stderr(log: int, proc) -> None:
    """The JVM's stderr (the file `log`) to ours, line by line as it grows, less JVM_NOISE. pread:
    the JVM shares the file's offset, which a read would move under its writes."""
    at, rest = 0, b""
    while True:
        ended = proc.poll() is not None
        chunk = os.pread(log, 1 << 16, at)
        at += len(chunk)
        *lines, rest = (rest + chunk).split(b"\n")
        for raw in lines:
            line = raw.decode(errors="replace") + "\n"
            if not line.startswith(JVM_NOISE):
                sys.stderr.write(line)
                sys.stderr.flush()
        if ended and not chunk:
            os.close(log)
            return
        if not chunk:
            time.sleep(0.2)


def _launch(conf: dict):
    """pyspark's launch_gateway, the JVM's stderr in a file forwarded to ours. A JVM that exits
    before it answers (JAVA_GATEWAY_EXITED) has its last words said, and is started once more.
    That is how gRPC's fork handlers were caught aborting the forked child (dcdrill/__init__.py)."""
    from pyspark import SparkConf
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    for attempt in (1, 2):
        log = tempfile.TemporaryFile(prefix="dcdrill-jvm-", suffix=".stderr")
        try:
            gateway = launch_gateway(
                conf=SparkConf(loadDefaults=False).setAll(conf.items()), popen_kwargs={"stderr": log}
            )
        except PySparkRuntimeError:
            log.seek(0)  # the JVM has ended: nothing else moves the offset now
            said = log.read().decode(errors="replace").strip().splitlines()[-20:]
            log.close()
            if attempt == 2:
                raise
            print(
                "dcdrill: the verifier's JVM exited as it started, saying: "
                + (" | ".join(said) or "nothing")
                + "; starting it once more",
                file=sys.stderr,
                flush=True,
            )
            continue
        threading.Thread(target=_forward_stderr, args=(os.dup(log.fileno()), gateway.proc), daemon=True).start()
        log.close()
        return gateway


def jvm_process():
    """The JVM process this process launched for Spark (a subprocess.Popen); None before the first
    session, and under spark-submit (the JVM is this process's parent)."""
    return getattr(_JVM.gateway, "proc", None)


def jvm_ended() -> bool:
    """Whether the JVM this process launched has ended, or is ending (begin_ending_jvm)."""
    proc = getattr(_JVM.gateway, "proc", None)
    return proc is not None and (_JVM.ending or proc.poll() is not None)


# A verify run is a short-lived JVM on a couple of cores, where the C2 compiler's time competes
# with the tasks. A smaller inlining budget makes C2 compiles cheaper for code that runs a few
# seconds; whole-stage code generation writes methods above HotSpot's 8000-byte limit, which would
# otherwise stay interpreted however hot they are; higher C2 thresholds leave driver code run a few
# thousand times to C1. The scan's cache is 2 MB chunks (spark/jvm/Scan.java), each a humongous
# object for G1, which checks its marking threshold at every one: a fixed threshold starts fewer
# concurrent marking cycles than the adaptive one on a heap still growing. (ParallelGC and
# SerialGC stop everything in their old-generation collections, on heaps planned up to 60% of the
# machine.) The figures: docs/benchmarks.md, "Figures behind the code's choices".
# DCDRILL_SPARK_JAVA_OPTIONS comes after, so it can override these.
GC_OPTIONS = "-XX:-G1UseAdaptiveIHOP -XX:InitiatingHeapOccupancyPercent=85"
JIT_OPTIONS = (
    "-XX:FreqInlineSize=100 -XX:InlineSmallCode=1000 -XX:-DontCompileHugeMethods "
    "-XX:Tier4InvocationThreshold=20000 -XX:Tier4MinInvocationThreshold=2400 "
    "-XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=160000"
)


def session(
    master: str | None = None, conf: dict[str, str] | None = None, s3a: bool = False, plan: memory.Plan | None = None
):
    """The verifier's Spark session. `conf`: extra Spark settings (what --conf gives). `s3a`: put
    hadoop-aws and the AWS SDK on the classpath, for s3a:// records. `plan`: the heap and shuffle
    width for the records to verify (spark/memory.py; without one, as for a small record).
    Under spark-submit, its options win: the defaults below only fill what it left unset."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # spark-submit starts the JVM and hands this process its gateway: --master, --conf and
    # --jars are already in the JVM's SparkConf, and JVM options can no longer change.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    given = _submitted_conf() if submitted else {}
    conf = conf or {}
    chosen = (
        conf.get("spark.master")
        or given.get("spark.master")
        or master
        or os.environ.get("DCDRILL_SPARK_MASTER", "local[*]")
    )
    # local[N] and local-cluster[...] keep every JVM on this machine: Spark binds to loopback
    # only, the verifier needs no network beyond it. A cluster's executors must reach the driver.
    on_this_machine = chosen.startswith("local")
    if on_this_machine:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    plan = plan or memory.plan([])
    settings = {
        "spark.app.name": "dcdrill-verify",
        # Two tasks per core: fewer tasks to plan and fewer, longer window partitions, with a task
        # still to fill each tail.
        # More as the record grows (spark/memory.py), so a reducer's states stay bounded.
        "spark.sql.shuffle.partitions": os.environ.get("DCDRILL_SHUFFLE_PARTITIONS", str(plan.partitions)),
        # Adaptive execution re-plans (and re-generates code for) every query after each stage.
        # The verifier's plans need none of it (broadcasts are explicit, partitions are few),
        # and on 2 cores the re-planning is driver CPU the tasks wait for.
        "spark.sql.adaptive.enabled": "false",
        # The checker's shuffles (spark/jvm) carry 64-bit hashes, which LZ4 cannot shrink.
        "spark.shuffle.compress": "false",
        # Sorted shuffle writes, not one file per reducer concatenated after: MirrorFold's large
        # shuffle pays for that copy, and the stretched verify's small ones cost the same either way.
        "spark.shuffle.sort.bypassMergeThreshold": "1",
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
            "spark.driver.extraClassPath": str(java_runtime.kernel_jar()),
            "spark.driver.extraJavaOptions": f"{java_runtime.java_options()} {JIT_OPTIONS} {GC_OPTIONS} "
            f"{memory.JVM_OPTIONS} "
            f"{_tmpdir_option(settings)} "
            f"{_log_options()} {os.environ.get('DCDRILL_SPARK_JAVA_OPTIONS', '')}".strip(),
        }
    if not submitted:
        try:
            kernels.ensure(say=lambda line: print(f"dcdrill: {line}", file=sys.stderr, flush=True))
        except kernels.KernelsUnavailable as exc:
            raise BadInput(str(exc)) from None
    jars = []
    if not submitted and not (chosen == "local" or chosen.startswith("local[")):
        jars.append(str(java_runtime.kernel_jar()))  # executors in JVMs of their own load the kernels from spark.jars
    if s3a and not submitted:
        if not java_runtime.s3a_jars():
            raise BadInput(
                "s3a:// records need hadoop-aws and the AWS SDK: run `make setup` (infra/toolchain/s3a-pom.xml)"
            )
        jars += java_runtime.s3a_jars()
    if jars:
        settings["spark.jars"] = ",".join(jars)
    ours = {key: value for key, value in {**settings, **conf}.items() if key not in given}
    if jvm_ended():
        raise JvmEnded("the verifier's JVM has ended (it ran out of memory, or was killed)")
    if not _JVM.context_made:  # the first session of this process: its JVM, launched (or reached) here
        if _JVM.gateway is None:
            with java_runtime.spark_java_home():
                _JVM.gateway = _launch(ours)
        SparkContext(conf=SparkConf(loadDefaults=False).setAll(ours.items()), gateway=_JVM.gateway)
        _JVM.context_made = True  # later sessions' contexts find the same gateway
    b = SparkSession.builder
    for key, value in ours.items():
        b = b.config(key, value)
    spark = b.getOrCreate()
    # A failure reaches the user as one line naming its cause (run()), not as Spark's stack traces.
    spark.sparkContext.setLogLevel(os.environ.get("DCDRILL_SPARK_LOG_LEVEL", "FATAL"))
    from py4j.java_gateway import JavaClass

    if not isinstance(_JVM.gateway.jvm.dcdrill.Screen, JavaClass):  # spark-submit without --jars
        raise BadInput(
            f"the verifier's JVM kernels are not on Spark's classpath: pass --jars {java_runtime.kernel_jar()} "
            "to spark-submit (`python -m dcdrill.spark.kernels` builds it)"
        )
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


def heap_given(conf: dict[str, str], plan: memory.Plan) -> str:
    """The heap a session of ours gets: --conf, then DCDRILL_SPARK_DRIVER_MEMORY, then the plan."""
    return conf.get("spark.driver.memory") or os.environ.get("DCDRILL_SPARK_DRIVER_MEMORY") or plan.heap_setting


@contextlib.contextmanager
def spark_scope(end_jvm: bool = False):
    """Stop the Spark session started inside (SparkSession.stop: Spark's clean-up of its shuffle
    and temporary files is done when the scope ends); one that was already running is left as it
    was. `end_jvm`: also end the JVM this process launched, and wait for it, so that a command
    returns with nothing of it still running (left alone, it ends only after this process does).
    Only a process's own command passes it: a JVM cannot be launched again in the same process."""
    before = _active_session()
    try:
        yield
    finally:
        await_early()  # a start still under way would race the end below
        started = _active_session()
        if end_jvm and before is None and jvm_process() is not None:
            # The JVM's exit stops Spark (Spark's own shutdown hook does what stop() would):
            # a fraction of SparkSession.stop()'s time, for a process about to end anyway.
            _end_jvm()
        elif started is not None and started is not before:
            with contextlib.suppress(Exception):  # py4j: the JVM has ended already
                started.stop()
        if before is None:
            _remove_local_dirs()


def begin_ending_jvm() -> None:
    """Let the JVM this process launched end now, without waiting for it: for a command whose
    last Spark job is done while it still draws and writes a report. The JVM's exit (Spark's
    shutdown hook, its folders deleted, its heap unmapped) then takes the other core, and
    spark_scope(end_jvm=True) only waits for what is left of it. No-op under spark-submit."""
    gateway = _JVM.gateway
    proc = getattr(gateway, "proc", None)
    if proc is None or _JVM.ending:  # none launched, spark-submit's (our parent), or ending already
        return
    _JVM.ending = True
    # pyspark's accumulator server reads the JVM's updates until their connection ends, which at
    # the JVM's exit is an EOFError that socketserver prints. SparkContext.stop() avoids it with
    # server.shutdown(), which waits for the handler's next one-second poll, on every command.
    # The error is expected here; it is not printed instead.
    from pyspark import SparkContext

    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is not None:
        server.server_shutdown = True
        server.handle_error = lambda request, client_address: None
    with contextlib.suppress(Exception):
        gateway.shutdown()
    proc.stdin.close()  # pyspark's JVM ends when its stdin does


def _end_jvm() -> None:
    begin_ending_jvm()
    proc = getattr(_JVM.gateway, "proc", None)
    if proc is not None:
        proc.wait(timeout=120)


def _active_session():
    if _JVM.gateway is None or jvm_ended():
        return None
    from pyspark.sql import SparkSession

    try:
        return SparkSession.getActiveSession()
    except Exception:  # noqa: BLE001 - py4j: the JVM that held it has ended
        return None
