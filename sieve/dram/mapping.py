"""Physical address -> (channel, pseudo-channel, SID, bank group, bank, row, column).

A mapping is a list of fields from the least significant bit up, above the byte offset of one
request. Field names: ``ch``, ``pc``, ``sid``, ``bg``, ``ba`` (bank), ``ro`` (row), ``co``
(column). ``co:N`` takes N column bits at that position; a plain ``co`` takes the column bits
not taken elsewhere. The columns inside one request (``request_bytes / access_bytes`` bursts)
are always the lowest column bits, so a request's bursts are consecutive columns of one row.

Presets (``MAPPINGS``):

* ``sieve`` (default): ``bg, pc, ch, co, sid, ba, ro`` - consecutive requests rotate over bank
  groups first (so a stream alternates bank groups and runs at tCCD_S, not tCCD_L), then
  pseudo-channels and channels, then sweep the columns of the open rows; only then does the
  stream move to other banks, so row switches (ACTs) are spread out instead of bunching into
  a tFAW-limited burst (measured: 91.4 % vs 89.5 % of peak on hbm3-6400, see
  docs/performance.md).
* ``RoBaRaCoCh``: ``ch, co, pc, sid, bg, ba, ro`` - Ramulator 2's default name and order
  (src/ramulator/controller/addr_mapper/impl/ro_ba_ra_co_ch.cpp: column, then pseudo-channel,
  SID, bank group, bank, row above the transaction offset; channel lowest, as in 2.0). Use it
  with ``request_bytes=32`` to feed the same LoadStore trace to both simulators.
* ``ChRaBaRoCo``: ``co, ro, ba, bg, sid, pc, ch`` - Ramulator's row-major alternative.

XOR (hash) presets (``XOR_MAPPINGS``) slice the address the same way, then XOR some fields with
the column bits, so that consecutive lines spread over pseudo-channels, SIDs, bank groups and
banks while rows stay open:

* ``MOP4CLXOR``: Ramulator 2's "multi-offset physical, 4 cache lines, XOR" mapper, its common
  HBM mapping (src/ramulator/controller/addr_mapper/impl/mop4clxor.cpp of CMU-SAFARI/ramulator2,
  HEAD c5b1c3a; the same code as 2.0's linear_mappers.cpp). Above the 32 B transaction offset,
  LSB first: ``ch`` (sieve puts the channel bits lowest, as Ramulator 2.1's
  ``CacheLineInterleave`` channel mapper with ``interleave_bits=0``), 2 column bits, ``pc``,
  ``sid``, ``bg``, ``ba``, the other column bits, ``ro``. Then, with the whole column value
  ``co``, each of ``pc, sid, bg, ba, ro`` in that order is XORed with the next ``width`` bits of
  ``co`` (``pc ^= co[0]``, ``sid ^= co[1]``, ``bg ^= co[2:4]``, ``ba ^= co[4:6]``, ``ro ^=
  co[6:...]``; a field of width 0 takes no bits), exactly as Ramulator's loop over the levels
  below the column does. Requests must be one 32 B burst (as Ramulator's transactions): the
  XOR moves the bursts of a longer request to other banks. Addresses beyond the mapped capacity
  wrap (Ramulator would give rows past the last one).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, NotBuiltError, choices
from sieve.lazy import numpy as np
from sieve.validate import check_int

__all__ = ["MAPPINGS", "XOR_MAPPINGS", "AddressMapper", "DecodedAddresses"]

MAPPINGS: dict[str, tuple[str, ...]] = {
    "sieve": ("bg", "pc", "ch", "co", "sid", "ba", "ro"),
    "RoBaRaCoCh": ("ch", "co", "pc", "sid", "bg", "ba", "ro"),
    "ChRaBaRoCo": ("co", "ro", "ba", "bg", "sid", "pc", "ch"),
}
#: XOR presets: (field order LSB first, fields XORed with consecutive column bits, in order).
XOR_MAPPINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "MOP4CLXOR": (("ch", "co:2", "pc", "sid", "bg", "ba", "co", "ro"),
                  ("pc", "sid", "bg", "ba", "ro")),
}
_FIELDS = ("ch", "pc", "sid", "bg", "ba", "ro", "co")


def _compiled_decode():
    """The compiled decode (sieve.dram._mapping.decode_into), or NotBuiltError."""
    try:
        from sieve.dram import _mapping
    except ImportError as exc:
        raise NotBuiltError.of("address decode", "sieve.dram._mapping", exc) from None
    return _mapping.decode_into


def _log2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise ConfigError(f"address mapping: {what} must be a power of two, got {n}")
    return n.bit_length() - 1


@dataclass(frozen=True)
class DecodedAddresses:
    """Per-request address fields (int32 arrays)."""

    ch: np.ndarray
    pc: np.ndarray
    sid: np.ndarray
    bg: np.ndarray
    ba: np.ndarray
    ro: np.ndarray
    co: np.ndarray


class AddressMapper:
    """Bit-slicing address mapper.

    Args:
        spec: the memory spec (field widths come from its organisation).
        scheme: a preset name from :data:`MAPPINGS` or a sequence of field tokens, LSB first.
        channels: number of channels the addresses are spread over (power of two).
        request_bytes: bytes per request; its bursts are the lowest column bits.
    """

    def __init__(self, spec: DramSpec, scheme: str | Sequence[str] = "sieve",
                 channels: int | None = None, request_bytes: int = 64):
        o = spec.org
        self.spec = spec
        self.channels = (o.total_channels if channels is None else
                         check_int("address mapping", "channels", channels, lo=1,
                                   hi=o.total_channels))
        #: fields XORed with consecutive column bits (XOR presets), in order
        self.xor_fields: tuple[str, ...] = ()
        if isinstance(scheme, str):
            known = {**MAPPINGS, **XOR_MAPPINGS}
            key = {k.lower(): k for k in known}.get(scheme.lower())
            if key is None:
                raise ConfigError(f"address mapping {scheme!r}: unknown (known: "
                                  f"{choices(known)}; or give a list of fields)")
            if key in XOR_MAPPINGS:
                self.name, (tokens, self.xor_fields) = key, XOR_MAPPINGS[key]
            else:
                self.name, tokens = key, MAPPINGS[key]
        else:
            self.name, tokens = "custom", tuple(scheme)
        request_bytes = check_int("address mapping", "request_bytes", request_bytes, lo=1)
        if request_bytes < o.access_bytes or request_bytes % o.access_bytes:
            raise ConfigError(f"address mapping: request_bytes ({request_bytes}) must be a "
                              f"multiple of the {o.access_bytes}-byte burst")
        self.request_bytes = request_bytes
        self.bursts = request_bytes // o.access_bytes
        req_col_bits = _log2(self.bursts, "request_bytes / access_bytes")
        if self.xor_fields and self.bursts != 1:
            raise ConfigError(f"address mapping {self.name}: requests must be one "
                              f"{o.access_bytes}-byte burst (request_bytes {o.access_bytes}), "
                              f"got {request_bytes}: the XOR moves the bursts of a longer "
                              "request to other banks")
        widths = {
            "ch": _log2(self.channels, "channels"),
            "pc": _log2(o.pseudochannels, "pseudochannels"),
            "sid": _log2(o.sids, "sids"),
            "bg": _log2(o.bankgroups, "bankgroups"),
            "ba": _log2(o.banks, "banks"),
            "ro": _log2(o.rows, "rows"),
        }
        col_bits = _log2(o.columns, "columns")
        if req_col_bits > col_bits:
            raise ConfigError(f"address mapping: a {request_bytes}-byte request is larger "
                              f"than a row")
        explicit_co = 0
        seen = set()
        parsed: list[tuple[str, int | None]] = []
        for tok in tokens:
            name, _, n = str(tok).partition(":")
            if name not in _FIELDS:
                raise ConfigError(f"address mapping: unknown field {tok!r} (fields: "
                                  f"{', '.join(_FIELDS)}, co:N)")
            if name != "co" and name in seen:
                raise ConfigError(f"address mapping: field {name!r} appears twice")
            seen.add(name)
            if n:
                if name != "co" or not n.isdigit():
                    raise ConfigError(f"address mapping: only 'co' takes a bit count, got "
                                      f"{tok!r}")
                explicit_co += int(n)
                parsed.append((name, int(n)))
            else:
                parsed.append((name, None))
        missing = set(_FIELDS) - seen
        if missing:
            raise ConfigError(f"address mapping: missing fields {sorted(missing)}")
        rest_co = col_bits - req_col_bits - explicit_co
        if rest_co < 0:
            raise ConfigError("address mapping: more column bits than the row has")
        # (field, shift, bits) slices, LSB first, above the request offset
        self.slices: list[tuple[str, int, int]] = [("co", 0, req_col_bits)]
        shift = 0
        for name, n in parsed:
            bits = n if n is not None else (rest_co if name == "co" else widths[name])
            self.slices.append((name, shift, bits))
            shift += bits
        self.offset_bits = _log2(request_bytes, "request_bytes")
        self.address_bits = shift + self.offset_bits
        self._widths = {**widths, "co": col_bits - req_col_bits}
        # (field, column-bit offset, width) of each XOR, fields of width 0 skipped
        self.xors: list[tuple[str, int, int]] = []
        off = 0
        for f in self.xor_fields:
            if widths[f]:
                self.xors.append((f, off, widths[f]))
                off += widths[f]
        # the same slices and XORs as flat int32 (field, shift, bits) triples for the compiled
        # decode (field indices in _FIELDS order)
        self._slice_table = array("i", [x for f, sh, b in self.slices[1:]
                                        for x in (_FIELDS.index(f), sh, b)])
        self._xor_table = array("i", [x for f, o, b in self.xors
                                      for x in (_FIELDS.index(f), o, b)])

    def decode(self, addr: np.ndarray, out: np.ndarray | None = None) -> DecodedAddresses:
        """Decode byte addresses (wrapped to the mapped capacity).

        Args:
            addr: byte addresses (any integer array; int64 and uint64 are read in place).
            out: optional (7, >= len(addr)) C-contiguous int32 array to decode into (reused
                from chunk to chunk); the fields returned are views of its rows, so they
                change when it is decoded into again.
        """
        a = np.asarray(addr)
        if a.dtype == np.int64 or a.dtype == np.uint64:
            a = np.ascontiguousarray(a).reshape(-1).view(np.uint64)
        else:
            a = np.ascontiguousarray(a, dtype=np.uint64).reshape(-1)
        n = a.shape[0]
        if out is None:
            out = np.empty((7, n), dtype=np.int32)
        elif (not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.ndim != 2
              or out.shape[0] != 7 or out.shape[1] < n or not out.flags.c_contiguous):
            raise ConfigError(f"address mapping: out must be a C-contiguous (7, >= {n}) int32 "
                              "array")
        self.decode_buffer(a, out.reshape(-1), out.shape[1])
        return DecodedAddresses(*(out[i, :n] for i in range(7)))

    def decode_buffer(self, addr: memoryview, out: memoryview, stride: int) -> None:
        """:meth:`decode` without numpy, for the request front end: ``addr`` a 1-D buffer of
        int64 or uint64 byte addresses, ``out`` a 1-D int32 buffer of 7 rows of ``stride >=
        len(addr)`` entries, in :data:`_FIELDS` order (ch, pc, sid, bg, ba, ro, co): row ``f``
        is ``out[f * stride:f * stride + len(addr)]``. Same fields, bit for bit."""
        a = memoryview(addr)
        if (a.ndim != 1 or a.format not in ("q", "Q", "l", "L") or a.itemsize != 8
                or not a.c_contiguous):
            raise ConfigError("address mapping: decode_buffer needs a 1-D buffer of 64-bit "
                              f"integers, got format {a.format!r} with {a.ndim} dimension(s)")
        o = memoryview(out)
        if o.ndim != 1 or o.format not in ("i", "l") or o.itemsize != 4:
            raise ConfigError("address mapping: decode_buffer's out must be a 1-D int32 buffer")
        _compiled_decode()(a.cast("B").cast("Q"), self.offset_bits, self._slice_table,
                           self._xor_table, self.slices[0][2], o, stride)

    def _decode_numpy(self, addr: np.ndarray) -> DecodedAddresses:
        """The numpy reference of :meth:`decode` (the tests compare the two bit for bit)."""
        a = np.asarray(addr, dtype=np.uint64) >> np.uint64(self.offset_bits)
        out = {f: np.zeros(a.shape, dtype=np.int64) for f in _FIELDS}
        col_shift = 0
        for i, (name, shift, bits) in enumerate(self.slices):
            if i == 0:
                continue
            if bits:
                v = ((a >> np.uint64(shift)) & np.uint64((1 << bits) - 1)).astype(np.int64)
                if name == "co":
                    out["co"] |= v << col_shift
                    col_shift += bits
                else:
                    out[name] = v
        for name, off, bits in self.xors:
            out[name] ^= (out["co"] >> off) & ((1 << bits) - 1)
        # the request's own bursts sit below: column index of its first burst
        req_bits = self.slices[0][2]
        out["co"] = out["co"] << req_bits
        return DecodedAddresses(**{k: v.astype(np.int32) for k, v in out.items()})

    def encode(self, ch=0, pc=0, sid=0, bg=0, ba=0, ro=0, co=0) -> int:
        """Byte address of the request whose first burst is at the given fields."""
        vals = {"ch": ch, "pc": pc, "sid": sid, "bg": bg, "ba": ba, "ro": ro}
        req_bits = self.slices[0][2]
        col = co >> req_bits
        for name, off, bits in self.xors:  # (XOR is its own inverse)
            vals[name] = vals[name] ^ ((col >> off) & ((1 << bits) - 1))
        addr = 0
        col_shift = 0
        for i, (name, shift, bits) in enumerate(self.slices):
            if i == 0 or not bits:
                continue
            if name == "co":
                v = (col >> col_shift) & ((1 << bits) - 1)
                col_shift += bits
            else:
                v = vals[name] & ((1 << bits) - 1)
            addr |= v << shift
        return addr << self.offset_bits
