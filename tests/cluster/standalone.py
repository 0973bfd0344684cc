"""A Spark standalone cluster on 127.0.0.1: one master and one worker, started with
pyspark's own ``spark-class`` and stopped with their process groups."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def spark_env() -> dict[str, str]:
    """The environment of every process of the cluster and of its drivers."""
    from pyspark.find_spark_home import _find_spark_home

    env = dict(os.environ)
    # Everything on the loopback interface, whatever this machine's name resolves to.
    env.update(SPARK_HOME=_find_spark_home(), SPARK_LOCAL_IP=HOST)
    return env


@dataclass
class Standalone:
    """A running master and worker; ``url`` is what STRATA_SPARK_MASTER names."""

    folder: Path
    port: int = field(default_factory=free_port)
    master_ui: int = field(default_factory=free_port)
    worker_ui: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def work_dir(self) -> Path:
        return self.folder / "work"

    def master(self) -> dict[str, Any]:
        """The master's state: workers, active and completed applications."""
        return _json(f"http://{HOST}:{self.master_ui}/json/")

    def worker(self) -> dict[str, Any]:
        """The worker's state: its running and finished executors."""
        return _json(f"http://{HOST}:{self.worker_ui}/json/")

    def start(self) -> None:
        self.work_dir.mkdir(parents=True)
        deploy = "org.apache.spark.deploy"
        self._spawn("master", f"{deploy}.master.Master", "--host", HOST, "--port",
                    str(self.port), "--webui-port", str(self.master_ui))  # fmt: skip
        self._spawn("worker", f"{deploy}.worker.Worker", self.url, "--host", HOST,
                    "--cores", "1", "--memory", "1g", "--webui-port", str(self.worker_ui),
                    "--work-dir", str(self.work_dir))  # fmt: skip

    def wait_for_worker(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.processes:
                if proc.poll() is not None:
                    raise RuntimeError(f"a cluster process exited early\n{self.logs()}")
            try:
                if self.master().get("aliveworkers") == 1:
                    return
            except (OSError, ValueError):
                # Not up yet: while the master starts, its UI may answer /json/ with the
                # HTML page of "/" until the JSON handler is attached.
                pass
            time.sleep(0.5)
        raise TimeoutError(f"no worker registered in {timeout:.0f} s\n{self.logs()}")

    def stop(self) -> None:
        """Stop both process groups: a polite TERM, then KILL."""
        for proc in self.processes:
            _signal_group(proc, signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=15)

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.folder.glob("*.log"))
        )

    def _spawn(self, name: str, main: str, *args: str) -> None:
        env = spark_env()
        spark_class = Path(env["SPARK_HOME"]) / "bin" / "spark-class"
        with (self.folder / f"{name}.log").open("wb") as log:
            self.processes.append(
                subprocess.Popen(
                    [str(spark_class), main, *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, stopped as one
                )
            )


@contextmanager
def standalone(folder: Path) -> Iterator[Standalone]:
    """A master and a worker registered with it; both stopped on the way out."""
    cluster = Standalone(folder)
    try:
        cluster.start()
        cluster.wait_for_worker()
        yield cluster
    finally:
        cluster.stop()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):  # the group has already gone
        os.killpg(proc.pid, sig)


def _json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return dict(json.load(answer))
