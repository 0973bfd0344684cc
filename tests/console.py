"""The installed `strata` command run as a user runs it: a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STRATA = Path(sys.executable).with_name("strata")
# The run's own JVM options (tests/conftest.py), which every command of the run keeps.
RUN_SETTINGS = ("STRATA_SPARK_JAVA_OPTIONS",)


def user_environ(*dropped: str) -> dict[str, str]:
    """This process's environment without its Strata settings (nor names starting with
    ``dropped``), as a user's shell has it; the run's own JVM options stay."""
    prefixes = ("STRATA_", *dropped)
    return {k: v for k, v in os.environ.items() if k in RUN_SETTINGS or not k.startswith(prefixes)}


def run_strata(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``strata --home HOME ARGS`` from HOME's parent, on one local core, with this
    environment's Strata settings left out and ``env`` on top."""
    clean = user_environ("SPARK_LOCAL")
    clean.update(STRATA_SPARK_MASTER="local[1]", **env)
    return subprocess.run(
        [str(STRATA), "--home", str(home), *args],
        cwd=home.parent,
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
