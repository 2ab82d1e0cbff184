"""Writing result files: the append-only JSON Lines writer and the atomic whole-file write.

Every file workbench writes goes through one of two primitives:

* :class:`JsonlWriter` -- rows that arrive one at a time (``execute``'s results, ``score``'s
  scores and traces). A file opens in one of three :data:`WRITE_MODES`; each row is one
  ``write`` of a whole line, flushed and ``fsync``-ed before :meth:`JsonlWriter.write`
  returns, so a killed run (even by power loss) loses at most the row in flight. A row
  counts once its newline is on disk: a last line without one (a *torn* line) is never read
  as a row (:func:`read_jsonl`) and ``resume`` cuts it off, so that sample runs again.
* :func:`atomic_write` / :class:`AtomicFile` -- files written whole (``run.json``, reports,
  ``scores_wide.jsonl``, CSVs, downloaded models): written to a temporary file beside the
  target, ``fsync``-ed, then renamed over the target (``os.replace``), so a reader sees the
  old file or the new one, never part of one; on an error the temporary file is removed and
  the target is left as it was.

Example::

    from workbench.io import JsonlWriter, atomic_write, read_jsonl
    with JsonlWriter("out/rows.jsonl", "new") as writer:
        writer.write({"task_id": "HumanEval/0", "sample_id": 0, "passed": 1})
    atomic_write("out/summary.json", '{"rows": 1}\\n')
    assert read_jsonl("out/rows.jsonl")[0]["passed"] == 1
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

from workbench.errors import DataError

#: ``new``: the file must not exist yet (or be empty); ``resume``: keep its complete rows and
#: append (a torn last line is cut off first); ``overwrite``: start it again, empty
WriteMode = Literal["new", "resume", "overwrite"]
WRITE_MODES: tuple[str, ...] = ("new", "resume", "overwrite")

#: a check of one row read back: ``(row, line number)``; raises :class:`DataError` to refuse it
RowCheck = Callable[[dict[str, Any], int], None]


def read_jsonl(
    path: str | os.PathLike[str], *, allow_torn_tail: bool = True, check: RowCheck | None = None
) -> list[dict[str, Any]]:
    """Return the rows of a JSON Lines file, in file order (see :func:`iter_jsonl`)."""
    return list(iter_jsonl(path, allow_torn_tail=allow_torn_tail, check=check))


def iter_jsonl(
    path: str | os.PathLike[str], *, allow_torn_tail: bool = True, check: RowCheck | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the rows of a JSON Lines file, in file order, reading it line by line.

    A row is a line that ends in a newline and holds a JSON object; blank lines are skipped.
    A last line without its newline (what a killed writer leaves) is not a row: it is
    skipped when it does not parse, and when it parses it is still checked (so a file that
    is not JSON Lines at all, e.g. one ``json.dump`` without a newline, is refused rather than
    taken for a torn row) but not yielded, because :class:`JsonlWriter` cuts it on resume.

    Args:
        path: the file; a missing file has no rows.
        allow_torn_tail: when False a last line without its newline is read like any other.
        check: called with every row (and its 1-based line number), the torn one included.

    Raises:
        DataError: a line that is not a JSON object (naming the line), or one ``check`` refuses.
    """
    target = Path(path)
    if not target.exists():
        return
    with target.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            torn = allow_torn_tail and not line.endswith(b"\n")  # only the last line can lack it
            try:
                row = json.loads(line)
            except ValueError as error:
                if torn:
                    return
                raise DataError(f"{target}, line {number}: not a JSON row ({error})") from error
            if not isinstance(row, dict):
                raise DataError(f"{target}, line {number}: not a JSON object but {type(row).__name__}")
            if check is not None:
                check(row, number)
            if not torn:
                yield row


def cut_torn_tail(path: str | os.PathLike[str]) -> int:
    """Truncate ``path`` after its last newline; return how many bytes were cut (0 for none).

    Scans backwards in blocks, so a large file is not read whole.
    """
    target = Path(path)
    if not target.exists():
        return 0
    size = target.stat().st_size
    with target.open("rb+") as handle:
        position, keep = size, 0
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            index = handle.read(position - start).rfind(b"\n")
            if index >= 0:
                keep = start + index + 1
                break
            position = start
        if keep < size:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
    return size - keep


class JsonlWriter:
    """A thread-safe, append-only JSON Lines writer that makes every row durable.

    Each :meth:`write` is one ``write`` of a whole line (``json.dumps`` with
    ``ensure_ascii=False``, values it cannot encode written as ``str``), then ``flush`` and
    ``fsync``: the strictest of the writers this replaced, so neither a killed process nor a
    power loss loses a row :meth:`write` returned from.

    Args:
        path: the file (its folder is created when missing).
        mode: one of :data:`WRITE_MODES`.
        check: with ``resume``, every row is checked by it before anything is cut
            (a file of the wrong kind is refused untouched).
        keep_rows: with ``resume``, keep the rows read in :attr:`rows` (False for large
            files whose rows the caller does not need, e.g. traces; they are still checked).

    Attributes:
        rows: with ``resume``, the complete rows already in the file (``[]`` otherwise).
        cut_bytes: bytes of a torn last line cut off on resume.

    Raises:
        DataError: ``mode`` is unknown; ``path`` is a folder; the file exists with rows and
            ``mode`` is ``new``; with ``resume``, a line that is not a row (the file is then
            left as it was).
    """

    def __init__(self, path: str | os.PathLike[str], mode: WriteMode = "new", *, check: RowCheck | None = None,
                 keep_rows: bool = True):
        if mode not in WRITE_MODES:
            raise DataError(f"unknown write mode {mode!r}; choose from {', '.join(WRITE_MODES)}")
        self.path = Path(path)
        self.rows: list[dict[str, Any]] = []
        self.cut_bytes = 0
        if self.path.is_dir():
            raise DataError(f"{self.path} is a folder, not a JSON Lines file")
        if self.path.exists() and self.path.stat().st_size > 0:
            if mode == "new":
                raise DataError(f"{self.path} already exists; pass --resume to continue it or --overwrite to replace it")
            if mode == "resume":
                # read (and so check) every row before cutting anything
                rows = iter_jsonl(self.path, check=check)
                if keep_rows:
                    self.rows = list(rows)
                else:
                    collections.deque(rows, maxlen=0)
                self.cut_bytes = cut_torn_tail(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("ab" if mode == "resume" else "wb")
        self._lock = threading.Lock()

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row; it is on disk when this returns."""
        line = (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file (every row is already synced); closing twice is harmless."""
        with self._lock:
            self._handle.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AtomicFile:
    """A file that replaces ``target`` only when :meth:`commit` is called.

    The bytes go to a temporary file beside ``target`` (same folder, so the rename is atomic);
    :meth:`commit` flushes, ``fsync``-s and renames it over ``target``; :meth:`discard`
    removes it. Use :func:`atomic_open` or :func:`atomic_write` unless the decision to keep
    the file comes later (a download verified against its checksum).

    Args:
        target: the file to write (its folder is created when missing).
        mode: ``"w"`` (text) or ``"wb"``.
        encoding / errors / newline: as :func:`open`, for text mode.

    Attributes:
        handle: the open temporary file.
    """

    def __init__(self, target: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8",
                 errors: str = "strict", newline: str | None = None):
        if mode not in ("w", "wb"):
            raise ValueError(f"AtomicFile writes whole files: mode 'w' or 'wb', not {mode!r}")
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        # a dot file with a random part: never mistaken for an output, never shared by two writers
        self.temporary = self.target.with_name(f".{self.target.name}.{secrets.token_hex(4)}.tmp")
        text = {} if mode == "wb" else {"encoding": encoding, "errors": errors, "newline": newline}
        self.handle: IO[Any] = open(self.temporary, mode.replace("w", "x"), **text)

    def commit(self) -> Path:
        """Make the written bytes durable and put them in place; returns ``target``."""
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.temporary, self.target)
        except BaseException:
            self.discard()
            raise
        _sync_folder(self.target.parent)
        return self.target

    def discard(self) -> None:
        """Drop the temporary file; ``target`` stays as it was."""
        if not self.handle.closed:
            self.handle.close()
        self.temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8",
                errors: str = "strict", newline: str | None = None) -> Iterator[IO[Any]]:
    """Open ``target`` for writing whole; it is replaced when the block ends without an error.

    Example::

        with atomic_open("out/pairs.csv", newline="") as handle:
            handle.write("id_a,id_b\\n")

    Raises:
        OSError: the temporary file cannot be written or renamed (``target`` is untouched).
    """
    file = AtomicFile(target, mode, encoding=encoding, errors=errors, newline=newline)
    try:
        yield file.handle
    except BaseException:
        file.discard()
        raise
    file.commit()


def atomic_write(target: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8",
                 errors: str = "strict") -> Path:
    """Replace ``target`` with ``data`` (text is encoded with ``encoding``), all or nothing.

    Returns:
        ``target`` as a :class:`~pathlib.Path`.

    Raises:
        OSError, UnicodeEncodeError: nothing was replaced and no temporary file is left.
    """
    with atomic_open(target, "wb" if isinstance(data, bytes) else "w", encoding=encoding, errors=errors) as handle:
        handle.write(data)
    return Path(target)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX); skipped where folders cannot be opened."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def check_output_files(paths: dict[str, str | os.PathLike[str] | None]) -> None:
    """Refuse output file paths that name a folder, before any work is done (the write would fail
    after it): one that exists as a folder, or one written with a trailing ``/``; or whose folder a
    file stands in the way of, or that files cannot be created in (:func:`require_output_folder`).

    Args:
        paths: the option that took each path -> the path (``{"--json": "out/"}``); ``None`` is skipped.

    Raises:
        DataError: ``--json out/ is a folder; give a file name, e.g. out/report.json``, or
            ``--json notes.txt/r.json: notes.txt exists and is not a folder; choose another path``, or
            ``--json /sys/r.json cannot be written in /sys (Permission denied); choose a folder you can write``.
    """
    for flag, path in paths.items():
        if path is None:
            continue
        text = os.fspath(path)
        if Path(text).is_dir() or text.endswith(("/", os.sep)):
            example = Path(text) / ("figure.png" if "plot" in flag else "report.json")
            raise DataError(f"{flag} {text} is a folder; give a file name, e.g. {example}")
        require_output_folder(Path(text).parent, f"{flag} {text}")


def require_output_folder(folder: str | os.PathLike[str], what: str, *, probe: bool = True) -> None:
    """Refuse an output folder that a file stands in the way of: ``folder`` itself, or the
    nearest path above it that exists, is a file (``-o notes.txt``, ``--json notes.txt/r.json``);
    or that files cannot be created in (:func:`unwritable_reason`: ``folder``, or where it would be
    created), so that the command stops with one line before any work, not with
    ``FileExistsError`` or ``PermissionError`` after it.

    Args:
        folder: the folder the output goes in (created later if missing); what: the option and its
            value, for the message (``"--output notes.txt"``).
        probe: find out by creating and removing a file (:func:`unwritable_reason`); ``False``: ask
            the OS without writing anything (``workbench run --dry-run``).

    Raises:
        DataError: ``--output notes.txt: notes.txt exists and is not a folder; choose another path``,
            or ``--output /sys/out.jsonl cannot be written in /sys (Permission denied); choose a
            folder you can write`` (the nearest folder that exists; not named again when ``what``'s
            value, after a space, is that folder however written: ``--output ./ro cannot be written
            (Permission denied); ...``, but ``--output ro/ro cannot be written in ro ...``).
    """
    where = Path(folder)
    while not where.exists() and where != where.parent and not where.is_symlink():
        where = where.parent
    if where.exists() and not where.is_dir():
        raise DataError(f"{what}: {where} exists and is not a folder; choose another path")
    reason = unwritable_reason(folder, probe=probe)
    if reason is not None:  # now, not after the work
        while not where.exists() and where != where.parent:
            where = where.parent
        # the folder where it would be made, unless ``what``'s value (its text after some space) is that folder
        # itself, however written (``-o ro``, ``-o ./ro``, ``-o ro/``; not ``-o ro/ro``, whose text also ends with
        # the folder's name)
        shown = os.path.abspath(where)
        names_it = any(os.path.abspath(what[n + 1:]) == shown for n, character in enumerate(what) if character == " ")
        place = "" if names_it or os.path.abspath(what) == shown else f" in {where}"
        raise DataError(f"{what} cannot be written{place} ({reason}); choose a folder you can write")


def lock_exclusively(lock_path: str | os.PathLike[str], busy_message: str) -> Any:
    """Take an OS file lock at ``lock_path`` at once, or refuse: the guard of a run's output
    against a second run (another process, or another thread of this one) writing it too.

    The lock is released by ``.release()`` or when the process ends, even by SIGKILL; the
    (empty) lock file stays.

    Args:
        lock_path: the lock file (created if missing; its folder must exist).
        busy_message: the error's text when another holder has it.

    Returns:
        the held :class:`filelock.FileLock`.

    Raises:
        WorkbenchError: another run holds the lock.
    """
    from filelock import FileLock, Timeout

    from workbench.errors import WorkbenchError

    lock = FileLock(os.fspath(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise WorkbenchError(busy_message) from None
    return lock


def unwritable_reason(folder: str | os.PathLike[str], *, probe: bool = True) -> str | None:
    """Why files cannot be created in ``folder`` (or, when it does not exist yet, in the nearest
    folder above it that does, where it would be created), or ``None`` when they can.

    Args:
        folder: the folder (it need not exist).
        probe: ``True``: a file is created and removed to find out (the surest answer: what a
            write does, on any file system); ``False``: nothing is written (a dry run), the OS is
            asked with access(2) for write and search permission (the kernel's own check, with
            the process's capabilities), which counts a read-only mount, an ACL and a root user's
            bypass too (``Read-only file system`` when the mount is read-only, else
            ``Permission denied``).

    Example::

        unwritable_reason("/tmp/out")   # None
        unwritable_reason("/proc/x")    # 'No such file or directory' or 'Permission denied'
    """
    where = Path(folder)
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        return f"{where} is not a folder"
    if not probe:
        if os.access(where, os.W_OK | os.X_OK):
            return None
        try:
            read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        return os.strerror(errno.EROFS if read_only else errno.EACCES)
    probe_file = where / f".workbench-write-probe.{secrets.token_hex(4)}"
    try:
        probe_file.touch(exist_ok=False)
        probe_file.unlink()
    except OSError as error:
        return error.strerror or str(error)
    return None
