"""The ``bundled_data`` fixture (tests/bundled_data.py) stands in for ``../shared/data`` in the tests that
read its files by path: each file it writes from the bundled sets is byte for byte the shared file of the
same path (tests36: those tests skipped on a clean clone, where ``../shared`` is absent, though the data
was bundled). The comparison needs the shared folder and skips without it; the layout check does not."""

from __future__ import annotations

import hashlib

import pytest
from bundled_data import LAYOUT

from workbench.data import BUNDLED, load_records


def test_the_layout_names_every_bundled_set_once() -> None:
    assert sorted(LAYOUT.values()) == sorted(BUNDLED)


@pytest.mark.parametrize("relative", sorted(LAYOUT))
def test_each_written_file_is_the_shared_file_byte_for_byte(relative: str, bundled_data, shared_data) -> None:
    shared = shared_data / relative
    if not shared.is_file():
        pytest.skip(f"{shared} not found")
    ours = (bundled_data / relative).read_bytes()
    assert hashlib.sha256(ours).hexdigest() == hashlib.sha256(shared.read_bytes()).hexdigest()


@pytest.mark.parametrize("relative", [path for path in sorted(LAYOUT) if path.endswith("_grade.json")])
def test_the_written_grade_files_load_as_their_bundled_names(relative: str, bundled_data) -> None:
    """By path, the loader reads the same rows as by name (the language column from the file name)."""
    by_path = load_records(bundled_data / relative).splits["test"].to_list()
    assert by_path == load_records(LAYOUT[relative]).splits["test"].to_list()
