"""Reproduce in a fresh process: the stored program imports what its pipeline imported,
including helpers the transform never calls and factories declared in another module."""

from __future__ import annotations

import json

import pytest
from build_support import Project, clicks

pytestmark = pytest.mark.spark

LIB = '''
from pyspark.sql import functions as F
from strata import Input, Output, transform_df


def scaled(source, target, factor):
    """One function, registered once per call."""

    @transform_df(Output(target), rows=Input(source))
    def compute(rows):
        return rows.withColumn("ms", F.col("ms") * factor)

    return compute


def unused_helper():
    return "never called by a transform"
'''

PIPELINE = """
from _lib import scaled, unused_helper
from strata import Input, Output, transform_df

doubled = scaled("raw/clicks", "clicks/doubled", 2)
tripled = scaled("raw/clicks", "clicks/tripled", 3)


@transform_df(Output("clicks/plain"), rows=Input("raw/clicks"))
def plain(rows):
    return rows
"""


def test_reproduce_runs_factories_and_pipelines_with_unused_imports(project: Project) -> None:
    p = project
    p.pipeline.unlink()
    (p.folder / "_lib.py").write_text(LIB)
    (p.folder / "shop.py").write_text(PIPELINE)
    p.append("raw/clicks", clicks(("ada", 10), ("bob", 20)))
    code, out, err = p.cli("build", "--all", "--pipeline", str(p.folder))
    assert code == 0, (out, err)
    program = p.json("show-program", "clicks/tripled@1")
    assert program["entry"]["pipeline_file"] == "shop.py"
    assert set(program["files"]) == {"_lib.py", "shop.py"}

    # Edited since: reproduce must run what was stored, not these.
    (p.folder / "_lib.py").write_text(LIB.replace("* factor", "* factor + 1"))
    (p.folder / "shop.py").write_text(PIPELINE.replace("unused_helper", "gone"))
    for dataset in ("clicks/tripled", "clicks/plain"):
        # A process of its own: nothing of the pipeline folder is imported beforehand.
        proc = p.spawn("reproduce", f"{dataset}@1", "--json")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (out, err[-2000:])
        result = json.loads(out)
        assert result["identical"] is True, result
        assert result["recorded"] == result["reproduced"]


def test_show_program_prints_every_stored_file_and_the_change_between_versions(
    project: Project,
) -> None:
    p = project
    p.pipeline.unlink()
    (p.folder / "_lib.py").write_text(LIB)
    (p.folder / "shop.py").write_text(PIPELINE)
    p.append("raw/clicks", clicks(("ada", 40)))
    p.json("build", "clicks/tripled", "--pipeline", str(p.folder))
    # The helper the factory lives in changes, the pipeline file does not: version 2.
    (p.folder / "_lib.py").write_text(LIB.replace("* factor)", "* factor + 1)"))
    p.json("build", "clicks/tripled", "--pipeline", str(p.folder))

    code, out, _ = p.cli("show-program", "clicks/tripled@2")
    assert code == 0
    assert "_lib.py" in out and "shop.py" in out
    assert "factor + 1" in out and "unused_helper" in out  # the whole helper file

    code, out, _ = p.cli("show-program", "clicks/tripled@2", "--diff", "1")
    assert code == 0
    assert '-        return rows.withColumn("ms", F.col("ms") * factor)' in out
    assert '+        return rows.withColumn("ms", F.col("ms") * factor + 1)' in out
    assert "shop.py" not in out.split("was built by", 1)[1].split("\n", 1)[1]

    changes = p.json("show-program", "clicks/tripled@2", "--diff", "1")
    assert changes["diff_from"] == 1 and set(changes["diff"]) == {"_lib.py"}
