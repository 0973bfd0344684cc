"""Marquez's ``NamespaceIntegrationTest`` and ``TagIntegrationTest`` scenarios."""

from __future__ import annotations

import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetType

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_a_namespace_without_a_description(marquez: Marquez, ns: str) -> None:
    made = marquez.client.create_namespace(ns, "owner")
    assert (made["name"], made["ownerName"], made["description"]) == (ns, "owner", None)
    assert made["createdAt"] and made["updatedAt"]


def test_a_namespace_changes_owner_and_back(marquez: Marquez, ns: str) -> None:
    for owner in ("daniel", "willy", "daniel"):
        made = marquez.client.create_namespace(ns, owner, "home")
        assert (made["name"], made["ownerName"], made["description"]) == (ns, owner, "home")
        assert made["createdAt"] and made["updatedAt"]


def test_get_a_namespace(marquez: Marquez, ns: str) -> None:
    marquez.client.create_namespace(ns, "owner", "described")
    got = marquez.client.get_namespace(ns)
    assert (got["name"], got["ownerName"], got["description"]) == (ns, "owner", "described")
    assert got["isHidden"] is False


def test_a_deleted_namespace_reads_as_hidden(marquez: Marquez, ns: str) -> None:
    marquez.client.create_namespace(ns, "owner", "described")
    assert marquez.status("DELETE", f"/namespaces/{ns}").status_code == 200
    got = marquez.get(f"/namespaces/{ns}")
    assert (got["name"], got["isHidden"]) == (ns, True)


def _dataset(marquez: Marquez, ns: str) -> None:
    marquez.client.create_namespace(ns, "owner")
    marquez.client.create_source(f"{ns}_db", "POSTGRESQL", "postgresql://db:5432/x")
    fields = [{"name": "email", "type": "VARCHAR"}, {"name": "age", "type": "INTEGER"}]
    marquez.client.create_dataset(
        ns, "table", DatasetType.DB_TABLE, "table", f"{ns}_db", fields=fields
    )


def test_tag_a_field_and_a_dataset(marquez: Marquez, ns: str) -> None:
    _dataset(marquez, ns)
    tagged = marquez.client.tag_dataset_field(ns, "table", "email", "TESTTAG")
    assert "TESTTAG" in tagged["fields"][0]["tags"]
    tagged = marquez.client.tag_dataset(ns, "table", "TESTDATASETTAG")
    assert "TESTDATASETTAG" in tagged["tags"]


def test_create_and_upsert_tags(marquez: Marquez, ns: str) -> None:
    tag = marquez.client.create_tag(f"{ns}_tag", "Description")
    assert (tag["name"], tag["description"]) == (f"{ns}_tag", "Description")
    bare = marquez.client.create_tag(f"{ns}_tag2")
    assert (bare["name"], bare.get("description")) == (f"{ns}_tag2", None)
    again = marquez.client.create_tag(f"{ns}_tag", "New Description")
    assert again["description"] == "New Description"


def test_a_field_that_does_not_exist_cannot_be_tagged(marquez: Marquez, ns: str) -> None:
    _dataset(marquez, ns)
    answer = marquez.status("POST", f"/namespaces/{ns}/datasets/table/fields/not-exists/tags/T")
    assert answer.status_code == 404
