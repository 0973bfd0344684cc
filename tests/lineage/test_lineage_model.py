"""Run lifecycle, versions, bindings, parents and names on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from lineage_support import (
    PRODUCER,
    at,
    dataset_event,
    ds,
    dump,
    load,
    one,
    rid,
    rows,
    run_event,
    wipe,
)

from strata import ids
from strata.errors import InvalidEvent, NotFound
from strata.lineage.record import marquez_writes as writes
from strata.lineage.record import rows as rowlib
from strata.lineage.record.apply import record_batch, record_event
from strata.lineage.record.validate import parse_time
from strata.store import schema as s


def _run(engine: sa.Engine, label: str) -> Any:
    return one(engine, sa.select(s.runs).where(s.runs.c.uuid == rid(label)))


def _dataset(engine: sa.Engine, namespace: str, name: str) -> Any:
    d = s.datasets
    return one(engine, sa.select(d).where(d.c.namespace == namespace, d.c.name == name))


def _inputs(engine: sa.Engine, label: str) -> list[str]:
    ri = s.run_inputs
    got = rows(engine, sa.select(ri.c.dataset_version_uuid).where(ri.c.run_uuid == rid(label)))
    return sorted(r[0] for r in got)


def _job(engine: sa.Engine, namespace: str, raw: str) -> Any:
    return one(engine, sa.select(s.jobs).where(s.jobs.c.uuid == ids.job_uuid(namespace, raw)))


def test_lifecycle_and_history(engine: sa.Engine) -> None:
    record_event(engine, run_event("OTHER", 0, "r", "job"))
    assert _run(engine, "r").state == "RUNNING"
    record_event(engine, run_event("START", 1, "r", "job"))
    record_event(engine, run_event("COMPLETE", 3, "r", "job"))
    record_event(engine, run_event("RUNNING", 4, "r", "job", run_facets={"late": {"x": 1}}))
    run = _run(engine, "r")
    assert run.state == "COMPLETED"
    assert run.started_at == parse_time(at(1), "t")
    assert run.ended_at == parse_time(at(3), "t")
    assert run.facets["late"]["x"] == 1
    rs = s.run_states
    states = rows(
        engine,
        sa.select(rs.c.state).where(rs.c.run_uuid == rid("r")).order_by(rs.c.transitioned_at),
    )
    assert [r[0] for r in states] == ["RUNNING", "COMPLETED"]


def test_terminal_is_final_and_error_facet(engine: sa.Engine) -> None:
    err = {"errorMessage": {"message": "disk full", "programmingLanguage": "python"}}
    record_event(engine, run_event("FAIL", 2, "r", "job", run_facets=err))
    record_event(engine, run_event("COMPLETE", 5, "r", "job"))
    run = _run(engine, "r")
    assert run.state == "FAILED"
    assert run.error["message"] == "disk full"


def test_duplicates_are_ignored(engine: sa.Engine) -> None:
    event = run_event("START", 1, "r", "job", outputs=[ds("n", "d")])
    first = record_event(engine, event)
    before = dump(engine)
    again = record_event(engine, dict(event))
    assert not first.duplicate and again.duplicate
    assert dump(engine) == before


def test_failed_runs_never_move_the_current_version(engine: sa.Engine) -> None:
    record_event(engine, run_event("COMPLETE", 1, "ok", "p", outputs=[ds("n", "d")]))
    good = ids.output_version_uuid(rid("ok"), _dataset(engine, "n", "d").uuid)
    assert _dataset(engine, "n", "d").current_version_uuid == good
    record_event(engine, run_event("FAIL", 5, "bad", "p", outputs=[ds("n", "d")]))
    record_event(engine, run_event("ABORT", 6, "gone", "p", outputs=[ds("n", "d")]))
    assert _dataset(engine, "n", "d").current_version_uuid == good
    dv = s.dataset_versions
    count = rows(
        engine,
        sa.select(sa.func.count()).where(dv.c.dataset_uuid == _dataset(engine, "n", "d").uuid),
    )
    assert count[0][0] == 3
    # A consumer after the failure still reads the good version.
    record_event(engine, run_event("START", 7, "c", "consumer", inputs=[ds("n", "d")]))
    assert _inputs(engine, "c") == [good]


def test_late_earlier_completion_rebinds_consumers(engine: sa.Engine) -> None:
    record_event(engine, run_event("COMPLETE", 1, "p1", "p", outputs=[ds("n", "d")]))
    record_event(engine, run_event("START", 10, "c", "consumer", inputs=[ds("n", "d")]))
    d = _dataset(engine, "n", "d").uuid
    assert _inputs(engine, "c") == [ids.output_version_uuid(rid("p1"), d)]
    record_event(engine, run_event("COMPLETE", 5, "p2", "p", outputs=[ds("n", "d")]))
    assert _inputs(engine, "c") == [ids.output_version_uuid(rid("p2"), d)]
    # A later completion does not move what an earlier consumer read.
    record_event(engine, run_event("COMPLETE", 20, "p3", "p", outputs=[ds("n", "d")]))
    assert _inputs(engine, "c") == [ids.output_version_uuid(rid("p2"), d)]
    assert _dataset(engine, "n", "d").current_version_uuid == ids.output_version_uuid(rid("p3"), d)


def test_unknown_input_gets_an_initial_version(engine: sa.Engine) -> None:
    record_event(engine, run_event("START", 3, "c", "consumer", inputs=[ds("ext", "table")]))
    d = _dataset(engine, "ext", "table")
    initial = ids.initial_version_uuid(d.uuid)
    assert d.current_version_uuid == initial
    assert _inputs(engine, "c") == [initial]
    # Once a producer before the consumer is known, the stand-in disappears.
    record_event(engine, run_event("COMPLETE", 1, "p", "p", outputs=[ds("ext", "table")]))
    assert _inputs(engine, "c") == [ids.output_version_uuid(rid("p"), d.uuid)]
    dv = s.dataset_versions
    assert not rows(engine, sa.select(dv.c.uuid).where(dv.c.uuid == initial))


def test_version_facet_binding(engine: sa.Engine) -> None:
    v1 = ds("n", "d", version={"datasetVersion": "v1"})
    record_event(engine, run_event("COMPLETE", 1, "p1", "p", outputs=[v1]))
    record_event(engine, run_event("COMPLETE", 2, "p2", "p", outputs=[ds("n", "d")]))
    record_event(engine, run_event("START", 5, "c", "consumer", inputs=[v1]))
    d = _dataset(engine, "n", "d").uuid
    assert _inputs(engine, "c") == [ids.output_version_uuid(rid("p1"), d)]
    # Named before it is produced: a placeholder, replaced when the producer shows up.
    v7 = ds("n", "d", version={"datasetVersion": "v7"})
    record_event(engine, run_event("START", 6, "c7", "consumer", inputs=[v7]))
    assert _inputs(engine, "c7") == [ids.named_version_uuid(d, "v7")]
    record_event(engine, run_event("COMPLETE", 9, "p7", "p", outputs=[v7]))
    assert _inputs(engine, "c7") == [ids.output_version_uuid(rid("p7"), d)]


def test_lake_outputs_bind_committed_versions(engine: sa.Engine) -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(s.namespaces.insert().values(name="strata", created_at=now, updated_at=now))
        conn.execute(
            s.datasets.insert().values(
                uuid="11111111-1111-4111-8111-111111111111",
                namespace="strata",
                name="raw/clicks",
                is_lake=True,
                created_at=now,
                updated_at=now,
                current_version_uuid="22222222-2222-4222-8222-222222222222",
            )
        )
        conn.execute(
            s.dataset_versions.insert().values(
                uuid="22222222-2222-4222-8222-222222222222",
                dataset_uuid="11111111-1111-4111-8111-111111111111",
                commit_id=1,
                created_at=now,
            )
        )
    out = ds("strata", "raw/clicks", version={"datasetVersion": "1"})
    record_event(engine, run_event("COMPLETE", 1, "w", "writer", outputs=[out]))
    dv = s.dataset_versions
    versions = rows(engine, sa.select(dv.c.uuid, dv.c.run_uuid))
    assert versions == [("22222222-2222-4222-8222-222222222222", rid("w"))]
    record_event(engine, run_event("START", 2, "r", "reader", inputs=[ds("strata", "raw/clicks")]))
    assert _inputs(engine, "r") == ["22222222-2222-4222-8222-222222222222"]
    assert _dataset(engine, "strata", "raw/clicks").current_version_uuid == versions[0][0]
    with pytest.raises(InvalidEvent):
        bad = ds("strata", "raw/clicks", version={"datasetVersion": "9"})
        record_event(engine, run_event("COMPLETE", 3, "w2", "writer", outputs=[bad]))


@pytest.mark.parametrize("child_first", [True, False])
def test_parent_and_child_in_either_order(engine: sa.Engine, child_first: bool) -> None:
    parent = run_event("START", 0, "dag", "dag")
    child = run_event(
        "COMPLETE", 1, "task", "dag.task", parent=("dag", "dag"), outputs=[ds("n", "o")]
    )
    for event in [child, parent] if child_first else [parent, child]:
        record_event(engine, event)
    job = _job(engine, "ns", "dag.task")
    assert (job.name, job.simple_name) == ("dag.task", "task")
    assert job.parent_job_uuid == ids.job_uuid("ns", "dag")
    assert _run(engine, "task").parent_run_uuid == rid("dag")
    assert _run(engine, "dag").state == "RUNNING"
    # The parent's failure does not touch the child's dataset.
    record_event(engine, run_event("FAIL", 5, "dag", "dag"))
    o = _dataset(engine, "n", "o")
    assert o.current_version_uuid == ids.output_version_uuid(rid("task"), o.uuid)


def test_reparenting_keeps_an_alias_and_the_parent_sticks(engine: sa.Engine) -> None:
    record_event(engine, run_event("COMPLETE", 1, "a", "etl_step"))
    assert _job(engine, "ns", "etl_step").name == "etl_step"
    record_event(engine, run_event("COMPLETE", 2, "b", "etl_step", parent=("dag", "dag")))
    record_event(engine, run_event("COMPLETE", 3, "c", "etl_step"))
    job = _job(engine, "ns", "etl_step")
    assert (job.name, job.simple_name) == ("dag.etl_step", "etl_step")
    assert job.parent_job_uuid == ids.job_uuid("ns", "dag")
    a = s.job_aliases
    assert rows(engine, sa.select(a.c.namespace, a.c.name)) == [("ns", "etl_step")]


def test_invalid_events_store_nothing(engine: sa.Engine) -> None:
    before = dump(engine)
    bad = run_event("START", 1, "r", "job")
    bad["run"]["runId"] = "not-a-uuid"
    with pytest.raises(InvalidEvent) as err:
        record_event(engine, bad)
    assert err.value.details["path"] == "$.run.runId"
    missing = run_event("START", 1, "r", "job")
    del missing["job"]["name"]
    with pytest.raises(InvalidEvent) as err:
        record_event(engine, missing)
    assert err.value.details["path"] == "$.job"
    wrong = run_event("START", 1, "r", "job")
    wrong["eventType"] = "EXPLODE"
    with pytest.raises(InvalidEvent) as err:
        record_event(engine, wrong)
    assert err.value.details["path"] == "$.eventType"
    nul = run_event("START", 1, "r", "jo\x00b")
    with pytest.raises(InvalidEvent):
        record_event(engine, nul)
    for junk in ([], {"eventTime": "x"}, {**run_event("START", 1, "r", "j"), "eventTime": "noon"}):
        with pytest.raises(InvalidEvent):
            record_event(engine, junk)  # type: ignore[arg-type]
    results = record_batch(engine, [bad, run_event("START", 1, "ok", "job")])
    assert isinstance(results[0], InvalidEvent) and not isinstance(results[1], InvalidEvent)
    after = dump(engine)
    assert after["runs"] and len(after["lineage_events"]) == len(before["lineage_events"]) + 1


def test_unicode_and_sql_metacharacter_names(engine: sa.Engine) -> None:
    name = "ro'bert\"); DROP TABLE runs;--🕷"
    ns = "名前空間 %_\\"
    record_event(
        engine,
        run_event(
            "COMPLETE", 1, "r", name, namespace=ns, outputs=[ds(ns, name)], inputs=[ds("x", "%")]
        ),
    )
    assert _job(engine, ns, name).name == name
    assert _dataset(engine, ns, name).current_version_uuid is not None
    assert _dataset(engine, "x", "%").name == "%"


def test_zone_less_and_nanosecond_times(engine: sa.Engine) -> None:
    naive = load("marquez/open_lineage/event_required_no_timezone.json")
    record_event(engine, naive)
    run = one(engine, sa.select(s.runs).where(s.runs.c.uuid == naive["run"]["runId"]))
    assert run.created_at == datetime(2020, 12, 28, 19, 51, 1, 641499, tzinfo=UTC)
    nanos = run_event("START", 0, "n", "job")
    nanos["eventTime"] = "2024-01-01T10:00:00.123456789+02:00"
    record_event(engine, nanos)
    assert _run(engine, "n").created_at == datetime(2024, 1, 1, 8, 0, 0, 123456, tzinfo=UTC)


def test_apples_story(engine: sa.Engine) -> None:
    names = [
        "1_pick_apples",
        "2_apple_filling",
        "3_apple_cider",
        "5_apple_vinegar",
        "6_apple_pie",
        "7_pick_different_apples",
        "8_apple_filling",
        "9_apple_pie",
    ]
    events = {n: load(f"marquez/apples/{n}.json") for n in names}
    for event in reversed(list(events.values())):
        record_event(engine, event)
    run_of = {n: e["run"]["runId"] for n, e in events.items()}
    apples = _dataset(engine, "grandmas.kitchen", "apples")
    filling = _dataset(engine, "grandmas.kitchen", "apple.filling")
    pie = _dataset(engine, "grandmas.kitchen", "apple.pie")
    cider = _dataset(engine, "grandmas.kitchen", "apple.cider")
    v = ids.output_version_uuid
    # Two versions each of apples, filling and pie; the second ones are current.
    assert apples.current_version_uuid == v(run_of["7_pick_different_apples"], apples.uuid)
    assert filling.current_version_uuid == v(run_of["8_apple_filling"], filling.uuid)
    assert pie.current_version_uuid == v(run_of["9_apple_pie"], pie.uuid)
    dv = s.dataset_versions
    for d in (apples, filling, pie):
        assert (
            rows(engine, sa.select(sa.func.count()).where(dv.c.dataset_uuid == d.uuid))[0][0] == 2
        )
    # Each run read the version current when it ran.
    assert _inputs_of(engine, run_of["2_apple_filling"], apples.uuid) == v(
        run_of["1_pick_apples"], apples.uuid
    )
    assert _inputs_of(engine, run_of["3_apple_cider"], apples.uuid) == v(
        run_of["1_pick_apples"], apples.uuid
    )
    assert _inputs_of(engine, run_of["8_apple_filling"], apples.uuid) == v(
        run_of["7_pick_different_apples"], apples.uuid
    )
    assert _inputs_of(engine, run_of["5_apple_vinegar"], cider.uuid) == v(
        run_of["3_apple_cider"], cider.uuid
    )
    assert _inputs_of(engine, run_of["6_apple_pie"], filling.uuid) == v(
        run_of["2_apple_filling"], filling.uuid
    )
    # gather_apples changed its input: two job versions, the later one current.
    job = _job(engine, "grandmas.kitchen", "gather_apples")
    jv = s.job_versions
    assert rows(engine, sa.select(sa.func.count()).where(jv.c.job_uuid == job.uuid))[0][0] == 2
    io = s.job_version_io
    current_io = rows(
        engine,
        sa.select(io.c.io_type, io.c.dataset_uuid).where(
            io.c.job_version_uuid == job.current_version_uuid
        ),
    )
    assert sorted(current_io) == sorted(
        [("INPUT", _dataset(engine, "backyard", "crab.apples").uuid), ("OUTPUT", apples.uuid)]
    )


def _inputs_of(engine: sa.Engine, run_id: str, dataset_uuid: str) -> str:
    ri, dv = s.run_inputs, s.dataset_versions
    return str(
        one(
            engine,
            sa.select(ri.c.dataset_version_uuid)
            .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
            .where(ri.c.run_uuid == run_id, dv.c.dataset_uuid == dataset_uuid),
        )[0]
    )


def test_spark_statistics_from_running_events_accumulate(engine: sa.Engine) -> None:
    for n in (1, 2, 3, 4):
        record_event(engine, load(f"compat/spark_dataproc_simple_producer_test/events/{n}.json"))
    t2 = _dataset(engine, "hdfs://dataproc-producer-test-m", "/user/hive/warehouse/t2")
    version = one(
        engine,
        sa.select(s.dataset_versions).where(s.dataset_versions.c.uuid == t2.current_version_uuid),
    )
    assert (version.row_count, version.byte_count) == (2, 8)
    # Output facets stay the run's; the version holds the dataset facets (as Marquez).
    assert "outputStatistics" not in version.facets
    run = one(engine, sa.select(s.runs.c.io_facets).where(s.runs.c.uuid == version.run_uuid))
    [(_, _, sent)] = [o for o in run.io_facets["outputs"] if o[1] == t2.name]
    assert sent["outputStatistics"]["rowCount"] == 2
    assert [f["name"] for f in version.schema_fields] == ["a", "b"]
    cl = s.column_lineage
    edges = rows(
        engine,
        sa.select(cl.c.output_field, cl.c.input_field, cl.c.transformation_type).where(
            cl.c.dataset_version_uuid == version.uuid
        ),
    )
    assert sorted(edges) == [("a", "a", "DIRECT"), ("b", "b", "DIRECT")]
    sl = s.dataset_symlinks
    assert rows(engine, sa.select(sl.c.name).where(sl.c.dataset_uuid == t2.uuid))


def test_column_lineage_old_and_new_shapes(engine: sa.Engine) -> None:
    for n in range(1, 10):
        record_event(engine, load(f"compat/CLL/events/{n}.json"))
    tbl = _dataset(engine, "file", "/tmp/cll_test/tbl1")
    cl = s.column_lineage
    edges = rows(engine, sa.select(cl).where(cl.c.dataset_version_uuid == tbl.current_version_uuid))
    assert edges
    ident = [e for e in edges if e.output_field == "ident" and e.input_field == "a"]
    assert any("IDENTITY" in (e.transformation_description or "") for e in ident)
    old_shape = {
        "columnLineage": {
            "fields": {
                "x": {
                    "inputFields": [{"namespace": "n", "name": "src", "field": "y"}],
                    "transformationType": "IDENTITY",
                    "transformationDescription": "copied",
                }
            }
        }
    }
    record_event(
        engine,
        run_event(
            "COMPLETE",
            1,
            "old",
            "j",
            inputs=[ds("n", "src")],
            outputs=[ds("n", "dst", **old_shape)],
        ),
    )
    dst = _dataset(engine, "n", "dst")
    edge = one(engine, sa.select(cl).where(cl.c.dataset_version_uuid == dst.current_version_uuid))
    assert (
        edge.output_field,
        edge.input_field,
        edge.transformation_type,
        edge.transformation_description,
    ) == ("x", "y", "IDENTITY", "copied")
    assert edge.input_dataset_uuid == _dataset(engine, "n", "src").uuid


def test_job_and_dataset_events(engine: sa.Engine) -> None:
    record_event(engine, load("marquez/open_lineage/event_job_event.json"))
    job = _job(engine, "my-scheduler-namespace", "myjob")
    assert job.current_version_uuid is not None
    io = s.job_version_io
    assert (
        len(rows(engine, sa.select(io).where(io.c.job_version_uuid == job.current_version_uuid)))
        == 2
    )
    record_event(engine, load("marquez/open_lineage/event_dataset_event.json"))
    d = _dataset(engine, "my-dataset-namespace", "my-dataset-name")
    assert d.facets["schema"]["fields"][0]["name"] == "col_a"
    # A DatasetEvent declares a version, as in Marquez: current, with the event's fields.
    dv = s.dataset_versions
    [version] = rows(engine, sa.select(dv).where(dv.c.dataset_uuid == d.uuid))
    assert d.current_version_uuid == version.uuid
    assert version.declared and version.run_uuid is None
    assert version.schema_fields[0]["name"] == "col_a"


def test_declared_versions_are_dated_by_their_latest_declaration(engine: sa.Engine) -> None:
    """Declaring a content again makes it current again; a run reading the dataset binds
    the version declared before it started, whatever order the events came in."""

    def declared(minutes: float, *names: str) -> dict[str, Any]:
        return dataset_event(minutes, "n", "table", fields=list(names))

    events = [
        declared(0, "a"),
        declared(10, "a", "b"),
        run_event("START", 15, "reader", "read", inputs=[ds("n", "table")]),
        declared(20, "a"),
    ]
    for order in (events, list(reversed(events))):
        wipe(engine)
        for event in order:
            record_event(engine, event)
        d = _dataset(engine, "n", "table")
        dv = s.dataset_versions
        got = {
            tuple(f["name"] for f in v.schema_fields): v
            for v in rows(engine, sa.select(dv).where(dv.c.dataset_uuid == d.uuid))
        }
        assert set(got) == {("a",), ("a", "b")}
        assert d.current_version_uuid == got[("a",)].uuid  # declared again at 20
        bound = rows(engine, sa.select(s.run_inputs.c.dataset_version_uuid))
        assert [b.dataset_version_uuid for b in bound] == [got[("a", "b")].uuid]


def test_job_facets_map_to_columns(engine: sa.Engine) -> None:
    record_event(engine, load("marquez/open_lineage/event_full.json"))
    job = _job(engine, "my-scheduler-namespace", "myjob.mytask")
    assert job.description == "string"
    assert job.location == "http://example.com"
    run = _run_by_id(engine, "ea041791-68bc-4ae1-bd89-4c8106a157e4")
    assert run.nominal_start_time == datetime(2020, 12, 17, 3, 0, 0, 1000, tzinfo=UTC)
    assert run.parent_run_uuid == "3f5e83fa-3480-44ff-99c5-ff943904e5e8"


def _run_by_id(engine: sa.Engine, run_id: str) -> Any:
    return one(engine, sa.select(s.runs).where(s.runs.c.uuid == run_id))


def test_marquez_style_writes(engine: sa.Engine) -> None:
    writes.upsert_namespace(engine, "shop", owner="me", description="the shop")
    writes.upsert_source(engine, "pg", type="POSTGRESQL", connection_url="postgresql://db/shop")
    writes.upsert_dataset(
        engine,
        "shop",
        "orders",
        source_name="pg",
        fields=[{"name": "id", "type": "INT"}],
        description="all orders",
    )
    d = _dataset(engine, "shop", "orders")
    assert (d.description, d.source_name) == ("all orders", "pg")
    assert (
        one(engine, sa.select(s.namespaces.c.owner).where(s.namespaces.c.name == "shop"))[0] == "me"
    )
    writes.upsert_job(
        engine, "shop", "daily", location="https://git/daily.py", inputs=[("shop", "orders")]
    )
    run_id = writes.create_run(engine, "shop", "daily", args={"day": "1"})
    assert _run_by_id(engine, run_id).state == "NEW"
    assert _run_by_id(engine, run_id).facets["runArgs"]["args"] == {"day": "1"}
    writes.mark_run(engine, run_id, "start", at=datetime(2024, 1, 1, tzinfo=UTC))
    assert _run_by_id(engine, run_id).state == "RUNNING"
    writes.mark_run(engine, run_id, "complete", at=datetime(2024, 1, 1, 1, tzinfo=UTC))
    run = _run_by_id(engine, run_id)
    assert run.state == "COMPLETED" and run.ended_at == datetime(2024, 1, 1, 1, tzinfo=UTC)
    with pytest.raises(NotFound):
        writes.create_run(engine, "shop", "nope")
    with pytest.raises(NotFound):
        writes.mark_run(engine, rid("unknown"), "start")
    with pytest.raises(Exception, match="unknown run action"):
        writes.mark_run(engine, run_id, "explode")


def test_events_name_their_producer(engine: sa.Engine) -> None:
    result = record_event(engine, run_event("START", 1, "r", "job"))
    e = s.lineage_events
    row = one(engine, sa.select(e).where(e.c.uuid == result.event_uuid))
    assert row.producer == PRODUCER and row.job_name == "job" and row.run_uuid == rid("r")


def test_row_ids_are_uuid5_of_their_content() -> None:
    """Ids are stored: the fast derivation must stay exactly uuid5 of the joined parts."""
    import uuid as uuidlib

    from strata import ids

    cases = [("dataset", "s3://b", "warehouse/t"), ("job", "ns", "dag.täsk"), ("event", "")]
    for parts in cases:
        want = str(uuidlib.uuid5(ids._ROOT, "\x00".join(parts)))
        assert ids._name(*parts) == want
    assert ids.dataset_uuid("s3://b", "warehouse/t") == ids._name(*cases[0])
    assert ids.job_uuid("ns", "dag.täsk") == ids._name(*cases[1])


def test_a_parent_run_id_claimed_by_two_jobs_belongs_to_one_whatever_the_order(
    engine: sa.Engine,
) -> None:
    """One DAG name and run id in two namespaces, known only from the children."""
    children = [
        run_event("START", 1, "task_a", "dag.task", namespace="a", parent=("dag", "dag")),
        run_event("START", 2, "task_b", "dag.task", namespace="b", parent=("dag", "dag")),
    ]
    owners = set()
    for order in (children, list(reversed(children))):
        wipe(engine)
        for event in order:
            record_event(engine, event)
        owners.add(_run(engine, "dag").job_uuid)
    assert owners == {min(ids.job_uuid("a", "dag"), ids.job_uuid("b", "dag"))}


def test_a_wide_column_lineage_facet_names_its_input_datasets_once(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 edges from two inputs: the input datasets are named once, not once per edge."""
    fields = [f"f{j}" for j in range(100)]

    def table(name: str, lineage: dict[str, Any] | None = None) -> dict[str, Any]:
        schema = {"fields": [{"name": f, "type": "BIGINT"} for f in fields]}
        if lineage is None:
            return ds("ns", name, schema=schema)
        return ds("ns", name, schema=schema, columnLineage={"fields": lineage})

    def edge(source: str, field: str) -> dict[str, Any]:
        return {"namespace": "ns", "name": source, "field": field}

    lineage = {
        f: {"inputFields": [edge("left", f), edge("right", fields[(j + 1) % 100])]}
        for j, f in enumerate(fields)
    }
    event = run_event(
        "COMPLETE",
        0,
        "r1",
        "wide",
        inputs=[table("left"), table("right")],
        outputs=[table("out", lineage)],
    )
    touched: list[int] = []
    touch = rowlib.touch_dataset_rows

    def counted(conn: Any, spans: Any) -> Any:
        touched.append(len(spans))
        return touch(conn, spans)

    monkeypatch.setattr(rowlib, "touch_dataset_rows", counted)
    record_event(engine, event)
    cl = s.column_lineage
    edges = rows(engine, sa.select(cl.c.output_field, cl.c.input_field))
    assert len(edges) == 200 and ("f0", "f1") in edges and ("f99", "f0") in edges
    # The fold's dataset upserts (one statement each, through the driver): a handful.
    assert len(touched) <= 4, touched
