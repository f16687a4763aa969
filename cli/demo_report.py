"""What ``blackboard demo`` shows at the end: the memory map, recalls with their score
breakdown, learned procedures, semantic facts with evidence, episodes and team memory.

Values print as text (:func:`blackboard.entry.value_text`), wrapped by rich at the
terminal's width, never as Python reprs; ``--json`` returns the same data as a dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.padding import Padding
from rich.text import Text

from blackboard import Blackboard, Entry
from blackboard.entry import value_text
from memory import COLLECTIVE, AgentMemory
from memory.memory_map import MemoryMap
from memory.render import render_map

from .output import console

__all__ = ["TEAM", "build_report", "print_report"]

TEAM = "ops"
QUERIES = ("why did posting to the ledger fail", "Acme Corp payment terms")


def _say(text: str, *, indent: int = 2, dim: bool = False) -> None:
    """One item, wrapped with a hanging indent so continuation lines stay under it."""
    body = Text(text, style="dim" if dim else "")
    console.print(Padding(body, (0, 0, 0, indent)), highlight=False)


def _clip(text: str, n: int = 240) -> str:
    """Long pooled entries (team, summaries) would fill the screen; --json has them whole."""
    return text if len(text) <= n else text[: n - 1] + "…"


def _episode(v: Mapping[str, Any]) -> str:
    n = len(v.get("steps", []))
    return (f"task {v.get('task')} ({v.get('session')}): {n} step{'' if n == 1 else 's'}, "
            f"actors {', '.join(v.get('actors', []))}, outcome {v.get('outcome')}")


def _describe(e: Entry) -> str:
    """An entry in a line or three: an episode by its task and outcome, else its text."""
    v = e.value
    if isinstance(v, Mapping) and "task" in v and isinstance(v.get("steps"), list):
        return _episode(v)
    return _clip(e.text)


def _num(x: Any) -> str:
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def _who(e: Entry) -> str:
    """Team provenance as people read it: which agents contributed, how many entries."""
    att = e.metadata.get("attribution") or []
    agents = sorted({a["agent"] for a in att if isinstance(a, dict) and a.get("agent")})
    n = len(att)
    if not n:
        return ""
    return f"from {', '.join(agents) or '?'} ({n} {'entry' if n == 1 else 'entries'})"


def _breakdown(h: Any) -> str:
    dense = "-" if h.dense is None else f"{h.dense:.2f}"
    bm25 = "-" if h.bm25 is None else f"{h.bm25:.2f}"
    return (f"score {h.score:.3f} = relevance {h.fused:.2f} (dense {dense}, bm25 {bm25}), "
            f"strength {h.strength:.2f}, recency {h.recency:.2f}, importance "
            f"{h.importance:.2f}; {h.scope}")


async def build_report(bb: Blackboard, agent: str) -> tuple[dict[str, Any], MemoryMap]:
    """The report as data (what ``--json`` prints) and ``agent``'s memory map."""
    out: dict[str, Any] = {}
    async with AgentMemory(bb, agent, teams=[TEAM]) as mem:
        mmap = await mem.memory_map()
        out["map"] = mmap.to_dict()
        proc = await bb.scope(mem.scope_for("procedural")).entries(limit=None)
        sem = await bb.scope(mem.scope_for("semantic")).entries(limit=None)
        # the live ones: an episode a batch left open is superseded when the next continues it
        epi = await bb.scope(mem.scope_for("episodic")).entries(none_of=["superseded"],
                                                                limit=3)
        # the live ones, the members' statements (one per fact, keyed by its slot) first
        team = await bb.scope(mem.scope_for(None, team=TEAM)).entries(
            none_of=["superseded"], limit=None)
        team = sorted(team, key=lambda e: "slot" not in (e.metadata or {}))[:5]
        # what the agents agree on (issue 27): the live versions, below the quorum included
        collective = await bb.scope(COLLECTIVE).entries(none_of=["superseded"], limit=None)
        recalls: dict[str, list[Any]] = {}
        for q in QUERIES:
            try:
                hits = await mem.recall(q)
            except Exception as exc:  # retrieval not configured: say so, don't pretend
                recalls[q] = [f"recall unavailable: {exc}"]
                continue
            recalls[q] = hits[:3]
    dlq = {p: await bb.bus(p).dlq_len() for p in range(bb.partitions)}
    out.update(procedures=proc, semantic=sem, episodes=epi, team=team, recalls=recalls,
               collective=collective, dlq={p: n for p, n in dlq.items() if n})
    return out, mmap


def print_report(out: dict[str, Any], agent: str, mmap: MemoryMap) -> None:
    """The report for people, section by section."""
    proc: list[Entry] = out["procedures"]
    sem: list[Entry] = out["semantic"]
    epi: list[Entry] = out["episodes"]
    team: list[Entry] = out["team"]
    recalls: dict[str, list[Any]] = out["recalls"]
    console.rule(f"[bold]memory map[/] (agent {agent})")
    console.print(render_map(mmap))
    console.rule("[bold]recall[/] (hybrid score breakdown)")
    for q, hits in recalls.items():
        console.print(f"[bold]? {escape(q)}[/]")
        for i, h in enumerate(hits, 1):
            if hasattr(h, "entry"):
                _say(f"{i}. {_describe(h.entry)}")
                _say(_breakdown(h), indent=5, dim=True)
            else:
                _say(str(h))
    console.rule("[bold]learned procedures[/]")
    live = [e for e in proc if "superseded" not in e.tags]
    best: dict[str, Entry] = {}
    for e in sorted(live, key=lambda e: (-len(e.value.get("steps", []))
                                         * int(e.value.get("support", 0)), e.id)):
        best.setdefault(str(e.value.get("task_kind")), e)
    for e in best.values():
        v = e.value
        _say(f"{v.get('task_kind')}: {' → '.join(v.get('steps', []))}")
        _say(f"seen {v.get('support')} times, success rate {_num(v.get('success_rate'))}, "
             f"version {v.get('procedure_version', v.get('version'))}", indent=5, dim=True)
    if not best:
        _say("none yet (procedures need repeated successful tasks)", dim=True)
    console.rule("[bold]semantic facts[/] (with evidence; a changed belief supersedes the old)")
    for e in sorted(sem, key=lambda e: (e.key or "", e.created_at)):
        v = e.value
        status = "superseded" if "superseded" in e.tags else v.get("status", "active")
        stances = [x.get("stance") for x in v.get("evidence", [])]
        _say(f"({status}) {e.text}: confidence {_num(v.get('confidence'))}, evidence "
             f"{stances.count('support')} for, {stances.count('contradict')} against")
    console.rule("[bold]episodes[/]")
    for e in epi:
        _say(_describe(e))
    console.rule(f"[bold]team:{TEAM}[/]")
    for e in team:
        _say(_clip(value_text(e.value)))
        if _who(e):
            _say(_who(e), indent=5, dim=True)
    _print_collective(out["collective"])
    console.print(f"dead-lettered: {sum(out['dlq'].values())}")


def _print_collective(entries: list[Entry]) -> None:
    """What at least a quorum of agents hold (beliefs), and the skills pooled."""
    console.rule("[bold]collective[/] (what several agents agree on)")
    held = [e for e in entries if e.metadata.get("promoted")]
    for e in sorted(held, key=lambda e: (e.metadata.get("kind") != "fact", e.key or "")):
        v, agents = e.value, e.metadata.get("agents", [])
        _say(_clip(e.text))
        if e.metadata.get("kind") == "procedure":
            pooled = ", ".join(str(x.get("agent")) for x in v.get("evidence", []))
            _say(f"{v.get('support')} tasks pooled from {pooled}", indent=5, dim=True)
        else:
            n = sum(ln.get("stance") == "support" for ln in v.get("evidence", []))
            _say(f"held by {len(agents)} agents ({', '.join(agents)}), {n} supporting "
                 f"entries, confidence {_num(v.get('confidence'))}", indent=5, dim=True)
    waiting = len(entries) - len(held)
    if not held:
        _say("nothing yet (a belief needs agents in agreement)", dim=True)
    if waiting:
        _say(f"{waiting} more held by too few agents so far (proposed)", dim=True)
