"""The contract of the column lineage owner (``column_lineage``), on every backend: the
fold keeps each output version's edges as its last run's ``columnLineage`` said, the
reads of edges alone see them, a statement that joins them to datasets stays one
statement, and retention's delete takes exactly the versions it names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.datasets import columns as edges

AT = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCER = "https://example.com/tests"
WRITER = "01890000-0000-7000-8000-000000000001"
PLAIN = "01890000-0000-7000-8000-000000000002"


def _lineage(**fields: list[str]) -> dict[str, Any]:
    """A ``columnLineage`` facet: each output field from these fields of ``ns.a``."""
    spec = {
        out: {
            "inputFields": [
                {
                    "namespace": "ns",
                    "name": "a",
                    "field": f,
                    "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
                }
                for f in inputs
            ]
        }
        for out, inputs in fields.items()
    }
    return {"columnLineage": {"_producer": PRODUCER, "_schemaURL": PRODUCER, "fields": spec}}


def _event(run: str, output: str, minutes: int, facets: dict[str, Any]) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": (AT + timedelta(minutes=minutes)).isoformat(),
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": f"make_{output}"},
        "inputs": [{"namespace": "ns", "name": "a"}],
        "outputs": [{"namespace": "ns", "name": output, "facets": facets}],
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _versions(engine: sa.Engine) -> dict[str, str]:
    """Dataset name -> the uuid of its one version."""
    dv, d = s.dataset_versions, s.datasets
    with engine.connect() as conn:
        q = sa.select(d.c.name, dv.c.uuid).join(d, d.c.uuid == dv.c.dataset_uuid)
        return {str(n): str(u) for n, u in conn.execute(q)}


def _edges(conn: sa.Connection) -> set[tuple[str, str, str]]:
    """(output version, output field, input field) of every stored edge."""
    cl = edges.relation("cl")
    q = sa.select(cl.c.dataset_version_uuid, cl.c.output_field, cl.c.input_field)
    return {(str(v), str(o), str(i)) for v, o, i in conn.execute(q)}


def test_the_fold_keeps_a_versions_edges_and_the_reads_see_them(engine: sa.Engine) -> None:
    record_event(engine, _event(WRITER, "t", 1, _lineage(y=["x"], z=["x", "w"])))
    record_event(engine, _event(PLAIN, "u", 2, {}))
    v = _versions(engine)
    with engine.connect() as conn:
        assert _edges(conn) == {(v["t"], "y", "x"), (v["t"], "z", "x"), (v["t"], "z", "w")}
        assert edges.output_fields(conn, v["t"]) == {"y", "z"}
        assert edges.output_fields(conn, v["u"]) == set()
        assert edges.with_lineage(conn, [v["t"], v["u"], v["a"]]) == {v["t"]}
        # Composed into a caller's statement from the versions' side.
        dv = s.dataset_versions
        q = sa.select(dv.c.uuid).where(edges.recorded_for(dv.c.uuid))
        assert conn.execute(q).scalars().all() == [v["t"]]
        # Joined to the input dataset's name in one statement.
        cl, d = edges.relation("cl"), s.datasets
        named = sa.select(cl.c.output_field, d.c.name, cl.c.input_field, cl.c.transformation_type)
        rows = conn.execute(
            named.join(d, d.c.uuid == cl.c.input_dataset_uuid).order_by(
                cl.c.output_field, cl.c.input_field
            )
        ).all()
        assert rows == [
            ("y", "a", "x", "DIRECT"),
            ("z", "a", "w", "DIRECT"),
            ("z", "a", "x", "DIRECT"),
        ]


def test_replace_keeps_exactly_the_new_edges_and_delete_takes_only_its_versions(
    engine: sa.Engine,
) -> None:
    record_event(engine, _event(WRITER, "t", 1, _lineage(y=["x"])))
    record_event(engine, _event(PLAIN, "u", 2, _lineage(k=["x"])))
    v = _versions(engine)
    with engine.connect() as conn:
        cl = edges.relation("cl")
        q = sa.select(cl).where(cl.c.dataset_version_uuid == v["t"])
        (row,) = conn.execute(q).mappings()
    moved = {**row, "output_field": "y2"}
    with engine.begin() as conn:
        edges.replace(conn, [v["t"]], [moved])
    with engine.connect() as conn:
        assert _edges(conn) == {(v["t"], "y2", "x"), (v["u"], "k", "x")}
    with engine.begin() as conn:
        edges.replace(conn, [v["t"]], [])
        edges.replace(conn, [], [])
    with engine.connect() as conn:
        assert _edges(conn) == {(v["u"], "k", "x")}
    with engine.begin() as conn:
        edges.replace(conn, [], [moved])
        edges.delete_of_versions(conn, [v["u"], v["a"]])
    with engine.connect() as conn:
        assert _edges(conn) == {(v["t"], "y2", "x")}


def test_the_relation_reads_but_cannot_write() -> None:
    with pytest.raises(AttributeError):
        edges.relation("cl").insert()  # type: ignore[attr-defined]
