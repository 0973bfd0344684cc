"""List parameters for PostgreSQL encoded without a Python step per element.

psycopg encodes a list parameter in text form element by element in Python: a dumper
call, a regular expression to decide on quotes, an escape and two appends each, about
1 µs an element. The fold's lookups, and its writes of ids and names, send one array
per column, tens of thousands of elements a group. :class:`FastListDumper` writes a list of
strings as one array literal with passes that run in C (``join``, ``replace``), about a
tenth of that; any other list goes psycopg's own way. The server reads the same value.

(psycopg's binary form costs about a quarter of its text form; joining the elements'
bytes and lengths in C measured no faster than its loop, so it is left as it is.)

:func:`use_fast_arrays` installs the dumper on one connection.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.array import ListDumper


def array_literal(items: list[Any]) -> str | None:
    """``items`` as a PostgreSQL array literal if they are strings or None (at least one
    a string, none holding NUL, which no text may hold); else None.

    Every string is quoted, which the array syntax allows for any string, so none needs
    looking at on its own. Without NULLs, NUL separates the strings while they are all
    escaped at once."""
    kinds = set(map(type, items))
    nulls = type(None) in kinds
    if kinds - {type(None)} != {str}:
        return None
    if nulls:
        body = ",".join(['"' + _escaped(x) + '"' if x is not None else "NULL" for x in items])
        return None if "\x00" in body else "{" + body + "}"
    joined = "\x00".join(items)
    if joined.count("\x00") != len(items) - 1:
        return None
    return '{"' + _escaped(joined).replace("\x00", '","') + '"}'


def _escaped(text: str) -> str:
    """``text`` as it goes between an array literal's quotes."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


class FastListDumper(ListDumper):
    """psycopg's text array dumper, a list of strings written by :func:`array_literal`."""

    def dump(self, obj: list[Any]) -> Any:
        sub = self.sub_dumper
        literal = array_literal(obj) if sub is not None and self.delimiter == b"," else None
        if literal is None:
            return super().dump(obj)
        return sub.dump(literal)  # type: ignore[union-attr]


def use_fast_arrays(dbapi_conn: Any) -> None:
    """Encode ``dbapi_conn``'s list parameters in text form with :class:`FastListDumper`.

    A list passed as ``%s`` then takes it, as it took psycopg's text dumper; one passed
    as ``%b`` keeps psycopg's binary dumper."""
    dbapi_conn.adapters.register_dumper(list, FastListDumper)
