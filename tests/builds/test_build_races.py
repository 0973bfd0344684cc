"""Build state under racing writers, checked in the store: one lease holder, one
ordinal per program version."""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import sqlalchemy as sa
from build_support import Project

from strata.builds.programs.discovery import Declared, load_pipelines
from strata.builds.programs.files import program_text
from strata.builds.state import BuildState
from strata.builds.state.programs import Program
from strata.store import schema as s

ROUNDS = 10
RACERS = 4


def register(project: Project, item: Declared) -> Program:
    state = BuildState(project.lake.engine, project.lake.namespace)
    return state.register_program(item.fqn, item.fingerprint, program_text(item))


def test_builders_registering_new_programs_of_one_transform_get_one_ordinal_each(
    project: Project,
) -> None:
    item = load_pipelines([str(project.folder)]).transforms["shop.clean_clicks"]
    for i in range(ROUNDS):
        # Edits of one transform registered at once (several builders, several checkouts):
        # all but one lose the race for the next ordinal, and take the one after.
        edits = [
            dataclasses.replace(item, name=f"t{i}", fingerprint=f"{side}{i:063d}")
            for side in "abcd"[:RACERS]
        ]
        gate = threading.Barrier(RACERS)

        def go(edit: Declared, gate: threading.Barrier = gate) -> int:
            gate.wait()
            return register(project, edit).ordinal

        with ThreadPoolExecutor(RACERS) as pool:
            got = sorted(pool.map(go, edits))
        assert got == list(range(1, RACERS + 1)), f"round {i}: {got}"
    pv = s.program_versions
    with project.lake.engine.connect() as conn:
        stored = conn.execute(
            sa.select(
                pv.c.job_name,
                sa.func.count(),
                sa.func.count(sa.distinct(pv.c.ordinal)),
                sa.func.max(pv.c.ordinal),
            ).group_by(pv.c.job_name)
        ).all()
    assert sorted(stored) == sorted((f"shop.t{i}", RACERS, RACERS, RACERS) for i in range(ROUNDS))


def test_registering_the_same_program_twice_at_once_stores_it_once(project: Project) -> None:
    item = load_pipelines([str(project.folder)]).transforms["shop.clean_users"]
    gate = threading.Barrier(2)

    def go(_: int) -> str:
        gate.wait()
        return register(project, item).uuid

    with ThreadPoolExecutor(2) as pool:
        uuids = set(pool.map(go, range(2)))
    assert len(uuids) == 1
    assert project.scalar("select count(*) from program_versions") == 1
