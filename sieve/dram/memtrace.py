"""Memory-request traces for front end 1 (sieve.dram.simulate_requests).

A :class:`RequestTrace` is three arrays: byte address, write flag and (optionally) arrival
cycle. It can come from numpy directly, from a Ramulator 2 LoadStore trace file (``LD 0x...`` /
``ST 0x...``, one request per line; the same file runs through Ramulator 2.0/2.1), or from the
synthetic patterns used by the benchmarks (sequential or uniform random, seeded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sieve.errors import ConfigError, TraceFormatError

__all__ = ["RequestTrace", "load_loadstore_trace", "save_loadstore_trace", "synthetic_trace"]


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
        addr = np.ascontiguousarray(self.addr, dtype=np.int64)
        w = np.ascontiguousarray(self.is_write, dtype=bool)
        if addr.ndim != 1 or w.shape != addr.shape:
            raise ConfigError("request trace: addr and is_write must be 1-D arrays of one length")
        if addr.size and addr.min() < 0:
            raise ConfigError(f"request trace: negative address {int(addr.min())}")
        object.__setattr__(self, "addr", addr)
        object.__setattr__(self, "is_write", w)
        if self.arrive_ck is not None:
            arr = np.ascontiguousarray(self.arrive_ck, dtype=np.int64)
            if arr.shape != addr.shape:
                raise ConfigError("request trace: arrive_ck must have one entry per request")
            if arr.size and (arr.min() < 0 or np.any(np.diff(arr) < 0)):
                raise ConfigError("request trace: arrive_ck must be >= 0 and non-decreasing")
            object.__setattr__(self, "arrive_ck", arr)

    def __len__(self) -> int:
        return int(self.addr.shape[0])

    @property
    def n_reads(self) -> int:
        return int(len(self) - self.is_write.sum())

    @property
    def n_writes(self) -> int:
        return int(self.is_write.sum())


def load_loadstore_trace(path: str | Path) -> RequestTrace:
    """Read a Ramulator 2 LoadStore trace: one ``LD <addr>`` or ``ST <addr>`` per line.

    Addresses are hex (``0x...``) or decimal. Blank lines and lines starting with ``#`` are
    skipped. Raises TraceFormatError naming the file, line and field on malformed input.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise TraceFormatError(f"trace {str(p)!r}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise TraceFormatError(f"trace {str(p)!r}: not a text file") from None
    addrs: list[int] = []
    writes: list[bool] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if len(parts) != 2:
            raise TraceFormatError(f"trace {str(p)!r} line {lineno}: expected '<LD|ST> "
                                   f"<address>', got {s[:60]!r}")
        op, a = parts
        if op == "LD":
            writes.append(False)
        elif op == "ST":
            writes.append(True)
        else:
            raise TraceFormatError(f"trace {str(p)!r} line {lineno}: field 1 (operation) must "
                                   f"be LD or ST, got {op[:20]!r}")
        try:
            v = int(a, 0)
        except ValueError:
            raise TraceFormatError(f"trace {str(p)!r} line {lineno}: field 2 (address) is not "
                                   f"a number: {a[:40]!r}") from None
        if v < 0 or v >= 1 << 63:
            raise TraceFormatError(f"trace {str(p)!r} line {lineno}: field 2 (address) out of "
                                   f"range: {a[:40]!r}")
        addrs.append(v)
    if not addrs:
        raise TraceFormatError(f"trace {str(p)!r}: no requests")
    return RequestTrace(np.array(addrs, dtype=np.int64), np.array(writes, dtype=bool),
                        source=str(p))


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
        stride_bytes: request size / alignment.
        span_bytes: address range of the random pattern.
        write_fraction: fraction of writes, drawn independently per request.
        seed: RNG seed (recorded in ``source``).
    """
    if n < 1:
        raise ConfigError(f"synthetic trace: number of requests must be >= 1, got {n}")
    if not 0.0 <= write_fraction <= 1.0:
        raise ConfigError(f"synthetic trace: write_fraction must be in [0, 1], got "
                          f"{write_fraction}")
    rng = np.random.default_rng(seed)
    if pattern == "seq":
        addr = np.arange(n, dtype=np.int64) * stride_bytes
    elif pattern == "rand":
        addr = rng.integers(0, span_bytes // stride_bytes, size=n, dtype=np.int64) * stride_bytes
    else:
        raise ConfigError(f"synthetic trace: unknown pattern {pattern!r} (known: rand, seq)")
    writes = rng.random(n) < write_fraction if write_fraction > 0 else np.zeros(n, dtype=bool)
    return RequestTrace(addr, writes, source=f"synthetic {pattern} n={n} stride={stride_bytes} "
                                              f"writes={write_fraction} seed={seed}")
