#!/usr/bin/env bash
# Install everything and run the whole test suite, with lint and type checks.
source "$(dirname "$0")/env.sh"
status=0
echo "== ruff"; { ruff check src tests bench examples && ruff format --check src tests bench examples; } || status=1
echo "== mypy"; mypy || status=1
echo "== pytest"; pytest -p no:cacheprovider "$@" || status=$?
exit "$status"
