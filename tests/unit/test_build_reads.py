"""How a run read its inputs: what the build writes on the run is what the catalog reads
back, typed, and a run the build did not make (or made before ranges were recorded) says
so instead of guessing."""

from __future__ import annotations

from strata.builds.execution.incremental import Plan, ReadRange
from strata.builds.execution.run_events import build_facets
from strata.builds.state.build_reads import BuildRead, InputRead, parse
from strata.lineage.record.facets import BUILD_FACET


def test_what_the_build_writes_reads_back_the_same() -> None:
    plan = Plan(
        "incremental",
        {"clicks": ReadRange("raw/clicks", 3, 5, 40), "users": ReadRange("raw/users", None, 2)},
        {"clean/out": 7, "clean/new": None},
    )
    facets = build_facets(plan.recorded())
    assert facets[BUILD_FACET]["read"]["raw/clicks"] == {"from": 3, "to": 5, "rows": 40}
    assert plan.read_json() == facets[BUILD_FACET]["read"]
    got = parse(facets)
    assert got == BuildRead(
        "incremental",
        {"raw/clicks": InputRead(3, 5, 40), "raw/users": InputRead(None, 2, None)},
        {"clean/out": 7, "clean/new": None},
    )
    assert got is not None and got.body() == {
        k: v for k, v in facets[BUILD_FACET].items() if not k.startswith("_")
    }


def test_a_run_the_build_did_not_make_or_an_older_facet_says_so() -> None:
    assert parse({}) is None
    assert parse({BUILD_FACET: "not a facet"}) is None
    older = parse({BUILD_FACET: {"mode": "full"}})
    assert older == BuildRead("full", None, {})  # no ranges recorded: it read every input whole
    # Values that are not commit ids are not taken for one.
    odd = parse({BUILD_FACET: {"read": {"a": {"from": "3", "to": True, "rows": 4}}}})
    assert odd == BuildRead("full", {"a": InputRead(None, None, 4)}, {})
