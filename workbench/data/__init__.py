"""Data loading shared by every job (see :mod:`workbench.data.loading`) and the sample key
(:mod:`workbench.data.samples`).

The loader's names are imported on first use, so :mod:`workbench.data.samples` can be used
(by the report, for one) without loading ``datasets``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BUNDLED",
    "LoadedDataset",
    "SkippedFile",
    "hub_reachable",
    "load_humaneval",
    "load_records",
    "require_columns",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("workbench.data.loading"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
