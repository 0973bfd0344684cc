#!/usr/bin/env bash
# Install everything and run the whole test suite, with lint and type checks.
source "$(dirname "$0")/env.sh"
# The UI tests drive Debian's Chromium through its ChromeDriver: install both when missing.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "== installing chromium and chromium-driver (Debian packages) for the UI tests"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
fi
status=0
echo "== ruff"; { ruff check src tests bench examples && ruff format --check src tests bench examples; } || status=1
echo "== mypy"; mypy || status=1
# Two workers (STRATA_TEST_WORKERS); the tests that run Spark in process share one of them.
echo "== pytest"
pytest -p no:cacheprovider -n "${STRATA_TEST_WORKERS:-2}" --dist loadgroup "$@" || status=$?
exit "$status"
