"""A partitioned output's status, found per group of equal build records, says for each
partition exactly what assessing it alone says."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from strata import Input, Output, transform_df
from strata.builds.partitions import planning
from strata.builds.programs.discovery import Declared
from strata.store.owners.partition_builds import PartitionBuild

DAYS = [f"day=2026-01-{d:02d}" for d in range(1, 31)]


def body(x: Any, w: Any) -> Any:
    return x


def declared() -> Declared:
    t = transform_df(Output("m/o", partition_by=["day"]), x=Input("r/x"), w=Input("r/w"))(body)
    return Declared(t, "p", "o", Path("."), None, "fp-now", Path("p.py"))  # type: ignore[arg-type]


def scenario(rng: random.Random) -> tuple[planning.Layout, dict[str, PartitionBuild], Any]:
    plan = planning.Layout(("day",), whole=("r/w",))
    for key in DAYS[:25]:
        plan.sources[key] = {"r/x": [key]}
    shared = {"r/x": 3, "r/w": 2}  # one mapping object, as the catalog read shares it
    variants = [
        shared,
        dict(shared),  # equal, another object
        {"r/x": 5, "r/w": 2},
        {"r/x": 3},  # an input added since
        {"r/x": 3, "r/w": 1},  # the whole input newer since
    ]
    built = {}
    for key in rng.sample(DAYS, 22):  # some fed now and never built, some built, not fed
        inputs = rng.choice(variants)
        program = rng.choice(["fp-now", "fp-now", "fp-old"])
        built[key] = PartitionBuild(key, 9, "run", program, inputs)
    changed = {"r/x": {k: rng.choice([1, 3, 4, 6]) for k in DAYS[:25]}}
    upstream: dict[str, set[str] | bool] = {}
    if rng.random() < 0.3:
        upstream["r/x"] = set(rng.sample(DAYS, 3))
    if rng.random() < 0.1:
        upstream["r/w"] = True
    now = planning.Inputs({"r/x": 8, "r/w": rng.choice([1, 2])}, changed, upstream)
    return plan, built, now


@pytest.mark.parametrize("seed", range(40))
def test_grouped_status_equals_each_partition_assessed_alone(seed: int) -> None:
    rng = random.Random(seed)
    item = declared()
    plan, built, now = scenario(rng)
    found = planning.partition_status(item, "m/o", plan, built, now)
    alone = [
        planning.PartitionStatus(k, planning._causes(item, "m/o", k, plan, built.get(k), now))
        for k in sorted(set(plan.sources) | set(built))
    ]
    assert found == alone
    # Every built partition found fresh is found so by its group, none one by one.
    fresh_built = {p.key for p in alone if not p.stale and p.key in built}
    assert planning._surely_fresh(item, plan, built, now) == fresh_built


def test_the_scenarios_hold_fresh_and_stale_partitions_of_every_kind() -> None:
    kinds = set()
    fresh = 0
    for seed in range(40):
        plan, built, now = scenario(random.Random(seed))
        found = planning.partition_status(declared(), "m/o", plan, built, now)
        kinds |= {c.kind.value for p in found for c in p.causes}
        fresh += sum(not p.stale for p in found)
    assert fresh > 100
    assert kinds >= {
        "never_built",
        "program_changed",
        "input_added",
        "input_newer",
        "input_partition_newer",
        "upstream_stale",
    }
