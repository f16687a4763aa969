"""Rendering of a :class:`MemoryMap` for terminals (``blackboard map``)."""

from __future__ import annotations

from rich.tree import Tree

from .memory_map import MemoryMap, ScopeView

__all__ = ["render_map"]


def _fmt_seconds(s: float | None) -> str:
    if not s:
        return "none"
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s / size:g}{unit}"
    return f"{s:g}s"


def _label(v: ScopeView) -> str:
    lvl = v.level or v.kind
    parts = [f"[bold]{v.scope}[/bold] [dim]({lvl})[/dim] {v.count} entries"]
    if v.config is not None:
        lim = v.config.limits
        cap = lim.max_entries or "unlimited"
        parts.append(f"[dim]max {cap}, ttl {_fmt_seconds(lim.ttl)}, "
                     f"decay {lim.decay_rate:g}/{_fmt_seconds(lim.decay_tick)}[/dim]")
    else:
        parts.append("[dim](unregistered)[/dim]")
    if not v.writable:
        parts.append("[yellow]read-only[/yellow]")
    return " ".join(parts)


def render_map(m: MemoryMap) -> Tree:
    """A rich Tree: one branch per scope, its outgoing edges below it."""
    teams = ", ".join(m.teams) or "no teams"
    root = Tree(f"memory of agent [bold]{m.agent}[/bold] ({teams})")
    for v in m.scopes:
        node = root.add(_label(v))
        for e in m.edges:
            if e.source == v.scope:
                node.add(f"-> {e.target} via [cyan]{e.transformer}[/cyan] "
                         f"[dim](edge {e.edge}, {e.pending} pending)[/dim]")
    return root
