"""Whether this interpreter is the ``strata`` command's own process.

Some choices pay only where the command is the whole process and ends with it, and
would harm a caller that runs commands in its own (a test suite, a notebook): keeping
what a command loads out of the collector's passes is one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_own = False


def claim() -> None:
    """Mark this interpreter as the command's own; called by the entry point only."""
    global _own
    _own = True


def is_own() -> bool:
    return _own


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
