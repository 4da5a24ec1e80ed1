"""No import cycle in the source tree (arena_tf/, export/, serving/): the graph of the project's own
imports, read with `ast` from every module, function-level imports included, has no cycle.

An edge goes from a module to each project module it imports: `from package import name` leads to
package/name.py when that is a module, else to the package's __init__.py; `import a.b.c` leads to
a/b/c. The parents' __init__.py that Python runs on the way are not edges (every module would then
sit in a cycle with its package)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("arena_tf", "export", "serving")  # the library and the commands' folders


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    """{dotted name: path} of every module of the source tree."""
    return {
        module_name(path): path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def imported(node, name, is_package, known):
    """The project modules one import statement of module `name` leads to."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    base = node.module or ""
    if node.level:  # relative: from the module's own package, up level - 1
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    found = {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known}
    if base in known and len(found) < len(node.names):
        found.add(base)
    return found


def import_graph():
    """{module: set of project modules it imports anywhere in its body}."""
    known = modules()
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = set().union(
            *[
                imported(node, name, path.name == "__init__.py", known)
                for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
            ]
        ) - {name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert "arena_tf.cli" in graph["arena_tf.train"]  # from arena_tf import cli
    assert "arena_tf.cli" in graph["arena_tf.generators.listops"]
    assert len(graph) > 100


def test_a_cycle_is_found_through_function_level_imports():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_source_tree_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
