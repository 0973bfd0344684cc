"""Status says what a dataset is: a declared input that is not there is missing, a
dataset no loaded pipeline writes any more is orphaned, a renamed transform says so."""

from __future__ import annotations

from typing import Any

import pytest
from build_support import Project, users

pytestmark = pytest.mark.spark


def _status(p: Project) -> dict[str, dict[str, Any]]:
    out = p.json("status", "--pipeline", str(p.folder))
    return {d["name"]: d for d in out["datasets"]}


def test_a_declared_input_that_does_not_exist_is_missing(project: Project) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK")))
    st = _status(p)
    # raw/clicks was never written: missing, not fresh; what reads it says why.
    assert (st["raw/clicks"]["kind"], st["raw/clicks"]["state"]) == ("missing", "missing")
    missing = {"kind": "input_missing", "input": "raw/clicks"}
    assert {**missing, "text": "input raw/clicks does not exist"} in st["clean/clicks"]["causes"]
    assert st["raw/users"]["state"] == "fresh"
    code, out, _ = p.cli("status", "--pipeline", str(p.folder))
    assert code == 0
    line = next(x for x in out.splitlines() if "raw/clicks" in x and "missing" in x)
    assert "fresh" not in line


def test_a_dataset_no_pipeline_declares_now_is_orphaned_and_a_rename_says_so(
    project: Project,
) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.json("build", "clean/users", "report/countries", "--pipeline", str(p.folder))

    # countries is deleted from the pipeline: what it built is orphaned, not raw.
    text = p.pipeline.read_text()
    start = text.index('@transform_df(Output("report/countries")')
    p.pipeline.write_text(text[:start])
    st = _status(p)
    assert st["report/countries"]["kind"] == "orphaned"
    assert st["report/countries"]["state"] == "orphaned"
    assert st["report/countries"]["transform"] == "shop.countries"

    # clean_users renamed, code unchanged: "renamed from", not a program change.
    p.edit("def clean_users(users):", "def tidy_users(users):")
    st = _status(p)
    causes = st["clean/users"]["causes"]
    assert {c["kind"] for c in causes} == {"renamed"}, causes
    assert causes[0]["from"] == "shop.clean_users" and causes[0]["to"] == "shop.tidy_users"
    code, out, _ = p.cli("status", "--pipeline", str(p.folder))
    assert code == 0 and "renamed" in out and "program changed" not in out
