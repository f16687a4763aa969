"""Conversation memory: messages stored as entries that know their place in a dialogue.

A :class:`Message` (speaker, text, time, the caller's metadata) becomes one entry whose
value records where it sits (``session``, ``position``, ``at``) and the conversational
context that makes it findable on its own: the neighbouring turns of its session, chosen
by the scope's :class:`ConversationConfig`. That context is attached at write time, so a
message is indexed (BM25 and embeddings) in its conversation, while ``entry.metadata``
stays exactly what the caller gave.

Entry value of a message (``kind == "message"``)::

    {"kind": "message", "session": str, "position": int, "speaker": str, "text": str,
     "at": ISO-8601 str | None, "context": str}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from blackboard import Blackboard, Entry, InvalidArgument, WriteRequest
from blackboard.validation import validate_tag
from retrieval.text import LONG_MESSAGE_CHARS

__all__ = [
    "MESSAGE_KIND",
    "MESSAGE_TAG",
    "ConversationConfig",
    "Message",
    "Sessions",
    "message_of",
    "message_requests",
    "session_tag",
]

MESSAGE_KIND = "message"
#: Every message entry carries this tag and its session's tag (:func:`session_tag`), so
#: tag recall lists a conversation and the tag counters give a session's length.
MESSAGE_TAG = "message"


def session_tag(session: str) -> str:
    """The tag of a session's messages (``session:<name>``); the name must be tag-safe."""
    if not isinstance(session, str) or not session:
        raise InvalidArgument("a conversation session needs a non-empty name")
    return validate_tag(f"session:{session}")


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation. ``at`` is when it was said (naive: UTC); ``metadata``
    is the caller's, stored as given."""

    speaker: str
    text: str
    at: datetime | None = None
    metadata: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.speaker, str) or not self.speaker.strip():
            raise InvalidArgument("Message.speaker must be a non-empty string")
        if not isinstance(self.text, str):
            raise InvalidArgument(f"Message.text must be a str, not {type(self.text).__name__}")
        if self.at is not None and not isinstance(self.at, datetime):
            raise InvalidArgument(f"Message.at must be a datetime, not {type(self.at).__name__}")
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise InvalidArgument("Message.metadata must be a mapping or None")


@dataclass(frozen=True, slots=True)
class ConversationConfig:
    """How a scope indexes messages in their conversation.

    ``before``/``after``: how many neighbouring turns of the same batch and session join a
    message's indexed context (``after`` sees only turns written in the same call);
    ``same_day``: neighbours only if said on the same calendar day (a session boundary);
    ``caption_key``: the caller's metadata field holding an image caption (it is indexed
    with the message, and with its neighbours' context); ``max_context_chars`` caps the
    context so a long neighbour cannot drown the message itself; a message whose text is
    longer than ``long_message_chars`` (0: no limit) is its own context, neither taking
    its neighbours' nor joining theirs (:data:`retrieval.text.LONG_MESSAGE_CHARS`).
    """

    before: int = 1
    after: int = 1
    same_day: bool = True
    caption_key: str = "caption"
    max_context_chars: int = 600
    long_message_chars: int = LONG_MESSAGE_CHARS

    def __post_init__(self) -> None:
        if self.before < 0 or self.after < 0:
            raise InvalidArgument("ConversationConfig.before/after must be >= 0")
        if self.max_context_chars < 0:
            raise InvalidArgument("ConversationConfig.max_context_chars must be >= 0")
        if self.long_message_chars < 0:
            raise InvalidArgument("ConversationConfig.long_message_chars must be >= 0")


def _utc(at: datetime | None) -> datetime | None:
    if at is None:
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _said(m: Message, caption_key: str) -> str:
    cap = (m.metadata or {}).get(caption_key)
    text = f"{m.speaker}: {m.text}"
    return f"{text} [photo: {cap}]" if isinstance(cap, str) and cap else text


def _context(msgs: Sequence[Message], i: int, cfg: ConversationConfig) -> str:
    """The neighbouring turns of ``msgs[i]`` that share its day (when ``same_day``), none
    long (``long_message_chars``)."""
    day = _utc(msgs[i].at)
    limit = cfg.long_message_chars

    def long(j: int) -> bool:
        return bool(limit) and len(msgs[j].text) > limit

    if long(i):
        return ""

    def near(j: int) -> bool:
        if long(j):
            return False
        other = _utc(msgs[j].at)
        if not cfg.same_day or day is None or other is None:
            return True
        return other.date() == day.date()

    idx = [j for j in range(max(0, i - cfg.before), i) if near(j)]
    idx += [j for j in range(i + 1, min(len(msgs), i + 1 + cfg.after)) if near(j)]
    text = " | ".join(_said(msgs[j], cfg.caption_key) for j in idx)
    return text[: cfg.max_context_chars]


def message_requests(
    session: str, messages: Sequence[Message], start: int, cfg: ConversationConfig,
    *, importance: float = 0.5,
) -> list[WriteRequest]:
    """The write requests of ``messages`` (positions from ``start``), each with its
    conversational context; validates every message before anything is built."""
    tag = session_tag(session)
    for m in messages:
        if not isinstance(m, Message):
            raise InvalidArgument(f"add_messages takes Message objects, not {type(m).__name__}")
    out = []
    for i, m in enumerate(messages):
        at = _utc(m.at)
        value = {
            "kind": MESSAGE_KIND,
            "session": session,
            "position": start + i,
            "speaker": m.speaker,
            "text": m.text,
            "at": at.isoformat() if at is not None else None,
            "context": _context(messages, i, cfg),
        }
        out.append(WriteRequest(value, tags=(MESSAGE_TAG, tag),
                                metadata=dict(m.metadata or {}), importance=importance))
    return out


def message_of(entry: Entry) -> Message | None:
    """The :class:`Message` an entry stores (None: not a message entry)."""
    v = entry.value
    if not isinstance(v, Mapping) or v.get("kind") != MESSAGE_KIND:
        return None
    at = v.get("at")
    return Message(str(v.get("speaker")), str(v.get("text", "")),
                   datetime.fromisoformat(at) if isinstance(at, str) else None,
                   entry.metadata)


class Sessions:
    """Per-memory conversation state: each scope's :class:`ConversationConfig` and the next
    position of each session written through this process.

    The first write to a session here reads its newest message (one extra round trip,
    once); after that positions come from memory, so a batch is one round trip. Writers
    in several processes appending to one session may interleave positions: give each
    its own session name.
    """

    def __init__(self) -> None:
        self.configs: dict[str, ConversationConfig] = {}
        self._next: dict[tuple[str, str], int] = {}

    def config(self, scope: str) -> ConversationConfig:
        return self.configs.get(scope) or DEFAULT_CONFIG

    async def start(self, bb: Blackboard, scope: str, session: str) -> int:
        """The position the next message of ``session`` in ``scope`` takes."""
        got = self._next.get((scope, session))
        if got is not None:
            return got
        # newest first by write time; a batch shares one millisecond, so look at a page
        newest = await bb.scope(scope).entries(all_of={session_tag(session)}, limit=256,
                                               newest_first=True)
        pos = [e.value.get("position") for e in newest if isinstance(e.value, Mapping)]
        return max((p for p in pos if isinstance(p, int)), default=-1) + 1

    def advance(self, scope: str, session: str, nxt: int) -> None:
        self._next[(scope, session)] = nxt


DEFAULT_CONFIG = ConversationConfig()
