"""The delta log (`transaction_files`) records exactly what each commit added and removed."""

from __future__ import annotations

import pyarrow as pa
import sqlalchemy as sa

from strata.lake.service import Lake
from strata.settings import Settings
from strata.store.schema import transaction_files


def _log(lake: Lake, txn_uuid: str) -> set[tuple[str, str, int]]:
    with lake.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                transaction_files.c.op, transaction_files.c.path, transaction_files.c.rows
            ).where(transaction_files.c.txn_uuid == txn_uuid)
        ).all()
    return {(r.op, r.path, r.rows) for r in rows}


def test_each_commit_logs_its_adds_and_removes(settings: Settings) -> None:
    lake = Lake(settings)
    with lake.transaction("raw/log", type="APPEND") as txn:
        a = txn.write(pa.table({"n": [1, 2]}))[0]
        b = txn.write(pa.table({"n": [3]}))[0]
    assert _log(lake, txn.uuid) == {("ADD", a.path, 2), ("ADD", b.path, 1)}

    with lake.transaction("raw/log", type="UPDATE") as txn:
        c = txn.write(pa.table({"n": [4, 5, 6]}))[0]
        txn.remove(a.path)
    assert _log(lake, txn.uuid) == {("ADD", c.path, 3), ("REMOVE", a.path, 2)}

    with lake.transaction("raw/log", type="SNAPSHOT") as txn:
        d = txn.write(pa.table({"n": [7]}))[0]
    assert _log(lake, txn.uuid) == {
        ("ADD", d.path, 1),
        ("REMOVE", b.path, 1),
        ("REMOVE", c.path, 3),
    }

    with lake.transaction("raw/log", type="DELETE") as txn:
        txn.remove(d.path)
    assert _log(lake, txn.uuid) == {("REMOVE", d.path, 1)}
    assert lake.version("raw/log").row_count == 0
