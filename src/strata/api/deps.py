"""Shared route dependencies: the store connection, paging and auth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Query, Request
from sqlalchemy.engine import Connection, Engine

from strata.api import auth
from strata.settings import Settings
from strata.store.engine import read_tx

MAX_LIMIT = 10_000


def engine(request: Request) -> Engine:
    eng: Engine = request.app.state.engine
    return eng


def settings(request: Request) -> Settings:
    st: Settings = request.app.state.settings
    return st


def authorize(request: Request) -> None:
    auth.check(settings(request), request)


def read_conn(request: Request) -> Iterator[Connection]:
    with read_tx(engine(request)) as conn:
        yield conn


Eng = Annotated[Engine, Depends(engine)]
Conn = Annotated[Connection, Depends(read_conn)]
Limit = Annotated[int, Query(ge=0, le=MAX_LIMIT, description="results to return")]
Offset = Annotated[int, Query(ge=0, description="results to skip")]
Depth = Annotated[int, Query(ge=0, le=100, description="how many job hops to walk")]
