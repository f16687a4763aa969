"""``python -m workers`` is the ``blackboard`` command."""

from __future__ import annotations

from .cli import app

app(prog_name="blackboard")
