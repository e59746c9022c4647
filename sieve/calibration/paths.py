"""Where the offline fits find the real data: ``$SIEVE_SHARED`` or ``shared/`` beside the repo.

The real routing traces and reference tables are never copied into the project; the fits read
them from this folder at run time.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHARED"]

#: ``$SIEVE_SHARED``, else ``../shared`` relative to the project root (the checkout layout).
SHARED = Path(os.environ.get("SIEVE_SHARED",
                             Path(__file__).resolve().parents[2].parent / "shared"))
