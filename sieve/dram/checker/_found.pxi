# Violations found by a compiled checker pass (included by _timing.pyx and _state.pyx): rows of
# `width` int64 values in one C buffer grown on demand without the GIL, turned into numpy
# columns at the end.

from libc.stdint cimport int64_t
from libc.stdlib cimport free, realloc

import numpy as np


cdef struct Found:
    int64_t* cols  # `width` values per violation, row after row
    Py_ssize_t n
    Py_ssize_t cap
    Py_ssize_t width


cdef inline void _found_init(Found* f, Py_ssize_t width) noexcept nogil:
    f.cols = NULL
    f.n = 0
    f.cap = 0
    f.width = width


cdef int _push(Found* f, const int64_t* row) noexcept nogil:
    """Append one violation (``f.width`` values); -1 when memory runs out."""
    cdef Py_ssize_t cap, j
    cdef int64_t* a
    if f.n == f.cap:
        cap = 2 * f.cap + 64
        a = <int64_t*>realloc(f.cols, f.width * cap * sizeof(int64_t))
        if a == NULL:
            return -1
        f.cols = a
        f.cap = cap
    a = f.cols + f.width * f.n
    for j in range(f.width):
        a[j] = row[j]
    f.n += 1
    return 0


cdef tuple _columns(Found* f):
    """The violations as ``width`` int64 numpy columns; frees the buffer."""
    out = tuple(np.empty(f.n, dtype=np.int64) for _ in range(f.width))
    cdef int64_t[::1] col
    cdef Py_ssize_t j, k
    for j in range(f.width):
        col = out[j]
        for k in range(f.n):
            col[k] = f.cols[f.width * k + j]
    free(f.cols)
    f.cols = NULL
    return out
