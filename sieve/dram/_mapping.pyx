# The compiled address decode (its only importer is sieve/dram/mapping.py).
#
# AddressMapper.decode's arithmetic in C, written into one flat (7 x n) int32 buffer that the
# caller may reuse from chunk to chunk: the same fields, bit for bit, as the numpy reference
# (mapping.AddressMapper._decode_numpy), which made a dozen n-element temporaries per call
# (on a 2 M-line trace about 0.4 GB of fresh pages; docs/performance.md).

cimport cython
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset


cdef inline uint64_t _mask(int bits) noexcept nogil:
    return (((<uint64_t>1) << bits) - 1) if bits < 64 else ~(<uint64_t>0)


def decode_into(const uint64_t[::1] addr, int offset_bits, const int32_t[::1] slices,
                const int32_t[::1] xors, int req_bits, int32_t[::1] out, Py_ssize_t stride):
    """Decode ``addr`` into ``out[field * stride + i]`` (fields in mapping._FIELDS order,
    co = 6; ``out`` holds 7 rows of ``stride >= len(addr)`` entries, a (7, stride) C array
    flattened).

    ``slices``: (field, shift, bits) triples, flattened, above the request offset, LSB first
    (the mapper's slices without its first, the request's own column bits); ``xors``: (field,
    column-bit offset, bits) triples, flattened; ``req_bits``: the request's own column bits
    (the column is shifted up by them). Values are truncated to int32 as the reference's
    ``astype(np.int32)`` truncates them (the mapper's fields are far narrower). Flat tables
    and output, so that callers without numpy can pass ``array.array`` buffers.

    One pass per slice over the whole array (simple loops the compiler vectorises), not one
    pass per address over the slices.
    """
    cdef Py_ssize_t n = addr.shape[0], i
    cdef Py_ssize_t ns = slices.shape[0] // 3, nx = xors.shape[0] // 3, j
    cdef int f, t, col_shift
    cdef uint64_t m
    cdef const uint64_t* ap
    cdef int32_t* op
    cdef int32_t* row
    cdef uint64_t* co
    if stride < n or out.shape[0] < 7 * stride:
        raise ValueError(f"decode_into: out must hold 7 rows of stride >= {n}, got "
                         f"{out.shape[0]} entries, stride {stride}")
    if slices.shape[0] % 3 or xors.shape[0] % 3:
        raise ValueError("decode_into: slices and xors must be triples")
    for j in range(ns):
        if not (0 <= slices[3 * j] < 7 and slices[3 * j + 1] >= 0
                and 0 <= slices[3 * j + 2] <= 64):
            raise ValueError(f"decode_into: bad slice row {j}")
    for j in range(nx):
        if not (0 <= xors[3 * j] < 6 and 0 <= xors[3 * j + 1] < 64
                and 0 <= xors[3 * j + 2] <= 64):
            raise ValueError(f"decode_into: bad xor row {j}")
    if not (0 <= offset_bits < 64 and 0 <= req_bits < 64):
        raise ValueError("decode_into: offset_bits and req_bits must be in [0, 64)")
    if n == 0:
        return
    co = <uint64_t*>malloc(n * sizeof(uint64_t))
    if co == NULL:
        raise MemoryError("decode_into: column buffer")
    ap = &addr[0]
    op = &out[0]
    with nogil:
        for f in range(6):
            memset(op + f * stride, 0, n * sizeof(int32_t))
        memset(co, 0, n * sizeof(uint64_t))
        col_shift = 0
        for j in range(ns):
            if slices[3 * j + 2] == 0:
                continue
            f = slices[3 * j]
            # (the reference shifts by the offset, then by the slice's shift: past bit 63
            # nothing is left)
            t = offset_bits + slices[3 * j + 1] if slices[3 * j + 1] < 64 else 64
            m = _mask(slices[3 * j + 2]) if t < 64 else 0
            if t > 63:
                t = 0
            if f == 6:
                if col_shift < 64:
                    for i in range(n):
                        co[i] |= ((ap[i] >> t) & m) << col_shift
                col_shift += slices[3 * j + 2]
            else:
                row = op + f * stride
                for i in range(n):
                    row[i] = <int32_t>((ap[i] >> t) & m)
        for j in range(nx):
            row = op + xors[3 * j] * stride
            t = xors[3 * j + 1]
            m = _mask(xors[3 * j + 2])
            for i in range(n):
                row[i] ^= <int32_t>((co[i] >> t) & m)
        row = op + 6 * stride
        for i in range(n):
            row[i] = <int32_t>(co[i] << req_bits)
    free(co)
