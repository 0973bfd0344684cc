"""Holding a lease while work runs: wait for it, renew it on a heartbeat, release it.

The leases themselves (one holder per name, with an expiry) are rows in build state
(:mod:`strata.builds.state.leases`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from strata.builds.state import BuildState


@contextmanager
def held(
    state: BuildState,
    name: str,
    holder: str,
    seconds: float,
    waiting: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the lease on ``name`` for the block, waiting while another holder has it."""
    told = False
    while (other := state.try_lease(name, holder, seconds)) is not None:
        if waiting is not None and not told:
            waiting(other)
            told = True
        time.sleep(0.2)
    with heartbeat(lambda: state.renew_lease(name, holder, seconds), seconds / 3):
        try:
            yield
        finally:
            state.release_lease(name, holder)


@contextmanager
def heartbeat(beat: Callable[[], None], every: float) -> Iterator[None]:
    """Call ``beat`` every ``every`` seconds in a daemon thread while the block runs."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            try:
                beat()
            except Exception:  # a missed renewal is retried; the lease outlives a few
                continue

    thread = threading.Thread(target=loop, name="strata-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
