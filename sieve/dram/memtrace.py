"""Memory-request traces for front end 1 (sieve.dram.simulate_requests).

A :class:`RequestTrace` is three arrays in memory: byte address, write flag and (optionally)
arrival cycle. It can come from numpy directly, from a file, or from the synthetic patterns used
by the benchmarks (sequential or uniform random, seeded). A :class:`TraceFile` is a trace
*streamed* from a file in chunks (:func:`open_trace`): ``sieve dram --trace`` and
``simulate_requests`` read it block by block, so memory is bounded by the controller's queues
and a read buffer, not by the file. Two file formats:

* a Ramulator 2 **LoadStore** trace (``LD 0x...`` / ``ST 0x...``, one request per line; the
  same file runs through Ramulator 2.0/2.1). Addresses follow Ramulator 2's rule (``0x``/``0X``
  then hex digits, or decimal digits) with ASCII digits only; blank lines and lines starting
  with ``#`` are skipped. Parsed in compiled code (``sieve.dram._loadstore``) for the common
  line; every other line goes through :func:`_parse_line`, the reference, which names the
  file, line and field of the first malformed line. :func:`read_loadstore_python` is the pure
  Python reader the tests compare the compiled one with.
* a numpy **address trace**, for traces generated with numpy (docs/user-guide.md):
  a ``.npy`` file holding either a 1-D integer array of byte addresses (all reads) or a 1-D
  structured array with an integer field ``addr`` and optional fields ``is_write`` (bool or
  0/1) and ``arrive_ck`` (integer, non-decreasing); or a ``.npz`` archive with the members
  ``addr`` and optional ``is_write`` and ``arrive_ck`` (1-D, one length). The format is told
  by the file's first bytes, not its name. Object arrays are refused (nothing is unpickled).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sieve.errors import ConfigError, NotBuiltError, TraceFormatError
from sieve.lazy import numpy as np
from sieve.validate import check_int, check_int_array, check_memory, check_name, check_number

__all__ = ["CHUNK_REQUESTS", "MAX_LINE_BYTES", "NPZ_MEMBERS", "RequestTrace", "TraceFile",
           "load_loadstore_trace", "open_trace", "read_loadstore_python", "save_loadstore_trace",
           "synthetic_trace"]

#: Longest line a LoadStore trace may have ("ST 0x" + 16 hex digits is 21 bytes; comments may
#: be longer). A longer line means the file is not a trace.
MAX_LINE_BYTES = 4096
#: Bytes per request a synthetic trace needs while it is built (int64 address, bool write flag,
#: float64 uniform draws of the write fraction and int64 temporaries of the random pattern).
SYNTHETIC_BYTES_PER_REQUEST = 33
#: Requests per chunk when a trace is streamed (64 Ki: ~2.4 MB of decoded fields per chunk).
CHUNK_REQUESTS = 1 << 16
#: Bytes read from a trace file at a time.
READ_BLOCK_BYTES = 1 << 20
#: Members of a .npz address trace (``addr`` required).
NPZ_MEMBERS = ("addr", "is_write", "arrive_ck")


@dataclass(frozen=True)
class RequestTrace:
    """Requests in issue order.

    Attributes:
        addr: byte addresses (int64, >= 0).
        is_write: bool array (False = read).
        arrive_ck: earliest cycle (memory CK) each request may enter the controller, or None
            for "as soon as the queue has room" (Ramulator's LoadStoreTrace behaviour).
        source: where it came from (file path or generator description).
    """

    addr: np.ndarray
    is_write: np.ndarray
    arrive_ck: np.ndarray | None = None
    source: str = "arrays"

    def __post_init__(self):
        who = "request trace"
        addr = check_int_array(who, "addr", self.addr, lo=0)
        w = np.asarray(self.is_write)
        if w.dtype != bool and not (w.dtype.kind in "iu" and (w.size == 0 or (
                int(w.min()) >= 0 and int(w.max()) <= 1))):
            raise ConfigError(f"{who}: is_write must be booleans (or 0/1), got dtype {w.dtype}")
        w = np.ascontiguousarray(w, dtype=bool)
        if w.shape != addr.shape:
            raise ConfigError(f"{who}: addr and is_write must be 1-D arrays of one length")
        object.__setattr__(self, "addr", addr)
        object.__setattr__(self, "is_write", w)
        check_name(who, "source", self.source)
        if self.arrive_ck is not None:
            arr = check_int_array(who, "arrive_ck", self.arrive_ck, lo=0)
            if arr.shape != addr.shape:
                raise ConfigError(f"{who}: arrive_ck must have one entry per request")
            if arr.size and np.any(np.diff(arr) < 0):
                raise ConfigError(f"{who}: arrive_ck must be >= 0 and non-decreasing")
            object.__setattr__(self, "arrive_ck", arr)

    def __len__(self) -> int:
        return int(self.addr.shape[0])

    @property
    def n_reads(self) -> int:
        return int(len(self) - self.is_write.sum())

    @property
    def n_writes(self) -> int:
        return int(self.is_write.sum())

    def chunks(self, max_n: int = CHUNK_REQUESTS
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """The requests in order, ``max_n`` at a time: (addr, is_write, arrive_ck or None)."""
        max_n = check_int("request trace", "chunk size", max_n, lo=1)
        for i in range(0, len(self), max_n):
            yield (self.addr[i:i + max_n], self.is_write[i:i + max_n],
                   None if self.arrive_ck is None else self.arrive_ck[i:i + max_n])


def _parse_address(a: bytes) -> int | None:
    """Ramulator 2 LoadStoreTrace rule: ``0x``/``0X`` + hex digits, else decimal digits."""
    if a[:2] in (b"0x", b"0X"):
        digits, base = a[2:], 16
        ok = digits and all(c in b"0123456789abcdefABCDEF" for c in digits)
    else:
        digits, base = a, 10
        ok = digits.isdigit()  # bytes.isdigit: ASCII 0-9 only
    return int(digits, base) if ok else None


#: The common line (no comment, at most 15 hex / 18 decimal digits, so always < 2**63), taken
#: in one step; any other line goes through _parse_line, the authoritative check, which names
#: the first bad line.
_FAST = re.compile(rb"[ \t]*(LD|ST)[ \t]+(?:0[xX]([0-9a-fA-F]{1,15})|([0-9]{1,18}))[ \t\r]*")


def _parse_line(raw: bytes, who: str, lineno: int) -> tuple[int, int] | None:
    """(is_write, address) of one line, None for a blank or comment line; else the error."""
    if len(raw) > MAX_LINE_BYTES:
        raise TraceFormatError(f"{who} line {lineno}: longer than {MAX_LINE_BYTES} bytes; not "
                               f"a LoadStore trace")
    if not raw.isascii():
        raise TraceFormatError(f"{who} line {lineno}: not ASCII text; expected "
                               f"'<LD|ST> <address>'")
    s = raw.strip()
    if not s or s.startswith(b"#"):
        return None
    parts = s.split()
    if len(parts) != 2:
        raise TraceFormatError(f"{who} line {lineno}: expected '<LD|ST> <address>', got "
                               f"{s[:60].decode()!r}")
    op, a = parts
    if op not in (b"LD", b"ST"):
        raise TraceFormatError(f"{who} line {lineno}: field 1 (operation) must be LD or ST, "
                               f"got {op[:20].decode()!r}")
    v = _parse_address(a)
    if v is None and a[:1] == b"-" and _parse_address(a[1:]) is not None:
        v = -1  # a negative number: reported as out of range below
    if v is None:
        raise TraceFormatError(f"{who} line {lineno}: field 2 (address) is not a number "
                               f"(0x<hex> or decimal digits): {a[:40].decode()!r}")
    if not 0 <= v < 1 << 63:
        raise TraceFormatError(f"{who} line {lineno}: field 2 (address) out of range "
                               f"[0, 2**63): {a[:40].decode()!r}")
    return int(op == b"ST"), v


def read_loadstore_python(path: str | Path) -> RequestTrace:
    """The reference LoadStore reader, in pure Python (the tests compare the compiled reader
    of :func:`load_loadstore_trace` and :func:`open_trace` with it).

    The file is read in 1 MiB blocks, lines at most :data:`MAX_LINE_BYTES` long, lines split
    at ``\\n`` and taken in order, and it is rejected at its first malformed line; the
    requests take 9 bytes each.

    Raises:
        TraceFormatError: naming the file, line and field on malformed input.
    """
    p = Path(path)
    who = f"trace {str(p)!r}"
    addrs = array("q")
    writes = bytearray()
    fast, add_addr, add_write = _FAST.fullmatch, addrs.append, writes.append
    try:
        with open(p, "rb") as fh:
            lineno, tail = 0, b""
            while True:
                block = fh.read(READ_BLOCK_BYTES)
                lines = (tail + block).split(b"\n")
                tail = lines.pop() if block else b""
                for raw in lines:
                    lineno += 1
                    m = fast(raw) if len(raw) <= MAX_LINE_BYTES else None
                    if m is not None:
                        op, h, d = m.groups()
                        add_addr(int(h, 16) if h is not None else int(d))
                        add_write(op == b"ST")
                        continue
                    rec = _parse_line(raw, who, lineno)
                    if rec is not None:
                        add_write(rec[0])
                        add_addr(rec[1])
                if len(tail) > MAX_LINE_BYTES:
                    _parse_line(tail, who, lineno + 1)  # raises: too long
                if not block:
                    break
    except OSError as exc:
        raise TraceFormatError(f"{who}: cannot read ({exc.strerror})") from None
    if not addrs:
        raise TraceFormatError(f"{who}: no requests")
    return RequestTrace(np.frombuffer(addrs, dtype=np.int64),
                        np.frombuffer(bytes(writes), dtype=np.uint8).view(bool), source=str(p))


def load_loadstore_trace(path: str | Path) -> RequestTrace:
    """Read a whole Ramulator 2 LoadStore trace into memory: one ``LD <addr>`` or
    ``ST <addr>`` per line (to stream a large file instead, use :func:`open_trace`).

    Addresses are hex (``0x...``) or decimal, in ASCII digits (Python-only forms such as
    ``1_000`` or ``0o17`` are refused). Blank lines and lines starting with ``#`` are skipped.
    Parsed by the compiled reader; same result and errors as :func:`read_loadstore_python`.

    Raises:
        TraceFormatError: naming the file, line and field on malformed input.
    """
    tf = open_trace(path)
    if tf.format != "loadstore":
        raise TraceFormatError(f"trace {tf.source!r}: a numpy {tf.format} file, not a "
                               "LoadStore text trace (open it with open_trace)")
    parts = [(a, w) for a, w, _ in tf.chunks()]
    return RequestTrace(np.concatenate([a for a, _ in parts]),
                        np.concatenate([w for _, w in parts]), source=tf.source)


def _compiled_reader():
    try:
        from sieve.dram import _loadstore
    except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
        raise NotBuiltError.of("trace reader", "sieve.dram._loadstore", exc) from None
    return _loadstore.LoadStoreReader


_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


class TraceFile:
    """A request trace streamed from a file (see the module docstring for the formats).

    Opening checks that the file can be read and, for numpy traces, their headers (dtype,
    shape, members); the requests are checked chunk by chunk as :meth:`chunks` yields them, so
    a malformed request stops the run that reads it with one error naming the file and the
    line or record.

    Attributes:
        path: the file.
        format: ``"loadstore"``, ``"npy"`` or ``"npz"``.
        source: the file name (recorded with results).
        n_requests: number of requests of a numpy trace (None for a LoadStore file, whose
            length is known only once read).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.source = str(self.path)
        self._who = f"trace {self.source!r}"
        #: an open pipe, FIFO or device (``/dev/stdin``, ``<(...)``): sniffed without consuming
        #: (peek) and then read once, by the first :meth:`chunks`
        self._stream = None
        self._consumed = False
        try:
            st = os.stat(self.path)
            if stat.S_ISDIR(st.st_mode):
                raise TraceFormatError(f"{self._who}: is a folder, expected a trace file")
            if stat.S_ISREG(st.st_mode):
                with open(self.path, "rb") as fh:
                    head = fh.read(8)
            else:
                fh = open(self.path, "rb")
                head = fh.peek(8)[:8]
                if head.startswith(_NPY_MAGIC) or head[:4] in _ZIP_MAGIC:
                    fh.close()
                    raise TraceFormatError(
                        f"{self._who}: a numpy trace must be a regular file (it is read by "
                        "seeking); a pipe or FIFO may carry a LoadStore text trace only")
                self._stream = fh
        except OSError as exc:
            raise TraceFormatError(f"{self._who}: cannot read ({exc.strerror})") from None
        self.n_requests: int | None = None
        if head.startswith(_NPY_MAGIC):
            self.format = "npy"
        elif head[:4] in _ZIP_MAGIC:
            self.format = "npz"
        else:
            self.format = "loadstore"
        if self.format != "loadstore":
            with self._open_binary() as members:
                self.n_requests = members[0][1]

    def __repr__(self) -> str:
        return f"TraceFile({self.source!r}, format={self.format!r})"

    # ---- chunks ------------------------------------------------------------------------------
    def chunks(self, max_n: int = CHUNK_REQUESTS
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """The requests in file order, at most ``max_n`` at a time: (addr int64, is_write
        bool, arrive_ck int64 or None).

        Raises:
            TraceFormatError: unreadable file, malformed line or record, or no requests.
        """
        max_n = check_int("trace file", "chunk size", max_n, lo=1)
        if self.format == "loadstore":
            yield from self._loadstore_chunks(max_n)
        else:
            yield from self._binary_chunks(max_n)

    def chunk_buffers(self, max_n: int = CHUNK_REQUESTS
                      ) -> Iterator[tuple[memoryview, memoryview, None, int]]:
        """A LoadStore text trace's requests in file order, at most ``max_n`` at a time, read
        into two buffers that every chunk reuses, without numpy: (addresses int64, write
        flags int8 0 / 1, None (no arrival times), number of writes), each buffer a
        ``memoryview`` of the chunk's length. A chunk is overwritten by the next one: use it
        before asking for the next. Same requests and errors as :meth:`chunks`.

        Raises:
            TraceFormatError: as :meth:`chunks`; ConfigError: not a LoadStore trace.
        """
        max_n = check_int("trace file", "chunk size", max_n, lo=1)
        if self.format != "loadstore":
            raise ConfigError(f"{self._who}: chunk_buffers reads LoadStore text traces; this "
                              f"is a numpy {self.format} file (use chunks)")
        if self._consumed:
            raise TraceFormatError(f"{self._who}: a pipe or FIFO is read once, and this one "
                                   "was read already; save the trace to a file to read it again")
        addr, wr = memoryview(array("q", bytes(8 * max_n))), memoryview(array("b", bytes(max_n)))
        wr_u8 = wr.cast("B")  # (the reader fills unsigned bytes)
        total = 0
        try:
            if self._stream is not None:
                self._consumed = True
                opened, self._stream = self._stream, None
            else:
                opened = open(self.path, "rb")
            with opened as fh:
                rd = _compiled_reader()(fh, self._who, _parse_line, MAX_LINE_BYTES,
                                        READ_BLOCK_BYTES)
                while n := rd.read_into(addr, wr_u8):
                    total += n
                    w = wr[:n]
                    yield addr[:n], w, None, w.tobytes().count(1)
        except OSError as exc:
            raise TraceFormatError(f"{self._who}: cannot read ({exc.strerror})") from None
        if not total:
            raise TraceFormatError(f"{self._who}: no requests")

    def _loadstore_chunks(self, max_n: int):
        # (numpy copies of the reused buffers: a chunk outlives the next read)
        for a, w, _, _ in self.chunk_buffers(max_n):
            yield np.array(a, dtype=np.int64), np.array(w, dtype=np.int8).view(bool), None

    # ---- numpy traces --------------------------------------------------------------------------
    def _open_binary(self):
        return _BinaryMembers(self.path, self.format, self._who)

    def _binary_chunks(self, max_n: int):
        last_arrive = 0
        done = 0
        with self._open_binary() as members:
            n = members[0][1]
            if n == 0:
                raise TraceFormatError(f"{self._who}: no requests")
            while done < n:
                k = min(max_n, n - done)
                cols = {name: _read_records(fh, dt, k, self._who, name)
                        for name, _, fh, dt in members}
                addr, w, arr = _check_records(cols, self._who, done, last_arrive)
                if arr is not None and len(arr):
                    last_arrive = int(arr[-1])
                done += k
                if done == n:
                    _check_end(members, self._who)
                yield addr, w, arr


def open_trace(path: str | Path) -> TraceFile:
    """Open a request trace file for streaming: a LoadStore text trace, or a numpy ``.npy`` /
    ``.npz`` address trace (module docstring).

    Raises:
        TraceFormatError: the file cannot be read, or a numpy trace has a bad header.
    """
    return TraceFile(path)


class _BinaryMembers:
    """Context manager over the arrays of a numpy trace: a list of (name, length, stream,
    dtype) with ``addr`` first, each stream positioned at its first record."""

    def __init__(self, path: Path, fmt: str, who: str):
        self.path, self.fmt, self.who = path, fmt, who
        self._zf = None
        self._files: list = []

    def __enter__(self) -> list:
        try:
            if self.fmt == "npy":
                fh = open(self.path, "rb")
                self._files.append(fh)
                shape, dt = _npy_header(fh, self.who)
                if dt.names is None:
                    _check_dtype("addr", dt, self.who)
                    return [("addr", int(shape[0]), fh, dt)]
                return self._structured(shape, dt, fh)
            import zipfile  # only for .npz (its import is a few ms of every start)

            try:
                self._zf = zipfile.ZipFile(self.path)
                names = self._zf.namelist()
            except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
                raise TraceFormatError(f"{self.who}: not a valid .npz archive ({exc})") from None
            members = {}
            for name in names:
                key = name[:-4] if name.endswith(".npy") else name
                if key not in NPZ_MEMBERS:
                    raise TraceFormatError(f"{self.who}: unknown member {name!r} (members: "
                                           f"{', '.join(NPZ_MEMBERS)}; addr required)")
                members[key] = name
            if "addr" not in members:
                raise TraceFormatError(f"{self.who}: no 'addr' member (members: "
                                       f"{', '.join(NPZ_MEMBERS)}; addr required)")
            out = []
            for key in NPZ_MEMBERS:
                if key not in members:
                    continue
                fh = self._zf.open(members[key])
                self._files.append(fh)
                shape, dt = _npy_header(fh, f"{self.who} member {key!r}")
                if dt.names is not None:
                    raise TraceFormatError(f"{self.who} member {key!r}: a structured array; "
                                           "members must be plain 1-D arrays")
                _check_dtype(key, dt, f"{self.who} member {key!r}")
                out.append((key, int(shape[0]), fh, dt))
            if len({n for _, n, _, _ in out}) != 1:
                raise TraceFormatError(f"{self.who}: members of different lengths ("
                                       + ", ".join(f"{k} {n}" for k, n, _, _ in out) + ")")
            return out
        except OSError as exc:
            self.__exit__(None, None, None)
            raise TraceFormatError(f"{self.who}: cannot read ({exc.strerror or exc})") from None
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _structured(self, shape, dt: np.dtype, fh) -> list:
        unknown = [f for f in dt.names if f not in NPZ_MEMBERS]
        if unknown or "addr" not in dt.names:
            raise TraceFormatError(f"{self.who}: structured array with fields "
                                   f"{', '.join(dt.names)}; expected 'addr' and optionally "
                                   "'is_write' and 'arrive_ck'")
        for f in dt.names:
            _check_dtype(f, dt[f], self.who)
        return [("__records__", int(shape[0]), fh, dt)]

    def __exit__(self, *exc) -> None:
        for fh in self._files:
            try:
                fh.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._files = []
        if self._zf is not None:
            self._zf.close()
            self._zf = None


def _zip_errors() -> tuple:
    """The archive errors to catch around a member's reads: zipfile's, once it is imported (a
    .npz is opened with it; a plain .npy file cannot raise them)."""
    zf = sys.modules.get("zipfile")
    return (zf.BadZipFile,) if zf is not None else ()


def _npy_header(fh, who: str) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of the .npy stream at its start; refuses object dtypes and bad
    headers."""
    from numpy.lib import format as npf

    try:
        major, _minor = npf.read_magic(fh)
        if major == 1:
            shape, fortran, dt = npf.read_array_header_1_0(fh)
        elif major in (2, 3):
            shape, fortran, dt = npf.read_array_header_2_0(fh)
        else:
            raise ValueError(f"format version {major} unknown")
    except (ValueError, SyntaxError, TypeError) as exc:
        raise TraceFormatError(f"{who}: not a valid .npy array ({exc})") from None
    except _zip_errors() as exc:
        raise TraceFormatError(f"{who}: damaged archive ({exc})") from None
    if dt.hasobject:
        raise TraceFormatError(f"{who}: holds Python objects (dtype {dt}); a trace must be "
                               "numbers (objects are never unpickled)")
    if len(shape) != 1:
        raise TraceFormatError(f"{who}: expected a 1-D array, got shape {shape}")
    return shape, dt


#: Allowed dtype kinds of each field of a numpy trace.
_KINDS = {"addr": ("iu", "integers"), "is_write": ("biu", "booleans or 0/1"),
          "arrive_ck": ("iu", "integers")}


def _check_dtype(name: str, dt: np.dtype, who: str) -> None:
    kinds, text = _KINDS[name]
    if dt.kind not in kinds or dt.shape != () or dt.itemsize > 8:
        raise TraceFormatError(f"{who}: {name} must be {text}, got dtype {dt}")


def _read_records(fh, dt: np.dtype, k: int, who: str, name: str) -> np.ndarray:
    want = k * dt.itemsize
    try:
        data = fh.read(want)
    except _zip_errors() as exc:
        raise TraceFormatError(f"{who}: damaged archive ({exc})") from None
    if len(data) != want:
        raise TraceFormatError(f"{who}: truncated: {name if name != '__records__' else 'array'}"
                               " holds fewer records than its header says")
    return np.frombuffer(data, dtype=dt, count=k)


def _check_end(members: list, who: str) -> None:
    """Every array ends where its header says (reading past the end also makes a .npz member
    check its CRC)."""
    for name, _, fh, _ in members:
        try:
            extra = fh.read(1)
        except _zip_errors() as exc:
            raise TraceFormatError(f"{who}: damaged archive ({exc})") from None
        if extra:
            what = "the array" if name == "__records__" else name
            raise TraceFormatError(f"{who}: {what} holds more data than its header says")


def _check_records(cols: dict, who: str, first: int, last_arrive: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Validate one chunk of a numpy trace; (addr int64, is_write bool, arrive_ck or None)."""
    if "__records__" in cols:
        rec = cols["__records__"]
        cols = {f: rec[f] for f in rec.dtype.names}
    k = len(cols["addr"])

    def bad(name: str, i: int, v, rule: str) -> TraceFormatError:
        return TraceFormatError(f"{who} record {first + i}: {name} {v!r} {rule}")

    a = cols["addr"]
    if a.dtype.kind == "u":
        over = np.flatnonzero(a > np.iinfo(np.int64).max) if a.dtype.itemsize == 8 else []
        if len(over):
            raise bad("address", int(over[0]), int(a[over[0]]), "out of range [0, 2**63)")
    else:
        neg = np.flatnonzero(a < 0)
        if len(neg):
            raise bad("address", int(neg[0]), int(a[neg[0]]), "out of range [0, 2**63)")
    addr = np.ascontiguousarray(a, dtype=np.int64)
    w = cols.get("is_write")
    if w is None:
        wr = np.zeros(k, dtype=bool)
    elif w.dtype == bool:
        wr = np.ascontiguousarray(w)
    else:
        badw = np.flatnonzero((w != 0) & (w != 1))
        if len(badw):
            raise bad("is_write", int(badw[0]), int(w[badw[0]]), "is not 0 or 1")
        wr = np.ascontiguousarray(w != 0)
    arr = cols.get("arrive_ck")
    if arr is not None:
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
            over = np.flatnonzero(arr > np.iinfo(np.int64).max)
            if len(over):
                raise bad("arrive_ck", int(over[0]), int(arr[over[0]]), "out of range")
        arr = np.ascontiguousarray(arr, dtype=np.int64)
        neg = np.flatnonzero(arr < 0)
        if len(neg):
            raise bad("arrive_ck", int(neg[0]), int(arr[neg[0]]), "must be >= 0")
        dec = np.flatnonzero(np.diff(np.concatenate(([last_arrive], arr))) < 0)
        if len(dec):
            raise bad("arrive_ck", int(dec[0]), int(arr[dec[0]]),
                      "is below the previous request's (arrive_ck must be non-decreasing)")
    return addr, wr, arr


def save_loadstore_trace(trace: RequestTrace, path: str | Path) -> Path:
    """Write a trace in Ramulator 2 LoadStore format (atomic)."""
    from sieve.outputs import atomic_write

    ops = np.where(trace.is_write, "ST", "LD")
    with atomic_write(path) as fh:
        for op, a in zip(ops, trace.addr):
            fh.write(f"{op} 0x{int(a):x}\n")
    return Path(path)


def synthetic_trace(pattern: str, n: int, *, stride_bytes: int = 64,
                    span_bytes: int = 1 << 30, write_fraction: float = 0.0,
                    seed: int = 0) -> RequestTrace:
    """Sequential or uniform-random requests (the benchmark patterns of ramulator2.md §1).

    Args:
        pattern: "seq" (addresses 0, stride, 2*stride, ...) or "rand" (uniform,
            stride-aligned, in [0, span_bytes)).
        n: number of requests (>= 1).
        stride_bytes: request size / alignment (>= 1).
        span_bytes: address range of the random pattern (>= stride_bytes).
        write_fraction: fraction of writes, drawn independently per request.
        seed: RNG seed >= 0 (recorded in ``source``).

    Raises:
        ConfigError: a bad value (names the argument and its range), or more requests than
            fit in memory (checked before allocating).
    """
    who = "synthetic trace"
    check_name(who, "pattern", pattern, ("rand", "seq"))
    n = check_int(who, "number of requests", n, lo=1)
    stride_bytes = check_int(who, "stride_bytes", stride_bytes, lo=1)
    span_bytes = check_int(who, "span_bytes", span_bytes, lo=stride_bytes)
    write_fraction = check_number(who, "write_fraction", write_fraction, lo=0.0, hi=1.0)
    seed = check_int(who, "seed", seed, lo=0)
    if pattern == "seq" and (n - 1) * stride_bytes >= 1 << 63:
        raise ConfigError(f"{who}: {n} requests {stride_bytes} bytes apart run past address "
                          f"2**63")
    check_memory(f"{who} of {n} requests", n * SYNTHETIC_BYTES_PER_REQUEST,
                 "lower the number of requests")
    rng = np.random.default_rng(seed)
    if pattern == "seq":
        addr = np.arange(n, dtype=np.int64) * stride_bytes
    else:
        addr = rng.integers(0, span_bytes // stride_bytes, size=n, dtype=np.int64) * stride_bytes
    writes = rng.random(n) < write_fraction if write_fraction > 0 else np.zeros(n, dtype=bool)
    return RequestTrace(addr, writes, source=f"synthetic {pattern} n={n} stride={stride_bytes} "
                                              f"writes={write_fraction} seed={seed}")
