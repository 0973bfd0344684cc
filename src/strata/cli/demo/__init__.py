"""`strata demo`: the experiments pipeline, told step by step in the terminal."""

from strata.cli.demo.command import demo

__all__ = ["demo"]
