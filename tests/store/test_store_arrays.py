"""List parameters on PostgreSQL: the one-pass array literal reads back as psycopg's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.adapt import PyFormat

from strata.store.arrays import FastListDumper, array_literal
from strata.store.engine import create_engine

ODD = ["", "NULL", "null", " a ", "a,b", "{x}", '"q"', "back\\slash", '\\"', "é日本😀", "\t\n", "}"]


@pytest.fixture(scope="module")
def pg(pg_shared_url: str) -> Iterator[sa.Engine]:
    eng = create_engine(pg_shared_url, poolclass=sa.pool.NullPool)
    yield eng
    eng.dispose()


def _round_trip(eng: sa.Engine, items: list[Any]) -> Any:
    """``items`` sent as a list parameter in text form, read back as text[]."""
    with eng.connect() as conn:
        via_sqlalchemy = conn.execute(sa.text("SELECT CAST(:a AS TEXT[])"), {"a": items}).scalar()
        raw = conn.connection.dbapi_connection
        with raw.cursor() as cur:  # type: ignore[union-attr]
            cur.execute("SELECT %s::varchar[]", (items,))
            via_driver = cur.fetchone()[0]  # type: ignore[index]
    assert via_sqlalchemy == via_driver
    return via_driver


def test_the_store_s_connections_write_lists_in_one_pass(pg: sa.Engine) -> None:
    with pg.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw.adapters.get_dumper(list, PyFormat.TEXT) is FastListDumper  # type: ignore[union-attr]
        assert raw.adapters.get_dumper(list, PyFormat.AUTO) is FastListDumper  # type: ignore[union-attr]
        assert raw.adapters.get_dumper(list, PyFormat.BINARY) is not FastListDumper  # type: ignore[union-attr]


@pytest.mark.parametrize("items", [ODD, [*ODD, None], [None, "x", None], ["only"]])
def test_strings_that_need_quotes_or_escapes_read_back_unchanged(
    pg: sa.Engine, items: list[Any]
) -> None:
    assert array_literal(items) is not None
    assert _round_trip(pg, items) == items


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
        ),
        min_size=1,
    ).filter(lambda xs: any(x is not None for x in xs))
)
def test_any_strings_read_back_unchanged(pg: sa.Engine, items: list[str | None]) -> None:
    assert _round_trip(pg, items) == items


@pytest.mark.parametrize("items", [["a", "b\x00c"], ["a", None, "\x00"]])
def test_a_string_holding_nul_is_refused_as_psycopg_refuses_it(
    pg: sa.Engine, items: list[Any]
) -> None:
    assert array_literal(items) is None
    with pytest.raises(sa.exc.DataError, match="NUL"):
        _round_trip(pg, items)


def test_lists_of_other_elements_go_psycopg_s_way(pg: sa.Engine) -> None:
    assert array_literal([1, 2]) is None and array_literal(["a", 1]) is None
    assert array_literal([None, None]) is None and array_literal([]) is None
    assert _round_trip(pg, [1, 22]) == ["1", "22"]
    assert _round_trip(pg, []) == []
    with pg.connect() as conn, conn.connection.dbapi_connection.cursor() as cur:  # type: ignore[union-attr]
        cur.execute("SELECT %s::int[]", ([[1, None], [3, 4]],))
        assert cur.fetchone()[0] == [[1, None], [3, 4]]  # type: ignore[index]
