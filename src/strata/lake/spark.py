"""The local (or configured) SparkSession Strata reads and writes with."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from strata.errors import LakeError
from strata.settings import Settings

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_started_log: Path | None = None
_starting = threading.Lock()


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


def _start(settings: Settings) -> SparkSession:
    from pyspark.sql import SparkSession

    conf = _conf(settings)
    if settings.spark_master.startswith("local") and not os.environ.get("SPARK_LOCAL_IP"):
        # Without it Spark warns that the host name resolves to a loopback address.
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if not settings.verbose:
        _start_quiet(settings, conf)
    session = SparkSession.builder.config(conf=conf).getOrCreate()
    if settings.verbose:
        session.sparkContext.setLogLevel("WARN")
    return session


def spark_log() -> Path | None:
    """The log file of the Spark session this process started quietly, if it did."""
    return _started_log


def _conf(settings: Settings) -> SparkConf:
    from pyspark import SparkConf

    return (
        SparkConf()
        .setMaster(settings.spark_master)
        .setAppName("strata")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.session.timeZone", "UTC")
        # Spark's default INT96 timestamps are unreadable as timestamps by pyarrow readers.
        .set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .set("spark.sql.shuffle.partitions", "4")
        .set("spark.driver.memory", "2g")
    )


def _start_quiet(settings: Settings, conf: SparkConf) -> None:
    """Start the JVM with its stderr and log4j2 output in the log file."""
    global _started_log
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    from strata.lake.spark_logs import (
        java_options,
        prepare_log,
        route_python_loggers,
        spark_defaults_value,
    )

    log, props = prepare_log(settings)
    given = conf.get(_JAVA_OPTIONS) or spark_defaults_value(_JAVA_OPTIONS)
    conf.set(_JAVA_OPTIONS, java_options(given, props))
    with log.open("ab") as sink:
        # The JVM keeps its own copy of the descriptor; ours can close.
        try:
            gateway = launch_gateway(  # type: ignore[no-untyped-call]
                conf, popen_kwargs={"stdout": sink, "stderr": sink}
            )
        except Exception as exc:  # the JVM exited: why is in the log, not the terminal
            raise LakeError(
                f"Spark did not start: {_last_lines(log)}; the whole log is {log}", log=str(log)
            ) from exc
    SparkContext(conf=conf, gateway=gateway)
    route_python_loggers(log)
    _started_log = log


def _last_lines(log: Path, count: int = 3) -> str:
    """What this start wrote to the log (after its ``===`` line), its last few lines."""
    text = log.read_text(errors="replace").rsplit("\n===", 1)[-1]
    said = [line.strip() for line in text.splitlines()[1:] if line.strip()]
    return " | ".join(said[-count:]) or "the JVM exited without a word"
