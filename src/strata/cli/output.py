"""Printing data for people (rich tables) or machines (``--json``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from strata.lake.registry import Version

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=_default, ensure_ascii=False) + "\n")


def emit_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """The title on its own line, then the table; long cells wrap, never squeezed to "…"."""
    console.print(Text(title, style="bold"), soft_wrap=True)
    console.print(make_table(columns, rows))


def make_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table()
    for col in columns:
        # A header keeps its words whole; values fold when even a word is too wide.
        table.add_column(col, overflow="fold", min_width=max(len(w) for w in col.split()))
    for row in rows:
        table.add_row(*["" if v is None else _cell(v) for v in row])
    return table


def emit_versions(dataset: str, versions: Sequence[Version]) -> None:
    """A dataset's version history as a table (with what each did to which partitions,
    when partitioned)."""
    partitioned = any(v.partitions is not None for v in versions)
    purged = any(v.purged_at is not None for v in versions)
    branched = any(v.branch != "main" for v in versions)
    emit_table(
        f"versions of {dataset}",
        ["version", "committed at", "type", "rows", "files", "content hash"]
        + (["branch"] if branched else [])
        + (["partitions"] if partitioned else [])
        + (["retention"] if purged else []),
        [
            (v.commit_id, v.committed_at, v.type, v.row_count, v.file_count, v.content_hash[:12])
            + ((v.branch,) if branched else ())
            + ((partition_words(v.partitions, shown=0),) if partitioned else ())
            + ((purge_words(v),) if purged else ())
            for v in versions
        ],
    )


def size_words(count: int) -> str:
    """``1.2 MB``: a byte count as a person reads it."""
    size = float(count)
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def purge_words(v: Version) -> str:
    """``purged 2026-11-29 by raw/*``, or nothing for a kept version."""
    if v.purged_at is None:
        return ""
    return f"purged {v.purged_at.date().isoformat()} by {v.purged_by}"


def partition_words(summary: Mapping[str, Sequence[str]] | None, shown: int = 2) -> str:
    """``2 added (region=JP/day=…, …), 1 replaced (…)``: what a version did to partitions."""
    if not summary:
        return ""
    parts = []
    for kind in ("added", "appended", "replaced", "removed"):
        keys = list(summary.get(kind, []))
        if keys:
            more = ", …" if len(keys) > shown else ""
            listed = f" ({', '.join(keys[:shown])}{more})" if shown else ""
            parts.append(f"{len(keys)} {kind}{listed}")
    return "; ".join(parts) or "none"


def _cell(value: Any) -> str:
    if isinstance(value, datetime):
        # A space, not "T": a narrow column wraps between date and time.
        return value.isoformat(sep=" ", timespec="milliseconds")
    return str(value)
