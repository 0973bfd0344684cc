"""The contract of the datasets family's versions (``dataset_versions``), on every
backend: the lake's commit and the fold write versions through the owner, a synthetic
version is told apart from the rest, and each write changes exactly the versions it
names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import sqlalchemy as sa

from strata import ids
from strata.lake.service import Lake
from strata.lineage.record.apply import record_event
from strata.store.owners.datasets import versions
from strata.store.owners.runs import inputs as bound

AT = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCER = "https://example.com/tests"
WRITER = "01890000-0000-7000-8000-000000000001"


def _rows(engine: sa.Engine) -> dict[str, dict[str, Any]]:
    dv = versions.relation("dv")
    cols = (dv.c.uuid, dv.c.commit_id, dv.c.run_uuid, dv.c.purged_by, dv.c.created_at)
    with engine.connect() as conn:
        synthetic = versions.is_synthetic(dv).label("synthetic")
        found = conn.execute(sa.select(*cols, synthetic)).mappings().all()
    return {str(r["uuid"]): dict(r) for r in found}


def _reader(run: str, reads: str) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": AT.isoformat(),
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": "reader"},
        "inputs": [{"namespace": "ns", "name": reads}],
        "outputs": [{"namespace": "ns", "name": "made"}],
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def test_commits_and_the_fold_write_versions_through_the_owner(lake: Lake) -> None:
    txn = lake.start("raw/a")
    txn.write(pa.table({"x": [1]}))
    commit = txn.commit()
    record_event(lake.engine, _reader(WRITER, "seen"))
    rows = _rows(lake.engine)
    assert rows[commit.uuid]["commit_id"] == 1 and not rows[commit.uuid]["synthetic"]
    made = ids.output_version_uuid(WRITER, ids.dataset_uuid("ns", "made"))
    assert rows[made]["run_uuid"] == WRITER and not rows[made]["synthetic"]
    # What the reader read of a dataset nothing recorded stands in as a synthetic version.
    (stand_in,) = [u for u, r in rows.items() if r["synthetic"]]
    assert stand_in not in (commit.uuid, made)
    with lake.engine.begin() as conn:
        versions.set_producer(conn, commit.uuid, WRITER)
        # Added again with other values: the stored row stays.
        later = {"uuid": stand_in, "dataset_uuid": ids.dataset_uuid("ns", "seen")}
        versions.add_missing(conn, [{**later, "created_at": AT + timedelta(days=1)}])
        versions.update(conn, [{"uuid": made, "created_at": AT - timedelta(days=1)}])
        versions.upsert(conn, [])
    rows = _rows(lake.engine)
    assert rows[commit.uuid]["run_uuid"] == WRITER and not rows[commit.uuid]["synthetic"]
    assert rows[stand_in]["created_at"] == AT
    assert rows[made]["created_at"] == AT - timedelta(days=1)


def test_deletes_unlinks_and_purges_take_exactly_what_they_name(lake: Lake) -> None:
    for _ in range(3):
        txn = lake.start("raw/a")
        txn.write(pa.table({"x": [1]}))
        txn.commit()
    record_event(lake.engine, _reader(WRITER, "seen"))
    made = ids.output_version_uuid(WRITER, ids.dataset_uuid("ns", "made"))
    (stand_in,) = [u for u, r in _rows(lake.engine).items() if r["synthetic"]]
    dataset = ids.dataset_uuid(lake.namespace, "raw/a")
    with lake.engine.begin() as conn:
        versions.unlink(conn, [made, "missing"])
        versions.mark_purged(conn, dataset, [1, 2, 99], AT, "keep-last-1")
        bound.delete_of_runs(conn, [WRITER])  # the binding that holds the stand-in
        versions.delete(conn, [stand_in])
    rows = _rows(lake.engine)
    assert stand_in not in rows and made in rows and rows[made]["run_uuid"] is None
    purged = sorted(r["commit_id"] for r in rows.values() if r["purged_by"] == "keep-last-1")
    assert purged == [1, 2]
