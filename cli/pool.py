"""The memory pool on ``blackboard stats``: per scope its live entries (``live``), what maintenance
evicted (expired, decayed, over capacity, merged duplicates), the average strength
(``str``), its largest category (tag) and source agent with how many others there are
(:mod:`blackboard.pool_stats`; ``--json`` has every count)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.table import Table

from blackboard import Blackboard
from blackboard.scope_stats import ScopeStats

from .output import console

__all__ = ["SHOWN", "collect_pool", "pool_table"]

#: Scopes shown without ``--all`` (the fullest first); ``--json`` has every scope.
SHOWN = 12


async def collect_pool(bb: Blackboard) -> list[ScopeStats]:
    """Stats of every registered scope, fullest first (ties by name)."""
    from memory import Registry

    reg = Registry(bb)
    try:
        scopes = sorted(c.scope_id for c in await reg.list_scopes())
    finally:
        await reg.aclose()
    got = await bb.reads.stats(scopes)
    return sorted(got, key=lambda s: (-s.count, s.scope))


def _top(counts: Mapping[str, int]) -> str:
    """The largest count, and how many more there are: ``summary 30 +2``."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if not items:
        return "-"
    k, v = items[0]
    return f"{k or 'workers'} {v}" + (f" +{len(items) - 1}" if len(items) > 1 else "")


def pool_table(stats: Sequence[ScopeStats], show_all: bool) -> tuple[Table | None, str]:
    """The table of the scopes holding or having evicted entries (the first ``SHOWN``
    unless ``show_all``), and a summary line."""
    busy = [s for s in stats if s.count or (s.pool and s.pool.evicted_total)]
    entries = sum(s.count for s in stats)
    evicted = sum(s.pool.evicted_total for s in stats if s.pool)
    line = (f"memory pool: {entries} entries in {len(busy)} of {len(stats)} scopes, "
            f"{evicted} evicted")
    if not busy:
        return None, line
    rows = busy if show_all else busy[:SHOWN]
    if len(rows) < len(busy):
        line += f" ({len(busy) - len(rows)} more scopes: --all, --json)"
    narrow = console.width < 100
    t = Table(title="memory pool per scope", title_justify="left",
              box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, pad_edge=not narrow,
              show_edge=not narrow, collapse_padding=narrow)
    t.add_column("scope", no_wrap=not narrow, overflow="fold",
                 min_width=min(27, max(len(s.scope) for s in rows)))
    for col in ("live", "evicted", "str"):
        t.add_column(col, justify="right")
    t.add_column("top tag", overflow="fold")
    t.add_column("top agent", overflow="fold")
    for s in rows:
        p = s.pool
        avg = "-" if p is None or p.avg_strength is None else f"{p.avg_strength:.2f}"
        t.add_row(s.scope, str(s.count), str(p.evicted_total if p else 0), avg,
                  _top(s.tags), _top(p.agents) if p else "-")
    return t, line
