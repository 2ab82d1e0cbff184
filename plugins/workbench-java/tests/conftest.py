"""Fixtures for the Java plugin's tests: the real MultiPL-E / ICE-Score data bundled in the
package (tests/multipl_e_data.py): ``java_files`` (the paths of ``problems`` and ``grades``) and
``java_data`` (the problems by task_id, and the grade file)."""

from __future__ import annotations

from multipl_e_data import multipl_e_fixtures

java_files, java_data = multipl_e_fixtures("java")
