"""Times without a zone: each caller names what such a time means to it.

OpenLineage events and the CLI read a zone-less time as UTC (the spec's clients send
UTC); the Marquez write API reads it as the server's local zone, as Marquez does; the
lineage graph's as-of refuses it, since guessing would move the answer by hours.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum

from strata.errors import InvalidArgument


class Zoneless(Enum):
    """What a time without a zone is taken to be."""

    UTC = "utc"
    LOCAL = "local"  # the server's own zone
    REFUSED = "refused"


def aware(value: datetime, zoneless: Zoneless, name: str = "time") -> datetime:
    """``value`` with a zone: its own, or the one ``zoneless`` names (or an error)."""
    if value.tzinfo is not None:
        return value
    if zoneless is Zoneless.UTC:
        return value.replace(tzinfo=UTC)
    if zoneless is Zoneless.LOCAL:
        return value.replace(tzinfo=datetime.now().astimezone().tzinfo)
    raise InvalidArgument(f"{name} must carry a time zone, e.g. 2024-01-01T00:00:00Z", field=name)
