"""`strata spark-cache` makes Spark's class cache once per Java and Spark installation, and
every command that starts Spark starts its JVM from it where the class path allows.

The cache is made and used by the installed `strata` in processes of their own, with a
cache folder of the test's own (``XDG_CACHE_HOME``)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

from console import run_strata, user_environ
from strata.errors import ConfigError, LakeError
from strata.lake import spark_classes, spark_hashed, spark_jar, spark_local_fs
from strata.lake.service import connect
from strata.settings import Settings

PIPELINE = """
from strata import Input, Output, transform_df


@transform_df(Output("clean/n"), n=Input("raw/n"))
def clean(n):
    return n.filter(n.n > 0)
"""


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    return folder


def fake_java(folder: Path) -> Path:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "java").write_text("#!/bin/sh\n")
    return folder


def test_the_cache_is_named_by_the_java_and_the_spark_installation(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = spark_classes.cache_path()
    assert here is not None and here.parent == cache_home / "strata" / "spark"
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path / "other-java")))
    other_java = spark_classes.cache_path()
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "other-spark"))
    (tmp_path / "other-spark" / "jars").mkdir(parents=True)
    other_both = spark_classes.cache_path()
    assert len({here, other_java, other_both}) == 3
    (tmp_path / "other-spark" / "jars" / "more.jar").write_bytes(b"PK")
    assert spark_classes.cache_path() != other_both  # a changed installation, another cache
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    assert spark_classes.cache_path() is None


def test_a_made_cache_is_offered_unless_the_setting_or_the_class_path_rules_it_out(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(home=tmp_path / "home")
    assert spark_classes.java_option(settings) is None  # none made
    path = spark_classes.cache_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"made")
    assert spark_classes.java_option(settings) is None  # no note: not known to be whole
    path.with_suffix(".json").write_text(json.dumps({"bytes": 4}))
    assert spark_classes.java_option(settings) == f"-XX:SharedArchiveFile={path}"
    path.write_bytes(b"cut")  # shorter than it was made: a JVM mapping it would crash
    assert spark_classes.java_option(settings) is None
    path.write_bytes(b"made")
    off = Settings(home=tmp_path / "home", spark_class_cache=False)
    assert spark_classes.java_option(off) is None
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert spark_classes.java_option(settings) is not None  # an empty folder is no bar
    (conf / "spark-defaults.conf").write_text("spark.driver.memory 1g\n")
    assert spark_classes.blocking_folders() == [conf]
    assert spark_classes.java_option(settings) is None


def test_a_class_path_with_a_folder_of_files_is_one_error_and_no_cache(
    cache_home: Path, tmp_path: Path
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.memory 1g\n")
    done = run_strata(tmp_path / "home", "spark-cache", SPARK_CONF_DIR=str(conf))
    assert done.returncode == 1
    assert done.stderr.count("error:") == 1
    assert str(conf) in done.stderr.replace("\n", "") and "SPARK_CONF_DIR" in done.stderr
    assert not any(cache_home.rglob("*.jsa*"))


@pytest.mark.parametrize(
    ("options", "named"), [("-Xmx1g 'unclosed", "quotes"), ("-Xmx1g MainClass", "'MainClass'")]
)
def test_java_options_that_are_not_options_are_refused(options: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings(spark_java_options=options)
    assert named in info.value.message and "STRATA_SPARK_JAVA_OPTIONS" in info.value.message


def test_strata_s_classes_compile_into_one_jar_per_spark(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = cache_home / "strata" / "spark"
    folder.mkdir(parents=True)
    other = folder / "strata-classes-0123456789abcdef.jar"  # another installation's
    other.write_bytes(b"PK")
    jar = spark_jar.make()
    assert jar == spark_jar.jar_path() == spark_jar.existing()
    with zipfile.ZipFile(jar) as opened:
        names = set(opened.namelist())
    assert {"strata/hadoop/NioLocalFileSystem.class", "strata/spark/HashedParquet.class"} <= names
    assert {n.split("$")[0].removesuffix(".class") for n in names} == {
        "strata/hadoop/NioLocalFileSystem",
        "strata/spark/HashedParquet",
    }
    assert sorted(p.name for p in folder.iterdir()) == sorted([jar.name, other.name])
    other.unlink()

    # Without a JDK there is nothing to compile with: one clear error, nothing written.
    jar.unlink()
    monkeypatch.setattr(spark_jar, "javac", lambda: None)
    with pytest.raises(LakeError, match=r"no javac found.*install a JDK 17"):
        spark_jar.make()
    assert list(folder.iterdir()) == []


def test_local_masters_alone_write_through_the_made_class(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = Settings(home=tmp_path / "home", spark_master="local[2]")
    assert spark_local_fs.spark_options(local) == {}  # not made
    jar = spark_jar.jar_path()
    assert jar is not None
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    options = {"spark.hadoop.fs.file.impl": spark_local_fs.CLASS}
    assert spark_local_fs.spark_options(local) == options
    assert spark_local_fs.spark_options(Settings(home=tmp_path, spark_master="local")) == options
    for master in ("local-cluster[2,1,1024]", "spark://10.0.0.5:7077", "yarn"):
        # Their executors run JVMs of their own, without the jar.
        assert spark_local_fs.spark_options(Settings(home=tmp_path, spark_master=master)) == {}
    off = Settings(home=tmp_path, spark_master="local[2]", spark_class_cache=False)
    assert spark_local_fs.spark_options(off) == {}

    # The jar goes at the end of the class path, once, after what the user gave; a jar
    # there is no folder with files, so the class cache still applies.
    monkeypatch.setenv("SPARK_DIST_CLASSPATH", "/opt/extra.jar")
    spark_jar.put_on_class_path(local)
    spark_jar.put_on_class_path(local)
    assert os.environ["SPARK_DIST_CLASSPATH"] == os.pathsep.join(["/opt/extra.jar", str(jar)])
    assert spark_classes.blocking_folders() == []
    monkeypatch.delenv("SPARK_DIST_CLASSPATH")
    spark_jar.put_on_class_path(off)
    assert "SPARK_DIST_CLASSPATH" not in os.environ
    # A parent process's jar (another version's, or one these settings turn off) is not
    # inherited: its classes would come first.
    parents = str(tmp_path / "elsewhere" / "strata-classes-0123456789abcdef.jar")
    monkeypatch.setenv("SPARK_DIST_CLASSPATH", os.pathsep.join(["/opt/extra.jar", parents]))
    spark_jar.put_on_class_path(local)
    assert os.environ["SPARK_DIST_CLASSPATH"] == os.pathsep.join(["/opt/extra.jar", str(jar)])
    monkeypatch.setenv("SPARK_DIST_CLASSPATH", parents)
    spark_jar.put_on_class_path(off)
    assert "SPARK_DIST_CLASSPATH" not in os.environ


@pytest.mark.slow
def test_a_made_cache_starts_a_builds_jvm_and_is_made_once(
    cache_home: Path, tmp_path: Path
) -> None:
    # Caches of installations gone or replaced since, which no JVM starts from again.
    folder = cache_home / "strata" / "spark"
    folder.mkdir(parents=True)
    (folder / "classes-0000000000000000.jsa").write_bytes(b"no note")
    (folder / "classes-1111111111111111.jsa").write_bytes(b"replaced")
    java = fake_java(tmp_path / "removed-java") / "bin" / "java"
    replaced = {"java": str(java), "java_stamp": "1:1", "jars": str(tmp_path), "jars_stamp": "1:1"}
    (folder / "classes-1111111111111111.json").write_text(json.dumps(replaced))

    # The rehearsal runs in a store, lake and branch of its own, whatever the user's are.
    made = run_strata(
        tmp_path / "first",
        "spark-cache",
        "--json",
        STRATA_BRANCH="dev",
        STRATA_DATABASE_URL="postgresql://nobody@127.0.0.1:9/unreachable",
    )
    assert made.returncode == 0, made.stderr
    first = json.loads(made.stdout)
    path = Path(first["path"])
    assert first["made_now"] and first["used"] and first["not_used_because"] is None
    assert path.is_file() and path.stat().st_size == first["bytes"] > 10_000_000
    assert path.parent == folder
    # Spark's local file system class is compiled beside it.
    files = first["file_system"]
    jar = Path(files["path"])
    assert files["made_now"] and files["used"] and files["not_made_because"] is None
    assert jar.parent == folder and jar.is_file()
    # No draft left behind, no orphan kept; the cache's note names its installation.
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [path.name, path.stem + ".json", jar.name]
    )
    note = json.loads(path.with_suffix(".json").read_text())
    assert Path(note["jars"]).name == "jars" and Path(note["java"]).name == "java"
    assert note["bytes"] == first["bytes"]

    again = run_strata(tmp_path / "first", "spark-cache", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) | {"seconds": 0} == first | {
        "made_now": False,
        "seconds": 0,
        "file_system": files | {"made_now": False},
    }
    assert path.stat().st_mtime_ns == os.stat(first["path"]).st_mtime_ns

    # A build's JVM loads Spark's classes from the cache: the JVM's class log says where
    # each class came from.
    home = tmp_path / "project" / "home"
    (tmp_path / "project" / "pipelines").mkdir(parents=True)
    (tmp_path / "project" / "pipelines" / "clean.py").write_text(PIPELINE)
    lake = connect(Settings(home=home))
    with lake.transaction("raw/n", type="APPEND") as txn:
        txn.write(pa.table({"n": [1, -2, 3]}))
    lake.engine.dispose()
    classes = tmp_path / "classes.log"
    options = f"{os.environ.get('STRATA_SPARK_JAVA_OPTIONS', '')} -Xlog:class+load:file={classes}"
    pipelines = str(tmp_path / "project" / "pipelines")
    built = run_strata(
        home, "build", "--all", "--pipeline", pipelines, STRATA_SPARK_JAVA_OPTIONS=options
    )
    assert built.returncode == 0, built.stderr
    log = classes.read_text().splitlines()
    loaded = [line for line in log if "SparkContext " in line]
    assert loaded and all("shared objects file (top)" in line for line in loaded), loaded
    # ... and writes its local files through the compiled class, with the modes Hadoop's
    # own would give them.
    nio = [line for line in log if f"{spark_local_fs.CLASS} " in line]
    assert nio and all(jar.name in line for line in nio), nio
    # ... and hashes the rows it writes in the Parquet writer: the class comes from the
    # jar, or from the cache when the rehearsal that made it loaded it from the jar.
    hashing = [line for line in log if f"{spark_hashed.FORMAT} " in line]
    assert hashing, log[-5:]
    assert all(jar.name in line or "shared objects file" in line for line in hashing), hashing
    written = connect(Settings(home=home))
    out = [written.storage.local(f.path) for f in written.files("clean/n")]
    first_print = written.version("clean/n").data_fingerprint
    written.engine.dispose()
    assert first_print is not None
    # 0666 less Hadoop's own umask (fs.permissions.umask-mode, 022), as Hadoop's chmod set.
    assert out and {stat.S_IMODE(os.stat(f).st_mode) for f in out} == {0o644}

    classes.unlink()
    off = run_strata(
        home,
        "build",
        "--all",
        "--force",
        "--pipeline",
        pipelines,
        STRATA_SPARK_JAVA_OPTIONS=options,
        STRATA_SPARK_CLASS_CACHE="0",
    )
    assert off.returncode == 0, off.stderr
    log = classes.read_text().splitlines()
    loaded = [line for line in log if "SparkContext " in line]
    assert loaded and not any("shared objects file" in line for line in loaded), loaded
    assert not any(f"{spark_local_fs.CLASS} " in line for line in log)
    # Without the jar the row hash is observed from the frame: the same rows, the same
    # fingerprint, the same version of the output (the rebuild changed nothing).
    assert not any(f"{spark_hashed.FORMAT} " in line for line in log)
    rebuilt = connect(Settings(home=home))
    assert rebuilt.version("clean/n").data_fingerprint == first_print
    assert len(rebuilt.versions("clean/n")) == 2
    rebuilt.engine.dispose()


FAILING_REHEARSAL = """
import sys
from pathlib import Path

from strata.lake import spark_classes
from strata.lake.spark import get_spark
from strata.settings import Settings


def exercise(settings):
    get_spark(settings).range(3).count()
    raise RuntimeError("the rehearsal broke")


try:
    spark_classes.make(Settings.load(home=Path(sys.argv[1])), exercise)
except RuntimeError as exc:
    print(exc)
"""


@pytest.mark.slow
def test_a_rehearsal_that_fails_leaves_no_cache_and_no_draft(
    cache_home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "rehearse.py"
    script.write_text(FAILING_REHEARSAL)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "home")],
        env=user_environ(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "the rehearsal broke", done.stderr
    # No JVM is left to write the archive of the rehearsal as it exits.
    assert not [line for line in command_lines() if str(cache_home) in line]
    assert list((cache_home / "strata" / "spark").iterdir()) == []


def command_lines() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found
