"""The package layout keeps its promises (docs/architecture.md): no import cycles, data flowing one way.

The import graph is read from the source (module-level *and* function-level imports; imports under
``if TYPE_CHECKING:`` are skipped because they never run), so a cycle hidden inside a function fails
here too.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import capeval

PACKAGE_DIR = Path(capeval.__file__).resolve().parent

#: Rooms in data-flow order: a module may import its own room and rooms listed before it, never later ones.
ROOMS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("_version", "suggest", "hub_cli", "paths", "progress", "signature", "validation", "io", "java",
                    "published", "advice", "matching", "inputs", "render", "testing", "registry", "provenance", "catalog", "model_store", "model_integrity", "workers", "options", "plugins", "dependencies", "loaded_models", "language",
                    "coverage", "scales", "sqlite_retry", "scratch")),
    ("text", ("text", "meteor")),
    ("batch", ("batch", "metric")),
    ("metric families and models", ("coco", "spice", "spice_u", "spider", "thumb", "models", "sentence_cosine",
                                    "vision_language", "judges", "length", "capture")),
    ("learned metrics", ("critic", "lceval", "sentence_rank")),
    ("api", ("api", "parallel", "", "hf", "rerank", "captioning", "dataset_scoring", "ray")),  # "" = the top-level package capeval/__init__.py
    ("judgment data", ("judgments",)),
    ("training corpora", ("corpora",)),
    ("meta-evaluation", ("meta_evaluation", "benchmarks")),  # benchmarks: the deprecated name of both
    ("hub", ("hub",)),
    ("cli", ("cli", "__main__")),
]
RANK = {first: rank for rank, (_, firsts) in enumerate(ROOMS) for first in firsts}


def _module_name(path: Path) -> str:
    parts = ["capeval", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """Every capeval module ``module`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "capeval")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "capeval":
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                found.update(subs)
                if len(subs) < len(node.names):
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE_DIR.rglob("*.py"))
    modules = {_module_name(f) for f in files}
    graph = {}
    for f in files:
        name = _module_name(f)
        tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
        graph[name] = _imports(tree, name, f.name == "__init__.py", modules)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    return out


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


GRAPH = import_graph()


def test_the_graph_sees_function_level_imports():
    # capeval.api imports capeval.registry at module level; benchmarks.scorers imports capeval.api in a function
    assert "capeval.registry" in GRAPH["capeval.api"]
    assert "capeval.api" in GRAPH["capeval.meta_evaluation.scorers"]
    assert "capeval.registry" in GRAPH["capeval.metric"]


def test_cycle_detection_finds_a_planted_cycle():
    assert "capeval.paths" in GRAPH["capeval.judgments.files"]
    planted = {**GRAPH, "capeval.paths": GRAPH["capeval.paths"] | {"capeval.judgments.files"}}
    assert _cycles(planted) == [["capeval.judgments.files", "capeval.paths"]]


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_every_module_belongs_to_a_room():
    assert sorted({_room(m) for m in GRAPH} - set(RANK)) == []


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_flow_one_way(module):
    rank = RANK[_room(module)]
    upstream = sorted(t for t in GRAPH[module] if RANK.get(_room(t), -1) > rank)
    assert upstream == [], (f"{module} (room {ROOMS[rank][0]!r}) imports {upstream}, which belong to later "
                            "rooms; see docs/architecture.md")


def test_only_the_entry_point_imports_the_cli():
    importers = sorted(m for m, targets in GRAPH.items()
                       if any(t == "capeval.cli" or t.startswith("capeval.cli.") for t in targets)
                       and _room(m) != "cli")
    assert importers == ["capeval.__main__"] or importers == []


def test_reserved_homes_for_the_learned_parts_are_documented():
    for room in ("models", "critic", "lceval", "rerank"):
        doc = ast.get_docstring(ast.parse((PACKAGE_DIR / room / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "What goes here" in doc, room


def test_no_private_name_is_imported_across_packages():
    """What several packages use is public in the foundation (``capeval.dependencies``, ``capeval.options``...): no
    module imports a ``_private`` name, or from a ``_private`` module, of another package."""
    root = Path(capeval.__file__).parent
    crossings = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        package = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("capeval.")):
                continue
            target = node.module.split(".")[1]
            private_module = any(p.startswith("_") for p in node.module.split(".")[1:])
            for alias in node.names:
                if target != package and (private_module or alias.name.startswith("_")) \
                        and not node.module.endswith("_version"):
                    crossings.append(f"{'/'.join(parts)}: from {node.module} import {alias.name}")
    assert crossings == []
