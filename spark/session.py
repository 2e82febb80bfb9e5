"""The verifier's Spark session: its settings (heap and shuffle width from spark/memory.py, the
JIT and GC options, scratch space), the kernels on its classpath, and its end (spark_scope).
Used as-is under spark-submit, whose own options win."""
from __future__ import annotations

import contextlib
import os

from dcdrill.spark import cds, memory
from dcdrill.spark.ledgers import BadInput

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


def heap_given(conf: dict[str, str], plan: memory.Plan) -> str:
    """The heap a session of ours gets: --conf, then DCDRILL_SPARK_DRIVER_MEMORY, then the plan."""
    return conf.get("spark.driver.memory") or os.environ.get("DCDRILL_SPARK_DRIVER_MEMORY") or plan.heap_setting


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
