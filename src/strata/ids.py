"""UUIDv7 identifiers: time-ordered, so primary-key indexes stay append-mostly."""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def uuid7() -> uuid.UUID:
    """A RFC 9562 version-7 UUID, monotonic within this process."""
    global _last_ms, _seq
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same (or earlier, clock stepped back) millisecond: keep order with a counter.
            ms = _last_ms
            _seq += 1
            if _seq > 0xFFF:
                ms += 1
                _seq = 0
        else:
            _seq = 0
        _last_ms = ms
        seq = _seq
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= seq << 64
    value |= 0b10 << 62
    value |= rand
    return uuid.UUID(int=value)


def new_id() -> str:
    """A fresh UUIDv7 as its canonical string."""
    return str(uuid7())


_STRATA_NS = uuid.UUID("8a1f4e2c-5b7d-4c3e-9f10-7a6b5c4d3e2f")


def stable_id(*parts: str) -> str:
    """A deterministic UUIDv5 of a natural key, so every writer derives the same id."""
    return str(uuid.uuid5(_STRATA_NS, "\x1f".join(parts)))
