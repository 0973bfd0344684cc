"""One ``strata demo --hours 2`` per backend for the test run, handed out as copies.

The demo's minute of builds is the suite's most expensive set-up, and both its own test
and the pages' tests start from it. Each caller gets its own copy of the store, the lake
and the home, so neither sees what the other changes, and the master is never written
again: the archive root the store names (inside the master's home) stays whole.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from strata.cli.main import app
from strata.settings import Settings

HOURS = 2


class Databases(Protocol):
    def migrated(self) -> str: ...
    def copy(self, url: str) -> str: ...


@dataclass(frozen=True)
class DemoCopy:
    """A copy of the demo's state: where it lives, and what the demo printed."""

    home: Path
    database_url: str
    lake_uri: str
    out: str


@dataclass
class _Master:
    folder: Path
    database_url: str
    out: str


class DemoStores:
    """The run's demo masters by backend, made when first asked for."""

    def __init__(self, root: Path, sqlite_template: Path, pg: Databases | None) -> None:
        self.root, self.sqlite_template, self.pg = root, sqlite_template, pg
        self.masters: dict[str, _Master] = {}

    def copy(self, backend: str, folder: Path) -> DemoCopy:
        """The demo's state copied into ``folder`` (``.strata``, ``lake``, and the SQLite
        store ``meta.db``; a new PostgreSQL database)."""
        if backend != "sqlite" and self.pg is None:
            pytest.skip("no PostgreSQL server for the demo's store")
        master = self.masters.get(backend) or self._run(backend)
        self.masters[backend] = master
        shutil.copytree(master.folder / ".strata", folder / ".strata")
        shutil.copytree(master.folder / "lake", folder / "lake")
        if backend == "sqlite":
            url = f"sqlite:///{folder / 'meta.db'}"
            _sqlite_copy(master.database_url, folder / "meta.db")
        else:
            assert self.pg is not None
            url = self.pg.copy(master.database_url)
        return DemoCopy(folder / ".strata", url, (folder / "lake").as_uri(), master.out)

    def _run(self, backend: str) -> _Master:
        folder = self.root / f"demo-{backend}"
        folder.mkdir()
        if backend == "sqlite":
            shutil.copyfile(self.sqlite_template, folder / "meta.db")
            url = f"sqlite:///{folder / 'meta.db'}"
        else:
            assert self.pg is not None
            url = self.pg.migrated()
        settings = demo_settings(folder / ".strata", url, (folder / "lake").as_uri())
        where = ["--database-url", url, "--lake-uri", settings.lake_uri]
        args = [*where, "--home", str(settings.home), "demo", "--hours", str(HOURS)]
        result = CliRunner().invoke(app, args, catch_exceptions=False, terminal_width=160)
        assert result.exit_code == 0, result.stdout + result.stderr
        return _Master(folder, url, result.stdout)


def demo_settings(home: Path, database_url: str, lake_uri: str) -> Settings:
    """The settings the demo ran with (as the ``settings`` fixture's), or a copy's."""
    return Settings(
        home=home,
        database_url=database_url,
        lake_uri=lake_uri,
        gc_grace_seconds=0,
        lineage_fold="thread",
    )


def _sqlite_copy(url: str, to: Path) -> None:
    """A consistent copy of a SQLite store, whatever its WAL holds."""
    source = sqlite3.connect(sa.engine.make_url(url).database or "")
    target = sqlite3.connect(to)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
