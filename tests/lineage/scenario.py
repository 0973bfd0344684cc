"""A multi-run story used by the order-independence tests."""

from __future__ import annotations

from typing import Any

from lineage_support import PRODUCER, at, dataset_event, ds, run_event

SCHEMA = {"schema": {"fields": [{"name": "id", "type": "INT"}, {"name": "v", "type": "TEXT"}]}}
CLL = {
    "columnLineage": {
        "fields": {
            "id": {"inputFields": [{"namespace": "lake", "name": "raw", "field": "id"}]},
            "total": {
                "inputFields": [
                    {
                        "namespace": "lake",
                        "name": "raw",
                        "field": "v",
                        "transformations": [{"type": "INDIRECT", "subtype": "AGGREGATION"}],
                    }
                ]
            },
        }
    }
}


def _symlinks(*names: tuple[str, str]) -> dict[str, Any]:
    """A ``symlinks`` facet naming ``db.source`` in each (namespace, type)."""
    return {"identifiers": [{"namespace": ns, "name": "db.source", "type": t} for ns, t in names]}


def story() -> list[dict[str, Any]]:
    raw = ds("lake", "raw", **SCHEMA)
    raw_v1 = ds("lake", "raw", version={"datasetVersion": "v1"}, **SCHEMA)
    ext = ds("ext", "source")
    return [
        # The parent run of a small DAG and its child task.
        run_event("START", 0, "dag", "dag"),
        run_event("OTHER", 2.5, "task", "dag.task", parent=("dag", "dag")),
        run_event("START", 3, "task", "dag.task", parent=("dag", "dag")),
        run_event(
            "RUNNING",
            4,
            "task",
            "dag.task",
            outputs=[
                {
                    **ds("lake", "task_out"),
                    "outputFacets": {
                        "outputStatistics": {
                            "_producer": PRODUCER,
                            "_schemaURL": PRODUCER,
                            "rowCount": 7,
                            "size": 70,
                        }
                    },
                }
            ],
        ),
        run_event("COMPLETE", 5, "task", "dag.task", outputs=[ds("lake", "task_out")]),
        run_event(
            "FAIL",
            30,
            "dag",
            "dag",
            run_facets={"errorMessage": {"message": "boom", "programmingLanguage": "python"}},
        ),
        # Two producers of lake/raw; the second completes before the consumer starts.
        run_event("START", 1, "p1", "producer", inputs=[ext], outputs=[raw_v1]),
        run_event("COMPLETE", 2, "p1", "producer", inputs=[ext], outputs=[raw_v1]),
        run_event("START", 10, "p2", "producer", inputs=[ext], outputs=[raw]),
        run_event(
            "COMPLETE",
            12,
            "p2",
            "producer",
            inputs=[ext],
            outputs=[raw],
            job_facets={"sourceCodeLocation": {"type": "git", "url": "https://git/x"}},
        ),
        # A consumer reading lake/raw, writing lake/agg with column lineage.
        run_event("START", 15, "c1", "consumer", inputs=[raw], outputs=[ds("lake", "agg", **CLL)]),
        run_event(
            "COMPLETE", 16, "c1", "consumer", inputs=[raw], outputs=[ds("lake", "agg", **CLL)]
        ),
        # A consumer that starts before any producer completed (binds the initial version).
        run_event("START", 0.5, "early", "early_reader", inputs=[ds("lake", "raw")]),
        run_event("COMPLETE", 0.7, "early", "early_reader", inputs=[ds("lake", "raw")]),
        # A failed producer: its output never becomes current.
        run_event("START", 20, "f1", "producer", inputs=[ext], outputs=[raw]),
        run_event("FAIL", 21, "f1", "producer", inputs=[ext], outputs=[raw]),
        # Version-facet bindings: one known, one never produced.
        run_event("COMPLETE", 25, "c2", "pinned", inputs=[raw_v1]),
        run_event(
            "COMPLETE",
            26,
            "c3",
            "pinned",
            inputs=[ds("lake", "raw", version={"datasetVersion": "v9"})],
        ),
        # A job first seen without a parent, later with one.
        run_event("COMPLETE", 6, "l1", "loose"),
        run_event("COMPLETE", 7, "l2", "loose", parent=("dag", "dag")),
        run_event("COMPLETE", 8, "l3", "loose"),
        # Static metadata.
        {
            "eventTime": at(8),
            "job": {"namespace": "ns", "name": "declared"},
            "inputs": [ds("lake", "agg")],
            "outputs": [ds("lake", "report")],
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent",
        },
        {
            "eventTime": at(11),
            "dataset": ds(
                "ext",
                "source",
                dataSource={"name": "warehouse", "uri": "s3://new"},
                symlinks=_symlinks(("hive", "TABLE")),
            ),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        },
        {
            "eventTime": at(9),
            "dataset": ds(
                "ext",
                "source",
                dataSource={"name": "warehouse", "uri": "s3://old"},
                symlinks=_symlinks(("hive", "VIEW"), ("glue", "TABLE")),
            ),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        },
        # The latest event naming the source gives no URL: it widens the source's times
        # but the URL stays the latest one said, whichever event came first.
        {
            "eventTime": at(12),
            "dataset": ds("ext", "source", dataSource={"name": "warehouse"}),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        },
        {
            "eventTime": at(9),
            "dataset": ds("lake", "raw", documentation={"description": "raw rows"}),
            "producer": PRODUCER,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        },
        # A version declared after p2's output and before c1 starts: c1 reads it.
        dataset_event(13, "lake", "raw", fields=["id"]),
    ]
