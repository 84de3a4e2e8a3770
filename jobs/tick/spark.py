"""One Spark session per process (local mode by default, `--master` for a cluster)."""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import socket
import sys
import tempfile
import threading
import warnings
import zipfile
from pathlib import Path
from typing import Optional

DEFAULT_MASTER = "local[2]"
MAX_PARTITIONS_KEY = "spark.hypo.shufflePartitions.max"
# A tick of up to this many input rows (S_{τ-1} + D|τ) runs in one partition: on local[2] the
# 10⁵-fact tick (2·10⁵ input rows) took 40 s in 4 partitions (97 stages: every join a shuffle)
# and 28 s in one (docs/performance.md).
ROWS_PER_PARTITION = 524_288
# Whole-stage code generation from this many input rows: below it, compiling Java for each
# operator (its literals, the tick among them, change every tick) costs more than it saves
# (10⁴ facts: +6 s a tick with it); above, interpreting every row costs more (10⁵ facts: -8 s).
CODEGEN_MIN_ROWS = 100_000
# On a cluster the driver's DAGScheduler logs, as an ERROR, "Failed to update accumulator 123
# (Unknown class) for task 0 (attempted to access non-existent accumulator 123)" when a task's
# metrics arrive after the driver dropped that accumulator (the query that owned it is done
# and its plan was garbage-collected, or a stage adaptive execution no longer needs finished
# late): only the lost metric of a finished task, never its result.  The log4j filter below
# drops exactly that message — the "(Unknown class)" form, which Spark prints only when the
# accumulator no longer exists on the driver; a failure to merge into an existing
# accumulator (its class named), and every other DAGScheduler ERROR, still shows.
ACCUMULATOR_GONE = r"Failed to update accumulator -?\d+ \(Unknown class\) for task -?\d+"
_LOG4J = """status = error
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%notEmpty{ (%ex{short.message})}%n
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.dag.name = org.apache.spark.scheduler.DAGScheduler
logger.dag.filter.acc.type = RegexFilter
logger.dag.filter.acc.onMatch = DENY
logger.dag.filter.acc.onMismatch = NEUTRAL
logger.dag.filter.acc.regex = """ + ACCUMULATOR_GONE.replace("\\", "\\\\") + "\n"
_shipped: set = set()
# printed by the JVM at every start because Spark's launcher adds
# --add-modules=jdk.incubator.vector; Airflow logs it as an error (issue 14.5)
HARMLESS_JVM_LINES = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


@contextlib.contextmanager
def _jvm_stderr_filtered():
    """While the JVM is launched, fd 2 is a pipe that a daemon thread copies to the real
    stderr, minus HARMLESS_JVM_LINES: the JVM keeps that pipe as its stderr, Python gets its
    own fd 2 back.  Everything else the JVM prints still appears."""
    try:
        r, w = os.pipe()
        out = os.dup(2)
        keep = os.dup(2)
    except OSError:
        yield
        return

    def pump() -> None:
        with os.fdopen(r, "rb", buffering=0) as f:
            for line in iter(f.readline, b""):
                if line.rstrip(b"\r\n") in HARMLESS_JVM_LINES:
                    continue
                try:
                    os.write(out, line)
                except OSError:
                    pass

    threading.Thread(target=pump, name="jvm-stderr", daemon=True).start()
    sys.stderr.flush()
    os.dup2(w, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(keep, 2)
        os.close(keep)
        os.close(w)


def _log4j_file() -> str:
    """The log4j2 configuration of the driver and the executors, in a file named by its
    content: another checkout of hypo on the machine, with another configuration, never
    rewrites the one a starting JVM is about to read."""
    digest = hashlib.sha256(_LOG4J.encode()).hexdigest()[:12]
    p = Path(tempfile.gettempdir()) / f"hypo-lake-log4j2-{digest}.properties"
    if not p.exists() or p.read_text() != _LOG4J:
        tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, p)
    return str(p)


def active():
    """The process's session: the Spark Connect client if one is open, else the JVM's."""
    if _remote:
        return next(iter(_remote.values()))
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def delta_jars() -> list[str]:
    """The delta-spark jars scripts/fetch-jars.sh put in the venv at set-up (spark.jars: the
    driver ships them to a cluster's executors); HYPO_SPARK_JARS names another folder.  None
    there: a one-line error naming the set-up command — nothing is fetched at run time."""
    folder = Path(os.environ.get("HYPO_SPARK_JARS") or Path(sys.prefix) / "hypo-jars")
    jars = sorted(str(p) for p in folder.glob("*.jar")) if folder.is_dir() else []
    if not any(Path(j).name.startswith("delta-spark_") for j in jars):
        from jobs.errors import LakeError

        raise LakeError(f"the delta-spark jars are missing from {folder}: run "
                        "`bash scripts/setup.sh` (it fetches them from Maven Central)")
    return jars


def planned_master(master: Optional[str] = None) -> str:
    """The master a session(master) call would run on, without starting Spark: the running
    session's (if any and none is asked for), else master, HYPO_SPARK_MASTER or the
    default."""
    if master:
        return master
    if _remote:
        return next(iter(_remote))
    if "pyspark.sql" in sys.modules:  # a session can only be running if pyspark is loaded
        cur = sys.modules["pyspark.sql"].SparkSession.getActiveSession()
        if cur is not None:
            return cur.sparkContext.master
    return os.environ.get("HYPO_SPARK_MASTER") or DEFAULT_MASTER


def is_connect_session(spark) -> bool:
    """A Spark Connect client session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_connect(master: Optional[str]) -> bool:
    """A Spark Connect URL (sc://host:port): the session is a client of a long-lived server
    (scripts/spark-cluster.sh start --connect) instead of a JVM of this process."""
    return bool(master) and master.startswith("sc://")


# the Spark Connect session of this process, by URL (at most one)
_remote: dict = {}


def remote_session(url: str):
    """A client session of the Spark Connect server at url, checked with one round trip: an
    unreachable server is one line naming the URL and how to start one."""
    from jobs.errors import LakeError
    from pyspark.sql import SparkSession

    cur = _remote.get(url)
    if cur is not None:
        return cur
    for other in list(_remote.values()):
        with contextlib.suppress(Exception):
            other.stop()
    _remote.clear()
    hint = ("start one with `scripts/spark-cluster.sh start --connect`, or name another with "
            "--master / HYPO_SPARK_MASTER")
    try:  # a closed port fails now (the client would retry it for minutes)
        _probe(url, 10)
    except (OSError, ValueError) as e:
        raise LakeError(f"no Spark Connect server answers at {url} ({e}); {hint}") from None
    # the client's retries end in a UserWarning before the error itself: the error is enough
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    except Exception as e:  # noqa: BLE001 - grpc's errors: one line
        raise LakeError(f"no Spark Connect server answers at {url} ({connect_reason(e)}); "
                        f"{hint}") from None
    ship_code(spark)
    if not _remote:
        atexit.register(_release_sessions)
    _remote[url] = spark
    return spark


def _release_sessions() -> None:
    """At exit: release the Connect session on its server (its state there would otherwise
    wait for the server's idle timeout, an hour, after every DAG task) — if the server still
    answers (the client would retry a lost one for minutes before the process could end)."""
    for url, s in list(_remote.items()):
        try:
            _probe(url, 2)
        except (OSError, ValueError):
            continue
        with contextlib.suppress(Exception):
            s.stop()


def _probe(url: str, timeout: float) -> None:
    """Open and close a TCP connection to the Connect server of url (sc://host:port/…;
    OSError if nothing listens, ValueError if the port is not a number)."""
    host, _, port = url[len("sc://"):].split("/", 1)[0].split(";", 1)[0].rpartition(":")
    socket.create_connection((host or "127.0.0.1", int(port or 15002)), timeout=timeout).close()


def connect_lost(e: BaseException) -> str:
    """If e is the Spark Connect client giving up on its server (gone during a command: the
    client retried, then raised), the one line to print; else ""."""
    mod, name = type(e).__module__ or "", type(e).__name__
    if not _remote or not (name.startswith("SparkConnect") or "grpc" in mod
                           or mod.startswith("pyspark.errors.exceptions.connect")):
        return ""
    url = next(iter(_remote))
    text = str(e)
    why = "unavailable" if "UNAVAILABLE" in text or "Connection refused" in text or \
        "failed to connect" in text.lower() else connect_reason(e)
    return (f"lost the Spark Connect server at {url} during the command ({why}); nothing of "
            f"the unfinished tick was committed — start the server again "
            f"(`scripts/spark-cluster.sh start --connect`) and run the tick again")


def connect_reason(e: BaseException) -> str:
    """The first line of a Spark Connect client error, without gRPC's debug dump."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:300]


def session(master: Optional[str] = None, shuffle_partitions: Optional[int] = None):
    """The process's Spark session: reused if one is running (its master wins unless a
    different one is asked for explicitly, which restarts it)."""
    from pyspark.sql import SparkSession

    if is_connect(master) or (master is None and _remote):
        return remote_session(master or next(iter(_remote)))
    cur = SparkSession.getActiveSession()
    if cur is not None:
        if master is None or cur.sparkContext.master == master:
            return cur
        cur.stop()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    root = str(Path(__file__).resolve().parents[2])
    pp = os.environ.get("PYTHONPATH", "")
    if root not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")
    master = master or os.environ.get("HYPO_SPARK_MASTER") or DEFAULT_MASTER
    if is_connect(master):
        return remote_session(master)
    parts = shuffle_partitions or int(os.environ.get("HYPO_SPARK_SHUFFLE_PARTITIONS", "4"))
    log4j = f"-Dlog4j.configurationFile=file:{_log4j_file()}"
    b = (SparkSession.builder.master(master).appName("hypo-lake")
         # delta-spark (issue 43): format("delta"), time travel, DESCRIBE HISTORY, MERGE
         .config("spark.jars", ",".join(delta_jars()))
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog",
                 "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         # a Delta log's state in one task, not 50: the tick's writes read the snapshot of a
         # table whose log is a few small files (0.7 s a write instead of 1.1-1.8 s, measured)
         .config("spark.databricks.delta.snapshotPartitions", "1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(parts))
         .config("spark.default.parallelism", str(parts))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         # a fixed number of Spark jobs a tick, whatever the data (issue 42): adaptive
         # execution submits every shuffle stage of a query as a job of its own, and a
         # broadcast join runs a job to collect its small side when the plan is prepared
         # (a lazy checkpoint included); off, one action is one job, and the shuffle
         # partitions are chosen per tick from the input's size instead (tick_partitions)
         .config("spark.sql.adaptive.enabled", "false")
         .config("spark.sql.autoBroadcastJoinThreshold", "-1")
         .config(MAX_PARTITIONS_KEY, str(parts))
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.memory", os.environ.get("HYPO_SPARK_DRIVER_MEMORY", "4g"))
         .config("spark.driver.extraJavaOptions", log4j)
         .config("spark.executor.extraJavaOptions", log4j)
         .config("spark.python.worker.reuse", "true")
         .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
         .config("spark.executorEnv.GX_ANALYTICS_ENABLED", "false"))
    for k, v in _user_conf().items():
        b = b.config(k, v)
    with _jvm_stderr_filtered():
        spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        ship_code(spark)
    return spark


def _user_conf() -> dict[str, str]:
    """The Spark settings of HYPO_SPARK_CONF (k=v,k=v)."""
    out = {}
    for kv in filter(None, os.environ.get("HYPO_SPARK_CONF", "").split(",")):
        k, _, v = kv.partition("=")
        out[k.strip()] = v.strip()
    return out


_SINGLE_CONF = (("spark.sql.defaultSizeInBytes", "1", str(2 ** 63 - 1)),
                ("spark.sql.sources.fileCompressionFactor", "1e-15", "1.0"),
                # frames built on the driver (LocalRelation) carry their true sizes
                ("spark.sql.maxSinglePartitionBytes", str(2 ** 63 - 1), "128m"),
                # a runtime Bloom filter is one more job a join (jobs would grow with the data),
                # and filters nothing in one partition
                ("spark.sql.optimizer.runtime.bloomFilter.enabled", "false", "false"))
# (setting, below CODEGEN_MIN_ROWS, from it on)
_CODEGEN_CONF = (("spark.sql.codegen.wholeStage", "false", "true"),
                 ("spark.sql.codegen.factoryMode", "NO_CODEGEN", "FALLBACK"))


def tick_partitions(spark, rows: int) -> int:
    """Shuffle partitions for a tick of `rows` input rows (the slice's and S_{τ-1}'s, read
    from the Parquet footers on the driver): one per ROWS_PER_PARTITION, at most the
    session's HYPO_SPARK_SHUFFLE_PARTITIONS — a tick of a few facts is then one task a
    stage instead of four idle ones."""
    top = int(spark.conf.get(MAX_PARTITIONS_KEY, None)
              or os.environ.get("HYPO_SPARK_SHUFFLE_PARTITIONS", "4"))
    n = max(1, min(top, -(-rows // ROWS_PER_PARTITION)))
    spark.conf.set("spark.sql.shuffle.partitions", str(n))
    # One partition (the plan then coalesces its inputs and keeps every frame in one
    # partition: jobs/tick/spark_plan.py, `single`): Spark plans no exchange between such
    # frames only if its size estimates are under spark.sql.maxSinglePartitionBytes — and the
    # estimate of a join is the product of its sides' (a checkpoint's or an RDD's is
    # Long.MaxValue by default): estimates of 1 byte keep every product small.  (Settings a
    # user gives in HYPO_SPARK_CONF win.)
    mine = _user_conf()
    few = rows < CODEGEN_MIN_ROWS
    settings = [(k, one if n == 1 else many) for k, one, many in _SINGLE_CONF]
    settings += [(k, small if few else big) for k, small, big in _CODEGEN_CONF]
    for k, v in settings:
        if k not in mine:
            try:
                spark.conf.set(k, v)
            except Exception:  # noqa: BLE001 — a server that refuses a setting: only slower
                pass
    return n


def ship_code(spark) -> None:
    """For a cluster: send reasoning/, jobs/ and schemas/ to the executors as a zip."""
    root = Path(__file__).resolve().parents[2]
    key = str(root)
    if key in _shipped or (key, id(spark)) in _shipped:
        return
    out = Path(tempfile.mkdtemp(prefix="hypo-code-")) / "hypo_code.zip"
    with zipfile.ZipFile(out, "w") as z:
        for pkg in ("reasoning", "jobs", "schemas"):
            for f in (root / pkg).rglob("*"):
                if f.is_file() and "__pycache__" not in f.parts:
                    z.write(f, f.relative_to(root))
    if is_connect_session(spark):  # the server ships it on
        spark.addArtifacts(str(out), pyfile=True)
        _shipped.add((key, id(spark)))
        return
    spark.sparkContext.addPyFile(str(out))
    _shipped.add(key)
