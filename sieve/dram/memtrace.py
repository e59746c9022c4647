"""Memory-request traces for front end 1 (sieve.dram.simulate_requests).

A :class:`RequestTrace` is three arrays: byte address, write flag and (optionally) arrival
cycle. It can come from numpy directly, from a Ramulator 2 LoadStore trace file (``LD 0x...`` /
``ST 0x...``, one request per line; the same file runs through Ramulator 2.0/2.1), or from the
synthetic patterns used by the benchmarks (sequential or uniform random, seeded).

The file reader streams: it reads 1 MiB blocks (lines at most :data:`MAX_LINE_BYTES`), stores
each request in 9 bytes, and stops at the first malformed line, so a junk file is rejected
after its first block instead of after being read whole. Addresses follow Ramulator 2's rule
(``0x``/``0X`` then hex digits, or decimal digits) with ASCII digits only.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sieve.errors import ConfigError, TraceFormatError
from sieve.validate import check_int, check_int_array, check_memory, check_name, check_number

__all__ = ["MAX_LINE_BYTES", "RequestTrace", "load_loadstore_trace", "save_loadstore_trace",
           "synthetic_trace"]

#: Longest line a LoadStore trace may have ("ST 0x" + 16 hex digits is 21 bytes; comments may
#: be longer). A longer line means the file is not a trace.
MAX_LINE_BYTES = 4096
#: Bytes per request a synthetic trace needs while it is built (int64 address, bool write flag,
#: float64 uniform draws of the write fraction and int64 temporaries of the random pattern).
SYNTHETIC_BYTES_PER_REQUEST = 33


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


def load_loadstore_trace(path: str | Path) -> RequestTrace:
    """Read a Ramulator 2 LoadStore trace: one ``LD <addr>`` or ``ST <addr>`` per line.

    Addresses are hex (``0x...``) or decimal, in ASCII digits (Python-only forms such as
    ``1_000`` or ``0o17`` are refused). Blank lines and lines starting with ``#`` are skipped.
    The file is read in 1 MiB blocks, lines at most :data:`MAX_LINE_BYTES` long, and rejected
    at its first malformed line; the requests take 9 bytes each.

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
                block = fh.read(1 << 20)
                lines = (tail + block).split(b"\n")
                tail = lines.pop() if block else b""
                if len(tail) > MAX_LINE_BYTES:
                    _parse_line(tail, who, lineno + len(lines) + 1)  # raises: too long
                for raw in lines:
                    lineno += 1
                    m = fast(raw)
                    if m is not None:
                        op, h, d = m.groups()
                        add_addr(int(h, 16) if h is not None else int(d))
                        add_write(op == b"ST")
                        continue
                    rec = _parse_line(raw, who, lineno)
                    if rec is not None:
                        add_write(rec[0])
                        add_addr(rec[1])
                if not block:
                    break
    except OSError as exc:
        raise TraceFormatError(f"{who}: cannot read ({exc.strerror})") from None
    if not addrs:
        raise TraceFormatError(f"{who}: no requests")
    return RequestTrace(np.frombuffer(addrs, dtype=np.int64),
                        np.frombuffer(bytes(writes), dtype=np.uint8).view(bool), source=str(p))


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
