"""The examples of the docs run as written.

Every fenced ``python`` block of every page in docs/ runs, the blocks of a page in page order in
one namespace (a later block may use what an earlier one made), in a temporary directory that
holds a copy of examples/ (so ``examples/...`` paths resolve and saved files land there). A block
whose first line is ``# listing`` (a signature, or code that needs files of your own) is not
run. docs/hardware.md's blocks also run one by one in fresh namespaces, and its ``json`` /
``toml`` blocks are system files that :func:`sieve.hw.load_system` must accept.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sieve import hw

DOC = Path(__file__).resolve().parents[1] / "docs" / "hardware.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def _blocks(lang: str) -> list[tuple[int, str]]:
    """(first line, text) of every fenced block in ``lang``."""
    if not DOC.exists():
        return []
    text = DOC.read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(2)) for m in FENCE.finditer(text)
            if m.group(1) == lang]


PYTHON = _blocks("python")


def test_the_page_has_examples():
    if not DOC.exists():
        pytest.skip("docs/hardware.md absent")
    assert len(PYTHON) >= 4
    assert _blocks("json") and _blocks("toml")


@pytest.mark.parametrize("line,code", PYTHON, ids=[f"line{ln}" for ln, _ in PYTHON])
def test_python_blocks_run(line, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{DOC}:{line}", "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("lang", ["json", "toml"])
def test_system_file_blocks_load(lang, tmp_path):
    for i, (_line, text) in enumerate(_blocks(lang)):
        p = tmp_path / f"block{i}.{lang}"
        p.write_text(text)
        assert isinstance(hw.load_system(p), hw.SystemConfig)


def test_printed_costs_match_the_comment(capsys, tmp_path, monkeypatch):
    """The cost-interface example prints what its comment says."""
    monkeypatch.chdir(tmp_path)
    for line, code in PYTHON:
        if "RooflineCostModel(system)" not in code:
            continue
        exec(compile(code, f"{DOC}:{line}", "exec"), {"__name__": "docs_example"})
        printed = capsys.readouterr().out.strip().splitlines()
        comments = [ln[2:] for ln in code.splitlines() if ln.startswith("# ") and "µs" in ln]
        assert printed == comments
        return
    pytest.fail("cost-interface example not found in docs/hardware.md")


# ---- pages whose python blocks build on each other (one namespace per page, in order) ---------

CHAINED = ["schedulers.md", "workloads.md"]


@pytest.mark.parametrize("page", CHAINED)
def test_chained_python_blocks_run(page, tmp_path, monkeypatch):
    text = (DOC.parent / page).read_text(encoding="utf-8")
    blocks = [m.group(2) for m in FENCE.finditer(text) if m.group(1) == "python"]
    assert blocks, f"{page} has no python example"
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "docs_example"}
    for code in blocks:
        exec(compile(code, page, "exec"), ns)


def test_user_guide_package_layout_example_runs(tmp_path, monkeypatch, capsys):
    """The user guide's layout example (one SystemConfig, two CostModels) runs as written."""
    text = (DOC.parent / "user-guide.md").read_text(encoding="utf-8")
    section = text.split("## Package layout", 1)[1].split("\n## ", 1)[0]
    blocks = [m.group(2) for m in FENCE.finditer(section) if m.group(1) == "python"]
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "user-guide.md#package-layout", "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in out] == ["RooflineCostModel", "EngineCostModel"]


def test_model_of_computation_cost_example_prints_its_comment(tmp_path, monkeypatch, capsys):
    text = (DOC.parent / "model-of-computation.md").read_text(encoding="utf-8")
    section = text.split("## The system and the cost interface", 1)[1].split("\n## ", 1)[0]
    blocks = [m.group(2) for m in FENCE.finditer(section) if m.group(1) == "python"]
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "model-of-computation.md#cost", "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out.strip()
    comment = next(ln for ln in blocks[0].splitlines() if ln.startswith("# ") and " ns " in ln)
    assert comment[2:].startswith(printed)


DOCS = DOC.parent
EXAMPLES = DOC.parents[1] / "examples"


def _page_blocks(page: Path) -> list[tuple[int, str]]:
    text = page.read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(2)) for m in FENCE.finditer(text)
            if m.group(1) == "python"]


PAGES = sorted(p for p in DOCS.glob("*.md") if _page_blocks(p)) if DOCS.exists() else []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_python_block_of_every_page_runs_in_page_order(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if EXAMPLES.exists():
        shutil.copytree(EXAMPLES, tmp_path / "examples")
    ns = {"__name__": "docs_example"}
    ran = 0
    for line, code in _page_blocks(page):
        if code.lstrip().startswith("# listing"):
            continue
        exec(compile(code, f"{page}:{line}", "exec"), ns)
        ran += 1
    assert ran > 0
