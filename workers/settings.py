"""Settings of a worker process, read from ``BLACKBOARD_WORKER_*`` environment variables;
the LLM's also from ``BLACKBOARD_LLM_*`` (:data:`LLM_ENV`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from blackboard import InvalidArgument
from blackboard.settings import settings_from_env

__all__ = ["LLM_ENV", "WorkerSettings"]

ENV_PREFIX = "BLACKBOARD_WORKER_"
#: ``BLACKBOARD_LLM_<NAME>`` -> the field it sets: the LLM is configured once for every
#: worker process (``BLACKBOARD_WORKER_<FIELD>`` still works; the two disagreeing is an error).
LLM_ENV: dict[str, str] = {
    "URL": "llm_base_url",
    "MODEL": "llm_model",
    "API_KEY": "llm_api_key",
    "RATE": "llm_rate",
    "TOKEN_BUDGET": "llm_token_budget",
    "MAX_TOKENS": "llm_max_tokens",
    "ROLES": "llm_roles",
}

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
    #: The process's CPU niceness (0-19; raised to it at start, never lowered): a worker's
    #: work, the model's embedding above all, is background work, and on a machine it
    #: shares it must leave the cores to Redis, the gateway and the agents first (a model
    #: on both cores held the dashboard's page loads at 1.5 s against 0.6). Where nothing
    #: else wants the CPU it changes nothing. 0: the priority it was started with.
    nice: int = 10
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
    #: Cap on each reply's tokens (None: the server's default).
    llm_max_tokens: int | None = None
    #: The edge roles whose transformers use the LLM, comma-separated (e.g.
    #: ``summarize,semantic``); None: every one. The others run their LLM-free paths.
    llm_roles: str | None = None

    def __post_init__(self) -> None:
        if self.lease_ttl_ms < 2 * self.heartbeat_ms:
            raise InvalidArgument("lease_ttl_ms must be at least twice heartbeat_ms")
        if self.stall_ms <= self.block_ms:
            raise InvalidArgument("stall_ms must be above block_ms (an idle read returns "
                                  "every block_ms)")
        if not 0 <= self.nice <= 19:
            raise InvalidArgument(f"BLACKBOARD_WORKER_NICE must be 0 to 19, got {self.nice}")
        if self.batch_count < 1 or self.max_deliveries < 1:
            raise InvalidArgument("batch_count and max_deliveries must be >= 1")
        if (self.llm_base_url is None) != (self.llm_model is None):
            raise InvalidArgument("set both BLACKBOARD_LLM_URL and BLACKBOARD_LLM_MODEL "
                                  "(llm_base_url, llm_model), or neither")
        if self.llm_max_tokens is not None and self.llm_max_tokens < 1:
            raise InvalidArgument("BLACKBOARD_LLM_MAX_TOKENS must be >= 1")
        self.llm_role_set()  # an unknown name fails here, before anything starts

    def llm_role_set(self) -> frozenset[str]:
        """The edge roles that use the LLM (:attr:`llm_roles`; none without an endpoint)."""
        if self.llm_base_url is None:
            return frozenset()
        # Imported here: the roles' modules import this one.
        from .roles import EDGE_ROLES

        if self.llm_roles is None:
            return frozenset(EDGE_ROLES)
        names = [n.strip() for n in self.llm_roles.split(",") if n.strip()]
        unknown = [n for n in names if n not in EDGE_ROLES]
        if unknown:
            raise InvalidArgument(f"BLACKBOARD_LLM_ROLES names unknown role {unknown[0]!r}: "
                                  f"use some of {', '.join(EDGE_ROLES)}")
        return frozenset(names)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> WorkerSettings:
        """Settings from ``BLACKBOARD_WORKER_<FIELD>`` and :data:`LLM_ENV` variables, then
        ``overrides``."""
        src = dict(os.environ if env is None else env)
        given: dict[str, str] = {}  # long name -> the short one it was given as
        for name, fld in LLM_ENV.items():
            short, long = f"BLACKBOARD_LLM_{name}", ENV_PREFIX + fld.upper()
            if src.get(short) and src.get(long) and src[short] != src[long]:
                raise InvalidArgument(f"{short} and {long} disagree: set one of them")
            if src.get(short):
                src[long], given[long] = src[short], short  # converted as the long name's
        try:
            return settings_from_env(cls, ENV_PREFIX, src, overrides)
        except InvalidArgument as exc:
            msg = str(exc)
            for long, short in given.items():  # the error names the variable that was set
                msg = msg.replace(f"variable {long}=", f"variable {short}=")
            raise InvalidArgument(msg) from None
