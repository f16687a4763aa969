"""The test tiers: every test is marked by what it needs, read from its fixtures, and a test
that needs more than its marks say fails.

Markers (``pytest -m``; ``bash dev.sh quick`` runs ``not (process or browser or cluster or
slow)``, i.e. the pure and single-Redis tiers):

- ``redis``: a redis-server (the session's, a secure one, the plugin's, or one it starts);
- ``process``: other processes (workers, gateways, the CLI, writers, a cluster);
- ``cluster``: the 3-master Redis Cluster (also ``process``);
- ``browser``: Chromium through playwright;
- ``pure``: none of these: only this interpreter (threads and local sockets are fine).

And one marker by what a test checks, not what it needs: ``once``, the files in
:data:`ONCE`, which CI runs on its first Redis only (``dev.sh``).

A test gets a marker when its fixture closure holds one of the fixtures in :data:`ROOTS`
(the closure brings the rest: ``bb`` needs ``redis_server``). A test that starts a process
in its body, without such a fixture, carries the marker by hand (``pytestmark`` or
``@pytest.mark.process``). The marks are kept true while each test runs: a process started
by a test not marked ``process`` (a redis-server is allowed under ``redis``), or a fixture
of a tier it is not marked for asked for at run time (``request.getfixturevalue``), fails
the test with the reason (the process still starts: the test fails when its setup or body
ends).
"""

from __future__ import annotations

import os
import subprocess
import traceback
from collections.abc import Generator, Iterable
from typing import Any

import pytest

#: Fixtures that make a test need a tier. Those that pick their server at run time (the
#: ``single``/``cluster`` parametrised ones) are listed for their single side; their
#: cluster side is marked ``cluster`` by its param.
ROOTS: dict[str, frozenset[str]] = {
    "redis": frozenset({
        "redis_server", "secure_redis", "blackboard_server",  # tests/conftest.py, the plugin
        "board", "attack_base", "any_base", "target_url",  # pick bb/cbb... at run time
    }),
    # local_llm: the real model's server runs in a child (tests/support_llm.py)
    "process": frozenset({"worker_procs", "gateway_process", "start_gateway", "local_llm"}),
    "cluster": frozenset({"cluster", "secure_cluster", "attack_cluster_base",
                         "replicated_cluster"}),
    "browser": frozenset({"browser"}),  # tests/gateway/test_dashboard.py: Chromium
}
TIERS = frozenset(ROOTS)

#: Test files (or folders) that check what our code presents over the library: the CLI's
#: lines, the README's snippets, the dashboard's and MCP's answers, the Python client, the
#: benches, the drafts of a real LLM, the OpenAPI schema under fuzzing. They reach Redis
#: only through paths that the substrate, worker, gateway and security tests cover on every
#: server, so a second Redis would repeat them without testing the server (about half of
#: its process tests' time): they are marked ``once``. The CLI's quota and server
#: commands are not here (memory accounting and the embedded server are the server's).
ONCE: tuple[str, ...] = (
    "tests/bench/",
    "tests/cli/test_belief_commands.py", "tests/cli/test_cli_80col.py",
    "tests/cli/test_demo.py", "tests/cli/test_mistakes.py", "tests/cli/test_old_flags.py",
    "tests/cli/test_oom_line.py", "tests/cli/test_options.py", "tests/cli/test_output.py",
    "tests/cli/test_pool_command.py", "tests/cli/test_timeline_command.py",
    "tests/cli/test_transfer_command.py", "tests/cli/test_version_and_map_teams.py",
    "tests/consolidation/test_consolidation_llm_real.py",
    "tests/gateway/test_cli_recall_gateway.py", "tests/gateway/test_dashboard_api.py",
    "tests/gateway/test_dashboard_tools_api.py", "tests/gateway/test_mcp.py",
    "tests/gateway/test_mcp_compact.py", "tests/gateway/test_mcp_settings.py",
    "tests/gateway/test_mcp_stdio.py", "tests/gateway/test_openapi_fuzz.py",
    "tests/gateway/test_remote.py", "tests/gateway/test_rest_fuzz.py",
    "tests/test_readme_snippets.py",
    "tests/workers/test_demo_beliefs.py", "tests/workers/test_demo_consolidation.py",
    "tests/workers/test_workers_llm.py", "tests/workers/test_workers_llm_real.py",
)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_NEEDS = pytest.StashKey[frozenset[str]]()
_VIOLATIONS = pytest.StashKey[list[str]]()
_active: pytest.Item | None = None  # the test being set up or run (threads see it too)


def needs_of(fixturenames: Iterable[str]) -> set[str]:
    names = set(fixturenames)
    return {tier for tier, roots in ROOTS.items() if roots & names}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        by_hand = {t for t in TIERS if item.get_closest_marker(t)}
        needs = needs_of(getattr(item, "fixturenames", ())) | by_hand
        if "cluster" in needs:
            needs.add("process")  # a cluster is processes of its own
        for tier in sorted(needs - by_hand):
            item.add_marker(tier)
        if not needs:
            item.add_marker("pure")
        item.stash[_NEEDS] = frozenset(needs)
        if os.path.relpath(str(item.path), _ROOT).startswith(ONCE):
            item.add_marker("once")


def _message(item: pytest.Item, what: str) -> str:
    needs = sorted(item.stash.get(_NEEDS, frozenset())) or ["pure"]
    return (f"{item.nodeid} is marked {'+'.join(needs)} but {what}: give it the fixture "
            "that does it or mark it (pytest.mark.process / redis; see tests/tiers.py)")


def _where() -> str:
    """The innermost test-suite line on the stack (what started the process)."""
    for frame in reversed(traceback.extract_stack()):
        if f"{os.sep}tests{os.sep}" in frame.filename and frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno}"
    return "?"


def _check_spawn(argv: Any) -> None:
    item = _active
    if item is None:
        return
    needs = item.stash.get(_NEEDS, frozenset())
    if "process" in needs:
        return
    first = argv if isinstance(argv, str | bytes | os.PathLike) else next(iter(argv), "")
    if "redis" in needs and os.path.basename(os.fsdecode(first)) == "redis-server":
        return
    # Recorded, not raised: the test fails when the phase ends (_watch). Raising here could
    # be caught by the code under test, or poison a session fixture for every later test.
    what = f"started a process ({os.fsdecode(first)}, at {_where()})"
    item.stash.setdefault(_VIOLATIONS, []).append(_message(item, what))


_popen_init = subprocess.Popen.__init__
_fork = os.fork


def _guarded_popen_init(self: subprocess.Popen[Any], args: Any, *a: Any, **kw: Any) -> None:
    _check_spawn(args)
    _popen_init(self, args, *a, **kw)


def _guarded_fork() -> int:
    _check_spawn(["os.fork"])  # multiprocessing's fork start method
    return _fork()


# Every process start in this interpreter goes through one of these (subprocess.run,
# asyncio's subprocesses and RedisServer all use Popen).
subprocess.Popen.__init__ = _guarded_popen_init  # type: ignore[method-assign]
os.fork = _guarded_fork


def _watch(item: pytest.Item) -> Generator[None, Any, Any]:
    global _active
    _active = item
    try:
        return (yield)
    finally:
        _active = None
        found = item.stash.get(_VIOLATIONS, [])
        if found:
            item.stash[_VIOLATIONS] = []
            pytest.fail("\n".join(found), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _watch(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _watch(item))


@pytest.fixture(autouse=True)
def _tier_fixtures_asked(request: pytest.FixtureRequest) -> Generator[None]:
    """After the test: the fixtures it asked for by name at run time stay in its tiers."""
    yield
    extra = needs_of(request.fixturenames) - request.node.stash.get(_NEEDS, frozenset())
    if extra:
        what = f"asked for a {'+'.join(sorted(extra))} fixture at run time"
        pytest.fail(_message(request.node, what), pytrace=False)
