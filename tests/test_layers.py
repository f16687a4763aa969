"""The house's layers (DESIGN.md, "Layers"): every import between our top-level packages goes
down the table, none goes up, not even hidden in a function, behind ``TYPE_CHECKING`` or
through ``__import__`` / ``importlib.import_module``; and no two packages import each other,
however indirectly.

Entry points are not imports: memory loads its transformer catalog from consolidation
through one (``blackboard.transformer_catalog`` in pyproject.toml), and there the plug-in
imports its host, as the table wants.

Pure: reads the sources with :mod:`ast` and imports nothing of ours.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_MEMORY_AND_BELOW = frozenset({"blackboard", "retrieval", "memory"})
_BELOW_GATEWAY = _MEMORY_AND_BELOW | {"consolidation", "workers"}

#: Each package and the packages it may import: DESIGN.md's table, plus the pytest plugin,
#: which sits above memory (its fixtures hand out an AgentMemory).
ALLOWED: dict[str, frozenset[str]] = {
    "blackboard": frozenset(),
    "retrieval": frozenset({"blackboard"}),
    "memory": frozenset({"blackboard", "retrieval"}),
    "consolidation": _MEMORY_AND_BELOW,
    "workers": _MEMORY_AND_BELOW | {"consolidation"},
    "gateway": _BELOW_GATEWAY,
    "pytest_blackboard": _MEMORY_AND_BELOW,
    # adapters for agent frameworks (LangGraph, LangChain, OpenAI Agents): the SDK and no more
    "integrations": _MEMORY_AND_BELOW,
    "cli": _BELOW_GATEWAY | {"gateway"},
}

#: Calls that import the module named by their first argument.
_IMPORT_CALLS = frozenset({"__import__", "import_module"})
#: Arguments naming the calling module itself (a relative name then stays in its package).
_OWN_NAME = frozenset({"__name__", "__package__"})

#: Dynamic imports whose target the test cannot read from the source, each with the reason
#: it is allowed, keyed by ``(path, source of the call)``. A name whose literal part fixes
#: its package (``f".{mod}"`` relative to ``__name__``) needs no entry.
UNREAD_ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    """One import in one file: ``where`` (``path:line``) imports ``target`` (a top-level
    name, or None when the source does not say which)."""

    source: str
    target: str | None
    where: str
    code: str


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    """The package a relative import in ``path`` starts from."""
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve(path: Path, module: str | None, level: int) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in ``path``."""
    if level == 0:
        return module or ""
    base = _package_of(path).split(".")
    if level - 1 >= len(base):
        return ""  # beyond the top-level package: Python refuses it, so do we
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _top(name: str) -> str | None:
    return name.split(".")[0] or None


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _literal_prefix(node: ast.expr) -> tuple[str, bool]:
    """The literal text at the start of a string expression, and whether that is all of it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.JoinedStr):
        head = ""
        for part in node.values:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                return head, False
            head += part.value
        return head, True
    return "", False


def _package_arg(call: ast.Call) -> ast.expr | None:
    if len(call.args) > 1:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg == "package"), None)


def _dynamic_target(path: Path, call: ast.Call) -> str | None:
    """The top-level package a dynamic import call loads, when the source fixes it."""
    if not call.args:
        return None
    text, whole = _literal_prefix(call.args[0])
    if _call_name(call) == "import_module" and text.startswith("."):
        pkg = _package_arg(call)
        own = isinstance(pkg, ast.Name) and pkg.id in _OWN_NAME
        return _top(_module_name(path)) if own else None
    if whole or "." in text:
        return _top(text)
    return None


def _edges(path: Path) -> Iterator[Edge]:
    rel = str(path.relative_to(ROOT))
    source = _top(_module_name(path)) or ""
    for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
        where = f"{rel}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(source, _top(alias.name), where, ast.unparse(node))
        elif isinstance(node, ast.ImportFrom):
            name = _resolve(path, node.module, node.level)
            yield Edge(source, _top(name), where, ast.unparse(node))
        elif isinstance(node, ast.Call) and _call_name(node) in _IMPORT_CALLS:
            yield Edge(source, _dynamic_target(path, node), where, ast.unparse(node))


def _files() -> Iterator[Path]:
    for package in ALLOWED:
        yield from sorted((ROOT / package).rglob("*.py"))


def _all_edges() -> list[Edge]:
    return [e for f in _files() for e in _edges(f)]


def _unread_key(e: Edge) -> tuple[str, str]:
    return e.where.rpartition(":")[0], e.code


def test_every_top_level_package_is_in_the_table() -> None:
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert on_disk == set(ALLOWED), "add the package to ALLOWED (and to DESIGN.md's table)"


def test_no_import_goes_up_or_sideways() -> None:
    wrong = [f"{e.where}: {e.code} ({e.source} may import "
             f"{', '.join(sorted(ALLOWED[e.source])) or 'none of ours'})"
             for e in _all_edges()
             if e.target in ALLOWED and e.target != e.source
             and e.target not in ALLOWED[e.source]]
    assert wrong == [], "imports against the layers:\n" + "\n".join(wrong)


def test_no_dynamic_import_hides_its_target() -> None:
    unread = [e for e in _all_edges() if e.target is None]
    hidden = [f"{e.where}: {e.code}" for e in unread if _unread_key(e) not in UNREAD_ALLOWED]
    assert hidden == [], ("dynamic imports whose package the source does not fix (import it "
                          "plainly, or add it to UNREAD_ALLOWED with the reason):\n"
                          + "\n".join(hidden))
    stale = set(UNREAD_ALLOWED) - {_unread_key(e) for e in unread}
    assert not stale, f"UNREAD_ALLOWED entries that match no call any more: {stale}"


def test_the_packages_import_no_cycle() -> None:
    graph: dict[str, set[str]] = {p: set() for p in ALLOWED}
    for e in _all_edges():
        if e.target in ALLOWED and e.target != e.source:
            graph[e.source].add(e.target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        # graphlib lists each node before the node that depends on it: reversed, "imports".
        cycle = " imports ".join(reversed(exc.args[1]))
        raise AssertionError(f"packages import each other: {cycle}") from None


def test_the_test_understands_relative_and_dynamic_names() -> None:
    # The checks above are only as good as the reading; pin it on the forms the tree uses.
    mod = ROOT / "retrieval" / "__init__.py"
    tree = ast.parse(
        "import workers.x\nfrom .engine import A\nfrom ..y import B\n"
        "__import__('gateway.cli', fromlist=['r'])\nimportlib.import_module(f'.{m}', __name__)\n"
        "importlib.import_module(name)\nimport_module(f'cli.{x}')\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert [_resolve(mod, f.module, f.level) for f in froms] == ["retrieval.engine", ""]
    assert [_dynamic_target(mod, c) for c in calls] == ["gateway", "retrieval", None, "cli"]


def _imported_at_load(body: list[ast.stmt]) -> Iterator[str]:
    """What a module's body imports when it loads: its top-level imports and those of its
    ``try`` blocks (not ``if TYPE_CHECKING:``, not functions)."""
    for node in body:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Try):
            yield from _imported_at_load(node.body)


def test_the_pytest_plugin_loads_nothing_of_ours() -> None:
    """pytest imports the plugin in every run of an environment that has the package: its
    module level imports only pytest (the fixtures import the rest when used)."""
    at_load = list(_imported_at_load(ast.parse(
        (ROOT / "pytest_blackboard" / "__init__.py").read_text()).body))
    assert "pytest" in at_load
    assert {_top(n) for n in at_load} & set(ALLOWED) == set(), at_load
