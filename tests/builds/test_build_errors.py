"""Bad pipelines and bad requests: a clear error naming the transform and file, nothing
committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from build_support import Project, clicks, users


def _fail(p: Project, *args: str) -> str:
    code, out, err = p.cli(*args)
    assert code == 1, (out, err)
    assert "Traceback" not in err
    return " ".join(err.split())


def _write(p: Project, text: str) -> Path:
    p.pipeline.write_text(text)
    return p.pipeline


HEAD = "from strata import Input, Output, transform, transform_df\n\n"


def test_pipeline_errors_name_the_file_and_line(project: Project) -> None:
    p = project
    where = str(p.folder)
    _write(p, HEAD + "def broken(:\n    pass\n")
    assert f"syntax error at {p.pipeline}:3" in _fail(p, "status", "--pipeline", where)

    _write(p, HEAD + "import no_such_module_here\n")
    msg = _fail(p, "status", "--pipeline", where)
    assert f"{p.pipeline}:3" in msg and "no_such_module_here" in msg

    two = (
        HEAD
        + "@transform_df(Output('d/x'), a=Input('raw/a'))\ndef one(a):\n    return a\n\n"
        + "@transform_df(Output('d/x'), a=Input('raw/a'))\ndef two(a):\n    return a\n"
    )
    _write(p, two)
    msg = _fail(p, "status", "--pipeline", where)
    assert "'d/x' is written by two transforms, shop.one" in msg and "shop.two" in msg

    cycle = (
        HEAD
        + "@transform_df(Output('d/x'), a=Input('d/y'))\ndef one(a):\n    return a\n\n"
        + "@transform_df(Output('d/y'), a=Input('d/x'))\ndef two(a):\n    return a\n"
    )
    _write(p, cycle)
    msg = _fail(p, "status", "--pipeline", where)
    assert ("cycle" in msg and "d/x -> d/y -> d/x" in msg) or "d/y -> d/x -> d/y" in msg

    _write(p, HEAD + "@transform_df(Output('d/x'), a=Input('raw/a'))\ndef one(b):\n    return b\n")
    msg = _fail(p, "status", "--pipeline", where)
    assert "one" in msg and f"{p.pipeline}:3" in msg and "missing ['a']" in msg

    _write(
        p,
        HEAD + "@transform_df(Output('raw/users'), a=Input('raw/a'))\ndef one(a):\n    return a\n",
    )
    p.append("raw/users", users(("ada", "UK")))
    msg = _fail(p, "status", "--pipeline", where)
    assert "writes 'raw/users', a raw dataset written by hand" in msg

    assert "no pipelines are configured" in _fail(p, "status")
    assert "is not a .py file or a folder" in _fail(p, "status", "--pipeline", where + "/nope")


@pytest.mark.spark
def test_transform_mistakes_fail_the_run_and_commit_nothing(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    # What `strata.connect()` inside a transform opens: the project's own store and lake.
    monkeypatch.setenv("STRATA_DATABASE_URL", p.settings.database_url)
    monkeypatch.setenv("STRATA_LAKE_URI", p.settings.lake_uri)
    p.append("raw/clicks", clicks(("ada", 1)))
    p.append("other/secret", clicks(("eve", 1)))
    _write(
        p,
        HEAD
        + "import strata\n\n"
        + "@transform_df(Output('d/none'), c=Input('raw/clicks'))\ndef none(c):\n    c.count()\n\n"
        + "@transform_df(Output('d/peek'), c=Input('raw/clicks'))\ndef peek(c):\n"
        + "    return strata.connect().read('other/secret')\n\n"
        + "@transform_df(Output('d/lost'), c=Input('raw/nowhere'))\ndef lost(c):\n    return c\n\n"
        + "@transform(a=Output('d/a'), b=Output('d/b'), c=Input('raw/clicks'))\n"
        + "def half(a, b, c):\n    a.write_dataframe(c.dataframe())\n",
    )
    code, out, err = p.cli("build", "--all", "--json", "--pipeline", str(p.folder))
    assert code == 1, err
    steps = {t["transform"]: t for t in json.loads(out)["transforms"]}
    assert {t["outcome"] for t in steps.values()} == {"failed"}
    assert "shop.none" in steps["shop.none"]["reason"]
    assert "not a Spark DataFrame" in steps["shop.none"]["reason"]
    assert f"{p.pipeline}:5" in steps["shop.none"]["reason"]
    assert "read dataset 'other/secret', which it does not declare" in steps["shop.peek"]["reason"]
    assert "'raw/nowhere'" in steps["shop.lost"]["reason"]
    assert "did not write ['d/b']" in steps["shop.half"]["reason"]
    # Nothing was committed: no derived dataset has a version, the half-written one neither.
    assert p.scalar("SELECT count(*) FROM transactions WHERE state = 'COMMITTED'") == 2
    failed = p.rows(
        "SELECT j.name FROM runs r JOIN jobs j ON j.uuid = r.job_uuid WHERE r.state = 'FAILED' "
        "ORDER BY j.name"
    )
    # The three that started (lost never did: its input does not exist) and their parent.
    assert [f.name for f in failed] == ["shop", "shop.half", "shop.none", "shop.peek"]


@pytest.mark.spark
def test_unknown_datasets_and_versions(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    p.append("raw/users", users(("ada", "UK")))
    where = str(p.folder)
    assert "no transform writes dataset 'nope/x'" in _fail(
        p, "build", "nope/x", "--pipeline", where
    )
    assert "no transform writes dataset 'raw/clicks'" in _fail(
        p, "build", "raw/clicks", "--pipeline", where
    )
    assert "name the datasets to build, or pass --all" in _fail(p, "build", "--pipeline", where)
    assert "has no version 9" in _fail(p, "trace", "raw/clicks@9")
    assert "does not exist" in _fail(p, "trace", "nope/x")
    assert "write DATASET@N" in _fail(p, "trace", "raw/clicks@x")
    assert "was not built by a transform" in _fail(p, "reproduce", "raw/clicks@1")
    assert "was not built by a transform" in _fail(p, "show-program", "raw/clicks@1")


def test_reproduce_refuses_a_wrong_version_before_starting_spark(project: Project) -> None:
    from strata.builds.execution.reproduce import reproduce
    from strata.errors import NotFound

    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    started: list[str] = []

    def start_spark() -> Any:
        started.append("spark")
        raise AssertionError("Spark was started for a version that cannot be reproduced")

    for version in (9, 1):  # no such version; a version written by hand
        with pytest.raises(NotFound):
            reproduce(p.lake, start_spark, "raw/clicks", version)
    assert started == []


@pytest.mark.spark
def test_an_append_output_refuses_another_schema(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    _write(
        p,
        HEAD
        + "@transform_df(Output('d/log', type='APPEND'), c=Input('raw/clicks'))\n"
        + "def log(c):\n    return c\n",
    )
    first = p.json("build", "--all", "--pipeline", str(p.folder))
    assert first["transforms"][0]["outputs"] == {"d/log": 1}
    p.edit("    return c\n", "    return c.selectExpr('user', 'cast(ms as string) as ms')\n")
    code, out, err = p.cli("build", "--all", "--json", "--pipeline", str(p.folder))
    assert code == 1, err
    step = json.loads(out)["transforms"][0]
    assert step["outcome"] == "failed"
    assert "d/log" in step["reason"] and "APPEND" in step["reason"]
    assert [v["version"] for v in p.json("history", "d/log")["versions"]] == [1]
    # The table's reader sees the two schemas and the hint too, not only the first line.
    code, _, err = p.cli("build", "--all", "--pipeline", str(p.folder))
    assert code == 1
    flat = " ".join(err.split())
    assert "dataset schema:" in flat and "written schema:" in flat
    assert "replace the data with a SNAPSHOT transaction" in flat


@pytest.mark.spark
def test_reading_the_lakes_folders_behind_the_catalog_is_refused(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    p.append("other/secret", clicks(("eve", 1)))
    secret = p.scalar("SELECT uuid FROM datasets WHERE name = 'other/secret'")
    clicks_uuid = p.scalar("SELECT uuid FROM datasets WHERE name = 'raw/clicks'")
    lake = p.settings.lake_uri
    peek = f"read.parquet('{lake}/{secret}/*/*.parquet')"
    _write(
        p,
        HEAD
        + "@transform_df(Output('d/sneak'), c=Input('raw/clicks'))\ndef sneak(c):\n"
        + f"    return c.sparkSession.{peek}.unionByName(c)\n\n"
        + "@transform(o=Output('d/handle'), c=Input('raw/clicks'))\ndef handle(o, c):\n"
        + f"    o.write_dataframe(c.dataframe().sparkSession.{peek})\n\n"
        # Its own declared input's files, read by path: the same version, so allowed.
        + "@transform_df(Output('d/own'), c=Input('raw/clicks'))\ndef own(c):\n"
        + f"    return c.sparkSession.read.parquet('{lake}/{clicks_uuid}/*/*.parquet')\n",
    )
    code, out, err = p.cli("build", "--all", "--json", "--pipeline", str(p.folder))
    assert code == 1, err
    steps = {t["transform"]: t for t in json.loads(out)["transforms"]}
    for name in ("shop.sneak", "shop.handle"):
        assert steps[name]["outcome"] == "failed"
        assert "UndeclaredInput" in steps[name]["reason"]
        assert "'other/secret'" in steps[name]["reason"]
    assert steps["shop.own"]["outcome"] == "built"
    assert (
        p.scalar(
            "SELECT count(*) FROM datasets d WHERE d.name LIKE 'd/%' AND "
            "d.current_version_uuid IS NOT NULL"
        )
        == 1
    )


@pytest.mark.spark
def test_a_failed_build_lists_no_empty_dataset_and_reads_change_no_update_time(
    project: Project,
) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    before = {d["name"]: d for d in p.json("datasets")}
    _write(
        p,
        HEAD + "@transform_df(Output('d/boom'), c=Input('raw/clicks'))\ndef boom(c):\n"
        "    raise ValueError('boom')\n\n"
        "@transform_df(Output('d/fine'), c=Input('raw/clicks'))\ndef fine(c):\n    return c\n",
    )
    code, _, err = p.cli("build", "--all", "--json", "--pipeline", str(p.folder))
    assert code == 1, err
    after = {d["name"]: d for d in p.json("datasets")}
    # The failed output holds no data: not listed. The input it read is not "updated".
    assert set(after) == {"raw/clicks", "d/fine"}
    assert after["raw/clicks"]["updated_at"] == before["raw/clicks"]["updated_at"]


@pytest.mark.spark
def test_errors_name_the_python_exception_and_the_line_that_raised_it(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 1)))
    _write(
        p,
        HEAD + "from pyspark.sql import functions as F\n\n\n"  # lines 3-5
        "def check(ms):\n"  # 6
        "    raise ValueError(f'no clicks of {ms} ms')\n\n\n"  # 7
        "@transform_df(Output('d/udf'), c=Input('raw/clicks'))\n"
        "def udf(c):\n"
        "    return c.select(F.udf(check, 'string')('ms').alias('x'))\n\n\n"
        "@transform_df(Output('d/body'), c=Input('raw/clicks'))\n"
        "def body(c):\n"
        "    limit = {}\n"
        "    return c.limit(limit['rows'])\n",  # line 18
    )
    code, out, err = p.cli("build", "--all", "--json", "--pipeline", str(p.folder))
    assert code == 1, err
    steps = {t["transform"]: t for t in json.loads(out)["transforms"]}
    udf = steps["shop.udf"]["reason"]
    assert "ValueError: no clicks of 1 ms" in udf, udf
    assert f"{p.pipeline}:7" in udf and "in check" in udf
    body = steps["shop.body"]["reason"]
    assert body.startswith("KeyError: 'rows'") and f"raised at {p.pipeline}:18" in body, body
