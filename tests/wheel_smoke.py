"""Smoke test of an installed wheel, run by ``bash dev.sh test`` (``wheel_smoke``) with the
Python of a fresh venv, from a directory outside the repository.

Checks what a wheel can lose and an editable install hides: the packages import from the
venv (not the clone), every Lua script is inside, the ``blackboard`` console script and
the pytest plugin's entry point are declared, and a real round trip works (a private
redis-server, a write and read through the library, the CLI, the plugin's fixtures).
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PLUGIN_TEST = '''
async def test_agent_memory_fixture(agent_memory):
    e = await agent_memory.store("the wheel remembers", tags={"smoke"})
    assert (await agent_memory.bb.scope(e.scope).get(e.id)).text == "the wheel remembers"

def test_sync_fixture(sync_agent_memory):
    assert sync_agent_memory.store({"text": "sync too"}).text == "sync too"
'''


def main() -> None:
    import blackboard
    from blackboard.scripts import SCRIPTS
    from blackboard.server import RedisServer
    from memory.sync import SyncMemory

    here = Path(blackboard.__file__).resolve()
    assert Path(sys.prefix).resolve() in here.parents, f"blackboard imported from {here}"
    lua = sorted(p.name for p in (here.parent / "scripts").glob("*.lua"))
    assert lua and len(SCRIPTS.all()) >= 10, f"Lua scripts missing from the wheel: {lua}"
    dist = md.distribution("reactive-blackboard")
    where = Path(str(dist.locate_file(""))).resolve()
    assert Path(sys.prefix).resolve() in where.parents, f"metadata read from {where}"
    eps = {(e.group, e.value) for e in dist.entry_points}
    assert ("pytest11", "pytest_blackboard") in eps, f"pytest11 entry point missing: {eps}"
    assert ("console_scripts", "cli:main") in eps, eps
    cli = Path(sys.executable).parent / "blackboard"
    subprocess.run([str(cli), "--help"], check=True, capture_output=True)

    with RedisServer() as srv:
        with SyncMemory.connect(srv.url, "smoke", default_retriever=False) as mem:
            mem.install_default_hierarchy()
            e = mem.store("hello from the wheel", tags={"smoke"})
            assert mem.bb is not None and e.text == "hello from the wheel"
        out = subprocess.run([str(cli), "map", "--agent", "smoke", "--json",
                              "--redis-url", srv.url], check=True, capture_output=True,
                             text=True).stdout
        counts = {s["scope"]: s["count"] for s in json.loads(out)["scopes"]}
        assert counts["agent:smoke:working"] == 1, counts

    with tempfile.TemporaryDirectory() as d:
        Path(d, "test_plugin.py").write_text(PLUGIN_TEST)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-o", "asyncio_mode=auto", d], cwd=d, env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    n = len(lua)
    print(f"wheel smoke: ok ({n} Lua scripts, console script, pytest plugin, round trip)")


if __name__ == "__main__":
    main()
