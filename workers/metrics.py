"""Prometheus text exposition of a worker's counters on ``--metrics-port`` (GET /metrics)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping

__all__ = ["MetricsServer", "render_metrics", "render_process", "render_progress"]

#: Counters that are levels, not totals.
GAUGES = frozenset({"partitions", "lag"})


def render_process(workers: Iterable[tuple[str, str, Mapping[str, float]]]) -> str:
    """Prometheus text format 0.0.4 for every role a process runs: one family per counter
    name (each ``# TYPE`` once), one series per (role, worker) in it."""
    families: dict[str, list[str]] = {}
    for role, worker_id, counters in workers:
        for name, value in counters.items():
            metric = f"blackboard_worker_{name}"
            families.setdefault(metric, []).append(
                f'{metric}{{role="{role}",worker="{worker_id}"}} {value}'
            )
    lines = []
    for metric in sorted(families):
        name = metric.removeprefix("blackboard_worker_")
        lines.append(f"# TYPE {metric} {'gauge' if name in GAUGES else 'counter'}")
        lines += families[metric]
    return "\n".join(lines) + "\n"


def render_progress(workers: Iterable[tuple[str, str, Mapping[int, int]]]) -> str:
    """Per (role, worker, partition) the age of its reader's last progress, seconds (a
    reader making none while its group has events is a stall: workers.progress)."""
    metric = "blackboard_worker_progress_age_seconds"
    lines = [f"# TYPE {metric} gauge"]
    for role, worker_id, ages_ms in workers:
        lines += [f'{metric}{{role="{role}",worker="{worker_id}",partition="{p}"}} '
                  f"{ms / 1000:.3f}" for p, ms in sorted(ages_ms.items())]
    return "\n".join(lines) + "\n"


def render_metrics(role: str, worker_id: str, counters: Mapping[str, float]) -> str:
    """:func:`render_process` of one worker."""
    return render_process([(role, worker_id, counters)])


class MetricsServer:
    """A minimal HTTP/1.0 responder; enough for a Prometheus scrape, nothing else."""

    def __init__(self, port: int, render: Callable[[], str], host: str = "127.0.0.1") -> None:
        self.port, self.host, self.render = port, host, render
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            if request.split(b" ")[1:2] == [b"/metrics"]:
                body = self.render().encode()
                head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            else:
                body, head = b"not found\n", b"HTTP/1.0 404 Not Found\r\n"
            writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
