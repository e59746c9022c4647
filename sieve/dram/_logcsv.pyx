# The compiled command-log CSV formatter (its only importer is sieve/dram/log.py).
#
# Formats command-log records (sieve.dram.log.LOG_DTYPE fields, as separate typed columns) as
# the body lines of Ramulator 2.1's command-trace CSV: clock (tick + 1), command name, the seven
# address fields, type, source (-1). sieve.dram.log.log_to_csv_python is the reference the
# tests compare it with, byte for byte. The loop runs without the GIL over typed memoryviews;
# a command index outside the name table is reported (return -1 - row), never read past.

from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

cdef enum:
    FIELD_MAX = 21  # widest field: 20 digits and a sign


cdef inline int64_t _put_int(char* out, int64_t v) noexcept nogil:
    """Write v in decimal at out; the number of bytes written."""
    cdef char tmp[FIELD_MAX]
    cdef int n = 0, i
    cdef int64_t k = 0
    cdef uint64_t u
    if v < 0:
        out[0] = 45  # '-'
        k = 1
        u = <uint64_t>(-(v + 1)) + 1  # also right for INT64_MIN
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    for i in range(n):
        out[k + i] = tmp[n - 1 - i]
    return k + n


cdef inline int64_t _put_field(char* out, int64_t v) noexcept nogil:
    """Write v in decimal and a comma at out; the number of bytes written."""
    cdef int64_t k = _put_int(out, v)
    out[k] = 44  # ","
    return k + 1


cdef int64_t _format(const int64_t[:] tick, const int32_t[:] cmd, const int32_t[:] ch,
                     const int32_t[:] pc, const int32_t[:] sid, const int32_t[:] bg,
                     const int32_t[:] bank, const int32_t[:] row, const int32_t[:] col,
                     const int8_t[:] typ, const char* names, const int64_t[:] name_off,
                     int64_t n_names, char* out) noexcept nogil:
    """All rows into out; the bytes written, or -1 - (first row with an unknown command)."""
    cdef int64_t n = tick.shape[0], i, k = 0, j, a, b
    cdef int c
    for i in range(n):
        c = cmd[i]
        if c < 0 or c >= n_names:
            return -1 - i
        k += _put_field(out + k, tick[i] + 1)
        a = name_off[c]
        b = name_off[c + 1]
        for j in range(a, b):
            out[k] = names[j]
            k += 1
        out[k] = 44
        k += 1
        k += _put_field(out + k, ch[i])
        k += _put_field(out + k, pc[i])
        k += _put_field(out + k, sid[i])
        k += _put_field(out + k, bg[i])
        k += _put_field(out + k, bank[i])
        k += _put_field(out + k, row[i])
        k += _put_field(out + k, col[i])
        k += _put_field(out + k, typ[i])
        out[k] = 45  # "-1": source
        out[k + 1] = 49
        out[k + 2] = 10  # "\n"
        k += 3
    return k


def format_rows(tick, cmd, ch, pc, sid, bg, bank, row, col, typ, names):
    """CSV body lines (bytes) of n command records given as 1-D columns of one length:
    ``tick`` int64, ``cmd`` .. ``col`` int32, ``typ`` int8; ``names`` the command names (bytes)
    by command index.

    Raises:
        ValueError: columns of different lengths, or a command index outside ``names``.
    """
    cdef const int64_t[:] t = tick
    cdef const int32_t[:] c = cmd
    cdef const int32_t[:] f0 = ch
    cdef const int32_t[:] f1 = pc
    cdef const int32_t[:] f2 = sid
    cdef const int32_t[:] f3 = bg
    cdef const int32_t[:] f4 = bank
    cdef const int32_t[:] f5 = row
    cdef const int32_t[:] f6 = col
    cdef const int8_t[:] ty = typ
    cdef int64_t n = t.shape[0], i, got, width = 0
    if any(len(a) != n for a in (cmd, ch, pc, sid, bg, bank, row, col, typ)):
        raise ValueError("command log CSV: columns of different lengths")
    blob = b"".join(names)
    offs = [0]  # (no negative indices: the build turns wrap-around off)
    total = 0
    for nm in names:
        width = max(width, len(nm))
        total += len(nm)
        offs.append(total)
    cdef int64_t[:] off = np.asarray(offs, dtype="int64")
    cdef const char* nb = blob
    cdef int64_t n_names = len(names)
    # per row: 9 numbers, the name, 10 commas, "-1" and the newline
    cdef int64_t row_max = 9 * FIELD_MAX + width + 13
    if n == 0:
        return b""
    cdef char* buf = <char*>malloc(n * row_max)
    if buf == NULL:
        raise MemoryError("command log CSV: cannot allocate the line buffer")
    try:
        with nogil:
            got = _format(t, c, f0, f1, f2, f3, f4, f5, f6, ty, nb, off, n_names, buf)
        if got < 0:
            i = -1 - got
            raise ValueError(f"command log CSV: record {i} has command index {c[i]} outside "
                             f"the {n_names} known commands")
        return buf[:got]
    finally:
        free(buf)
