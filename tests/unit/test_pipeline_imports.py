"""Loading pipelines from one folder after another (main's code, then a branch's
checkout, then main's again, in one process): each folder's helpers import from it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from strata.builds.programs.discovery import load_pipelines

PIPE = (
    "from _helper import VALUE\n"
    "from strata import Input, Output, transform_df\n\n\n"
    '@transform_df(Output("out/x"), x=Input("raw/x"))\n'
    "def copy(x):\n"
    "    return x\n"
)


def test_each_checkout_imports_its_own_helpers(tmp_path: Path) -> None:
    for name in ("main", "dev"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "pipe.py").write_text(PIPE)
        (folder / "_helper.py").write_text(f"VALUE = {name!r}\n")
    saved = list(sys.path)
    try:
        for name in ("main", "dev", "main", "dev"):
            found = load_pipelines([tmp_path / name])
            assert list(found.transforms) == ["pipe.copy"]
            imported = sys.modules["pipe"].VALUE
            assert imported == name
            assert Path(sys.modules["_helper"].__file__ or "").parent == tmp_path / name
    finally:
        sys.path[:] = saved
        for module in ("pipe", "_helper"):
            sys.modules.pop(module, None)


def test_code_loaded_through_a_link_is_imported_again_after_an_edit(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "lib").mkdir(parents=True)  # a namespace package: no name of the folder's own
    (real / "pipe.py").write_text(PIPE.replace("from _helper import", "from lib.tool import"))
    (real / "lib" / "tool.py").write_text("VALUE = 'before'\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    saved = list(sys.path)
    try:
        # Imported once through the link: the module's file names the link, not the folder.
        sys.path.insert(0, str(tmp_path / "link"))
        tool = importlib.import_module("lib.tool")
        assert tool.VALUE == "before"
        assert str(tool.__file__).startswith(str(tmp_path / "link"))
        (real / "lib" / "tool.py").write_text("VALUE = 'after'\n")
        load_pipelines([real])
        assert sys.modules["pipe"].VALUE == "after"
    finally:
        sys.path[:] = saved
        for module in ("pipe", "lib", "lib.tool"):
            sys.modules.pop(module, None)
