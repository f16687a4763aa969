"""The README's Python snippets run when pasted into a script (issue 30): each compiles as
a module, so none uses ``await`` / ``async with`` outside a coroutine."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_python_snippet_compiles_as_a_script() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks
    bad = []
    for i, code in enumerate(blocks):
        try:
            compile(code, f"README.md python block {i + 1}", "exec")
        except SyntaxError as exc:
            bad.append(f"block {i + 1}: {exc.msg}: {code.splitlines()[0]!r}")
    assert bad == []
