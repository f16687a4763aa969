"""Role and transformer names come from one place: the consolidation registry (transformer
roles) and the role plug-ins (index, maintenance); memory learns them through its catalog."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from consolidation.transformer import get_transformer, transformer_names, transformer_roles
from memory.catalog import catalog
from workers.roles import CONSUMING_ROLES, EDGE_ROLES, ROLES, role_spec, roles_running


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_roles_derive_from_the_transformer_registry() -> None:
    roles = transformer_roles()
    assert set(roles) == set(EDGE_ROLES)
    # Every registered transformer runs in exactly one role; identity shares summarize's.
    assert sorted(n for ns in roles.values() for n in ns) == transformer_names()
    assert roles[get_transformer("summarize").name] >= {"identity", "summarize"}
    for r in EDGE_ROLES:
        assert role_spec(r).consumes and role_spec(r).transformers == roles[r]
    extra = [r for r in ROLES if r not in EDGE_ROLES]
    assert extra == ["index", "maintenance"]
    assert set(CONSUMING_ROLES) == set(EDGE_ROLES) | {"index"}
    assert roles_running({"identity"}) == {"summarize"}


def test_unknown_role_names_the_roles() -> None:
    with pytest.raises(ValueError, match=r"unknown role 'bogus'; roles: .*maintenance, all"):
        role_spec("bogus")


def test_memory_catalog_is_the_consolidation_registry() -> None:
    assert set(catalog().transformer_names()) == set(transformer_names())
    edges = catalog().default_edges("a1", ["t1"])
    assert {e.transformer for e in edges} <= set(transformer_names())
    assert {e.transformer for e in edges} == set(transformer_names())  # each one is used


@pytest.mark.process  # a fresh interpreter
def test_catalog_loads_through_the_entry_point_without_importing_consolidation() -> None:
    out = _run("""
        import sys
        from memory import MemorySubscription, default_edges
        before = "consolidation" in sys.modules
        n = len(default_edges("a1", ["t1"]))
        try:
            MemorySubscription("agent:*:working", "agent:{1}:stm", "nope")
        except Exception as exc:
            print(before, n, type(exc).__name__, exc)
    """)
    assert out.startswith("False 12 InvalidEdge unknown transformer 'nope'; known: ["), out
    assert "'summarize'" in out


@pytest.mark.process  # a fresh interpreter
def test_a_transformer_registered_later_is_a_valid_edge_name_and_role() -> None:
    out = _run("""
        from consolidation.transformer import register_transformer, transformer_roles
        from memory import MemorySubscription

        class Echo:
            name = "echo"
            version = "1"
            async def __call__(self, batch, ctx):
                return []

        register_transformer(Echo(), role="summarize")
        MemorySubscription("agent:*:working", "agent:{1}:stm", "echo")
        print(sorted(transformer_roles()["summarize"]))
    """)
    assert out == "['echo', 'identity', 'summarize']"
