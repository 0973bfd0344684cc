"""Namespaces, sources and tags, read through their owners: an unknown one is
:class:`~strata.errors.NotFound`."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query.common import Page
from strata.store.owners import namespaces, sources, tags
from strata.store.owners.namespaces import Namespace
from strata.store.owners.sources import Source
from strata.store.owners.tags import Tag

# --- namespaces and sources -------------------------------------------------------------


def list_namespaces(conn: Connection, limit: int, offset: int) -> Page[Namespace]:
    return Page(*namespaces.page(conn, limit, offset))


def get_namespace(conn: Connection, name: str) -> Namespace:
    found = namespaces.get(conn, name)
    if found is None:
        raise NotFound(f"namespace {name!r} not found", namespace=name)
    return found


def list_sources(conn: Connection, limit: int, offset: int) -> Page[Source]:
    return Page(*sources.page(conn, limit, offset))


def get_source(conn: Connection, name: str) -> Source:
    found = sources.get(conn, name)
    if found is None:
        raise NotFound(f"source {name!r} not found", source=name)
    return found


# --- tags ---------------------------------------------------------------------------------


def list_tags(conn: Connection, limit: int, offset: int) -> Page[Tag]:
    return Page(*tags.page(conn, limit, offset))


def get_tag(conn: Connection, name: str) -> Tag:
    found = tags.get(conn, name)
    if found is None:
        raise NotFound(f"tag {name!r} not found", tag=name)
    return found
