"""What every read query shares: pages with a total, ``IN`` lists in chunks, and the
references by which datasets and their versions are named."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strata.store import bulk

T = TypeVar("T")
CHUNK = 900  # below SQLite's bound-parameter limit on old builds, and plenty for PostgreSQL


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int


def chunks(values: Iterable[str]) -> list[list[str]]:
    """``values`` in lists of :data:`CHUNK`: reads take bigger slices than writes."""
    return bulk.chunks(values, CHUNK)


@dataclass(frozen=True)
class DatasetRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class DatasetVersionRef:
    namespace: str
    name: str
    version: str
