"""The server's lineage writer: events are acknowledged once stored, folded just after.

Two threads per writer own the lineage writes of a process:

- The **store** thread takes everything queued by requests (up to ``max_events``),
  validates it, and queues it with :func:`~strata.lineage.ingest.accept_parsed`: a
  queue row per event, one SQL statement for the group (on PostgreSQL committed
  alone, on a connection the thread keeps). Each caller is answered
  when its group commits: a 201 means the event is valid, durable and will be part of
  the model. A refused event is answered alone, as if sent by itself. On SQLite the
  queue is a file of its own (:func:`journal_for`), since SQLite has one writer per
  file and the fold's transaction would hold storing back.
- The **fold** thread folds queued events into the model with
  :func:`~strata.lineage.ingest.fold_pending`, oldest first, in groups of up to
  ``fold_events``. While it folds, the store thread goes on storing, so under load
  the fold takes hundreds of events at a time and pays its per-statement costs once
  per group rather than once per event: that is what makes ingest fast.

Reads wait for the fold: :meth:`GroupWriter.barrier` returns once every event this
process acknowledged before the call is folded, so a client that reads after its
POST sees its event. Events queued by another process (another worker on the same
PostgreSQL store, or a crash before the fold) are folded by whichever writer runs
next; the fold thread looks for them every ``poll`` seconds.

The store thread stops taking requests while more than ``max_backlog`` of this
process's events wait for the fold, so a fold that falls behind slows senders down
instead of growing a queue without bound; a request that waits ``backlog_wait``
seconds so is answered 503, stored nothing, to be sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from strata.errors import StoreError, StrataError
from strata.lineage.ingest.events import Event, parse_event
from strata.lineage.ingest.transactions import IngestResult, accept_parsed, fold_pending
from strata.store import schema as s
from strata.store.engine import StatementConnection, create_engine

Results = list[IngestResult | StrataError]
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


@dataclass
class _Waiter:
    upto: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


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
    ) -> None:
        if fold_in not in ("thread", "process"):
            raise ValueError(f"fold_in must be 'thread' or 'process', got {fold_in!r}")
        self._engine = engine
        self._fold_in = fold_in
        self._pipe: Connection | None = None  # to the fold process
        # Written a byte when there is work for the fold process, without blocking: a byte
        # already waiting is wake enough, so a busy fold (a message per group, sent
        # blocking, filled the pipe and stalled the store thread and so every request)
        # or a dead one (a shared multiprocessing.Event hung whoever set it next) never
        # holds the writer back.
        self._remote_wake: Connection | None = None
        self._pipe_lock = threading.Lock()
        self._journal = journal if journal is not None else journal_for(engine)
        self._statements = StatementConnection(self._journal)  # the store thread's
        self._max = max_events
        self._fold_max = fold_events
        self._max_backlog = max_backlog
        self._poll = poll
        self._backlog_wait = backlog_wait
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._state = threading.Condition()
        self._wake = threading.Event()
        self._ready = threading.Event()  # the fold runs: it has folded a first group
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._stopping = False
        # Under _state: a number per event this process stored, in order; the events not
        # yet folded (payload hash -> number, and for a fold thread their parsed form, which
        # a fold process cannot use: it reads them from the queue); who waits for the fold.
        self._seq = 0
        self._unfolded: dict[str, int] = {}
        self._parsed: dict[str, Event] = {}
        self._waiters: list[_Waiter] = []

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
                fold = self._fold_loop if self._fold_in == "thread" else self._remote_loop
                self._threads = [
                    threading.Thread(target=self._store_loop, name="strata-lineage-store"),
                    threading.Thread(target=fold, name="strata-lineage-fold"),
                ]
                for thread in self._threads:
                    thread.daemon = True
                    thread.start()
        return self._ready.wait(timeout) if timeout is not None else self._ready.is_set()

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
        with self._state:
            upto = self._seq
            if self._folded_upto() >= upto:
                return
            loop = asyncio.get_running_loop()
            waiter = _Waiter(upto, loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.future, timeout)
        except TimeoutError:
            log.warning("read went ahead of the lineage fold after %.0f s", timeout)

    def wait_folded(self, timeout: float | None = None) -> bool:
        """Block until every event stored so far is folded; False on timeout."""
        with self._state:
            upto = self._seq
            return self._state.wait_for(lambda: self._folded_upto() >= upto, timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        """Store what is queued, fold what is stored, then stop both threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
            self._queue.put(None)
        if threads:
            threads[0].join(timeout)
            with self._state:
                self._stopping = True
            self._tell("stop")
            self._wake_fold()
            threads[1].join(timeout)
        if self._journal is not self._engine:
            self._journal.dispose()

    # --- bookkeeping (under _state) ------------------------------------------------------

    def _folded_upto(self) -> int:
        if not self._unfolded:
            return self._seq
        # Numbers are given in insertion order, so the oldest entry left holds the least
        # (a min() over thousands of waiting events ran for every group and every read).
        return next(iter(self._unfolded.values())) - 1

    def _release(self, hashes: list[str]) -> None:
        """Forget folded (or refused) events and wake who waited for them."""
        for h in hashes:
            self._unfolded.pop(h, None)
            self._parsed.pop(h, None)
        done = self._folded_upto()
        ready = [w for w in self._waiters if w.upto <= done]
        self._waiters = [w for w in self._waiters if w.upto > done]
        for w in ready:
            w.loop.call_soon_threadsafe(_resolve, w.future)
        self._state.notify_all()

    # --- store thread --------------------------------------------------------------------

    def _store_loop(self) -> None:
        try:
            self._store_groups()
        finally:
            self._statements.close()

    def _store_groups(self) -> None:
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
            with self._state:
                behind = not self._state.wait_for(
                    lambda: len(self._unfolded) < self._max_backlog, self._backlog_wait
                )
                waiting = len(self._unfolded)
            if behind:
                busy = StoreError(
                    f"the lineage fold is {waiting} events behind and has not caught up in "
                    f"{self._backlog_wait:.0f} s; nothing was stored, send the events again later"
                )
                _answer([(req, [busy] * len(req.items)) for req in group])
                continue
            self._store(group)

    def _store(self, group: list[_Request]) -> None:
        flat = [_parsed(item) for req in group for item in req.items]
        mine: list[str] = []
        with self._state:
            # Counted before the commit: the fold may take them the moment it lands.
            for item in flat:
                if isinstance(item, Event) and item.payload_hash not in self._unfolded:
                    self._seq += 1
                    self._unfolded[item.payload_hash] = self._seq
                    if self._fold_in == "thread":
                        self._parsed[item.payload_hash] = item
                    mine.append(item.payload_hash)
        try:
            results = accept_parsed(self._engine, self._journal, flat, statements=self._statements)
        except Exception as exc:  # the callers re-raise it; the thread lives on
            with self._state:
                self._release(mine)
            _answer([(req, exc) for req in group])
            return
        kept = {r.payload_hash for r in results if isinstance(r, IngestResult) and not r.duplicate}
        with self._state:
            self._release([u for u in mine if u not in kept])
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
            with self._state:
                stopping = self._stopping
            self._fold_all()
            if stopping:
                return

    def _fold_all(self) -> None:
        """Fold until nothing is queued (in the store, not only this process's events)."""
        backoff = 0.05
        while True:
            with self._state:
                known = dict(self._parsed)
            try:
                folded = fold_pending(self._engine, self._journal, self._fold_max, known)
            except StoreError as exc:
                log.warning("lineage fold failed, retrying: %s", exc)
                if self._stopping:
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
            with self._state:
                self._release([*folded.folded, *folded.refused])
            if not len(folded):
                return

    # --- fold process ---------------------------------------------------------------------

    def _wake_fold(self) -> None:
        self._wake.set()
        with self._pipe_lock:  # not closed while written to
            if self._remote_wake is not None:
                # Full: a wake is pending already. Broken: the process is gone, and the
                # fold thread starts another.
                with contextlib.suppress(OSError):
                    os.write(self._remote_wake.fileno(), b"w")

    def _tell(self, message: str) -> None:
        with self._pipe_lock:
            if self._pipe is not None:
                # A process that is gone cannot hear it; the fold thread starts another.
                with contextlib.suppress(OSError):
                    self._pipe.send(message)

    def _remote_loop(self) -> None:
        """Host the fold in a process of its own (its own interpreter lock, so folding does
        not slow the event loop and the store thread down) and relay what it folded."""
        context = multiprocessing.get_context("spawn")
        url = self._engine.url.render_as_string(hide_password=False)
        journal = (
            None
            if self._journal is self._engine
            else self._journal.url.render_as_string(hide_password=False)
        )
        while True:
            ours, theirs = context.Pipe()
            wake_in, wake_out = context.Pipe(duplex=False)
            os.set_blocking(wake_out.fileno(), False)
            child = context.Process(
                target=_fold_process,
                args=(url, journal, self._fold_max, self._poll, theirs, wake_in),
                name="strata-lineage-fold",
                daemon=True,
            )
            child.start()
            theirs.close()
            wake_in.close()
            with self._pipe_lock:
                self._pipe = ours
                self._remote_wake = wake_out
            if self._stopping:
                self._tell("stop")
            self._wake_fold()  # fold what an earlier process left
            stopped = self._relay(ours)
            with self._pipe_lock:
                self._remote_wake = None
            wake_out.close()
            if stopped:
                child.join(30)
                return
            log.warning(
                "the lineage fold process stopped (exit %s); starting another", child.exitcode
            )
            child.join(5)
            time.sleep(0.5)

    def _relay(self, pipe: Connection) -> bool:
        """Release what the fold process reports until it says goodbye (True) or dies."""
        while True:
            try:
                message = pipe.recv()
            except (EOFError, OSError):
                with self._pipe_lock:
                    self._pipe = None
                return False
            if message == "bye":
                return True
            if message == "ready":
                self._ready.set()
                continue
            with self._state:
                self._release(list(message))


def _fold_process(
    url: str,
    journal_url: str | None,
    fold_events: int,
    poll: float,
    pipe: Connection,
    wake: Connection,
) -> None:
    """The fold process: fold what is queued whenever a byte arrives on ``wake`` (or every
    ``poll`` seconds), report the payload hashes done, and stop when told to, after a last
    fold."""
    os.set_blocking(wake.fileno(), False)
    # The fold is the store's one writer: its pages stay valid between its transactions,
    # and a group's inserts land all over the indexes (folding 8,000 events into a new
    # store went 8 % faster with 128 MB than with SQLite's 2 MB).
    engine = create_engine(url, pool_size=2, sqlite_cache_mb=_FOLD_CACHE_MB)
    journal = create_engine(journal_url) if journal_url else engine
    freeze_startup_objects()
    # A group allocates hundreds of thousands of objects that reference counting frees;
    # automatic collections would walk them again and again while the group is folded.
    # Folding leaves next to no cycles (none found after most groups), so cycles are
    # collected when the queue is empty and every _COLLECT_EVERY folds while it is not
    # (see _collect).
    gc.disable()
    folds = 0
    stop = False
    ready = False
    while True:
        if ready:
            wake.poll(poll)
        _drain(wake)  # before folding: work stored from now on wakes it again
        try:
            while pipe.poll(0):
                stop = pipe.recv() == "stop" or stop
        except (EOFError, OSError):
            return  # the server is gone
        backoff = 0.05
        while True:
            # The fold reads and parses its group itself. A thread that read the next group
            # ahead while this one was written cost more than it saved: under load the
            # next group is mostly events that arrive during this fold, and the thread's
            # reads and parsing took the interpreter lock and the cores from the fold and
            # the server (docs/benchmarks.md).
            try:
                folded = fold_pending(engine, journal, fold_events)
            except StoreError as exc:
                log.warning("lineage fold failed, retrying: %s", exc)
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            finally:
                folds += 1
                if folds % _COLLECT_EVERY == 0:
                    _collect()
            if not ready:  # imported, connected, and a first group folded
                ready = True
                pipe.send("ready")
            for uuid, why in folded.refused.items():
                log.warning("lineage event %s refused by the fold: %s", uuid, why)
            if not len(folded):
                _collect()
                break
            pipe.send([*folded.folded, *folded.refused])
        if stop:
            pipe.send("bye")
            return


_COLLECT_EVERY = 16
_FOLD_CACHE_MB = 128


def _collect() -> None:
    """Collect cycles, then leave what survived out of later collections.

    A collection walks every object alive: the parsed events the fold keeps
    (:data:`~strata.lineage.ingest.runs.PARSED`, some 160,000 objects) cost each one 150-250 ms,
    taken whenever the queue ran empty, so while senders waited for the fold. Frozen
    objects are still freed when no longer referenced; only a cycle among them would
    outlive its use, and the fold's objects form next to none."""
    gc.collect()
    gc.freeze()


def _drain(wake: Connection) -> None:
    """Read every wake byte waiting (``wake`` does not block)."""
    with contextlib.suppress(BlockingIOError):
        while os.read(wake.fileno(), 4096):
            pass


def freeze_startup_objects() -> None:
    """Leave the objects a server process has at start out of the garbage collector's
    full collections. Modules, the app, the engines and their caches live as long as the
    process; left in, every full collection walks all of them (pauses of 50-100 ms were
    seen in a serving process under ingest load), stalling every request."""
    gc.collect()
    gc.freeze()


def journal_for(engine: Engine) -> Engine:
    """Where the writer queues acknowledged events: the store itself, or for a SQLite
    file ``meta.db`` the file ``meta.pending.db`` beside it (created on first use)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return engine
    path = Path(database)
    journal = create_engine(f"sqlite:///{path.with_name(path.stem + '.pending.db')}")
    s.lineage_pending.create(journal, checkfirst=True)
    return journal


def _answer(answers: list[Answer]) -> None:
    """Give each request its results (or the exception), those of coroutines in one
    call per event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Answer]] = {}
    for req, value in answers:
        if req.loop is not None:
            by_loop.setdefault(req.loop, []).append((req, value))
        elif req.future is not None:
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


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _parsed(item: Item) -> Event | StrataError:
    if isinstance(item, Event | StrataError):
        return item
    try:
        return parse_event(item)
    except StrataError as exc:
        return exc
