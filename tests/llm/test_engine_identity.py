"""The engine identity in the cache keys of ``local/`` answers names the llama.cpp build.

A natively compiled xllamacpp (``bash setup.sh --native-llama``: AVX-512 kernels, JSON schemas by
GBNF instead of LLGuidance) answers some requests differently from the prebuilt wheel of the same
version, so its answers must not be served from the wheel's cache entries, nor the other way round;
and the prebuilt wheel's identity must stay what it was, so the caches filled with it stay valid.
No LLM: the identity of the real installed engine, and of the two builds' reported features.
"""

from __future__ import annotations

import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from workbench.llm import local

ROOT = Path(__file__).resolve().parents[2]
#: what the native build of xllamacpp 2026.10.11549 reports on the project machine (AMD EPYC,
#: GCC 12.2, xllamacpp's sdist built with ``setup.sh --native-llama``'s flags; 2026-12-01)
NATIVE_BUILD = {
    "compiler": "GNU 12.2.0",
    "system_info": "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
                   "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | "
                   "OPENMP = 1 | REPACK = 1 |",
    "json_schemas": "gbnf",
}


def test_the_prebuilt_wheel_keeps_the_identity_its_cached_answers_were_keyed_with() -> None:
    assert local.identity_of("2026.10.11549", local.PREBUILT_WHEEL_BUILD) == "llama.cpp server (xllamacpp 2026.10.11549)"
    assert local.identity_of("2026.10.11549", None) == "llama.cpp server (xllamacpp 2026.10.11549)"


def test_a_native_build_of_the_same_version_has_another_identity() -> None:
    native = local.identity_of("2026.10.11549", NATIVE_BUILD)
    assert native != local.identity_of("2026.10.11549", local.PREBUILT_WHEEL_BUILD)
    assert native.startswith("llama.cpp server (xllamacpp 2026.10.11549); build GNU 12.2.0, ")
    assert "AVX512_VNNI = 1" in native and native.endswith("JSON schemas by gbnf")


@pytest.mark.parametrize("feature", sorted(local.PREBUILT_WHEEL_BUILD))
def test_each_build_feature_alone_changes_the_identity(feature: str) -> None:
    changed = {**local.PREBUILT_WHEEL_BUILD, feature: NATIVE_BUILD[feature]}
    assert local.identity_of("2026.10.11549", changed) != local.identity_of("2026.10.11549", local.PREBUILT_WHEEL_BUILD)


def test_the_installed_engine_reports_its_build_and_its_identity_names_it() -> None:
    xllamacpp = pytest.importorskip("xllamacpp")
    features = local.build_features(xllamacpp)
    assert set(features) == set(local.PREBUILT_WHEEL_BUILD)
    assert features["system_info"].startswith("CPU : ") and features["json_schemas"] in ("llguidance", "gbnf")
    assert local.engine_identity() == local.identity_of(version("xllamacpp"), features)


def test_native_llama_without_cmake_fails_before_installing_anything(tmp_path: Path) -> None:
    """A real ``bash setup.sh --native-llama`` with a PATH that has no cmake (nor anything else but
    ``dirname``): it stops at once with what to install, before creating a venv."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "dirname").symlink_to("/usr/bin/dirname")
    venv = tmp_path / "venv"
    done = subprocess.run(["/bin/bash", str(ROOT / "setup.sh"), "--native-llama", "--no-system", "--venv", str(venv)],
                          env={"PATH": str(tools)}, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "--native-llama needs cmake" in done.stderr
    assert not venv.exists()


def test_setup_help_documents_native_llama() -> None:
    done = subprocess.run(["/bin/bash", str(ROOT / "setup.sh"), "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    assert "--native-llama" in done.stdout and "GGML_NATIVE=ON" in done.stdout
