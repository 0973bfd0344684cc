"""A version's first rows as JSON, read without Spark, for pages and scripts."""

from __future__ import annotations

from typing import Any

from strata.errors import InvalidName, NotFound
from strata.lake.service import Lake
from strata.lake.values import json_value

MAX_ROWS = 1000
_MAX_TEXT = 2000  # a cell longer than this is cut: a preview is for looking, not copying


def preview(lake: Lake, dataset: str, version: int | None, rows: int) -> dict[str, Any]:
    """``{"dataset", "version", "columns": [{name, type}], "rows": [[…]], "totalRows"}``."""
    try:
        v, table = lake.head(dataset, rows, version)
    except InvalidName as exc:  # a path names a dataset: one that cannot exist is not found
        raise NotFound(f"no dataset {dataset!r} in the lake: {exc}", dataset=dataset) from exc
    columns = [{"name": f.name, "type": str(f.type)} for f in table.schema]
    values = [[json_value(x, _MAX_TEXT) for x in row.values()] for row in table.to_pylist()]
    return {
        "dataset": dataset,
        "version": v.commit_id,
        "branch": v.branch,
        "columns": columns,
        "rows": values,
        "totalRows": v.row_count,
    }
