"""``blackboard stats``: a summary for people (workers, one row per consumer group role,
totals, the partitions that need a look); ``--all`` adds every partition's row.

``--json`` shape (stable; extend, never rename)::

    {"partitions": int,
     "totals": {"events_on_buses", "dlq", "pending", "lag", "scopes", "unembedded": int},
     "buses": [{"partition", "length", "dlq", "scopes": int,
                "groups": [{"role": str, "consumers", "pending": int,
                            "lag": int | null, "last_delivered": str}]}],
     "workers": [{"id", "role", "pid", "host", "started_at", "beat_at",
                  "partitions": [int], "counters": {str: int},
                  "progress": {partition: last_progress_ms}}],
     "progress": [{"role": str, "partition": int, "worker": str, "age_ms": int}],
     "pool": [{"scope", "count", "tags", "strength", ..., "evicted_total": int,
               "removed": {"expired", "decayed", "capacity", "merged": int},
               "agents": {agent: int}, "avg_strength": float | null, "sampled": int}]}

``pool``: every registered scope's statistics as ``GET /v1/stats`` gives them (issue 27
item 5, :mod:`blackboard.pool_stats`), fullest first; the table shows the fullest 12
(``--all``: every one holding or having evicted entries).

``progress``: per role and partition, how long ago its reader last made progress (a read
returned or a batch settled; an idle reader's every ``block_ms``): a large age with lag is
a stall, which the worker itself gives up after ``stall_ms`` (``stalls`` counter).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from blackboard import Blackboard
from blackboard.scope_stats import ScopeStats
from workers.heartbeat import WorkerInfo, list_workers
from workers.stats import BusStats, Stats, collect_stats, progress_rows

from .options import Json, RedisUrl, with_blackboard
from .output import console, print_json
from .pool import collect_pool, pool_table

__all__ = ["ranges", "register", "render", "role_summary"]

def role_summary(st: Stats) -> dict[str, dict[str, Any]]:
    """Per consumer-group role: partitions it reads, consumers, pending, lag (None: unknown)."""
    out: dict[str, dict[str, Any]] = {}
    for b in st.buses:
        for g in b.groups:
            r = out.setdefault(g.role, {"partitions": 0, "consumers": 0, "pending": 0,
                                        "lag": 0})
            r["partitions"] += 1
            r["consumers"] += g.consumers
            r["pending"] += g.pending
            r["lag"] = None if r["lag"] is None or g.lag is None else r["lag"] + g.lag
    return dict(sorted(out.items()))


def _busy_rows(buses: list[BusStats]) -> list[tuple[str, ...]]:
    """(partition, bus, dlq, group, pending, lag) for each group with pending or lag, and a
    row for a partition with dead letters: what needs a look, not every idle group."""
    rows: list[tuple[str, ...]] = []
    for b in buses:
        busy = [g for g in b.groups if g.pending or g.lag is None or g.lag]
        if b.dlq and not busy:
            rows.append((str(b.partition), str(b.length), str(b.dlq), "-", "", ""))
        for g in busy:
            rows.append((str(b.partition), str(b.length), str(b.dlq), g.role, str(g.pending),
                         "?" if g.lag is None else str(g.lag)))
    return rows


#: Below this many columns tables drop their vertical rules (and the workers table the
#: role prefix of each id): a worker's row then fits on one line at 80 columns.
NARROW = 100


def ranges(ns: tuple[int, ...] | list[int]) -> str:
    """``0-3,7,9-10``: a partition list as runs (all 16 of them is ``0-15``, not 37 chars)."""
    runs: list[list[int]] = []
    for n in sorted(set(ns)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _table(title: str | None = None) -> Table:
    """A table in the house style; at a narrow terminal, without vertical rules."""
    if console.width >= NARROW:
        return Table(title=title, title_justify="left")
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)


def _short_id(info: WorkerInfo) -> str:
    """The id without its role prefix (``summarize-host-pid-x`` -> ``host-pid-x``) when
    narrow: the role has its own column."""
    prefix = f"{info.role}-"
    narrow = console.width < NARROW and info.id.startswith(prefix)
    return info.id[len(prefix):] if narrow else info.id


def _workers_table(workers: list[WorkerInfo]) -> Table:
    w = _table(f"{len(workers)} live workers")
    for col in ("worker", "role", "pid", "partitions", "events", "written", "dlq"):
        w.add_column(col, overflow="fold",
                     justify="right" if col in ("pid", "events", "written", "dlq") else "left")
    for info in workers:
        c = info.counters
        w.add_row(_short_id(info), info.role, str(info.pid), ranges(info.partitions),
                  str(c.get("events", 0)), str(c.get("written", 0)),
                  str(c.get("dead_lettered", 0)))
    return w


def _age(ms: int) -> str:
    s = ms / 1000
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m"


def _progress_table(rows: list[dict[str, Any]]) -> Table:
    """One row per role: ``partition:age`` of each of its readers (folded at 80 columns)."""
    t = _table("last progress per partition (age)")
    t.add_column("role")
    t.add_column("partition:age", overflow="fold")
    by_role: dict[str, list[str]] = {}
    for r in rows:
        by_role.setdefault(r["role"], []).append(f"{r['partition']}:{_age(r['age_ms'])}")
    for role, cells in by_role.items():
        t.add_row(role, " ".join(cells))
    return t


def _partition_table(buses: list[BusStats], title: str) -> Table:
    t = _table(title)
    for col in ("partition", "bus", "dlq", "scopes", "group", "consumers", "pending", "lag"):
        t.add_column(col, justify="left" if col == "group" else "right")
    for b in buses:
        head = (str(b.partition), str(b.length), str(b.dlq), str(b.scopes))
        if not b.groups:
            t.add_row(*head, "-", "", "", "")
        for i, g in enumerate(b.groups):
            t.add_row(*(head if i == 0 else ("",) * 4), g.role, str(g.consumers),
                      str(g.pending), "?" if g.lag is None else str(g.lag))
    return t


def render(st: Stats, workers: list[WorkerInfo], show_all: bool, now_ms: int = 0,
           pool: list[ScopeStats] | None = None) -> None:
    if workers:
        console.print(_workers_table(workers))
        progress = progress_rows(workers, now_ms)
        if progress:
            console.print(_progress_table(progress))
    else:
        console.print("no live workers (`blackboard worker --role all` starts them)")
    roles = role_summary(st)
    if roles:
        t = Table(title="consumer groups", title_justify="left")
        for col in ("role", "partitions", "consumers", "pending", "lag"):
            t.add_column(col, justify="left" if col == "role" else "right")
        for role, r in roles.items():
            t.add_row(role, str(r["partitions"]), str(r["consumers"]), str(r["pending"]),
                      "?" if r["lag"] is None else str(r["lag"]))
        console.print(t)
    tot = st.totals()
    console.print(
        f"{st.partitions} partitions: {tot['scopes']} scopes, {tot['events_on_buses']} events "
        f"on the buses, {tot['pending']} pending, lag {tot['lag']}, "
        f"{tot['dlq']} dead-lettered, {tot['unembedded']} waiting for a vector",
        highlight=False)
    if pool is not None:
        table, line = pool_table(pool, show_all)
        if table is not None:
            console.print(table)
        console.print(line, highlight=False)
    if show_all:
        console.print(_partition_table(list(st.buses), f"all {st.partitions} partitions"))
        return
    rows = _busy_rows(list(st.buses))
    if rows:
        console.print("[bold]needs a look[/]: groups with pending or lag, dead letters "
                      "(--all shows every partition)")
        t = Table()
        for col in ("partition", "bus", "dlq", "group", "pending", "lag"):
            t.add_column(col, justify="left" if col == "group" else "right")
        for row in rows:
            t.add_row(*row)
        console.print(t)


def register(app: typer.Typer) -> None:
    """Add the ``stats`` command to ``app``."""

    @app.command()
    def stats(
        redis_url: RedisUrl = None,
        show_all: Annotated[bool, typer.Option(
            "--all", help="A row for every partition and every scope in the pool.")] = False,
        json_out: Json = False,
    ) -> None:
        """Live workers, consumer groups (pending, lag), dead letters: a summary."""
        async def every(bb: Blackboard) -> tuple[Stats, list[WorkerInfo], int,
                                                 list[ScopeStats]]:
            return (await collect_stats(bb), await list_workers(bb), bb.now_ms(),
                    await collect_pool(bb))

        st, workers, now_ms, pool = with_blackboard(redis_url, every)
        if json_out:
            print_json({"partitions": st.partitions, "totals": st.totals(),
                        "buses": st.buses, "workers": workers,
                        "progress": progress_rows(workers, now_ms),
                        "pool": [s.to_json() for s in pool]})
            return
        render(st, workers, show_all, now_ms, pool)
