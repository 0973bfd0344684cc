"""The one map from database errors to Strata's errors.

Every way into the store (:func:`~strata.store.engine.read_tx`,
:func:`~strata.store.engine.write_tx`, the server's statement connection and read
connections) runs its work inside :func:`mapped`, so callers catch Strata's errors and
the API answers each with its status, as httpx maps httpcore's errors in one place:

- the store out of reach, or failing on its own (``OperationalError``, ``InterfaceError``,
  ``InternalError``) -> :class:`~strata.errors.StoreError` (503: try again later);
- a uniqueness or foreign-key rule broken (``IntegrityError``) ->
  :class:`~strata.errors.StoreConflict` (409: a conflicting write won);
- a value the store cannot hold (``DataError``) -> :class:`~strata.errors.StoreRefused`
  (400);
- a statement the store does not understand (``ProgrammingError``: a schema other than
  this code's) -> :class:`~strata.errors.StoreError`, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from strata.errors import StoreConflict, StoreError, StoreRefused, StrataError


@contextmanager
def mapped() -> Iterator[None]:
    """Raise database errors raised inside as Strata's (see the module docs)."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        raise translate(exc) from exc


def translate(exc: sa.exc.DBAPIError) -> StrataError:
    """Strata's error for a database error."""
    why = _first_line(exc.orig if exc.orig is not None else exc)
    if isinstance(exc, sa.exc.IntegrityError):
        return StoreConflict(f"a conflicting write is stored already: {why}; retry")
    if isinstance(exc, sa.exc.DataError):
        return StoreRefused(f"the store cannot hold this value: {why}")
    if isinstance(exc, sa.exc.ProgrammingError):  # a table or column this code expects
        return StoreError(
            f"metadata store error: {why}; the store may be at another schema version "
            "than this code (`strata init` migrates it)"
        )
    return StoreError(
        f"metadata store error: {why}; check that the database is reachable and not "
        "locked by another program",
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
