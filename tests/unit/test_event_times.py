"""Event times as stored text: fixed width, so string order is time order."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.lineage.record.events import iso


def test_iso_is_fixed_width_and_sorts_as_time() -> None:
    times = [
        datetime(119, 3, 4, 5, 6, 7, 8, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 11, 25, 8, 0, tzinfo=UTC),
        datetime(2026, 11, 25, 8, 0, 0, 1, tzinfo=UTC),
    ]
    texts = [iso(t) for t in times]
    assert texts[0] == "0119-03-04T05:06:07.000008Z"
    assert texts[2] == "2026-11-25T08:00:00.000000Z"  # no fraction is still six digits
    assert iso(datetime(5, 1, 2, tzinfo=UTC)) == "0005-01-02T00:00:00.000000Z"
    assert {len(t) for t in texts} == {27}
    assert sorted(texts) == texts
    assert [datetime.fromisoformat(t) for t in texts] == times
