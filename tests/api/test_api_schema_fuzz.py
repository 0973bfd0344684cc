"""Schemathesis against a live server on each backend: every check, a bounded number of
examples per operation, all phases (examples, coverage, fuzzing, stateful). Fails on any
5xx and on any answer the OpenAPI document does not describe (status, content type, body
schema, ``Allow`` on 405, schema-valid input refused, schema-invalid input accepted).

Exclusions, each narrow and explained, are in ``schemathesis.toml`` next to this file.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from api_seed import Seeder, chain

from live_server import serving
from strata.api import create_app
from strata.settings import Settings

CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_every_answer_is_documented(settings: Settings, engine: sa.Engine, tmp_path: Path) -> None:
    chain(Seeder(engine))  # a few real names, so some reads find something
    (tmp_path / "pipes").mkdir()
    (tmp_path / "pipes" / "nothing.py").write_text('"""No transforms."""\n')
    # With tokens set, so the checks that requests without the declared token are refused
    # run too; schemathesis sends the write token.
    served = dataclasses.replace(
        settings, pipelines=(str(tmp_path / "pipes"),), write_tokens=("fuzz-token",)
    )
    with serving(create_app(served, engine)) as url:
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "--config-file",
                str(CONFIG),
                "--no-color",
                "run",
                f"{url}/openapi.json",
                "--suppress-health-check",
                "all",
                # One worker: hypothesis parses lambdas' source with ast.parse, and on
                # Python 3.11 two threads doing so at once can fail inside CPython
                # ("AST constructor recursion depth mismatch").
                "--workers",
                "1",
                # A hang still fails; 30 s leaves room for a 10,000-item body on 2 busy cores.
                "--request-timeout",
                "30",
                "--seed",
                "1",
                "--header",
                "Authorization: Bearer fuzz-token",
            ],
            cwd=tmp_path,  # its cache directory goes here
            capture_output=True,
            text=True,
            timeout=400,  # about 100 s alone on 2 cores; CI shares them
            check=False,
        )
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
