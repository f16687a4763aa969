"""Issue 11, burst: with every worker down an agent writes 5x working memory's capacity; when
the workers start, every working entry reaches stm exactly once through each default edge
and every stm step reaches each long-term edge exactly once. Also with a kill -9 of a worker
in the middle of the drain. Real worker processes, the default hierarchy; its triggers are
made quick (the issue does not demand default triggers here, and an hourly timer would
hold the last long-term batch for an hour)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support_lifecycle import (
    HIERARCHY_ROLES,
    QUICK,
    QUICK_TRIGGERS,
    Procs,
    dlq_total,
    drained,
    exactly_once,
    ledger,
    procedural_report,
    set_triggers,
    state,
    target_url,
    wait_done,
    wait_for,
    write_steps,
)

from blackboard import Blackboard
from memory.config import DEFAULT_LEVEL_CONFIGS
from memory.hierarchy import install_default_hierarchy
from memory.levels import MemoryLevel
from workers.roles import CONSUMING_ROLES

pytestmark = pytest.mark.process  # worker processes (support_lifecycle.Procs)

__all__ = ["target_url"]  # fixture, imported for pytest

AGENT = "burst"
CAPACITY = DEFAULT_LEVEL_CONFIGS[MemoryLevel.WORKING].max_entries
N = 5 * CAPACITY


@pytest.mark.parametrize("kill", [False, True], ids=["no-kill", "kill-9-mid-drain"])
async def test_burst_of_5x_capacity_written_while_workers_are_down(
    target_url: str, tmp_path: Path, kill: bool
) -> None:
    assert N == 1_000
    redis_url = target_url
    procs = Procs(redis_url, tmp_path)
    t0 = time.monotonic()
    try:
        async with Blackboard.connect(redis_url, partitions=8) as bb:
            await install_default_hierarchy(bb, AGENT)
            await set_triggers(bb, QUICK_TRIGGERS)
            # The workers ran before and are down now: their groups exist on the buses.
            await bb.ensure_groups([r for r in CONSUMING_ROLES if r in HIERARCHY_ROLES])
            written = await write_steps(bb, AGENT, N)
            assert len(set(written)) == N
            # Capacity stays a hard bound for readers.
            assert await bb.scope(f"agent:{AGENT}:working").count() <= CAPACITY

            summarizer = procs.start("summarize", QUICK)
            for role in HIERARCHY_ROLES[1:]:
                procs.start(role, QUICK)
            if kill:
                async def half_copied() -> bool:
                    return len((await ledger(bb, AGENT)).identity) >= N // 3
                assert await wait_for(half_copied, 120), await state(bb)
                # The one summarize worker is the one draining: kill it there, and start
                # another as a supervisor would (it takes the partition over when the
                # dead one's lease lapses).
                procs.kill9(summarizer)
                procs.start("summarize", QUICK)

            async def done() -> bool:
                led = await ledger(bb, AGENT)
                steps = set(led.origin_of)
                return (set(led.identity) >= set(written)
                        and set(led.summarize) >= set(written)
                        and set(led.episodic) >= steps and set(led.semantic) >= steps
                        # every buffer, the collective edges' included (a turn on
                        # their shared target once kept them full: workers/target_turn.py)
                        and await drained(bb))

            finished = await wait_done(bb, done, 240)
            led = await ledger(bb, AGENT)
            lost_i, twice_i, foreign_i = exactly_once(written, led.identity)
            lost_s, twice_s, foreign_s = exactly_once(written, led.summarize)
            steps = list(led.origin_of)
            lost_e, twice_e, foreign_e = exactly_once(steps, led.episodic)
            lost_m, twice_m, foreign_m = exactly_once(steps, led.semantic)
            proc = procedural_report(led, steps)
            print(f"burst kill={kill}: written {N}, identity lost {lost_i} twice {twice_i}, "
                  f"summarize lost {lost_s} twice {twice_s}, stm steps {len(steps)}, "
                  f"episodic lost {lost_e} twice {twice_e}, semantic lost {lost_m} twice "
                  f"{twice_m}, procedural tasks {proc}, dlq {await dlq_total(bb)}, "
                  f"{time.monotonic() - t0:.1f}s")
            assert (lost_i, twice_i, foreign_i) == (0, 0, 0), await state(bb)
            assert (lost_s, twice_s, foreign_s) == (0, 0, 0), await state(bb)
            assert len(steps) == N  # one stm step per working entry
            assert (lost_e, twice_e, foreign_e) == (0, 0, 0)
            assert (lost_m, twice_m, foreign_m) == (0, 0, 0)
            # One procedure for the one skill, every task counted once: a task cut by a
            # batch boundary is stitched whole, not lost nor counted twice.
            assert (proc["lost"], proc["twice"], proc["foreign"]) == (0, 0, 0)
            assert proc["live"] == [("default", ["check", "fix"], N // 2)]
            assert await dlq_total(bb) == 0
            assert finished, await state(bb)
            assert procs.stop_all() == []
    finally:
        procs.close()
