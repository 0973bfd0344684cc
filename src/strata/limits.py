"""Limits every layer shares, so what one side accepts the other can read back.

Names are index keys in the store: longer than :data:`MAX_NAME_BYTES` of UTF-8 they could
not be indexed, and PostgreSQL text cannot hold a NUL character at all. JSON documents
nest at most :data:`MAX_JSON_DEPTH` levels: deeper, the C encoders and decoders every
layer uses (orjson writes at most 255) would each fail at a depth of their own.
"""

from __future__ import annotations

MAX_NAME_BYTES = 1024
MAX_JSON_DEPTH = 200


def name_problem(field: str, value: str) -> str | None:
    """Why ``value`` cannot be a name in the store, or None."""
    if not value:
        return f"{field} is empty; give it a name"
    if "\x00" in value:
        return f"{field} contains a NUL character; remove it"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        return f"{field} is {size:,} bytes of UTF-8; names are at most {MAX_NAME_BYTES:,} bytes"
    return None
