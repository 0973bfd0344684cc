"""Which partitioned transforms run their due partitions as one Spark job: a declaration
read from ``Output(partition_local=...)``, with a default that follows the inputs."""

from __future__ import annotations

from typing import Any

import pytest

from strata import Input, Output, transform_df
from strata.builds.partitions.runs import runs_together
from strata.errors import PipelineError


def body(x: Any) -> Any:
    return x


def declared(output: Output, **inputs: Input) -> Any:
    return transform_df(output, **inputs)(body)


def to_day(key: dict[str, str]) -> dict[str, str]:
    return {"day": key["hour"][:10]}


def test_shared_keys_are_local_unless_declared_and_a_map_must_declare_it() -> None:
    assert declared(Output("m/a", partition_by=["day"]), x=Input("r/x")).partition_local
    off = Output("m/a", partition_by=["day"], partition_local=False)
    assert not declared(off, x=Input("r/x")).partition_local
    mapped = Input("r/x", partition_map=to_day)
    assert not declared(Output("m/a", partition_by=["day"]), x=mapped).partition_local
    on = Output("m/a", partition_by=["day"], partition_local=True)
    assert declared(on, x=mapped).partition_local


@pytest.mark.parametrize(
    ("output", "words"),
    [
        (Output("m/a", partition_by=["day"], partition_local="yes"), "must be True or False"),  # type: ignore[arg-type]
        (Output("m/a", partition_local=True), "partition_local is for partitioned outputs"),
    ],
    ids=["not-a-bool", "unpartitioned"],
)
def test_bad_partition_local_declarations_are_refused_by_name(output: Output, words: str) -> None:
    with pytest.raises(PipelineError, match=words):
        declared(output, x=Input("r/x"))


def test_outputs_of_one_transform_declare_one_partition_local() -> None:
    from strata import transform

    def two(a: Any, b: Any, x: Any) -> None: ...

    with pytest.raises(PipelineError, match="must declare one partition_local"):
        transform(
            a=Output("m/a", partition_by=["day"], partition_local=True),
            b=Output("m/b", partition_by=["day"]),
            x=Input("r/x"),
        )(two)


def test_only_several_partitions_of_a_local_transform_run_together_checked_or_not() -> None:
    from strata import Check, expectations

    local = declared(Output("m/a", partition_by=["day"]), x=Input("r/x"))

    class Item:
        transform = local

    assert runs_together(Item, ["day=1", "day=2"])  # type: ignore[arg-type]
    assert not runs_together(Item, ["day=1"])  # type: ignore[arg-type]
    checked = Output(
        "m/a", partition_by=["day"], checks=[Check(expectations.not_null("day"), "day set")]
    )
    Item.transform = declared(checked, x=Input("r/x"))
    assert runs_together(Item, ["day=1", "day=2"])  # type: ignore[arg-type]
    # Input checks are judged per partition before the job, output checks after it.
    day_set = [Check(expectations.not_null("day"), "day set")]
    Item.transform = declared(Output("m/a", partition_by=["day"]), x=Input("r/x", checks=day_set))
    assert runs_together(Item, ["day=1", "day=2"])  # type: ignore[arg-type]
    Item.transform = declared(
        Output("m/a", partition_by=["day"], partition_local=False), x=Input("r/x", checks=day_set)
    )
    assert not runs_together(Item, ["day=1", "day=2"])  # type: ignore[arg-type]
