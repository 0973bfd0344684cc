"""The SparkSession Strata reads and writes with: local by default, or the ``spark_master``
setting's cluster (``spark://``, ``yarn``, ``k8s://``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strata.errors import LakeError
from strata.settings import Settings

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

# What Strata's catalog relies on, on any master: UTC session times, and Parquet
# timestamps pyarrow reads as timestamps (Spark's default INT96 are not).
REQUIRED = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
# Sizes for one machine, where the executors live in the driver. On a cluster they are
# left to its own configuration (spark-defaults.conf, PYSPARK_SUBMIT_ARGS): Strata's
# options would override those, and four shuffle partitions starve a cluster.
LOCAL_ONLY = {
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "2g",
    # Hadoop's local file system writes a checksum file beside every file it writes, a
    # third of the cost of writing a partition's small file; the lake's files carry
    # Parquet's own checksums, and Strata and pyarrow never read Hadoop's.
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    # A frame over more than 32 files lists them in a Spark job of one task per file
    # (up to 10,000): about 3 s for a partitioned dataset's 1,095 files. A few tasks, each
    # listing its share, still list a remote lake in parallel.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
}


def is_local(master: str) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]`` and ``local-cluster[…]`` masters."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def session_options(master: str) -> dict[str, str]:
    """The Spark options Strata starts a session with on ``master``."""
    return {**REQUIRED, **(LOCAL_ONLY if is_local(master) else {})}


_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_started_log: Path | None = None
_starting = threading.Lock()


def running() -> bool:
    """Whether this process has a Spark context already (imports and starts nothing)."""
    context = sys.modules.get("pyspark.context")
    return context is not None and context.SparkContext._active_spark_context is not None


def get_spark(settings: Settings | None = None) -> SparkSession:
    """Return the active SparkSession, or start one configured for Strata.

    Unless ``settings.verbose``, Spark's own output (log4j lines, JVM notices, pyspark's
    Python loggers) goes to ``<home>/logs/spark.log`` rather than the terminal.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # per thread: a build's or the API's may have none
    if active is not None:
        return active
    with _starting:
        if SparkContext._active_spark_context is not None:
            return SparkSession.builder.getOrCreate()
        return _start(settings or Settings.load())


def start_ahead(settings: Settings) -> None:
    """Start the JVM of a ``get_spark`` to come now, so that it starts while the caller
    does its own work first. For a process that ends with its command: a JVM nothing
    connected to is stopped at exit. A verbose session starts when asked, as before."""
    from strata.lake import spark_ahead
    from strata.lake.spark_logs import log4j_path, prepare_log

    if settings.verbose or running() or not spark_ahead.possible():
        return  # started when asked, its log's `===` line written then
    _prepare_environment(settings)
    log, _ = prepare_log(settings)
    spark_ahead.start(_options(settings, log4j_path(settings)), log)


def _start(settings: Settings) -> SparkSession:
    from pyspark.sql import SparkSession

    _prepare_environment(settings)
    if settings.verbose:
        session = SparkSession.builder.config(conf=_conf(_options(settings))).getOrCreate()
        session.sparkContext.setLogLevel("WARN")
    else:
        session = _start_quiet(settings)
    _cancel_jobs_on_interrupt(session)
    return session


def _prepare_environment(settings: Settings) -> None:
    # Python workers (UDFs) run PYSPARK_PYTHON, else whatever `python3` is on the PATH,
    # which need not have pyspark, Strata or the pipeline's libraries. The driver's own
    # interpreter is the one known to have them; a cluster whose executors keep Python
    # elsewhere sets PYSPARK_PYTHON.
    from strata.lake.spark_jar import put_on_class_path

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    put_on_class_path(settings)
    if is_local(settings.spark_master) and not os.environ.get("SPARK_LOCAL_IP"):
        # Without it Spark warns that the host name resolves to a loopback address.
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"


def _cancel_jobs_on_interrupt(session: SparkSession) -> None:
    """Ctrl-C raises KeyboardInterrupt where Python is, and cancels Spark's jobs from a
    thread of its own.

    pyspark's handler cancels them first, on the interrupted thread: when that thread was
    waiting in a JVM call, the cancel's own call failed, and a Py4JError reached the code
    instead of KeyboardInterrupt (a build stopped by Ctrl-C said its transform failed).
    Signal handlers belong to the main thread; a session started elsewhere keeps pyspark's."""
    if threading.current_thread() is not threading.main_thread():
        return
    context = session.sparkContext

    def interrupted(signum: int, frame: Any) -> None:
        threading.Thread(target=_cancel_all, args=(context,), daemon=True).start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)


def _cancel_all(context: Any) -> None:
    with contextlib.suppress(Exception):  # the JVM may be stopping too: nothing to cancel
        context.cancelAllJobs()


@contextlib.contextmanager
def undone_on_error(undo: Callable[[], object]) -> Iterator[None]:
    """Call ``undo`` (a JVM call that releases what the block set up) when the block
    raises, and raise the block's own error: ``undo``'s failure is dropped.

    After Ctrl-C it is not called at all: py4j has closed the thread's connection and
    asked the JVM to interrupt its call, and a call made then could fail in its turn and
    put a Py4J error in the KeyboardInterrupt's place (a build stopped in its write said
    its transform failed). A process stopped by Ctrl-C ends, and its JVM with it."""
    try:
        yield
    except Exception:
        with contextlib.suppress(Exception):
            undo()
        raise


def stop_jobs(session: SparkSession, timeout: float = 10.0) -> None:
    """Cancel the session's jobs and wait (at most ``timeout`` seconds) until none runs.

    A build stopped while its job writes deletes the job's files next: with the job still
    running, its tasks would clean up or write in a folder being deleted. Only the main
    thread is ever interrupted, and only it cancels (the jobs of a server's other threads
    go on)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(Exception):  # the JVM may be stopping too: nothing to wait for
        context = session.sparkContext
        context.cancelAllJobs()
        tracker, deadline = context.statusTracker(), time.monotonic() + timeout
        while tracker.getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.05)


def spark_log() -> Path | None:
    """The log file of the Spark session this process started quietly, if it did."""
    return _started_log


def _options(settings: Settings, log4j: Path | None = None) -> dict[str, str]:
    """The options a session starts with; a quiet one's log4j2 file is ``log4j``."""
    from strata.lake.spark_local_fs import spark_options

    return {
        "spark.master": settings.spark_master,
        "spark.app.name": "strata",
        **session_options(settings.spark_master),
        **spark_options(settings),
        **_java_options(settings, log4j),
    }


def _java_options(settings: Settings, log4j: Path | None) -> dict[str, str]:
    """The driver's Java options: spark-defaults.conf's (which ours would otherwise
    hide), the settings', the class cache's, and the log4j2 file of a quiet session."""
    from strata.lake.spark_classes import java_option
    from strata.lake.spark_logs import log4j_option, spark_defaults_value

    given = (
        spark_defaults_value(_JAVA_OPTIONS),
        settings.spark_java_options,
        java_option(settings),
        log4j_option(log4j) if log4j is not None else None,
    )
    joined = " ".join(part for part in given if part)
    return {_JAVA_OPTIONS: joined} if joined else {}


def _conf(options: dict[str, str]) -> SparkConf:
    from pyspark import SparkConf

    return SparkConf().setAll(list(options.items()))


def _start_quiet(settings: Settings) -> SparkSession:
    """Start the JVM (or take the one started ahead) with its stderr and log4j2 output in
    the log file."""
    global _started_log
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from strata.lake import spark_ahead
    from strata.lake.spark_logs import (
        log4j_path,
        prepare_log,
        route_python_loggers,
        spark_log_path,
    )

    options = _options(settings, log4j_path(settings))
    conf = _conf(options)
    ahead = spark_ahead.take(options)
    if ahead is not None:
        log, gateway = spark_log_path(settings), ahead.connect()
    else:
        log, _ = prepare_log(settings)
        gateway = _launched(conf, log)
    if gateway is None:
        raise _did_not_start(log)
    SparkContext(conf=conf, gateway=gateway)
    route_python_loggers(log)
    _started_log = log
    return SparkSession.builder.config(conf=conf).getOrCreate()


def _launched(conf: SparkConf, log: Path) -> Any | None:
    """pyspark's own start of the JVM, or None if it exited (why is in the log)."""
    from pyspark.java_gateway import launch_gateway

    with log.open("ab") as sink:  # the JVM keeps its own copy of the descriptor
        output = {"stdout": sink, "stderr": sink}
        try:
            return launch_gateway(conf, popen_kwargs=output)  # type: ignore[no-untyped-call]
        except Exception:  # the JVM exited: why is in the log, not the terminal
            return None


def _did_not_start(log: Path) -> LakeError:
    return LakeError(
        f"Spark did not start: {_last_lines(log)}; the whole log is {log}", log=str(log)
    )


def _last_lines(log: Path, count: int = 3) -> str:
    """What this start wrote to the log (after its ``===`` line), its last few lines."""
    text = log.read_text(errors="replace").rsplit("\n===", 1)[-1]
    said = [line.strip() for line in text.splitlines()[1:] if line.strip()]
    return " | ".join(said[-count:]) or "the JVM exited without a word"
