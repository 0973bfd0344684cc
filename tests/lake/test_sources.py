"""Malformed rows of local CSV and JSON-lines sources, by physical line number."""

from __future__ import annotations

import gzip
from pathlib import Path

from strata.lake.sources import SHOWN, check_source


def lines(path: Path, fmt: str) -> list[int]:
    found = check_source(str(path), fmt)
    assert found.checked
    return [m.line for m in found.first]


def test_csv_line_numbers_count_blank_lines_crlf_and_quoted_breaks(tmp_path: Path) -> None:
    src = tmp_path / "d.csv"
    src.write_bytes(b'a,b\r\n\r\n1,"x\r\ny"\r\n2\r\n   \r\n3,z,EXTRA\r\n')
    assert lines(src, "csv") == [5, 7]
    assert check_source(str(src), "csv").multiline


def test_csv_backslash_and_doubled_quotes_keep_two_fields(tmp_path: Path) -> None:
    src = tmp_path / "d.csv"
    src.write_text('a,b\n"say ""hi"", x",1\n"he said \\"no\\", y",2\n')
    found = check_source(str(src), "csv")
    assert found.count == 0 and not found.multiline


def test_json_lines_end_at_cr_lf_or_crlf(tmp_path: Path) -> None:
    src = tmp_path / "d.json"
    src.write_bytes(b'{"a": 1}\r{"a": 2}\r\n\n"text"\n{"a": \n')
    found = check_source(str(src), "json")
    assert [(m.line, m.problem.split(" (")[0]) for m in found.first] == [
        (4, "a JSON str, not an object"),
        (5, "not valid JSON"),
    ]


def test_gzip_is_read_and_only_the_first_rows_are_named(tmp_path: Path) -> None:
    src = tmp_path / "d.csv.gz"
    body = "a,b\n" + "".join(f"{i}\n" for i in range(SHOWN + 3))
    src.write_bytes(gzip.compress(body.encode()))
    found = check_source(str(src), "csv")
    assert found.count == SHOWN + 3
    assert [m.line for m in found.first] == list(range(2, 2 + SHOWN))


def test_a_folder_skips_hidden_and_underscore_files(tmp_path: Path) -> None:
    (tmp_path / "part-0.json").write_text('{"a": 1}\n')
    (tmp_path / "_SUCCESS").write_text("not json")
    (tmp_path / ".part-0.json.crc").write_text("not json")
    found = check_source(tmp_path.as_uri(), "json")
    assert found.checked and found.files == 1 and found.count == 0


def test_what_python_cannot_read_is_left_to_spark(tmp_path: Path) -> None:
    (tmp_path / "d.csv.snappy").write_bytes(b"\x00\x01")
    assert not check_source(str(tmp_path / "d.csv.snappy"), "csv").checked
    assert not check_source("s3a://bucket/d.csv", "csv").checked
    assert not check_source(str(tmp_path), "parquet").checked


def test_column_names_that_make_no_column_are_refused(tmp_path: Path) -> None:
    """A CSV header or JSON keys that name a column twice (or alike but for case, as
    Spark resolves names), or not at all: Spark would rename them, pyarrow keep both."""
    cases = {
        "dup.csv": ("a,a\n1,2\n", "dup.csv's header: columns 1 and 2 are both named 'a'"),
        "case.csv": ("a,b,A\n1,2,3\n", "columns 1 and 3, 'a' and 'A', differ only in case"),
        "blank.csv": ("a,\n1,2\n", "blank.csv's header: column 2 has no name"),
        "case.json": ('{"a": 1}\n{"A": 2}\n', "case.json's keys ['A', 'a'] differ only in case"),
        "blank.json": ('{"": 1, "b": 2}\n', "blank.json has a key with no name"),
    }
    for name, (text, says) in cases.items():
        (tmp_path / name).write_text(text)
        found = check_source(str(tmp_path / name), name.rsplit(".", 1)[1])
        assert any(says in r for r in found.refused), (name, found.refused)
    (tmp_path / "fine.csv").write_text("a,b\n1,2\n")
    assert check_source(str(tmp_path / "fine.csv"), "csv").refused == []
