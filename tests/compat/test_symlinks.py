"""A dataset's ``symlinks`` facet, as Marquez reads it: each symlink name (the Hive
table behind a warehouse path) resolves to the dataset that declares it, in reads and
in lineage, and the symlink's namespace exists. Replayed with OpenLineage's Dataproc
scenario, in the order sent and reversed: the answers do not depend on arrival order."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from dataproc import dataproc_events
from marquez_api import Marquez

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

T1, T2 = "/user/hive/warehouse/t1", "/user/hive/warehouse/t2"


def _sent(marquez: Marquez, ns: str, order: str) -> tuple[str, str, str]:
    events = dataproc_events(ns)
    marquez.send(*(reversed(events) if order == "reversed" else events))
    return f"hdfs://{ns}", f"hive://{ns}:9083", f"hdfs://{ns}/user/hive/warehouse"


def _ids(graph: list[dict[str, Any]]) -> set[str]:
    return {n["id"] for n in graph}


@pytest.mark.parametrize("order", ["as sent", "reversed"])
def test_a_hive_table_name_reads_the_dataset_of_its_path(
    marquez: Marquez, ns: str, order: str
) -> None:
    hdfs, hive, warehouse = _sent(marquez, ns, order)
    # Both namespaces the symlinks name exist, as Marquez creates them.
    for name in (hive, warehouse):
        assert marquez.client.get_namespace(name)["name"] == name
    by_path = marquez.client.get_dataset(hdfs, T1)
    for symlink_ns in (hive, warehouse):  # t1 was named under both over its events
        by_table = marquez.client.get_dataset(symlink_ns, "default.t1")
        assert by_table == by_path
    assert by_path["id"] == {"namespace": hdfs, "name": T1}
    assert marquez.client.list_dataset_versions(
        hive, "default.t2"
    ) == marquez.client.list_dataset_versions(hdfs, T2)
    version = marquez.client.list_dataset_versions(hdfs, T2)["versions"][0]["version"]
    path = f"/namespaces/{quote(hive, safe='')}/datasets/default.t2/versions/{version}"
    assert marquez.get(path)["id"] == {"namespace": hdfs, "name": T2, "version": version}
    # The symlink's namespace holds no dataset of its own: the name is an alias.
    assert marquez.client.list_datasets(hive)["datasets"] == []


@pytest.mark.parametrize("order", ["as sent", "reversed"])
def test_lineage_by_a_hive_table_name_is_the_lineage_of_its_path(
    marquez: Marquez, ns: str, order: str
) -> None:
    hdfs, hive, _ = _sent(marquez, ns, order)
    by_table = marquez.get("/lineage", nodeId=f"dataset:{hive}:default.t2")["graph"]
    by_path = marquez.get("/lineage", nodeId=f"dataset:{hdfs}:{T2}")["graph"]
    assert _ids(by_table) == _ids(by_path)
    assert {f"dataset:{hdfs}:{T1}", f"dataset:{hdfs}:{T2}"} <= _ids(by_table)
    field = marquez.get("/column-lineage", nodeId=f"datasetField:{hive}:default.t2:a")["graph"]
    same = marquez.get("/column-lineage", nodeId=f"datasetField:{hdfs}:{T2}:a")["graph"]
    assert field == same
    assert {f"datasetField:{hdfs}:{T1}:a", f"datasetField:{hdfs}:{T2}:a"} <= _ids(field)


def test_an_unknown_symlink_name_is_not_found(marquez: Marquez, ns: str) -> None:
    _, hive, _ = _sent(marquez, ns, "as sent")
    answer = marquez.status("GET", f"/namespaces/{quote(hive, safe='')}/datasets/default.t9")
    assert answer.status_code == 404
    assert "default.t9" in answer.json()["message"]
