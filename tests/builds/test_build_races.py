"""Build state under racing writers, checked in the store: one lease holder, one
ordinal per program version."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa
from build_support import Project

from strata.builds.discovery import load_pipelines
from strata.builds.programs import register
from strata.store import schema as s

ROUNDS = 10


def test_two_builders_registering_new_programs_of_one_transform_get_two_ordinals(
    project: Project,
) -> None:
    item = load_pipelines([str(project.folder)]).transforms["shop.clean_clicks"]
    engine, ns = project.lake.engine, project.lake.namespace
    for i in range(ROUNDS):
        # Two edits of one transform registered at once (two builders, two checkouts).
        edits = [
            dataclasses.replace(item, name=f"t{i}", fingerprint=f"{side}{i:063d}") for side in "ab"
        ]
        gate = threading.Barrier(2)

        def go(edit: object, gate: threading.Barrier = gate) -> int:
            gate.wait()
            return register(engine, ns, edit).ordinal  # type: ignore[arg-type]

        with ThreadPoolExecutor(2) as pool:
            got = sorted(pool.map(go, edits))
        assert got == [1, 2], f"round {i}: {got}"
    pv = s.program_versions
    with engine.connect() as conn:
        stored = conn.execute(
            sa.select(pv.c.job_name, sa.func.count(), sa.func.max(pv.c.ordinal)).group_by(
                pv.c.job_name
            )
        ).all()
    assert sorted(stored) == sorted((f"shop.t{i}", 2, 2) for i in range(ROUNDS))


def test_registering_the_same_program_twice_at_once_stores_it_once(project: Project) -> None:
    item = load_pipelines([str(project.folder)]).transforms["shop.clean_users"]
    engine, ns = project.lake.engine, project.lake.namespace
    gate = threading.Barrier(2)

    def go(_: int) -> str:
        gate.wait()
        return register(engine, ns, item).uuid

    with ThreadPoolExecutor(2) as pool:
        uuids = set(pool.map(go, range(2)))
    assert len(uuids) == 1
    assert project.scalar("select count(*) from program_versions") == 1
