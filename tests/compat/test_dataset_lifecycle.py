"""The rest of Marquez's ``DatasetIntegrationTest``: a description kept, datasets deleted
and back, namespaces deleted and back, and a table's versions from a PUT, a writer and
a reader."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetType

from ol_events import facet, run_event

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FIELDS = [
    {"name": "a", "type": "INTEGER", "tags": [], "description": "the a"},
    {"name": "b", "type": "VARCHAR", "tags": [], "description": "the b"},
]


def _table(marquez: Marquez, ns: str, **meta: Any) -> dict[str, Any]:
    """``createDataset(NAMESPACE_NAME, DB_TABLE_NAME, DB_TABLE_META)``."""
    marquez.client.create_namespace(ns, "me")
    marquez.client.create_source(f"{ns}_db", "POSTGRESQL", "postgresql://db.example.com/x")
    meta.setdefault("fields", FIELDS)
    meta.setdefault("description", "a table")
    return marquez.client.create_dataset(
        ns, "table", DatasetType.DB_TABLE, "public.table", f"{ns}_db", **meta
    )


def _read(ns: str, name: str, job: str = "job_name", **facets: Any) -> dict[str, Any]:
    """A COMPLETE run of ``job`` reading ``name`` with ``newDatasetFacet()``-like facets."""
    read = {"namespace": ns, "name": name, "facets": {"documentation": facet(description="d")}}
    read["facets"].update(facets)
    return run_event(job=job, namespace=ns, inputs=[read])


def _listed(marquez: Marquez, ns: str) -> list[str]:
    return sorted(d["name"] for d in marquez.client.list_datasets(ns)["datasets"])


def test_a_put_without_a_description_keeps_it(marquez: Marquez, ns: str) -> None:
    assert _table(marquez, ns)["description"] == "a table"
    again = marquez.client.create_dataset(
        ns, "table", DatasetType.DB_TABLE, "public.table", f"{ns}_db", fields=FIELDS
    )
    assert again["description"] == "a table"


def test_a_deleted_dataset_is_not_listed_until_a_new_event_names_it(
    marquez: Marquez, ns: str
) -> None:
    marquez.send(_read(ns, "table"))
    assert _listed(marquez, ns) == ["table"]
    assert marquez.status("DELETE", f"/namespaces/{ns}/datasets/table").status_code == 200
    assert _listed(marquez, ns) == []
    marquez.send(_read(ns, "table"))
    assert _listed(marquez, ns) == ["table"]


def test_a_deleted_namespace_hides_its_datasets_and_jobs_until_an_event_names_it(
    marquez: Marquez, ns: str
) -> None:
    marquez.send(_read(ns, "table"), _read(ns, "table2", "second_job_name"))
    assert _listed(marquez, ns) == ["table", "table2"]
    assert marquez.status("DELETE", f"/namespaces/{ns}").status_code == 200
    hidden = {
        n["name"]: n["isHidden"] for n in marquez.get("/namespaces", limit=10_000)["namespaces"]
    }
    assert hidden.get(ns) is True
    assert _listed(marquez, ns) == [] and marquez.client.list_jobs(ns)["jobs"] == []

    marquez.send(_read(ns, "table"))
    shown = marquez.get(f"/namespaces/{ns}")
    assert shown["isHidden"] is False
    assert _listed(marquez, ns) == ["table"]
    assert [j["name"] for j in marquez.client.list_jobs(ns)["jobs"]] == ["job_name"]


def test_a_tables_versions_from_a_put_a_writer_and_a_reader(marquez: Marquez, ns: str) -> None:
    _table(marquez, ns, tags=["PII"])
    schema = facet(fields=[{"name": "firstname", "type": "string", "description": "first"}])
    written = {
        "namespace": ns,
        "name": "table",
        "facets": {
            "schema": schema,
            "documentation": facet(description="a table"),
            "outputFacetKey": facet(value="outputFacetValue"),
        },
        "outputFacets": {"outputStatistics": facet(rowCount=10, size=100)},
    }
    writer, now = str(uuid.uuid4()), datetime.now(UTC).isoformat()
    marquez.send(run_event(run_id=writer, job="job", namespace=ns, at=now, outputs=[written]))
    reader_facets = {**written["facets"], "inputFacetKey": facet(value="inputFacetValue")}
    read = {"namespace": ns, "name": "table", "facets": reader_facets}
    marquez.send(run_event(job="aReadOnlyJob", namespace=ns, at=now, inputs=[read]))

    versions = marquez.client.list_dataset_versions(ns, "table")["versions"]
    assert len(versions) == 2
    for version in versions:
        assert version["id"]["namespace"] == ns and version["name"] == "table"
        assert version["createdAt"] and version["version"]
        assert version["description"] == "a table"
    # Listed, a version shows its dataset facets (Marquez: output facets only read alone);
    # a reader's facets stay the reader's (see docs/api.md, Differences from Marquez).
    assert versions[0]["facets"] == written["facets"]

    initial = marquez.client.get_dataset_version(ns, "table", versions[-1]["version"])
    assert (initial["physicalName"], initial["sourceName"]) == ("public.table", f"{ns}_db")
    assert [(f["name"], f["type"]) for f in initial["fields"]] == [
        ("a", "INTEGER"),
        ("b", "VARCHAR"),
    ]
    assert initial["tags"] == ["PII"] and initial["createdByRun"] is None
    # Marquez: no facets; Strata shows the PUT as the facets an event would carry it in.
    assert set(initial["facets"]) == {"schema", "documentation", "dataSource"}
    assert [f["name"] for f in initial["facets"]["schema"]["fields"]] == ["a", "b"]

    latest = marquez.client.get_dataset_version(ns, "table", versions[0]["version"])
    assert latest["createdByRun"]["id"] == writer
    assert latest["facets"] == {**written["facets"], **written["outputFacets"]}


def test_a_symlinked_table_keeps_its_own_name(marquez: Marquez, ns: str) -> None:
    _table(marquez, ns)
    symlinks = facet(identifiers=[{"namespace": "symlinkNamespace", "name": "symlinkName"}])
    marquez.send(_read(ns, "table", "job", symlinks=symlinks))
    versions = marquez.client.list_dataset_versions(ns, "table")["versions"]
    assert versions and {v["name"] for v in versions} == {"table"}
