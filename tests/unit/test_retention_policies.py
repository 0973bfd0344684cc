"""Retention policies as strata.toml declares them: what each rule keeps, and one clear
error per mistake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from strata.errors import ConfigError
from strata.retention import policies, selection
from strata.retention.selection import FileSpan, VersionFacts
from strata.settings import Settings

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def test_retention_tables_load_from_strata_toml(tmp_path: Path) -> None:
    config = tmp_path / "strata.toml"
    config.write_text(
        '[[retention]]\ndatasets = ["raw/*"]\nkeep_versions = 48\nkeep_days = 30\ngrace = "12h"\n'
        '[[retention]]\nname = "snapshots"\ndatasets = "metrics/*"\nkeep_days = 7\n'
        'types = ["snapshot"]\nprotect_inputs = false\n'
    )
    found = policies.load(Settings.load(config).retention)
    assert [p.to_dict() for p in found] == [
        {
            "name": "raw/*",
            "datasets": ["raw/*"],
            "keep_versions": 48,
            "keep_days": 30.0,
            "grace_seconds": 43200.0,
            "types": None,
            "protect_inputs": True,
        },
        {
            "name": "snapshots",
            "datasets": ["metrics/*"],
            "keep_versions": None,
            "keep_days": 7.0,
            "grace_seconds": 7 * 86400.0,
            "types": ["SNAPSHOT"],
            "protect_inputs": False,
        },
    ]
    assert policies.policy_for(found, "raw/clicks") is found[0]
    assert policies.policy_for(found, "metrics/daily") is found[1]
    assert policies.policy_for(found, "clean/clicks") is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"keep_days": 3}, r'needs datasets = \["raw/\*"\]'),
        ({"datasets": ["raw/*"]}, "keeps nothing: give keep_versions = N, keep_days = N"),
        ({"datasets": ["raw/*"], "keep_versions": 0}, "keep_versions is 0; give a whole number"),
        ({"datasets": ["raw/*"], "keep_days": "30"}, "keep_days is '30'; give a number of days"),
        (
            {"datasets": ["raw/*"], "keep_days": 1, "grace": "7 days"},
            "grace is '7 days', which is not a duration",
        ),
        ({"datasets": ["raw/*"], "keep_days": 1, "types": ["MERGE"]}, r"types holds \['MERGE'\]"),
        (
            {"datasets": ["raw/*"], "keep_days": 1, "protect_inputs": "no"},
            "protect_inputs is 'no'; write true or false",
        ),
        ({"datasets": ["raw/*"], "keep_days": 1, "keep": 3}, r"unknown key\(s\) \['keep'\]"),
    ],
)
def test_each_mistake_is_named(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        policies.load([table])


def test_two_policies_of_one_name_are_refused() -> None:
    with pytest.raises(ConfigError, match="two \\[\\[retention\\]\\] policies are named 'raw'"):
        policies.load([{"name": "raw", "datasets": "a/*", "keep_days": 1}] * 2)


def test_retention_must_be_tables(tmp_path: Path) -> None:
    config = tmp_path / "strata.toml"
    config.write_text('retention = "raw/*"\n')
    with pytest.raises(
        ConfigError, match=r"retention in .* must be tables: write \[\[retention\]\]"
    ):
        Settings.load(config)


def test_durations() -> None:
    assert [policies.parse_duration(t, "grace") for t in ("0s", "90m", "1.5h", "7d", "2w")] == [
        0.0,
        5400.0,
        5400.0,
        604800.0,
        1209600.0,
    ]


def versions(*kinds: str, days_old: int = 0) -> list[VersionFacts]:
    at = NOW - timedelta(days=days_old)
    return [VersionFacts(i, at + timedelta(minutes=i), k) for i, k in enumerate(kinds, start=1)]


def test_the_current_view_and_either_rule_keep_a_version() -> None:
    p = policies.Policy("p", ("*",), keep_versions=2)
    daily = versions("SNAPSHOT", "APPEND", "SNAPSHOT", "APPEND", "APPEND")
    assert selection.view_start(daily) == 3
    assert selection.selected(p, daily, set(), NOW) == [1, 2]
    assert selection.selected(p, daily, {2}, NOW) == [1]  # protected: pinned or in use
    assert selection.selected(p, versions("APPEND", "APPEND", "APPEND"), set(), NOW) == []
    recent = policies.Policy("p", ("*",), keep_versions=1, keep_days=10)
    old = versions("SNAPSHOT", "SNAPSHOT", "SNAPSHOT", days_old=30)
    assert selection.selected(recent, old, set(), NOW) == [1, 2]
    assert (
        selection.selected(recent, versions("SNAPSHOT", "SNAPSHOT", days_old=5), set(), NOW) == []
    )


def test_a_file_is_freed_only_when_no_kept_version_reads_it() -> None:
    files = [FileSpan("a", 10, 1, 3), FileSpan("b", 20, 2, None), FileSpan("c", 30, 3, 5)]
    assert [f.path for f in selection.freed(files, [1, 3, 5])] == []
    assert [f.path for f in selection.freed(files, [2, 5])] == ["c"]
    assert [f.path for f in selection.freed(files, [3, 5])] == ["a"]
    assert [f.path for f in selection.freed(files, [5])] == ["a", "c"]
    by = selection.attribute(selection.freed(files, [5]), [1, 2, 3, 4])
    assert {v: [f.path for f in fs] for v, fs in by.items()} == {2: ["a"], 4: ["c"]}


def test_an_incremental_cause_says_retention_purged_part_of_the_range() -> None:
    from strata.builds.staleness.causes import Cause, CauseKind

    detail = {"built_from": 1, "current": 3, "version": 2, "type": "PURGED"}
    cause = Cause("clean/clicks", CauseKind.INPUT_REWRITTEN, "raw/clicks", detail)
    assert cause.describe() == (
        "input raw/clicks: retention purged version 2 (1 → 3), so the next build runs whole"
    )
