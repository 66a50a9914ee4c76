"""Readers of problem files: data only, never code.

A file's reader is chosen by its CONTENT, never by its extension: each problem class keeps a small
table of :class:`Format` entries, a ``sniff`` test on the first bytes of the file paired with the
``read`` function that parses it. The first format whose sniffer accepts the head of the file
reads it; a file no sniffer accepts is refused with an :class:`~contactmp.errors.InputError`
naming ``"path"`` and listing the formats that were expected.

Readers so far (LCP(q, M): find z >= 0 with w = M z + q >= 0, z^T w = 0):

- NumPy ``.npz`` archives holding arrays ``M`` (n x n) and ``q`` (n), read with
  ``np.load(path, allow_pickle=False)``: an archive that holds pickled Python objects is refused.
- Siconos' text format for an LCP (``LinearComplementarityProblem`` printed to a file)::

      n
      storage rows cols        (one per line; storage 0 = dense)
      rows<TAB>cols            (dense only: the size again)
      M in column-major order  (rows * cols numbers; Siconos breaks the line after each column)
      q                        (n numbers)
      free text                (a comment; ignored)

  Only dense storage (0) is read; sparse-block storage (1) is recognised and refused with a clear
  message, as none of the shared problems use it.

Later problem classes (fc3d ``.npz`` / ``.dat``, FCLIB HDF5) add their own table of formats and a
``load_*`` function that calls :func:`_dispatch` with it.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Iterator, TypeVar

import numpy as np

from contactmp.errors import InputError
from contactmp.solvers.lcp import validate_lcp

__all__ = ["Format", "LCP_FORMATS", "load_lcp", "sniff_format"]

T = TypeVar("T")

#: how many leading bytes a sniffer sees
HEAD_BYTES = 4096

#: Siconos' NumericsMatrix storage codes
_SICONOS_DENSE, _SICONOS_SPARSE_BLOCK, _SICONOS_SPARSE = 0, 1, 2
_SICONOS_STORAGE_NAMES = {0: "dense", 1: "sparse-block", 2: "sparse"}


@dataclass(frozen=True)
class Format(Generic[T]):
    """One file format of one problem class: a content sniffer paired with its reader.

    ``sniff(head)`` gets the first :data:`HEAD_BYTES` bytes of the file and says whether this
    format claims it; ``read(path)`` parses the whole file or raises :class:`InputError` naming
    the field that is malformed. ``description`` is shown when no format claims a file.
    """

    name: str
    description: str
    sniff: Callable[[bytes], bool]
    read: Callable[[Path], T]


# --------------------------------------------------------------------------------------------
# dispatch


def _read_head(path: Path) -> bytes:
    """The first :data:`HEAD_BYTES` bytes of ``path``, or :class:`InputError` on ``"path"``."""
    if not path.exists():
        raise InputError("path", f"{path} does not exist")
    if not path.is_file():
        raise InputError("path", f"{path} is not a regular file")
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError as exc:
        raise InputError("path", f"{path} cannot be read ({exc})") from None


def sniff_format(path: str | os.PathLike[str], formats: tuple[Format[T], ...]) -> Format[T] | None:
    """The first format of ``formats`` whose sniffer claims the file's content, or ``None``."""
    head = _read_head(Path(path))
    for fmt in formats:
        if fmt.sniff(head):
            return fmt
    return None


def _dispatch(path: str | os.PathLike[str], formats: tuple[Format[T], ...], what: str) -> T:
    """Read ``path`` with the format its content matches; refuse content no format claims."""
    path = Path(path)
    fmt = sniff_format(path, formats)
    if fmt is None:
        expected = "; or ".join(f.description for f in formats)
        raise InputError(
            "path",
            f"{path} is not a recognised {what} file (the content decides, not the extension); "
            f"expected {expected}",
        )
    return fmt.read(path)


# --------------------------------------------------------------------------------------------
# sniffers


def _is_zip(head: bytes) -> bool:
    """A zip archive (what ``np.savez`` writes): local-file or empty-archive signature."""
    return head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06")


def _leading_ints(head: bytes, count: int) -> list[int] | None:
    """The first ``count`` whitespace-separated tokens of a text head as ints, else ``None``."""
    if b"\x00" in head:
        return None
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        # A comment at the end may hold non-ASCII text; only the leading tokens matter here.
        text = head.decode("latin-1")
    tokens = text.split(None, count)[:count]
    if len(tokens) < count:
        return None
    try:
        return [int(t) for t in tokens]
    except ValueError:
        return None


def _is_siconos_lcp_dat(head: bytes) -> bool:
    """Siconos' LCP text: ``n storage rows cols`` with a known storage code and rows == cols == n.

    Siconos' fc3d text starts ``dim nc storage rows cols`` instead; its second integer is the
    number of contacts and its third the storage code, so it fails ``rows == cols == n`` unless
    the file is an LCP.
    """
    ints = _leading_ints(head, 4)
    if ints is None:
        return False
    n, storage, rows, cols = ints
    return n > 0 and storage in _SICONOS_STORAGE_NAMES and rows == cols == n


# --------------------------------------------------------------------------------------------
# readers


def _npz_arrays(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of the ``.npz`` archive ``path``, loaded without pickle.

    A missing array raises :class:`InputError` naming it; an array stored as pickled Python
    objects is refused (never unpickled) with :class:`InputError` naming it.
    """
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise InputError("path", f"{path} is not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InputError("path", f"{path} is not a .npz archive")
    out: dict[str, np.ndarray] = {}
    with archive:
        for key in keys:
            if key not in archive.files:
                have = ", ".join(archive.files) or "nothing"
                raise InputError(key, f"array '{key}' is missing from {path} (it holds: {have})")
            try:
                out[key] = archive[key]
            except ValueError as exc:
                # numpy refuses object arrays when allow_pickle=False: that is a pickle inside.
                raise InputError(
                    key, f"array '{key}' in {path} holds pickled Python objects; refused ({exc})"
                ) from None
            except (OSError, zipfile.BadZipFile, EOFError) as exc:
                raise InputError(key, f"array '{key}' in {path} cannot be read ({exc})") from None
    return out


def _read_lcp_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` from a ``.npz`` archive with arrays ``M`` and ``q``."""
    arrays = _npz_arrays(path, ("M", "q"))
    for key, arr in arrays.items():
        if arr.dtype.kind not in "biuf":
            raise InputError(key, f"array '{key}' in {path} has dtype {arr.dtype}; expected real numbers")
    return validate_lcp(arrays["M"], arrays["q"])


class _Tokens:
    """A cursor over the whitespace-separated tokens of a text file, with field-named errors."""

    def __init__(self, path: Path):
        self.path = path
        # latin-1 never fails: a comment after the data may hold any byte.
        data = path.read_bytes()
        self.size_bytes = len(data)
        self._it: Iterator[str] = iter(data.decode("latin-1").split())
        self.count = 0

    def remaining(self) -> list[str]:
        """The tokens not read yet."""
        return list(self._it)

    def _next(self, field: str, what: str) -> str:
        try:
            tok = next(self._it)
        except StopIteration:
            raise InputError(field, f"{self.path} ended before {what}") from None
        self.count += 1
        return tok

    def integer(self, field: str) -> int:
        """The next token as an int, or :class:`InputError` naming ``field``."""
        tok = self._next(field, f"the value of '{field}'")
        try:
            return int(tok)
        except ValueError:
            raise InputError(field, f"expected an integer in {self.path}, got {tok!r}") from None

    def floats(self, field: str, count: int) -> np.ndarray:
        """The next ``count`` tokens as float64, or :class:`InputError` naming ``field``."""
        # every number takes at least two bytes (digit and separator): refuse sizes the file cannot hold
        if count > self.size_bytes // 2 + 1:
            raise InputError(field, f"announces {count} entries but {self.path} has only {self.size_bytes} bytes")
        out = np.empty(count, dtype=np.float64)
        for k in range(count):
            tok = self._next(field, f"all {count} entries of '{field}' were read (got {k})")
            try:
                out[k] = float(tok)
            except ValueError:
                raise InputError(
                    field, f"entry {k} in {self.path} is {tok!r}, not a number"
                ) from None
        return out


def _read_siconos_matrix(tokens: _Tokens, field: str) -> np.ndarray:
    """A Siconos NumericsMatrix printed as text: ``storage rows cols`` then the storage's data.

    Dense storage (0) repeats ``rows cols`` and lists the entries column by column.
    """
    storage = tokens.integer("storage")
    rows = tokens.integer("rows")
    cols = tokens.integer("cols")
    if rows <= 0 or cols <= 0:
        raise InputError(field, f"has size {rows} x {cols}; both must be positive")
    if storage != _SICONOS_DENSE:
        name = _SICONOS_STORAGE_NAMES.get(storage)
        if name is None:
            raise InputError("storage", f"unknown Siconos storage code {storage} (0 = dense, 1 = sparse-block)")
        raise InputError(
            "storage",
            f"Siconos {name} storage ({storage}) is not supported; only dense (0) is read. "
            "Convert the problem to .npz with arrays M and q.",
        )
    rows2 = tokens.integer("rows")
    cols2 = tokens.integer("cols")
    if (rows2, cols2) != (rows, cols):
        raise InputError(
            field, f"dense block announces {rows2} x {cols2} but the header said {rows} x {cols}"
        )
    values = tokens.floats(field, rows * cols)
    return values.reshape((rows, cols), order="F")


def _read_lcp_dat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` from Siconos' LCP text format (see the module docstring); trailing text ignored."""
    tokens = _Tokens(path)
    n = tokens.integer("n")
    if n <= 0:
        raise InputError("n", f"the problem size must be positive, got {n}")
    M = _read_siconos_matrix(tokens, "M")
    if M.shape != (n, n):
        raise InputError("M", f"is {M.shape[0]} x {M.shape[1]} but the problem size n is {n}")
    q = tokens.floats("q", n)
    rest = tokens.remaining()
    if rest:
        # Siconos' own files end with q; anything numeric after it is a sign of a wrong size line
        try:
            float(rest[0])
        except ValueError:
            pass  # trailing comments/text are what Siconos writers leave: ignored on purpose
        else:
            raise InputError("q", f"{path} has {len(rest)} more numbers after q (n = {n}): wrong size line?")
    return validate_lcp(M, q)


#: LCP formats, tried in order on the file's first bytes
LCP_FORMATS: tuple[Format[tuple[np.ndarray, np.ndarray]], ...] = (
    Format(
        name="npz",
        description="a NumPy .npz archive (zip) with float arrays M (n x n) and q (n)",
        sniff=_is_zip,
        read=_read_lcp_npz,
    ),
    Format(
        name="siconos-lcp-dat",
        description="Siconos' LCP text format starting 'n storage rows cols' with rows == cols == n",
        sniff=_is_siconos_lcp_dat,
        read=_read_lcp_dat,
    ),
)


def load_lcp(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """Read LCP(q, M) from ``path``: returns ``(M, q)`` as float64 arrays (n x n and n).

    The reader is picked by the file's content (see :data:`LCP_FORMATS`), never by its
    extension. Files are data: nothing is unpickled. Raises :class:`InputError` naming
    ``"path"`` for content no reader recognises, and naming the field (``"M"``, ``"q"``,
    ``"n"``, ``"storage"``, ...) for a recognised file that is malformed.
    """
    return _dispatch(path, LCP_FORMATS, "LCP")
