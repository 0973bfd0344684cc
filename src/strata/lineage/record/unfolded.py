"""Events this process stored that the fold has not folded yet, and who waits for them.

Each stored event gets the next number; a read waits until every number up to the last
one given before it is folded. Events are folded out of order (a refused one is released
at once), so "folded up to" is one less than the oldest number still waiting.

On a store shared by several servers another server's fold may take this one's events;
its own fold then never reports them. :meth:`Unfolded.overtaken` names the events whose
fold must be looked up in the store: those committed to the queue and older than the
oldest this process saw folded, since a fold takes the queue oldest first.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass

from strata.lineage.record.events import Event

log = logging.getLogger(__name__)


@dataclass
class _Waiter:
    upto: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]


class Unfolded:
    """The numbered events not yet folded; every method but :meth:`barrier` and
    :meth:`wait_folded` is called under :attr:`state`."""

    def __init__(self) -> None:
        self.state = threading.Condition()
        self.seq = 0  # the number of the last event stored
        self.committed = 0  # every number up to this one is in the queue (or released)
        # payload hash -> number, in insertion order; for a fold thread also the parsed
        # event (a fold process cannot use it: it reads the events from the queue).
        self.numbers: dict[str, int] = {}
        self.parsed: dict[str, Event] = {}
        self._waiters: list[_Waiter] = []

    def __len__(self) -> int:
        return len(self.numbers)

    def add(self, event: Event, *, keep_parsed: bool) -> bool:
        """Number ``event`` unless it waits already; True if it was numbered."""
        if event.payload_hash in self.numbers:
            return False
        self.seq += 1
        self.numbers[event.payload_hash] = self.seq
        if keep_parsed:
            self.parsed[event.payload_hash] = event
        return True

    def mark_committed(self, upto: int) -> None:
        """The events numbered up to ``upto`` are committed to the queue."""
        self.committed = max(self.committed, upto)

    def overtaken(self, folded: list[str]) -> list[str]:
        """The committed events still waiting that are older than the oldest of
        ``folded`` this process numbered, or all committed ones when ``folded`` holds
        none of this process's (the queue was empty, or held other servers' events
        only): another server's fold may have taken them."""
        mine = [n for h in folded if (n := self.numbers.get(h)) is not None]
        below = min(mine) if mine else self.committed + 1
        out = []
        for h, n in self.numbers.items():  # in number order
            if n >= below or n > self.committed:
                break
            out.append(h)
        return out

    def folded_upto(self) -> int:
        """Every event numbered up to this one is folded (or refused)."""
        if not self.numbers:
            return self.seq
        # Numbers are given in insertion order, so the oldest entry left holds the least
        # (a min() over thousands of waiting events ran for every group and every read).
        return next(iter(self.numbers.values())) - 1

    def release(self, hashes: list[str]) -> None:
        """Forget folded (or refused) events and wake who waited for them."""
        for h in hashes:
            self.numbers.pop(h, None)
            self.parsed.pop(h, None)
        done = self.folded_upto()
        ready = [w for w in self._waiters if w.upto <= done]
        self._waiters = [w for w in self._waiters if w.upto > done]
        for w in ready:
            w.loop.call_soon_threadsafe(_resolve, w.future)
        self.state.notify_all()

    async def barrier(self, timeout: float) -> None:
        """Return once every event numbered before the call is folded (or after
        ``timeout`` seconds, when the fold cannot reach the store: the read then shows
        what is folded)."""
        with self.state:
            upto = self.seq
            if self.folded_upto() >= upto:
                return
            loop = asyncio.get_running_loop()
            waiter = _Waiter(upto, loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.future, timeout)
        except TimeoutError:
            log.warning("read went ahead of the lineage fold after %.0f s", timeout)

    def wait_folded(self, timeout: float | None) -> bool:
        """Block until every event numbered so far is folded; False on timeout."""
        with self.state:
            upto = self.seq
            return self.state.wait_for(lambda: self.folded_upto() >= upto, timeout)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
