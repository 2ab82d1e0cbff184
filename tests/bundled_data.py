"""The data sets bundled in the package (``workbench/data/bundled``, SOURCES.md there) written out as files
under the names and folders they have in ``../shared/data``, so that the tests written against those files
run on a clean clone without the shared folder (tests/ is on pytest's ``pythonpath``; the plugins' tests
import this module too).

Each bundled file, uncompressed, is byte for byte the shared file of the same name
(``tests/data/test_bundled_layout.py`` checks it where ``../shared/data`` exists); the ICE-Score grade
files keep their names because the loader takes the language column from the name
(``humaneval_java_grade.json`` -> ``java``). Files of ``../shared/data`` that are not bundled
(``humaneval_python_grade.json``, the ``multipl-e-codex-python`` completions, the correlation CSVs) are
read from the shared folder by the tests that use them, which skip without it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from workbench.data import BUNDLED, load_records

#: path under ../shared/data -> the bundled name (workbench.data.BUNDLED) holding the same bytes
LAYOUT: dict[str, str] = {
    "humaneval/HumanEval.jsonl.gz": "humaneval",
    "ice-score/humaneval_python_flat.jsonl": "humaneval-codex-python",
    "ice-score/humaneval_java_grade.json": "humaneval-codex-java",
    "ice-score/humaneval_cpp_grade.json": "humaneval-codex-cpp",
    "multipl-e-codex-java/problems.jsonl": "humaneval-java",
    "multipl-e-codex-cpp/problems.jsonl": "humaneval-cpp",
    "codegen-metrics/conala-all-grades.json": "conala-all-grades",
    "codegen-metrics/conala-human-grades.json": "conala-human-grades",
}


def bundled_bytes(name: str) -> bytes:
    """The file of bundled set ``name`` (a key of ``workbench.data.BUNDLED``) as it is bundled (gzipped)."""
    filename, _split = BUNDLED[name]
    return (resources.files("workbench.data") / "bundled" / filename).read_bytes()


def write_bundled_data(folder: Path, paths: Iterable[str] = LAYOUT) -> Path:
    """Write the bundled files named by ``paths`` (keys of :data:`LAYOUT`, default all) under ``folder``
    as ``../shared/data`` lays them out: uncompressed, except ``HumanEval.jsonl.gz``, which is gzipped
    there too. Returns ``folder``; raises ``KeyError`` for a path :data:`LAYOUT` does not name."""
    for relative in paths:
        data = bundled_bytes(LAYOUT[relative])
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data if relative.endswith(".gz") else gzip.decompress(data))
    return folder


def write_conala_slice(path: Path, every: int, columns: Sequence[str]) -> list[dict]:
    """Every ``every``-th intent of the bundled CoNaLa set ``conala-all-grades`` (Evtikhiev et al. 2023:
    472 intents x 5 models' generations, intents in the set's order from the first), each row cut to
    ``columns``, written to ``path`` as JSON Lines. Returns the rows written, in the set's order;
    raises ``KeyError`` for a column the set does not have."""
    loaded = load_records("conala-all-grades")
    everything = [row for split in loaded.splits.values() for row in split]
    keep = set(list(dict.fromkeys(row["task_id"] for row in everything))[::every])
    rows = [{k: row[k] for k in columns} for row in everything if row["task_id"] in keep]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows
