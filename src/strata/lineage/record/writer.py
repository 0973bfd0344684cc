"""The server's lineage writer: events are acknowledged once stored, folded just after.

Two threads per writer own the lineage writes of a process:

- The **store** thread takes everything queued by requests (up to ``max_events``),
  validates it, and queues it with :func:`~strata.lineage.record.apply.accept_parsed`: a
  queue row per event, one SQL statement for the group (on PostgreSQL committed
  alone, on a connection the thread keeps). Each caller is answered
  when its group commits: a 201 means the event is valid, durable and will be part of
  the model. A refused event is answered alone, as if sent by itself. On SQLite the
  queue is a file of its own (:mod:`strata.store.journal`), since SQLite has one writer
  per file and the fold's transaction would hold storing back.
- The **fold** thread folds queued events into the model with
  :func:`~strata.lineage.record.apply.fold_pending`, oldest first, in groups of up to
  ``fold_events``. While it folds, the store thread goes on storing, so under load
  the fold takes hundreds of events at a time and pays its per-statement costs once
  per group rather than once per event: that is what makes ingest fast. With
  ``fold_in="process"`` the thread hosts the fold in a process of its own
  (:class:`~strata.lineage.record.fold_process.FoldProcess`).

Reads wait for the fold: :meth:`GroupWriter.barrier` returns once every event this
process acknowledged before the call is folded, so a client that reads after its
POST sees its event. Events queued by another process (another worker on the same
PostgreSQL store, or a crash before the fold) are folded by whichever writer runs
next; the fold thread looks for them every ``poll`` seconds. Which events wait for the
fold, and who waits for them, is kept by :class:`~strata.lineage.record.unfolded.Unfolded`.

The store thread stops taking requests while more than ``max_backlog`` of this
process's events wait for the fold, so a fold that falls behind slows senders down
instead of growing a queue without bound; a request that waits ``backlog_wait``
seconds so is answered 503, stored nothing, to be sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from strata.errors import InvalidEvent, StoreError, StrataError
from strata.lineage.record.apply import (
    RecordResult,
    accept_parsed,
    fold_pending,
    still_queued,
)
from strata.lineage.record.events import Event, parse_event
from strata.lineage.record.fold_process import FoldProcess
from strata.lineage.record.unfolded import Unfolded
from strata.store.engine import StatementConnection
from strata.store.journal import journal_for

Results = list[RecordResult | StrataError]
Item = Event | StrataError | Any  # parsed, already refused, or a raw JSON payload

log = logging.getLogger(__name__)


@dataclass
class _Request:
    """Items to store and who waits for their results: a thread (``future``) or a
    coroutine on ``loop`` (``waiter``)."""

    items: list[Item]
    future: Future[Results] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    waiter: asyncio.Future[Results] | None = None


Answer = tuple[_Request, "Results | BaseException"]


class GroupWriter:
    """Stores queued events in groups and folds them from two background threads."""

    def __init__(
        self,
        engine: Engine,
        journal: Engine | None = None,
        *,
        max_events: int = 1000,
        fold_events: int = 2000,
        max_backlog: int = 20_000,
        poll: float = 1.0,
        fold_in: str = "thread",
        backlog_wait: float = 30.0,
        watch: float = 1.0,
    ) -> None:
        if fold_in not in ("thread", "process"):
            raise ValueError(f"fold_in must be 'thread' or 'process', got {fold_in!r}")
        self._engine = engine
        self._journal = journal if journal is not None else journal_for(engine)
        self._statements = StatementConnection(self._journal)  # the store thread's
        self._max = max_events
        self._fold_max = fold_events
        self._max_backlog = max_backlog
        self._poll = poll
        self._backlog_wait = backlog_wait
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._unfolded = Unfolded()
        self._wake = threading.Event()
        self._ready = threading.Event()  # the fold runs: it has folded a first group
        self._threads: dict[str, threading.Thread] = {}
        self._watch = watch
        self._inflight: list[_Request] = []  # the group the store thread is storing
        self.restarts = 0  # threads the watchdog started again
        self._closed = False
        self._stopping = threading.Event()
        self._process = (
            None
            if fold_in == "thread"
            else FoldProcess(
                engine,
                self._journal,
                fold_events,
                poll,
                on_ready=self._ready.set,
                on_folded=self._folded,
            )
        )

    # --- callers -------------------------------------------------------------------------

    def start(self, timeout: float | None = None) -> bool:
        """Start both threads (and the fold process) unless started; with ``timeout``,
        wait that long for the fold to be ready (imported, connected, and a first group
        of what an earlier server left folded). True once it is.

        A server starts its writer before it takes requests, so the first senders do not
        wait for (nor share the cores with) a fold process importing and connecting;
        :meth:`submit` starts one that was not started."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the lineage writer is closed")
            if not self._threads:
                for name in _ROLES:
                    self._spawn(name)
        return self._ready.wait(timeout) if timeout is not None else self._ready.is_set()

    def _spawn(self, role: str) -> None:
        """Start the thread of ``role`` (under :attr:`_lock`)."""
        targets = {
            "store": self._store_loop,
            "fold": self._fold_loop if self._process is None else self._host_process,
            "watchdog": self._watchdog,
        }
        thread = threading.Thread(target=targets[role], name=f"strata-lineage-{role}")
        thread.daemon = True
        self._threads[role] = thread
        thread.start()

    def health(self) -> dict[str, Any]:
        """Whether each part of the writer runs, and how far the fold is behind."""
        with self._lock:
            running = {role: t.is_alive() for role, t in self._threads.items()}
        if self._process is not None:
            running["foldProcess"] = self._process.alive()
        with self._unfolded.state:
            behind = len(self._unfolded)
        return {
            "running": bool(running) and all(running.values()) and not self._closed,
            "threads": running,
            "unfolded": behind,
            "restarts": self.restarts,
        }

    def submit(self, items: list[Item]) -> Future[Results]:
        """Queue ``items``; the future gives one result per item, in order, once stored."""
        future: Future[Results] = Future()
        self._put(_Request(list(items), future=future))
        return future

    async def store(self, items: list[Item]) -> Results:
        """:meth:`submit` for a coroutine: one result per item, in order, once stored.

        The results of a group reach the event loop in one call, where a future per
        request (``asyncio.wrap_future``) cost the store thread a wake-up of the loop
        per request.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Results] = loop.create_future()
        self._put(_Request(list(items), loop=loop, waiter=waiter))
        return await waiter

    def _put(self, req: _Request) -> None:
        self.start()
        with self._lock:
            if self._closed:
                raise RuntimeError("the lineage writer is closed")
            self._queue.put(req)

    async def barrier(self, timeout: float = 30.0) -> None:
        """Return once every event stored by this process before the call is folded (or
        after ``timeout`` seconds, when the fold cannot reach the store: the read then
        shows what is folded)."""
        await self._unfolded.barrier(timeout)

    def wait_folded(self, timeout: float | None = None) -> bool:
        """Block until every event stored so far is folded; False on timeout."""
        return self._unfolded.wait_folded(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Store what is queued, fold what is stored, then stop both threads; after
        ``timeout`` seconds in all, stop waiting (what is stored stays queued)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = dict(self._threads)
            self._queue.put(None)
        if threads:
            deadline = None if timeout is None else time.monotonic() + timeout
            threads["store"].join(_left(deadline))
            self._stopping.set()
            if self._process is not None:
                self._process.stop()
            self._wake_fold()
            threads["fold"].join(_left(deadline))
        self._refuse_left()
        if self._journal is not self._engine:
            self._journal.dispose()

    def _release(self, hashes: list[str]) -> None:
        """Forget folded (or refused) events and wake who waited for them."""
        with self._unfolded.state:
            self._unfolded.release(hashes)

    def _folded(self, hashes: list[str]) -> None:
        """Release what a fold of this process reports (nothing: it found the queue
        empty), and this process's events another server's fold took meanwhile."""
        with self._unfolded.state:
            suspects = self._unfolded.overtaken(hashes)
            self._unfolded.release(hashes)
        if not suspects:
            return
        try:
            still = still_queued(self._journal, suspects)
        except StoreError as exc:  # the next fold asks again
            log.warning("could not look up events folded elsewhere: %s", exc)
            return
        self._release([h for h in suspects if h not in still])

    # --- store thread --------------------------------------------------------------------

    def _store_loop(self) -> None:
        """Store groups until told to stop. Whatever one group raises is its callers'
        answer; the thread goes on with the next (and if it dies all the same, the
        watchdog answers its group and starts another)."""
        try:
            while True:
                group, stop = self._take_group()
                if group:
                    self._inflight = group
                    try:
                        self._store_or_refuse(group)
                    except Exception as exc:
                        log.exception("the lineage writer failed to store a group")
                        _answer([(req, _as_store_error(exc)) for req in group])
                    self._inflight = []
                if stop:
                    return
        finally:
            self._statements.close()

    def _take_group(self) -> tuple[list[_Request], bool]:
        """The next requests to store together (up to ``max_events``), and whether the
        writer is closing after them."""
        first = self._queue.get()
        if first is None:
            return [], True
        group, size = [first], len(first.items)
        while size < self._max:
            try:
                nxt = self._queue.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                return group, True
            group.append(nxt)
            size += len(nxt.items)
        return group, False

    def _store_or_refuse(self, group: list[_Request]) -> None:
        """Store ``group``, or refuse it whole while the fold is too far behind."""
        with self._unfolded.state:
            behind = not self._unfolded.state.wait_for(
                lambda: len(self._unfolded) < self._max_backlog, self._backlog_wait
            )
            waiting = len(self._unfolded)
        if behind:
            busy = StoreError(
                f"the lineage fold is {waiting} events behind and has not caught up in "
                f"{self._backlog_wait:.0f} s; nothing was stored, send the events again later"
            )
            _answer([(req, [busy] * len(req.items)) for req in group])
            return
        self._store(group)

    def _store(self, group: list[_Request]) -> None:
        flat = [_parsed(item) for req in group for item in req.items]
        mine: list[str] = []
        keep_parsed = self._process is None  # a fold process reads them from the queue
        with self._unfolded.state:
            # Counted before the commit: the fold may take them the moment it lands.
            for item in flat:
                if isinstance(item, Event) and self._unfolded.add(item, keep_parsed=keep_parsed):
                    mine.append(item.payload_hash)
            upto = self._unfolded.seq
        try:
            results = accept_parsed(self._engine, self._journal, flat, statements=self._statements)
        except BaseException as exc:  # the callers re-raise it; the thread lives on
            self._release(mine)  # not stored: nobody waits for their fold
            if not isinstance(exc, Exception):
                raise  # the thread dies of it; the watchdog answers the group
            _answer([(req, exc) for req in group])
            return
        kept = {r.payload_hash for r in results if isinstance(r, RecordResult) and not r.duplicate}
        with self._unfolded.state:
            self._unfolded.mark_committed(upto)
            self._unfolded.release([u for u in mine if u not in kept])
        if kept:
            self._wake_fold()
        answers: list[Answer] = []
        at = 0
        for req in group:
            answers.append((req, results[at : at + len(req.items)]))
            at += len(req.items)
        _answer(answers)

    # --- fold thread ---------------------------------------------------------------------

    def _fold_loop(self) -> None:
        self._fold_all()  # what an earlier process left
        while True:
            self._wake.wait(self._poll)
            self._wake.clear()
            stopping = self._stopping.is_set()
            self._fold_all()
            if stopping:
                return

    def _fold_all(self) -> None:
        """Fold until nothing is queued (in the store, not only this process's events)."""
        backoff = 0.05
        while True:
            with self._unfolded.state:
                known = dict(self._unfolded.parsed)
            try:
                folded = fold_pending(self._engine, self._journal, self._fold_max, known)
            except StoreError as exc:
                log.warning("lineage fold failed, retrying: %s", exc)
                if self._stopping.is_set():
                    return
                self._wake.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            except Exception:  # never let the thread die: log, wait, try again
                log.exception("lineage fold failed")
                self._wake.wait(self._poll)
                return
            self._ready.set()
            for uuid, why in folded.refused.items():
                log.warning("lineage event %s refused by the fold: %s", uuid, why)
            self._folded([*folded.folded, *folded.refused])
            if not len(folded):
                return

    # --- watchdog ------------------------------------------------------------------------

    def _watchdog(self) -> None:
        """Start again a store or fold thread that died, every ``watch`` seconds; the
        requests a dead store thread held are answered with an error, to be sent again."""
        while not self._stopping.wait(self._watch):
            with self._lock:
                if self._closed:
                    return
                dead = [r for r in ("store", "fold") if not self._threads[r].is_alive()]
                for role in dead:
                    log.error("the lineage %s thread died; starting another", role)
                    if role == "store":
                        lost, self._inflight = self._inflight, []
                        _answer([(req, _writer_died()) for req in lost])
                    self.restarts += 1
                    self._spawn(role)

    def _refuse_left(self) -> None:
        """Answer requests left in the queue by a store thread that is gone."""
        while True:
            try:
                req = self._queue.get_nowait()
            except queue.Empty:
                return
            if req is not None:
                _answer([(req, _writer_closed())])

    # --- fold process --------------------------------------------------------------------

    def _host_process(self) -> None:
        assert self._process is not None
        self._process.run(self._stopping.is_set)

    def _wake_fold(self) -> None:
        self._wake.set()
        if self._process is not None:
            self._process.wake()


def _answer(answers: list[Answer]) -> None:
    """Give each request its results (or the exception), those of coroutines in one
    call per event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Answer]] = {}
    for req, value in answers:
        if req.loop is not None:
            by_loop.setdefault(req.loop, []).append((req, value))
        elif req.future is not None and not req.future.done():  # answered once only
            if isinstance(value, BaseException):
                req.future.set_exception(value)
            else:
                req.future.set_result(value)
    for loop, mine in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, mine)


def _settle(answers: list[Answer]) -> None:
    """On the event loop: resolve the waiters not cancelled meanwhile."""
    for req, value in answers:
        waiter = req.waiter
        if waiter is None or waiter.done():
            continue
        if isinstance(value, BaseException):
            waiter.set_exception(value)
        else:
            waiter.set_result(value)


def _parsed(item: Item) -> Event | StrataError:
    """``item`` parsed, or why it was refused: never an exception, so one event cannot
    stop the others stored with it."""
    if isinstance(item, Event | StrataError):
        return item
    try:
        return parse_event(item)
    except StrataError as exc:
        return exc
    except Exception as exc:  # a case validation missed: refuse the event, not the group
        log.exception("an event could not be read")
        return InvalidEvent(f"the event could not be read ({type(exc).__name__}: {exc!r:.200})")


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _as_store_error(exc: Exception) -> StrataError:
    if isinstance(exc, StrataError):
        return exc
    return StoreError(f"the lineage writer failed ({type(exc).__name__}); send the events again")


_ROLES = ("store", "fold", "watchdog")


def _writer_died() -> StoreError:
    return StoreError("the lineage writer restarted while storing this; send it again")


def _writer_closed() -> StoreError:
    return StoreError("the lineage writer stopped before storing this; send it again")
