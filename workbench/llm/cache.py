"""A content-addressed cache of LLM responses on :mod:`diskcache`.

The key is the SHA-256 of a canonical JSON document holding everything that can change
an answer: provider, model, API base, messages, sampling parameters (and any extra
provider parameters), seed, the JSON schema asked for, the prompt-template version and
the repeat index (so ``--n-samples k`` asks for k distinct answers and gets the same k
back on a rerun). Only successful responses are stored; errors are never cached. An entry
that cannot be read back (its file cut short by a full disk or an interrupted copy) is a
miss: the model is asked again and the entry replaced. A fault of the cache as a whole (its
SQLite database damaged, the folder unreadable or unwritable, the disk full) is not a miss but a
:class:`ResponseCacheError`, raised when the cache is opened (``PRAGMA quick_check``) or at the
first read or write that fails: it would be the same for every call, so it stops the run.
"""

from __future__ import annotations

import enum
import errno
import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.option_words import option_value, resume_advice

#: bump when the stored value layout changes, so old entries are simply not found
CACHE_FORMAT = 1

_log = logging.getLogger(__name__)


class ResponseCacheError(WorkbenchError):
    """The response cache folder cannot be used at all: its SQLite database is damaged
    (``database disk image is malformed``), the folder cannot be read or written, or the disk is
    full. Every call would meet it, so a scoring run stops with this one line; its advice names
    ``--cache off`` and the resume as the caller names them (:mod:`workbench.option_words`:
    ``[score] cache = "off"`` under ``workbench run``).

    Args:
        directory: the cache folder.
        error: the SQLite or OS error met.
        doing: what was being done (``"opened"``, ``"read"``, ``"written"``).
    """

    def __init__(self, directory: str, error: BaseException, doing: str):
        self.directory = directory
        self.error = error
        text = str(error).lower()
        off = option_value("cache", "off")
        if isinstance(error, PermissionError) or "readonly" in text or "unable to open" in text:
            fix = f"give this user read and write access to {directory}, or use {off}"
        elif getattr(error, "errno", None) in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) or "full" in text \
                or "disk i/o" in text:
            fix = f"free disk space where {directory} is, or use {off}"
        else:  # damaged: a database copied or committed without its write-ahead log, or cut short
            fix = f"move the folder aside (mv {directory} {directory.rstrip(os.sep)}.damaged) or use {off}"
        super().__init__(
            f"the response cache {directory} cannot be {doing} ({type(error).__name__}: {error}); {fix}; "
            f"the rows scored so far are kept: then {resume_advice()}")


class CacheMode(str, enum.Enum):
    """How the response cache is used.

    * ``rw``: read hits, store new answers (default).
    * ``ro``: read hits, never store (a shared, frozen cache).
    * ``refresh``: ignore stored answers, store the new ones.
    * ``off``: no cache at all.
    """

    RW = "rw"
    RO = "ro"
    REFRESH = "refresh"
    OFF = "off"

    @property
    def reads(self) -> bool:
        return self in (CacheMode.RW, CacheMode.RO)

    @property
    def writes(self) -> bool:
        return self in (CacheMode.RW, CacheMode.REFRESH)


def cache_key(
    *,
    provider: str,
    model: str,
    messages: list[Mapping[str, Any]],
    params: Mapping[str, Any],
    seed: int | None,
    schema: Mapping[str, Any] | None,
    prompt_version: str,
    repeat: int,
    api_base: str | None = None,
    extra: Mapping[str, Any] | None = None,
    mocked: bool = False,
) -> str:
    """Return the hex SHA-256 key of one request.

    Args:
        provider: litellm provider (``"openai"``, ``"local"``, ...).
        model: the full model string as given by the user.
        messages: the chat messages (role/content dicts).
        params: sampling parameters (temperature, top_p, max_tokens, ...).
        seed: the sampling seed, or ``None``.
        schema: the JSON schema of a structured answer, or ``None`` for free text.
        prompt_version: the version hash of the prompt template(s) used.
        repeat: the repeat index (0 .. n_samples-1).
        api_base: the endpoint, when not the provider's default.
        extra: further keyword arguments sent to the provider (``top_k``, ``n_ctx``, ...).
        mocked: the answer comes from litellm's ``mock_response``, not from the model; mocked
            answers never answer a real call, nor the other way round.

    ``extra`` and ``mocked`` enter the document only when set, so the key of a plain call is
    the same as before they existed (caches filled earlier stay valid).
    """
    document = {
        "format": CACHE_FORMAT,
        "provider": provider,
        "model": model,
        "api_base": api_base,
        "messages": [dict(m) for m in messages],
        "params": dict(sorted(params.items())),
        "seed": seed,
        "schema": schema,
        "prompt_version": prompt_version,
        "repeat": repeat,
    }
    if extra:
        document["extra"] = dict(sorted(extra.items()))
    if mocked:
        document["mocked"] = True
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A stored answer: text plus what it cost when it was first asked (tokens, USD).

    ``logprobs`` holds the answer's token log-probabilities in OpenAI's layout
    (:func:`workbench.llm.logprobs.tokens_as_dicts`) when they were asked for and returned;
    entries stored before the field existed read as ``None``.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    logprobs: list[dict[str, Any]] | None = None


def quick_check(database: str) -> None:
    """Run SQLite's ``PRAGMA quick_check(1)`` on a database through a connection of its own,
    opened read-only (``mode=ro``: it never writes nor takes a write lock; a write-ahead log is
    read as any reader reads it), the database memory-mapped whole (``PRAGMA mmap_size``, as
    diskcache maps its first 64 MiB; the mapped pages are the OS's file cache, counted in the
    process's resident memory while the check runs). It reads every page of the database once: for
    a 660 MB one 1.7-2.7 s in the OS's file cache and 2.4-2.9 s from disk, against 16-18 s from disk
    page by page (two busy cores; ``benchmarks/results/cache_open_bench.txt``).

    Args:
        database: the database file's path (``<folder>/cache.db`` of a diskcache folder).

    Raises:
        sqlite3.DatabaseError: the check found a fault (``database disk image is malformed
            (PRAGMA quick_check: <what it found>)``, as SQLite words a damaged page when a read
            meets it), or SQLite's own error when the database cannot be opened or read.
    """
    connection = sqlite3.connect(f"{Path(database).absolute().as_uri()}?mode=ro", uri=True, timeout=60)
    try:
        # the file mapped whole (SQLite caps it at its own limit): the OS then reads it ahead in large
        # runs where page-by-page reads of a file not in its cache are about 7 times slower
        size = os.path.getsize(database)
        connection.execute(f"PRAGMA mmap_size={size}")
        problems = [row[0] for row in connection.execute("PRAGMA quick_check(1)").fetchall()]
    finally:
        connection.close()
    if problems != ["ok"]:
        found = " ".join(problems[0].replace("*** in database main ***", "").split())
        raise sqlite3.DatabaseError(f"database disk image is malformed (PRAGMA quick_check: {found})")


class ResponseCache:
    """A response cache in a folder (``diskcache.Cache``; safe across threads and processes).

    Args:
        directory: the cache folder (created if missing).
        mode: a :class:`CacheMode`.

    Raises:
        ResponseCacheError: the folder cannot be created or opened, or its database fails
            SQLite's ``PRAGMA quick_check`` (:func:`quick_check`: every page of ``cache.db`` read
            once, about 3 ms a MB; values over 32 KiB live in files of their own and are not read).
    """

    def __init__(self, directory: str | os.PathLike[str], mode: CacheMode | str = CacheMode.RW):
        import diskcache
        from diskcache.core import DBNAME

        self.mode = CacheMode(mode)
        self.directory = os.fspath(directory)
        #: entries found damaged by :meth:`get` (read as misses)
        self.damaged = 0
        self._cache = None
        if self.mode is CacheMode.OFF:
            return
        try:
            self._cache = diskcache.Cache(self.directory)
            quick_check(os.path.join(self._cache.directory, DBNAME))
        except (sqlite3.Error, OSError) as error:
            if self._cache is not None:
                self._cache.close()
            raise ResponseCacheError(self.directory, error, "opened") from error

    def get(self, key: str) -> CachedResponse | None:
        """Return the stored answer for ``key`` (``None`` on a miss or when the mode does not read).

        A damaged entry (a value file cut short, a stored dict of another shape) is a miss too,
        counted in :attr:`damaged` and logged once per cache; a mode that writes replaces it
        with the new answer."""
        if self._cache is None or not self.mode.reads:
            return None
        try:
            value = self._cache.get(key)
            return CachedResponse(**value) if isinstance(value, dict) else None
        except (sqlite3.Error, OSError) as error:  # the database or the folder: every read would fail alike
            raise ResponseCacheError(self.directory, error, "read") from error
        except Exception as error:  # unpickling a cut file raises UnpicklingError, EOFError, ValueError ...
            self.damaged += 1
            if self.damaged == 1:
                _log.warning("the response cache %s has an entry that cannot be read (%s: %s); it is asked again%s",
                             self.directory, type(error).__name__, error,
                             " and replaced" if self.mode.writes else "")
            return None

    def put(self, key: str, response: CachedResponse) -> None:
        """Store a successful answer (a no-op when the mode does not write).

        Raises:
            ResponseCacheError: the database or the folder cannot be written (damaged, read-only,
                disk full)."""
        if self._cache is None or not self.mode.writes:
            return
        try:
            self._cache.set(key, response.__dict__)
        except (sqlite3.Error, OSError) as error:
            raise ResponseCacheError(self.directory, error, "written") from error

    def __len__(self) -> int:
        return 0 if self._cache is None else len(self._cache)

    def close(self) -> None:
        """Close the underlying database."""
        if self._cache is not None:
            self._cache.close()
