"""``strata changes``: what changed between two times, as the morning's page shows it,
checked against the store, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from build_support import Project, clicks, users

from ol_events import run_event
from strata.lineage.record.apply import record_event

pytestmark = pytest.mark.spark


def changes(p: Project, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = p.json("changes", *args, "--pipeline", str(p.folder))
    return found


def test_changes_name_new_versions_failed_runs_and_what_is_out_of_date(project: Project) -> None:
    p = project
    start = datetime.now(UTC) - timedelta(seconds=1)
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 120)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.edit(
        'joined = clicks.join(users, "user")',
        "joined = clicks.join(users, \"user\")\n        assert False, 'boom'",
    )
    assert p.json("build", "--all", "--pipeline", str(p.folder), code=1)["state"] == "FAILED"

    found = changes(p, "--since", start.isoformat())
    # Every dataset the store says gained a version since then, each once.
    made = p.rows(
        "SELECT d.name, count(*) FROM dataset_versions v JOIN datasets d "
        "ON d.uuid = v.dataset_uuid WHERE v.created_at >= :s GROUP BY d.name",
        s=start,
    )
    assert {v["name"]: v["count"] for v in found["versions"]} == dict(made)
    assert {"raw/clicks", "clean/clicks", "report/countries"} <= set(dict(made))
    # The runs by state, as the store holds them, and the failed ones by job.
    states = p.rows(
        "SELECT state, count(*) FROM runs WHERE created_at >= :s GROUP BY state", s=start
    )
    assert found["runs"]["states"] == dict(states) and found["runs"]["states"]["FAILED"] >= 3
    failed = {f["job"]["name"] for f in found["runs"]["failed"]}
    assert failed == {"shop", "shop.fast_per_user", "shop.slow_per_user"}
    # What the failure left out of date, with why.
    stale = {d["name"]: d for d in found["outOfDate"]}
    assert {"metrics/fast_per_user", "metrics/slow_per_user", "report/users"} <= set(stale)
    assert "clean/clicks" not in stale
    assert stale["report/users"]["causes"][0]["kind"] == "never_built"

    # A range after it all holds nothing; one that ends before it starts is refused.
    later = changes(p, "--since", datetime.now(UTC).isoformat())
    assert later["versions"] == [] and later["runs"]["total"] == 0
    code, _, err = p.cli("changes", "--since", "2026-02-01", "--until", "2026-01-01")
    assert code == 1 and "--since 2026-02-01T00:00:00+00:00 is after --until" in err


def test_changes_print_tables_for_a_person(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40)))
    code, out, err = p.cli("changes", "--pipeline", str(p.folder))
    assert code == 0, err
    assert "What changed" in out and "datasets with new versions (1)" in out
    assert "raw/clicks" in out and "v1" in out
    assert "out of date now" in out and "clean/clicks" in out


def test_changes_in_one_namespace_leave_the_others_out(project: Project) -> None:
    p = project
    own = p.settings.namespace
    start = datetime.now(UTC) - timedelta(seconds=1)
    p.append("raw/clicks", clicks(("ada", 40)))
    at = datetime.now(UTC).isoformat()
    foreign = run_event("FAIL", job="dbt_orders", namespace="dbt", at=at, outputs=["dbt|orders"])
    record_event(p.lake.engine, foreign)

    ours = changes(p, "--since", start.isoformat(), "--namespace", own)
    theirs = changes(p, "--since", start.isoformat(), "--namespace", "dbt")
    every = changes(p, "--since", start.isoformat())
    assert {(v["namespace"], v["name"]) for v in ours["versions"]} == {(own, "raw/clicks")}
    assert {(v["namespace"], v["name"]) for v in theirs["versions"]} == {("dbt", "orders")}
    assert {v["name"] for v in every["versions"]} == {"raw/clicks", "orders"}
    assert theirs["runs"]["states"] == {"FAILED": 1} and ours["runs"]["total"] == 0
    assert [f["job"]["name"] for f in theirs["runs"]["failed"]] == ["dbt_orders"]
    # What is out of date now is Strata's own: none of it in the other namespace.
    assert "clean/clicks" in {d["name"] for d in ours["outOfDate"]}
    assert theirs["outOfDate"] == []

    code, out, err = p.cli("changes", "--namespace", "dbt", "--pipeline", str(p.folder))
    assert code == 0, err
    assert "What changed in dbt" in out and "dbt:orders" in out and "raw/clicks" not in out
    code, _, err = p.cli("changes", "--namespace", "nosuch")
    assert code == 1 and "namespace 'nosuch' not found" in err
