"""The contract of the datasets family's transactions (``transactions``), on every
backend: a part opens OPEN and ends COMMITTED or ABORTED exactly once, the commit's close
changes nothing once gc aborted the part, abandoned parts are found by age, and a
version's transaction is read by joining the relation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import TransactionClosed
from strata.lake.service import Lake
from strata.store.owners.datasets import transactions as txns

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _row(lake: Lake, uuid: str) -> sa.Row[tuple[str, str, int | None]]:
    t = txns.relation("t")
    with lake.engine.connect() as conn:
        return conn.execute(
            sa.select(t.c.state, t.c.type, t.c.commit_id).where(t.c.uuid == uuid)
        ).one()


def test_a_part_opens_changes_type_and_commits_once(lake: Lake) -> None:
    txn = lake.start(["raw/a", "raw/b"], "APPEND")
    parts = [p.txn_uuid for p in txn._parts.values()]
    with lake.engine.connect() as conn:
        assert txns.states(conn, [*parts, "missing"]) == dict.fromkeys(parts, "OPEN")
    txn.set_type("raw/a", "SNAPSHOT")
    assert tuple(_row(lake, parts[0])) == ("OPEN", "SNAPSHOT", None)
    txn.write(pa.table({"x": [1]}), dataset="raw/a")
    txn.write(pa.table({"x": [2]}), dataset="raw/b")
    txn.commit()
    assert tuple(_row(lake, parts[0])) == ("COMMITTED", "SNAPSHOT", 1)
    # The close runs only on an OPEN part: run again, it changes nothing.
    with lake.engine.begin() as conn:
        again = conn.execute(txns.close(), {"txn_uuid": parts[1], "cid": 9, "now": AT})
        assert again.rowcount == 0
    assert tuple(_row(lake, parts[1])) == ("COMMITTED", "APPEND", 1)
    # A version's transaction is joined from the relation.
    t, dv = txns.relation("t"), sa.table("dataset_versions", sa.column("transaction_uuid"))
    with lake.engine.connect() as conn:
        q = sa.select(t.c.type).join_from(dv, t, t.c.uuid == dv.c.transaction_uuid)
        assert sorted(conn.execute(q).scalars()) == ["APPEND", "SNAPSHOT"]


def test_abort_takes_the_whole_group_and_gc_takes_abandoned_parts_by_age(lake: Lake) -> None:
    aborted = lake.start(["raw/a", "raw/b"])
    left = lake.start("raw/c")
    aborted.abort()
    group = [p.txn_uuid for p in aborted._parts.values()]
    (open_one,) = [p.txn_uuid for p in left._parts.values()]
    with lake.engine.connect() as conn:
        assert txns.states(conn, [*group, open_one]) == {
            group[0]: "ABORTED",
            group[1]: "ABORTED",
            open_one: "OPEN",
        }
    # Nothing started before a cutoff in the past; before one in the future, the open
    # part is abandoned (the aborted group's folders went with its abort).
    with lake.engine.begin() as conn:
        assert txns.abort_abandoned(conn, AT, AT) == []
    later = datetime.now(UTC) + timedelta(minutes=1)
    with lake.engine.begin() as conn:
        assert [u for u, _ in txns.abort_abandoned(conn, later, later)] == [open_one]
        txns.mark_cleaned(conn, [open_one], later)
        assert txns.abort_abandoned(conn, later, later) == []
    # The writer of the abandoned part finds it closed.
    left.write(pa.table({"x": [1]}))
    with pytest.raises(TransactionClosed):
        left.commit()
    with lake.engine.connect() as conn:
        assert txns.state_of(conn, open_one) == "ABORTED"
        assert txns.state_of(conn, "missing") is None
