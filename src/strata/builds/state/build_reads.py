"""How a transform run read its inputs, as the build catalog keeps it.

The build names it on the run (the ``strata_build`` run facet: mode, each input's read
range, the outputs' versions before the run) and the catalog reads it back typed here,
the one place that knows the facet's shape; the writer takes its body from
:meth:`BuildRead.body`, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strata.lineage.record.facets import BUILD_FACET


@dataclass(frozen=True)
class InputRead:
    """One input read as ``(after, upto]``, or whole (``after`` None)."""

    after: int | None
    upto: int | None
    rows: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {"from": self.after, "to": self.upto, "rows": self.rows}


@dataclass(frozen=True)
class BuildRead:
    """A run's ``mode`` (``full`` or ``incremental``), how it read each input dataset
    (None: not recorded, a build before ranges were: it read every input whole) and
    each output's version before it (None: none)."""

    mode: str
    read: dict[str, InputRead] | None
    previous: dict[str, int | None]

    def body(self) -> dict[str, Any]:
        """The facet's fields as the run carries them."""
        return {
            "mode": self.mode,
            "read": {k: r.to_dict() for k, r in (self.read or {}).items()},
            "previous": dict(self.previous),
        }


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _input(value: Any) -> InputRead:
    got = value if isinstance(value, Mapping) else {}
    return InputRead(_int(got.get("from")), _int(got.get("to")), _int(got.get("rows")))


def parse(facets: Mapping[str, Any]) -> BuildRead | None:
    """The build read a run's facets carry; None for a run the build did not make."""
    facet = facets.get(BUILD_FACET)
    if not isinstance(facet, Mapping):
        return None
    read = facet.get("read")
    previous = facet.get("previous")
    return BuildRead(
        str(facet.get("mode") or "full"),
        {str(k): _input(v) for k, v in read.items()} if isinstance(read, Mapping) else None,
        {str(k): _int(v) for k, v in previous.items()} if isinstance(previous, Mapping) else {},
    )
