"""Fixtures for the C++ plugin's tests: the real MultiPL-E / ICE-Score data bundled in the
package (tests/multipl_e_data.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from multipl_e_data import load_multipl_e, multipl_e_files


@pytest.fixture(scope="session")
def cpp_files(tmp_path_factory) -> dict[str, Path]:
    """The paths of ``problems`` (MultiPL-E C++ problems) and ``grades`` (ICE-Score C++ grade file),
    written from the sets bundled in the package."""
    return multipl_e_files("cpp", tmp_path_factory.mktemp("multipl-e-cpp"))


@pytest.fixture(scope="session")
def cpp_data(cpp_files) -> dict:
    """``problems`` (task_id -> MultiPL-E C++ problem) and ``grades`` (ICE-Score C++ grade file)."""
    return load_multipl_e(cpp_files)
