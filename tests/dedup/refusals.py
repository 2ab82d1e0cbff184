"""Both engines' refusals of one input, for the tests that compare the local engine's and Spark's messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError


def both_refuse(path: Path, **options) -> tuple[str, str]:
    """The local engine's and the Spark engine's messages for ``path`` (each must be a DataError)."""
    with pytest.raises(DataError) as local:
        run_dedup(str(path), DedupConfig(min_tokens=1, **options))
    with pytest.raises(DataError) as on_spark:
        run_dedup(path.as_uri(), DedupConfig(min_tokens=1, engine="spark", **options))
    return str(local.value), str(on_spark.value)


def refused_alike(path: Path, folder: Path | None = None, **options) -> str:
    """The local engine's one line for ``path`` (:func:`both_refuse`), checked to be Spark's for its URI: equal
    once the URI of ``folder`` (default ``path``) is written as its path, and one line."""
    local_said, spark_said = both_refuse(path, **options)
    base = folder or path
    assert spark_said.replace(base.as_uri(), str(base)) == local_said, (local_said, spark_said)
    assert "\n" not in local_said
    return local_said
