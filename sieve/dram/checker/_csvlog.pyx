# The compiled fast path of the checker's CSV command-log reader (sieve.dram.checker.logfile).
#
# Parses a block of whole lines of Ramulator 2.1's command-trace CSV (clock, command name, then
# integer columns) in one nogil pass, or gives up (returns -1 - line) at the first line that is
# not plain: a field that is not an optional '-' and decimal digits, a command name not in the
# table, a line with another number of fields, a blank line, a carriage return, a value out of
# range. The caller then parses the block with its line loop, which gives the same records or
# the bad line's message; this pass only ever accepts lines that loop accepts, with the same
# values.

from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcmp

import numpy as np

cdef int64_t LIMIT = (<int64_t>1) << 61


cdef int64_t _parse(const uint8_t[::1] data, int64_t width, const int64_t[::1] take,
                    const uint8_t[::1] names, const int64_t[::1] name_start,
                    const int64_t[::1] name_id, int64_t max_clock,
                    int64_t[:, ::1] out) noexcept nogil:
    """parse_block's loop: lines parsed, or -1 - the first line that is not plain."""
    cdef Py_ssize_t n = data.shape[0], i = 0, line = 0, f, j, start, m
    cdef Py_ssize_t n_take = take.shape[0], n_names = name_id.shape[0], rows = out.shape[0]
    cdef int64_t v, digits, col
    cdef bint neg
    while i < n:
        if line >= rows:
            return -1 - line
        f = 0
        while True:  # one field at a time; data ends with a newline, so i < n below
            start = i
            if f == 1:  # the command name
                while data[i] != 44 and data[i] != 10:
                    i += 1
                m = i - start
                col = -1
                for j in range(n_names):
                    if name_start[j + 1] - name_start[j] == m and m > 0 and memcmp(
                            &names[name_start[j]], &data[start], m) == 0:
                        col = name_id[j]
                        break
                if col < 0:
                    return -1 - line
                out[line, 1] = col
            else:
                neg = data[i] == 45
                if neg:
                    i += 1
                v = 0
                digits = 0
                while 48 <= data[i] <= 57:
                    if v > LIMIT // 10:  # v * 10 + 9 stays below 2**63
                        return -1 - line
                    v = v * 10 + (data[i] - 48)
                    digits += 1
                    i += 1
                if digits == 0 or (data[i] != 44 and data[i] != 10) or v >= LIMIT:
                    return -1 - line
                if neg:
                    v = -v
                if f == 0:
                    if v < 1 or v > max_clock:
                        return -1 - line
                    out[line, 0] = v
                else:
                    for j in range(n_take):
                        if take[j] == f:
                            if v < -1 or v >= (<int64_t>1) << 31:
                                return -1 - line
                            out[line, 2 + j] = v
            f += 1
            if data[i] == 10:
                i += 1
                break
            i += 1  # the comma
        if f != width:
            return -1 - line
        line += 1
    return line


def parse_block(const uint8_t[::1] data, int64_t width, const int64_t[::1] take,
                const uint8_t[::1] names, const int64_t[::1] name_start,
                const int64_t[::1] name_id, int64_t max_clock, int64_t[:, ::1] out):
    """Parse ``data`` (whole lines, each ending with a newline) into ``out``.

    Args:
        width: fields per line (the header's).
        take: for each output column after the first two, the line field it comes from.
        names, name_start, name_id: the command names, concatenated (name ``j`` is
            ``names[name_start[j]:name_start[j + 1]]``) and their ids.
        max_clock: the largest clock accepted.
        out: ``(n_lines, 2 + len(take))`` int64: clock, command id, then the taken fields
            (address fields must lie in [-1, 2**31); other fields are parsed but not kept and
            must lie within +-2**61).

    Returns:
        The number of lines parsed (all of them), or ``-1 - i`` when line ``i`` (0-based) is
        not plain.
    """
    cdef Py_ssize_t n = data.shape[0], j
    cdef Py_ssize_t n_take = take.shape[0], n_names = name_id.shape[0]
    cdef int64_t got
    if out.shape[1] != 2 + n_take or name_start.shape[0] != n_names + 1 or width < 2:
        raise ValueError("parse_block: output columns, name table or width do not match")
    for j in range(n_take):
        if take[j] < 2 or take[j] >= width:
            raise ValueError("parse_block: taken fields must be address columns of the line")
    for j in range(n_names + 1):
        if name_start[j] < 0 or name_start[j] > names.shape[0] or (
                j and name_start[j] < name_start[j - 1]):
            raise ValueError("parse_block: name bounds out of range")
    if n and data[n - 1] != 10:
        raise ValueError("parse_block: data must end with a newline")
    with nogil:
        got = _parse(data, width, take, names, name_start, name_id, max_clock, out)
    return got
