"""A row's values as JSON carries them, the same for the API and the command line."""

from __future__ import annotations

import base64
import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any


def json_value(x: Any, cut: int | None = None) -> Any:
    """``x`` as strict JSON carries it: times as ISO text, decimals and non-finite floats
    as text (JSON has no NaN), bytes as base64; ``cut``: text and bytes longer than that
    cut (for looking, not copying)."""
    if x is None or isinstance(x, bool | int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, str):
        return x if cut is None or len(x) <= cut else x[:cut] + "…"
    if isinstance(x, datetime | date | time):
        return x.isoformat()
    if isinstance(x, timedelta | Decimal):
        return str(x)
    if isinstance(x, bytes):
        return base64.b64encode(x if cut is None else x[:cut]).decode()
    if isinstance(x, dict):
        return {str(k): json_value(v, cut) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_value(v, cut) for v in x]
    return str(x)
