"""The demo's material: the example pipeline and data generator, the demo's own state,
and the start-over of ``--fresh``."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from urllib.parse import urlparse

from strata.errors import ConfigError, StrataError
from strata.settings import Settings

FIRST_HOUR = datetime(2026, 11, 23, 21, tzinfo=UTC)  # the UK day ends three hours in
HOURLY = ("metrics/experiment_hourly",)
DAILY = ("metrics/experiment_daily", "metrics/experiment_cumulative")


def example_folder() -> Path:
    """``examples/experiments``: in the installed package, or beside ``src/`` in a
    checkout installed for development."""
    here = Path(__file__).resolve()
    for candidate in (
        here.parents[2] / "_examples" / "experiments",
        here.parents[4] / "examples" / "experiments",
    ):
        if (candidate / "pipelines").is_dir():
            return candidate
    raise StrataError(
        "the example pipeline (examples/experiments) is not installed; "
        "reinstall Strata with `bash scripts/demo.sh` from a checkout"
    )


def load_generator(folder: Path) -> ModuleType:
    """The example's clickstream generator, imported from its file."""
    spec = importlib.util.spec_from_file_location(
        "strata_demo_clickstream", folder / "clickstream.py"
    )
    if spec is None or spec.loader is None:
        raise StrataError(f"cannot import {folder / 'clickstream.py'}; is the file there?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@dataclass
class DemoState:
    """Where the demo's data stands, so a second run goes on from the first."""

    path: Path
    seed: int = 7
    first_hour: str = FIRST_HOUR.isoformat()
    next_hour: str = FIRST_HOUR.isoformat()
    runs: int = 0

    @classmethod
    def load(cls, folder: Path, seed: int) -> DemoState:
        path = folder / "state.json"
        if not path.exists():
            return cls(path, seed)
        saved = json.loads(path.read_text())
        return cls(path, **{k: v for k, v in saved.items() if k != "path"})

    @property
    def is_new(self) -> bool:
        return not self.path.exists()

    def hour(self, which: str = "next_hour") -> datetime:
        return datetime.fromisoformat(getattr(self, which))

    def advance(self) -> None:
        self.next_hour = (self.hour() + timedelta(hours=1)).isoformat()
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fields = {k: v for k, v in asdict(self).items() if k != "path"}
        self.path.write_text(json.dumps(fields, indent=2) + "\n")


def copy_pipelines(source: Path, folder: Path) -> Path:
    """A fresh copy of the example pipelines the demo may edit; returns its folder."""
    target = folder / "pipelines"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source / "pipelines", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def start_over(settings: Settings) -> list[Path]:
    """Remove the embedded store, the lake and the demo folder under ``settings.home``.

    Refuses a store or lake elsewhere (a server, another folder): ``--fresh`` deletes
    only what the embedded default keeps in its own folder.
    """
    home = settings.home.resolve()
    database = Path(urlparse(settings.database_url).path) if settings.is_embedded else None
    lake = Path(urlparse(settings.lake_uri).path) if settings.lake_uri.startswith("file:") else None
    outside = [
        what
        for what, path in (("store", database), ("lake", lake))
        if path is None or not path.resolve().is_relative_to(home)
    ]
    if outside:
        raise ConfigError(
            f"--fresh deletes only a store and lake inside {home}, but the {' and '.join(outside)} "
            f"{'is' if len(outside) == 1 else 'are'} elsewhere ({settings.database_url}, "
            f"{settings.lake_uri}); empty them yourself or use another --home"
        )
    assert database is not None and lake is not None
    removed = []
    for path in (
        database,
        database.with_name(database.name + "-wal"),
        database.with_name(database.name + "-shm"),
    ):
        if path.exists():
            path.unlink()
            removed.append(path)
    for path in (lake, home / "demo"):
        if path.exists():
            shutil.rmtree(path)
            removed.append(path)
    return removed
