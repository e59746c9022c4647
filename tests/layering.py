"""The import rules of the package, read from the source with ``ast`` (used by test_layers.py).

Every ``import`` and ``from ... import`` of a ``sieve`` module counts, including the lazy ones
inside functions: a lazy import is still a dependency. Three rules:

1. **Layers.** A module may import only from its own package and from the packages its package
   sits on (:data:`ALLOWED`). This keeps data flowing one way (config -> trace -> schedule ->
   step DAG -> result table -> figure) and keeps offline calibration out of run time.
2. **No cycles** between modules (a package ``__init__`` counts as a module; a submodule that
   imports its own package's ``__init__`` closes a cycle with it).
3. **Doors.** The compiled engine ``sieve._dram`` is imported by one module only, its door
   ``sieve.dram.engine`` (:data:`DOORS`); every other module reaches the engine through it.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: package -> the packages it may import (besides itself). "base" = errors, validate, outputs.
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset(),  # errors, limits, validate, outputs, stages, lazy
    "_dram": frozenset(),
    "dram": frozenset({"base", "_dram"}),
    "model": frozenset({"base"}),
    "workload": frozenset({"base", "model"}),
    "hw": frozenset({"base", "dram", "model"}),
    "pim": frozenset({"base", "dram", "model", "hw"}),
    "sched": frozenset({"base", "dram", "model", "workload", "hw", "pim"}),
    "system": frozenset({"base", "dram", "model", "workload", "hw", "pim", "sched"}),
    # experiments reads sieve.__version__ (root) for its run files and cache
    "experiments": frozenset({"root", "base", "dram", "model", "workload", "hw", "pim",
                              "sched", "system"}),
    "report": frozenset({"base", "dram", "model", "workload", "hw", "pim", "sched", "system",
                         "experiments"}),
    # offline fits: may read anything they fit, but nothing at run time may import them
    "calibration": frozenset({"base", "dram", "model", "workload", "hw", "pim"}),
    "cli": frozenset({"base", "dram", "model", "workload", "hw", "pim", "sched", "system",
                      "experiments", "report"}),
    "main": frozenset({"cli"}),
    "root": frozenset(),
}
BASE_MODULES = ("errors", "limits", "validate", "outputs", "stages", "lazy")
#: compiled module -> the one module that may import it (names below the top package).
DOORS: dict[str, str] = {"_dram": "dram.engine"}


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str, top: str = "sieve") -> str:
    """The layer package of a module name (``sieve.pim.ffn`` -> ``pim``)."""
    parts = module.split(".")
    if parts[0] != top:
        raise ValueError(module)
    if len(parts) == 1:
        return "root"
    head = parts[1]
    if head in BASE_MODULES:
        return "base"
    if head == "__main__":
        return "main"
    return head


def _modules(root: Path) -> dict[str, Path]:
    mods = {}
    for p in sorted(root.rglob("*.py")):
        mods[module_name(p, root)] = p
    for p in sorted(root.rglob("*.pyx")):  # compiled modules count too
        mods[module_name(p, root)] = p
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The longest known module prefix of a dotted name (``sieve.dram.x`` -> ``sieve.dram``)."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in mods:
            return cand
        parts.pop()
    return None


def imports(path: Path, module: str, mods: dict[str, Path], top: str = "sieve"
            ) -> list[tuple[int, str]]:
    """(line, imported sieve module) for every import in the file, lazy ones included."""
    if path.suffix == ".pyx":
        return []  # the Cython core imports no Python module of the package (checked by hand)
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == top:
                    t = _resolve(a.name, mods)
                    if t:
                        out.append((node.lineno, t))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_pkg else base[:-1]
                base = base[:len(base) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if src.split(".")[0] != top:
                continue
            for a in node.names:
                full = f"{src}.{a.name}"
                t = full if full in mods else _resolve(src, mods)
                if t:
                    out.append((node.lineno, t))
    return out


def check(root: Path, top: str = "sieve", allowed: dict[str, frozenset[str]] = ALLOWED,
          doors: dict[str, str] = DOORS) -> list[str]:
    """Every rule violation in the package at ``root`` (empty list = clean)."""
    mods = _modules(root)
    door_of = {f"{top}.{k}": f"{top}.{v}" for k, v in doors.items()}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    problems = []
    for m, p in mods.items():
        pm = package_of(m, top)
        if pm not in allowed:
            problems.append(f"{m}: package {pm!r} has no layer (add it to ALLOWED)")
            continue
        for line, t in imports(p, m, mods, top):
            if t == m:
                continue
            graph[m].add(t)
            if t in door_of and m != door_of[t]:
                problems.append(f"{p.relative_to(root.parent)}:{line}: {m} imports {t}, which "
                                f"only its door {door_of[t]} may import")
            pt = package_of(t, top)
            if pt != pm and pt not in allowed[pm]:
                problems.append(f"{p.relative_to(root.parent)}:{line}: {m} ({pm}) imports {t} "
                                f"({pt}), which its layer may not use")
    problems += [f"import cycle: {' -> '.join(c)}" for c in _cycles(graph)]
    return problems


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp) + [sorted(comp)[0]])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps
