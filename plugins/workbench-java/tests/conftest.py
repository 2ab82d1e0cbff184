"""Fixtures for the Java plugin's tests: the real MultiPL-E / ICE-Score data bundled in the
package (tests/multipl_e_data.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from multipl_e_data import load_multipl_e, multipl_e_files


@pytest.fixture(scope="session")
def java_files(tmp_path_factory) -> dict[str, Path]:
    """The paths of ``problems`` (MultiPL-E Java problems) and ``grades`` (ICE-Score Java grade file),
    written from the sets bundled in the package."""
    return multipl_e_files("java", tmp_path_factory.mktemp("multipl-e-java"))


@pytest.fixture(scope="session")
def java_data(java_files) -> dict:
    """``problems`` (task_id -> MultiPL-E Java problem) and ``grades`` (ICE-Score Java grade file)."""
    return load_multipl_e(java_files)
