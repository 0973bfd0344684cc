"""Spark's JVM started ahead of need.

A command that will run Spark starts its JVM first and does its own work (imports,
loading pipelines, reading the store) while the JVM starts, which takes seconds;
``get_spark`` then connects to it. The JVM is started as pyspark starts one
(``spark-submit … pyspark-shell``, told a file to write its gateway's port and secret
in), and pyspark connects to it as to a JVM spark-submit started
(``PYSPARK_GATEWAY_PORT``). A JVM nothing connected to is stopped when the process
exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

_POLL_S = 0.02
_FOLDER_PREFIX = "gateway-"
_STALE_S = 3600.0


@dataclass
class Launch:
    """A JVM started with ``options`` (its ``--conf`` pairs), not yet connected to."""

    options: dict[str, str]
    proc: subprocess.Popen[bytes]
    folder: Path  # the JVM writes its gateway's port and secret here

    @property
    def info(self) -> Path:
        return self.folder / "gateway"

    def connect(self) -> Any | None:
        """Wait until the JVM's gateway listens, and connect pyspark to it; None if the
        JVM exited first (why is in its log)."""
        from pyspark.java_gateway import launch_gateway
        from pyspark.serializers import UTF8Deserializer, read_int

        while self.proc.poll() is None and not self.info.exists():
            time.sleep(_POLL_S)
        if not self.info.exists():  # the JVM writes the file whole, then renames it here
            self.stop()
            return None
        with self.info.open("rb") as info:
            port = read_int(info)  # type: ignore[no-untyped-call]
            secret = UTF8Deserializer().loads(info)  # type: ignore[no-untyped-call]
        shutil.rmtree(self.folder, ignore_errors=True)
        with _environ(PYSPARK_GATEWAY_PORT=str(port), PYSPARK_GATEWAY_SECRET=secret):
            gateway = launch_gateway()  # type: ignore[no-untyped-call]
        gateway.proc = self.proc  # its stdin's end is what tells the JVM to exit
        return gateway

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # it exited already
            os.killpg(self.proc.pid, signal.SIGTERM)
        shutil.rmtree(self.folder, ignore_errors=True)


_pending: Launch | None = None


def start(options: Mapping[str, str], log: Path) -> bool:
    """Start a JVM with ``options``, its output into ``log`` and its gateway's port into a
    folder beside it (not the system's temporary folder, which a command killed at the
    wrong moment would litter). False where none can be started ahead (not a POSIX
    system, a gateway given by ``PYSPARK_GATEWAY_PORT``, no ``spark-submit`` found, one
    started already); pyspark then starts it when asked."""
    global _pending
    submit = _startable()
    if submit is None:
        return False
    _remove_stale(log.parent)
    folder = Path(tempfile.mkdtemp(prefix=_FOLDER_PREFIX, dir=log.parent))
    env = {
        **os.environ,
        "SPARK_CONNECT_MODE": "0",
        "_PYSPARK_DRIVER_CONN_INFO_PATH": str(folder / "gateway"),
    }
    with log.open("ab") as sink:  # the JVM keeps its own copy of the descriptor
        proc = subprocess.Popen(
            _command(submit, options),
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=sink,
            env=env,
            # Ctrl-C goes to the command, which cancels Spark's jobs; the JVM in a group
            # of its own is also one signal to stop, however far its start has come.
            start_new_session=True,
        )
    _pending = Launch(dict(options), proc, folder)
    atexit.register(_stop_unused)
    return True


def possible() -> bool:
    """Whether ``start`` would start a JVM now."""
    return _startable() is not None


def _startable() -> Path | None:
    """The ``spark-submit`` to start a JVM ahead with, where one can be started now."""
    if _pending is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    return _spark_submit()


def take(options: Mapping[str, str]) -> Launch | None:
    """The JVM started ahead with exactly ``options``, now the caller's. One started with
    other options is stopped: options such as the driver's memory are fixed at start."""
    global _pending
    launch, _pending = _pending, None
    if launch is not None and launch.options != dict(options):
        launch.stop()
        return None
    return launch


def _remove_stale(logs: Path) -> None:
    """Remove connection folders a killed command left (SIGKILL, or SIGTERM before its
    build began): an hour after it was made, no JVM's start still needs one."""
    too_old = time.time() - _STALE_S
    for folder in logs.glob(f"{_FOLDER_PREFIX}*"):
        with contextlib.suppress(OSError):  # another start removed it meanwhile
            if folder.stat().st_mtime < too_old:
                shutil.rmtree(folder)


def _stop_unused() -> None:
    if _pending is not None:
        _pending.stop()


def _command(submit: Path, options: Mapping[str, str]) -> list[str]:
    """What pyspark's own ``launch_gateway`` runs for these options."""
    command = [str(submit)]
    for key, value in options.items():
        command += ["--conf", f"{key}={value}"]
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if os.environ.get("SPARK_TESTING"):
        submit_args = f"--conf spark.ui.enabled=false {submit_args}"
    return command + shlex.split(submit_args)


def _spark_submit() -> Path | None:
    """``bin/spark-submit`` of Spark's installation, where there is one."""
    if os.name != "posix":
        return None
    home = spark_home()
    submit = home / "bin" / "spark-submit" if home is not None else None
    return submit if submit is not None and submit.is_file() else None


def spark_home() -> Path | None:
    """``SPARK_HOME``, else the installed pyspark's folder, found without importing it
    (its import alone takes a quarter of a second)."""
    home = os.environ.get("SPARK_HOME")
    if home is not None:
        return Path(home)
    spec = find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """``values`` in the environment for the block only, so no later child inherits them."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
