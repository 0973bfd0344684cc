"""Soft deletes, as Marquez does them: the row is hidden, not removed.

A hidden dataset or job answers 404 and leaves lists and search; its versions, runs and
events stay. Any later event naming it (or, for a dataset, a new version) brings it back:
triggers in the store clear the flag (migrations 0005, 0007 and 0009 own them). Each
function returns the object as it was before it was hidden, which is what Marquez answers.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query import jobs as job_reads
from strata.lineage.query import namespaces as namespace_reads
from strata.store.engine import write_tx
from strata.store.owners import namespaces
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.namespaces import Namespace


def hide_dataset(engine: Engine, namespace: str, name: str) -> dataset_reads.Dataset:
    with write_tx(engine) as conn:
        namespace_reads.get_namespace(conn, namespace)
        dataset = dataset_reads.get_dataset(conn, namespace, name)
        dataset_rows.hide(conn, dataset.uuid)
    return dataset


def hide_job(engine: Engine, job_uuid: str) -> job_reads.Job:
    with write_tx(engine) as conn:
        job = job_reads.get_job(conn, job_uuid)
        job_rows.hide(conn, job_uuid)
    return job


def hide_namespace(engine: Engine, namespace: str) -> Namespace:
    """Hide the namespace and every dataset and job in it."""
    with write_tx(engine) as conn:
        found = namespace_reads.get_namespace(conn, namespace)
        dataset_rows.hide_namespace(conn, namespace)
        job_rows.hide_namespace(conn, namespace)
        namespaces.hide(conn, namespace)
    return found
