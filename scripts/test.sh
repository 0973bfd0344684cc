#!/usr/bin/env bash
# Install everything and run the whole test suite, with lint and type checks.
source "$(dirname "$0")/env.sh"
echo "== ruff"; ruff check src tests bench; ruff format --check src tests bench
echo "== mypy"; mypy
echo "== pytest"; exec pytest -p no:cacheprovider "$@"
