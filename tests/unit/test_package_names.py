"""``import strata`` is cheap; its public names load on first use and are the real ones."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import strata


def _fresh(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_package_loads_neither_the_lake_nor_the_store() -> None:
    loaded = _fresh(
        """
        import sys
        import strata
        heavy = ("strata.lake.service", "strata.builds.programs.transforms", "sqlalchemy")
        print(",".join(m for m in heavy if m in sys.modules) or "none")
        """
    )
    assert loaded == "none"


def test_a_pipeline_module_imports_only_what_it_names() -> None:
    loaded = _fresh(
        """
        import sys
        from strata import Input, Output, transform_df
        print("strata.lake.service" in sys.modules, Input.__module__)
        """
    )
    assert loaded == "False strata.builds.programs.transforms"


def test_every_public_name_is_the_object_its_module_defines() -> None:
    from strata.builds.checks import check, expectations
    from strata.builds.programs import transforms
    from strata.lake import service

    expected = {
        "Check": check.Check,
        "Input": transforms.Input,
        "Output": transforms.Output,
        "Transform": transforms.Transform,
        "incremental": transforms.incremental,
        "transform": transforms.transform,
        "transform_df": transforms.transform_df,
        "Lake": service.Lake,
        "connect": service.connect,
        "expectations": expectations,
    }
    assert sorted(expected) == sorted(strata.__all__)
    for name, value in expected.items():
        assert getattr(strata, name) is value, name
    assert set(strata.__all__) <= set(dir(strata))
    from strata import expectations as E  # noqa: N812

    assert E is expectations


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'Transfrom'"):
        strata.Transfrom  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError, match="Transfrom"):
        exec("from strata import Transfrom", {})
