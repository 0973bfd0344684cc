"""Program fingerprints: what changes a transform's program version and what does not."""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from strata.builds.programs import fingerprint
from strata.builds.programs.fingerprint import ProgramCode, program_code, program_fingerprint
from strata.errors import InvalidArgument

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

Load = Callable[..., tuple[ModuleType, Path]]


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Load]:
    """Write a pipeline folder (``mod.py``, ``helpers.py`` and others) and import ``mod.py``
    under a unique name, as discovery does."""

    def _load(text: str, **others: str) -> tuple[ModuleType, Path]:
        root = tmp_path / f"pipes{next(_names)}"
        files = {"mod": text, "helpers": HELPERS, **others}  # helpers=... is helpers.py
        for key, body in files.items():
            rel = key if key.endswith(".py") else f"{key}.py"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(textwrap.dedent(body))
            sys.modules.pop(rel.split("/")[0].removesuffix(".py"), None)  # the last folder's
        monkeypatch.syspath_prepend(str(root))
        name = f"fp_mod_{next(_names)}"
        spec = importlib.util.spec_from_file_location(name, root / "mod.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module, root

    yield _load
    for name, module in list(sys.modules.items()):
        if Path(getattr(module, "__file__", None) or "/").is_relative_to(tmp_path):
            del sys.modules[name]


@pytest.fixture
def code_of(load: Load) -> Callable[..., ProgramCode]:
    def _code(text: str, name: str = "main", **others: str) -> ProgramCode:
        module, root = load(text, **others)
        return program_code(getattr(module, name), root)

    return _code


@pytest.fixture
def hash_of(code_of: Callable[..., ProgramCode]) -> Callable[..., str]:
    def _hash(text: str, name: str = "main", **others: str) -> str:
        return code_of(text, name, **others).code_hash

    return _hash


def test_comments_docstrings_and_formatting_do_not_count(hash_of: Callable[..., str]) -> None:
    base = hash_of(BASE)
    assert hash_of(BASE.replace("# nor do comments", "# other words\n\n\n")) == base
    assert hash_of(BASE.replace("Docstrings do not count.", "Another docstring.")) == base
    assert hash_of(BASE.replace('    """Docstrings do not count."""\n', "")) == base
    broken = BASE.replace(
        "    return clean(double(df)) + LIMIT + helpers.bump(df)",
        "\n    return (clean(double(df))\n            + LIMIT   +  helpers.bump(df))  # sum",
    )
    assert hash_of(broken) == base
    assert hash_of(BASE.replace('"""A pipeline module."""', "")) == base


def test_decorators_and_the_function_name_do_not_count(hash_of: Callable[..., str]) -> None:
    base = hash_of(BASE)
    assert hash_of(BASE.replace("def main(df):", "def renamed(df):"), name="renamed") == base
    # The decorator is the declaration, hashed on its own: its text does not count here.
    keep = "def keep(*args):\n    return lambda f: f\n\n\n"
    one = hash_of(BASE.replace("def main(df):", keep + "@keep(1)\ndef main(df):"))
    two = hash_of(BASE.replace("def main(df):", keep + "@keep(2)\n@keep(3)\ndef main(df):"))
    assert one == two == base


def test_the_body_helpers_and_constants_count(hash_of: Callable[..., str]) -> None:
    base = hash_of(BASE)
    assert hash_of(BASE.replace("+ LIMIT +", "- LIMIT +")) != base
    assert hash_of(BASE.replace("return x * 2", "return x * 3")) != base
    assert hash_of(BASE.replace("LIMIT = 10", "LIMIT = 11")) != base
    assert hash_of(BASE.replace("LIMIT = 10", "LIMIT = 10.0")) != base


def test_helpers_in_another_module_count(hash_of: Callable[..., str]) -> None:
    base = hash_of(BASE)
    assert hash_of(BASE, helpers=HELPERS.replace("return x\n", "return -x\n")) != base  # from
    assert hash_of(BASE, helpers=HELPERS.replace("x + 1", "x + 2")) != base  # helpers.bump
    assert hash_of(BASE, helpers=HELPERS + "\n# a comment\n") == base


def test_an_unrelated_function_does_not_count(hash_of: Callable[..., str]) -> None:
    base = hash_of(BASE)
    assert hash_of(BASE.replace("return 1", "return 2")) == base
    assert hash_of(BASE + "\n\ndef more():\n    return LIMIT\n") == base


def test_a_local_shadowing_a_global_does_not_count_it(hash_of: Callable[..., str]) -> None:
    text = "LIMIT = {}\n\ndef main(df):\n    LIMIT = 3\n    return [df + LIMIT for _ in 'ab']\n"
    assert hash_of(text.format(1)) == hash_of(text.format(2))


def test_names_are_resolved_in_their_own_module(hash_of: Callable[..., str]) -> None:
    text = "from helpers import clean\nLIMIT = {}\n\ndef main(df):\n    return clean(df) + LIMIT\n"
    helpers = "LIMIT = {}\n\ndef clean(x):\n    return x + LIMIT\n"
    base = hash_of(text.format(1), helpers=helpers.format(5))
    assert hash_of(text.format(2), helpers=helpers.format(5)) != base
    assert hash_of(text.format(1), helpers=helpers.format(6)) != base


def test_modules_imported_by_helper_modules_count(
    hash_of: Callable[..., str], code_of: Callable[..., ProgramCode]
) -> None:
    helpers = (
        "import util\n\ndef clean(x):\n    return util.strip(x)\n\ndef bump(x):\n    return x\n"
    )
    util = "def strip(x):\n    return x.strip()\n"
    base = hash_of(BASE, helpers=helpers, util=util)
    assert hash_of(BASE, helpers=helpers, util=util.replace("strip()", "lower()")) != base
    assert set(code_of(BASE, helpers=helpers, util=util).files) == {
        "mod.py",
        "helpers.py",
        "util.py",
    }


def test_submodules_reached_through_a_package_count(hash_of: Callable[..., str]) -> None:
    text = "import lib.text\n\ndef main(df):\n    return lib.text.clean(df)\n"
    clean = "def clean(x):\n    return x\n"
    base = hash_of(text, **{"lib/__init__.py": "", "lib/text.py": clean})
    changed = clean.replace("x\n", "-x\n")
    assert hash_of(text, **{"lib/__init__.py": "", "lib/text.py": changed}) != base


def test_closures_count_by_value(load: Load) -> None:
    text = """
def make(k, scale=1):
    def inner(df, factor=scale):
        return df * k * factor
    return inner

a = make(2)
b = make(3)
c = make(2)
d = make(2, scale=5)
"""
    module, root = load(text)
    ha, hb, hc, hd = (program_code(getattr(module, n), root).code_hash for n in "abcd")
    assert ha == hc
    assert len({ha, hb, hd}) == 3


def test_one_load_reads_each_file_once_and_the_next_load_sees_an_edit(load: Load) -> None:
    text = """
def make(k):
    def inner(df):
        return df * k
    return inner

fns = [make(i % 3) for i in range(9)]
"""
    module, root = load(text)
    stamps: dict[str, tuple[str, int, int]] = {}
    shared = [program_code(f, root, stamps).code_hash for f in module.fns]
    assert list(stamps) == [str(root / "mod.py")]
    fingerprint._hash_of_entries.cache_clear()
    alone = [program_code(f, root).code_hash for f in module.fns]
    assert shared == alone
    assert len(set(alone)) == 3
    (root / "mod.py").write_text(textwrap.dedent(text).replace("df * k", "df * k + 1") + "\n")
    assert program_code(module.fns[0], root, stamps).code_hash == shared[0]
    assert program_code(module.fns[0], root, {}).code_hash != shared[0]


def test_mutual_recursion_terminates_and_counts(hash_of: Callable[..., str]) -> None:
    text = """
def even(n):
    return True if n == 0 else odd(n - 1)

def odd(n):
    return False if n == 0 else even(n - {})

def main(n):
    return even(n)
"""
    assert len(hash_of(text.format(1))) == 64
    assert hash_of(text.format(1)) != hash_of(text.format(2))


def test_classes_and_wrapped_helpers_count(hash_of: Callable[..., str]) -> None:
    text = """
import functools
from dataclasses import dataclass

RATE = {rate}

@dataclass
class Price:
    amount: float

    def taxed(self):
        return self.amount * RATE

@functools.lru_cache
def cached(x):
    return x + {bump}

def main(df):
    return Price(df).taxed() + cached(df)
"""
    base = hash_of(text.format(rate=2, bump=1))
    assert hash_of(text.format(rate=3, bump=1)) != base  # a class's own references count
    assert hash_of(text.format(rate=2, bump=2)) != base  # the function the cache wraps


def test_partials_and_call_made_classes_count(hash_of: Callable[..., str]) -> None:
    text = """
import functools
from collections import namedtuple

Row = namedtuple("Row", {fields!r})

def scale(x, by):
    return x * by

triple = functools.partial(scale, by={by})

def main(df):
    return triple(Row(*df))
"""
    base = hash_of(text.format(fields="a b", by=3))
    assert hash_of(text.format(fields="a c", by=3)) != base
    assert hash_of(text.format(fields="a b", by=4)) != base


def test_code_outside_the_root_counts_by_name(
    load: Load, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.syspath_prepend(str(outside))
    text = "import outlib\n\ndef main(df):\n    return outlib.f(df)\n"
    hashes = set()
    for body in ("return x", "return -x"):
        (outside / "outlib.py").write_text(f"def f(x):\n    {body}\n")
        sys.modules.pop("outlib", None)
        module, root = load(text)
        code = program_code(module.main, root)
        hashes.add(code.code_hash)
        assert set(code.files) == {"mod.py"}
    assert len(hashes) == 1


def test_strata_itself_counts_by_name_wherever_its_modules_sit() -> None:
    """A pipeline folder holding strata's source (a checkout) still sees strata as a
    library: every strata module, not only the build service's, counts by name."""
    import strata
    from strata.builds.programs import fingerprint

    package = Path(strata.__file__).resolve().parent
    assert package in fingerprint._library_dirs()
    assert Path(fingerprint.__file__).resolve().is_relative_to(package)


def test_installed_packages_inside_the_root_count_by_name(load: Load) -> None:
    text = """
import sys, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).parent / ".venv/lib/site-packages"))
import vlib

def main(df):
    return vlib.f(df)
"""
    hashes = set()
    for body in ("return x", "return -x"):
        sys.modules.pop("vlib", None)
        lib = {".venv/lib/site-packages/vlib.py": f"def f(x):\n    {body}\n"}
        module, root = load(text, **lib)
        code = program_code(module.main, root)
        hashes.add(code.code_hash)
        assert set(code.files) == {"mod.py"}
    assert len(hashes) == 1


def test_files_place_and_source_are_recorded(load: Load) -> None:
    text = BASE.replace("def main(df):", "def keep(f):\n    return f\n\n\n@keep\ndef main(df):")
    module, root = load(text)
    code = program_code(module.main, root)
    assert set(code.files) == {"mod.py", "helpers.py"}
    assert code.files["mod.py"] == textwrap.dedent(text)
    assert code.files["helpers.py"] == HELPERS
    assert code.module_path == "mod.py"
    # The definition's first line, its decorator's: where the source shown starts.
    assert code.line == text.splitlines().index("@keep") + 1
    assert code.source.startswith("@keep\ndef main(df):")


def test_a_module_in_a_subfolder_has_a_posix_path(load: Load) -> None:
    helper = "def clean(x):\n    return x\n"
    text = "from sub.deep import clean\n\ndef main(df):\n    return clean(df)\n"
    module, root = load(text, **{"sub/__init__.py": "", "sub/deep.py": helper})
    code = program_code(module.main, root)
    assert code.files["sub/deep.py"] == helper
    assert code.module_path == "mod.py"


def test_a_nested_function_has_its_own_source_and_line(load: Load) -> None:
    text = """
def make():
    def inner(df):
        '''Doc.'''
        return df
    return inner

t = make()
"""
    module, root = load(text)
    code = program_code(module.t, root)
    assert code.line == 3
    assert code.source == "def inner(df):\n    '''Doc.'''\n    return df\n"


def test_a_nested_function_with_a_string_less_indented_than_itself(load: Load) -> None:
    text = """
def make():
    def inner(df):
        return df.filter('''
a > {}
''')
    return inner

t = make()
"""
    one, root_one = load(text.format(1))
    two, root_two = load(text.format(2))
    assert program_code(one.t, root_one).code_hash != program_code(two.t, root_two).code_hash


def test_a_lambda_helper_counts_by_its_own_expression(hash_of: Callable[..., str]) -> None:
    text = "clean = lambda x: x + {}\nother = 1\n\ndef main(df):\n    return clean(df)\n"
    base = hash_of(text.format(1))
    assert hash_of(text.format(2)) != base
    assert hash_of(text.format(1).replace("other = 1", "other = 2")) == base


def test_a_function_without_source_is_refused(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec(compile("def typed_in(df):\n    return df\n", "<stdin>", "exec"), namespace)
    with pytest.raises(InvalidArgument, match=r"typed_in.*module file"):
        program_code(namespace["typed_in"], tmp_path)  # type: ignore[arg-type]


def test_the_hash_does_not_depend_on_where_the_root_is(load: Load) -> None:
    first, root_a = load(BASE)
    second, root_b = load(BASE)
    assert root_a != root_b
    assert program_code(first.main, root_a).code_hash == program_code(second.main, root_b).code_hash


def test_declaration_and_version_override() -> None:
    decl = {"inputs": {"a": {"dataset": "raw/a"}}, "outputs": {"o": {"dataset": "d/o"}}}
    other = {"inputs": {"a": {"dataset": "raw/b"}}, "outputs": {"o": {"dataset": "d/o"}}}
    assert program_fingerprint("x", decl) != program_fingerprint("x", other)
    assert program_fingerprint("x", decl, "2") == program_fingerprint("y", decl, "2")
    assert program_fingerprint("x", decl, "2") != program_fingerprint("x", decl, "3")
    canonical = json.dumps(
        {"code": "x", "declaration": decl}, sort_keys=True, separators=(",", ":")
    )
    assert program_fingerprint("x", decl) == hashlib.sha256(canonical.encode()).hexdigest()
    assert program_fingerprint("abc", decl) == program_fingerprint("x", decl, version="abc")
