"""The stored events this process parsed lately: a run's earlier events, not read and
parsed again when its next events are folded.

A group's run events are folded with their runs' earlier events, which an earlier group
(the START before the COMPLETE) usually brought. Which events a run has is always read
from the store (:func:`load_events`); only their payloads come from here when kept. A
payload hash names one content forever, so an entry is never stale.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

from sqlalchemy.engine import Connection

from strata.lineage.record.events import Event, parse_event
from strata.store.owners import events


class ParsedEvents:
    """Stored events this process parsed lately, by payload hash, at most ``size``.

    A group's run events are folded with their runs' earlier events, which an earlier
    group (the START before the COMPLETE) usually brought: kept here, they are not read
    and parsed again. A payload hash names one content forever, so an entry is never
    stale; which events a run has is always read from the store.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._events: dict[str, Event] = {}
        self._lock = threading.Lock()  # folds of stores in other threads share it

    def get(self, payload_hash: str) -> Event | None:
        return self._events.get(payload_hash)

    def add(self, events: Sequence[Event]) -> None:
        """Keep ``events`` whose JSON text is known and at most :data:`_KEEP_BYTES` long
        (events of megabytes are allowed, and a few thousand of them would not fit)."""
        with self._lock:
            for event in events:
                if event.text is None or len(event.text) > _KEEP_BYTES:
                    continue
                self._events.pop(event.payload_hash, None)
                self._events[event.payload_hash] = event
            excess = len(self._events) - self._size
            if excess > 0:
                # The oldest, in one pass: deleting them one next(iter()) at a time walked
                # the slots of those already deleted again for each one.
                for digest in list(itertools.islice(self._events, excess)):
                    del self._events[digest]


_KEEP_BYTES = 64 * 1024
# A few groups' worth: a run's events mostly arrive within seconds of each other.
PARSED = ParsedEvents(4096)


def load_events(
    conn: Connection, run_uuids: Sequence[str], skip: Sequence[str] = ()
) -> dict[str, list[Event]]:
    """The stored events of each run (runs without any are left out), but for those
    whose payload hash is in ``skip`` (the caller has them parsed already). Payloads
    are read only for events not in :data:`PARSED`."""
    # The caller's events are left out here, not in SQL: the rows are few either way, and
    # a NOT IN of thousands of hashes cost PostgreSQL more than the lookup by run.
    leave_out = set(skip)
    found = [(run, h) for run, h in events.hashes_of_runs(conn, run_uuids) if h not in leave_out]
    parsed = {h: ev for _, h in found if (ev := PARSED.get(h)) is not None}
    missing = {h for _, h in found if h not in parsed}
    for digest, payload in events.payloads(conn, sorted(missing)):
        parsed[digest] = parse_event(payload, check=False, digest=digest)
    PARSED.add([parsed[h] for h in sorted(parsed)])
    out: dict[str, list[Event]] = {}
    for run, digest in found:
        out.setdefault(run, []).append(parsed[digest])
    return out
