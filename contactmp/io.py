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

fc3d(W, q, mu) readers (find r in K_mu, u = W r + q, u + mu ||u_T|| e_n in K_mu^*, r . u_hat = 0;
contact order (normal, tangent 1, tangent 2), see :mod:`contactmp.solvers.fc3d`):

- NumPy ``.npz`` archives holding ``W`` (3 nc x 3 nc), ``q`` (3 nc) and ``mu`` (nc), and optionally
  ``nc`` (checked against ``mu``), read without pickle as above.
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
  dataset whose declared size is beyond what its stored bytes can decompress to.

Every reader refuses a size the file cannot hold before allocating it, and a dense ``W`` above
:data:`MAX_DENSE_BYTES`. :func:`load_problem` sniffs which problem class a file holds.
"""
from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Iterator, TypeVar

import numpy as np

from contactmp.errors import InputError
from contactmp.solvers.lcp import validate_lcp

__all__ = [
    "FC3D_FORMATS",
    "Format",
    "LCP_FORMATS",
    "MAX_DENSE_BYTES",
    "PROBLEM_KINDS",
    "load_fc3d",
    "load_lcp",
    "load_problem",
    "sniff_format",
]

T = TypeVar("T")

#: how many leading bytes a sniffer sees
HEAD_BYTES = 4096

#: the largest dense float64 matrix a reader builds (a W of 3 nc x 3 nc: nc <= ~7700 contacts)
MAX_DENSE_BYTES = 4 * 2**30

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
    #: for archive formats: the array names a ``.npz`` must hold for :func:`load_problem` to pick
    #: this format (checked on the zip directory alone, no data read); empty for other formats
    members: tuple[str, ...] = ()


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


def _npz_arrays(
    path: Path, keys: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """The arrays ``keys`` (and those of ``optional`` that exist) of the ``.npz`` archive ``path``.

    Loaded without pickle. A missing required array raises :class:`InputError` naming it; an
    array stored as pickled Python objects is refused (never unpickled) with :class:`InputError`
    naming it.
    """
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise InputError("path", f"{path} is not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise InputError("path", f"{path} is not a .npz archive")
    out: dict[str, np.ndarray] = {}
    with archive:
        for key in keys + tuple(k for k in optional if k in archive.files):
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

    def _check_count(self, field: str, count: int) -> None:
        """Refuse ``count`` tokens if the file is too small to hold them (before allocating)."""
        # every token takes at least two bytes (a digit and a separator)
        if count < 0:
            raise InputError(field, f"announces a negative number of entries ({count})")
        if count > self.size_bytes // 2 + 1:
            raise InputError(field, f"announces {count} entries but {self.path} has only {self.size_bytes} bytes")

    def integers(self, field: str, count: int) -> list[int]:
        """The next ``count`` tokens as ints, or :class:`InputError` naming ``field``."""
        self._check_count(field, count)
        return [self.integer(field) for _ in range(count)]

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


def _read_siconos_matrix(tokens: _Tokens, field: str, *, sparse_block: bool = False) -> np.ndarray:
    """A Siconos NumericsMatrix printed as text: ``storage rows cols`` then the storage's data.

    Dense storage (0) repeats ``rows cols`` and lists the entries column by column. Sparse-block
    storage (1) is read when ``sparse_block`` is true (see :func:`_read_sbm`), refused otherwise.
    """
    storage = tokens.integer("storage")
    rows = tokens.integer("rows")
    cols = tokens.integer("cols")
    if rows <= 0 or cols <= 0:
        raise InputError(field, f"has size {rows} x {cols}; both must be positive")
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
    rows2 = tokens.integer("rows")
    cols2 = tokens.integer("cols")
    if (rows2, cols2) != (rows, cols):
        raise InputError(
            field, f"dense block announces {rows2} x {cols2} but the header said {rows} x {cols}"
        )
    values = tokens.floats(field, rows * cols)
    return values.reshape((rows, cols), order="F")


def _check_dense_size(field: str, rows: int, cols: int) -> None:
    """Refuse a dense ``rows x cols`` float64 matrix above :data:`MAX_DENSE_BYTES` (before allocating)."""
    if rows * cols * 8 > MAX_DENSE_BYTES:
        raise InputError(
            field,
            f"is {rows} x {cols}: {rows * cols * 8 / 2**30:.1f} GiB as a dense float64 matrix, above the "
            f"limit of {MAX_DENSE_BYTES / 2**30:.0f} GiB (contactmp.io.MAX_DENSE_BYTES)",
        )


def _cumulative_sizes(field: str, sizes: list[int], total: int, what: str) -> list[int]:
    """Check Siconos' cumulative block sizes (strictly increasing, ending at ``total``); return offsets."""
    prev = 0
    for k, s in enumerate(sizes):
        if s <= prev:
            raise InputError(field, f"cumulative block sizes must increase strictly; entry {k} is {s} after {prev}")
        prev = s
    if prev != total:
        raise InputError(field, f"the blocks cover {prev} {what} but the matrix has {total}")
    return [0] + sizes


def _read_sbm(tokens: _Tokens, field: str, rows: int, cols: int) -> np.ndarray:
    """The dense ``rows x cols`` matrix of a Siconos sparse-block matrix printed by ``SBM_write_in_file``.

    Layout: ``nbblocks``; then (unless it is 0, an all-zero matrix) ``blocknumber0``,
    ``blocknumber1``, the cumulative ``blocksize0`` (block rows) and ``blocksize1`` (block
    columns), ``filled1``, ``filled2``, ``index1_data`` (filled1 row pointers into the blocks),
    ``index2_data`` (filled2 block-column numbers), then each block in row order as its number
    followed by its entries column by column.
    """
    _check_dense_size(field, rows, cols)
    nbblocks = tokens.integer("nbblocks")
    if nbblocks < 0:
        raise InputError("nbblocks", f"must be >= 0, got {nbblocks}")
    out = np.zeros((rows, cols))
    if nbblocks == 0:
        return out
    nb0 = tokens.integer("blocknumber0")
    nb1 = tokens.integer("blocknumber1")
    if not (0 < nb0 <= rows):
        raise InputError("blocknumber0", f"must be in 1..{rows} (the rows), got {nb0}")
    if not (0 < nb1 <= cols):
        raise InputError("blocknumber1", f"must be in 1..{cols} (the columns), got {nb1}")
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
    if index1[0] != 0 or any(b < a for a, b in zip(index1, index1[1:])) or index1[-1] > filled2:
        raise InputError("index1_data", f"row pointers must start at 0, not decrease and end <= {filled2}: {index1}")
    bad = [c for c in index2 if not 0 <= c < nb1]
    if bad:
        raise InputError("index2_data", f"block column {bad[0]} is outside 0..{nb1 - 1}")
    seen = 0
    for brow in range(filled1 - 1):
        r0, r1 = r_off[brow], r_off[brow + 1]
        for num in range(index1[brow], index1[brow + 1]):
            got = tokens.integer("block")
            if got != num:
                raise InputError("block", f"expected block number {num}, got {got}")
            c0, c1 = c_off[index2[num]], c_off[index2[num] + 1]
            values = tokens.floats("block", (r1 - r0) * (c1 - c0))
            out[r0:r1, c0:c1] += values.reshape((r1 - r0, c1 - c0), order="F")
            seen += 1
    if seen != nbblocks:
        raise InputError("index1_data", f"the row pointers list {seen} blocks but nbblocks is {nbblocks}")
    return out


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
        members=("M", "q"),
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


def _validated_fc3d(W: np.ndarray, q: np.ndarray, mu: np.ndarray) -> Fc3dArrays:
    """``validate_fc3d`` (shapes, finiteness, mu >= 0; InputError naming W, q or mu)."""
    from contactmp.solvers.fc3d import validate_fc3d

    return validate_fc3d(W, q, mu)


def _read_fc3d_npz(path: Path) -> Fc3dArrays:
    """``(W, q, mu)`` from a ``.npz`` archive with arrays ``W``, ``q``, ``mu`` (and optionally ``nc``)."""
    arrays = _npz_arrays(path, ("W", "q", "mu"), optional=("nc",))
    for key, arr in arrays.items():
        if arr.dtype.kind not in "biuf":
            raise InputError(key, f"array '{key}' in {path} has dtype {arr.dtype}; expected real numbers")
    W, q, mu = _validated_fc3d(arrays["W"], arrays["q"], arrays["mu"])
    if "nc" in arrays:
        nc = arrays["nc"]
        if nc.size != 1 or (nc.dtype.kind not in "iu" and not float(nc.ravel()[0]).is_integer()):
            raise InputError("nc", f"must be one integer, got {nc!r}")
        if int(nc.ravel()[0]) != mu.shape[0]:
            raise InputError("nc", f"is {int(nc.ravel()[0])} but W, q and mu describe {mu.shape[0]} contacts")
    return W, q, mu


def _read_fc3d_dat(path: Path) -> Fc3dArrays:
    """``(W, q, mu)`` from Siconos' fc3d text format (see the module docstring)."""
    tokens = _Tokens(path)
    dim = tokens.integer("dim")
    if dim != 3:
        raise InputError("dim", f"only three-dimensional problems (dim = 3) are read, got dim = {dim}")
    nc = tokens.integer("nc")
    if nc <= 0:
        raise InputError("nc", f"the number of contacts must be positive, got {nc}")
    W = _read_siconos_matrix(tokens, "W", sparse_block=True)
    if W.shape != (dim * nc, dim * nc):
        raise InputError("W", f"is {W.shape[0]} x {W.shape[1]} but dim * nc = {dim * nc}")
    q = tokens.floats("q", dim * nc)
    mu = tokens.floats("mu", nc)
    rest = tokens.remaining()
    # older Siconos writes an 'isComplete' flag (0 or 1) after mu; text after that is a comment
    if rest and rest[0] in ("0", "1"):
        rest = rest[1:]
    if rest:
        try:
            float(rest[0])
        except ValueError:
            pass  # a trailing comment: ignored on purpose
        else:
            raise InputError("mu", f"{path} has {len(rest)} more numbers after mu (nc = {nc}): wrong size line?")
    return _validated_fc3d(W, q, mu)


#: HDF5 filters whose output we trust to be bounded by _MAX_COMPRESSION: deflate, shuffle,
#: fletcher32, lzf
_HDF5_SAFE_FILTERS = {1: "deflate", 2: "shuffle", 3: "fletcher32", 32000: "lzf"}
#: an upper bound on what one stored byte can decompress to (zlib's limit is about 1032:1)
_MAX_COMPRESSION = 1100


def _h5_dataset(group: Any, name: str, field: str) -> Any:
    """The dataset ``name`` of ``group``: a hard link to plain data stored inside this file.

    Refuses (InputError naming ``field``) a missing name, a group, a soft or external link, a
    virtual dataset, raw data stored in an external file, an untrusted filter, and a dataset
    whose declared size is beyond what its stored bytes can hold.
    """
    import h5py

    link = group.get(name, getlink=True)
    if link is None:
        raise InputError(field, f"'{group.name}/{name}' is missing")
    if not isinstance(link, h5py.HardLink):
        raise InputError(field, f"'{group.name}/{name}' is a {type(link).__name__}; only data inside the file is read")
    ds = group[name]
    if not isinstance(ds, h5py.Dataset):
        raise InputError(field, f"'{ds.name}' is a group, expected a dataset")
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
    declared = int(ds.size) * ds.dtype.itemsize
    stored = int(ds.id.get_storage_size())
    if declared > 0 and declared > _MAX_COMPRESSION * stored:
        raise InputError(field, f"'{ds.name}' declares {ds.size} entries ({declared} bytes) but stores "
                         f"only {stored} bytes; refused before allocating")
    return ds


def _h5_vector(group: Any, name: str, field: str, kind: str, length: int | None = None) -> np.ndarray:
    """A 1-D dataset (a scalar counts as length 1) of dtype kind in ``kind``, read whole."""
    ds = _h5_dataset(group, name, field)
    if ds.dtype.kind not in kind:
        want = "integers" if kind == "iu" else "real numbers"
        raise InputError(field, f"'{ds.name}' has dtype {ds.dtype}; expected {want}")
    if ds.ndim > 1 and not all(d == 1 for d in ds.shape[1:]):
        raise InputError(field, f"'{ds.name}' has shape {ds.shape}; expected a vector")
    if length is not None and ds.size != length:
        raise InputError(field, f"'{ds.name}' has {ds.size} entries, expected {length}")
    return np.asarray(ds[()]).reshape(-1)


def _h5_int(group: Any, name: str, field: str) -> int:
    """A dataset holding one integer (FCLIB stores them as 1-element int arrays)."""
    v = _h5_vector(group, name, field, "iu", length=1)
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


def _fclib_matrix(group: Any, m: int, n: int) -> np.ndarray:
    """The dense ``m x n`` matrix of an FCLIB sparse matrix group (compressed rows/columns or triplets)."""
    nz = _h5_int(group, "nz", "W/nz")
    x = _h5_vector(group, "x", "W/x", "biuf").astype(np.float64)
    if nz == -2 or nz == -1:
        major, minor = (m, n) if nz == -2 else (n, m)
        ptr = _h5_vector(group, "p", "W/p", "iu", length=major + 1).astype(np.int64)
        idx = _h5_vector(group, "i", "W/i", "iu").astype(np.int64)
        nnz = _check_pointers("W/p", ptr, min(idx.size, x.size))
        idx, x = idx[:nnz], x[:nnz]
        _check_indices("W/i", idx, minor, "column" if nz == -2 else "row")
        outer = np.repeat(np.arange(major, dtype=np.int64), np.diff(ptr))
        rows, cols = (outer, idx) if nz == -2 else (idx, outer)
    elif nz >= 0:
        rows = _h5_vector(group, "p", "W/p", "iu").astype(np.int64)
        cols = _h5_vector(group, "i", "W/i", "iu").astype(np.int64)
        for name, arr in (("W/p", rows), ("W/i", cols), ("W/x", x)):
            if arr.size < nz:
                raise InputError(name, f"holds {arr.size} entries but nz = {nz} triplets are announced")
        rows, cols, x = rows[:nz], cols[:nz], x[:nz]
        _check_indices("W/p", rows, m, "row")
        _check_indices("W/i", cols, n, "column")
    else:
        raise InputError("W/nz", f"must be -2 (compressed rows), -1 (compressed columns) or >= 0 "
                         f"(triplets), got {nz}")
    # duplicates are summed, as CSparse's cs_compress does
    return np.bincount(rows * n + cols, weights=x, minlength=m * n).reshape(m, n)


def _read_fclib_hdf5(path: Path) -> Fc3dArrays:
    """``(W, q, mu)`` from an FCLIB local problem (see the module docstring); never reads the solution."""
    import h5py

    try:
        fh = h5py.File(path, "r")
    except OSError as exc:
        raise InputError("path", f"{path} is not a readable HDF5 file ({exc})") from None
    with fh:
        link = fh.get("fclib_local", getlink=True)
        if link is None:
            if "fclib_global" in fh:
                raise InputError("fclib_local", f"{path} holds an FCLIB global problem (fclib_global); "
                                 "only local problems (W, q, mu) are read")
            raise InputError("fclib_local", f"{path} has no group 'fclib_local' (not an FCLIB local problem)")
        if not isinstance(link, h5py.HardLink) or not isinstance(fh["fclib_local"], h5py.Group):
            raise InputError("fclib_local", "must be a group inside the file")
        g = fh["fclib_local"]
        spacedim = _h5_int(g, "spacedim", "spacedim")
        if spacedim != 3:
            raise InputError("spacedim", f"only three-dimensional problems (spacedim = 3) are read, got {spacedim}")
        wg = g.get("W")
        if not isinstance(wg, h5py.Group) or not isinstance(g.get("W", getlink=True), h5py.HardLink):
            raise InputError("W", "'fclib_local/W' must be a group (an FCLIB sparse matrix)")
        m = _h5_int(wg, "m", "W/m")
        n = _h5_int(wg, "n", "W/n")
        if m <= 0 or m != n or m % 3:
            raise InputError("W", f"must be square with 3 nc rows, got m = {m}, n = {n}")
        _check_dense_size("W", m, n)
        vg = g.get("vectors")
        if not isinstance(vg, h5py.Group) or not isinstance(g.get("vectors", getlink=True), h5py.HardLink):
            raise InputError("vectors", "'fclib_local/vectors' must be a group holding q and mu")
        q = _h5_vector(vg, "q", "q", "biuf", length=m)
        mu = _h5_vector(vg, "mu", "mu", "biuf", length=m // 3)
        W = _fclib_matrix(wg, m, n)
    return _validated_fc3d(W, q, mu)


#: fc3d formats, tried in order on the file's first bytes
FC3D_FORMATS: tuple[Format[Fc3dArrays], ...] = (
    Format(
        name="npz",
        description="a NumPy .npz archive (zip) with float arrays W (3nc x 3nc), q (3nc) and mu (nc)",
        sniff=_is_zip,
        read=_read_fc3d_npz,
        members=("W", "q", "mu"),
    ),
    Format(
        name="siconos-fc3d-dat",
        description="Siconos' fc3d text format starting 'dim nc storage rows cols' with dim = 3 and "
        "rows == cols == 3 nc",
        sniff=_is_siconos_fc3d_dat,
        read=_read_fc3d_dat,
    ),
    Format(
        name="fclib-hdf5",
        description="an FCLIB HDF5 file with a local problem (group fclib_local)",
        sniff=_is_hdf5,
        read=_read_fclib_hdf5,
    ),
)


def load_fc3d(path: str | os.PathLike[str]) -> Fc3dArrays:
    """Read fc3d(W, q, mu) from ``path``: ``(W, q, mu)`` as float64 arrays (3nc x 3nc, 3nc, nc).

    The problem: find r in K_mu = prod_j {||r_jT|| <= mu_j r_jn} with u = W r + q and
    u + mu ||u_T|| e_n in K_mu^*, r . (u + mu ||u_T|| e_n) = 0 (contact order normal, t1, t2).
    The reader is picked by content (see :data:`FC3D_FORMATS`): ``.npz``, Siconos ``.dat``
    (dense or sparse-block W) or FCLIB HDF5. Raises :class:`InputError` naming ``"path"`` for
    content no reader recognises and naming the field (``"W"``, ``"q"``, ``"mu"``, ``"W/p"``,
    ``"spacedim"``, ``"nbblocks"``, ...) for a recognised file that is malformed.
    """
    return _dispatch(path, FC3D_FORMATS, "fc3d")


#: problem classes in the order :func:`load_problem` tries them: (kind, formats)
PROBLEM_KINDS: tuple[tuple[str, tuple[Format[Any], ...]], ...] = (
    ("lcp", LCP_FORMATS),
    ("fc3d", FC3D_FORMATS),
)


def _zip_members(path: Path) -> set[str] | None:
    """The array names of a ``.npz`` (its member names without ``.npy``), from the zip directory only."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    return {n[:-4] if n.endswith(".npy") else n for n in names}


def load_problem(path: str | os.PathLike[str]) -> tuple[str, Any]:
    """Read a complementarity problem of any known class: ``("lcp", (M, q))`` or ``("fc3d", (W, q, mu))``.

    The class and the format are decided by the file's content: text and HDF5 files by their
    sniffers (:data:`PROBLEM_KINDS`), ``.npz`` archives by the arrays they hold (``M`` for an LCP,
    ``W`` for fc3d; read from the zip directory before any data). Raises :class:`InputError`
    naming ``"path"`` when no class claims the file, and naming the field for malformed content.
    """
    path = Path(path)
    head = _read_head(path)
    members: set[str] | None = None
    claimed: list[tuple[str, Format[Any]]] = []
    for kind, formats in PROBLEM_KINDS:
        for fmt in formats:
            if not fmt.sniff(head):
                continue
            if fmt.members:
                if members is None:
                    members = _zip_members(path) or set()
                if fmt.members[0] not in members:  # the matrix's name tells the class
                    continue
            claimed.append((kind, fmt))
    if not claimed:
        if members:  # a readable archive holding neither M nor W
            raise InputError("path", f"{path} is a .npz archive with {', '.join(sorted(members))}; expected "
                             "arrays M and q (LCP) or W, q and mu (fc3d)")
        expected = "; or ".join(f"{kind}: {fmt.description}" for kind, formats in PROBLEM_KINDS for fmt in formats)
        raise InputError("path", f"{path} is not a recognised problem file (the content decides, not the "
                         f"extension); expected {expected}")
    kind, fmt = claimed[0]
    return kind, fmt.read(path)
