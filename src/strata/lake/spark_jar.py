"""Strata's own JVM classes, compiled into one jar that local masters start with.

- ``java/NioLocalFileSystem.java``: Spark's local file system without a forked ``chmod``
  (:mod:`strata.lake.spark_local_fs`);
- ``java/HashedParquet.java``: Parquet files written with the row hash summed by the
  writer itself (:mod:`strata.lake.spark_hashed`).

``strata spark-cache`` compiles them, where a JDK's ``javac`` is found, into a jar in the
class cache's folder, named by the sources and the Spark installation they were compiled
against. Local masters then start with that jar at the end of the driver's class path
(``SPARK_DIST_CLASSPATH``: the end keeps the class cache valid). Executors of a
``local-cluster`` or a cluster run JVMs of their own, without the jar, and do without it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from strata.errors import LakeError
from strata.lake.spark_ahead import spark_home
from strata.lake.spark_classes import cache_folder, java_binary
from strata.settings import Settings

_SOURCES = Path(__file__).with_name("java")
_PREFIX, _SUFFIX = "strata-classes-", ".jar"
_COMPILE_S = 120.0


def jar_path() -> Path | None:
    """Where the jar for this Spark is kept (made or not); None without pyspark's jars."""
    jars = _spark_jars()
    if jars is None:
        return None
    made_from = [f"{p.name}\0{p.read_bytes().hex()}" for p in _sources()]
    for jar in _compiled_against(jars):
        stat = jar.stat()
        made_from.append(f"{jar}\0{stat.st_size}:{stat.st_mtime_ns}")
    key = hashlib.sha256("\0".join(made_from).encode()).hexdigest()[:16]
    return cache_folder() / f"{_PREFIX}{key}{_SUFFIX}"


def existing() -> Path | None:
    """The jar, if it is made (it is put in place whole)."""
    path = jar_path()
    return path if path is not None and path.is_file() else None


def used(settings: Settings) -> Path | None:
    """The jar a session on ``settings``' master starts with: made, the class cache
    setting on, and a master whose executors live in the driver's JVM."""
    if not settings.spark_class_cache or not executors_in_driver(settings.spark_master):
        return None
    return existing()


def executors_in_driver(master: str) -> bool:
    """Whether ``master``'s executors run in the driver's JVM (``local``, ``local[N]``),
    and so have the classes of the driver's class path."""
    return master == "local" or master.startswith("local[")


def put_on_class_path(settings: Settings) -> None:
    """Put the jar ``settings`` use at the end of the class path of the JVM this process
    starts (once), in place of any Strata jar the environment holds. A child process
    inherits its parent's: another version's classes, or a jar its settings turn off."""
    given = [
        p
        for p in os.environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep)
        if p and not _is_strata_jar(p)
    ]
    jar = used(settings)
    if jar is not None:
        given.append(str(jar))
    if given:
        os.environ["SPARK_DIST_CLASSPATH"] = os.pathsep.join(given)
    else:
        os.environ.pop("SPARK_DIST_CLASSPATH", None)


def _is_strata_jar(entry: str) -> bool:
    name = Path(entry).name
    return name.startswith(_PREFIX) and name.endswith(_SUFFIX)


def javac() -> Path | None:
    """The ``javac`` beside the ``java`` Spark runs, else the first on the PATH."""
    java = java_binary()
    beside = java.with_name("javac") if java is not None else None
    if beside is not None and beside.is_file():
        return beside
    found = shutil.which("javac")
    return Path(found) if found else None


def make() -> Path:
    """Compile the classes into their jar, replacing any. Jars of other installations stay
    (about 10 KB each): another virtual environment may still start from its own."""
    path, jars, compiler = jar_path(), _spark_jars(), javac()
    if path is None or jars is None:
        raise LakeError("pyspark's jars are not found; install pyspark or set SPARK_HOME")
    if compiler is None:
        raise LakeError(
            "no javac found (a JDK's, beside `java` or on the PATH); install a JDK 17 to "
            "let Spark write local files without forking chmod and hash rows as it writes"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="strata-classes-") as classes:
            _compile(compiler, jars, Path(classes))
            with zipfile.ZipFile(draft, "w") as jar:
                for found in sorted(Path(classes).rglob("*.class")):
                    jar.write(found, found.relative_to(classes).as_posix())
        os.replace(draft, path)  # whole or not at all: a JVM reads it as it starts
    finally:
        draft.unlink(missing_ok=True)
    return path


def _compile(compiler: Path, jars: Path, into: Path) -> None:
    sources = _sources()
    command = [str(compiler), "--release", "17", "-nowarn", "-cp", str(jars / "*")]
    command += ["-d", str(into), *map(str, sources)]
    names = ", ".join(p.name for p in sources)
    try:
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=_COMPILE_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LakeError(f"{compiler} could not compile {names}: {exc}") from exc
    if done.returncode != 0:
        said = " | ".join(done.stderr.strip().splitlines()[:3]) or "-"
        raise LakeError(f"{compiler} could not compile {names}: {said}")


def _sources() -> list[Path]:
    return sorted(_SOURCES.glob("*.java"))


def _spark_jars() -> Path | None:
    """Spark's folder of jars: what the classes are compiled against."""
    spark = spark_home()
    if spark is None:
        return None
    jars = spark / "jars"
    return jars if jars.is_dir() else None


def _compiled_against(jars: Path) -> list[Path]:
    """The jars whose classes ours extend: Hadoop's client API, Spark's SQL and core."""
    found = []
    for pattern in ("hadoop-client-api-*.jar", "spark-sql_*.jar", "spark-core_*.jar"):
        found += sorted(jars.glob(pattern))[-1:]
    return [p.resolve() for p in found]
