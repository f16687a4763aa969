"""A ``worker --role timeline`` with its placing cut down, for ``bench/toc_cost.py
--floor``: what any role consuming the same events pays before it places anything.

    python bench/toc_floor_worker.py MODE worker --role timeline --redis-url URL

MODE ``read``: each read is matched against the edges and acked, nothing fetched;
``fetch``: the read's entries are fetched too (the 7 fields placing reads), then acked.
Everything else (leases, the bus read, its decoding, the ack) is the real role's. The
bench only; a stub like this has no place in a worker anyone runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODES = ("read", "fetch")


def _patch(mode: str) -> None:
    from blackboard import EntryRef
    from workers.roles import timeline

    async def fetch_only(self: timeline.TimelineRole, partition: int,
                         wanted: dict[str, list[str]]) -> tuple[int, set[str]]:
        refs = [EntryRef(s, i) for s, ids in wanted.items() for i in ids]
        await self.host.bb.reads.fetch(partition, refs, skip_invalid=True, retained=True,
                                       fields=timeline.PLACE_FIELDS)
        return 0, set()

    async def read_only(self: timeline.TimelineRole, partition: int,
                        wanted: dict[str, list[str]]) -> tuple[int, set[str]]:
        return 0, set()

    timeline.TimelineRole._place_all = fetch_only if mode == "fetch" else read_only  # type: ignore[method-assign]


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        print(f"usage: toc_floor_worker.py {{{','.join(MODES)}}} worker --role timeline ...",
              file=sys.stderr)
        return 2
    from cli import cap_native_threads
    from cli import main as cli_main

    cap_native_threads()  # before the patch imports numpy, as the command does
    _patch(sys.argv[1])
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    cli_main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
