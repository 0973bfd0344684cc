"""Lineage derived once per plan: a plan's signature ignores what Spark renumbers and
the files its leaves read, and changes with anything that could change its lineage;
a build of a known plan derives nothing, in this process or a new one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from build_support import SHOP, Project, clicks, project_of, users

from strata.builds.columns import plan_cache, plan_lineage
from strata.settings import Settings

pytestmark = pytest.mark.spark  # builds run Spark in the test's process


def _plan(df: Any) -> Any:
    return df._jdf.queryExecution().analyzed()


def test_a_signature_names_the_plan_not_its_files_nor_its_ids(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    for n in (1, 2):
        spark.range(5 * n).select("id", (F.col("id") * n).alias("v")).write.parquet(
            str(tmp_path / f"v{n}")
        )

    def step(folder: str, factor: int = 2, name: str = "w") -> Any:
        df = spark.read.parquet(str(tmp_path / folder))
        return df.where(F.col("v") > 0).select("id", (F.col("v") * factor).alias(name))

    first = step("v1")
    sig = plan_cache.signature(_plan(first), first.columns)
    # Another version's files, read again (Spark gives every attribute a new id).
    assert plan_cache.signature(_plan(step("v2")), first.columns) == sig
    # A literal, a name or a column list that differs: another plan.
    assert plan_cache.signature(_plan(step("v1", factor=3)), first.columns) != sig
    renamed = step("v1", name="x")
    assert plan_cache.signature(_plan(renamed), renamed.columns) != sig
    assert plan_cache.signature(_plan(first), ["id", "other"]) != sig
    # What is kept reads back as what was derived.
    derived = plan_lineage.derive_plan(_plan(first), first.columns)
    assert derived is not None and derived[0]
    assert plan_lineage.decode(plan_lineage.encode(derived)) == derived


@pytest.fixture
def shop(settings: Settings, tmp_path: Path) -> Any:
    with project_of(settings, tmp_path, SHOP) as p:
        p.append("raw/clicks", clicks(("ada", 50), ("ada", 500), ("bob", 120)))
        p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
        yield p


def _lineage(p: Project, dataset: str) -> Any:
    from strata.lineage.query import datasets

    with p.lake.engine.connect() as conn:
        return datasets.get_dataset(conn, p.lake.namespace, dataset).facets.get("columnLineage")


def test_a_rebuild_of_known_plans_derives_nothing(
    shop: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = plan_lineage.derive_plan
    derived: list[str] = []

    def counting(plan: Any, names: Any) -> Any:
        derived.append(",".join(names))
        return real(plan, names)

    monkeypatch.setattr(plan_lineage, "derive_plan", counting)
    plan_cache.forget()
    folder = str(shop.folder)
    shop.json("build", "--pipeline", folder, "--all")
    # Eight outputs, seven plans: the two per-user metrics run one function on the two
    # branches' clicks, so their plans differ only in the files they read.
    assert sorted(derived) == sorted(
        ["user,ms"] * 3
        + ["user,country", "country,users", "user,country,clicks", "user,country,slow,fast"]
    )
    for branch in ("slow", "fast"):
        fields = _lineage(shop, f"metrics/{branch}_per_user")["fields"]
        assert {i["name"] for i in fields["clicks"]["inputFields"]} >= {f"clicks/{branch}"}
    first = _lineage(shop, "report/users")
    assert first and first["fields"]

    # New data, same programs: nothing derived, in this process or (memory gone) another.
    for forget in (False, True):
        derived.clear()
        if forget:
            plan_cache.forget()
        shop.append("raw/clicks", clicks(("cy", 700)))
        shop.append("raw/users", users(("cy", "CY")))
        shop.json("build", "--pipeline", folder, "--all")
        assert derived == []
        assert _lineage(shop, "report/users")["fields"] == first["fields"]

    # A program that changed: its plan is derived, the others' are not.
    shop.edit(
        'return users.groupBy("country").agg(F.count("*").alias("users"))',
        'return users.groupBy("country").agg(F.countDistinct("user").alias("users"))',
    )
    shop.json("build", "--pipeline", folder, "--all")
    assert derived == ["country,users"]
