"""``import memory`` loads none of the index libraries (``retrieval/__init__.py`` says so): a
process that only stores and reads does not pay for numpy, FAISS or bm25s."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.process  # a fresh interpreter: this one has them all loaded


def test_import_memory_loads_no_index_library() -> None:
    code = ("import sys, memory; "
            "print(sorted(m for m in ('numpy', 'faiss', 'bm25s') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"
