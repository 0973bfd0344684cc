"""Program fingerprints: what changes a transform's program version and what does not."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap
from pathlib import Path
from types import ModuleType

from strata.build.fingerprint import program_code, program_fingerprint

_names = itertools.count()

BASE = '''
"""A pipeline module."""
import helpers
from helpers import clean

LIMIT = 10


def unrelated():
    return 1


def double(x):
    return x * 2


def main(df):
    """Docstrings do not count."""
    # nor do comments
    return clean(double(df)) + LIMIT + helpers.bump(df)
'''

HELPERS = """
def clean(x):
    return x


def bump(x):
    return x + 1
"""


def _load(root: Path, text: str, helpers: str = HELPERS) -> ModuleType:
    root.mkdir(parents=True, exist_ok=True)
    (root / "helpers.py").write_text(textwrap.dedent(helpers))
    path = root / "mod.py"
    path.write_text(textwrap.dedent(text))
    sys.modules.pop("helpers", None)
    sys.path.insert(0, str(root))
    try:
        spec = importlib.util.spec_from_file_location(f"fp_mod_{next(_names)}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("helpers", None)
    return module


def _hash(tmp_path: Path, text: str, helpers: str = HELPERS, name: str = "main") -> str:
    root = tmp_path / f"r{next(_names)}"
    module = _load(root, text, helpers)
    return program_code(getattr(module, name), root).code_hash


def test_formatting_comments_docstrings_and_names_do_not_count(tmp_path: Path) -> None:
    base = _hash(tmp_path, BASE)
    reformatted = BASE.replace(
        "    return clean(double(df)) + LIMIT + helpers.bump(df)",
        "\n    return (clean(double(df))\n            + LIMIT   +  helpers.bump(df))  # sum",
    ).replace('"""Docstrings do not count."""', '"""Another docstring."""')
    assert _hash(tmp_path, reformatted) == base
    renamed = BASE.replace("def main(df):", "def renamed(df):")
    assert _hash(tmp_path, renamed, name="renamed") == base
    # The decorator is the declaration, hashed on its own: its text does not count here.
    keep = "def keep(*args):\n    return lambda f: f\n\n\n"
    one = _hash(tmp_path, BASE.replace("def main(df):", keep + "@keep(1)\ndef main(df):"))
    two = _hash(tmp_path, BASE.replace("def main(df):", keep + "@keep(2)\ndef main(df):"))
    assert one == two == base


def test_code_helpers_and_constants_count(tmp_path: Path) -> None:
    base = _hash(tmp_path, BASE)
    assert _hash(tmp_path, BASE.replace("+ LIMIT +", "- LIMIT +")) != base
    assert _hash(tmp_path, BASE.replace("return x * 2", "return x * 3")) != base
    assert _hash(tmp_path, BASE.replace("LIMIT = 10", "LIMIT = 11")) != base
    assert _hash(tmp_path, BASE, HELPERS.replace("return x\n", "return -x\n")) != base
    assert _hash(tmp_path, BASE, HELPERS.replace("x + 1", "x + 2")) != base
    assert _hash(tmp_path, BASE.replace("return 1", "return 2")) == base


def test_closures_count_by_value(tmp_path: Path) -> None:
    text = """
def make(k):
    def inner(df):
        return df * k
    return inner

a = make(2)
b = make(3)
c = make(2)
"""
    root = tmp_path / "closure"
    module = _load(root, text)
    ha, hb, hc = (program_code(getattr(module, n), root).code_hash for n in "abc")
    assert ha == hc and ha != hb


def test_mutual_recursion_terminates(tmp_path: Path) -> None:
    text = """
def even(n):
    return True if n == 0 else odd(n - 1)

def odd(n):
    return False if n == 0 else even(n - 1)
"""
    assert len(_hash(tmp_path, text, name="even")) == 64


def test_files_and_place_are_recorded(tmp_path: Path) -> None:
    root = tmp_path / "files"
    module = _load(root, BASE)
    code = program_code(module.main, root)
    assert set(code.files) == {"mod.py", "helpers.py"}
    assert "LIMIT = 10" in code.files["mod.py"]
    assert code.module_path == "mod.py"
    assert code.line == BASE.splitlines().index("def main(df):") + 1
    assert code.source.startswith("def main(df):")


def test_declaration_and_version_override() -> None:
    decl = {"inputs": {"a": {"dataset": "raw/a"}}, "outputs": {"o": {"dataset": "d/o"}}}
    other = {"inputs": {"a": {"dataset": "raw/b"}}, "outputs": {"o": {"dataset": "d/o"}}}
    assert program_fingerprint("x", decl) != program_fingerprint("x", other)
    assert program_fingerprint("x", decl, "2") == program_fingerprint("y", decl, "2")
    assert program_fingerprint("x", decl, "2") != program_fingerprint("x", decl, "3")
