"""No function of the package is longer than :data:`MAX_LINES` lines, but those of the allow-list.

A function's length counts its lines from ``def`` to its last line (signature and docstring included, decorators
not); methods and nested functions count on their own, as ``Class.method`` / ``outer.inner``. A long function is
split into named phases; the allow-list names the ones still over the limit, each with its reason, and an entry
leaves the list once its function is split.
"""
from __future__ import annotations

import ast
from pathlib import Path

import capeval

PACKAGE_DIR = Path(capeval.__file__).resolve().parent

#: Most lines a function may have.
MAX_LINES = 80

#: ``"path/relative/to/capeval.py::qualified.name"`` -> why it is still over :data:`MAX_LINES`.
ALLOWED: dict[str, str] = {
    "api.py::score": "the public entry point: a 60-line docstring documents every argument, the body is 12 lines",
}


def _function_lengths() -> dict[str, int]:
    """``{"path::qualified.name": lines}`` of every function and method under the package."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lengths[f"{path}::{name}"] = child.end_lineno - child.lineno + 1
                visit(child, path, f"{name}.")
            else:
                visit(child, path, prefix)

    for file in sorted(PACKAGE_DIR.rglob("*.py")):
        visit(ast.parse(file.read_text(encoding="utf-8")), file.relative_to(PACKAGE_DIR).as_posix(), "")
    return lengths


def test_no_function_over_the_limit():
    too_long = {name: n for name, n in _function_lengths().items() if n > MAX_LINES and name not in ALLOWED}
    assert not too_long, (f"functions over {MAX_LINES} lines (split them into named phases): "
                          + ", ".join(f"{name} ({n})" for name, n in sorted(too_long.items())))


def test_allow_list_names_only_long_functions():
    lengths = _function_lengths()
    stale = sorted(name for name in ALLOWED if lengths.get(name, 0) <= MAX_LINES)
    assert not stale, f"no longer over {MAX_LINES} lines (or gone): remove from ALLOWED: {', '.join(stale)}"
