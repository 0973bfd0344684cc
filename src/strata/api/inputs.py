"""Limits on what a request may carry, checked before any of it reaches the store.

Names follow :mod:`strata.limits`. Times are stored as
fixed-width text with four-digit years, so they must fall in years 1000 to 9999 (in UTC).
Offsets are Java ints in Marquez; past that, SQLite cannot even bind them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from pydantic_core import PydanticCustomError

from strata.errors import InvalidArgument
from strata.limits import MAX_NAME_BYTES, name_problem
from strata.times import Zoneless, aware

MAX_OFFSET = 2**31 - 1
NO_NUL = "^[^\\u0000]*$"  # a JSON Schema pattern: no NUL character anywhere
NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"  # and something besides white space
# RFC 3339 with a four-digit year from 1000 (what the store writes): seconds required, a
# zone optional here (``at`` reads a time without one as the server's local time).
TIME_PATTERN = "^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
TIME_EXAMPLE = "2024-01-31T12:00:00Z"
# A date-time in a request body that is storable whatever its offset: years 1001 to 9998.
STORABLE_TIME_PATTERN = (
    "^(100[1-9]|10[1-9][0-9]|1[1-9][0-9]{2}|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-"
)
_EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)


def check_name(field: str, value: str) -> str:
    """``value`` if it can be a name in the store; else :class:`InvalidArgument`."""
    problem = name_problem(field, value)
    if problem is not None:
        raise InvalidArgument(problem, field=field, limit=MAX_NAME_BYTES)
    return value


def is_name(value: str) -> bool:
    """Whether :func:`check_name` accepts ``value``."""
    return name_problem("name", value) is None


def nul_path(value: Any, path: str = "$") -> str | None:
    """Where a NUL character is in a decoded JSON document (keys included), or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and "\x00" in key:
                return f"{path}.{key!r}"
            found = nul_path(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = nul_path(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


async def check_request(request: Request) -> None:
    """Every path parameter is a storable name; no query value holds a NUL character."""
    for field, value in request.path_params.items():
        if isinstance(value, str):
            check_name(field, value)
    for field, value in request.query_params.multi_items():
        if "\x00" in value:
            raise InvalidArgument(f"{field} contains a NUL character; remove it", field=field)


def time_problem(field: str, value: datetime) -> str | None:
    """Why ``value`` cannot be stored (outside years 1000 to 9999 once in UTC), or None."""
    try:
        in_range = value.year >= 1000 and (
            value.tzinfo is None or value.astimezone(UTC) >= _EARLIEST
        )
    except OverflowError:  # past year 9999 or before year 1 once in UTC
        in_range = False
    if in_range:
        return None
    return (
        f"{field} must fall in years 1000 to 9999 (UTC), got {value.isoformat()}; "
        f"send an ISO-8601 date-time such as {TIME_EXAMPLE}"
    )


def iso_text(value: Any) -> Any:
    """A query time as text in the documented form; pydantic alone would also take numbers
    (as Unix times) and dates without a time."""
    if isinstance(value, str) and not re.match(TIME_PATTERN, value):
        raise PydanticCustomError("datetime_format", "not an ISO-8601 date-time")
    return value


def check_time(field: str, value: datetime) -> datetime:
    """``value`` if :func:`time_problem` finds nothing; else :class:`InvalidArgument`."""
    problem = time_problem(field, value)
    if problem is not None:
        raise InvalidArgument(problem, field=field)
    return value


def aware_time(value: datetime | None, field: str) -> datetime | None:
    """A query time with its zone (one without is refused) and within range, or None."""
    return None if value is None else check_time(field, aware(value, Zoneless.REFUSED, field))
