"""Staleness: whether a dataset is out of date and every cause, as types."""
