"""Memory levels: each level of an agent's memory is one blackboard scope."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LONG_TERM", "MemoryLevel"]


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


LONG_TERM = frozenset({MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL})
_BY_SEGMENT = {lvl.segment: lvl for lvl in MemoryLevel}
