"""The Python examples of the docs run as written (fenced ```python blocks, each page's blocks
in order in one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["schedulers.md"]


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, capsys):
    text = (DOCS / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert blocks, f"{page} has no python example"
    ns: dict = {}
    for code in blocks:
        exec(compile(code, f"{page}", "exec"), ns)  # noqa: S102 - our own docs
