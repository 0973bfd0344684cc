"""Shared fixtures: every store test runs on SQLite and on PostgreSQL.

PostgreSQL runs whenever a server answers at ``STRATA_TEST_PG_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``); with ``CI`` or
``STRATA_REQUIRE_PG`` set, a missing server fails the run instead of skipping.
Each test run makes its own throwaway database on that server.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from demo_stores import DemoStores
from strata.settings import Settings
from strata.store import migrate
from strata.store.engine import create_engine
from strata.store.schema import metadata

# The suite's JVMs live seconds over a few rows: C2's compiler threads took about a third
# of their CPU, on two cores shared with the tests ("The test suite's time" in
# docs/benchmarks.md). C1 alone, and one GC thread, for every JVM Strata starts in the
# run (in process and in `strata` commands), through the setting rather than a
# spark-defaults.conf: a SPARK_CONF_DIR with files would rule out Spark's class cache.
os.environ.setdefault("STRATA_SPARK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

PG_ADMIN_URL = os.environ.get("STRATA_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_PG = bool(os.environ.get("CI") or os.environ.get("STRATA_REQUIRE_PG"))
BACKENDS = ["sqlite", "postgresql"]


def _pg_available() -> str | None:
    try:
        eng = create_engine(PG_ADMIN_URL, poolclass=sa.pool.NullPool)
        with eng.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        eng.dispose()
        return None
    except Exception as exc:  # any failure to connect means "no server"
        return str(exc)


_PG_PROBLEM = _pg_available()


class PgDatabases:
    """Creates and drops throwaway databases on the test server."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.admin = create_engine(
            PG_ADMIN_URL, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT"
        )

    def new(self) -> str:
        name = f"strata_t_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return (
            sa.engine.make_url(PG_ADMIN_URL)
            .set(database=name)
            .render_as_string(hide_password=False)
        )

    def migrated(self) -> str:
        """A new database with Strata's schema."""
        url = self.new()
        eng = create_engine(url, poolclass=sa.pool.NullPool)
        migrate.upgrade(eng)
        eng.dispose()
        return url

    def copy(self, url: str) -> str:
        """A new database holding what the database at ``url`` holds now; the
        connections still open on it (pools of engines its writer left) are ended, as
        PostgreSQL copies only a database nobody is connected to."""
        source = sa.engine.make_url(url).database
        name = f"strata_t_{uuid.uuid4().hex[:12]}"
        with self.admin.connect() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :db AND pid <> pg_backend_pid()"
                ),
                {"db": source},
            )
            conn.execute(sa.text(f'CREATE DATABASE "{name}" TEMPLATE "{source}"'))
        self.created.append(name)
        return sa.engine.make_url(url).set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        with self.admin.connect() as conn:
            for name in self.created:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PgDatabases]:
    if _PG_PROBLEM is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (CI) but does not answer: {_PG_PROBLEM}")
        pytest.skip(f"no PostgreSQL server at {PG_ADMIN_URL}: {_PG_PROBLEM}")
    dbs = PgDatabases()
    yield dbs
    dbs.drop_all()


@pytest.fixture(scope="session")
def pg_shared_url(pg_databases: PgDatabases) -> str:
    """One migrated PostgreSQL database for the run; tests truncate it before use."""
    return pg_databases.migrated()


def _truncate(url: str) -> None:
    eng = create_engine(url, poolclass=sa.pool.NullPool)
    names = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
    with eng.begin() as conn:
        conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    eng.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite store for the run: each test copies the file, which costs a
    fraction of running every migration again."""
    path = tmp_path_factory.mktemp("template") / "meta.db"
    eng = create_engine(f"sqlite:///{path}")
    migrate.upgrade(eng)
    eng.dispose()  # closes the last connection: the WAL is checkpointed into the file
    assert not path.with_name("meta.db-wal").exists()
    return path


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A migrated, empty metadata store on the backend under test."""
    if backend == "sqlite":
        path = tmp_path / "meta.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    url = str(request.getfixturevalue("pg_shared_url"))
    _truncate(url)
    return url


@pytest.fixture
def engine(db_url: str) -> Iterator[sa.Engine]:
    eng = create_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def settings(tmp_path: Path, db_url: str) -> Settings:
    return Settings(
        home=tmp_path / ".strata",
        database_url=db_url,
        lake_uri=(tmp_path / "lake").as_uri(),
        gc_grace_seconds=0,
        # A fold process per app would cost each API test a second interpreter; the live
        # server test and the writer tests run the process.
        lineage_fold="thread",
    )


@pytest.fixture(scope="session")
def demo_stores(
    tmp_path_factory: pytest.TempPathFactory,
    sqlite_template: Path,
    spark: object,
    request: pytest.FixtureRequest,
) -> DemoStores:
    """The run's ``strata demo`` per backend, as copies (``demo_stores.py``). It runs
    Spark in process, so its users are in the Spark group: one worker makes the masters."""
    pg = request.getfixturevalue("pg_databases") if _PG_PROBLEM is None or REQUIRE_PG else None
    return DemoStores(tmp_path_factory.mktemp("demo-masters"), sqlite_template, pg)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The one local SparkSession of the test run; its log goes to a scratch home. Its
    settings are loaded, so that the run's JVM options (above) reach its JVM."""
    from strata.lake.spark import get_spark

    session = get_spark(Settings.load(home=tmp_path_factory.mktemp("spark-home")))
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _openlineage_variables_restored() -> Iterator[None]:
    """The openlineage client copies ``OPENLINEAGE_URL`` into ``OPENLINEAGE__TRANSPORT__…``
    variables of the process, which ``monkeypatch`` does not know to undo: without this, a
    test after one that configured a remote would see that remote configured too."""
    before = {k for k in os.environ if k.startswith("OPENLINEAGE")}
    yield
    for name in [k for k in os.environ if k.startswith("OPENLINEAGE") and k not in before]:
        del os.environ[name]


# Spread over workers (pytest-xdist), every test that runs Spark in its own process runs
# on one of them: the run keeps one SparkSession. Tests whose Spark runs in child
# processes (`strata` commands, spark-submit) go to any worker.
SPARK_GROUP = "spark"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group(SPARK_GROUP))


@pytest.fixture(autouse=True)
def _spark_stays_in_its_group(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fail a test that runs Spark in process without the ``spark`` marker or fixture: on
    a worker outside the group it would start a second SparkSession."""
    if request.node.get_closest_marker("xdist_group") is not None:
        _note_spark(request.config)
        request.getfixturevalue("spark")  # the run's session, whichever test comes first
        yield
        return
    import strata.lake.spark as lake_spark

    calls: list[str] = []
    real = lake_spark.get_spark

    def recorded(*args: object, **kwargs: object) -> object:
        calls.append(request.node.nodeid)
        return real(*args, **kwargs)

    monkeypatch.setattr(lake_spark, "get_spark", recorded)
    started_before = lake_spark.running()
    yield
    if calls or (lake_spark.running() and not started_before):
        pytest.fail(
            f"{request.node.nodeid} runs Spark in the test's process: mark it "
            "`@pytest.mark.spark` (or take the `spark` fixture) so it runs in the Spark group"
        )


def _note_spark(config: pytest.Config) -> None:
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output["ran_spark"] = config.workerinput["workerid"]


_SPARK_WORKERS: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    worker = getattr(node, "workeroutput", {}).get("ran_spark")
    if worker is not None:
        _SPARK_WORKERS.append(str(worker))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On the controller: fail the run whose Spark tests ran on more than one worker (the
    groups not kept, as on pytest-xdist over a pytest it does not support)."""
    if len(_SPARK_WORKERS) > 1:
        workers = ", ".join(sorted(_SPARK_WORKERS))
        session.config.get_terminal_writer().line(
            f"error: workers {workers} each ran a SparkSession: the `spark` group was split; "
            "run with `--dist loadgroup`, on a pytest whose groups xdist keeps (pyproject.toml)",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
