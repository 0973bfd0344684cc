"""The fold in a process of its own, hosted by a thread of the server's writer.

The process has its own interpreter lock, so folding does not slow the event loop and the
store thread down. The host thread starts it, relays what it folded, and starts another
when it dies; the queue it left is folded by the next. Work is signalled by writing one
byte, without blocking, to a pipe of its own: a byte already waiting is wake enough, so a
busy fold (a message per group, sent blocking, filled the pipe and stalled the store thread
and so every request) or a dead one (a shared ``multiprocessing.Event`` hung whoever set it
next) never holds the writer back.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from sqlalchemy.engine import Engine

from strata.errors import StoreError
from strata.lineage.record.apply import fold_pending
from strata.store.engine import create_engine

log = logging.getLogger(__name__)


class FoldProcess:
    """Hosts the fold process: :meth:`run` is the host thread's loop."""

    def __init__(
        self,
        engine: Engine,
        journal: Engine,
        fold_events: int,
        poll: float,
        *,
        on_ready: Callable[[], None],
        on_folded: Callable[[list[str]], None],
    ) -> None:
        self._engine = engine
        self._journal = journal
        self._fold_max = fold_events
        self._poll = poll
        self._on_ready = on_ready
        self._on_folded = on_folded
        self._pipe: Connection | None = None  # to the fold process
        self._remote_wake: Connection | None = None  # a byte here wakes it
        self._pipe_lock = threading.Lock()
        self._child: multiprocessing.process.BaseProcess | None = None

    def alive(self) -> bool:
        """Whether a fold process runs now (the host starts another when one dies)."""
        child = self._child
        return child is not None and child.is_alive()

    def wake(self) -> None:
        """Tell the process there is work, without blocking."""
        with self._pipe_lock:  # not closed while written to
            if self._remote_wake is not None:
                # Full: a wake is pending already. Broken: the process is gone, and the
                # host thread starts another.
                with contextlib.suppress(OSError):
                    os.write(self._remote_wake.fileno(), b"w")

    def stop(self) -> None:
        """Tell the process to stop after a last fold."""
        with self._pipe_lock:
            if self._pipe is not None:
                # A process that is gone cannot hear it; the host thread starts another.
                with contextlib.suppress(OSError):
                    self._pipe.send("stop")

    def run(self, stopping: Callable[[], bool]) -> None:
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
            self._child = child
            theirs.close()
            wake_in.close()
            with self._pipe_lock:
                self._pipe = ours
                self._remote_wake = wake_out
            if stopping():
                self.stop()
            self.wake()  # fold what an earlier process left
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
                self._on_ready()
                continue
            self._on_folded(list(message))


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
                if stop or _told_to_stop(pipe):  # what is queued stays for the next fold
                    pipe.send("bye")
                    return
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
            # Sent empty too: the host then looks up its events another server folded.
            pipe.send([*folded.folded, *folded.refused])
            if not len(folded):
                _collect()
                break
        if stop:
            pipe.send("bye")
            return


_COLLECT_EVERY = 16
_FOLD_CACHE_MB = 128


def _collect() -> None:
    """Collect cycles, then leave what survived out of later collections.

    A collection walks every object alive: the parsed events the fold keeps
    (:data:`~strata.lineage.record.parsed.PARSED`, some 160,000 objects) cost each one 150-250 ms,
    taken whenever the queue ran empty, so while senders waited for the fold. Frozen
    objects are still freed when no longer referenced; only a cycle among them would
    outlive its use, and the fold's objects form next to none."""
    gc.collect()
    gc.freeze()


def _told_to_stop(pipe: Connection) -> bool:
    """Whether the host asked the process to stop (or is gone)."""
    try:
        while pipe.poll(0):
            if pipe.recv() == "stop":
                return True
    except (EOFError, OSError):
        return True
    return False


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
