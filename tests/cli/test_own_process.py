"""What the ``strata`` command keeps out of the collector applies in its own process only."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

from strata.cli import process


def test_a_caller_running_commands_in_its_own_process_keeps_its_collector() -> None:
    assert not process.is_own()
    with process.kept_for_the_command():
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def _run(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()


def test_the_commands_own_process_keeps_what_the_block_made_out_of_later_passes() -> None:
    inside, frozen, enabled = _run(
        """
        import gc
        from strata.cli import process
        process.claim()
        with process.kept_for_the_command():
            inside = gc.isenabled()
            kept = [object() for _ in range(10)]
        print(inside, gc.get_freeze_count() >= 10, gc.isenabled())
        """
    )
    assert (inside, frozen, enabled) == ("False", "True", "True")


def test_the_console_entry_point_claims_the_process_and_freezes_its_imports() -> None:
    own, frozen = _run(
        """
        import gc, sys
        from strata.cli.__main__ import run
        sys.argv = ["strata", "--help"]
        try:
            run()
        except SystemExit:
            pass
        from strata.cli import process
        print(process.is_own(), gc.get_freeze_count() > 1000)
        """
    )
    assert (own, frozen) == ("True", "True")


def test_the_console_script_runs_the_entry_point() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "strata"]
    assert script.value == "strata.cli.__main__:run"
