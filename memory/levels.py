"""Memory levels: each level of an agent's memory is one blackboard scope."""

from __future__ import annotations

from enum import StrEnum

from blackboard import InvalidArgument

__all__ = ["LEVEL_LIST", "LEVEL_NAMES", "LONG_TERM", "MemoryLevel", "level_named", "unknown_level"]


class MemoryLevel(StrEnum):
    """The levels of the memory hierarchy, from raw perception to long-term memory."""

    SENSORY = "sensory"
    WORKING = "working"
    STM = "stm"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"

    @property
    def segment(self) -> str:
        """The scope-id suffix of the level (long-term levels live under ``ltm:``)."""
        return f"ltm:{self.value}" if self in LONG_TERM else self.value

    @classmethod
    def from_segment(cls, segment: str) -> MemoryLevel | None:
        """The level whose suffix is ``segment`` (``"ltm:semantic"``), None if none is."""
        return _BY_SEGMENT.get(segment)

    @classmethod
    def named(cls, name: str) -> MemoryLevel | None:
        """The level called ``name`` (``"semantic"``) or whose suffix it is
        (``"ltm:semantic"``); None if none is. Every surface reads a level this way."""
        return _BY_SEGMENT.get(name) or _BY_VALUE.get(name)


LONG_TERM = frozenset({MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL})
_BY_SEGMENT = {lvl.segment: lvl for lvl in MemoryLevel}
_BY_VALUE = {lvl.value: lvl for lvl in MemoryLevel}
#: Every name a level is known by: its name and its scope suffix (``ltm:semantic``).
LEVEL_NAMES = tuple(sorted({*_BY_VALUE, *_BY_SEGMENT}))
#: The levels as a reader is told them, lowest first.
LEVEL_LIST = ", ".join(m.value for m in MemoryLevel)


def unknown_level(name: str) -> str:
    """The one wording of a level name no level has, listing the levels."""
    return f"unknown memory level {name!r}; levels: {LEVEL_LIST}"


def level_named(name: str) -> MemoryLevel:
    """:meth:`MemoryLevel.named`, or :class:`InvalidArgument` naming the levels."""
    lvl = MemoryLevel.named(name)
    if lvl is None:
        raise InvalidArgument(unknown_level(name))
    return lvl
