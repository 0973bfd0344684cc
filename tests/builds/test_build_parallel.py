"""Builds with several transforms at once, and lineage sent to a remote OpenLineage
server as well as to the store."""

from __future__ import annotations

from typing import Any

import pytest
from build_support import Project, clicks, users

pytestmark = pytest.mark.spark


def test_jobs_build_independent_branches_at_once_and_events_reach_a_remote(
    project: Project,
    collector: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = collector
    monkeypatch.setenv("OPENLINEAGE_URL", url)
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    report = p.json("build", "--all", "--jobs", "3", "--pipeline", str(p.folder))
    assert report["state"] == "COMPLETED"
    assert {t["outcome"] for t in report["transforms"]} == {"built"}
    spans = {
        name: (start, end)
        for name, start, end in p.rows(
            "SELECT j.name, r.started_at, r.ended_at FROM runs r JOIN jobs j "
            "ON j.uuid = r.job_uuid WHERE j.name LIKE 'shop.%'"
        )
    }
    # Each transform started after the transforms it reads from had ended.
    assert spans["shop.split"][0] >= spans["shop.clean_clicks"][1]
    assert spans["shop.user_report"][0] >= max(
        spans["shop.slow_per_user"][1], spans["shop.fast_per_user"][1]
    )
    # clean_users and clean_clicks do not depend on each other: they overlapped.
    a, b = spans["shop.clean_users"], spans["shop.clean_clicks"]
    assert a[0] < b[1] and b[0] < a[1]

    # The same events went to the remote server: a START and a COMPLETE per transform run,
    # and the parent pipeline run's.
    events = [r["event"] for r in received]
    assert all(r["path"] == "/api/v1/lineage" for r in received)
    kinds = sorted((e["job"]["name"], e["eventType"]) for e in events)
    assert kinds.count(("shop.split", "START")) == 1
    assert kinds.count(("shop.split", "COMPLETE")) == 1
    assert ("shop", "COMPLETE") in kinds
    done = next(
        e for e in events if e["job"]["name"] == "shop.split" and e["eventType"] == "COMPLETE"
    )
    versions = {o["name"]: o["facets"]["version"]["datasetVersion"] for o in done["outputs"]}
    assert versions == {"clicks/slow": "1", "clicks/fast": "1"}
    stored = p.scalar("SELECT count(*) FROM lineage_events")
    assert stored == len(events)
