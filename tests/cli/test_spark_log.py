"""Spark's own output stays out of the terminal: it goes to <home>/logs/spark.log.

Each test runs the installed `strata` in a process of its own, as a user does, since
only a fresh process starts its own JVM.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from console import run_strata as strata
from strata.errors import ConfigError
from strata.lake.service import connect
from strata.settings import Settings

SPARK_NOISE = ("log4j", "WARN", "NativeCodeLoader", "WARNING", "SparkContext", "Py4J")


def noise(done: subprocess.CompletedProcess[str]) -> list[str]:
    lines = (done.stdout + done.stderr).splitlines()
    return [line for line in lines if any(word in line for word in SPARK_NOISE)]


def test_ingest_and_read_print_only_strata(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "clicks.csv").write_text("user,clicks\nada,3\nbob,1\n")
    ingest = strata(home, "ingest", "--spark", str(tmp_path / "clicks.csv"), "raw/clicks")
    assert ingest.returncode == 0, ingest.stderr
    assert noise(ingest) == []
    assert ingest.stdout.strip() == "raw/clicks: version 1 (APPEND), 2 rows in 1 file(s)"
    assert ingest.stderr == ""
    read = strata(home, "read", "raw/clicks")
    assert read.returncode == 0 and noise(read) == []
    log = home / "logs" / "spark.log"
    assert log.stat().st_size > 0
    text = log.read_text()
    assert "ingest" in text  # each Spark start names its command
    # What would have reached the terminal is in the file instead.
    assert "jdk.incubator.vector" in text or "WARN" in text


def test_verbose_shows_spark_lines(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "n.json").write_text('{"n": 1}\n')
    flag = strata(home, "--verbose", "ingest", "--spark", str(tmp_path / "n.json"), "raw/n")
    assert flag.returncode == 0, flag.stderr
    assert "Using Spark's default log4j profile" in flag.stderr


@pytest.mark.parametrize(("value", "verbose"), [("1", True), ("yes", True), ("0", False)])
def test_strata_verbose_is_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str, verbose: bool
) -> None:
    monkeypatch.setenv("STRATA_VERBOSE", value)
    assert Settings.load().verbose is verbose


def test_a_bad_strata_verbose_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_VERBOSE", "loud")
    with pytest.raises(ConfigError, match="STRATA_VERBOSE"):
        Settings.load()


def test_a_failed_build_says_one_error_and_where_the_log_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    (pipelines / "broken.py").write_text(
        "from pyspark.sql import functions as F\n"
        "from strata import Input, Output, transform_df\n\n\n"
        '@transform_df(Output("clean/n"), n=Input("raw/n"))\n'
        "def clean(n):\n"
        '    return n.select(F.col("missing"))\n'
    )
    lake = connect(Settings(home=home))
    with lake.transaction("raw/n", type="APPEND") as txn:
        txn.write(pa.table({"n": [1]}))
    lake.engine.dispose()
    done = strata(home, "build", "--pipeline", str(pipelines), "clean/n")
    assert done.returncode == 1
    assert noise(done) == []
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: build failed: broken.clean"]
    log = home.resolve() / "logs" / "spark.log"
    assert f"Spark's log: {log}" in done.stderr
    # pyspark's JSON query-context line is in the log, not on the terminal.
    assert '"DataFrameQueryContextLogger"' in log.read_text()
    assert "DataFrameQueryContextLogger" not in done.stderr


def test_a_jvm_that_does_not_start_is_one_error_naming_the_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "n.json").write_text('{"n": 1}\n')
    done = strata(
        home, "ingest", "--spark", str(tmp_path / "n.json"), "raw/n", JAVA_HOME="/no/such/java"
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: Spark did not start: ")
    assert "/no/such/java/bin/java" in done.stderr
    assert f"the whole log is {home.resolve() / 'logs' / 'spark.log'}" in done.stderr


def test_a_small_ingest_starts_no_jvm(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "clicks.csv").write_text("user,clicks\nada,3\nbob,1\n")
    (tmp_path / "more.json").write_text('{"user": "cy", "clicks": 2}\n')
    # No Java to be found: a small file still lands, read without Spark.
    for source in ("clicks.csv", "more.json"):
        done = strata(
            home, "ingest", str(tmp_path / source), "raw/clicks", JAVA_HOME="/no/such/java"
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
    assert not (home / "logs" / "spark.log").exists()
    read = strata(home, "read", "raw/clicks", "--json")
    assert sorted(read.stdout.splitlines()) == [
        '{"user": "ada", "clicks": 3}',
        '{"user": "bob", "clicks": 1}',
        '{"user": "cy", "clicks": 2}',
    ]


# py4j's own send_command, interrupted while a JVM call is under way; the rest of the
# script is what a command that started Spark quietly has set up.
_INTERRUPTED_CALL = """
import logging, sys
from pathlib import Path
from py4j.java_gateway import GatewayClient, GatewayParameters
from strata.lake.spark_logs import route_python_loggers

route_python_loggers(Path(sys.argv[1]))

class Waiting:
    socket = None
    def send_command(self, command):
        raise KeyboardInterrupt

client = GatewayClient(gateway_parameters=GatewayParameters(port=1))
client._get_connection = Waiting
try:
    client.send_command("c\\nt\\ngetX\\ne\\n")
except KeyboardInterrupt:
    print("stopped")
logging.getLogger("strata.lineage").warning("a warning of Strata's own")
"""


def test_an_interrupted_jvm_call_logs_to_the_spark_log_not_the_terminal(tmp_path: Path) -> None:
    """py4j logs an interrupted call, with its traceback, on the root logger: a worker
    stopped by SIGTERM printed it. It goes to the Spark log; Strata's own warnings still
    reach the terminal."""
    log = tmp_path / "spark.log"
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_CALL, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
    assert done.stderr.strip() == "a warning of Strata's own"
    text = log.read_text()
    assert "KeyboardInterrupt while sending command." in text and "Traceback" in text
