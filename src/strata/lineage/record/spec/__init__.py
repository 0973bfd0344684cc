"""The pinned OpenLineage 2-0-2 core schema, shipped as package data."""
