"""Where hardware preset names are written as string literals in the package (used by
test_defaults.py).

A preset name (a GPU, system, link or DRAM/PIM spec preset) may be spelled out only in the
preset tables (:data:`TABLES`), which also hold the three default constants
(``sieve.hw.system.DEFAULT_SYSTEM``, ``sieve.dram.presets.DEFAULT_SPEC``,
``sieve.hw.presets.DEFAULT_GPU``). Everywhere else a function takes the resolved object passed
down from the entry point, or names the default through one of those constants, so a default
lives in one place and no call looks a name up again.

The scan reads string constants with ``ast``: comments and docstrings (prose, doctest examples)
do not count; every other string constant does (defaults, arguments, dict keys). Model names
are not scanned: a model is a workload choice, and the tables keyed by model (router presets,
router fits) are data, not defaults.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

#: The preset tables and the default constants' homes (paths relative to the repository root).
TABLES = frozenset({
    "sieve/hw/presets.py",
    "sieve/hw/system.py",
    "sieve/hw/calibrations.py",
    "sieve/dram/presets.py",
    "sieve/model/presets.py",
    "sieve/system/setups.py",  # the seed's evaluation setups (model, system) by name
})


def preset_names() -> frozenset[str]:
    """Every hardware preset name the registries know (lower case)."""
    from sieve.dram.presets import PRESETS
    from sieve.hw.calibrations import CALIBRATIONS, COMM_CALIBRATIONS
    from sieve.hw.presets import GPUS, LINKS
    from sieve.hw.system import SYSTEMS

    return frozenset(n.lower() for table in (GPUS, SYSTEMS, LINKS, PRESETS, CALIBRATIONS,
                                             COMM_CALIBRATIONS) for n in table)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def literals(path: Path, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of every string constant in ``path`` that is a preset name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstrings(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in skip and node.value.lower() in names)


def scan(package: Path, names: frozenset[str],
         allowed: dict[tuple[str, str], int] | None = None) -> list[str]:
    """Problems: preset-name literals outside :data:`TABLES` beyond the ``allowed`` count per
    (file, name), and ``allowed`` entries that no longer match (so the allowlist shrinks).

    Args:
        package: the ``sieve`` directory; paths are reported relative to its parent.
        names: the preset names to look for.
        allowed: ``{(relative path, name): occurrences}`` tolerated for now.
    """
    allowed = dict(allowed or {})
    root = package.parent
    found: Counter[tuple[str, str]] = Counter()
    lines: dict[tuple[str, str], list[int]] = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in TABLES:
            continue
        for line, name in literals(path, names):
            found[(rel, name)] += 1
            lines.setdefault((rel, name), []).append(line)
    problems = []
    for key, n in sorted(found.items()):
        if n > allowed.get(key, 0):
            rel, name = key
            at = ", ".join(f"{rel}:{ln}" for ln in lines[key])
            problems.append(f"preset name {name!r} written as a literal at {at}: take the "
                            "resolved object (SystemConfig, GpuSpec, DramSpec) from the caller "
                            "or name the default through DEFAULT_SYSTEM / DEFAULT_GPU / "
                            "DEFAULT_SPEC")
    for key, n in sorted(allowed.items()):
        if found.get(key, 0) < n:
            problems.append(f"allowlist entry {key} expects {n} occurrence(s), found "
                            f"{found.get(key, 0)}: shrink or remove it")
    return problems
