"""The ``strata`` command as its own process: the console script and ``python -m strata.cli``."""

from __future__ import annotations


def run() -> None:
    from strata.cli import process

    process.claim()
    with process.kept_for_the_command():
        from strata.cli.main import app
    app()


if __name__ == "__main__":  # pragma: no cover
    run()
