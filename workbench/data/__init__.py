"""Data loading shared by every job (see :mod:`workbench.data.loading`)."""

from workbench.data.loading import (
    BUNDLED,
    LoadedDataset,
    SkippedFile,
    hub_reachable,
    load_humaneval,
    load_records,
    require_columns,
)

__all__ = [
    "BUNDLED",
    "LoadedDataset",
    "SkippedFile",
    "hub_reachable",
    "load_humaneval",
    "load_records",
    "require_columns",
]
