"""Every code block in the README runs as pasted (issue 30 item 3).

A block's kind comes from its fence and from an HTML comment on the line just above it
(invisible on GitHub), ``<!-- snippet: KIND -->``:

- ``python`` blocks run as scripts, each in its own interpreter, against a private Redis
  (the only rewrite: the README's ``localhost:6379`` or ``127.0.0.1:6379`` becomes that
  server's address, and ``localhost:8080`` / ``--port 8080`` a free port);
- ``<!-- snippet: pytest -->`` runs the block as a test file under the pytest plugin;
- ``<!-- snippet: run -->`` on a ``bash`` block runs it with ``bash -euo pipefail`` in a
  scratch directory, the project's ``blackboard`` on PATH and the private Redis in
  ``BLACKBOARD_REDIS_URL`` (same rewrites; a block using ``curl`` skips, saying so, where
  there is none); what it leaves running in the background is stopped after it;
- ``<!-- snippet: tested-by tests/… -->``: another test runs the block (the named file must
  exist and read the README), e.g. the gateway examples, which need a gateway and a token;
- ``<!-- snippet: skip: REASON -->``: never run (what CI itself runs, installs, a server
  that runs until stopped, a remote LLM), with the reason said;
- ``json`` and ``yaml`` blocks must parse; ``text`` blocks are output, not code.

A ``bash`` block without a marker fails the test, so a new shell example says what it needs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from blackboard.server import RedisServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The README's addresses, and what the tests put in their place.
README_REDIS = ("localhost:6379", "127.0.0.1:6379")
README_GATEWAY = ("localhost:8080", "--port 8080")
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARK = re.compile(r"^<!-- snippet: (.+?) -->\s*$")
#: What a block may say it is, beyond its fence's default.
KINDS = ("run", "pytest", "tested-by", "skip")


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    mark: str  # the comment's text, "" when none

    @property
    def kind(self) -> str:
        if self.mark:
            return self.mark.split(":")[0].split(" ")[0]
        return {"python": "run", "json": "json", "yaml": "yaml", "text": "text"}.get(
            self.lang, "")

    def __str__(self) -> str:
        first = self.code.splitlines()[0] if self.code else ""
        return f"README.md:{self.line} ({self.lang}, {self.kind or 'no marker'}): {first[:60]!r}"


def blocks(text: str | None = None) -> Iterator[Block]:
    lines = (text if text is not None else README.read_text(encoding="utf-8")).splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        mark = _MARK.match(lines[i - 1]) if i else None
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        yield Block(i + 1, m.group(1), "\n".join(lines[i + 1:end]) + "\n",
                    mark.group(1).strip() if mark else "")
        i = end + 1


def _of(kind: str) -> list[Block]:
    return [b for b in blocks() if b.kind == kind]


def test_the_parser_reads_fences_and_markers() -> None:
    text = ("x\n```python\nprint(1)\n```\n<!-- snippet: skip: needs a GPU -->\n```bash\n"
            "nvidia-smi\n```\n```bash\nls\n```\n")
    got = list(blocks(text))
    assert [(b.line, b.lang, b.kind, b.code) for b in got] == [
        (2, "python", "run", "print(1)\n"), (6, "bash", "skip", "nvidia-smi\n"),
        (9, "bash", "", "ls\n")]


def test_every_block_says_what_it_is() -> None:
    bad = [str(b) for b in blocks() if b.kind not in (*KINDS, "json", "yaml", "text")]
    bad += [f"{b}: say why" for b in _of("skip") if not b.mark.partition(":")[2].strip()]
    assert bad == [], "add <!-- snippet: run|pytest|tested-by FILE|skip: why --> above these"


def test_a_block_tested_elsewhere_is_read_there() -> None:
    for b in _of("tested-by"):
        path = ROOT / b.mark.split(None, 1)[1]
        assert path.is_file(), f"{b}: {path} does not exist"
        assert "README.md" in path.read_text(encoding="utf-8"), f"{b}: {path} never reads it"


def test_every_python_block_compiles_as_a_script() -> None:
    bad = []
    for b in blocks():
        if b.lang == "python":
            try:
                compile(b.code, str(b), "exec")
            except SyntaxError as exc:
                bad.append(f"{b}: {exc.msg}")
    assert bad == []


def test_every_json_and_yaml_block_parses() -> None:
    import yaml

    for b in _of("json"):
        json.loads(b.code)
    for b in _of("yaml"):
        yaml.safe_load(b.code)


@pytest.fixture(scope="module")
def private_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_run_here(code: str, server: RedisServer) -> str:
    for addr in README_REDIS:
        code = code.replace(addr, f"127.0.0.1:{server.port}")
    port = _free_port()
    return code.replace(README_GATEWAY[0], f"127.0.0.1:{port}").replace(
        README_GATEWAY[1], f"--port {port}")


def _run(block: Block, argv: list[str], cwd: Path, url: str | None = None) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("BLACKBOARD_REDIS_URL", None)
    if url:
        env["BLACKBOARD_REDIS_URL"] = url
    # its own process group: what a block starts in the background ends with the test
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, f"{block} exited {proc.returncode}:\n{out}"


@pytest.mark.process
@pytest.mark.parametrize("block", _of("run"), ids=str)
def test_the_block_runs_as_pasted(block: Block, private_redis: RedisServer,
                                  tmp_path: Path) -> None:
    import redis

    with redis.Redis.from_url(private_redis.url) as r:
        r.flushall()
        r.execute_command("ACL", "SETUSER", "default", "on", "nopass")  # a block may close it
    code = _as_run_here(block.code, private_redis)
    if block.lang == "python":
        script = tmp_path / "snippet.py"
        script.write_text(code, encoding="utf-8")
        _run(block, [sys.executable, str(script)], tmp_path, private_redis.url)
        return
    assert block.lang == "bash", f"{block}: only python and bash blocks run"
    if "curl " in code and shutil.which("curl") is None:
        pytest.skip(f"{block} uses curl, which this machine does not have")
    try:
        _run(block, ["bash", "-euo", "pipefail", "-c", code], tmp_path, private_redis.url)
    finally:  # the next block starts from an open default user again
        with redis.Redis.from_url(private_redis.url, password=_password(tmp_path)) as r:
            r.execute_command("ACL", "SETUSER", "default", "on", "nopass")


def _password(cwd: Path) -> str | None:
    pw = cwd / "admin.pw"
    return pw.read_text().strip() if pw.exists() else None


@pytest.mark.process
@pytest.mark.parametrize("block", _of("pytest"), ids=str)
def test_the_test_block_passes_under_the_plugin(block: Block, tmp_path: Path) -> None:
    (tmp_path / "test_snippet.py").write_text(block.code, encoding="utf-8")
    # the plugin starts its own Redis; the user's project has no pytest config of ours
    _run(block, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "test_snippet.py"], tmp_path)
