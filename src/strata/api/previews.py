"""A version's first rows as JSON, read without Spark, for pages and scripts."""

from __future__ import annotations

import base64
import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from strata.errors import InvalidName, NotFound
from strata.lake.service import Lake

MAX_ROWS = 1000
_MAX_TEXT = 2000  # a cell longer than this is cut: a preview is for looking, not copying


def preview(lake: Lake, dataset: str, version: int | None, rows: int) -> dict[str, Any]:
    """``{"dataset", "version", "columns": [{name, type}], "rows": [[…]], "totalRows"}``."""
    try:
        v, table = lake.head(dataset, rows, version)
    except InvalidName as exc:  # a path names a dataset: one that cannot exist is not found
        raise NotFound(f"no dataset {dataset!r} in the lake: {exc}", dataset=dataset) from exc
    columns = [{"name": f.name, "type": str(f.type)} for f in table.schema]
    values = [[json_value(x) for x in row.values()] for row in table.to_pylist()]
    return {
        "dataset": dataset,
        "version": v.commit_id,
        "branch": v.branch,
        "columns": columns,
        "rows": values,
        "totalRows": v.row_count,
    }


def json_value(x: Any) -> Any:
    """A value JSON can carry and a browser can show: times as ISO text, decimals and
    non-finite floats as text, bytes as base64, long text cut."""
    if x is None or isinstance(x, bool | int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, str):
        return x if len(x) <= _MAX_TEXT else x[:_MAX_TEXT] + "…"
    if isinstance(x, datetime | date | time):
        return x.isoformat()
    if isinstance(x, timedelta):
        return str(x)
    if isinstance(x, Decimal):
        return str(x)
    if isinstance(x, bytes):
        return base64.b64encode(x[:_MAX_TEXT]).decode()
    if isinstance(x, dict):
        return {str(k): json_value(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_value(v) for v in x]
    return str(x)
