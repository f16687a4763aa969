"""Settings of a worker process, read from ``BLACKBOARD_WORKER_*`` environment variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blackboard import InvalidArgument
from blackboard.settings import settings_from_env

__all__ = ["WorkerSettings"]

ENV_PREFIX = "BLACKBOARD_WORKER_"

@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """Times are ms unless named ``*_s`` (seconds).

    ``lease_ttl_ms`` bounds how long a dead worker's partitions stay orphaned;
    ``claim_idle_ms`` how long its un-acked events wait before another worker claims them.
    """

    heartbeat_ms: int = 1_000
    lease_ttl_ms: int = 5_000
    claim_idle_ms: int = 1_000
    batch_count: int = 200
    #: A reader blocks this long (at most the client's max_block_ms) between idle reads.
    block_ms: int = 25_000
    max_deliveries: int = 5
    #: A partition whose reader made no progress (no read returned, no batch settled) for
    #: this long while its group has events to read or pending is given up and re-read
    #: by a fresh reader (workers.progress). Above ``block_ms``: an idle read returns then.
    stall_ms: int = 90_000
    max_failures: int = 3
    trigger_check_ms: int = 500
    #: Backstop only: buffering and firing notice edge changes at once (workers/edgeset.py).
    edges_refresh_ms: int = 60_000
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    #: Test aid: pause this long between writing a batch's outputs and trimming its buffer,
    #: widening the window a crash test's kill -9 must hit. 0 in production.
    crash_window_ms: int = 0
    #: While Redis is over its maxmemory, each loop says it waits once per this many s.
    oom_say_every_s: float = 30.0
    # maintenance intervals (seconds)
    #: Readers hide an expired entry at once (scope reads subtract what is due), so the
    #: sweep only reclaims its memory: every 15 s costs an idle worker about one
    #: command/s per 16 partitions (issue 23: an idle worker <= 20 commands/s).
    sweep_every_s: float = 15.0
    prune_every_s: float = 30.0
    trim_every_s: float = 30.0
    dedupe_every_s: float = 120.0
    reindex_every_s: float = 60.0
    #: Schedule repair: bounds how long an agent's tampering delays another scope's sweep.
    reschedule_every_s: float = 300.0
    #: Belief revalidation (a belief is due once per cadence of its kind: days).
    revalidate_every_s: float = 3600.0
    # optional LLM path of the transformers (an OpenAI-compatible endpoint)
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_rate: float | None = None
    llm_token_budget: int | None = None

    def __post_init__(self) -> None:
        if self.lease_ttl_ms < 2 * self.heartbeat_ms:
            raise InvalidArgument("lease_ttl_ms must be at least twice heartbeat_ms")
        if self.stall_ms <= self.block_ms:
            raise InvalidArgument("stall_ms must be above block_ms (an idle read returns "
                                  "every block_ms)")
        if self.batch_count < 1 or self.max_deliveries < 1:
            raise InvalidArgument("batch_count and max_deliveries must be >= 1")
        if (self.llm_base_url is None) != (self.llm_model is None):
            raise InvalidArgument("set both llm_base_url and llm_model, or neither")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> WorkerSettings:
        """Settings from ``BLACKBOARD_WORKER_<FIELD>`` variables, then ``overrides``."""
        return settings_from_env(cls, ENV_PREFIX, env, overrides)
