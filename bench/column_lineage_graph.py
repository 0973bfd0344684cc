"""Column lineage of a large graph: ``GET /api/v1/column-lineage?nodeId=datasetField:…&depth=10``.

The store holds ``--datasets`` datasets of ``--fields`` fields each (100,000 fields by
default), written by one job each through OpenLineage events with ``columnLineage``
facets: dataset i reads datasets i-1 and i-7, and each of its fields comes from the
same field of the first (DIRECT) and the next field of the second (INDIRECT). Requests
ask for one field of a dataset deep in the chain, upstream to depth 10, through the ASGI
app in process (target: p95 under 100 ms on PostgreSQL), and, separately, with
``withDownstream`` from a field near the start.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, summary, write_json

TARGET_P95_MS = 100.0
NS = "warehouse"
P = {"_producer": "https://example.com/bench", "_schemaURL": "https://example.com/s"}
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _dataset(i: int, fields: int) -> dict[str, Any]:
    names = [f"f{j}" for j in range(fields)]
    facets: dict[str, Any] = {
        "schema": {**P, "fields": [{"name": n, "type": "BIGINT"} for n in names]}
    }
    sources = [k for k in (i - 1, i - 7) if k >= 0]
    if sources:
        lineage = {}
        for j, name in enumerate(names):
            inputs = [_input(sources[0], name, "DIRECT", "IDENTITY")]
            if len(sources) > 1:
                inputs.append(_input(sources[1], names[(j + 1) % fields], "INDIRECT", "JOIN"))
            lineage[name] = {"inputFields": inputs}
        facets["columnLineage"] = {**P, "fields": lineage}
    return {"namespace": NS, "name": f"t{i:05d}", "facets": facets}


def _input(i: int, field: str, kind: str, subtype: str) -> dict[str, Any]:
    return {
        "namespace": NS,
        "name": f"t{i:05d}",
        "field": field,
        "transformations": [{"type": kind, "subtype": subtype}],
    }


def _event(i: int, fields: int) -> dict[str, Any]:
    at = (T0 + timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
    reads = [{"namespace": NS, "name": f"t{k:05d}"} for k in (i - 1, i - 7) if k >= 0]
    return {
        "eventType": "COMPLETE",
        "eventTime": at,
        "producer": P["_producer"],
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench-run-{i}"))},
        "job": {"namespace": NS, "name": f"make_t{i:05d}"},
        "inputs": reads,
        "outputs": [_dataset(i, fields)],
    }


def load(engine: Any, datasets: int, fields: int) -> float:
    from strata.lineage.record.apply import record_batch

    started = time.perf_counter()
    for first in range(0, datasets, 50):
        events = [_event(i, fields) for i in range(first, min(datasets, first + 50))]
        record_batch(engine, events)
    return time.perf_counter() - started


def measure(backend: str, datasets: int, fields: int, requests: int, seed: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from strata.api import create_app

    rng = random.Random(seed)
    with scratch_dir("column-graph") as home, open_lake(backend, home) as lake:
        loaded = load(lake.engine, datasets, fields)
        client = TestClient(create_app(lake.settings, lake.engine))
        up, down, sizes = [], [], []
        for _ in range(requests):
            i, j = rng.randrange(datasets // 2, datasets), rng.randrange(fields)
            node = f"datasetField:{NS}:t{i:05d}:f{j}"
            t = time.perf_counter()
            answer = client.get("/api/v1/column-lineage", params={"nodeId": node, "depth": 10})
            up.append((time.perf_counter() - t) * 1000)
            assert answer.status_code == 200, answer.text
            sizes.append(len(answer.json()["graph"]))
        for _ in range(max(1, requests // 10)):
            node = f"datasetField:{NS}:t{rng.randrange(datasets - 20):05d}:f{rng.randrange(fields)}"
            params = {"nodeId": node, "depth": 10, "withDownstream": "true"}
            t = time.perf_counter()
            answer = client.get("/api/v1/column-lineage", params=params)
            down.append((time.perf_counter() - t) * 1000)
            assert answer.status_code == 200, answer.text
    return {
        "backend": backend,
        "fields": datasets * fields,
        "load_s": round(loaded, 1),
        "nodes": summary(sizes),
        "upstream_ms": summary(up),
        "with_downstream_ms": summary(down),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--datasets", type=int, default=1000)
    p.add_argument("--fields", type=int, default=100)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    results = [
        measure(b, args.datasets, args.fields, args.requests, args.seed)
        for b in backends(args.backend)
    ]
    print_table(
        f"column lineage at depth 10 (target: p95 < {TARGET_P95_MS:.0f} ms on PostgreSQL)",
        ["backend", "fields", "load s", "nodes p50", "up p50 ms", "up p95 ms", "down p95 ms"],
        [
            (
                r["backend"],
                r["fields"],
                r["load_s"],
                r["nodes"]["p50"],
                r["upstream_ms"]["p50"],
                r["upstream_ms"]["p95"],
                r["with_downstream_ms"]["p95"],
            )
            for r in results
        ],
    )
    write_json("column_lineage_graph", args.json, vars(args), results)


if __name__ == "__main__":
    main()
