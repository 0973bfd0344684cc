"""Times without a zone: each policy gives what its caller documents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from strata.errors import InvalidArgument
from strata.times import Zoneless, aware

NAIVE = datetime(2026, 11, 25, 12, 30)


def test_a_time_with_a_zone_keeps_it_under_every_policy() -> None:
    tokyo = NAIVE.replace(tzinfo=timezone(timedelta(hours=9)))
    assert all(aware(tokyo, policy) is tokyo for policy in Zoneless)


def test_zoneless_read_as_utc_or_as_the_servers_zone() -> None:
    assert aware(NAIVE, Zoneless.UTC) == NAIVE.replace(tzinfo=UTC)
    local = aware(NAIVE, Zoneless.LOCAL)
    assert local.tzinfo is not None
    assert local.replace(tzinfo=None) == NAIVE  # the wall time kept, the zone added
    assert local.utcoffset() == datetime.now().astimezone().utcoffset()


def test_zoneless_refused_names_the_field() -> None:
    with pytest.raises(InvalidArgument, match="asOf must carry a time zone") as info:
        aware(NAIVE, Zoneless.REFUSED, "asOf")
    assert info.value.details["field"] == "asOf"
