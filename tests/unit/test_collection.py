"""Every test file under tests/ is collected by the suite's own command.

pytest passes over folders it takes for output (``build``, ``dist``, ``venv``, dot
folders) unless told otherwise; a test file it never collects protects nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_file_is_collected() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    assert on_disk, "no test files found under tests/"
    assert on_disk - collected == set(), "test files the suite never collects"
    # The build service's own tests, by name, so a rename cannot hide them again.
    assert any(path.startswith("tests/builds/") for path in collected)
