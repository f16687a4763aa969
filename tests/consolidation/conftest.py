"""Fixtures for the consolidation tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cons_support import ChatServer


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    s = ChatServer()
    s.thread.start()
    try:
        yield s
    finally:
        s.close()
