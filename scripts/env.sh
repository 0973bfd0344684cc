# Sourced by the other scripts: make ./.venv with Strata and its dependencies installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
if ! command -v java >/dev/null 2>&1; then
  echo "Java 17 is required by Spark: install a JDK 17 (e.g. apt-get install openjdk-17-jre-headless)" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# Reinstall only when the dependency list changed since the last install.
stamp=.venv/.strata-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  echo "$want" > "$stamp"
fi
export PATH="$PWD/.venv/bin:$PATH"
# Spark's class cache, made once per machine: every later command starts Spark sooner.
strata spark-cache --quiet || echo "(Spark will start without its class cache: the line above says why)" >&2
