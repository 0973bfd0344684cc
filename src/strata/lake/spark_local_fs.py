"""Spark's local file system without a forked ``chmod``.

Without Hadoop's native library, which pyspark does not ship, Hadoop's local file system
forks a ``chmod`` for every file and folder Spark creates: about 5 ms each, two for every
partition file, about 10 s of a write's tasks for 1,095 partitions (``docs/benchmarks.md``,
§B8, round nine). ``java/NioLocalFileSystem.java`` sets the same modes through java.nio.

``strata spark-cache`` compiles it, where a JDK's ``javac`` is found, into a jar in the
class cache's folder. Local masters then start with that jar at the end of the driver's
class path (``SPARK_DIST_CLASSPATH``: the end keeps the class cache valid) and with it as
the ``file:`` file system. Executors of a ``local-cluster`` or a cluster run JVMs of their
own, without the jar, and keep Hadoop's.
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

CLASS = "strata.hadoop.NioLocalFileSystem"
_SOURCE = Path(__file__).with_name("java") / "NioLocalFileSystem.java"
_PREFIX, _SUFFIX = "local-fs-", ".jar"
_COMPILE_S = 120.0


def jar_path() -> Path | None:
    """Where the jar for this Hadoop is kept (made or not); None without pyspark's jars."""
    api = _hadoop_api()
    if api is None:
        return None
    stat = api.stat()
    made_from = f"{_SOURCE.read_bytes().hex()}\0{api}\0{stat.st_size}:{stat.st_mtime_ns}"
    key = hashlib.sha256(made_from.encode()).hexdigest()[:16]
    return cache_folder() / f"{_PREFIX}{key}{_SUFFIX}"


def existing() -> Path | None:
    """The jar, if it is made (it is put in place whole)."""
    path = jar_path()
    return path if path is not None and path.is_file() else None


def used(settings: Settings) -> Path | None:
    """The jar a session on ``settings``' master starts with: made, the class cache
    setting on, and a master whose executors live in the driver's JVM."""
    master = settings.spark_master
    if not settings.spark_class_cache or not (master == "local" or master.startswith("local[")):
        return None
    return existing()


def spark_options(settings: Settings) -> dict[str, str]:
    """The option that makes it the ``file:`` file system, where it is used."""
    return {"spark.hadoop.fs.file.impl": CLASS} if used(settings) is not None else {}


def put_on_class_path(settings: Settings) -> None:
    """Add the jar at the end of the class path of the JVM this process starts (once)."""
    jar = used(settings)
    if jar is None:
        return
    given = [p for p in os.environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep) if p]
    if str(jar) not in given:
        os.environ["SPARK_DIST_CLASSPATH"] = os.pathsep.join([*given, str(jar)])


def javac() -> Path | None:
    """The ``javac`` beside the ``java`` Spark runs, else the first on the PATH."""
    java = java_binary()
    beside = java.with_name("javac") if java is not None else None
    if beside is not None and beside.is_file():
        return beside
    found = shutil.which("javac")
    return Path(found) if found else None


def make() -> Path:
    """Compile the class into its jar, replacing any. Jars of other installations stay
    (about 2 KB each): another virtual environment may still start from its own."""
    path, api, compiler = jar_path(), _hadoop_api(), javac()
    if path is None or api is None:
        raise LakeError("pyspark's jars are not found; install pyspark or set SPARK_HOME")
    if compiler is None:
        raise LakeError(
            "no javac found (a JDK's, beside `java` or on the PATH); install a JDK 17 to "
            "let Spark write local files without forking chmod"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="strata-local-fs-") as classes:
            _compile(compiler, api, Path(classes))
            with zipfile.ZipFile(draft, "w") as jar:
                for found in sorted(Path(classes).rglob("*.class")):
                    jar.write(found, found.relative_to(classes).as_posix())
        os.replace(draft, path)  # whole or not at all: a JVM reads it as it starts
    finally:
        draft.unlink(missing_ok=True)
    return path


def _compile(compiler: Path, api: Path, into: Path) -> None:
    command = [str(compiler), "--release", "17", "-nowarn", "-cp", str(api)]
    command += ["-d", str(into), str(_SOURCE)]
    try:
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=_COMPILE_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LakeError(f"{compiler} could not compile {_SOURCE.name}: {exc}") from exc
    if done.returncode != 0:
        said = " | ".join(done.stderr.strip().splitlines()[:3]) or "-"
        raise LakeError(f"{compiler} could not compile {_SOURCE.name}: {said}")


def _hadoop_api() -> Path | None:
    """Hadoop's client API jar among Spark's jars: what the class extends."""
    spark = spark_home()
    if spark is None:
        return None
    found = sorted((spark / "jars").glob("hadoop-client-api-*.jar"))
    return found[-1].resolve() if found else None
