"""``workbench score`` refuses a model it cannot call before it loads the data or the scoring
machinery (real subprocesses; no LLM is called, no network). The data is a ``.jsonl`` file whose
second line is not JSON: a run that loaded it first would say so instead of naming the model.
``python -X importtime`` lists the modules the refused run imported: ``workbench.score.job`` (the
scoring machinery, and with it the data loaders) is not among them, nor, for a ``local/`` model,
litellm (whose import alone took 34 s of the 44 s a mistyped alias used to cost on a loaded
machine). Reproductions from the new-user pass newuser36: an unknown alias and a missing
OPENAI_API_KEY were refused only after those imports, under a "loading the data" bar, and a file
that is not GGUF (``local//path/fake.gguf``) was loaded, scored into 4 failed rows and exit 3."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _score(tmp_path, model: str, env_drop: tuple[str, ...] = (), method: str = "ice-score",
           env_set: dict[str, str] | None = None, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    data = tmp_path / "gen.jsonl"
    data.write_text('{"task_id": "t/0", "generation": "x = 1", "reference": "x = 1"}\nnot json\n')
    env = {key: value for key, value in os.environ.items() if key not in env_drop} | (env_set or {})
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "workbench", "score", str(data),
                           "-m", method, "--model", model, "-o", str(tmp_path / "out"), "--no-progress", *options],
                          capture_output=True, text=True, env=env, timeout=600)


def _imported(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def _said(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("import time:")]


@pytest.mark.parametrize("model, words", [
    ("local/qwen2.5-coder-7b", ["unknown local model alias 'qwen2.5-coder-7b'", "workbench models list"]),
    ("local/{fake}", ["is not a GGUF file", "workbench models list"]),
])
def test_a_local_model_that_cannot_load_is_refused_before_the_data_and_litellm(tmp_path, model, words):
    fake = tmp_path / "fake.gguf"
    fake.write_text("not a model\n")
    done = _score(tmp_path, model.format(fake=fake))
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and all(word in said[0] for word in words), said
    imported = _imported(done)
    assert "workbench.score.job" not in imported and "litellm" not in imported
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def _store_with_only(tmp_path, alias: str):
    """A model store holding the user's verified copy of ``alias`` alone (a symbolic link and its
    stamp; nothing is copied), or a skip when the user's store has none."""
    from workbench.llm import models

    if not models.model_status(alias).verified:
        pytest.skip(f"no verified {alias} in {models.models_dir()}")
    store = tmp_path / "store"
    mine = models.model_path(alias)
    (store / alias).mkdir(parents=True)
    (store / alias / mine.name).symlink_to(mine)
    stamp = mine.with_name(mine.name + ".verified.json")
    (store / alias / stamp.name).write_bytes(stamp.read_bytes())
    return store


def test_a_missing_embedding_model_is_refused_before_the_data(tmp_path):
    """newuser37: with WORKBENCH_AUTO_PULL=0 and no all-MiniLM-L6-v2 in the store, ``score -m
    dsa-cqe`` loaded the data and scored with the LLM for 13 s (60 s at load 10) before its first
    sub-code opened the Semantic Storage and failed. Now it is one line before the data, naming the
    model and the commands that bring it (the LLM is in the store: only the embedder is missing)."""
    store = _store_with_only(tmp_path, "smollm2-135m")
    done = _score(tmp_path, "local/smollm2-135m", method="dsa-cqe",
                  env_set={"WORKBENCH_MODELS_DIR": str(store), "WORKBENCH_AUTO_PULL": "0"})
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1, said
    for words in ("all-minilm-l6-v2", "`workbench models pull all-minilm-l6-v2`",
                  "`workbench models import all-minilm-l6-v2 FOLDER`"):
        assert words in said[0], said
    imported = _imported(done)
    assert "workbench.score.job" not in imported and "litellm" not in imported
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def test_a_method_without_the_storage_or_a_remote_embedder_is_not_refused_for_it(tmp_path):
    """Only the methods that open the Semantic Storage with the built-in embedder need it: ice-score
    goes on to the data (whose second line is not JSON, so the run stops there, past the check)."""
    store = _store_with_only(tmp_path, "smollm2-135m")
    env = {"WORKBENCH_MODELS_DIR": str(store), "WORKBENCH_AUTO_PULL": "0"}
    for method, options in (("ice-score", ()), ("dsa-cqe", ("--embedding-model", "openai/text-embedding-3-small"))):
        done = _score(tmp_path, "local/smollm2-135m", method=method, env_set=env, options=options)
        assert done.returncode == 1 and "all-minilm-l6-v2" not in done.stderr, _said(done)
        assert "workbench.score.job" in _imported(done), _said(done)


def test_a_missing_local_llm_is_refused_before_the_data(tmp_path):
    """newuser37: the same gap for the LLM: with WORKBENCH_AUTO_PULL=0 and an empty store, the run
    loaded the data and stopped at its first call with "refused the request with HTTP 404 ... check
    --api-base", 49 s in."""
    done = _score(tmp_path, "local/smollm2-135m",
                  env_set={"WORKBENCH_MODELS_DIR": str(tmp_path / "empty"), "WORKBENCH_AUTO_PULL": "0"})
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and "the model smollm2-135m is not in the model store" in said[0], said
    assert "`workbench models pull smollm2-135m`" in said[0] and "`workbench models import smollm2-135m" in said[0]
    imported = _imported(done)
    assert "workbench.score.job" not in imported and "litellm" not in imported


def test_an_openai_model_without_its_key_is_refused_before_the_data(tmp_path):
    done = _score(tmp_path, "openai/gpt-4o-mini", env_drop=("OPENAI_API_KEY",))
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and "OPENAI_API_KEY" in said[0], said
    assert "workbench.score.job" not in _imported(done)


@pytest.mark.parametrize("model, variables", [
    ("openai/gpt-4o-mini", ("OPENAI_API_KEY",)),
    ("anthropic/claude-3-5-haiku-20241022", ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
])
def test_a_common_providers_missing_key_is_refused_before_litellm_is_imported(tmp_path, model, variables):
    """cli37: the missing OPENAI_API_KEY was refused only after ``import litellm`` (36 s of the
    refusal on the loaded machine), which ``litellm.validate_environment`` needed. The key
    variables of the common providers are known without it now
    (:data:`workbench.llm.client.PROVIDER_KEY_VARIABLES`): nothing heavy is imported before the
    one line that names the variable to set."""
    done = _score(tmp_path, model, env_drop=variables)
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and f"needs the environment variable {variables[0]}, which is not set" in said[0], said
    heavy = {"litellm", "datasets", "chromadb", "torch", "workbench.score.job"} & _imported(done)
    assert not heavy, heavy
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("provider", sorted(__import__("workbench.llm.client", fromlist=["x"]).PROVIDER_KEY_VARIABLES))
def test_the_key_table_says_what_litellm_says(provider, monkeypatch):
    """Each entry of the table that spares the import is what ``litellm.validate_environment``
    (the installed litellm: the test fails when an upgrade changes a provider's variables) says
    for ``PROVIDER/NAME``: the variables missing with none set, none missing with any one set."""
    import litellm

    from workbench.llm.client import PROVIDER_KEY_VARIABLES, known_provider_keys

    accepted, reported = PROVIDER_KEY_VARIABLES[provider]
    model = f"{provider}/some-model"
    for name in accepted:
        monkeypatch.delenv(name, raising=False)
    assert litellm.get_llm_provider(model)[1] == provider
    assert known_provider_keys(model) == (provider, list(reported))
    assert litellm.validate_environment(model)["missing_keys"] == list(reported)
    for name in accepted:
        monkeypatch.setenv(name, "sk-test-not-a-key")
        assert known_provider_keys(model) == (provider, [])
        assert litellm.validate_environment(model)["missing_keys"] == [], name
        monkeypatch.delenv(name)


def test_a_provider_the_table_leaves_out_is_asked_of_litellm(monkeypatch):
    """Another provider (Cohere) and a model without a provider prefix still get litellm's answer."""
    from workbench.llm.client import LLMSettings, known_provider_keys, missing_credentials

    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert known_provider_keys("cohere/command-r") is None and known_provider_keys("gpt-4o-mini") is None
    assert missing_credentials(LLMSettings(model="cohere/command-r")) == ["COHERE_API_KEY"]
    assert missing_credentials(LLMSettings(model="gpt-4o-mini")) == ["OPENAI_API_KEY"]


def test_a_provider_that_takes_either_of_two_keys_is_not_said_to_need_both(monkeypatch):
    """review38a: Gemini takes GOOGLE_API_KEY or GEMINI_API_KEY (litellm reports both missing when neither is
    set); the refusal said the model "needs the environment variables GOOGLE_API_KEY and GEMINI_API_KEY, which
    are not set. Set them", though one is enough."""
    from workbench.llm.client import LLMSettings, MissingCredentialsError, check_credentials

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingCredentialsError) as refused:
        check_credentials(LLMSettings(model="gemini/gemini-1.5-flash"))
    message = str(refused.value)
    assert "needs one of the environment variables GOOGLE_API_KEY or GEMINI_API_KEY, neither of which is set" in message
    assert "Set one of them before the run" in message and " and GEMINI" not in message, message
    monkeypatch.setenv("GEMINI_API_KEY", "sk-test-not-a-key")
    check_credentials(LLMSettings(model="gemini/gemini-1.5-flash"))  # one is enough
