"""The cycle collector's pause: off inside the block, as it was after it."""

from __future__ import annotations

import gc

import pytest

from strata import collector


@pytest.fixture(autouse=True)
def _collector_restored():  # type: ignore[no-untyped-def]
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_paused_turns_collection_off_inside_and_back_on_after() -> None:
    gc.enable()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_restores_the_collector_when_the_block_raises() -> None:
    gc.enable()
    with pytest.raises(RuntimeError, match="boom"), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_paused_leaves_a_collector_that_was_off_off() -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
