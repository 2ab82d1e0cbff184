"""``workbench score --problems``: a generations file as ``workbench execute`` takes it (task id and
completion, no prompt, no reference) is scored with each task's prompt and reference solution
from the problem set. Real bundled HumanEval, real ``datasets`` loading, chrF (no LLM)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_records
from workbench.errors import DataError, MissingColumnError
from workbench.score.config import ScoreConfig
from workbench.score.job import sample_notes, select_samples
from workbench.score.problems import ProblemSet


#: a model name for the configs (no call is made: only the samples are loaded)
MODEL = "local/smollm2-135m"


def _generations(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def humaneval():
    dataset = load_records("humaneval").concatenated()
    return {row["task_id"]: row for row in dataset}


def test_the_prompt_and_reference_come_from_the_problem_set(tmp_path, humaneval):
    data = _generations(tmp_path / "gens.jsonl", [
        {"task_id": "HumanEval/2", "completion": humaneval["HumanEval/2"]["canonical_solution"]},
        {"task_id": "HumanEval/0", "completion": "    return False\n"},
    ])
    samples = select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval"))
    assert [(s.task_id, s.sample_id) for s in samples] == [("HumanEval/2", 0), ("HumanEval/0", 0)]
    for sample in samples:
        assert sample.prompt == humaneval[sample.task_id]["prompt"]
        assert sample.reference == humaneval[sample.task_id]["canonical_solution"]


def test_columns_of_the_data_win_over_the_problem_set(tmp_path, humaneval):
    data = _generations(tmp_path / "gens.jsonl", [
        {"task_id": "HumanEval/2", "completion": "    return 0.0\n", "reference": "    return number - int(number)\n"}])
    [sample] = select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval"))
    assert sample.reference == "    return number - int(number)\n"
    assert sample.prompt == humaneval["HumanEval/2"]["prompt"]  # the data has no prompt column
    [whole] = select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                                               no_prompt=True))
    assert whole.prompt == ""  # --no-prompt: whole programs, no prompt from anywhere
    # --no-prompt with the reference from the problems: the reference is a whole program too (prompt + solution)
    program = humaneval["HumanEval/2"]["prompt"] + humaneval["HumanEval/2"]["canonical_solution"]
    programs = _generations(tmp_path / "programs.jsonl", [{"task_id": "HumanEval/2", "completion": program}])
    [sample] = select_samples(programs, ScoreConfig(method=["chrf"], generation_column="completion",
                                                    problems="humaneval", no_prompt=True))
    assert (sample.prompt, sample.reference) == ("", program)
    assert sample.from_problems == ("reference",)


def test_a_problem_set_the_data_does_not_need_is_noted(tmp_path, humaneval):
    data = _generations(tmp_path / "gens.jsonl", [
        {"task_id": "HumanEval/2", "prompt": "def f():\n", "completion": "    return 0\n", "reference": "    return 1\n"}])
    config = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval")
    [sample] = select_samples(data, config)
    assert sample.from_problems == ()
    assert any("--problems humaneval is not used" in note for note in sample_notes([sample], config))
    without_prompt = _generations(tmp_path / "bare.jsonl", [
        {"task_id": "HumanEval/2", "completion": "    return 0\n", "reference": "    return 1\n"}])
    [sample] = select_samples(without_prompt, config)
    assert sample.from_problems == ("prompt",)
    assert not any("is not used" in note for note in sample_notes([sample], config))


def test_a_task_the_problem_set_lacks_is_a_clear_error(tmp_path):
    data = _generations(tmp_path / "gens.jsonl", [{"task_id": "MBPP/11", "completion": "pass\n"}])
    with pytest.raises(DataError, match=r"task 'MBPP/11' of .*gens.jsonl is not in --problems humaneval \(164 "
                                        r"tasks, e.g. HumanEval/0.*--problem-task-column"):
        select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval"))
    problems = tmp_path / "problems.jsonl"
    _generations(problems, [{"task_id": "MBPP/11", "text": "Write f.", "code": "def f(): pass\n"}])
    # an error of the problem set says so: "the data has" would read as the generations file
    with pytest.raises(DataError, match=rf"^--problems {problems}: column 'prompt' not found \(set it with "
                                        r"--problem-prompt-column\); the data has: task_id, text, code"):
        select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems=str(problems)))
    with pytest.raises(DataError, match=r"^--problems humaneval: split 'bogus' not found"):
        select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                                         problems_split="bogus"))
    # a column the run does not read need not exist: here only the reference is taken (the data has a prompt)
    with_prompt = _generations(tmp_path / "with_prompt.jsonl",
                               [{"task_id": "MBPP/11", "prompt": "def f():\n", "completion": "    pass\n"}])
    [sample] = select_samples(with_prompt, ScoreConfig(method=["chrf"], generation_column="completion",
                                                       problems=str(problems), problem_reference_column="code"))
    assert (sample.prompt, sample.reference) == ("def f():\n", "def f(): pass\n")


def test_a_reference_column_named_on_purpose_must_exist_even_with_problems(tmp_path):
    """A typo in --reference-column was silently replaced by the problem set's canonical solution
    (probe23); left at its default, the problem set supplies what the data lacks."""
    data = _generations(tmp_path / "gens.jsonl", [{"task_id": "HumanEval/0", "completion": "  1\n", "reference": "  2\n"}])
    with pytest.raises(MissingColumnError, match=r"column 'ref' not found \(fix --reference-column, or leave it at its "
                                                 r"default for the problem set's reference solution"):
        select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                                         reference_column="ref"))
    [sample] = select_samples(data, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval"))
    assert sample.reference == "  2\n"


def test_without_a_reference_column_only_p_correct_without_the_reference_runs(tmp_path):
    data = _generations(tmp_path / "gens.jsonl", [{"task_id": "HumanEval/0", "prompt": "def f():\n", "completion": "  1\n"}])
    with pytest.raises(MissingColumnError, match=r"column 'reference' not found \(set it with --reference-column, or "
                                                 r"take each task's reference solution from a problem set with "
                                                 r"--problems, e.g. --problems humaneval; p-correct alone also runs "
                                                 r"with --no-reference\)"):
        select_samples(data, ScoreConfig(method=["p-correct"], model=MODEL, generation_column="completion"))
    [sample] = select_samples(data, ScoreConfig(method=["p-correct"], model=MODEL, generation_column="completion",
                                                reference=False))
    assert sample.reference == "" and sample.prompt == "def f():\n"
    assert not ScoreConfig(method=["p-correct"], model=MODEL, reference=False).needs_reference
    assert ScoreConfig(method=["p-correct", "chrf"], model=MODEL, reference=False).needs_reference
    # nothing tells the judge what the code should do: said, never silent
    bare = _generations(tmp_path / "bare.jsonl", [{"task_id": "HumanEval/0", "completion": "  1\n"}])
    config = ScoreConfig(method=["p-correct"], model=MODEL, generation_column="completion", reference=False)
    assert sample_notes(select_samples(bare, config), config)[0].startswith(
        "1 of 1 sample has no prompt, and p-correct --no-reference shows the judge no reference either")
    assert sample_notes([sample], config) == []


def test_score_scores_an_execute_style_file_with_problems(tmp_path, humaneval):
    data = _generations(tmp_path / "gens.jsonl", [
        {"task_id": "HumanEval/2", "completion": humaneval["HumanEval/2"]["canonical_solution"]},
        {"task_id": "HumanEval/0", "completion": "    return False\n"}])
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["score", str(data), "--generation-column", "completion", "-m", "chrf",
                                      "--problems", "humaneval", "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    chrf = {row["task_id"]: row["chrf"] for row in map(json.loads, (out / "scores_wide.jsonl").read_text().splitlines())}
    assert chrf["HumanEval/2"] == pytest.approx(1.0) and chrf["HumanEval/0"] < 0.5
    # recorded, so a resume with another problem set is refused
    other = _generations(tmp_path / "other.jsonl", [{key: humaneval[task][key] for key in ("task_id", "prompt",
                                                                                           "canonical_solution")}
                                                    for task in ("HumanEval/0", "HumanEval/2")])
    again = CliRunner().invoke(app, ["score", str(data), "--generation-column", "completion", "-m", "chrf",
                                     "--problems", str(other), "-o", str(out), "--resume"])
    assert again.exit_code == 1 and f"--problems 'humaneval' -> '{other}'" in " ".join(again.output.split()), again.output


def test_a_problem_set_path_resumes_by_any_spelling(tmp_path, humaneval, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _generations(tmp_path / "problems.jsonl", [{key: humaneval["HumanEval/2"][key] for key in
                                                ("task_id", "prompt", "canonical_solution")}])
    data = _generations(tmp_path / "gens.jsonl", [{"task_id": "HumanEval/2", "completion": "    return 0.0\n"}])
    arguments = ["score", str(data), "--generation-column", "completion", "-m", "chrf", "-o", "out", "--no-progress"]
    assert CliRunner().invoke(app, [*arguments, "--problems", "problems.jsonl"]).exit_code == 0
    again = CliRunner().invoke(app, [*arguments, "--problems", "./problems.jsonl", "--resume"])
    assert again.exit_code == 0, again.output


def test_problem_set_of_the_config():
    assert ScoreConfig(method=["chrf"]).problem_set is None
    assert ScoreConfig(method=["chrf"], problems="humaneval", problem_reference_column="solution",
                       offline=True).problem_set == ProblemSet("humaneval", None, "task_id", "prompt", "solution", True)
