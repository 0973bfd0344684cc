"""Every id Strata makes, in one place.

- Fresh ids (:func:`new_id`) are UUIDv7s: time-ordered, so primary-key indexes stay
  append-mostly.
- Names (:func:`dataset_uuid`, :func:`job_uuid` and the rest) are UUIDv5s of a row's
  natural key: every writer (the lake, the lineage fold, the build service) derives the
  same id for the same thing, and any arrival order of the same events gives identical
  rows, so no name comes from a clock or a random source.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from functools import lru_cache

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


_ROOT = uuid.UUID("6f1c3f0e-5b7a-4d2e-9a51-3c2f8e7d4b10")
_ROOT_BYTES = _ROOT.bytes
_SEP = "\x00"


def _name(*parts: str) -> str:
    """``str(uuid.uuid5(_ROOT, parts joined))``, without building a UUID object (ingest
    names every row it writes, so this runs many times per event)."""
    digest = bytearray(hashlib.sha1(_ROOT_BYTES + _SEP.join(parts).encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@lru_cache(maxsize=65536)
def dataset_uuid(namespace: str, name: str) -> str:
    return _name("dataset", namespace, name)


@lru_cache(maxsize=65536)
def job_uuid(namespace: str, name: str) -> str:
    """A job is keyed by the namespace and the name its events use."""
    return _name("job", namespace, name)


# A fold names the same event, run output and job version several times (its row, its
# state history, bindings, the previous fold): the recent names are kept.
@lru_cache(maxsize=16384)
def output_version_uuid(run_uuid: str, dataset: str) -> str:
    return _name("output", run_uuid, dataset)


def initial_version_uuid(dataset: str) -> str:
    return _name("initial", dataset)


def named_version_uuid(dataset: str, label: str) -> str:
    return _name("named", dataset, label)


def declared_version_uuid(dataset: str, content: str) -> str:
    """The version a DatasetEvent declares: one per dataset and content digest."""
    return _name("declared", dataset, content)


@lru_cache(maxsize=16384)
def job_version_uuid(job: str, fingerprint: str) -> str:
    return _name("job-version", job, fingerprint)


@lru_cache(maxsize=16384)
def event_uuid(payload_hash: str) -> str:
    return _name("event", payload_hash)


def run_state_uuid(run_uuid: str, payload_hash: str) -> str:
    return _name("run-state", run_uuid, payload_hash)


def parent_run_uuid(namespace: str, job_name: str, run_id: str) -> str:
    """A parent facet's run id as a UUID: itself when it is one. Older Airflow
    integrations sent the DAG run's own id instead (``scheduled__2022-04-25T00:20:00+00:00``);
    such an id becomes, as Marquez makes it, the name-based (MD5) UUID of
    ``namespace.dag.run_id``, ``dag`` being the parent job's name up to its last dot."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        dag = job_name.rsplit(".", 1)[0]
        return str(uuid.uuid3(uuid.NAMESPACE_URL, f"{namespace}.{dag}.{run_id}"))
