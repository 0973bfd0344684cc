"""What an OpenLineage event costs before it is queued: the body decoded as strict JSON
(``strata.api.body.decode_json``) and validated and parsed (``parse_event``), for every
event of the shared conformance corpus, in process.

Run it from two checkouts side by side (``PYTHONPATH=<other>/src``), alternating, and
compare the best figures: the work is a few hundred microseconds, so noise is large.

    .venv/bin/python bench/event_parse.py --passes 20 --repeat 5

``--ingest`` times the events ``bench/lineage_ingest.py`` sends instead of the corpus.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import orjson

from strata.api.body import decode_json
from strata.errors import StrataError
from strata.lineage.record.events import parse_event

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "events"


def bodies(corpus: Path) -> list[bytes]:
    """The corpus's events as compact JSON bytes, as a producer sends them."""
    out = []
    for path in sorted(corpus.rglob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        if isinstance(doc, dict) and "eventTime" in doc:
            out.append(orjson.dumps(doc))
    return out


def ingest_bodies() -> list[bytes]:
    """500 events as ``bench/lineage_ingest.py`` makes and sends them."""
    from lineage_ingest import make_runs

    return [e for run in make_runs(250, 200, 400, 7, "parse") for e in run]


def one_pass(events: list[bytes]) -> int:
    refused = 0
    for body in events:
        try:
            parse_event(decode_json(body, "identity"))
        except StrataError:
            refused += 1
    return refused


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--corpus", type=Path, default=CORPUS)
    p.add_argument("--passes", type=int, default=20, help="passes over the corpus a timing")
    p.add_argument("--repeat", type=int, default=5, help="timings; the best is printed")
    p.add_argument("--ingest", action="store_true", help="lineage_ingest.py's events")
    a = p.parse_args()
    events = ingest_bodies() if a.ingest else bodies(a.corpus)
    refused = one_pass(events)
    best = float("inf")
    for _ in range(a.repeat):
        began = time.perf_counter()
        for _ in range(a.passes):
            one_pass(events)
        best = min(best, time.perf_counter() - began)
    per_event = best / (a.passes * len(events)) * 1e6
    print(f"{len(events)} events ({refused} refused): {per_event:.1f} µs an event", end="")
    print(f", best of {a.repeat}")


if __name__ == "__main__":
    main()
