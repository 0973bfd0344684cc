"""The datasets owner's contract, on every backend: the symlinks datasets were given,
kept whatever the order of the events (the largest type stays), never removed, and
found again by the name they give."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.datasets import symlinks as datasets

AT = datetime(2026, 1, 1, tzinfo=UTC).isoformat()


def _event(run: str, links: list[dict[str, str]]) -> dict[str, Any]:
    facet = {
        "_producer": "https://example.com/tests",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
        "identifiers": links,
    }
    return {
        "eventType": "COMPLETE",
        "eventTime": AT,
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": "etl"},
        "outputs": [{"namespace": "s3://b", "name": "/t", "facets": {"symlinks": facet}}],
        "producer": "https://example.com/tests",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _dataset(engine: sa.Engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(sa.select(s.datasets.c.uuid)).scalar_one())


def test_the_fold_keeps_every_symlink_a_dataset_was_given(engine: sa.Engine) -> None:
    hive = {"namespace": "hive://h", "name": "db.t", "type": "TABLE"}
    record_event(engine, _event("01890000-0000-7000-8000-000000000001", [hive]))
    other = {"namespace": "hive://h", "name": "db.t2", "type": "TABLE"}
    record_event(engine, _event("01890000-0000-7000-8000-000000000002", [other]))
    uuid = _dataset(engine)
    with engine.connect() as conn:
        links = datasets.of_dataset(conn, uuid)
        d = s.datasets
        found = conn.execute(
            sa.select(d.c.name).where(d.c.uuid.in_(datasets.symlinked("hive://h", "db.t")))
        ).scalars()
        assert list(found) == ["/t"]
        assert conn.execute(datasets.symlinked("hive://h", "none")).first() is None
    assert links == {("hive://h", "db.t"): "TABLE", ("hive://h", "db.t2"): "TABLE"}


def test_the_largest_type_stays_in_any_order(engine: sa.Engine) -> None:
    record_event(engine, _event("01890000-0000-7000-8000-000000000001", []))
    uuid = _dataset(engine)
    for order in (["TABLE", "VIEW", None], [None, "VIEW", "TABLE"]):
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM dataset_symlinks"))
            for kind in order:
                datasets.add_symlinks(conn, {(uuid, "hive://h", "db.t"): kind})
            datasets.add_symlinks(conn, {})
        with engine.connect() as conn:
            assert datasets.of_dataset(conn, uuid) == {("hive://h", "db.t"): "VIEW"}
