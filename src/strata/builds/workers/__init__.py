"""Builds nobody typed: the worker, commit triggers and schedules."""
