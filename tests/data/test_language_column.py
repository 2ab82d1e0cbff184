"""The data's ``language`` column decides the language of execute and score (probe 29: the ICE-Score
Java file ran through the Python runner, every sample a syntax error, and DSA-CQE decomposed Java
with the Python grammar, with nothing said). One language per run: the data's when ``--language``
is not given; a ``--language`` the data contradicts, and data in several languages, are refused
with both names. Real data (the ICE-Score Java grade file, whose loader names the language from
the file name), the real CLI and ``workbench run``'s preflight; the Java runs themselves are in
plugins/workbench-java/tests/test_java_in_jobs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.language_column import row_languages, run_language
from workbench.errors import DataError
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.options import OptionError
from workbench.run.config import ConfigError, load_config
from workbench.run.preflight import run_preflight


def _grade_file(bundled_data: Path) -> Path:
    path = bundled_data / "ice-score" / "humaneval_java_grade.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_run_language_takes_the_data_and_refuses_contradictions():
    assert run_language(None, {"the data": ["python", "", None, "py"]}) == "python"
    assert run_language(None, {"the data": None}) == "python"  # no column: the default
    assert run_language("py", {"the data": [None, "  "]}) == "python"
    with pytest.raises(OptionError, match=r"language python contradicts the data: the data name toy"):
        run_language("python", {"the data": ["toy", "toy"]})
    with pytest.raises(DataError, match=r"several languages .*the generations: python \(1 row\); the problems: "
                                        r"toy \(2 rows\)"):
        run_language(None, {"the generations": ["python"], "the problems": ["toy", "toy"]})
    assert row_languages(["toy", "", None, " "], "python") == ["toy", "python", "python", "python"]


def test_execute_refuses_a_language_the_data_contradicts_before_running(bundled_data, tmp_path):
    grades = _grade_file(bundled_data)
    result = CliRunner().invoke(app, ["execute", str(grades), "--completion-column", "generation", "--limit", "1",
                                      "-l", "python", "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code != 0
    message = _flat(result.output)
    assert "--language python contradicts the data" in message and "name java in the 'language' column" in message
    assert not (tmp_path / "out.jsonl").exists()
    with pytest.raises(OptionError, match="language python contradicts the data"):  # the Python API alike
        run_execute(grades, tmp_path / "api.jsonl",
                    ExecutionConfig(language="python", completion_column="generation", limit=1))


def test_execute_and_score_refuse_data_in_several_languages(tmp_path):
    rows = [{"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n", "language": "python",
             "generation": "return True", "reference": "return True"},
            {"task_id": "HumanEval/0", "sample_id": 1, "completion": "    return False\n", "language": "toy",
             "generation": "return False", "reference": "return True"}]
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for command in (["execute", str(data), "-o", str(tmp_path / "out.jsonl")],
                    ["score", str(data), "-m", "chrf", "-o", str(tmp_path / "score")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code != 0, command
        assert "names several languages in its 'language' column" in _flat(result.output), command
        assert "python (1 row), toy (1 row)" in _flat(result.output)
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "score" / "scores.jsonl").exists()


def test_score_refuses_a_language_the_data_contradicts(bundled_data, tmp_path):
    result = CliRunner().invoke(app, ["score", str(_grade_file(bundled_data)), "-m", "chrf", "--limit", "1",
                                      "-l", "python", "-o", str(tmp_path / "score")])
    assert result.exit_code != 0
    assert "--language python contradicts the data" in _flat(result.output)
    assert not (tmp_path / "score" / "scores.jsonl").exists()


def test_run_preflight_refuses_a_data_language_the_data_contradicts(bundled_data, tmp_path):
    grades = _grade_file(bundled_data)
    path = tmp_path / "pipeline.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["score_all"]\n[data]\nsource = "{grades}"\n'
                    f'language = "python"\ncode_column = "generation"\n[score]\nmethod = ["chrf"]\n')
    with pytest.raises(ConfigError, match=r"\[data\] language python contradicts the data: \[data\] source .* name "
                                          r"java"):
        run_preflight(load_config(path))
    # unset, the stages take the data's language: no stage is told -l python
    path.write_text(path.read_text().replace('language = "python"\n', ""))
    config = load_config(path)
    assert config.data["language"] is None
    assert all("--language" not in plan.argv for plan in run_preflight(config).plans)
