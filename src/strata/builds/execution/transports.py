"""Lineage sent beyond the store: the store is an OpenLineage-client ``Transport``, put
first in the client's own ``CompositeTransport`` beside the transport the user configured.

Imported only when a remote is configured (openlineage-python is loaded then anyway).
The store must take every event: its failure stops the emission and is raised as it
was. A remote's failure is logged and the build goes on: the store holds the event.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from openlineage.client.transport.composite import CompositeConfig, CompositeTransport
from openlineage.client.transport.transport import Transport

from strata.lineage.record.apply import record_event

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


class StoreTransport(Transport):
    """Events into Strata's own store, folded at once (the build reads them next)."""

    kind = "strata_store"
    name = "strata store"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def emit(self, event: Any) -> None:
        record_event(self.engine, event)


class Tolerant(Transport):
    """Another server: an event it refuses, or an outage, is logged, not raised."""

    def __init__(self, remote: Transport) -> None:
        self.remote = remote
        self.kind, self.name = remote.kind, remote.name

    def emit(self, event: Any) -> Any:
        try:
            return self.remote.emit(event)
        except Exception as exc:
            log.warning("could not send lineage event to %s: %s", self.remote.kind, exc)
            return None

    def close(self, timeout: float = -1) -> bool:
        return self.remote.close(timeout)


class _Given(CompositeTransport):
    """A composite of transports already made (the store needs its engine, which a
    transport config cannot carry)."""

    def __init__(self, transports: list[Transport]) -> None:
        self._given = transports
        # Fail fast: the store goes first, and a remote never raises (``Tolerant``).
        config = CompositeConfig(transports=[], continue_on_failure=False)
        super().__init__(config)

    @property
    def transports(self) -> list[Transport]:
        return self._given


def with_remote(engine: Engine, remote: Transport) -> Transport:
    """The store, then ``remote``, as one transport."""
    return _Given([StoreTransport(engine), Tolerant(remote)])


def emit(transport: Transport, event: dict[str, Any]) -> None:
    """Send ``event``; the store's own error comes out as the store raised it."""
    try:
        transport.emit(event)  # type: ignore[arg-type]  # serialised as documents are
    except RuntimeError as exc:
        if isinstance(exc.__cause__, Exception) and isinstance(transport, _Given):
            raise exc.__cause__ from None
        raise
