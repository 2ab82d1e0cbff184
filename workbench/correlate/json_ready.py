"""Result objects of ``workbench correlate`` as JSON: NaN and infinities become ``null``.

Shared by :mod:`workbench.correlate.results` and :mod:`workbench.correlate.table`, whose
``to_dict()`` methods return JSON-ready data.
"""

from __future__ import annotations

import math
from typing import Any


def json_ready(value: Any) -> Any:
    """``value`` made fit for ``json.dumps(..., allow_nan=False)``, recursively.

    Args:
        value: a float, dict, list, tuple, numpy scalar, or anything ``json`` writes as it is.

    Returns:
        the same data with NaN and +-inf as ``None``, tuples as lists, dict keys as strings and
        numpy scalars as Python numbers; any other value unchanged.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return json_ready(value.item())
    return value
