"""Python's cycle collector, paused around work that allocates much and frees little."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No garbage collection in the block; the collector's state is restored after it.

    For bounded work that allocates tens of thousands of objects, most of them kept (a
    status of thousands of datasets, loading thousands of transforms, folding a batch of
    run events): the collector's passes over them would cost a third of the time and most
    of its variance, and free almost nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
