"""Fixtures for the C++ plugin's tests: the real MultiPL-E / ICE-Score data bundled in the
package (tests/multipl_e_data.py): ``cpp_files`` (the paths of ``problems`` and ``grades``) and
``cpp_data`` (the problems by task_id, and the grade file)."""

from __future__ import annotations

from multipl_e_data import multipl_e_fixtures

cpp_files, cpp_data = multipl_e_fixtures("cpp")
