"""Loading pipelines from one folder after another (main's code, then a branch's
checkout, then main's again, in one process): each folder's helpers import from it."""

from __future__ import annotations

import importlib.util
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


def test_code_of_the_folder_loaded_through_a_link_is_forgotten(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "pipe.py").write_text(PIPE)
    (real / "_helper.py").write_text("VALUE = 'x'\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    # Loaded through the link under a name no file of the folder has: only its resolved
    # path tells that it is the folder's code, which may have been edited since.
    linked = tmp_path / "link" / "_helper.py"
    spec = importlib.util.spec_from_file_location("strata_test_linked", linked)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["strata_test_linked"] = module
    spec.loader.exec_module(module)
    saved = list(sys.path)
    try:
        load_pipelines([real])
        assert "strata_test_linked" not in sys.modules
        assert sys.modules["pipe"].VALUE == "x"
    finally:
        sys.path[:] = saved
        for name in ("pipe", "_helper", "strata_test_linked"):
            sys.modules.pop(name, None)
