"""Marquez's DELETE of a namespace, a dataset or a job: soft deletes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from strata.api import views
from strata.api.contract import JOB_MOVED
from strata.api.deps import Eng, LakeRoot
from strata.api.redirects import job_uuid
from strata.lineage import deletes
from strata.store.engine import read_tx

router = APIRouter()


@router.delete("/namespaces/{namespace:seg}", tags=["Namespaces"])
def delete_namespace(eng: Eng, namespace: str) -> dict[str, Any]:
    """Hide a namespace with all its datasets and jobs; answers the namespace."""
    return views.namespace(deletes.hide_namespace(eng, namespace))


@router.delete("/namespaces/{namespace:seg}/datasets/{dataset:seg}", tags=["Datasets"])
def delete_dataset(eng: Eng, lake: LakeRoot, namespace: str, dataset: str) -> dict[str, Any]:
    """Hide a dataset until an event names it again; answers the dataset."""
    return views.dataset(deletes.hide_dataset(eng, namespace, dataset), lake)


@router.delete("/namespaces/{namespace:seg}/jobs/{job:seg}", tags=["Jobs"], responses=JOB_MOVED)
def delete_job(eng: Eng, namespace: str, job: str) -> dict[str, Any]:
    """Hide a job until an event for it arrives; answers the job."""
    with read_tx(eng) as conn:
        uuid = job_uuid(conn, namespace, job)  # old or simple names redirect, as for GET
    return views.job(deletes.hide_job(eng, uuid))
