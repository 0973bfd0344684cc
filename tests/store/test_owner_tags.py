"""The tags owner's contract, on every backend: tags made on first use, tags on
datasets, their fields and jobs, read back for many at once and composed into queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners import tags

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _event(n_datasets: int) -> dict[str, object]:
    """A job writing ``n_datasets`` datasets: creates the rows tags point at."""
    return {
        "eventType": "COMPLETE",
        "eventTime": AT.isoformat(),
        "run": {"runId": "01890000-0000-7000-8000-000000000001"},
        "job": {"namespace": "ns", "name": "etl"},
        "outputs": [{"namespace": "ns", "name": f"d{i:04}"} for i in range(n_datasets)],
        "producer": "https://example.com/tests",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _uuids(engine: sa.Engine) -> tuple[list[str], str]:
    with engine.connect() as conn:
        datasets = conn.execute(sa.select(s.datasets.c.uuid).order_by(s.datasets.c.name)).scalars()
        job = conn.execute(sa.select(s.jobs.c.uuid).where(s.jobs.c.name == "etl")).scalar_one()
        return list(datasets), str(job)


def test_a_tag_is_made_once_and_described_again(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        tags.upsert(conn, "pii", None, AT)
        tags.upsert(conn, "pii", "personal data", AT + timedelta(1))
        tags.upsert(conn, "gold", "trusted", AT)
    with engine.connect() as conn:
        assert tags.get(conn, "pii") == tags.Tag("pii", "personal data")
        assert tags.get(conn, "nothing") is None
        first, total = tags.page(conn, limit=1, offset=0)
        second, _ = tags.page(conn, limit=5, offset=1)
    assert total == 2 and first == [tags.Tag("gold", "trusted")]
    assert second == [tags.Tag("pii", "personal data")]


def test_datasets_fields_and_jobs_are_tagged_and_untagged(engine: sa.Engine) -> None:
    record_event(engine, _event(2))
    (one, two), job = _uuids(engine)
    with engine.begin() as conn:
        tags.tag_dataset(conn, one, "pii", "", AT)
        tags.tag_dataset(conn, one, "pii", "", AT)  # twice: still one tag
        tags.tag_dataset(conn, one, "pii", "email", AT)
        tags.tag_dataset(conn, one, "gold", "", AT)
        tags.tag_job(conn, job, "nightly", AT)
    with engine.connect() as conn:
        found = tags.of_datasets(conn, [one, two])
        assert {f: sorted(t) for f, t in found[one].items()} == {
            "": ["gold", "pii"],
            "email": ["pii"],
        }
        assert two not in found
        assert tags.of_jobs(conn, [job]) == {job: ["nightly"]}
        # Tags used on a dataset or a job exist as tags.
        assert tags.get(conn, "nightly") == tags.Tag("nightly", None)
    with engine.begin() as conn:
        tags.untag_dataset(conn, one, "pii", "email")
        tags.untag_job(conn, job, "nightly")
    with engine.connect() as conn:
        assert {f: sorted(t) for f, t in tags.of_datasets(conn, [one])[one].items()} == {
            "": ["gold", "pii"]
        }
        assert tags.of_jobs(conn, [job]) == {}


def test_many_datasets_are_read_in_one_call_and_tagged_ones_are_known_in_a_query(
    engine: sa.Engine,
) -> None:
    """More datasets than one IN list holds on SQLite: every one comes back."""
    record_event(engine, _event(950))
    datasets, _ = _uuids(engine)
    tagged = datasets[::2]
    with engine.begin() as conn:
        for uuid in tagged:
            tags.tag_dataset(conn, uuid, "even", "", AT)
    d = s.datasets
    with engine.connect() as conn:
        found = tags.of_datasets(conn, datasets)
        flags = dict(conn.execute(sa.select(d.c.uuid, tags.dataset_tagged(d.c.uuid))).all())
    assert set(found) == set(tagged) and all(v == {"": ["even"]} for v in found.values())
    assert {u for u, flag in flags.items() if flag} == set(tagged)
    assert tags.of_datasets(engine.connect(), []) == {}
