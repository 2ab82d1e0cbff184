"""Shared fixtures. ``bundled_data`` is the real data bundled in the package, laid out as in
``../shared/data`` (tests/bundled_data.py); ``shared_data`` is the project's ``../shared/data`` folder itself
(HumanEval, ICE-Score, MultiPL-E), for the files that are not bundled and the tests about the shared files;
override with WORKBENCH_SHARED_DATA."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = REPO_ROOT / "tests" / "fixtures"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def _shared_root() -> Path:
    return Path(os.environ.get("WORKBENCH_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder ``../shared/data``; tests that need it skip when it is absent."""
    path = Path(os.environ.get("WORKBENCH_SHARED_DATA", _shared_root() / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data folder not found at {path}")
    return path


@pytest.fixture(scope="session")
def bundled_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the bundled data sets (HumanEval, the ICE-Score Python, Java and C++ sets, MultiPL-E's
    Java and C++ problems, the CoNaLa grades) under the paths they have in ``../shared/data``, byte for
    byte the same files (:data:`bundled_data.LAYOUT`); written once per session, never skipped."""
    from bundled_data import write_bundled_data

    return write_bundled_data(tmp_path_factory.mktemp("bundled-data"))


@pytest.fixture(scope="session")
def shared_bench() -> Path:
    """The dedup benchmark folder ``../shared/bench``."""
    path = _shared_root() / "bench"
    if not path.is_dir():
        pytest.skip(f"shared bench folder not found at {path}")
    return path


@pytest.fixture(scope="session")
def test_data() -> Path:
    """The small data slices committed under ``tests/fixtures``."""
    return TEST_DATA


@pytest.fixture(scope="session")
def dup_corpus_2k(shared_bench: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2k-file synthetic dedup corpus of ``../shared/bench`` (seed 7) with its brute-force
    truth (``truth_clusters.json``), generated once per session into a temp folder."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("dupcorpus") / "dupcorpus2k"
    for command in (
        [sys.executable, str(shared_bench / "make_dup_corpus.py"), "--out", str(out), "--n", "2000", "--seed", "7"],
        [sys.executable, str(shared_bench / "brute_force_truth.py"), str(out)],
    ):
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    return out


@pytest.fixture(scope="session")
def spark_runtime() -> None:
    """Skip where pyspark or Java 17+ is missing, unless WORKBENCH_REQUIRE_SPARK=1 (CI sets it:
    there a missing Spark is a failure, not a skip); starts no session (for tests that run Spark
    in a subprocess)."""
    from workbench.dedup.spark import SparkUnavailableError, check_spark

    try:
        check_spark("local[2]")
    except SparkUnavailableError as error:
        if os.environ.get("WORKBENCH_REQUIRE_SPARK") == "1":
            raise
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def spark(spark_runtime):
    """One local Spark session (``local[2]``) for every Spark test of the run (a session costs
    ~13 s to start); skips as :func:`spark_runtime` does."""
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # the executors' Python must import this checkout's workbench, as the tests do
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    session = (SparkSession.builder.master("local[2]").appName("workbench tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def interrupted_plot(monkeypatch, tmp_path):
    """``interrupted_plot(module, function) -> (json_path, plot_path)``: make the real plot call of a job raise
    KeyboardInterrupt (an interruption while the figure is drawn) and leave an earlier run's figure at
    ``plot_path``; the test then runs the job with both paths."""

    def _interrupt(module, function: str) -> tuple[Path, Path]:
        def interrupted(report, path):
            raise KeyboardInterrupt

        monkeypatch.setattr(module, function, interrupted)
        json_path, plot_path = tmp_path / "report.json", tmp_path / "figure.png"
        plot_path.write_bytes(b"an earlier run's figure")
        return json_path, plot_path

    return _interrupt


#: the uid and gid of ``nobody``
NOBODY = 65534

#: as root, the prefix that runs a command still as root but without the capabilities that bypass file
#: permissions (dropped from the inheritable and bounding sets, so the command's root has none of them):
#: permission bits then apply to it as to its files' owner, and it reaches whatever root owns (a clone
#: of mode 0700, the venv in it), where ``nobody`` does not
NO_DAC_CAPABILITIES = ["setpriv", "--inh-caps=-dac_override,-dac_read_search,-fowner",
                       "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@dataclass
class Unprivileged:
    """A folder a command run where file permissions apply can reach, and the prefix of its command
    line (the :func:`unprivileged` fixture).

    Attributes:
        folder: a fresh folder (mode 0755) for the test's files; removed afterwards.
        prefix: as root, ``["env", "HOME=...", "setpriv", "--reuid=65534", ...]`` (as ``nobody``) or
            :data:`NO_DAC_CAPABILITIES` (as root without the capabilities that bypass permissions); else ``[]``.
        owner: the uid the command runs as (the owner :meth:`give` makes).
    """

    folder: Path
    prefix: list[str]
    owner: int = -1

    def give(self, path: Path) -> Path:
        """Make ``path`` the command's own (its owner when it runs as ``nobody``); returns it."""
        if self.owner == NOBODY:
            os.chown(path, NOBODY, NOBODY)
        return path


def _permissions_apply(prefix: list[str], folder: Path) -> str | None:
    """Why a command run with ``prefix`` cannot serve a test of unwritable folders (``None``: it can):
    it must run this interpreter with workbench, and be refused a file in a folder of mode 0555."""
    probe = folder / "probe-read-only"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        script = f"import workbench, pathlib; pathlib.Path({str(probe / 'x')!r}).touch()"
        said = subprocess.run([*prefix, sys.executable, "-c", script], capture_output=True, text=True, cwd=folder)
    finally:
        probe.chmod(0o755)
        shutil.rmtree(probe, ignore_errors=True)
    if "PermissionError" in said.stderr:
        return None
    if said.returncode == 0:
        return "it could write in a folder of mode 0555"
    return (said.stderr.strip().splitlines() or ["no message"])[-1]


@pytest.fixture()
def unprivileged() -> Iterator[Unprivileged]:
    """An :class:`Unprivileged`, for tests of read-only outputs: root ignores permission bits, so as
    root the command runs as ``nobody`` through ``setpriv``, or, where ``nobody`` cannot run this
    interpreter and import workbench (a checkout or venv under a 0700 folder, as a CI clone), as root
    without the capabilities that bypass permissions (:data:`NO_DAC_CAPABILITIES`), which reaches what
    root owns. It cannot work under pytest's ``tmp_path`` (pytest keeps ``/tmp/pytest-of-<user>`` at
    mode 0700, and resets it when another session starts), so the folder is one of its own in the temp
    folder. Skips the test as root without ``setpriv``, or where neither way makes a folder of mode
    0555 refuse a file (no capability to drop capabilities, CAP_SETPCAP)."""
    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply to this test")
    folder = Path(tempfile.mkdtemp(prefix="workbench-unprivileged-"))
    folder.chmod(0o755)
    prefix: list[str] = []
    owner = os.geteuid()
    if root:
        home = folder / "home"
        home.mkdir()
        os.chown(home, NOBODY, NOBODY)
        prefix = ["env", f"HOME={home}", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        owner = NOBODY
        # a checkout or venv under a 0700 folder (a CI clone, mktemp -d) is out of nobody's reach: stay root,
        # without the capabilities that bypass permissions
        why_not_nobody = _permissions_apply(prefix, folder)
        if why_not_nobody is not None:
            prefix, owner = list(NO_DAC_CAPABILITIES), 0
            why_not = _permissions_apply(prefix, folder)
            if why_not is not None:
                shutil.rmtree(folder, ignore_errors=True)
                pytest.skip(f"nobody cannot run {sys.executable} with workbench ({why_not_nobody}), and root without "
                            f"CAP_DAC_OVERRIDE cannot either: {why_not}")
    try:
        yield Unprivileged(folder, prefix, owner)
    finally:
        for path in [folder, *folder.rglob("*")]:  # read-only folders the test made, writable again to remove
            if path.is_dir() and not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRWXU)
        shutil.rmtree(folder, ignore_errors=True)
