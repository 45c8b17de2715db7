"""The import graph of `src/agentctl`: no cycles, and the layers import one way.

Every import counts — at the top, inside functions, under `if TYPE_CHECKING:` — since an
import kept inside a function to dodge a cycle is still the cycle. `from pkg import name`
counts as importing `pkg.name` when that is a module."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "agentctl"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

Graph = dict[str, set[str]]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> Iterator[str]:
    """The agentctl modules `tree` (the source of `module`) imports."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                yield submodule if submodule in known else base


@functools.cache
def import_graph() -> Graph:
    paths = {module_name(path): path for path in SOURCE.rglob("*.py")}
    known = set(paths)
    graph: Graph = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        graph[module] = {
            target
            for target in imported(tree, module, is_package, known)
            if target in known and target != module
        }
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    # a relative import, a `from pkg import submodule`, and an import inside a function
    assert "agentctl.server.routes.runs" in graph["agentctl.server.routes"]
    assert "agentctl.server.lookup" in graph["agentctl.server.routes.runs"]
    assert "agentctl.server.devloop" in graph["agentctl.cli.dev"]


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    described = "\n".join(f"{len(c)} modules: {' → '.join(c)}" for c in found)
    assert not found, f"import cycles in src/agentctl:\n{described}"


def test_only_the_cli_reaches_into_the_server() -> None:
    """The server sits on top: nothing below it (engine, storage, platform, …) imports it."""
    offenders = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if not in_package(module, "agentctl.server") and not in_package(module, "agentctl.cli")
        for target in sorted(targets)
        if in_package(target, "agentctl.server")
    ]
    assert not offenders, "\n".join(offenders)


def test_routes_import_no_other_routes() -> None:
    """Routes translate HTTP to the services; what two routes share lives in a service, or in
    `routes.common` when it is HTTP parsing."""
    routes = "agentctl.server.routes"
    shared = {routes, f"{routes}.common"}
    offenders = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if in_package(module, routes) and module not in shared
        for target in sorted(targets)
        if in_package(target, routes) and target != f"{routes}.common"
    ]
    assert not offenders, "\n".join(offenders)


def test_only_the_app_imports_the_routes() -> None:
    """Services, protocols and the rest never call into a route: the app assembles them."""
    routes = "agentctl.server.routes"
    offenders = [
        f"{module} imports {target}"
        for module, targets in import_graph().items()
        if not in_package(module, routes) and module != "agentctl.server.app"
        for target in sorted(targets)
        if in_package(target, routes)
    ]
    assert not offenders, "\n".join(offenders)


def test_only_the_builders_import_the_app() -> None:
    """Modules get the `Server` from `server.context`; `server.app` builds the application
    and is imported only by what runs it."""
    builders = {
        "agentctl.server.devloop",
        "agentctl.server.dispatch",
        "agentctl.server.embedded",
        "agentctl.server.production",
    }
    offenders = [
        module
        for module, targets in import_graph().items()
        if "agentctl.server.app" in targets
        and module not in builders
        and not in_package(module, "agentctl.cli")
    ]
    assert not offenders, f"import agentctl.server.app: {', '.join(sorted(offenders))}"
