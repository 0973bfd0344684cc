"""Where Spark's own logging goes: ``<home>/logs/spark.log``, unless settings say verbose.

The JVM logs through log4j2 and also writes straight to its stderr (the incubator
module notice, "Using Spark's default log4j profile", Python worker tracebacks), so
both are routed: a log4j2 file sends every logger to the JVM's stderr, and that
stderr is the log file. pyspark's own Python loggers are pointed at the same file.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from strata.settings import Settings

LOG4J2_NAME = "log4j2-spark.properties"
ROLL_BYTES = 10 * 1024 * 1024
# pyspark's loggers; the two QueryContext loggers print a JSON line per failed query.
PYTHON_LOGGERS = ("py4j", "pyspark", "DataFrameQueryContextLogger", "SQLQueryContextLogger")
_LINE = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # a Python record in the log

_LOG4J2 = """\
# Written by strata on every Spark start; edit strata's spark settings, not this file.
status = error
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


def spark_log_path(settings: Settings) -> Path:
    """The file a quiet Spark session logs to."""
    return settings.home.resolve() / "logs" / "spark.log"


def log4j_path(settings: Settings) -> Path:
    """The log4j2 file a quiet Spark session is started with."""
    return spark_log_path(settings).parent / LOG4J2_NAME


def prepare_log(settings: Settings) -> tuple[Path, Path]:
    """Make the logs folder, roll a large log aside, write the log4j2 file; say who starts.

    Returns the log file and the log4j2 properties file.
    """
    log = spark_log_path(settings)
    log.parent.mkdir(parents=True, exist_ok=True)
    if log.exists() and log.stat().st_size > ROLL_BYTES:
        log.replace(log.with_name(log.name + ".1"))
    props = log4j_path(settings)
    props.write_text(_LOG4J2, encoding="utf-8")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n=== {started} pid {os.getpid()}: {shlex.join(sys.argv)}\n")
    return log, props


def log4j_option(props: Path) -> str:
    """The Java option that points log4j2 at ``props``."""
    return f"-Dlog4j2.configurationFile={props.as_uri()}"


def spark_defaults_value(key: str) -> str | None:
    """``key`` from spark-defaults.conf, which a ``--conf`` we pass would otherwise hide."""
    folder = os.environ.get("SPARK_CONF_DIR")
    if folder is None:
        home = os.environ.get("SPARK_HOME")
        if home is None:
            return None
        folder = str(Path(home) / "conf")
    path = Path(folder) / "spark-defaults.conf"
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0] == key:
            return parts[1].strip()
    return None


def route_python_loggers(log: Path) -> None:
    """Send pyspark's Python loggers to ``log`` instead of the terminal, and what py4j
    logs through the root logger (:func:`route_py4j_root_records`)."""
    route_py4j_root_records(log)
    from pyspark.logger import PySparkLogger

    for name in PYTHON_LOGGERS:
        # The QueryContext loggers must be PySparkLoggers: pyspark logs to them with
        # keyword context a plain Logger refuses. A PySparkLogger writes JSON lines.
        logger = (
            PySparkLogger.getLogger(name) if "QueryContext" in name else logging.getLogger(name)
        )
        for old in list(logger.handlers):
            logger.removeHandler(old)
            old.close()
        handler = logging.FileHandler(log, encoding="utf-8")
        handler.setFormatter(logging.Formatter(_LINE))
        logger.addHandler(handler)
        logger.propagate = False


def route_py4j_root_records(log: Path) -> None:
    """Send what py4j logs through the root logger to ``log``, where the process has not
    set up logging itself (the ``strata`` command); everything else is printed as before.

    py4j logs an interrupted JVM call ("KeyboardInterrupt while sending command.", with
    its traceback) by ``logging.exception``, on the root logger: with no handler there,
    that call first sets up the root logger to print every record to the terminal, so a
    worker stopped by SIGTERM ended in a traceback. Two handlers take the root logger's
    place: py4j's records to the file, the others to stderr from WARNING up, as Python
    prints them when no handler is set."""
    root = logging.getLogger()
    if root.handlers:  # set up by whoever runs us: theirs to route
        return
    to_file = logging.FileHandler(log, encoding="utf-8", delay=True)
    to_file.setFormatter(logging.Formatter(_LINE))
    to_file.addFilter(_from_py4j)
    to_terminal = _Stderr(logging.WARNING)
    to_terminal.addFilter(lambda record: not _from_py4j(record))
    root.addHandler(to_file)
    root.addHandler(to_terminal)


def _from_py4j(record: logging.LogRecord) -> bool:
    """Whether py4j's code made ``record``."""
    return "py4j" in Path(record.pathname).parts


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a record comes, as Python's last-resort
    handler does: a progress display swaps it to print lines above itself."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.setLevel(level)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always sys.stderr
