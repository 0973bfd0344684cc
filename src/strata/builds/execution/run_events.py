"""The builder's lineage: OpenLineage run events, ingested in process like any producer's.

Every event goes through :func:`strata.lineage.record.apply.record_event` (the build
catalog is the lineage model), and also to a remote OpenLineage server when openlineage-python is
configured the standard way (``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``, an
``openlineage.yml`` or ``OPENLINEAGE__TRANSPORT__*``): then the store is a transport put
first in the client's ``CompositeTransport`` (:mod:`strata.builds.execution.transports`). A remote
that fails is logged, not fatal: the store already holds the event.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from strata import collector
from strata.builds.state.build_reads import BuildRead
from strata.lineage.record.apply import record_batch, record_event
from strata.lineage.record.facets import BRANCH_FACET, BUILD_FACET, PROGRAM_FACET

if TYPE_CHECKING:
    from openlineage.client.client import OpenLineageClient
    from openlineage.client.transport.transport import Transport
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

PRODUCER = "urn:strata:build:0.1.0"
FACET_SCHEMA = "urn:strata:facets:1-0-0"


@dataclass(frozen=True)
class DatasetAt:
    """A lake dataset version as an event names it."""

    name: str
    commit_id: int | None  # None: not committed (yet)
    schema_fields: list[dict[str, Any]] = field(default_factory=list)
    rows: int | None = None
    size: int | None = None
    files: int | None = None
    read_from: int | None = None  # an input read as the rows added after this version
    # What its checks found (OpenLineage ``dataQualityAssertions`` entries), if any.
    assertions: tuple[dict[str, Any], ...] = ()
    # An output's OpenLineage ``columnLineage`` ``fields``, when derived from its plan.
    column_lineage: dict[str, Any] | None = None


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class RunSpec:
    """What every event of one run repeats: its job, parent and job facets."""

    run_id: str
    job: JobRef
    parent: tuple[str, JobRef] | None = None
    job_facets: dict[str, Any] = field(default_factory=dict)
    run_facets: dict[str, Any] = field(default_factory=dict)


READ_FACET = "strata_read"


def build_facets(how: BuildRead, branch: str = "main") -> dict[str, Any]:
    """The run facet saying how a transform run read its inputs: ``incremental`` (each
    input's ``(from, to]`` range; ``from`` null: read whole, and the output versions it
    built on) or ``full``; and, on a branch, which one it read and wrote."""
    out: dict[str, Any] = {
        BUILD_FACET: {
            "_producer": PRODUCER,
            "_schemaURL": f"{FACET_SCHEMA}/StrataBuildRunFacet.json",
            **how.body(),
        }
    }
    if branch != "main":
        out[BRANCH_FACET] = {
            "_producer": PRODUCER,
            "_schemaURL": f"{FACET_SCHEMA}/StrataBranchRunFacet.json",
            "name": branch,
        }
    return out


def program_facets(
    fingerprint: str, ordinal: int, transform: str, source: str, location: str
) -> dict[str, Any]:
    """Job facets of a transform run: its program version, source and kind."""
    return {
        PROGRAM_FACET: {
            "_producer": PRODUCER,
            "_schemaURL": f"{FACET_SCHEMA}/StrataProgramJobFacet.json",
            "fingerprint": fingerprint,
            "ordinal": ordinal,
            "transform": transform,
        },
        "sourceCode": _facet("SourceCodeJobFacet", language="python", sourceCode=source),
        "sourceCodeLocation": _facet("SourceCodeLocationJobFacet", type="file", url=location),
        "jobType": _facet(
            "JobTypeJobFacet", processingType="BATCH", integration="STRATA", jobType="TRANSFORM"
        ),
    }


def _facet(name: str, **fields: Any) -> dict[str, Any]:
    url = f"https://openlineage.io/spec/facets/1-0-1/{name}.json"
    return {"_producer": PRODUCER, "_schemaURL": url, **fields}


def _dataset(namespace: str, at: DatasetAt, output: bool) -> dict[str, Any]:
    facets: dict[str, Any] = {}
    if at.commit_id is not None:
        facets["version"] = _facet("DatasetVersionDatasetFacet", datasetVersion=str(at.commit_id))
    if at.schema_fields:
        fields = [{"name": f["name"], "type": f.get("type")} for f in at.schema_fields]
        facets["schema"] = _facet("SchemaDatasetFacet", fields=fields)
    out: dict[str, Any] = {"namespace": namespace, "name": at.name, "facets": facets}
    if at.read_from is not None and at.commit_id is not None:
        # The first and last version of the range read, for any OpenLineage consumer.
        out["inputFacets"] = {
            READ_FACET: {
                "_producer": PRODUCER,
                "_schemaURL": f"{FACET_SCHEMA}/StrataReadInputDatasetFacet.json",
                "fromVersion": str(at.read_from + 1),
                "toVersion": str(at.commit_id),
                "afterVersion": str(at.read_from),
            }
        }
    if at.assertions:
        facets["dataQualityAssertions"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/"
            "DataQualityAssertionsDatasetFacet.json",
            "assertions": list(at.assertions),
        }
    if output and at.column_lineage is not None:
        facets["columnLineage"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
            "fields": at.column_lineage,
        }
    if output and at.rows is not None:
        stats = {"rowCount": at.rows, "size": at.size, "fileCount": at.files}
        out["outputFacets"] = {
            "outputStatistics": _facet(
                "OutputStatisticsOutputDatasetFacet",
                **{k: v for k, v in stats.items() if v is not None},
            )
        }
    return out


def run_event(
    kind: str,
    spec: RunSpec,
    *,
    namespace: str,
    inputs: Sequence[DatasetAt] = (),
    outputs: Sequence[DatasetAt] = (),
    error: BaseException | None = None,
    trace: str | None = None,
    at: datetime | None = None,
) -> dict[str, Any]:
    """One spec-shaped OpenLineage RunEvent as a JSON document."""
    run_facets: dict[str, Any] = dict(spec.run_facets)
    if spec.parent is not None:
        parent_run, parent_job = spec.parent
        run_facets["parent"] = _facet(
            "ParentRunFacet",
            run={"runId": parent_run},
            job={"namespace": parent_job.namespace, "name": parent_job.name},
        )
    if error is not None:
        run_facets["errorMessage"] = _facet(
            "ErrorMessageRunFacet",
            message=f"{type(error).__name__}: {error}",
            programmingLanguage="python",
            stackTrace=trace,
        )
    return {
        "eventType": kind,
        "eventTime": (at or datetime.now(UTC)).isoformat(),
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": spec.run_id, "facets": run_facets},
        "job": {"namespace": spec.job.namespace, "name": spec.job.name, "facets": spec.job_facets},
        "inputs": [_dataset(namespace, i, False) for i in inputs],
        "outputs": [_dataset(namespace, o, True) for o in outputs],
    }


class Emitter:
    """Sends events to the store in process, and to a configured remote server too (as
    an OpenLineage-client composite transport, :mod:`strata.builds.execution.transports`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        remote = remote_client()
        self.transport: Transport | None = None
        if remote is not None:
            from strata.builds.execution.transports import with_remote

            self.transport = with_remote(engine, remote.transport)

    def emit(self, event: dict[str, Any]) -> None:
        if self.transport is None:
            record_event(self.engine, event)  # the usual case: no client to load
            return
        from strata.builds.execution.transports import emit

        emit(self.transport, event)

    def emit_all(self, events: Sequence[dict[str, Any]]) -> None:
        """Send ``events`` (a batch of partition runs' STARTs, say): to the store in one
        transaction; the first refused raises, as :meth:`emit` would."""
        if self.transport is not None or len(events) < 2:
            for event in events:
                self.emit(event)
            return
        for start in range(0, len(events), _BATCH):  # the writer lock is held per batch
            # Folding a batch allocates much and frees little (the fold process never
            # collects): here the collector spent most of its 0.25-0.55 s of a forced
            # rebuild of 1,095 partitions (docs/benchmarks.md, §B8, round eleven).
            with collector.paused():
                done = record_batch(self.engine, list(events[start : start + _BATCH]))
            refused = [r for r in done if isinstance(r, Exception)]
            if refused:
                raise refused[0]


_BATCH = 250


def _configured() -> bool:
    names = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG")
    if any(os.environ.get(n) for n in names) or os.path.exists("openlineage.yml"):
        return True
    home = os.path.join(os.path.expanduser("~/.openlineage"), "openlineage.yml")
    return os.path.exists(home) or any(k.startswith("OPENLINEAGE__") for k in os.environ)


def remote_client() -> OpenLineageClient | None:
    """The standard openlineage-python client, when it is configured; None otherwise
    (its default would print every event to the console)."""
    if not _configured() or os.environ.get("OPENLINEAGE_DISABLED", "").lower() == "true":
        return None
    from openlineage.client.client import OpenLineageClient

    return OpenLineageClient()
