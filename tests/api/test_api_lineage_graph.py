"""The lineage graph over a random store: the walk against a model of it, and the nodes
against the generic readers, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa
from api_seed import Seeder
from fastapi.testclient import TestClient

from strata.api import views
from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query import graph as g
from strata.lineage.query import graph_walk
from strata.lineage.query import jobs as job_reads
from strata.lineage.query import nodes as node_ids
from strata.lineage.query import runs as run_reads
from strata.settings import Settings
from strata.store import schema as s
from strata.store.engine import read_tx

NS = "g"
DEPTHS = (0, 1, 2, 5, 20)


@dataclass
class Model:
    """What the store holds, kept alongside it: job -> current (dataset, io type) edges."""

    datasets: dict[str, str] = field(default_factory=dict)  # uuid -> name
    jobs: dict[str, str] = field(default_factory=dict)  # uuid -> name
    io: dict[str, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))

    def walk(self, start: str, depth: int) -> tuple[set[str], set[str]]:
        """Breadth first by job hops: the jobs and datasets of the graph around ``start``."""
        touching: dict[str, set[str]] = defaultdict(set)
        for job, edges in self.io.items():
            for d, _ in edges:
                touching[d].add(job)
        if start in self.jobs:
            level = {start} if start in self.io else set()
            jobs, datasets = {start}, set()
        else:
            level = set(touching[start])
            jobs, datasets = set(level), {start}
        for hop in range(depth + 1):
            reached = {d for j in level for d, _ in self.io.get(j, ())}
            datasets |= reached
            if hop == depth:
                break
            level = {j for d in reached for j in touching[d]} - jobs
            jobs |= level
        return jobs, datasets


def random_store(seed: Seeder, engine: sa.Engine, rng: random.Random) -> Model:
    m = Model()
    for i in range(24):
        name = f"ds{i:02d}"
        # Some datasets have no version at all; the rest two or three fields.
        fields = None if i % 7 == 3 else ["a", "b", "c"][: 2 + i % 2]
        m.datasets[seed.dataset(NS, name, fields)] = name
    ds = list(m.datasets)
    parent = seed.job(NS, "dag")
    m.jobs[parent] = "dag"
    for i in range(18):
        simple = f"job{i:02d}"
        p = parent if i % 5 == 0 else None
        uuid = seed.job(NS, simple, parent=p, parent_name="dag" if p else None)
        m.jobs[uuid] = f"dag.{simple}" if p else simple
        if i == 17:
            continue  # a job with no version
        versions = 2 if i % 4 == 0 else 1
        for _ in range(versions):
            # The last version written is current; an older one's edges must not be walked.
            n_in, n_out = (0, 0) if i == 16 else (rng.randint(0, 2), rng.randint(1, 2))
            picked = rng.sample(ds, n_in + n_out)
            ins, outs = picked[:n_in], picked[n_in:]
            version = seed.job_version(uuid, ins, outs)
        m.io[uuid] = {(d, "INPUT") for d in ins} | {(d, "OUTPUT") for d in outs}
        if i % 3 != 2:
            with engine.connect() as conn:
                read: list[str] = list(
                    conn.execute(
                        sa.select(s.datasets.c.current_version_uuid).where(
                            s.datasets.c.uuid.in_(ins),
                            s.datasets.c.current_version_uuid.is_not(None),
                        )
                    ).scalars()
                )
                run = seed.run(uuid, version, read)
            for d in outs:
                seed.version(d, run, ["a", "b"])
    with engine.begin() as conn:
        conn.execute(
            s.tags.insert(),
            [
                {"name": t, "created_at": seed.clock, "updated_at": seed.clock}
                for t in ("pii", "gold")
            ],
        )
        tagged = [(ds[1], "pii", "a"), (ds[1], "gold", ""), (ds[2], "gold", "")]
        conn.execute(
            s.dataset_tags.insert(),
            [
                {"dataset_uuid": d, "tag_name": t, "field_name": f, "tagged_at": seed.clock}
                for d, t, f in tagged
            ],
        )
        conn.execute(
            s.job_tags.insert(),
            [
                {"job_uuid": j, "tag_name": "gold", "tagged_at": seed.clock}
                for j in list(m.jobs)[:4]
            ],
        )
        # Facets beyond 64-bit integers are legal JSON and must come back unchanged.
        conn.execute(
            s.datasets.update().where(s.datasets.c.uuid == ds[0]).values(facets={"big": 2**70 + 1})
        )
    return m


def node_id(m: Model, uuid: str) -> str:
    if uuid in m.jobs:
        return g.job_node_id(NS, m.jobs[uuid])
    return g.dataset_node_id(NS, m.datasets[uuid])


def test_graph_matches_model_and_readers(engine: sa.Engine, seed: Seeder, backend: str) -> None:
    m = random_store(seed, engine, random.Random(11))
    for start in [*m.datasets, *m.jobs]:
        for depth in DEPTHS:
            jobs, datasets = m.walk(start, depth)
            with read_tx(engine) as conn:
                nodes = g.lineage_graph(conn, node_id(m, start), depth)
                ref = node_ids.parse_node_id(conn, node_id(m, start))
                if backend == "postgresql":
                    # The one-statement walk gives what the level-by-level walk gives.
                    walker = graph_walk.CurrentEdges(conn)
                    assert graph_walk.walk_recursive(conn, ref, depth) == graph_walk.walk_levels(
                        walker, ref, depth
                    )
                want_ds = dataset_reads.datasets_by_uuid(conn, datasets)
                want_jobs = job_reads.jobs_by_uuid(conn, jobs, latest_fallback=False)
            ids = [n.id for n in nodes]
            assert ids == sorted({node_id(m, u) for u in jobs | datasets}), (start, depth)
            by_id = {n.id: n for n in nodes}
            for u, d in want_ds.items():
                assert by_id[node_id(m, u)].data == d
            for u, j in want_jobs.items():
                node = by_id[node_id(m, u)]
                assert node.data == j
                edges = m.io[u]
                assert node.in_edges == sorted(
                    (node_id(m, d), node.id) for d, t in edges if t == "INPUT"
                )
                assert node.out_edges == sorted(
                    (node.id, node_id(m, d)) for d, t in edges if t == "OUTPUT"
                )
            for u in datasets:
                node = by_id[node_id(m, u)]
                assert node.in_edges == sorted(
                    (node_id(m, j), node.id) for j in jobs if (u, "OUTPUT") in m.io.get(j, ())
                )
                assert node.out_edges == sorted(
                    (node.id, node_id(m, j)) for j in jobs if (u, "INPUT") in m.io.get(j, ())
                )


def test_graph_route_body(
    client: TestClient, engine: sa.Engine, seed: Seeder, settings: Settings
) -> None:
    m = random_store(seed, engine, random.Random(5))
    big = next(iter(m.datasets))
    r = client.get("/api/v1/lineage", params={"nodeId": node_id(m, big), "depth": 20})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    with read_tx(engine) as conn:
        nodes = g.lineage_graph(conn, node_id(m, big), 20)
    assert body == {"graph": [views.graph_node(n, settings.lake_uri) for n in nodes]}
    first = next(n for n in body["graph"] if n["id"] == node_id(m, big))
    assert first["data"]["facets"]["big"] == 2**70 + 1


LAKE = "file:///lake"


def test_graph_node_builds_each_latest_run_once(
    engine: sa.Engine, seed: Seeder, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = random_store(seed, engine, random.Random(5))
    with read_tx(engine) as conn:
        nodes = g.lineage_graph(conn, node_id(m, next(iter(m.datasets))), 20)
    # The graph's node as it always was: a job is the job view without "latestRuns".
    want = []
    for n in nodes:
        data = views.dataset(n.data, LAKE) if n.type == "DATASET" else views.job(n.data)
        data.pop("latestRuns", None)
        edges = {"inEdges": views._edges(n.in_edges), "outEdges": views._edges(n.out_edges)}
        want.append({"id": n.id, "type": n.type, "data": data, **edges})
    built: list[str] = []
    real = views.run

    def counting(r: run_reads.Run) -> views.Json:
        built.append(r.uuid)
        return real(r)

    monkeypatch.setattr(views, "run", counting)
    got = [views.graph_node(n, LAKE) for n in nodes]
    assert views.dumps(got) == views.dumps(want)
    runs = [n.data.latest_run.uuid for n in nodes if n.type == "JOB" and n.data.latest_run]
    assert runs and sorted(built) == sorted(runs)
