"""The contract of the datasets family's interval index (``dataset_files``), on every
backend: commits add containers and mark the ones they replace, the live set is chosen by
partition key, by path or whole, and retention's moves and purges change exactly the
containers they name, once."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import sqlalchemy as sa

from strata.lake.service import Lake
from strata.store.owners.datasets import files

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _index(lake: Lake, dataset_uuid: str) -> dict[str, tuple[int, int | None, str | None, bool]]:
    """path -> (added, removed, archive root, purged) of every container of a dataset."""
    f = files.relation("f")
    cols = (f.c.path, f.c.added_commit_id, f.c.removed_commit_id, f.c.archive_uri, f.c.purged_at)
    with lake.engine.connect() as conn:
        rows = conn.execute(sa.select(*cols).where(f.c.dataset_uuid == dataset_uuid)).all()
    return {r[0]: (r[1], r[2], r[3], r[4] is not None) for r in rows}


def test_commits_add_and_remove_and_the_live_set_is_chosen_by_key_or_path(lake: Lake) -> None:
    txn = lake.start("out/t", "SNAPSHOT", partition_by=["region"])
    txn.write(pa.table({"region": ["EU", "US", "EU"], "x": [1, 2, 3]}))
    first = txn.commit()
    uuid = first.dataset_uuid
    with lake.engine.connect() as conn:
        every = files.live(conn, uuid)
        eu = files.live(conn, uuid, keys=["region=EU"])
        assert {r.partition_key for r in every} == {"region=EU", "region=US"}
        assert [r.partition_key for r in eu] == ["region=EU"]
        assert sum(r.rows for r in every) == 3
        assert files.live(conn, uuid, keys=[]) == []
        one = files.live(conn, uuid, paths=[eu[0].path, "nowhere"])
        assert [r.path for r in one] == [eu[0].path]
    # Replacing one partition removes its containers alone, at the new commit.
    txn = lake.start("out/t", "SNAPSHOT", partitions=[{"region": "EU"}])
    txn.write(pa.table({"region": ["EU"], "x": [4]}))
    txn.commit()
    index = _index(lake, uuid)
    assert index[eu[0].path] == (1, 2, None, False)
    assert sorted(v[:2] for p, v in index.items() if p != eu[0].path) == [(1, None), (2, None)]
    with lake.engine.begin() as conn:
        files.mark_removed(conn, uuid, 3, paths=["nowhere"])
        files.add(conn, [])
    assert _index(lake, uuid) == index


def test_moves_and_purges_change_exactly_what_they_name(lake: Lake) -> None:
    txn = lake.start("raw/a")
    txn.write(pa.table({"x": [1]}))
    uuid = txn.commit().dataset_uuid
    (path,) = _index(lake, uuid)
    with lake.engine.begin() as conn:
        # Held elsewhere than said: not moved.
        assert not files.move(conn, uuid, path, "file:///archive", None)
        assert files.move(conn, uuid, path, None, "file:///archive")
        assert not files.move(conn, uuid, path, None, "file:///other")
    assert _index(lake, uuid)[path] == (1, None, "file:///archive", False)
    with lake.engine.begin() as conn:
        files.mark_purged(conn, uuid, [path, "nowhere"], AT)
        # A purged container moves no more.
        assert not files.move(conn, uuid, path, "file:///archive", None)
    assert _index(lake, uuid)[path] == (1, None, "file:///archive", True)
