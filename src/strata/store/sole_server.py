"""One server per SQLite store.

A SQLite store has one writer per file and its pending-event journal is folded by the
server that wrote it, so two servers on one file would contend for every write and
neither could tell when the other's events were folded. ``strata serve`` holds an
exclusive lock on a file beside the store for as long as it runs; the operating system
drops it when the process ends, however it ends (SIGKILL included).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import Engine

from strata.errors import ConfigError

SUFFIX = ".serve.lock"


@contextmanager
def sole_server(engine: Engine) -> Iterator[None]:
    """Hold the store's server lock while the block runs (PostgreSQL, or SQLite in
    memory: nothing to hold); ConfigError if another server holds it."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    import fcntl

    path = Path(database)
    lock = path.with_name(path.name + SUFFIX)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise ConfigError(
                f"another `strata serve` (pid {holder}) serves the SQLite store {path}; a "
                "SQLite store takes one server: stop it, or run several servers on "
                "PostgreSQL (STRATA_DATABASE_URL=postgresql://…, see docs/deploy.md)",
                store=str(path),
                pid=holder,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # drops the lock
