"""Text encodings of the files the loader reads.

Data files must be UTF-8: :func:`require_utf8` finds the first byte that is not, before
``datasets`` reads them. ``datasets`` reads a JSON Lines file with a stray Latin-1 byte without
complaint and fails only when that row is read (a ``UnicodeDecodeError`` from pyarrow, mid-run),
and a CSV fails with "An error occurred while generating the dataset". Both say neither the file
nor the line.

Source files (a folder of ``.java``, ``.py`` ... files) are decoded by :func:`decode_source_file`,
which reads legacy files too: UTF-8 first, then the encoding the file declares (a byte-order mark,
or the language's own declaration, Python's coding cookie), then one fallback encoding
(:data:`DEFAULT_SOURCE_ENCODING`, ``--source-encoding``). No detector guesses: ``charset-normalizer``
3.5 took a Latin-1 Java file for cp1250 and a one-line ``int x = 1; // \xe9`` for cp1006 (Urdu),
so its answer would change a file's text with its length; a fixed fallback reads the same bytes
the same way in every file, and the run records which files it read so.
"""

from __future__ import annotations

import codecs
import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import DataError

if TYPE_CHECKING:
    from workbench.languages.spec import LanguagePlugin

#: the encoding a source file is read in when it is not UTF-8 and declares none (``--source-encoding``):
#: Windows-1252, the legacy Western encoding (Latin-1's letters, and “ ” – — € where Latin-1 has
#: control codes), what editors and ``javac`` on Western Windows wrote
DEFAULT_SOURCE_ENCODING = "cp1252"

#: how many bytes are sniffed for NUL bytes to call a file binary (a byte-order-marked UTF-16 or
#: UTF-32 file holds NUL bytes and is text)
BINARY_SNIFF_BYTES = 8192

#: the byte-order marks of UTF-16 and UTF-32 (whose text holds NUL bytes) and the codec that reads the
#: text after them (UTF-32's first: its little-endian mark starts with UTF-16's); a UTF-8 mark is the
#: language plugin's to read (Python checks it against a coding cookie)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
         (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"))

#: control bytes no source file holds (all of C0 but tab, line ends, form feed, escape and Ctrl-Z,
#: the old DOS end of file): a file that is not UTF-8 and holds one is binary, not legacy text
_CONTROLS = frozenset(range(32)) - set(b"\t\n\r\x0b\x0c\x1a\x1b")


@dataclass(frozen=True)
class DecodedSource:
    """What :func:`decode_source_file` made of a source file's bytes.

    Attributes:
        text: the text (a byte-order mark dropped), or ``None`` when the file is not read.
        encoding: how it was read when not as UTF-8: ``"UTF-16 (byte-order mark)"``, ``"declared
            by the file"`` (a coding cookie), ``"cp1252 (fallback)"``; ``None`` for UTF-8.
        reason: why the file is not read (``"binary"``, ``"empty"``, ``"not UTF-8 (byte offset 40),
            nor cp1252 (byte offset 52) ..."``: the first byte that is not in the encoding, counted
            from 0 at the file's start), or ``None``.
    """

    text: str | None
    encoding: str | None = None
    reason: str | None = None


def decode_source_file(data: bytes, plugin: LanguagePlugin | None,
                       fallback: str = DEFAULT_SOURCE_ENCODING) -> DecodedSource:
    """Decode a source file's bytes, in this order:

    1. a UTF-16 or UTF-32 byte-order mark names the encoding;
    2. else a NUL byte in the first :data:`BINARY_SNIFF_BYTES` bytes: binary, not read;
    3. else the language plugin's reading (``decode_source``: UTF-8, or the encoding the file
       declares, Python's PEP 263 coding cookie); a file whose bytes are not in its declared
       encoding is not read (the declaration is the author's word);
    4. else (not UTF-8, nothing declared) ``fallback``; a file that holds control bytes no source
       text holds (binary without NUL bytes), or is not in ``fallback`` either, is not read; so is a
       file whose UTF-8 byte-order mark is followed by bytes that are not UTF-8.

    Args:
        data: the whole file; plugin: its language plugin (``None``: UTF-8); fallback: a codec
            name Python knows (``cp1252``, ``latin-1``, ``gbk``, ``shift_jis``).

    Returns:
        a :class:`DecodedSource`.

    Raises:
        LookupError: ``fallback`` is no codec Python knows (checked by the caller first).
    """
    if not data:
        return DecodedSource(None, reason="empty")
    for mark, codec, name in _BOMS:
        if data.startswith(mark):
            try:
                text = data[len(mark):].decode(codec)
            except UnicodeDecodeError as error:
                return DecodedSource(None, reason=f"not in the encoding its byte-order mark declares ({name}): "
                                                  f"byte offset {error.start + len(mark)}")
            return DecodedSource(text, f"{name} (byte-order mark)")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return DecodedSource(None, reason="binary")
    try:
        text = plugin.decode_source(data) if plugin is not None else data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        if error.encoding not in ("utf-8", "utf-8-sig"):
            return DecodedSource(None, reason=f"not in its declared encoding ({error.encoding})")
        if data.startswith(codecs.BOM_UTF8):
            # counted in the file: utf-8-sig (and a plugin's reading) count from after the mark
            return DecodedSource(None, reason=f"not in the encoding its byte-order mark declares (UTF-8): "
                                              f"byte offset {_first_bad_utf8_byte(data)}")
        utf8_error = error
    except ValueError as error:
        return DecodedSource(None, reason=f"undecodable: {error}")
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return DecodedSource(text, "declared by the file")
        return DecodedSource(text)
    if not _CONTROLS.isdisjoint(data[:BINARY_SNIFF_BYTES]):  # the same bytes in every ASCII-based encoding
        return DecodedSource(None, reason="binary")
    try:
        text = data.decode(fallback)
    except UnicodeDecodeError as error:
        return DecodedSource(None, reason=f"not UTF-8 (byte offset {utf8_error.start}), nor {fallback} (byte offset {error.start}): "
                                          f"give its encoding with --source-encoding")
    return DecodedSource(text, f"{codecs.lookup(fallback).name}{_FALLBACK}")


def _first_bad_utf8_byte(data: bytes) -> int:
    """The 0-based offset in ``data`` of its first byte that is not UTF-8 (a UTF-8 byte-order mark
    is UTF-8, so the offset counts it); ``len(data)`` if there is none."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start
    return len(data)


#: how :func:`decode_source_file` names a read in the fallback encoding: ``"cp1252 (fallback)"``
_FALLBACK = " (fallback)"


def read_in_fallback(encoding: str) -> bool:
    """Whether ``encoding`` (a :attr:`DecodedSource.encoding`, as ``report.json``'s
    ``source_encodings`` records it) is a read in the fallback encoding (``"cp1252 (fallback)"``),
    which ``--source-encoding`` changes, rather than one the file names itself (a byte-order mark,
    a coding cookie)."""
    return encoding.endswith(_FALLBACK)


def check_source_encoding(name: str) -> None:
    """Refuse a ``--source-encoding`` that is no codec Python knows, before any file is read.

    Args:
        name: the fallback encoding (``cp1252``, ``latin-1``, ``gbk``, ``shift_jis``).

    Raises:
        DataError: ``name`` is unknown to :func:`codecs.lookup`.
    """
    try:
        codecs.lookup(name)
    except LookupError:
        raise DataError(f"--source-encoding {name!r} is no encoding Python knows; give a codec name such "
                        f"as cp1252, latin-1, gbk or shift_jis (see Python's codecs module)") from None


@dataclass(frozen=True)
class InvalidUtf8:
    """Where a file stops being UTF-8.

    Attributes:
        line: 1-based line number; column: 1-based byte position within the line.
        offset: 0-based byte offset in the (decompressed) file.
        bad: the offending bytes.
        reason: the decoder's reason (``invalid continuation byte``).
    """

    line: int
    column: int
    offset: int
    bad: bytes
    reason: str


def first_invalid_utf8(path: str | os.PathLike[str]) -> InvalidUtf8 | None:
    """Return the first position where ``path`` (``.gz`` is decompressed) is not UTF-8, or ``None``.

    Lines are decoded one at a time (a newline byte never occurs inside a multi-byte UTF-8
    character, so this finds exactly what decoding the whole file would).
    """
    path = Path(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    offset = 0
    with opener(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                bad = line[error.start : error.end]
                return InvalidUtf8(number, error.start + 1, offset + error.start, bad, error.reason)
            offset += len(line)
    return None


def require_utf8(path: str | os.PathLike[str]) -> None:
    """Raise :class:`DataError` naming the file, line and byte offset where ``path`` is not UTF-8.

    Raises:
        DataError: e.g. ``data.jsonl is not UTF-8 text: line 2, byte 30 (offset 66 in the
            file) is b'\\xe9' (invalid continuation byte); save the file as UTF-8 ...``.
    """
    found = first_invalid_utf8(path)
    if found is not None:
        raise DataError(
            f"{path} is not UTF-8 text: line {found.line}, byte {found.column} (offset {found.offset} in the file) "
            f"is {found.bad!r} ({found.reason}); save the file as UTF-8 (e.g. with iconv -f latin1 -t utf-8)"
        )


def decode_cell(data: bytes, fallback: str = DEFAULT_SOURCE_ENCODING) -> DecodedSource:
    """Decode a code cell that holds bytes (a Parquet binary column) as a source file's bytes are
    decoded (:func:`decode_source_file`, with no language's declaration): a UTF-16/32 byte-order
    mark, NUL bytes (binary), UTF-8 (a UTF-8 mark dropped), then ``fallback``; both dedup engines
    decode a cell so, on the driver or on the executors. An empty cell is empty text.

    Args:
        data: the cell's bytes; fallback: a codec name Python knows (``--source-encoding``).

    Returns:
        a :class:`DecodedSource` (``encoding`` ``None`` for UTF-8).
    """
    if not data:
        return DecodedSource("")
    decoded = decode_source_file(data, None, fallback)
    if decoded.reason is not None and decoded.reason.endswith(": give its encoding with --source-encoding"):
        return DecodedSource(None, reason=decoded.reason.rsplit(": ", 1)[0])  # the option is a source folder's
    return decoded

