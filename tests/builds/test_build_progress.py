"""A build's progress: what the builder tells the CLI's progress, in order, and what a
terminal, a pipe and --json each get to see."""

from __future__ import annotations

import io

import pytest
from build_support import Project, clicks, users
from rich.console import Console

from strata.builds.service import BuildService
from strata.cli.progress import BuildProgress, phases

pytestmark = pytest.mark.spark
SPINNER_OR_CONTROL = ("\x1b", "\r", "⠋", "⠙", "started")


def _seed(p: Project) -> None:
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))


def test_the_builder_tells_progress_each_transform_in_order(project: Project) -> None:
    _seed(project)
    screen = io.StringIO()
    service = BuildService(project.settings, [str(project.folder)], lake=project.lake)
    with BuildProgress(Console(file=screen, force_terminal=True, width=120)) as progress:
        report = service.build(["report/users"], reporter=progress)
    events = list(progress.events)
    planned = events[0][1].split(",")
    assert events[0][0] == "planned" and len(planned) == 6
    # One transform at a time: each starts, then finishes, in the planned order.
    assert events[1:] == [(what, key) for key in planned for what in ("started", "finished")]
    assert [s.transform for s in report.steps] == planned
    shown = screen.getvalue()
    assert "▸ shop.clean_clicks started" in shown
    # The plan is the first line, before the first transform (and Spark) starts.
    assert "[0/6] 6 transforms to visit: shop.clean_clicks" in shown
    assert shown.index("[0/6]") < min(shown.index("▸"), shown.index("[1/6]"))
    line = next(s for s in shown.splitlines() if "shop.user_report built" in s)
    assert "[6/6]" in line and "rows in" in line and line.rstrip().endswith("s")


def test_a_pipe_gets_plain_finished_lines_and_json_gets_none(project: Project) -> None:
    _seed(project)
    code, out, err = project.cli("build", "--pipeline", str(project.folder), "clean/clicks")
    assert code == 0, err
    assert not any(mark in err for mark in SPINNER_OR_CONTROL), repr(err)
    assert err.splitlines()[0] == "[0/1] 1 transform to visit: shop.clean_clicks"
    assert [line[:5] for line in err.splitlines()] == ["[0/1]", "[1/1]"]
    assert "shop.clean_clicks built 2 rows in" in err
    assert out.splitlines()[0].startswith("build ")  # the report's title, then its table

    code, out, err = project.cli(
        "build", "--pipeline", str(project.folder), "clean/clicks", "--force", "--json"
    )
    assert code == 0 and err == ""
    assert out.count("\n") == 1  # one JSON document


def test_ingest_phases_show_on_a_terminal_only() -> None:
    screen = io.StringIO()
    with phases(Console(file=screen, force_terminal=True), "reading") as enter:
        enter("writing")
        enter("committing")
    shown = screen.getvalue()
    assert shown.index("reading") < shown.index("writing") < shown.index("committing")
    pipe = io.StringIO()
    with phases(Console(file=pipe), "reading") as enter:
        enter("writing")
    assert pipe.getvalue() == ""


def test_a_dead_builders_lease_is_waited_out_aloud(project: Project) -> None:
    """A killed ``strata build`` leaves its lease: the next build says at once whose it
    is and until when, on stderr as words, or as a JSON event with ``--json``."""
    import json
    from datetime import datetime

    _seed(project)
    state = BuildService(project.settings, [str(project.folder)], lake=project.lake).state
    dead = "pid 4242 on host gone (build 01a2)"
    assert state.try_lease("shop.clean_clicks", dead, 3) is None  # as a killed build left it
    code, out, err = project.cli("build", "--pipeline", str(project.folder), "clean/clicks")
    assert code == 0, err
    [line] = [x for x in err.splitlines() if x.startswith("waiting")]
    assert line.startswith(f"waiting for the lease of shop.clean_clicks, held by {dead}, until ")
    assert err.index(line) < err.index("shop.clean_clicks built")
    # The same wait in --json: one event line on stderr; stdout stays the report.
    assert state.try_lease("shop.clean_clicks", dead, 3) is None
    code, out, err = project.cli(
        "build", "--pipeline", str(project.folder), "clean/clicks", "--force", "--json"
    )
    assert code == 0, err
    [event] = [json.loads(x) for x in err.splitlines()]
    assert (event["event"], event["transform"], event["lease"]) == (
        "waiting",
        "shop.clean_clicks",
        "shop.clean_clicks",
    )
    assert event["holder"] == dead
    assert datetime.fromisoformat(event["until"]) > datetime.fromisoformat("2026-01-01T00:00+00:00")
    assert json.loads(out)["transforms"][0]["outcome"] == "built"
