"""Readers of problem files: data only, never code.

A file's reader is chosen by its CONTENT, never by its extension: each problem class keeps a small
table of :class:`Format` entries, a ``sniff`` test on the first bytes of the file paired with the
``read`` function that parses it. The first format whose sniffer accepts the head of the file
reads it; a file no sniffer accepts is refused with an :class:`~contactmp.errors.InputError`
naming ``"path"`` and listing the formats that were expected.

Size cap
--------
Every reader checks what a file declares (array shapes and dtypes, zip member sizes, ``.dat``
headers, HDF5 dataset shapes) against what the file actually holds and against one size cap
BEFORE it allocates anything:

- :data:`MAX_PROBLEM_BYTES` (default 4 GiB) bounds the bytes of the arrays a problem becomes
  (counted as float64, plus the copy a dtype or memory-order conversion needs, plus the sparse
  index arrays of an FCLIB file), and the size of any file that is read (a larger file is
  refused before it is read). The peak memory of a load stays within about twice the cap.
- Override it with the environment variable ``CONTACTMP_MAX_BYTES`` (a number of bytes, with an
  optional ``K``, ``M``, ``G`` or ``T`` suffix in powers of 1024, for example ``512M`` or ``16G``)
  or, per call, with the keyword ``max_bytes=`` of :func:`load_problem`, :func:`load_lcp` and
  :func:`load_fc3d` (the keyword wins over the variable, the variable over the constant); see
  :func:`max_problem_bytes`.
- A NOSBENCH CasADi ``.json`` file (:mod:`contactmp.nosbench`) is parsed only when it is at most
  ``cap // JSON_EXPANSION`` bytes (128 MiB by default): parsed JSON takes up to that many times
  its text.

A violation is an :class:`InputError` naming the field (``"M"``, ``"W/x"``, ``"path"``, ...) and
saying that the file was refused before allocating. A value that is legal but extreme (an
indefinite ``W``, entries near the float64 limits such as 1e300) is not an input error: it loads,
and the solve's status says what happened.

Readers so far (LCP(q, M): find z >= 0 with w = M z + q >= 0, z^T w = 0):

- NumPy ``.npz`` archives holding arrays ``M`` (n x n) and ``q`` (n). Each member's ``.npy``
  header is read from the zip member and checked (real numeric dtype: no objects, so nothing is
  ever unpickled, no complex, strings or structured records; the expected rank and consistent
  sizes; ``prod(shape) * itemsize`` equal to the member's uncompressed size minus its header; a
  stored member whose sizes agree, a deflated member whose ratio is plausible and whose data
  decompresses to the declared size; the cap) before any array is allocated.
- Siconos' text format for an LCP (``LinearComplementarityProblem`` printed to a file)::

      n
      storage rows cols        (one per line; storage 0 = dense)
      rows<TAB>cols            (dense only: the size again)
      M in column-major order  (rows * cols numbers; Siconos breaks the line after each column)
      q                        (n numbers)
      free text                (a comment; ignored)

  Only dense storage (0) is read; sparse-block storage (1) is recognised and refused with a clear
  message, as none of the shared problems use it.

fc3d(W, q, mu) readers (find r in K_mu, u = W r + q, u + mu ||u_T|| e_n in K_mu^*, r . u_hat = 0;
contact order (normal, tangent 1, tangent 2), see :mod:`contactmp.solvers.fc3d.problem`):

- NumPy ``.npz`` archives holding ``W`` (3 nc x 3 nc), ``q`` (3 nc) and ``mu`` (nc), and optionally
  ``nc`` (checked against ``mu``), checked as above.
- Siconos' text format for a FrictionContactProblem (``frictionContact_printInFile``)::

      dim                      (3; the 2D problem is refused)
      nc                       (number of contacts)
      storage rows cols        (the NumericsMatrix W, rows == cols == dim * nc)
      ...                      (dense (0): as for the LCP; sparse-block (1): see below)
      q                        (dim * nc numbers)
      mu                       (nc numbers)
      isComplete               (optional 0/1 flag written by older Siconos; ignored)
      free text                (ignored)

  Sparse-block storage (Siconos' ``SBM_write_in_file``) lists ``nbblocks``, ``blocknumber0``,
  ``blocknumber1``, the cumulative block sizes ``blocksize0`` / ``blocksize1``, ``filled1``,
  ``filled2``, the row pointers ``index1_data`` (filled1) and block columns ``index2_data``
  (filled2), then for each block its number and its entries column by column.
- FCLIB HDF5 (read with h5py), local problems only: group ``fclib_local`` with ``spacedim`` (3),
  ``W/{m, n, nz, p, i, x}`` (``nz = -2`` compressed rows: ``p`` row pointers (m + 1), ``i`` column
  indices; ``nz = -1`` compressed columns: ``p`` column pointers (n + 1), ``i`` row indices;
  ``nz >= 0`` triplets: ``p`` row and ``i`` column index of each of the ``nz`` entries, duplicates
  summed, as in ``fclib.h``), ``vectors/q`` and ``vectors/mu``. A stored ``solution`` or ``guesses``
  group is never read. Datasets must be plain data inside the file: links, external raw storage,
  virtual datasets and filters other than deflate/shuffle/fletcher32/lzf are refused, and so is a
  dataset whose declared size is beyond what its stored bytes can decompress to. Shapes, dtypes
  and the pointer/index arrays are checked before the entries they describe are read.

Text files are tokenized a chunk at a time (no list of every token), and every count a header
announces is checked against the bytes left in the file and against the cap before its array is
allocated. :func:`load_problem` sniffs which problem class a file holds.
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, Iterator, TypeVar

import numpy as np

from contactmp.errors import InputError

__all__ = [
    "FC3D_FORMATS", "Format", "JSON_EXPANSION", "LCP_FORMATS", "MAX_BYTES_ENV", "MAX_PROBLEM_BYTES",
    "PROBLEM_KINDS", "load_fc3d", "load_lcp", "load_problem", "max_problem_bytes", "read_capped", "sniff_format",
]

T = TypeVar("T")

#: how many leading bytes a sniffer sees
HEAD_BYTES = 4096

#: the size cap (bytes): the most the arrays of one problem may take as float64, and the largest
#: file a reader reads (a W of 3 nc x 3 nc at 4 GiB: nc <= ~7700 contacts). Overridden by the
#: environment variable :data:`MAX_BYTES_ENV` and by the ``max_bytes=`` keyword of the loaders.
MAX_PROBLEM_BYTES = 4 * 2**30

#: the environment variable that overrides :data:`MAX_PROBLEM_BYTES` (bytes, optional K/M/G/T)
MAX_BYTES_ENV = "CONTACTMP_MAX_BYTES"

#: parsed JSON takes at most this many times its text (a list of one-digit numbers: 32 bytes of
#: Python objects per 2 bytes of text, 16x; empty lists and dicts, about 21x): JSON files are
#: parsed only up to ``cap // JSON_EXPANSION`` bytes
JSON_EXPANSION = 32

#: the largest zip central directory read (a .npz problem holds a handful of arrays; each entry
#: takes about 50-100 bytes): a bigger one is refused before zipfile builds an object per entry
_NPZ_MAX_DIRECTORY = 1 << 16
#: the largest .npy header read (numpy itself refuses headers above 10000 characters)
_NPY_MAX_HEADER = 1 << 16
#: an upper bound on what one compressed byte can decompress to (deflate's limit is about 1032:1)
_MAX_COMPRESSION = 1100
#: bytes read from a zip member at a time
_READ_CHUNK = 1 << 22

#: Siconos' NumericsMatrix storage codes
_SICONOS_DENSE, _SICONOS_SPARSE_BLOCK, _SICONOS_SPARSE = 0, 1, 2
_SICONOS_STORAGE_NAMES = {0: "dense", 1: "sparse-block", 2: "sparse"}


@dataclass(frozen=True)
class Format(Generic[T]):
    """One file format of one problem class: a content sniffer paired with its reader.

    ``sniff(head)`` gets the first :data:`HEAD_BYTES` bytes of the file and says whether this
    format claims it; ``read(path, cap)`` parses the whole file, allocating at most ``cap`` bytes
    of arrays (see :func:`max_problem_bytes`), or raises :class:`InputError` naming the field that
    is malformed. ``description`` is shown when no format claims a file.
    """

    name: str
    description: str
    sniff: Callable[[bytes], bool]
    read: Callable[[Path, int], T]
    #: for archive formats: the array names a ``.npz`` must hold for :func:`load_problem` to pick
    #: this format (checked on the zip directory alone, no data read); empty for other formats
    members: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------
# the size cap


_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _parse_size(field: str, value: Any) -> int:
    """A positive byte count from an int or a string such as ``"512M"``, else InputError on ``field``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        nbytes = int(value)
    else:
        match = _SIZE_RE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise InputError(field, f"must be a number of bytes with an optional K, M, G or T suffix "
                             f"(powers of 1024), for example 512M; got {value!r}")
        nbytes = int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])
    if nbytes <= 0:
        raise InputError(field, f"must be a positive number of bytes, got {value!r}")
    return nbytes


def max_problem_bytes(max_bytes: int | str | None = None) -> int:
    """The size cap in force: ``max_bytes`` when given, else ``$CONTACTMP_MAX_BYTES``, else
    :data:`MAX_PROBLEM_BYTES`. Raises :class:`InputError` naming ``max_bytes`` or
    ``CONTACTMP_MAX_BYTES`` for a value that is not a positive size."""
    if max_bytes is not None:
        return _parse_size("max_bytes", max_bytes)
    env = os.environ.get(MAX_BYTES_ENV, "").strip()
    if env:
        return _parse_size(MAX_BYTES_ENV, env)
    return int(MAX_PROBLEM_BYTES)


def _human(nbytes: int) -> str:
    """``nbytes`` in B, KiB, MiB or GiB."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} bytes"


def _cap_hint(cap: int) -> str:
    return (f"the size cap of {_human(cap)} (contactmp.io.MAX_PROBLEM_BYTES; raise it with "
            f"{MAX_BYTES_ENV} or max_bytes=)")


class _Budget:
    """The bytes of arrays one load has allocated so far, against the cap (checked before allocating)."""

    def __init__(self, cap: int):
        self.cap = cap
        self.used = 0

    def take(self, field: str, nbytes: int, what: str = "its arrays") -> None:
        """Count ``nbytes`` more, or raise :class:`InputError` naming ``field`` if that passes the cap."""
        if nbytes < 0:
            raise InputError(field, f"announces a negative size ({nbytes} bytes)")
        if self.used + nbytes > self.cap:
            before = f" (with {_human(self.used)} already taken)" if self.used else ""
            raise InputError(field, f"{what} would take {_human(nbytes)}{before}, above {_cap_hint(self.cap)}; "
                             "refused before allocating")
        self.used += nbytes


@contextlib.contextmanager
def _reading(field: str, what: str, errors: tuple[type[BaseException], ...] = (OSError,)) -> Iterator[None]:
    """Turn an exception of ``errors`` raised inside into :class:`InputError` naming ``field`` with
    the message ``"{what} ({exception})"``; an InputError raised inside passes unchanged."""
    try:
        yield
    except InputError:
        raise
    except errors as exc:
        raise InputError(field, f"{what} ({exc})") from None


def _file_size(path: Path, cap: int, limit: str | None = None) -> int:
    """The size of ``path``, or :class:`InputError` naming ``"path"`` when it is above ``cap``
    (``limit`` describes the bound in the message; the size cap by default)."""
    with _reading("path", f"{path} cannot be read"):
        size = path.stat().st_size
    if size > cap:
        raise InputError("path", f"{path} is {_human(size)}, above {limit or _cap_hint(cap)}; refused before "
                         "reading it")
    return size


def read_capped(path: str | os.PathLike[str], limit: int, what: str | None = None) -> bytes:
    """The bytes of ``path``, refused (InputError on ``"path"``) before reading when above ``limit``
    bytes (``what`` describes the limit in the message; the size cap by default)."""
    path = Path(path)
    _file_size(path, limit, what)
    with _reading("path", f"{path} cannot be read"), path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew since stat()
        raise InputError("path", f"{path} is above {what or _cap_hint(limit)}; refused")
    return data


# --------------------------------------------------------------------------------------------
# dispatch


def _read_head(path: Path) -> bytes:
    """The first :data:`HEAD_BYTES` bytes of ``path``, or :class:`InputError` on ``"path"``."""
    if not path.exists():
        raise InputError("path", f"{path} does not exist")
    if not path.is_file():
        raise InputError("path", f"{path} is not a regular file")
    with _reading("path", f"{path} cannot be read"), path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def sniff_format(path: str | os.PathLike[str], formats: tuple[Format[T], ...]) -> Format[T] | None:
    """The first format of ``formats`` whose sniffer claims the file's content, or ``None``."""
    head = _read_head(Path(path))
    for fmt in formats:
        if fmt.sniff(head):
            return fmt
    return None


def _dispatch(path: str | os.PathLike[str], formats: tuple[Format[T], ...], what: str, cap: int) -> T:
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
    return fmt.read(path, cap)


# --------------------------------------------------------------------------------------------
# sniffers


def _is_zip(head: bytes) -> bool:
    """A zip archive (what ``np.savez`` writes): local-file or empty-archive signature."""
    return head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06")


def _leading_ints(head: bytes, count: int) -> list[int] | None:
    """The first ``count`` whitespace-separated tokens of a text head as ints, else ``None``."""
    if b"\x00" in head:
        return None
    tokens = head.split(None, count)[:count]
    if len(tokens) < count or any(len(t) > 30 for t in tokens):
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
# .npz archives: every member's .npy header checked before any array is allocated


#: what zipfile (and zlib under it) raise on a corrupt or unsupported archive
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError,
               RuntimeError, struct.error, zlib.error)
_EOCD, _EOCD64_LOCATOR, _EOCD64 = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06"


def _zip_directory_size(path: Path, size: int) -> int | None:
    """The central-directory size an archive's end record declares, or None if there is none.

    Read from the end record (zip64 too) without zipfile, which would read the whole directory
    and build one object per entry.
    """
    tail_len = min(size, 22 + 0xFFFF)
    with path.open("rb") as fh:
        fh.seek(size - tail_len)
        tail = fh.read(tail_len)
        pos = tail.rfind(_EOCD)
        if pos < 0 or pos + 22 > len(tail):
            return None
        _, _, _, _, _, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[pos:pos + 22])
        if cd_size != 0xFFFFFFFF and cd_offset != 0xFFFFFFFF:
            return cd_size
        at = size - tail_len + pos - 20  # a zip64 end record: its locator sits just before
        if at < 0:
            return None
        fh.seek(at)
        loc = fh.read(20)
        if loc[:4] != _EOCD64_LOCATOR:
            return None
        off64 = struct.unpack("<4sLQL", loc)[2]
        if off64 + 56 > size:
            return None
        fh.seek(off64)
        rec = fh.read(56)
        if rec[:4] != _EOCD64:
            return None
        return int(struct.unpack("<4sQ2H2L4Q", rec)[8])


@dataclass(frozen=True)
class _NpyMember:
    """One checked ``.npy`` member of an archive: what its header declares."""

    key: str
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype
    header_bytes: int

    @property
    def count(self) -> int:
        """Number of entries."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the array as stored."""
        return self.count * self.dtype.itemsize

    @property
    def load_bytes(self) -> int:
        """Bytes it takes to load: as stored, plus a C-ordered float64 copy when it is not one."""
        converts = self.fortran_order or self.dtype != np.float64
        return self.nbytes + (8 * self.count if converts else 0)

    def describe(self) -> str:
        return f"{' x '.join(map(str, self.shape)) or 'scalar'} {self.dtype}"


def _dtype_problem(dtype: np.dtype) -> str | None:
    """Why ``dtype`` is not plain real numbers, or None when it is (bool, int, uint, float)."""
    if dtype.hasobject:
        return "holds Python objects (stored as a pickle); refused, never unpickled"
    if dtype.names is not None or dtype.subdtype is not None:
        return f"has the structured dtype {dtype}; expected real numbers"
    if dtype.kind == "c":
        return f"has the complex dtype {dtype}; expected real numbers"
    if dtype.kind in "SUa":
        return f"holds strings (dtype {dtype}); expected real numbers"
    if dtype.kind not in "biuf":
        return f"has dtype {dtype}; expected real numbers"
    return None


class _Npz:
    """A ``.npz`` archive opened for checked reading: the zip directory, no member data.

    The file is at most the cap and its central directory at most :data:`_NPZ_MAX_DIRECTORY`
    bytes before zipfile reads it; array names must be unique.
    """

    def __init__(self, path: Path, cap: int):
        self.path = path
        self.size = _file_size(path, cap)
        with _reading("path", f"{path} cannot be read"):
            cd_size = _zip_directory_size(path, self.size)
        if cd_size is not None and cd_size > _NPZ_MAX_DIRECTORY:
            raise InputError("path", f"{path}: its zip directory declares {_human(cd_size)} (more than "
                             f"{_human(_NPZ_MAX_DIRECTORY)}; a .npz problem holds a handful of arrays); refused")
        with _reading("path", f"{path} is not a readable .npz archive", _ZIP_ERRORS):
            self.zf = zipfile.ZipFile(path)
        self.infos: dict[str, zipfile.ZipInfo] = {}
        for info in self.zf.infolist():
            name = info.filename
            key = name[:-4] if name.endswith(".npy") else name
            if key in self.infos:
                self.zf.close()
                raise InputError(key, f"{path} holds array '{key}' twice; refused")
            self.infos[key] = info

    def __enter__(self) -> _Npz:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zf.close()

    def missing(self, key: str) -> InputError:
        have = ", ".join(sorted(self.infos)) or "nothing"
        return InputError(key, f"array '{key}' is missing from {self.path} (it holds: {have})")

    def header(self, key: str) -> _NpyMember:
        """The checked header of member ``key``: sizes honest, dtype real, nothing allocated."""
        info = self.infos.get(key)
        if info is None:
            raise self.missing(key)
        where = f"array '{key}' in {self.path}"
        if info.flag_bits & 0x1:
            raise InputError(key, f"{where} is encrypted; refused")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise InputError(key, f"{where} uses zip compression method {info.compress_type}; only stored and "
                             "deflated members (what np.savez and np.savez_compressed write) are read")
        if info.header_offset + info.compress_size > self.size:
            raise InputError(key, f"{where}: the zip directory says it stores {info.compress_size} bytes at "
                             f"offset {info.header_offset}, beyond the end of the {self.size}-byte file; refused")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise InputError(key, f"{where}: the zip directory lies about its size (stored uncompressed, yet "
                             f"{info.file_size} bytes declared for {info.compress_size} stored); refused")
        if info.file_size > _MAX_COMPRESSION * max(info.compress_size, 1):
            raise InputError(key, f"{where}: the zip directory declares {_human(info.file_size)} uncompressed "
                             f"from {info.compress_size} compressed bytes, more than deflate can produce; "
                             "refused before allocating")
        with _reading(key, f"{where} cannot be read", _ZIP_ERRORS), self.zf.open(info) as fh:
            prefix = fh.read(12)
            if prefix[:6] != b"\x93NUMPY":
                what = "a pickle" if prefix[:1] == b"\x80" else "not a .npy array"
                raise InputError(key, f"{where} is {what}; only .npy arrays of real numbers are read "
                                 "(nothing is unpickled)")
            version = (prefix[6], prefix[7]) if len(prefix) >= 8 else None
            if version == (1, 0) and len(prefix) >= 10:
                start, hlen = 10, struct.unpack("<H", prefix[8:10])[0]
            elif version == (2, 0) and len(prefix) >= 12:
                start, hlen = 12, struct.unpack("<I", prefix[8:12])[0]
            else:
                raise InputError(key, f"{where} has .npy format version {version}; versions (1, 0) and "
                                 "(2, 0) are read")
            total = start + hlen
            if hlen > _NPY_MAX_HEADER or total > info.file_size:
                raise InputError(key, f"{where} announces a {hlen}-byte .npy header in a "
                                 f"{info.file_size}-byte member; refused")
            head = prefix + fh.read(total - len(prefix))
        if len(head) != total:
            raise InputError(key, f"{where} ends inside its .npy header")
        buf = BytesIO(head)
        try:
            major, _ = np.lib.format.read_magic(buf)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran_order, dtype = read_header(buf)
        except (ValueError, TypeError, RecursionError, struct.error) as exc:
            raise InputError(key, f"{where} has a malformed .npy header ({str(exc).splitlines()[0]})") from None
        problem = _dtype_problem(dtype)
        if problem is not None:
            raise InputError(key, f"{where} {problem}")
        if any(d < 0 for d in shape):
            raise InputError(key, f"{where} declares the negative shape {shape}")
        member = _NpyMember(key, info, tuple(int(d) for d in shape), bool(fortran_order), dtype, total)
        held = info.file_size - total
        if member.nbytes != held:
            raise InputError(key, f"{where}: its header declares {member.describe()} ({_human(member.nbytes)}) "
                             f"but the member holds {_human(held)} of data; refused before allocating")
        return member

    def _verify_compressed(self, member: _NpyMember) -> None:
        """Decompress a deflated member once without keeping it: its data must be exactly the
        declared size and pass the CRC, before the array is allocated."""
        where = f"array '{member.key}' in {self.path}"
        got = 0
        with _reading(member.key, f"{where} cannot be decompressed", _ZIP_ERRORS), self.zf.open(member.info) as fh:
            while True:
                chunk = fh.read(_READ_CHUNK)
                if not chunk:
                    break
                got += len(chunk)
        if got != member.info.file_size:
            raise InputError(member.key, f"{where} decompresses to {got} bytes, not the {member.info.file_size} "
                             "its zip directory declares; refused before allocating")

    def _read(self, member: _NpyMember) -> np.ndarray:
        """The array of a checked member (read in chunks into one allocation of the declared size)."""
        where = f"array '{member.key}' in {self.path}"
        flat = np.empty(member.count, dtype=member.dtype)
        view = memoryview(flat.view(np.uint8)) if member.nbytes else memoryview(b"")
        got = 0
        with _reading(member.key, f"{where} cannot be read", _ZIP_ERRORS), self.zf.open(member.info) as fh:
            if len(fh.read(member.header_bytes)) != member.header_bytes:
                raise InputError(member.key, f"{where} ends inside its .npy header")
            while got < member.nbytes:
                n = fh.readinto(view[got:got + _READ_CHUNK])
                if not n:
                    break
                got += n
            extra = fh.read(1)  # at the end: zipfile checks the CRC
        if got != member.nbytes or extra:
            raise InputError(member.key, f"{where} holds {got} bytes of data, not the {member.nbytes} its header "
                             "declares")
        if member.fortran_order:
            return flat.reshape(member.shape[::-1]).T
        return flat.reshape(member.shape)

    def read(self, members: Iterable[_NpyMember], budget: _Budget) -> dict[str, np.ndarray]:
        """The arrays of ``members``: the cap first, then each compressed member verified, then read."""
        members = list(members)
        for m in members:
            budget.take(m.key, m.load_bytes, f"array '{m.key}' ({m.describe()})")
        for m in members:
            if m.info.compress_type != zipfile.ZIP_STORED:
                self._verify_compressed(m)
        return {m.key: self._read(m) for m in members}


def _npz_matrix(m: _NpyMember, path: Path) -> int:
    """The order ``n`` of a square matrix member, or InputError naming it."""
    if len(m.shape) != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise InputError(m.key, f"array '{m.key}' in {path} has shape {m.shape}; expected a square n x n "
                         "matrix with n >= 1")
    return m.shape[0]


def _npz_vector(m: _NpyMember, path: Path, length: int, why: str, *, scalar_ok: bool = False) -> None:
    """A vector member (a column or row counts) of ``length`` entries, or InputError naming it."""
    if scalar_ok and m.shape == ():
        return
    vectorlike = 1 <= len(m.shape) <= 2 and sum(d != 1 for d in m.shape) <= 1
    if not vectorlike or m.count != length:
        raise InputError(m.key, f"array '{m.key}' in {path} has shape {m.shape}; expected a vector of "
                         f"{length} entries ({why})")


def _read_lcp_npz(path: Path, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` from a ``.npz`` archive with arrays ``M`` and ``q`` (headers checked first)."""
    with _Npz(path, cap) as npz:
        M = npz.header("M")
        q = npz.header("q")
        n = _npz_matrix(M, path)
        _npz_vector(q, path, n, f"M is {n} x {n}")
        arrays = npz.read((M, q), _Budget(cap))
    from contactmp.validate import validate_lcp  # numba: imported when first needed
    return validate_lcp(arrays["M"], arrays["q"])


# --------------------------------------------------------------------------------------------
# Siconos text


_WHITESPACE = re.compile(rb"\s")


class _Tokens:
    """A cursor over the whitespace-separated tokens of a text file, with field-named errors.

    The file (at most the cap) is split a chunk at a time, so no list of every token is built;
    every array it fills is counted against the load's :class:`_Budget` before it is allocated.
    """

    _CHUNK = 1 << 18

    def __init__(self, path: Path, cap: int, budget: _Budget):
        self.path = path
        self.budget = budget
        self._data = read_capped(path, cap)
        self.size_bytes = len(self._data)
        self._pos = 0
        self._buf: list[bytes] = []
        self._i = 0
        self.count = 0

    def _refill(self) -> bool:
        """Make a token available; False at the end of the file."""
        while self._i >= len(self._buf):
            if self._pos >= self.size_bytes:
                return False
            end = min(self._pos + self._CHUNK, self.size_bytes)
            if end < self.size_bytes:  # never cut a token: extend to the next whitespace
                m = _WHITESPACE.search(self._data, end)
                end = m.start() if m else self.size_bytes
            self._buf = self._data[self._pos:end].split()
            self._i = 0
            self._pos = end
        return True

    def _left_bytes(self) -> int:
        """Bytes not tokenized yet plus the tokens buffered (an upper bound on what is left)."""
        return self.size_bytes - self._pos + sum(len(t) + 1 for t in self._buf[self._i:])

    def peek(self, k: int) -> list[str]:
        """Up to ``k`` of the tokens not read yet (consumed; for the checks after the data)."""
        out = []
        while len(out) < k and self._refill():
            out.append(self._buf[self._i].decode("latin-1"))
            self._i += 1
        return out

    def _next(self, field: str, what: str) -> bytes:
        if not self._refill():
            raise InputError(field, f"{self.path} ended before {what}")
        tok = self._buf[self._i]
        self._i += 1
        self.count += 1
        return tok

    @staticmethod
    def _show(tok: bytes) -> str:
        text = tok.decode("latin-1")
        return repr(text if len(text) <= 40 else text[:40] + "...")

    def integer(self, field: str) -> int:
        """The next token as an int, or :class:`InputError` naming ``field``."""
        tok = self._next(field, f"the value of '{field}'")
        try:
            if len(tok) > 30:
                raise ValueError
            return int(tok)
        except ValueError:
            raise InputError(field, f"expected an integer in {self.path}, got {self._show(tok)}") from None

    def check_count(self, field: str, count: int) -> None:
        """Refuse ``count`` tokens if the rest of the file is too small to hold them (before allocating)."""
        # every token takes at least two bytes (a digit and a separator)
        if count < 0:
            raise InputError(field, f"announces a negative number of entries ({count})")
        left = self._left_bytes()
        if count > left // 2 + 1:
            raise InputError(field, f"announces {count} entries but {self.path} has only {left} bytes left; "
                             "refused before allocating")

    def integers(self, field: str, count: int) -> np.ndarray:
        """The next ``count`` tokens as an int64 array, or :class:`InputError` naming ``field``."""
        self.check_count(field, count)
        self.budget.take(field, 8 * count, f"{count} integers")
        out = np.empty(count, dtype=np.int64)
        for k in range(count):
            v = self.integer(field)
            if not -2**62 < v < 2**62:
                raise InputError(field, f"entry {k} ({v}) is out of range")
            out[k] = v
        return out

    def fill_floats(self, field: str, out: np.ndarray, *, first: int = 0, total: int | None = None) -> None:
        """Parse the next ``len(out)`` tokens into the 1-D array (or view) ``out``.

        Entry numbers in messages start at ``first``; ``total`` is the size of the whole field.
        """
        total = len(out) if total is None else total
        n, k = len(out), 0
        while k < n:
            if not self._refill():
                raise InputError(field, f"{self.path} ended before all {total} entries of '{field}' were read "
                                 f"(got {first + k})")
            take = min(n - k, len(self._buf) - self._i)
            toks = self._buf[self._i:self._i + take]
            try:
                out[k:k + take] = list(map(float, toks))
            except ValueError:
                for j, tok in enumerate(toks):
                    try:
                        float(tok)
                    except ValueError:
                        raise InputError(field, f"entry {first + k + j} in {self.path} is {self._show(tok)}, "
                                         "not a number") from None
                raise
            self._i += take
            self.count += take
            k += take

    def floats(self, field: str, count: int) -> np.ndarray:
        """The next ``count`` tokens as float64, or :class:`InputError` naming ``field``."""
        self.check_count(field, count)
        self.budget.take(field, 8 * count, f"{count} numbers")
        out = np.empty(count, dtype=np.float64)
        self.fill_floats(field, out)
        return out


def _read_siconos_matrix(tokens: _Tokens, field: str, expect: tuple[int, int], expect_what: str, *,
                         sparse_block: bool = False) -> np.ndarray:
    """A Siconos NumericsMatrix printed as text: ``storage rows cols`` then the storage's data.

    ``rows x cols`` must be ``expect`` (the problem size; ``expect_what`` says where it comes
    from). Dense storage (0) repeats ``rows cols`` and lists the entries column by column.
    Sparse-block storage (1) is read when ``sparse_block`` is true (see :func:`_read_sbm`),
    refused otherwise. The matrix is counted against the cap before it is allocated.
    """
    storage = tokens.integer("storage")
    rows = tokens.integer("rows")
    cols = tokens.integer("cols")
    if rows <= 0 or cols <= 0:
        raise InputError(field, f"has size {rows} x {cols}; both must be positive")
    if (rows, cols) != expect:
        raise InputError(field, f"is {rows} x {cols} but {expect_what}")
    if storage == _SICONOS_SPARSE_BLOCK and sparse_block:
        return _read_sbm(tokens, field, rows, cols)
    if storage != _SICONOS_DENSE:
        name = _SICONOS_STORAGE_NAMES.get(storage)
        if name is None:
            raise InputError("storage", f"unknown Siconos storage code {storage} (0 = dense, 1 = sparse-block)")
        supported = "dense (0) and sparse-block (1) are" if sparse_block else "only dense (0) is"
        raise InputError(
            "storage",
            f"Siconos {name} storage ({storage}) is not supported; {supported} read. "
            "Convert the problem to .npz.",
        )
    tokens.budget.take(field, rows * cols * 8, f"a dense {rows} x {cols} float64 matrix")
    rows2 = tokens.integer("rows")
    cols2 = tokens.integer("cols")
    if (rows2, cols2) != (rows, cols):
        raise InputError(
            field, f"dense block announces {rows2} x {cols2} but the header said {rows} x {cols}"
        )
    tokens.check_count(field, rows * cols)
    out = np.empty((rows, cols), dtype=np.float64)  # C order; the file lists it column by column
    for j in range(cols):
        tokens.fill_floats(field, out[:, j], first=j * rows, total=rows * cols)
    return out


def _cumulative_sizes(field: str, sizes: np.ndarray, total: int, what: str) -> np.ndarray:
    """Check Siconos' cumulative block sizes (strictly increasing, ending at ``total``); return offsets."""
    prev = 0
    for k, s in enumerate(sizes.tolist()):
        if s <= prev:
            raise InputError(field, f"cumulative block sizes must increase strictly; entry {k} is {s} after {prev}")
        prev = s
    if prev != total:
        raise InputError(field, f"the blocks cover {prev} {what} but the matrix has {total}")
    return np.concatenate([[0], sizes])


def _read_sbm(tokens: _Tokens, field: str, rows: int, cols: int) -> np.ndarray:
    """The dense ``rows x cols`` matrix of a Siconos sparse-block matrix printed by ``SBM_write_in_file``.

    Layout: ``nbblocks``; then (unless it is 0, an all-zero matrix) ``blocknumber0``,
    ``blocknumber1``, the cumulative ``blocksize0`` (block rows) and ``blocksize1`` (block
    columns), ``filled1``, ``filled2``, ``index1_data`` (filled1 row pointers into the blocks),
    ``index2_data`` (filled2 block-column numbers), then each block in row order as its number
    followed by its entries column by column. Every count is checked against the matrix, the
    bytes left in the file and the cap before anything of that size is allocated.
    """
    tokens.budget.take(field, rows * cols * 8, f"a dense {rows} x {cols} float64 matrix")
    nbblocks = tokens.integer("nbblocks")
    if nbblocks < 0:
        raise InputError("nbblocks", f"must be >= 0, got {nbblocks}")
    if nbblocks == 0:
        return np.zeros((rows, cols))
    # each block is at least its number and one entry
    tokens.check_count("nbblocks", 2 * nbblocks)
    nb0 = tokens.integer("blocknumber0")
    nb1 = tokens.integer("blocknumber1")
    if not (0 < nb0 <= rows):
        raise InputError("blocknumber0", f"must be in 1..{rows} (the rows), got {nb0}")
    if not (0 < nb1 <= cols):
        raise InputError("blocknumber1", f"must be in 1..{cols} (the columns), got {nb1}")
    if nbblocks > nb0 * nb1:
        raise InputError("nbblocks", f"is {nbblocks} but a {nb0} x {nb1} grid of blocks holds at most {nb0 * nb1}")
    r_off = _cumulative_sizes("blocksize0", tokens.integers("blocksize0", nb0), rows, "rows")
    c_off = _cumulative_sizes("blocksize1", tokens.integers("blocksize1", nb1), cols, "columns")
    filled1 = tokens.integer("filled1")
    filled2 = tokens.integer("filled2")
    if not (1 <= filled1 <= nb0 + 1):
        raise InputError("filled1", f"must be in 1..{nb0 + 1} (block rows + 1), got {filled1}")
    if filled2 != nbblocks:
        raise InputError("filled2", f"is {filled2} but nbblocks is {nbblocks}")
    index1 = tokens.integers("index1_data", filled1)
    index2 = tokens.integers("index2_data", filled2)
    if index1[0] != 0 or (np.diff(index1) < 0).any() or index1[-1] > filled2:
        shown = index1[:20].tolist()
        raise InputError("index1_data", f"row pointers must start at 0, not decrease and end <= {filled2}: "
                         f"{shown}{' ...' if filled1 > 20 else ''}")
    bad = index2[(index2 < 0) | (index2 >= nb1)]
    if bad.size:
        raise InputError("index2_data", f"block column {int(bad[0])} is outside 0..{nb1 - 1}")
    out = np.zeros((rows, cols))
    column = np.empty(int(np.diff(r_off).max()))
    seen = 0
    for brow in range(filled1 - 1):
        r0, r1 = int(r_off[brow]), int(r_off[brow + 1])
        for num in range(int(index1[brow]), int(index1[brow + 1])):
            got = tokens.integer("block")
            if got != num:
                raise InputError("block", f"expected block number {num}, got {got}")
            c0, c1 = int(c_off[index2[num]]), int(c_off[index2[num] + 1])
            size = (r1 - r0) * (c1 - c0)
            for j in range(c1 - c0):  # entries column by column
                tokens.fill_floats("block", column[:r1 - r0], first=j * (r1 - r0), total=size)
                out[r0:r1, c0 + j] += column[:r1 - r0]
            seen += 1
    if seen != nbblocks:
        raise InputError("index1_data", f"the row pointers list {seen} blocks but nbblocks is {nbblocks}")
    return out


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _read_lcp_dat(path: Path, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """``(M, q)`` from Siconos' LCP text format (see the module docstring); trailing text ignored."""
    tokens = _Tokens(path, cap, _Budget(cap))
    n = tokens.integer("n")
    if n <= 0:
        raise InputError("n", f"the problem size must be positive, got {n}")
    M = _read_siconos_matrix(tokens, "M", (n, n), f"the problem size n is {n}")
    q = tokens.floats("q", n)
    rest = tokens.peek(1)
    # Siconos' own files end with q; anything numeric after it is a sign of a wrong size line,
    # trailing comments/text are what Siconos writers leave: ignored on purpose
    if rest and _is_number(rest[0]):
        raise InputError("q", f"{path} has more numbers after q (n = {n}, next {rest[0]!r}): wrong size line?")
    from contactmp.validate import validate_lcp  # numba: imported when first needed
    return validate_lcp(M, q)


#: LCP formats, tried in order on the file's first bytes
LCP_FORMATS: tuple[Format[tuple[np.ndarray, np.ndarray]], ...] = (
    Format("npz", "a NumPy .npz archive (zip) with float arrays M (n x n) and q (n)", _is_zip, _read_lcp_npz,
           members=("M", "q")),
    Format("siconos-lcp-dat", "Siconos' LCP text format starting 'n storage rows cols' with rows == cols == n",
           _is_siconos_lcp_dat, _read_lcp_dat),
)


def load_lcp(path: str | os.PathLike[str], *, max_bytes: int | str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Read LCP(q, M) from ``path``: returns ``(M, q)`` as float64 arrays (n x n and n).

    The reader is picked by the file's content (see :data:`LCP_FORMATS`), never by its
    extension. Files are data: nothing is unpickled. What the file declares is checked against
    what it holds and against the size cap (``max_bytes``, else ``$CONTACTMP_MAX_BYTES``, else
    :data:`MAX_PROBLEM_BYTES`) before anything is allocated. Raises :class:`InputError` naming
    ``"path"`` for content no reader recognises, and naming the field (``"M"``, ``"q"``,
    ``"n"``, ``"storage"``, ...) for a recognised file that is malformed or too big.
    """
    return _dispatch(path, LCP_FORMATS, "LCP", max_problem_bytes(max_bytes))


# --------------------------------------------------------------------------------------------
# fc3d: sniffers


#: HDF5's format signature; it sits at offset 0 or, after a user block, at 512, 1024, 2048, ...
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _is_hdf5(head: bytes) -> bool:
    """An HDF5 file: the signature at offset 0 or at a power-of-two user-block offset >= 512."""
    offsets = [0] + [512 << k for k in range(8) if (512 << k) + 8 <= len(head)]
    return any(head[o:o + 8] == _HDF5_SIGNATURE for o in offsets)


def _is_siconos_fc3d_dat(head: bytes) -> bool:
    """Siconos' fc3d text: ``dim nc storage rows cols`` with dim = 3, nc > 0, rows == cols == 3 nc.

    An LCP text file (``n storage rows cols``) never passes: it would need nc = its storage code
    in {1, 2} and then a storage code of 3.
    """
    ints = _leading_ints(head, 5)
    if ints is None:
        return False
    dim, nc, storage, rows, cols = ints
    return dim == 3 and nc > 0 and storage in _SICONOS_STORAGE_NAMES and rows == cols == dim * nc


# --------------------------------------------------------------------------------------------
# fc3d: readers

Fc3dArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _read_fc3d_npz(path: Path, cap: int) -> Fc3dArrays:
    """``(W, q, mu)`` from a ``.npz`` archive with arrays ``W``, ``q``, ``mu`` (and optionally ``nc``)."""
    with _Npz(path, cap) as npz:
        headers = [npz.header(key) for key in ("W", "q", "mu")]
        if "nc" in npz.infos:
            headers.append(npz.header("nc"))
        W, q, mu = headers[:3]
        m = _npz_matrix(W, path)
        if m % 3:
            raise InputError("W", f"array 'W' in {path} is {m} x {m}; expected 3 nc x 3 nc (nc >= 1 contacts)")
        _npz_vector(q, path, m, f"W is {m} x {m}")
        _npz_vector(mu, path, m // 3, f"one per contact: W is {m} x {m}", scalar_ok=True)
        if len(headers) == 4 and headers[3].count != 1:
            raise InputError("nc", f"array 'nc' in {path} has shape {headers[3].shape}; expected one integer")
        arrays = npz.read(headers, _Budget(cap))
    from contactmp.validate import validate_fc3d  # numba: imported when first needed
    W, q, mu = validate_fc3d(arrays["W"], arrays["q"], arrays["mu"])
    if "nc" in arrays:
        nc = arrays["nc"].ravel()[0]
        if nc.dtype.kind not in "iu" and not (np.isfinite(nc) and float(nc).is_integer()):
            raise InputError("nc", f"must be one integer, got {nc!r}")
        if int(nc) != mu.shape[0]:
            raise InputError("nc", f"is {int(nc)} but W, q and mu describe {mu.shape[0]} contacts")
    return W, q, mu


def _read_fc3d_dat(path: Path, cap: int) -> Fc3dArrays:
    """``(W, q, mu)`` from Siconos' fc3d text format (see the module docstring)."""
    tokens = _Tokens(path, cap, _Budget(cap))
    dim = tokens.integer("dim")
    if dim != 3:
        raise InputError("dim", f"only three-dimensional problems (dim = 3) are read, got dim = {dim}")
    nc = tokens.integer("nc")
    if nc <= 0:
        raise InputError("nc", f"the number of contacts must be positive, got {nc}")
    m = dim * nc
    W = _read_siconos_matrix(tokens, "W", (m, m), f"dim * nc = {m}", sparse_block=True)
    q = tokens.floats("q", m)
    mu = tokens.floats("mu", nc)
    rest = tokens.peek(2)
    # older Siconos writes an 'isComplete' flag (0 or 1) after mu; text after that is a comment
    if rest and rest[0] in ("0", "1"):
        rest = rest[1:]
    if rest and _is_number(rest[0]):
        raise InputError("mu", f"{path} has more numbers after mu (nc = {nc}, next {rest[0]!r}): wrong size line?")
    from contactmp.validate import validate_fc3d  # numba: imported when first needed
    return validate_fc3d(W, q, mu)


#: HDF5 filters whose output we trust to be bounded by _MAX_COMPRESSION: deflate, shuffle,
#: fletcher32, lzf
_HDF5_SAFE_FILTERS = {1: "deflate", 2: "shuffle", 3: "fletcher32", 32000: "lzf"}
#: what h5py raises on a corrupt file or an unreadable object
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


def _h5_child(group: Any, name: str, field: str) -> Any:
    """The object ``name`` of ``group`` when it is a hard link (checked before it is followed)."""
    import h5py

    with _reading(field, f"'{group.name}/{name}' cannot be read", _H5_ERRORS):
        link = group.get(name, getlink=True)
        if link is None:
            raise InputError(field, f"'{group.name}/{name}' is missing")
        if not isinstance(link, h5py.HardLink):
            raise InputError(field, f"'{group.name}/{name}' is a {type(link).__name__}; only data inside the file "
                             "is read")
        return group[name]


def _h5_group(group: Any, name: str, field: str, what: str) -> Any:
    """The subgroup ``name`` of ``group`` (a hard link to a group), or InputError naming ``field``."""
    import h5py

    g = _h5_child(group, name, field)
    if not isinstance(g, h5py.Group):
        raise InputError(field, f"'{group.name}/{name}' must be a group ({what})")
    return g


def _h5_dataset(group: Any, name: str, field: str, cap: int) -> Any:
    """The dataset ``name`` of ``group``: a hard link to plain data stored inside this file.

    Refuses (InputError naming ``field``) a missing name, a group, a soft or external link, a
    virtual dataset, raw data stored in an external file, an untrusted filter, a null dataspace,
    and a dataset whose declared size is above ``cap`` or beyond what its stored bytes can hold.
    Nothing is read.
    """
    import h5py

    ds = _h5_child(group, name, field)
    if not isinstance(ds, h5py.Dataset):
        raise InputError(field, f"'{ds.name}' is a group, expected a dataset")
    with _reading(field, f"'{ds.name}' cannot be read", _H5_ERRORS):
        if ds.shape is None:
            raise InputError(field, f"'{ds.name}' has a null dataspace (no data)")
        if ds.is_virtual:
            raise InputError(field, f"'{ds.name}' is a virtual dataset; only data inside the file is read")
        dcpl = ds.id.get_create_plist()
        if dcpl.get_external_count():
            raise InputError(field, f"'{ds.name}' keeps its data in external files; refused")
        for k in range(dcpl.get_nfilters()):
            code = dcpl.get_filter(k)[0]
            if code not in _HDF5_SAFE_FILTERS:
                raise InputError(field, f"'{ds.name}' uses HDF5 filter {code}; only "
                                 f"{', '.join(_HDF5_SAFE_FILTERS.values())} are read")
        declared = math.prod(ds.shape) * ds.dtype.itemsize
        stored = int(ds.id.get_storage_size())
    if declared > cap:
        raise InputError(field, f"'{ds.name}' declares shape {ds.shape} ({_human(declared)}), above "
                         f"{_cap_hint(cap)}; refused before allocating")
    if declared > 0 and declared > _MAX_COMPRESSION * stored:
        raise InputError(field, f"'{ds.name}' declares {math.prod(ds.shape)} entries ({declared} bytes) but stores "
                         f"only {stored} bytes; refused before allocating")
    return ds


def _h5_vector_ds(group: Any, name: str, field: str, kind: str, cap: int, length: int | None = None) -> Any:
    """A checked 1-D dataset (a scalar or a column counts) of dtype kind in ``kind``; not read."""
    ds = _h5_dataset(group, name, field, cap)
    if ds.dtype.kind not in kind or ds.dtype.names is not None or ds.dtype.subdtype is not None:
        want = "integers" if kind == "iu" else "real numbers"
        raise InputError(field, f"'{ds.name}' has dtype {ds.dtype}; expected {want}")
    if len(ds.shape) > 1 and not all(d == 1 for d in ds.shape[1:]):
        raise InputError(field, f"'{ds.name}' has shape {ds.shape}; expected a vector")
    if length is not None and ds.size != length:
        raise InputError(field, f"'{ds.name}' has {ds.size} entries, expected {length}")
    return ds


def _h5_read(ds: Any, field: str, count: int | None = None) -> np.ndarray:
    """The first ``count`` entries (all when None) of a checked vector dataset, as a 1-D array."""
    with _reading(field, f"'{ds.name}' cannot be read", _H5_ERRORS):
        if count is None or len(ds.shape) == 0:
            data = np.asarray(ds[()]).reshape(-1)
        else:
            data = np.asarray(ds[:count]).reshape(-1)
    return data if count is None else data[:count]


def _h5_int(group: Any, name: str, field: str, cap: int) -> int:
    """A dataset holding one integer (FCLIB stores them as 1-element int arrays)."""
    v = _h5_read(_h5_vector_ds(group, name, field, "iu", cap, length=1), field)
    if not -2**62 < int(v[0]) < 2**62:
        raise InputError(field, f"is {int(v[0])}, out of range")
    return int(v[0])


def _check_indices(field: str, idx: np.ndarray, upper: int, what: str) -> None:
    """Every entry of ``idx`` in ``0 .. upper - 1``, or InputError naming ``field``."""
    if idx.size and (idx.min() < 0 or idx.max() >= upper):
        bad = idx[(idx < 0) | (idx >= upper)][0]
        raise InputError(field, f"{what} index {int(bad)} is outside 0..{upper - 1}")


def _check_pointers(field: str, ptr: np.ndarray, nnz_cap: int) -> int:
    """Compressed pointers: start at 0, never decrease, end within the index and value arrays."""
    if ptr[0] != 0:
        raise InputError(field, f"pointers must start at 0, got {int(ptr[0])}")
    if (np.diff(ptr) < 0).any():
        raise InputError(field, "pointers must not decrease")
    if ptr[-1] > nnz_cap:
        raise InputError(field, f"pointers end at {int(ptr[-1])} but only {nnz_cap} entries are stored")
    return int(ptr[-1])


def _fclib_matrix(group: Any, m: int, n: int, budget: _Budget) -> np.ndarray:
    """The dense ``m x n`` matrix of an FCLIB sparse matrix group (compressed rows/columns or triplets).

    Shapes and dtypes of ``p``, ``i`` and ``x`` are checked before anything is read; the pointers
    (``m + 1`` or ``n + 1`` of them) are read and checked before the entries, and only the
    entries they (or ``nz``) announce are read, after counting them against the cap.
    """
    cap = budget.cap
    nz = _h5_int(group, "nz", "W/nz", cap)
    x_ds = _h5_vector_ds(group, "x", "W/x", "biuf", cap)
    if nz == -2 or nz == -1:
        major, minor = (m, n) if nz == -2 else (n, m)
        p_ds = _h5_vector_ds(group, "p", "W/p", "iu", cap, length=major + 1)
        i_ds = _h5_vector_ds(group, "i", "W/i", "iu", cap)
        budget.take("W/p", 8 * (major + 1), "the pointers")
        ptr = _h5_read(p_ds, "W/p").astype(np.int64)
        nnz = _check_pointers("W/p", ptr, min(i_ds.size, x_ds.size))
        # indices, values, the expanded outer index and the linear index built from them
        budget.take("W/x", 32 * nnz, f"{nnz} entries")
        idx = _h5_read(i_ds, "W/i", nnz).astype(np.int64)
        _check_indices("W/i", idx, minor, "column" if nz == -2 else "row")
        x = _h5_read(x_ds, "W/x", nnz).astype(np.float64)
        outer = np.repeat(np.arange(major, dtype=np.int64), np.diff(ptr))
        rows, cols = (outer, idx) if nz == -2 else (idx, outer)
    elif nz >= 0:
        p_ds = _h5_vector_ds(group, "p", "W/p", "iu", cap)
        i_ds = _h5_vector_ds(group, "i", "W/i", "iu", cap)
        for name, ds in (("W/p", p_ds), ("W/i", i_ds), ("W/x", x_ds)):
            if ds.size < nz:
                raise InputError(name, f"holds {ds.size} entries but nz = {nz} triplets are announced")
        budget.take("W/x", 32 * nz, f"{nz} triplets")
        rows = _h5_read(p_ds, "W/p", nz).astype(np.int64)
        _check_indices("W/p", rows, m, "row")
        cols = _h5_read(i_ds, "W/i", nz).astype(np.int64)
        _check_indices("W/i", cols, n, "column")
        x = _h5_read(x_ds, "W/x", nz).astype(np.float64)
    else:
        raise InputError("W/nz", f"must be -2 (compressed rows), -1 (compressed columns) or >= 0 "
                         f"(triplets), got {nz}")
    # duplicates are summed, as CSparse's cs_compress does
    return np.bincount(rows * n + cols, weights=x, minlength=m * n).reshape(m, n)


def _read_fclib_hdf5(path: Path, cap: int) -> Fc3dArrays:
    """``(W, q, mu)`` from an FCLIB local problem (see the module docstring); never reads the solution."""
    import h5py

    _file_size(path, cap)
    budget = _Budget(cap)
    with _reading("path", f"{path} is not a readable HDF5 file", _H5_ERRORS):
        fh = h5py.File(path, "r")
    # anything h5py raises on a corrupt file that the checks below do not name
    with _reading("path", f"{path} cannot be read as an FCLIB file", _H5_ERRORS), fh:
        link = fh.get("fclib_local", getlink=True)
        if link is None:
            if "fclib_global" in fh:
                raise InputError("fclib_local", f"{path} holds an FCLIB global problem (fclib_global); "
                                 "only local problems (W, q, mu) are read")
            raise InputError("fclib_local", f"{path} has no group 'fclib_local' (not an FCLIB local problem)")
        g = _h5_group(fh, "fclib_local", "fclib_local", "an FCLIB local problem")
        spacedim = _h5_int(g, "spacedim", "spacedim", cap)
        if spacedim != 3:
            raise InputError("spacedim", f"only three-dimensional problems (spacedim = 3) are read, got {spacedim}")
        wg = _h5_group(g, "W", "W", "an FCLIB sparse matrix")
        m = _h5_int(wg, "m", "W/m", cap)
        n = _h5_int(wg, "n", "W/n", cap)
        if m <= 0 or m != n or m % 3:
            raise InputError("W", f"must be square with 3 nc rows, got m = {m}, n = {n}")
        budget.take("W", m * n * 8, f"a dense {m} x {n} float64 matrix")
        vg = _h5_group(g, "vectors", "vectors", "holding q and mu")
        q_ds = _h5_vector_ds(vg, "q", "q", "biuf", cap, length=m)
        mu_ds = _h5_vector_ds(vg, "mu", "mu", "biuf", cap, length=m // 3)
        budget.take("q", 16 * (m + m // 3), "q and mu")
        q = _h5_read(q_ds, "q")
        mu = _h5_read(mu_ds, "mu")
        W = _fclib_matrix(wg, m, n, budget)
    from contactmp.validate import validate_fc3d  # numba: imported when first needed
    return validate_fc3d(W, q, mu)


#: fc3d formats, tried in order on the file's first bytes
FC3D_FORMATS: tuple[Format[Fc3dArrays], ...] = (
    Format("npz", "a NumPy .npz archive (zip) with float arrays W (3nc x 3nc), q (3nc) and mu (nc)", _is_zip,
           _read_fc3d_npz, members=("W", "q", "mu")),
    Format("siconos-fc3d-dat", "Siconos' fc3d text format starting 'dim nc storage rows cols' with dim = 3 and "
           "rows == cols == 3 nc", _is_siconos_fc3d_dat, _read_fc3d_dat),
    Format("fclib-hdf5", "an FCLIB HDF5 file with a local problem (group fclib_local)", _is_hdf5, _read_fclib_hdf5),
)


def load_fc3d(path: str | os.PathLike[str], *, max_bytes: int | str | None = None) -> Fc3dArrays:
    """Read fc3d(W, q, mu) from ``path``: ``(W, q, mu)`` as float64 arrays (3nc x 3nc, 3nc, nc).

    The problem: find r in K_mu = prod_j {||r_jT|| <= mu_j r_jn} with u = W r + q and
    u + mu ||u_T|| e_n in K_mu^*, r . (u + mu ||u_T|| e_n) = 0 (contact order normal, t1, t2).
    The reader is picked by content (see :data:`FC3D_FORMATS`): ``.npz``, Siconos ``.dat``
    (dense or sparse-block W) or FCLIB HDF5. What the file declares is checked against what it
    holds and against the size cap (``max_bytes``, else ``$CONTACTMP_MAX_BYTES``, else
    :data:`MAX_PROBLEM_BYTES`) before anything is allocated. Raises :class:`InputError` naming
    ``"path"`` for content no reader recognises and naming the field (``"W"``, ``"q"``, ``"mu"``,
    ``"W/p"``, ``"spacedim"``, ``"nbblocks"``, ...) for a recognised file that is malformed.
    """
    return _dispatch(path, FC3D_FORMATS, "fc3d", max_problem_bytes(max_bytes))


#: problem classes in the order :func:`load_problem` tries them: (kind, formats)
PROBLEM_KINDS: tuple[tuple[str, tuple[Format[Any], ...]], ...] = (
    ("lcp", LCP_FORMATS),
    ("fc3d", FC3D_FORMATS),
)


def _zip_members(path: Path, cap: int) -> set[str]:
    """The array names of a ``.npz`` (its member names without ``.npy``), from the checked zip directory only."""
    with _Npz(path, cap) as npz:
        return set(npz.infos)


def load_problem(path: str | os.PathLike[str], *, max_bytes: int | str | None = None) -> tuple[str, Any]:
    """Read a complementarity problem of any known class: ``("lcp", (M, q))`` or ``("fc3d", (W, q, mu))``.

    The class and the format are decided by the file's content: text and HDF5 files by their
    sniffers (:data:`PROBLEM_KINDS`), ``.npz`` archives by the arrays they hold (``M`` for an LCP,
    ``W`` for fc3d; read from the zip directory before any data). Sizes are checked against the
    size cap (``max_bytes``, else ``$CONTACTMP_MAX_BYTES``, else :data:`MAX_PROBLEM_BYTES`)
    before anything is allocated. Raises :class:`InputError` naming ``"path"`` when no class
    claims the file, and naming the field for malformed content.
    """
    path = Path(path)
    cap = max_problem_bytes(max_bytes)
    head = _read_head(path)
    members: set[str] | None = None
    claimed: list[tuple[str, Format[Any]]] = []
    for kind, formats in PROBLEM_KINDS:
        for fmt in formats:
            if not fmt.sniff(head):
                continue
            if fmt.members:
                if members is None:
                    members = _zip_members(path, cap)
                if fmt.members[0] not in members:  # the matrix's name tells the class
                    continue
            claimed.append((kind, fmt))
    if not claimed:
        if members is not None:  # a readable archive holding neither M nor W
            held = ", ".join(sorted(members)) or "nothing"
            raise InputError("path", f"{path} is a .npz archive holding {held}; expected "
                             "arrays M and q (LCP) or W, q and mu (fc3d)")
        expected = "; or ".join(f"{kind}: {fmt.description}" for kind, formats in PROBLEM_KINDS for fmt in formats)
        raise InputError("path", f"{path} is not a recognised problem file (the content decides, not the "
                         f"extension); expected {expected}")
    kind, fmt = claimed[0]
    return kind, fmt.read(path, cap)
