"""`strata serve` in a process of its own, as a user runs it: for tests that signal,
kill or measure the server."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from console import user_environ
from http_client import HTTP
from ol_events import run_event

EXE = Path(sys.executable).with_name("strata")


def event(run_id: str, event_type: str = "START", namespace: str = "served") -> dict[str, Any]:
    """A RunEvent of job ``load`` writing dataset ``out`` in ``namespace``."""
    return run_event(
        event_type, run_id, job="load", namespace=namespace, outputs=[(namespace, "out")]
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A running ``strata serve``; ``url`` is its API base (``…/api/v1``)."""

    def __init__(
        self, cwd: Path, env: dict[str, str], port: int | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/v1"
        self.log = cwd / f"serve-{self.port}.log"
        clean = user_environ()
        self._log = self.log.open("a")
        self.proc = subprocess.Popen(
            [str(EXE), "serve", "--port", str(self.port), *args],
            cwd=cwd,
            env={**clean, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + 90
        while True:
            try:
                if HTTP.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"server did not start:\n{self.log.read_text()[-4000:]}")
            time.sleep(0.2)

    def peak_rss_mib(self) -> float:
        """The most memory the server process has held (VmHWM), in MiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> float:
        """Send ``sig``; seconds until the process ended."""
        began = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
        self._log.close()
        return time.monotonic() - began

    def __enter__(self) -> Served:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._log.close()
