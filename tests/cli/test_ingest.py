"""`strata ingest` of malformed files: one error by file and line, nothing committed,
unless --permissive, which says how many rows it repaired or dropped."""

from __future__ import annotations

import json
import zlib
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from strata.cli.main import app
from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.spark
runner = CliRunner()


def invoke(settings: Settings, *args: str) -> tuple[int, str, str]:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    result = runner.invoke(app, [*where, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def seeded(settings: Settings) -> Lake:
    """raw/d at version 1, so a failed ingest can be seen to leave it there."""
    lake = Lake(settings)
    with lake.transaction("raw/d", type="APPEND") as txn:
        txn.write(pa.table({"a": pa.array([0], pa.int32()), "b": ["seed"]}))
    return lake


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("extra.csv", "a,b\n1,x\n3,z,EXTRA\n", "extra.csv line 3: 3 fields, the header has 2"),
        ("short.csv", "a,b\n1,x\n\n2\n", "short.csv line 4: 1 fields, the header has 2"),
        # A quoted value over two lines: the bad row is on the file's fifth line.
        ("quoted.csv", 'a,b\n1,"two\nlines"\n2,y\n3,z,EXTRA\n', "quoted.csv line 5: 3 fields"),
        ("bad.json", '{"a": 1, "b": "x"}\n{"a": 2,\n', "bad.json line 2: not valid JSON"),
        ("list.json", '{"a": 1, "b": "x"}\n[1, 2]\n', "list.json line 2: a JSON list"),
    ],
)
def test_a_malformed_row_fails_the_ingest_and_commits_nothing(
    settings: Settings, spark: object, tmp_path: Path, name: str, text: str, needle: str
) -> None:
    lake = seeded(settings)
    src = tmp_path / name
    src.write_text(text)
    code, out, err = invoke(settings, "ingest", str(src), "raw/d")
    assert code == 1, out
    assert needle in err
    assert "nothing was ingested" in err and "--permissive" in err
    assert "Traceback" not in err
    assert [v.commit_id for v in lake.versions("raw/d")] == [1]
    lake.engine.dispose()


def test_every_file_of_a_folder_is_checked(
    settings: Settings, spark: object, tmp_path: Path
) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "part-1.csv").write_text("a,b\n1,x\n")
    (folder / "part-2.csv").write_text("a,b\n2,y\n3\n4\n")
    (folder / "_SUCCESS").write_text("")
    code, _, err = invoke(settings, "ingest", str(folder), "raw/parts", "--format", "csv")
    assert code == 1
    assert f"{folder / 'part-2.csv'} line 3: 1 fields" in err
    assert "2 malformed rows in all" in err and "part-2.csv line 4" in err


def test_permissive_repairs_csv_rows_and_says_how_many(
    settings: Settings, spark: object, tmp_path: Path
) -> None:
    lake = seeded(settings)
    src = tmp_path / "d.csv"
    src.write_text("a,b\n1,x\n3,z,EXTRA\n4\n")
    code, out, err = invoke(settings, "ingest", str(src), "raw/d", "--permissive", "--json")
    assert code == 0, err
    assert json.loads(out)["commit_id"] == 2
    assert f"repaired 2 malformed rows ({src} line 3, {src} line 4)" in err
    rows = lake.read_arrow("raw/d", version=2).to_pylist()
    assert sorted((r["a"], r["b"]) for r in rows) == [(0, "seed"), (1, "x"), (3, "z"), (4, None)]
    lake.engine.dispose()


def test_permissive_drops_json_lines_and_says_how_many(
    settings: Settings, spark: object, tmp_path: Path
) -> None:
    src = tmp_path / "n.json"
    src.write_text('{"n": 1}\n{"n": \n\n{"n": 3}\n')
    code, out, err = invoke(settings, "ingest", str(src), "raw/n", "--permissive")
    assert code == 0, err
    assert "2 rows" in out
    assert f"dropped 1 malformed row ({src} line 2)" in err
    assert sorted(r["n"] for r in Lake(settings).read_arrow("raw/n").to_pylist()) == [1, 3]


def test_a_quoted_line_break_is_one_value(
    settings: Settings, spark: object, tmp_path: Path
) -> None:
    src = tmp_path / "q.csv"
    src.write_text('a,b\n1,"two\nlines"\n2,"say ""hi"""\n')
    code, _, err = invoke(settings, "ingest", str(src), "raw/q")
    assert code == 0, err
    rows = Lake(settings).read_arrow("raw/q").to_pylist()
    assert sorted(r["a"] for r in rows) == [1, 2]
    assert {r["b"] for r in rows} >= {"two\nlines"}


DAY_ONE = "id,amount,at\n1,2.5,2026-11-01 10:00:00\n2,3.25,2026-11-01 11:30:00\n"


@pytest.mark.parametrize("engine", [[], ["--spark"]], ids=["arrow", "spark"])
def test_an_append_is_read_with_the_datasets_schema(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    lake = Lake(settings)
    (tmp_path / "d1.csv").write_text(DAY_ONE)
    # A day whose amounts happen to be whole numbers, and a day with no rows at all.
    (tmp_path / "d2.csv").write_text("id,amount,at\n3,4,2026-11-02 09:00:00\n")
    (tmp_path / "d3.csv").write_text("id,amount,at\n")
    code, _, err = invoke(settings, "ingest", str(tmp_path / "d1.csv"), "raw/pay")
    assert code == 0, err
    first = lake.version("raw/pay").schema_fields
    for day in ("d2.csv", "d3.csv"):
        code, _, err = invoke(settings, "ingest", *engine, str(tmp_path / day), "raw/pay")
        assert code == 0, err
    versions = lake.versions("raw/pay")
    assert [v.row_count for v in versions] == [2, 3, 3]
    assert all(v.schema_fields == first for v in versions)
    assert {f["name"]: f["type"] for f in first}["amount"] == "double"
    assert {f["name"]: f["type"] for f in first}["at"] == "timestamp[us, tz=UTC]"
    rows = sorted(lake.read_arrow("raw/pay").to_pylist(), key=lambda r: r["id"])
    assert rows[2]["amount"] == 4.0 and rows[2]["at"].isoformat() == "2026-11-02T09:00:00+00:00"
    lake.engine.dispose()


@pytest.mark.parametrize("engine", [[], ["--spark"]], ids=["arrow", "spark"])
def test_an_append_takes_csv_columns_by_their_header_names(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """Columns in another order land in their own columns, not by position; a file with
    other columns, or a value that does not fit, is refused and nothing is committed."""
    lake = Lake(settings)
    (tmp_path / "d1.csv").write_text(DAY_ONE)
    assert invoke(settings, "ingest", str(tmp_path / "d1.csv"), "raw/pay")[0] == 0
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("at,id,amount\n2026-11-02 09:00:00,3,4.5\n")
    code, _, err = invoke(settings, "ingest", *engine, str(swapped), "raw/pay")
    assert code == 0, err
    row = max(lake.read_arrow("raw/pay").to_pylist(), key=lambda r: r["id"])
    assert (row["id"], row["amount"]) == (3, 4.5)
    assert row["at"].isoformat() == "2026-11-02T09:00:00+00:00"
    other = tmp_path / "other.csv"
    other.write_text("id,total\n1,2\n")
    code, _, err = invoke(settings, "ingest", *engine, str(other), "raw/pay")
    assert code == 1 and "missing ['amount', 'at'], extra ['total']" in " ".join(err.split())
    bad = tmp_path / "bad.csv"
    bad.write_text("amount,id,at\nfour,4,2026-11-02 10:00:00\n")
    code, _, err = invoke(settings, "ingest", *engine, str(bad), "raw/pay")
    flat = " ".join(err.split())
    assert code == 1 and ("value 'four'" in flat or "malformed row in" in flat), flat
    assert [v.commit_id for v in lake.versions("raw/pay")] == [1, 2]
    lake.engine.dispose()


def json_source(folder: Path, engine: list[str], name: str, text: str) -> list[str]:
    """`strata ingest`'s arguments for a JSON-lines file of ``text``: read by ``engine``,
    or (``["deflate"]``) compressed with a codec only Spark's Hadoop reads."""
    if engine != ["deflate"]:
        (folder / name).write_text(text)
        return [*engine, str(folder / name)]
    (folder / f"{name}.deflate").write_bytes(zlib.compress(text.encode()))
    return ["--format", "json", str(folder / f"{name}.deflate")]


@pytest.mark.parametrize("engine", [[], ["--spark"], ["deflate"]], ids=["arrow", "spark", "hadoop"])
def test_an_append_of_json_lines_refuses_keys_the_dataset_lacks(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """A key the dataset has no column for is refused, not dropped (a missing key is a
    null); also from a source only Spark reads (Hadoop's deflate), found by its own pass."""
    lake = Lake(settings)
    (tmp_path / "d1.json").write_text('{"id": 1, "amount": 2.5}\n')
    assert invoke(settings, "ingest", str(tmp_path / "d1.json"), "raw/pay")[0] == 0

    extra = json_source(
        tmp_path, engine, "extra.json", '{"id": 2, "amount": 1.0, "note": "kept?"}\n'
    )
    code, _, err = invoke(settings, "ingest", *extra, "raw/pay")
    assert code == 1 and "columns (extra ['note'])" in " ".join(err.split()), err
    fewer = json_source(tmp_path, engine, "fewer.json", '{"id": 3}\n')
    code, _, err = invoke(settings, "ingest", *fewer, "raw/pay")
    assert code == 0, err
    rows = sorted(lake.read_arrow("raw/pay").to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "amount": 2.5}, {"id": 3, "amount": None}]
    lake.engine.dispose()


@pytest.mark.parametrize("engine", [[], ["--spark"], ["deflate"]], ids=["arrow", "spark", "hadoop"])
def test_an_append_of_json_lines_refuses_nested_keys_the_dataset_lacks(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """A key within an object, or within an array's objects, that its struct has no
    field for is refused by its dotted name; the keys of a map are its data. Maps, dates
    and binary, which pyarrow reads otherwise or not at all, land as Spark reads them."""
    lake = Lake(settings)
    attrs = pa.struct(
        [("colour", pa.string()), ("sizes", pa.list_(pa.struct([("eu", pa.int64())])))]
    )
    with lake.transaction("raw/items", type="APPEND") as txn:
        txn.write(
            pa.table(
                {
                    "id": pa.array([1], pa.int64()),
                    "attrs": pa.array([{"colour": "red", "sizes": [{"eu": 40}]}], attrs),
                    "tags": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64())),
                    "day": pa.array([date(2026, 11, 1)], pa.date32()),
                    "blob": pa.array([b"x"], pa.binary()),
                }
            )
        )

    deep = '{"id": 2, "attrs": {"colour": "blue", "fabric": "wool"}}\n'
    code, _, err = invoke(
        settings, "ingest", *json_source(tmp_path, engine, "deep.json", deep), "raw/items"
    )
    assert code == 1 and "columns (extra ['attrs.fabric'])" in " ".join(err.split()), err
    in_array = '{"id": 3, "attrs": {"sizes": [{"eu": 41, "us": 8}]}}\n'
    code, _, err = invoke(
        settings, "ingest", *json_source(tmp_path, engine, "in_array.json", in_array), "raw/items"
    )
    assert code == 1 and "columns (extra ['attrs.sizes.us'])" in " ".join(err.split()), err
    assert [v.commit_id for v in lake.versions("raw/items")] == [1]

    fits = (
        '{"id": 4, "attrs": {"sizes": [{"eu": 42}]}, "tags": {"b": 2}, "day": "2026-11-02", '
        '"blob": "aGk="}\n'
    )
    code, _, err = invoke(
        settings, "ingest", *json_source(tmp_path, engine, "fits.json", fits), "raw/items"
    )
    assert code == 0, err
    got = {r["id"]: r for r in lake.read_arrow("raw/items").to_pylist()}
    assert got[4]["attrs"] == {"colour": None, "sizes": [{"eu": 42}]}
    assert got[4]["tags"] == [("b", 2)] and got[4]["day"] == date(2026, 11, 2)
    assert got[4]["blob"] == b"hi"  # JSON's binary is base64, as `strata read --json` writes it
    lake.engine.dispose()


@pytest.mark.parametrize("engine", [[], ["--spark"]], ids=["arrow", "spark"])
def test_a_new_dataset_from_json_whose_key_holds_numbers_and_text_reads_it_as_text(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """pyarrow infers no one type for such a key; the file is Spark's to read then, so
    a small file lands as a large one would."""
    src = tmp_path / "mixed.json"
    src.write_text('{"code": 1, "n": 1}\n{"code": "A7", "n": 2}\n')
    code, _, err = invoke(settings, "ingest", *engine, str(src), "raw/codes")
    assert code == 0, err
    lake = Lake(settings)
    assert lake.schema_of("raw/codes").field("code").type == pa.string()
    rows = sorted(lake.read_arrow("raw/codes").to_pylist(), key=lambda r: r["n"])
    assert [r["code"] for r in rows] == ["1", "A7"]
    lake.engine.dispose()


@pytest.mark.parametrize("engine", [[], ["--spark"]], ids=["arrow", "spark"])
def test_an_append_of_parquet_needs_the_datasets_columns_and_fields(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """A Parquet file with a column or struct field the dataset lacks, or without one of
    its columns, is refused by name whichever engine reads it (Spark, given the
    dataset's schema, would drop the one and fill the other with nulls)."""
    lake = Lake(settings)
    point = pa.struct([("x", pa.int64())])
    with lake.transaction("raw/points", type="APPEND") as txn:
        txn.write(pa.table({"id": pa.array([1], pa.int64()), "p": pa.array([{"x": 1}], point)}))

    def parquet(name: str, table: pa.Table) -> str:
        pq.write_table(table, tmp_path / name)
        return str(tmp_path / name)

    wider = pa.struct([("x", pa.int64()), ("y", pa.string())])
    sources = {
        "extra ['p.y']": pa.table({"id": [2], "p": pa.array([{"x": 2, "y": "lost?"}], wider)}),
        "extra ['note']": pa.table({"id": [3], "p": pa.array([{"x": 3}], point), "note": ["n"]}),
        "missing ['p']": pa.table({"id": [4]}),
    }
    for says, table in sources.items():
        code, _, err = invoke(
            settings, "ingest", *engine, parquet("bad.parquet", table), "raw/points"
        )
        assert code == 1 and f"columns ({says})" in " ".join(err.split()), err
    # A value of another type: pyarrow's cast and Spark's reader each name the column.
    other = pa.table({"id": ["seven"], "p": pa.array([{"x": 6}], point)})
    code, _, err = invoke(settings, "ingest", *engine, parquet("bad.parquet", other), "raw/points")
    says = (
        "Parquet column [id]. Expected Spark type bigint, actual Parquet type BINARY. Nothing "
        "was ingested"
        if engine
        else "column 'id' cannot be read as the dataset's int64"
    )
    assert code == 1 and says in " ".join(err.split()), err
    assert [v.commit_id for v in lake.versions("raw/points")] == [1]
    fits = pa.table({"p": pa.array([{"x": 5}], point), "id": pa.array([5], pa.int64())})
    code, _, err = invoke(settings, "ingest", *engine, parquet("fits.parquet", fits), "raw/points")
    assert code == 0, err
    assert sorted(r["p"]["x"] for r in lake.read_arrow("raw/points").to_pylist()) == [1, 5]
    lake.engine.dispose()


@pytest.mark.parametrize("engine", [[], ["--spark"]], ids=["arrow", "spark"])
def test_a_header_naming_a_column_twice_is_refused_before_either_engine(
    settings: Settings, spark: object, tmp_path: Path, engine: list[str]
) -> None:
    """Spark would rename the two columns (a0, a1), pyarrow keep both under one name and
    commit a version no reader can read: the ingest is refused, whichever reads it."""
    src = tmp_path / "dup.csv"
    src.write_text("id,Id\n1,2\n")
    code, _, err = invoke(settings, "ingest", *engine, str(src), "raw/dup")
    flat = " ".join(err.split())
    assert code == 1 and "columns 1 and 2, 'id' and 'Id', differ only in case" in flat, flat
    assert "nothing was ingested" in flat
    assert "raw/dup" not in [d.name for d in Lake(settings).datasets()]


def test_a_new_dataset_has_the_same_types_whichever_engine_reads_its_file(
    settings: Settings, spark: object, tmp_path: Path
) -> None:
    """A small file is read by pyarrow, a large one by Spark: the types of the dataset
    they make must not hang on which. Whole numbers are 64-bit, a JSON string that looks
    like a time or a date stays a string (Spark infers no times from JSON), and a JSON
    source's fields are in name order."""
    (tmp_path / "d.csv").write_text(
        "id,amount,day,at,ok,note\n1,2.5,2026-11-01,2026-11-01 10:00:00,true,\n"
        "2,3,2026-11-02,2026-11-02 11:30:00,false,\n"
    )
    (tmp_path / "d.json").write_text(
        '{"id": 1, "day": "2026-11-01", "at": "2026-11-01T10:00:00Z", '
        '"s": {"when": "2026-11-01", "n": 1}, "tags": ["2026-11-01"]}\n'
    )
    lake = Lake(settings)
    for fmt in ("csv", "json"):
        for engine in ([], ["--spark"]):
            name = f"raw/{fmt}_{'spark' if engine else 'arrow'}"
            code, _, err = invoke(settings, "ingest", *engine, str(tmp_path / f"d.{fmt}"), name)
            assert code == 0, err
        arrow, spark_read = (lake.schema_of(f"raw/{fmt}_{e}") for e in ("arrow", "spark"))
        assert [(f.name, f.type) for f in arrow] == [(f.name, f.type) for f in spark_read], fmt
    assert lake.schema_of("raw/csv_arrow").field("id").type == pa.int64()
    json_types = lake.schema_of("raw/json_arrow")
    assert json_types.field("day").type == json_types.field("at").type == pa.string()
    # Spark's order: a JSON source's fields by name, at every level.
    assert json_types.names == ["at", "day", "id", "s", "tags"]
    assert json_types.field("s").type == pa.struct([("n", pa.int64()), ("when", pa.string())])
    assert lake.read_arrow("raw/json_arrow").to_pylist()[0]["day"] == "2026-11-01"
    lake.engine.dispose()


def test_a_value_that_does_not_fit_the_dataset_is_refused_by_line(
    settings: Settings, tmp_path: Path
) -> None:
    lake = Lake(settings)
    (tmp_path / "d1.csv").write_text(DAY_ONE)
    assert invoke(settings, "ingest", str(tmp_path / "d1.csv"), "raw/pay")[0] == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("id,amount,at\n3,4,2026-11-02 09:00:00\n4,four,2026-11-02 10:00:00\n")
    code, _, err = invoke(settings, "ingest", str(bad), "raw/pay")
    assert code == 1
    flat = " ".join(err.split())
    assert f"{bad} line 3: column 'amount' value 'four' does not fit the dataset's double" in flat
    late = tmp_path / "late.csv"
    late.write_text("id,amount,at\n5,1,yesterday\n")
    code, _, err = invoke(settings, "ingest", str(late), "raw/pay")
    assert code == 1 and "line 2: column 'at' value 'yesterday'" in " ".join(err.split())
    other = tmp_path / "other.csv"
    other.write_text("id,total\n1,2\n")
    code, _, err = invoke(settings, "ingest", str(other), "raw/pay")
    assert code == 1 and "missing ['amount', 'at'], extra ['total']" in " ".join(err.split())
    assert [v.commit_id for v in lake.versions("raw/pay")] == [1]
    lake.engine.dispose()


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"\x00" * 5000, "has NUL bytes: it is not a text CSV file"), (b"", "is empty")],
    ids=["nul", "empty"],
)
def test_a_file_that_is_no_csv_is_refused_by_strata(
    settings: Settings, tmp_path: Path, content: bytes, says: str
) -> None:
    src = tmp_path / "x.csv"
    src.write_bytes(content)
    code, out, err = invoke(settings, "ingest", str(src), "raw/x")
    assert code == 1, out
    assert says in " ".join(err.split()) and "nothing was ingested" in " ".join(err.split())
    assert "Exception" not in err and "Traceback" not in err  # no Spark error shown
    assert Lake(settings).datasets() == []
