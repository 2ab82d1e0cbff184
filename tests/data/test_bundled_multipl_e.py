"""The bundled ICE-Score HumanEval-Java and HumanEval-C++ sets (``humaneval-codex-java``,
``humaneval-codex-cpp``) and MultiPL-E's Java and C++ problems (``humaneval-java``, ``humaneval-cpp``;
workbench/data/bundled/SOURCES.md): loaded by name through the real loader, verbatim copies of the files
they came from, and equal row for row to the same files in ``../shared/data`` (skipped when it is absent).

Before bundle36 none of these names existed: ``configs/humaneval-java.toml`` read the shared data
folder by relative path and could not run from a pip-installed workbench.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from importlib import resources

import pytest

from workbench.data import BUNDLED, load_records

#: bundled name -> (rows, samples per task where not 20, language)
GENERATIONS = {
    "humaneval-codex-java": (3219, {"HumanEval/148": 19}, "java"),
    "humaneval-codex-cpp": (3220, {}, "cpp"),
}
#: bundled name -> the git blob id of the uncompressed file (SOURCES.md lists their first 8 digits)
BLOBS = {
    "humaneval-codex-java": "8d706c3c4061b7debad95542294b923961095548",
    "humaneval-codex-cpp": "99fcc8744eba57e01161dcc33253637fa97933bb",
    "humaneval-java": "3dcdbf258be060ce7c53bf69418603a5e7634d7e",
    "humaneval-cpp": "727012e7f859654de34aacde1448c634ee145fd7",
}
#: bundled name -> its file under ../shared/data
SHARED = {
    "humaneval-codex-java": "ice-score/humaneval_java_grade.json",
    "humaneval-codex-cpp": "ice-score/humaneval_cpp_grade.json",
    "humaneval-java": "multipl-e-codex-java/problems.jsonl",
    "humaneval-cpp": "multipl-e-codex-cpp/problems.jsonl",
}


def _rows(name: str) -> list[dict]:
    loaded = load_records(name)
    assert list(loaded.splits) == ["test"]
    return loaded.splits["test"].to_list()


@pytest.mark.parametrize("name", sorted(GENERATIONS))
def test_the_generation_sets_load_by_name_one_row_per_sample(name: str) -> None:
    rows, short_tasks, language = GENERATIONS[name]
    table = _rows(name)
    assert len(table) == rows
    per_task = Counter(row["task_id"] for row in table)
    assert len(per_task) == 161
    assert {task: n for task, n in per_task.items() if n != 20} == short_tasks
    assert {row["language"] for row in table} == {language}
    assert {row["passed"] for row in table} == {0, 1}
    assert len({(row["task_id"], row["sample_id"]) for row in table}) == rows
    # the shipped metric columns the configs correlate, numeric on every row
    for column in ("codebleu", "codebertscore_f1", "codebertscore_f3", "gpt35_nswr", "gpt35_nsnr", "chrf"):
        assert all(isinstance(row[column], (int, float)) for row in table), column


@pytest.mark.parametrize("language", ["java", "cpp"])
def test_the_problem_sets_cover_every_task_of_their_generation_set(language: str) -> None:
    problems = _rows(f"humaneval-{language}")
    generations = _rows(f"humaneval-codex-{language}")
    assert len(problems) == 161 and len({p["task_id"] for p in problems}) == 161
    assert {p["task_id"] for p in problems} == {g["task_id"] for g in generations}
    assert {p["language"] for p in problems} == {language}
    assert all(p["tests"].strip() and p["prompt"].strip() for p in problems)
    # the prompt the generations completed is the problem's prompt (SOURCES.md: "equal to the grade files' prompt")
    prompts = {p["task_id"]: p["prompt"] for p in problems}
    assert all(g["prompt"] == prompts[g["task_id"]] for g in generations)


@pytest.mark.parametrize("name", sorted(BLOBS))
def test_the_bundled_files_are_the_files_sources_md_names(name: str) -> None:
    """Each file, uncompressed, has the git blob id SOURCES.md gives (``gunzip -c FILE | git hash-object --stdin``)."""
    filename, _split = BUNDLED[name]
    data = gzip.decompress((resources.files("workbench.data") / "bundled" / filename).read_bytes())
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == BLOBS[name]
    sources = (resources.files("workbench.data") / "bundled" / "SOURCES.md").read_text(encoding="utf-8")
    assert f"`{name}` | `{filename}`" in sources and f"`{blob[:8]}…`" in sources


@pytest.mark.parametrize("name", sorted(SHARED))
def test_the_bundled_sets_equal_the_shared_data_files_row_for_row(name: str, shared_data) -> None:
    path = shared_data / SHARED[name]
    if not path.is_file():
        pytest.skip(f"{path} not found")
    bundled = _rows(name)
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as handle:
            shared = [json.loads(line) for line in handle]
    else:  # the grade file read through the same loader as any path
        shared = load_records(path).splits["test"].to_list()
    assert len(bundled) == len(shared)
    for index, (ours, theirs) in enumerate(zip(bundled, shared)):
        assert ours == theirs, f"row {index} differs"
