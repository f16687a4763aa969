"""The role registry: what a role is (:class:`Role`, built by a :class:`RoleSpec`'s factory
for one :class:`RoleHost`) and the roles registered by name.

A role registers a :class:`RoleSpec` under its name: a factory building the
:class:`Role` for one worker, whether it reads the partition buses (then it holds
partition leases and a consumer group of its name), and which transformers' edges it runs.
The built-in roles are registered by :mod:`workers.roles`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from blackboard import Blackboard, ConsumeCounters
    from memory.registry import Registry

    from ..leases import LeaseSet
    from ..settings import WorkerSettings

__all__ = [
    "Role",
    "RoleHost",
    "RoleSpec",
    "register_role",
    "registered",
    "role_spec",
    "roles_running",
]


class RoleHost(Protocol):
    """What a role gets from the worker running it (:class:`workers.worker.Worker`)."""

    bb: Blackboard
    id: str
    role: str
    settings: WorkerSettings
    registry: Registry
    leases: LeaseSet
    #: Set when the worker stops: the role's loops end after the batch in hand.
    stopping: asyncio.Event
    #: The worker's bus-reading counters, shared by whatever the role consumes.
    consume_counters: ConsumeCounters
    #: Batches the role buffered or handled (reported for every role).
    batches: int

    def claim_window_ms(self) -> int: ...

    async def sleep(self, ms: int) -> bool: ...


class Role(Protocol):
    """One worker's share of a role's work."""

    async def start(self) -> None:
        """Start the role's loops; returns once they run."""

    async def stop(self) -> None:
        """Finish the work in hand and end the loops (the host's ``stopping`` is set)."""

    def counters(self) -> dict[str, int]:
        """The role's own counters (the worker adds its lease and consume counters)."""

    def failing_for(self) -> float:
        """Seconds the role's consuming has failed without a success (0 when it works)."""

    def partitions_changed(self) -> None:
        """The worker's partition set changed: follow it now, not at the next poll."""


@dataclass(frozen=True, slots=True)
class RoleSpec:
    name: str
    factory: Callable[[RoleHost], Role]
    #: Reads the partition buses through a consumer group of its name, so holds partition
    #: leases. Only these get groups: a group nobody reads would hold bus trimming back.
    consumes: bool
    #: The transformers whose edges the role runs.
    transformers: frozenset[str] = frozenset()
    #: Holds partition leases but reads no bus group (the index role reads its own queue):
    #: no group is created for it, so it never holds the bus trim or retired entries back.
    no_group: bool = False


_SPECS: dict[str, RoleSpec] = {}


def register_role(spec: RoleSpec) -> RoleSpec:
    """Register ``spec`` under its name; a second role of the same name is a ValueError."""
    if spec.name in _SPECS and _SPECS[spec.name] != spec:
        raise ValueError(f"role {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def role_spec(name: str) -> RoleSpec:
    """The role registered as ``name``; ValueError lists the roles."""
    try:
        return _SPECS[name]
    except KeyError:
        raise ValueError(f"unknown role {name!r}; roles: {', '.join(_SPECS)}, all") from None


def roles_running(transformers: set[str]) -> set[str]:
    """The roles that run any of ``transformers``' edges."""
    return {s.name for s in _SPECS.values() if s.transformers & transformers}


def registered() -> tuple[RoleSpec, ...]:
    """Every registered role, in the order of registration."""
    return tuple(_SPECS.values())
