"""Shared route dependencies and helpers: the store connection, paging and auth.

FastAPI runs a sync dependency in a worker thread, a thread hop per dependency per request,
so auth and the engine are ``async`` dependencies, and read routes (sync) open their
connection with :func:`reading`: one hop per request, and the connection is used and
returned in that thread. :data:`Conn` is the dependency form, a read transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from pydantic import BeforeValidator
from sqlalchemy.engine import Connection, Engine

from strata.api.inputs import MAX_OFFSET, TIME_EXAMPLE, TIME_PATTERN, iso_text
from strata.lake.partitions import FILTER_PATTERN
from strata.settings import Settings
from strata.store.engine import read_tx
from strata.store.errors import mapped

MAX_LIMIT = 10_000


def engine(request: Request) -> Engine:
    eng: Engine = request.app.state.engine
    return eng


def settings(request: Request) -> Settings:
    st: Settings = request.app.state.settings
    return st


_INGEST = ("/api/v1/lineage", "/api/v1/lineage/batch")


async def read_your_writes(request: Request) -> None:
    """But for ingest itself, wait until the events this server acknowledged are folded,
    so what a client sent is what it reads. (Tokens are checked before the body is read,
    by :class:`strata.api.guard.GuardMiddleware`.)"""
    if request.method == "POST" and request.url.path in _INGEST:
        return
    await request.app.state.lineage_writer.barrier()


@contextmanager
def read_connection(eng: Engine) -> Iterator[Connection]:
    """A connection for a route's reads.

    On PostgreSQL it is in autocommit: under READ COMMITTED every statement takes its own
    snapshot whether or not it is in a transaction, so BEGIN and COMMIT would only add two
    round trips. Reads that need a transaction (``SET LOCAL``) take :data:`Conn` instead.
    SQLite keeps its read transaction, which is one snapshot for all the route's statements.
    """
    if eng.dialect.name == "postgresql":
        with mapped(), eng.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")
        return
    with read_tx(eng) as conn:
        yield conn


def reading(request: Request) -> AbstractContextManager[Connection]:
    """:func:`read_connection` on the app's store."""
    return read_connection(engine(request))


def read_conn(request: Request) -> Iterator[Connection]:
    with read_tx(engine(request)) as conn:
        yield conn


async def _engine(request: Request) -> Engine:
    return engine(request)


async def _lake_root(request: Request) -> str:
    return settings(request).lake_uri.rstrip("/")


Eng = Annotated[Engine, Depends(_engine)]
# Today's lake URI: where a lake dataset's files are now, whatever the lake was called when
# the dataset was made (a moved lake keeps its layout).
LakeRoot = Annotated[str, Depends(_lake_root)]
Conn = Annotated[Connection, Depends(read_conn)]
Limit = Annotated[int, Query(ge=0, le=MAX_LIMIT, description="results to return")]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="results to skip")]
Depth = Annotated[int, Query(ge=0, le=100, description="how many job hops to walk")]
Partition = Annotated[
    str | None,
    Query(
        pattern=FILTER_PATTERN,
        description="partitions: col=value pairs, comma-separated (a column named twice "
        "takes either value), e.g. region=JP,local_day=2026-11-01",
    ),
]


def time_param(description: str, alias: str | None = None) -> Any:
    """A date-time query parameter: ISO-8601, years 1000 to 9999 (checked by the route)."""
    return Query(
        alias=alias,
        description=f"{description}: an ISO-8601 date-time such as {TIME_EXAMPLE}",
        json_schema_extra={"pattern": TIME_PATTERN},
    )


# A time in the query: ISO-8601 text only (see inputs.iso_text), described by ``time_param``.
QueryTime = Annotated[datetime | None, BeforeValidator(iso_text)]
At = Annotated[QueryTime, time_param("when it happened (default: the server's local now)")]
