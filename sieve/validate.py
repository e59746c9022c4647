"""Small input-validation helpers shared by the preset and cost-model modules."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from sieve.errors import ConfigError, choices

__all__ = ["check_number", "override_fields"]


def check_number(what: str, name: str, v: Any) -> float:
    """``float(v)`` if it is a finite number >= 0, else ConfigError naming ``what.name``."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"{what}: {name} must be a number, got {v!r}") from None
    if not x >= 0 or math.isinf(x):
        raise ConfigError(f"{what}: {name} must be finite and >= 0, got {v!r}")
    return x


def override_fields(obj: Any, what: str, values: Mapping[str, Any] | None,
                    kw: Mapping[str, Any]) -> Any:
    """Copy of the frozen dataclass ``obj`` with fields replaced, then ``.validate()``d.

    Unknown field names raise ConfigError listing the valid ones.
    """
    items = dict(values or {})
    items.update(kw)
    names = {f.name for f in fields(obj)}
    for key in items:
        if key not in names:
            raise ConfigError(f"{what} {obj.name!r}: unknown override {key!r} "
                              f"(valid: {choices(names)})")
    return replace(obj, **items).validate()
