"""Numbered Alembic migrations, applied under a lock so concurrent first uses are safe."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import SchemaVersionError, StoreError
from strata.store.engine import write_tx
from strata.store.errors import translate

if TYPE_CHECKING:
    from alembic.config import Config

_MIGRATIONS = Path(__file__).parent / "migrations"
_PG_LOCK_KEY = 0x5374726174  # arbitrary, fixed: one advisory lock for schema changes


def _config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def newest_file_revision() -> str:
    """The head revision as the migration files name it (``NNNN_….py`` holds revision
    ``NNNN``), read without Alembic."""
    names = sorted(p.name for p in (_MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))
    return names[-1][:4]


def _at_head(engine: Engine) -> bool:
    """Whether the store is at this code's head, from one plain read: every command
    checks this, and Alembic's import and a write lock cost more than the command."""
    try:
        with engine.connect() as conn:
            stored = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    except sa.exc.DBAPIError:  # no table yet, or no store: the full path says which
        return False
    return stored == newest_file_revision()


def _known(revision: str) -> bool:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    return any(s.revision == revision for s in script.walk_revisions())


def _check_not_newer(revision: str | None, url: str) -> None:
    if revision is not None and not _known(revision):
        raise SchemaVersionError(
            f"the metadata store at {url} has schema revision {revision!r}, newer than this "
            f"Strata knows (head {head_revision()!r}); upgrade Strata to use this database",
            revision=revision,
            head=head_revision(),
        )


@contextmanager
def _schema_tx(engine: Engine) -> Iterator[Connection]:
    """A write transaction for schema changes.

    SQLite alters tables by copying them and dropping the original; with foreign
    keys enforced, dropping a table that other rows reference fails. So on SQLite
    enforcement is off while migrations run (the pragma is a no-op inside a
    transaction, hence before BEGIN) and the references are checked once at the end.
    """
    if engine.dialect.name != "sqlite":
        with write_tx(engine) as conn:
            yield conn
        return
    with engine.connect() as raw:
        dbapi = raw.connection.dbapi_connection
        assert dbapi is not None
        cur = dbapi.cursor()
        cur.execute("PRAGMA foreign_keys=OFF")
        try:
            conn = raw.execution_options(sqlite_begin="IMMEDIATE")
            with conn.begin():
                yield conn
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
                if broken:
                    raise StoreError(
                        f"schema migration left {len(broken)} broken reference(s), first "
                        f"{tuple(broken[0])}; the migration was rolled back",
                    )
        except sa.exc.DBAPIError as exc:
            raise translate(exc) from exc
        finally:
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()


def upgrade(engine: Engine, revision: str = "head") -> str:
    """Bring the schema to ``revision``; returns the revision the store is at."""
    if revision == "head" and _at_head(engine):
        return newest_file_revision()
    from alembic import command

    with _schema_tx(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        current = current_revision(conn)
        _check_not_newer(current, engine.url.render_as_string(hide_password=True))
        if current != head_revision() or revision != "head":
            command.upgrade(_config(conn), revision)
        return current_revision(conn) or ""


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    with _schema_tx(engine) as conn:
        command.downgrade(_config(conn), revision)


def check(engine: Engine) -> None:
    """Refuse a store that is not at this code's head revision."""
    if _at_head(engine):
        return
    with engine.connect() as conn:
        current = current_revision(conn)
    url = engine.url.render_as_string(hide_password=True)
    _check_not_newer(current, url)
    if current != head_revision():
        raise SchemaVersionError(
            f"the metadata store at {url} is at schema revision {current!r}, this Strata "
            f"needs {head_revision()!r}; run `strata init` to migrate it",
            revision=current,
            head=head_revision(),
        )
