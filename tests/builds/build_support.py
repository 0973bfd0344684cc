"""Build test support: a pipeline folder to edit, the CLI driven as a user drives it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from strata.cli.main import app
from strata.lake.service import Lake
from strata.settings import Settings

SHOP = Path(__file__).with_name("shop_pipeline.py")
runner = CliRunner()
_CLI_WITH_STACKS = (
    "import faulthandler, signal, sys; "
    "faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "sys.argv[0] = 'strata'; "
    "from strata.cli.__main__ import run; run()"
)


@dataclass
class Project:
    """A user's project: settings, a pipelines folder and the lake."""

    settings: Settings
    folder: Path
    lake: Lake

    @property
    def pipeline(self) -> Path:
        return self.folder / "shop.py"

    def edit(self, old: str, new: str) -> None:
        text = self.pipeline.read_text()
        assert old in text, old
        self.pipeline.write_text(text.replace(old, new, 1))

    def cli(self, *args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, [*self._globals(), *args], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    def json(self, *args: str, code: int = 0) -> Any:
        status, out, err = self.cli(*args, "--json")
        assert status == code, f"exit {status}\n{out}\n{err}"
        return json.loads(out)

    def _globals(self) -> list[str]:
        s = self.settings
        return ["--database-url", s.database_url, "--lake-uri", s.lake_uri]

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            STRATA_DATABASE_URL=self.settings.database_url,
            STRATA_LAKE_URI=self.settings.lake_uri,
            STRATA_PIPELINES=str(self.folder),
            STRATA_SPARK_MASTER="local[1]",
            **extra,
        )
        return env

    def spawn(self, *args: str, **env: str) -> subprocess.Popen[str]:
        """``strata ARGS`` in a process of its own (a worker, say). SIGUSR1 makes it
        print every thread's stack to its stderr: where one that will not stop is."""
        return subprocess.Popen(
            [sys.executable, "-c", _CLI_WITH_STACKS, *args],
            env=self.env(**env),
            cwd=self.folder.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def append(self, dataset: str, table: pa.Table) -> int:
        with self.lake.transaction(dataset, type="APPEND") as txn:
            txn.write(table)
        return txn.versions[dataset].commit_id

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.lake.engine.connect() as conn:
            return conn.execute(sa.text(sql), params).scalar()

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.lake.engine.connect() as conn:
            return list(conn.execute(sa.text(sql), params).all())


@contextmanager
def project_of(settings: Settings, tmp_path: Path, pipeline: Path) -> Iterator[Project]:
    """A project whose pipelines folder holds ``pipeline`` as ``shop.py`` (the file
    ``Project.edit`` edits)."""
    folder = tmp_path / "pipelines"
    folder.mkdir()
    shutil.copy(pipeline, folder / "shop.py")
    lake = Lake(settings)
    yield Project(settings, folder, lake)
    lake.engine.dispose()


def with_config(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> Project:
    """``project`` with ``text`` as the strata.toml its commands read."""
    config = tmp_path / "strata.toml"
    config.write_text(text)
    monkeypatch.setenv("STRATA_CONFIG", str(config))
    return project


def snapshot(p: Project, dataset: str, table: pa.Table) -> int:
    """A SNAPSHOT of ``table`` to ``dataset``; its commit id."""
    with p.lake.transaction(dataset, type="SNAPSHOT") as txn:
        txn.write(table)
    return txn.versions[dataset].commit_id


def clicks(*rows: tuple[str, int]) -> pa.Table:
    return pa.table({"user": [u for u, _ in rows], "ms": [m for _, m in rows]})


def users(*rows: tuple[str, str]) -> pa.Table:
    return pa.table({"user": [u for u, _ in rows], "country": [c for _, c in rows]})
