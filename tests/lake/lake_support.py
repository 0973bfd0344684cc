"""Helpers the lake's kill tests share: a lake filled with SNAPSHOTs, and a `strata`
command run in a process of its own on that lake, to be killed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from strata.lake.service import Lake


def fill_snapshots(lake: Lake, datasets: Sequence[str], versions: int) -> None:
    """``versions`` SNAPSHOTs of 50 rows each of every one of ``datasets``."""
    table = pa.table({"id": pa.array(range(50), pa.int64())})
    for name in datasets:
        for _ in range(versions):
            with lake.transaction(name, "SNAPSHOT") as txn:
                txn.write(table)


def strata_process(
    lake: Lake, tmp_path: Path, config: str, *args: str, **env: str
) -> subprocess.Popen[bytes]:
    """``strata ARGS`` on ``lake``'s store and folder, with ``config`` as its strata.toml."""
    path = tmp_path / "strata.toml"
    path.write_text(config)
    environ = dict(
        os.environ,
        STRATA_CONFIG=str(path),
        STRATA_DATABASE_URL=lake.settings.database_url,
        STRATA_LAKE_URI=lake.settings.lake_uri,
        **env,
    )
    return subprocess.Popen(
        [sys.executable, "-m", "strata.cli", *args],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
