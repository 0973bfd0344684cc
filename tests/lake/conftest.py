"""Fixtures for lake tests: a Lake on each backend and a pool of writer processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from strata.lake.service import Lake
from strata.settings import Settings

WORKER = Path(__file__).with_name("lake_worker.py")


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    yield lk
    lk.engine.dispose()


class Workers:
    """Starts writer processes by forking one warmed-up helper process."""

    def __init__(self, tmp_path: Path) -> None:
        self.stderr_path = tmp_path / "workers.stderr"
        self._stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.pids: list[int] = []

    def spawn(self, **job: Any) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.strip().isdigit(), f"worker helper failed: {self.stderr_path.read_text()}"
        pid = int(line)
        self.pids.append(pid)
        return pid

    @staticmethod
    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self, pid: int) -> None:
        """SIGKILL a writer and wait until it is gone."""
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while self.alive(pid):
            assert time.monotonic() < deadline, f"writer {pid} survived SIGKILL"
            time.sleep(0.002)

    def close(self) -> None:
        for pid in self.pids:
            self.kill(pid)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    yield w
    w.close()
