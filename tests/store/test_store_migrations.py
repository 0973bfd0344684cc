"""Schema migrations on SQLite and PostgreSQL: up, down, agreement with the model, refusal."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import strata
from strata.errors import SchemaVersionError
from strata.settings import Settings
from strata.store import migrate
from strata.store import schema as s
from strata.store.engine import create_engine
from strata.store.schema import metadata

MODEL_TABLES = set(metadata.tables)


def _revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(migrate._config())
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names())


def _revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return migrate.current_revision(conn)


def _unquote(value: Any) -> str | None:
    if value is None:
        return None
    arg = getattr(value, "arg", value)
    return str(getattr(arg, "text", arg)).strip().strip("()'\"")


def _schema_diffs(engine: sa.Engine) -> list[Any]:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        diffs = compare_metadata(ctx, metadata)
    out = []
    for diff in diffs:
        # SQLite reflects a server default of '' as the literal text "''": same default.
        items = diff if isinstance(diff, list) else [diff]
        real = [
            d
            for d in items
            if not (
                engine.dialect.name == "sqlite"
                and d[0] == "modify_default"
                and _unquote(d[-2]) == _unquote(d[-1])
            )
        ]
        out.extend(real)
    return out


def test_upgrade_builds_the_whole_model(fresh_engine: sa.Engine) -> None:
    assert _revision(fresh_engine) is None
    assert migrate.upgrade(fresh_engine) == migrate.head_revision()
    assert _revision(fresh_engine) == migrate.head_revision()
    assert _tables(fresh_engine) >= MODEL_TABLES
    # Upgrading an up-to-date store is a no-op, not an error.
    assert migrate.upgrade(fresh_engine) == migrate.head_revision()
    migrate.check(fresh_engine)


def test_migrations_and_model_agree(engine: sa.Engine) -> None:
    """What the migrations build is exactly what strata.store.schema declares."""
    assert _schema_diffs(engine) == []


def test_downgrade_to_base_and_back(fresh_engine: sa.Engine) -> None:
    migrate.upgrade(fresh_engine)
    migrate.downgrade(fresh_engine, "base")
    assert _revision(fresh_engine) is None
    assert _tables(fresh_engine) <= {"alembic_version"}
    assert migrate.upgrade(fresh_engine) == migrate.head_revision()
    assert _tables(fresh_engine) >= MODEL_TABLES
    assert _schema_diffs(fresh_engine) == []


def test_every_revision_steps_up_and_down(fresh_engine: sa.Engine) -> None:
    revisions = _revisions()
    assert revisions[-1] == migrate.head_revision()
    for rev in revisions:
        assert migrate.upgrade(fresh_engine, rev) == rev
        assert _revision(fresh_engine) == rev
    for previous in [*reversed(revisions[:-1]), None]:
        migrate.downgrade(fresh_engine, previous or "base")
        assert _revision(fresh_engine) == previous
    assert _tables(fresh_engine) <= {"alembic_version"}


def test_downgrade_and_upgrade_keep_lake_data(tmp_path: Path, db_url: str) -> None:
    """Reversible means reversible with data in the tables, not only on an empty store."""
    revisions = _revisions()
    if len(revisions) < 2:
        pytest.skip("only one revision: nothing to step back to")
    settings = Settings(
        home=tmp_path / "h", database_url=db_url, lake_uri=(tmp_path / "l").as_uri()
    )
    lake = strata.connect(settings)
    try:
        with lake.transaction("kept/through/migrations") as txn:
            txn.write(pa.table({"x": [1, 2, 3]}))
        migrate.downgrade(lake.engine, revisions[-2])
        assert migrate.upgrade(lake.engine) == migrate.head_revision()
        assert lake.read_arrow("kept/through/migrations").column("x").to_pylist() == [1, 2, 3]
    finally:
        lake.engine.dispose()


def test_versions_committed_before_0012_are_given_their_transactions_run(
    tmp_path: Path, db_url: str
) -> None:
    """Before 0012 a lake commit left its version's run NULL; the upgrade fills it from
    the transaction, and leaves hand-made versions (no run) alone."""
    settings = Settings(
        home=tmp_path / "h", database_url=db_url, lake_uri=(tmp_path / "l").as_uri()
    )
    lake = strata.connect(settings)
    run = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    try:
        with lake.transaction("made/by/a/run", run_uuid=run) as txn:
            txn.write(pa.table({"x": [1]}))
        with lake.transaction("made/by/hand") as txn:
            txn.write(pa.table({"x": [2]}))
        with lake.engine.begin() as conn:
            rows = conn.execute(
                sa.text("SELECT run_uuid FROM dataset_versions ORDER BY created_at")
            ).scalars()
            assert list(rows) == [run, None]  # the commit records it now
            conn.execute(sa.text("UPDATE dataset_versions SET run_uuid = NULL"))
        migrate.downgrade(lake.engine, "0011")
        migrate.upgrade(lake.engine)
        with lake.engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT run_uuid FROM dataset_versions ORDER BY created_at")
            ).scalars()
            assert list(rows) == [run, None]
    finally:
        lake.engine.dispose()


def test_sources_before_0026_keep_their_url_as_said_at_their_last_update(
    engine: sa.Engine,
) -> None:
    """0026 gives a source with a URL the time the old rule compared URLs with (its
    ``updated_at``); a source with none has no URL time."""
    migrate.downgrade(engine, "0025")
    made, updated = "2026-01-01 00:00:00.000000", "2026-01-05 00:00:00.000000"
    with engine.begin() as conn:
        for name, url in (("with", "s3://b"), ("without", None)):
            conn.execute(
                sa.text(
                    "INSERT INTO sources (name, type, connection_url, created_at, updated_at) "
                    "VALUES (:n, 'S3', :u, :c, :m)"
                ),
                {"n": name, "u": url, "c": made, "m": updated},
            )
    migrate.upgrade(engine)
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(s.sources.c.name, s.sources.c.url_at)).all())
        kept = conn.execute(sa.select(s.sources.c.updated_at).where(s.sources.c.name == "with"))
        assert rows == {"with": kept.scalar_one(), "without": None}


def test_firings_running_before_0029_are_held_until_their_start(engine: sa.Engine) -> None:
    """0029 holds a firing still running at the upgrade until its start, so it reads as
    lapsed unless its worker lives to record it; an ended one holds nothing."""
    migrate.downgrade(engine, "0028")
    started = "2026-01-01 06:00:05.000000"
    with engine.begin() as conn:
        for name, ended in (("running", None), ("ended", "2026-01-01 06:01:00.000000")):
            conn.execute(
                sa.text(
                    "INSERT INTO schedule_firings (branch, schedule, due_at, holder, "
                    "started_at, ended_at, outcome) VALUES ('main', :n, "
                    "'2026-01-01 06:00:00.000000', 'worker-x', :s, :e, :o)"
                ),
                {"n": name, "s": started, "e": ended, "o": "COMPLETED" if ended else None},
            )
    migrate.upgrade(engine)
    f = s.schedule_firings.c
    with engine.connect() as conn:
        held = dict(conn.execute(sa.select(f.schedule, f.expires_at)).all())
        start = conn.execute(sa.select(f.started_at).where(f.schedule == "running")).scalar_one()
    assert held == {"running": start, "ended": None}


def _stamp(engine: sa.Engine, revision: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def test_newer_database_is_refused(engine: sa.Engine) -> None:
    _stamp(engine, "ffff")
    try:
        for attempt in (migrate.upgrade, migrate.check):
            with pytest.raises(SchemaVersionError) as info:
                attempt(engine)
            assert "'ffff'" in info.value.message
            assert "upgrade Strata" in info.value.message
            assert info.value.details["revision"] == "ffff"
            assert info.value.details["head"] == migrate.head_revision()
        # The refused upgrade changed nothing.
        assert _revision(engine) == "ffff"
    finally:
        _stamp(engine, migrate.head_revision())


def test_connect_refuses_a_newer_embedded_store(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    strata.connect(settings).engine.dispose()
    eng = create_engine(settings.database_url)
    _stamp(eng, "ffff")
    eng.dispose()
    with pytest.raises(SchemaVersionError, match="ffff"):
        strata.connect(settings)


def test_unmigrated_store_says_run_init(
    fresh_engine: sa.Engine, backend: str, tmp_path: Path
) -> None:
    with pytest.raises(SchemaVersionError) as info:
        migrate.check(fresh_engine)
    assert "run `strata init`" in info.value.message
    assert info.value.details["revision"] is None
    settings = Settings(
        home=tmp_path / "h",
        database_url=fresh_engine.url.render_as_string(hide_password=False),
        lake_uri=(tmp_path / "lake").as_uri(),
    )
    if backend == "postgresql":
        # A server store is never migrated behind the user's back.
        with pytest.raises(SchemaVersionError, match="strata init"):
            strata.connect(settings)
        assert not MODEL_TABLES & _tables(fresh_engine)
    else:
        # The embedded store migrates itself on first use.
        strata.connect(settings).engine.dispose()
        migrate.check(fresh_engine)


def test_connect_migrates_the_embedded_default(tmp_path: Path) -> None:
    home = tmp_path / "project" / ".strata"
    lake = strata.connect(Settings(home=home))
    try:
        assert (home / "meta.db").is_file()
        assert _revision(lake.engine) == migrate.head_revision()
        with lake.transaction("first/dataset") as txn:
            txn.write(pa.table({"v": ["a"]}))
        assert lake.read_arrow("first/dataset").column("v").to_pylist() == ["a"]
        # The lake folder is where the settings say, under home.
        assert any((home / "lake").rglob("*.parquet"))
    finally:
        lake.engine.dispose()


_FIRST_USE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import pyarrow as pa
    import strata
    from strata.settings import Settings
    from strata.store import migrate
    from strata.store.engine import create_engine

    backend, target, lake_uri, ident, go = sys.argv[1:]
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.002)
    if backend == "sqlite":
        lake = strata.connect(Settings(home=target))
    else:
        eng = create_engine(target)
        migrate.upgrade(eng)
        eng.dispose()
        lake = strata.connect(Settings(database_url=target, lake_uri=lake_uri))
    with lake.transaction("first/use") as txn:
        txn.write(pa.Table.from_pydict({"who": [int(ident)]}))
    print("done", flush=True)
    """
)


def test_concurrent_first_use_is_safe(backend: str, fresh_url: str, tmp_path: Path) -> None:
    """Several processes opening a brand-new store at once all succeed, once each."""
    n = 3
    target = str(tmp_path / "home") if backend == "sqlite" else fresh_url
    lake_uri = (tmp_path / "home" / "lake").as_uri()
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _FIRST_USE, backend, target, lake_uri, str(i), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "done"

    settings = (
        Settings(home=target)
        if backend == "sqlite"
        else Settings(database_url=target, lake_uri=lake_uri)
    )
    lake = strata.connect(settings)
    try:
        assert _revision(lake.engine) == migrate.head_revision()
        versions = lake.versions("first/use")
        assert [v.commit_id for v in versions] == list(range(1, n + 1))
        assert sorted(lake.read_arrow("first/use").column("who").to_pylist()) == list(range(n))
        with lake.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar() == 1
    finally:
        lake.engine.dispose()


def test_the_file_head_is_alembics_head() -> None:
    assert migrate.newest_file_revision() == migrate.head_revision()


def test_a_store_at_head_is_checked_without_alembic(db_url: str) -> None:
    # Every command checks the schema: at head that is one plain read, no Alembic import
    # and no write lock.
    script = (
        "import sys\n"
        "from strata.store import migrate\n"
        "from strata.store.engine import create_engine\n"
        f"engine = create_engine({db_url!r})\n"
        "migrate.check(engine)\n"
        "print(migrate.upgrade(engine), 'alembic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == [migrate.head_revision(), "False"]
