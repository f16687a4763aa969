"""``python -m cli`` is the ``blackboard`` command."""

from __future__ import annotations

from . import main

main()
