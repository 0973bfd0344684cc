"""Deterministic ids: every row the ingest writes is named by its content.

Any arrival order of the same events must produce identical rows, so no id
here comes from a clock or a random source.
"""

from __future__ import annotations

import uuid

_ROOT = uuid.UUID("6f1c3f0e-5b7a-4d2e-9a51-3c2f8e7d4b10")
_SEP = "\x00"


def _name(*parts: str) -> str:
    return str(uuid.uuid5(_ROOT, _SEP.join(parts)))


def dataset_uuid(namespace: str, name: str) -> str:
    return _name("dataset", namespace, name)


def job_uuid(namespace: str, name: str) -> str:
    """A job is keyed by the namespace and the name its events use."""
    return _name("job", namespace, name)


def output_version_uuid(run_uuid: str, dataset: str) -> str:
    return _name("output", run_uuid, dataset)


def initial_version_uuid(dataset: str) -> str:
    return _name("initial", dataset)


def named_version_uuid(dataset: str, label: str) -> str:
    return _name("named", dataset, label)


def job_version_uuid(job: str, fingerprint: str) -> str:
    return _name("job-version", job, fingerprint)


def event_uuid(payload_hash: str) -> str:
    return _name("event", payload_hash)


def run_state_uuid(run_uuid: str, payload_hash: str) -> str:
    return _name("run-state", run_uuid, payload_hash)
