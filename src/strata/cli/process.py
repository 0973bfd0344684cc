"""Whether this interpreter is the ``strata`` command's own process.

Some choices pay only where the command is the whole process and ends with it, and
would harm a caller that runs commands in its own (a test suite, a notebook): keeping
what a command loads out of the collector's passes is one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strata.settings import Settings

_own = False


def claim() -> None:
    """Mark this interpreter as the command's own; called by the entry point only."""
    global _own
    _own = True


def is_own() -> bool:
    return _own


def start_spark_ahead(settings: Settings) -> None:
    """In the command's own process, start Spark's JVM now, so that it starts (seconds)
    while the command does its own work first; one nothing used is stopped as the process
    exits. Elsewhere nothing starts: a caller's sessions are its own."""
    if _own:
        from strata.lake.spark import start_ahead

        start_ahead(settings)


@contextmanager
def kept_for_the_command() -> Iterator[None]:
    """In the command's own process, what the block makes lives to the end: the block runs
    without collections, and what is alive after it is kept out of later passes
    (``gc.freeze``). Modules, the store's engine and thousands of declared transforms
    would otherwise be walked again by every full collection, and a first collection
    after a pause walks all that the pause allocated. Elsewhere nothing changes: freezing
    would also keep a caller's garbage (pooled connections among it) for good."""
    if not _own:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
