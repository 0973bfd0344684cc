"""Spark's class cache: a class-data archive of the driver's JVM (the JDK's AppCDS).

Started from one, the JVM maps the classes a Spark command loads from one file rather
than finding, reading and checking each in Spark's jars: about 2.5 s of every start
on two cores (``docs/benchmarks.md``, §B5, round nine). One cache serves every Strata
home of one Java and one Spark installation, so it lives in the user's cache folder
under a name drawn from both; ``strata spark-cache`` makes it.

The JVM checks a cache against its own class path and starts without one that does
not match (a line in the Spark log says so). A folder with files on that class path
rules a cache out, so none is offered then: Spark puts ``SPARK_CONF_DIR`` there, which
holds a spark-defaults.conf wherever one is given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strata.errors import LakeError
from strata.lake.spark_ahead import spark_home
from strata.settings import Settings

_PREFIX, _SUFFIX = "classes-", ".jsa"
_EXIT_S = 600.0  # the JVM writes its archive as it exits: ~150 MB, seconds on a slow disk
_STALE_S = 3600.0


@dataclass(frozen=True)
class Made:
    """A cache in place: where, its size, and the seconds its making took (0 if it was
    there already)."""

    path: Path
    size: int
    seconds: float


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/strata/spark``, else ``~/.cache/strata/spark``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "strata" / "spark"


def cache_path() -> Path | None:
    """Where the cache of this Java and Spark installation is kept (made or not); None
    where either is not found."""
    installed = _installation()
    if installed is None:
        return None
    key = hashlib.sha256("\0".join(installed.values()).encode()).hexdigest()[:16]
    return cache_folder() / f"{_PREFIX}{key}{_SUFFIX}"


def _installation() -> dict[str, str] | None:
    """The ``java`` and Spark's jars folder, each with its size and time: reinstalling
    either replaces its files, and so names another cache."""
    java, spark = java_binary(), spark_home()
    jars = spark / "jars" if spark is not None else None
    if java is None or jars is None or not jars.is_dir():
        return None
    jars = jars.resolve()
    return {
        "java": str(java),
        "java_stamp": _stamp(java),
        "jars": str(jars),
        "jars_stamp": _stamp(jars),
    }


def java_option(settings: Settings) -> str | None:
    """The JVM option that starts Spark from the cache, where one is made, the settings
    allow it and the class path does not rule it out."""
    if not settings.spark_class_cache:
        return None
    made = existing()
    if made is None or blocking_folders():
        return None
    return f"-XX:SharedArchiveFile={made.path}"


def blocking_folders() -> list[Path]:
    """Folders with files on Spark's class path: each rules a cache out."""
    spark = spark_home()
    conf = os.environ.get("SPARK_CONF_DIR") or (str(spark / "conf") if spark else "")
    given = [conf, os.environ.get("HADOOP_CONF_DIR", ""), os.environ.get("YARN_CONF_DIR", "")]
    for name in ("SPARK_DIST_CLASSPATH", "SPARK_CLASSPATH"):
        given += os.environ.get(name, "").split(os.pathsep)
    return [Path(folder) for folder in given if folder and _has_files(Path(folder))]


def existing() -> Made | None:
    """The cache of this installation, if it is made and whole: as long as its note says.
    A JVM that maps a shorter archive (cut by a full disk, say) dies of SIGBUS."""
    path = cache_path()
    if path is None:
        return None
    try:
        size = path.stat().st_size
        noted = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(noted, dict) or noted.get("bytes") != size:
        return None
    return Made(path, size, 0.0)


def make(settings: Settings, exercise: Callable[[Settings], None]) -> Made:
    """Make the cache, replacing any: ``exercise`` runs in a throwaway home with a JVM
    told to archive the classes it loaded as it exits; the JVM is stopped, and its archive
    put in place whole once it has exited."""
    from strata.lake.spark import running

    path = _where_to_make()
    if running():
        raise LakeError("Spark already runs in this process; make its class cache in a new one")
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path.parent)
    _remove_orphans(path.parent)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="strata-spark-cache-") as home:
            rehearsal = _rehearsal_settings(settings, Path(home), draft)
            try:
                exercise(rehearsal)
            except BaseException:
                _kill_jvm()  # before it writes an archive of a rehearsal that failed
                raise
            _stop_jvm(rehearsal, draft)
        # The note first: a cache without one is an orphan to the next making.
        note = {**(_installation() or {}), "bytes": draft.stat().st_size}
        path.with_suffix(".json").write_text(json.dumps(note), encoding="utf-8")
        os.replace(draft, path)  # whole or not at all: a JVM mapping a torn file crashes
    finally:
        draft.unlink(missing_ok=True)
    return Made(path, path.stat().st_size, time.perf_counter() - started)


def _where_to_make() -> Path:
    path = cache_path()
    if path is None:
        raise LakeError(
            "no Java or no Spark installation found: install a JDK 17 (JAVA_HOME or `java` "
            "on the PATH) and pyspark, or set SPARK_HOME"
        )
    for folder in blocking_folders():
        raise LakeError(
            f"Spark's class path holds {folder}, a folder with files, and a JVM keeps no "
            "class cache beside one; empty it or unset the variable that names it "
            "(SPARK_CONF_DIR, HADOOP_CONF_DIR, YARN_CONF_DIR, SPARK_DIST_CLASSPATH)"
        )
    return path


def _rehearsal_settings(settings: Settings, home: Path, draft: Path) -> Settings:
    """``settings`` in ``home``'s own store and lake, on main and a local master, with the
    JVM told to archive into ``draft`` (without its warnings: one per class it leaves
    out, hundreds of lines)."""
    archive = f"-XX:ArchiveClassesAtExit={draft} -Xlog:cds=off -Xlog:cds+dynamic=off"
    return dataclasses.replace(
        settings,
        home=home,
        database_url="",
        lake_uri="",
        branch="main",
        spark_master="local[2]",
        spark_java_options=f"{settings.spark_java_options} {archive}".strip(),
        spark_class_cache=False,
        pipelines=(),
    )


def _stop_jvm(settings: Settings, draft: Path) -> None:
    """Stop the session and its JVM and wait until the JVM has exited, its archive written."""
    from pyspark import SparkContext

    from strata.lake.spark_logs import spark_log_path

    gateway = SparkContext._gateway
    context = SparkContext._active_spark_context
    proc = getattr(gateway, "proc", None)
    if context is None or gateway is None or proc is None:
        raise LakeError("the class cache's rehearsal started no Spark of its own")
    context.stop()
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    proc.stdin.close()  # what tells pyspark's JVM to exit
    try:
        code = proc.wait(timeout=_EXIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = None
    if code != 0 or not draft.is_file() or draft.stat().st_size == 0:
        log = spark_log_path(settings)
        said = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
        raise LakeError(
            f"the JVM exited with {code} and wrote no class cache: {' | '.join(said) or '-'}; "
            "run `strata --verbose spark-cache` to see its whole output"
        )


def _kill_jvm() -> None:
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None:
        proc.kill()


def java_binary() -> Path | None:
    """The ``java`` Spark's launcher runs: ``JAVA_HOME``'s, else the first on the PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _has_files(folder: Path) -> bool:
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:  # unreadable: the JVM would not read it either
        return False


def _remove_orphans(folder: Path) -> None:
    """Caches of installations removed or replaced since (a venv deleted, pyspark
    upgraded): no JVM starts from them again, and each is about 150 MB."""
    for cache in folder.glob(f"{_PREFIX}*{_SUFFIX}"):
        note = cache.with_suffix(".json")
        try:
            made_for = json.loads(note.read_text(encoding="utf-8"))
            current = _stamp(Path(made_for["java"])), _stamp(Path(made_for["jars"]))
            if current == (made_for["java_stamp"], made_for["jars_stamp"]):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no note, or its paths gone: an orphan either way
        cache.unlink(missing_ok=True)
        note.unlink(missing_ok=True)


def _remove_stale(folder: Path) -> None:
    """Drafts of makings killed before they ended; an hour on, none is still writing."""
    too_old = time.time() - _STALE_S
    for draft in folder.glob(f".{_PREFIX}*.tmp"):
        try:
            if draft.stat().st_mtime < too_old:
                draft.unlink()
        except OSError:  # another making removed it meanwhile
            pass
