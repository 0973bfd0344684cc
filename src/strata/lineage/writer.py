"""Group commit: ingest requests that arrive together share one SQL transaction.

One thread per writer owns the lineage writes of a process: callers queue
parsed events and wait on a future; the thread takes everything queued (up to
``max_events``), stores it with :func:`~strata.lineage.ingest.ingest_parsed`
and answers each caller. While one group is being written the next one
gathers, so under load a transaction's fixed cost (BEGIN, the writer lock,
the commit's flush) is paid once per group rather than once per request, and
requests never queue on the database lock. Nothing is acknowledged before its
group commits; a refused event is answered alone, as if sent by itself.

Raw payloads are validated here too, not on the caller's thread: a server's
event loop that spent its time validating would hold the GIL while this
thread waits to take it back after every database round trip.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from strata.errors import StrataError
from strata.lineage.events import Event, parse_event
from strata.lineage.ingest import IngestResult, ingest_parsed

Results = list[IngestResult | StrataError]
Item = Event | StrataError | Any  # parsed, already refused, or a raw JSON payload


@dataclass
class _Request:
    items: list[Item]
    future: Future[Results] = field(default_factory=Future)


class GroupWriter:
    """Writes queued events in groups from one background thread."""

    def __init__(self, engine: Engine, *, max_events: int = 1000) -> None:
        self._engine = engine
        self._max = max_events
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, items: list[Item]) -> Future[Results]:
        """Queue ``items``; the future gives one result per item, in order."""
        req = _Request(list(items))
        with self._lock:
            if self._closed:
                raise RuntimeError("the lineage writer is closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="strata-lineage-writer", daemon=True
                )
                self._thread.start()
            self._queue.put(req)
        return req.future

    def close(self, timeout: float | None = 30.0) -> None:
        """Write what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._queue.put(None)
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                return
            group, size = [first], len(first.items)
            while size < self._max:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                group.append(nxt)
                size += len(nxt.items)
            self._write(group)

    def _write(self, group: list[_Request]) -> None:
        flat = [_parsed(item) for req in group for item in req.items]
        try:
            results = ingest_parsed(self._engine, flat)
        except Exception as exc:  # the callers re-raise it; the thread lives on
            for req in group:
                req.future.set_exception(exc)
            return
        at = 0
        for req in group:
            req.future.set_result(results[at : at + len(req.items)])
            at += len(req.items)


def _parsed(item: Item) -> Event | StrataError:
    if isinstance(item, Event | StrataError):
        return item
    try:
        return parse_event(item)
    except StrataError as exc:
        return exc
