"""Deterministic ids: every row the ingest writes is named by its content.

Any arrival order of the same events must produce identical rows, so no id
here comes from a clock or a random source.
"""

from __future__ import annotations

import hashlib
import uuid
from functools import lru_cache

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


@lru_cache(maxsize=16384)
def job_version_uuid(job: str, fingerprint: str) -> str:
    return _name("job-version", job, fingerprint)


@lru_cache(maxsize=16384)
def event_uuid(payload_hash: str) -> str:
    return _name("event", payload_hash)


def run_state_uuid(run_uuid: str, payload_hash: str) -> str:
    return _name("run-state", run_uuid, payload_hash)
