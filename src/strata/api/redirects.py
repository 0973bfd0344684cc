"""Jobs addressed by an old or simple name: 301 to the FQN URL, or 300 with candidates."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy.engine import Connection

from strata.api.paths import url_segment
from strata.lineage.query import jobs as job_reads


class JobMoved(Exception):
    def __init__(self, resolution: job_reads.JobResolution) -> None:
        super().__init__(resolution.kind)
        self.resolution = resolution


def job_uuid(conn: Connection, namespace: str, name: str) -> str:
    """The job at ``/namespaces/{namespace}/jobs/{name}``; raises :class:`JobMoved` if elsewhere."""
    res = job_reads.resolve_job(conn, namespace, name)
    if res.kind != "found":
        raise JobMoved(res)
    assert res.job_uuid is not None
    return res.job_uuid


def _job_url(request: Request, namespace: str, name: str) -> str:
    # Path is /api/v1/namespaces/{ns}/jobs/{job}[/rest]; keep the rest and the query.
    parts = request.scope["path"].split("/")
    rest = "/".join(parts[7:])
    url = f"/api/v1/namespaces/{url_segment(namespace)}/jobs/{url_segment(name)}"
    if rest:
        url += "/" + rest
    if request.url.query:
        url += "?" + request.url.query
    return url


async def handle(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, JobMoved)
    res = exc.resolution
    if res.kind == "moved":
        assert res.namespace is not None and res.name is not None
        return RedirectResponse(_job_url(request, res.namespace, res.name), status_code=301)
    return JSONResponse(
        {
            "code": "ambiguous_job_name",
            "message": "several jobs have this name; pick one of the candidates",
            "details": {
                "candidates": [
                    {"namespace": ns, "name": n, "url": _job_url(request, ns, n)}
                    for ns, n in res.candidates
                ]
            },
        },
        status_code=300,
    )
