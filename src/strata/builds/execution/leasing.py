"""Holding a lease while work runs: wait for it, renew it on a heartbeat, release it.

The leases themselves (one holder per name, with an expiry) are rows in build state
(:mod:`strata.builds.state.leases`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from strata.builds.state import BuildState
from strata.builds.state.leases import Taken
from strata.ids import new_id


def lease_holder(kind: str) -> str:
    """A holder's name that says who to look for: ``pid 4242 on host h (build 01a…)``."""
    return f"pid {os.getpid()} on host {socket.gethostname()} ({kind} {new_id()})"


@contextmanager
def held(
    state: BuildState,
    name: str,
    holder: str,
    seconds: float,
    waiting: Callable[[Taken], None] | None = None,
) -> Iterator[None]:
    """Hold the lease on ``name`` for the block, waiting while another holder has it
    (``waiting`` hears of each holder, and of each new expiry, at once)."""
    told: Taken | None = None
    while (other := state.try_lease(name, holder, seconds)) is not None:
        if waiting is not None and other != told:
            waiting(other)
            told = other
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
