"""Parsing Python source from several threads at once (builds fingerprint and store
program files from worker threads)."""

from __future__ import annotations

import ast
import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path

from strata.builds.programs import syntax

SRC = Path(syntax.__file__).parent


class _Finalised:
    """Garbage whose finaliser yields the GIL, so a collection inside a parse lets
    another thread run: what a Spark driver's py4j objects do."""

    def __del__(self) -> None:
        time.sleep(0)


def _parse_in_threads(parse: Callable[[str], ast.Module], rounds: int = 60) -> list[Exception]:
    source = (SRC / "fingerprint.py").read_text("utf-8")
    errors: list[Exception] = []

    def work(depth: int) -> None:
        if depth:  # each thread parses at its own stack depth
            return work(depth - 1)
        for _ in range(rounds):
            a, b = _Finalised(), _Finalised()
            a.other, b.other = b, a  # type: ignore[attr-defined]
            try:
                parse(source)
            except SystemError as exc:
                errors.append(exc)
        return None

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=work, args=(d * 7,)) for d in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*threshold)
    return errors


def test_parsing_from_many_threads_never_fails_inside_the_interpreter() -> None:
    assert _parse_in_threads(syntax.parse) == []


def test_build_code_parses_only_through_the_locked_seam() -> None:
    calls = [
        path.relative_to(SRC.parent).as_posix()
        for path in SRC.parent.rglob("*.py")
        if path != Path(syntax.__file__)
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ast"
    ]
    assert calls == []
