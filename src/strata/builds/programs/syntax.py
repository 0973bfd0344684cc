"""Python source parsed to a tree, one parse at a time in the process.

CPython 3.11 before 3.11.8 keeps the AST converter's recursion depth in state shared by
the whole interpreter, so two threads parsing at once can fail with ``SystemError: AST
constructor recursion depth mismatch`` (python/cpython#106905). Builds fingerprint
transforms and store program files from several worker threads, so every parse goes
through this lock; a parse takes microseconds to a few milliseconds.
"""

from __future__ import annotations

import ast
import threading

_lock = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, safe to call from any thread."""
    with _lock:
        return ast.parse(source, filename=filename)
