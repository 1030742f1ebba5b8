"""Check the Rust core's layering: imports point down and no two files import each other.

Each module of ``rust/core/src`` sits in a layer (``LAYERS``); a file may use items of its
own layer or of layers below it, never above. And whatever the layers allow, the graph of
file-to-file imports must have no cycle. Test modules (``#[cfg(test)]`` to the end of the
file) are left out: tests sit on top of everything. Every form of path is followed:
``crate::``, ``super::`` (any number of them), ``self::``, and ``use child::...`` of a module
the file declares; comments are not code.

    python scripts/check_layers.py [--graph]

Exits 1 and names the offending imports and cycles when either rule is broken.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "rust" / "core" / "src"

#: Top-level module -> layer; higher layers may use lower ones.
LAYERS: dict[str, int] = {
    "error": 0,
    "threads": 0,
    "io": 1,
    "metadata": 2,
    "predicate": 3,
    "source": 4,
    "plan": 5,
    "prune": 6,
    "index": 7,
    "catalog": 8,
    "table": 8,
    "read": 9,
    "query": 10,
    "write": 10,
    "lib": 11,
    "fuzzing": 11,
    "testing": 11,
}

#: Modules a layer must not use even where the layers would allow it: the reader reads what
#: the plan says, and knows nothing of how it was made.
FORBIDDEN: dict[str, set[str]] = {
    "read": {"prune", "index", "catalog", "table", "source"},
    "plan": {"prune", "index", "catalog", "table", "source", "read"},
}

#: A path from the crate root, the parent module or this one: its leading keywords and
#: modules, then the last segment (or a braced list of them).
PATH = re.compile(
    r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::(?:super|[a-z_][a-z0-9_]*))*)::"
    r"(\{[^;]*?\}|[a-zA-Z_][a-zA-Z0-9_]*)",
    re.S,
)
#: A child module the file declares (``mod x;``), and a ``use`` of a path starting there.
CHILD = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)
USE_CHILD = re.compile(
    r"\buse\s+([a-z_][a-z0-9_]*)((?:::[a-z_][a-z0-9_]*)*)::(\{[^;]*?\}|[a-zA-Z_][a-zA-Z0-9_]*)",
    re.S,
)
COMMENT = re.compile(r"//[^\n]*")


def module_of(path: Path) -> tuple[str, ...]:
    rel = path.relative_to(SRC).with_suffix("")
    parts = rel.parts
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def without_tests(text: str) -> str:
    at = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    return text if at is None else text[: at.start()]


def absolute(module: tuple[str, ...], is_dir: bool, head: str) -> tuple[str, ...]:
    """The module a path's leading keywords and modules name, seen from ``module`` (a
    ``mod.rs`` when ``is_dir``: its ``super`` is its parent, as for any file)."""
    base = module
    for seg in head.split("::"):
        if seg == "crate":
            base = ()
        elif seg == "super":
            base = base[:-1]
        elif seg == "self":
            pass
        else:
            base = (*base, seg)
    _ = is_dir
    return base


def targets(base: tuple[str, ...], tail: str) -> list[tuple[str, ...]]:
    """Module paths named by one path (braces expanded one level deep)."""
    if not tail.startswith("{"):
        return [(*base, tail)]
    out = []
    depth, item = 0, ""
    for c in tail[1:-1] + ",":
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            head = item.strip().split("::")
            if head and head[0] and head[0] != "self":
                out.append((*base, *[h.strip("{} ") for h in head if h]))
            elif head and head[0] == "self":
                out.append(base)
            item = ""
        else:
            item += c
    return out


def resolve(path: tuple[str, ...], files: dict[tuple[str, ...], Path]) -> tuple[str, ...] | None:
    """The longest prefix of ``path`` that is a module file."""
    for n in range(len(path), 0, -1):
        if path[:n] in files:
            return path[:n]
    return None


def reexports(
    files: dict[tuple[str, ...], Path],
) -> dict[tuple[tuple[str, ...], str], tuple[str, ...]]:
    """(module, name) -> the path a module's ``pub use`` gives that name: a file that uses
    ``crate::io::IoStats`` uses the file defining it, not ``io``'s ``mod.rs``."""
    out: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}
    for module, path in files.items():
        text = COMMENT.sub("", without_tests(path.read_text()))
        here = () if module == ("lib",) else module
        for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([^;]+);", text, re.S):
            body = m.group(1).strip()
            head, _, tail = body.rpartition("::")
            if not head:
                continue
            first = head.split("::")[0]
            base = (
                absolute(here, False, head)
                if first in ("crate", "super", "self")
                else (*here, *head.split("::"))
            )
            for target in targets(base, tail):
                leaf = target[-1].split(" as ")[-1].strip()
                out[(module, leaf)] = tuple(t.split(" as ")[0].strip() for t in target)
    return out


def graph() -> tuple[dict[tuple[str, ...], set[tuple[str, ...]]], dict[tuple[str, ...], Path]]:
    files = {module_of(p): p for p in SRC.rglob("*.rs")}
    files[("lib",)] = files.pop((), SRC / "lib.rs") if () in files else SRC / "lib.rs"
    exported = reexports(files)

    def through(target: tuple[str, ...]) -> tuple[str, ...] | None:
        found = resolve(target, files)
        seen = 0
        while found is not None and len(target) > len(found) and seen < 8:
            via = exported.get((found, target[len(found)]))
            if via is None:
                break
            target = (*via, *target[len(found) + 1 :])
            found = resolve(target, files)
            seen += 1
        return found

    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for module, path in files.items():
        text = COMMENT.sub("", without_tests(path.read_text()))
        here = () if module == ("lib",) else module
        named = []
        for m in PATH.finditer(text):
            named.extend(targets(absolute(here, path.name == "mod.rs", m.group(1)), m.group(2)))
        children = set(CHILD.findall(text))
        for m in USE_CHILD.finditer(text):
            if m.group(1) in children:
                head = (*here, m.group(1), *[p for p in m.group(2).split("::") if p])
                named.extend(targets(head, m.group(3)))
        for target in named:
            found = through(target)
            if found is not None and found != module and found != ("lib",):
                edges[module].add(found)
    return edges, files


def cycles(edges: dict[tuple[str, ...], set[tuple[str, ...]]]) -> list[list[tuple[str, ...]]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on_stack: set[tuple[str, ...]] = set()
    out: list[list[tuple[str, ...]]] = []
    counter = [0]

    def visit(v: tuple[str, ...]) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
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

    sys.setrecursionlimit(10_000)
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def name(module: tuple[str, ...]) -> str:
    return "::".join(module)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="store_true", help="print every file's imports")
    args = parser.parse_args()
    edges, files = graph()
    problems = []
    for module in sorted(files):
        layer = LAYERS.get(module[0])
        if layer is None:
            problems.append(f"{name(module)}: module {module[0]} has no layer in LAYERS")
            continue
        for target in sorted(edges.get(module, ())):
            if LAYERS.get(target[0], -1) > layer:
                problems.append(
                    f"{name(module)} (layer {module[0]}) uses {name(target)}, a layer above it"
                )
            elif target[0] in FORBIDDEN.get(module[0], ()):
                problems.append(f"{name(module)} must not use {name(target)}")
        if args.graph:
            print(f"{name(module)} -> {', '.join(name(t) for t in sorted(edges.get(module, ())))}")
    for component in cycles(edges):
        problems.append("import cycle: " + " -> ".join(name(m) for m in component))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problems in {SRC}")
        return 1
    print(f"layers ok: {len(files)} files, no upward import, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
