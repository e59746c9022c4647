# The timing rows of the independent checker (sieve.dram.checker.timing), one compiled pass
# per level over the log in per-channel issue order.
#
# For every command F (sorted position i, node nd at the level) and every row whose following
# command is F's, the w-th most recent preceding command P of the row's type at F's node (or at
# each sibling node) is read from a ring of the last W positions per (node, preceding type),
# and F is legal iff tick(F) >= tick(P_w) + latency. This is the same rule, row for row, as the
# numpy searchsorted version that timing.py keeps as the reference the tests compare with; it
# shares nothing with the engine's hot loop. Rings are filled after F's own rows are checked,
# so a command never precedes itself. Commands outside the focus (context carried from earlier
# chunks of a streamed log) fill the rings but are not checked.
#
# Inputs are validated before the loop (shapes, node ids against the node count, slot and row
# indices), so no argument can make the loop read or write out of bounds.

from libc.stdint cimport int8_t, int64_t
from libc.stdlib cimport free, malloc

import numpy as np


include "_found.pxi"


def check_level(const int64_t[::1] node, const int64_t[::1] cmd, const int64_t[::1] tick,
                const int8_t[::1] focus, const int64_t[::1] f_start,
                const int64_t[::1] row_p, const int64_t[::1] row_lat,
                const int64_t[::1] row_win, const int8_t[::1] row_sib,
                const int64_t[::1] p_slot, int64_t n_nodes, int64_t fan,
                int64_t[::1] checked):
    """Check one level's timing rows (module comment).

    Args:
        node, cmd, tick, focus: per sorted position: node id at the level (-1: not at it),
            command id, tick, whether it is reported on.
        f_start: rows sorted by following command: rows of command c are
            ``f_start[c]:f_start[c + 1]``.
        row_p, row_lat, row_win, row_sib: per row: preceding command, latency, window (>= 1),
            sibling row (the preceding command at every other node of the same parent).
        p_slot: per command id, its ring slot as a preceding command (-1: none).
        n_nodes: node ids are in ``[0, n_nodes)``; fan: nodes per parent at this level.
        checked: out, per row: pairs found (a preceding command existed).

    Returns:
        ``(row, pos, prev_pos, required)`` int64 arrays, one entry per violation, in position
        order (rows in row order, sibling targets in order, for one position).
    """
    cdef Py_ssize_t n = node.shape[0], n_cmd = p_slot.shape[0], n_rows = row_p.shape[0]
    cdef Py_ssize_t i, r, j, k, s, W = 1, n_slots = 0, base
    cdef int64_t nd, c, t, cnt, prev, req, parent, idx
    if (cmd.shape[0] != n or tick.shape[0] != n or focus.shape[0] != n
            or f_start.shape[0] != n_cmd + 1 or row_lat.shape[0] != n_rows
            or row_win.shape[0] != n_rows or row_sib.shape[0] != n_rows
            or checked.shape[0] != n_rows):
        raise ValueError("check_level: column and row lengths do not match")
    if n_nodes < 0 or fan < 1 or (n_nodes and n_nodes % fan):
        raise ValueError("check_level: n_nodes must be a multiple of fan >= 1")
    for c in range(n_cmd):
        if p_slot[c] >= n_slots:
            n_slots = p_slot[c] + 1
        if f_start[c] < 0 or f_start[c] > f_start[c + 1] or f_start[c + 1] > n_rows:
            raise ValueError("check_level: f_start must be non-decreasing row bounds")
    for r in range(n_rows):
        if row_win[r] < 1 or row_p[r] < 0 or row_p[r] >= n_cmd or p_slot[row_p[r]] < 0:
            raise ValueError("check_level: every row needs a window >= 1 and a preceding "
                             "command with a slot")
        if row_win[r] > W:
            W = row_win[r]
    for i in range(n):
        if node[i] >= n_nodes or (node[i] >= 0 and (cmd[i] < 0 or cmd[i] >= n_cmd)):
            raise ValueError("check_level: node id or command out of range")
    cdef int64_t* ring = <int64_t*>malloc(max(n_nodes * n_slots * W, 1) * sizeof(int64_t))
    cdef int64_t* count = <int64_t*>malloc(max(n_nodes * n_slots, 1) * sizeof(int64_t))
    cdef Found found
    cdef int64_t rec[4]
    _found_init(&found, 4)
    cdef int err = 0
    if ring == NULL or count == NULL:
        free(ring)
        free(count)
        raise MemoryError("check_level: cannot allocate the rings")
    with nogil:
        for j in range(n_nodes * n_slots):
            count[j] = 0
        for i in range(n):
            nd = node[i]
            if nd < 0:
                continue
            c = cmd[i]
            if focus[i]:
                for r in range(f_start[c], f_start[c + 1]):
                    s = p_slot[row_p[r]]
                    parent = (nd // fan) * fan
                    idx = nd - parent
                    for j in range(1 if row_sib[r] else 0, fan if row_sib[r] else 1):
                        t = parent + (idx + j) % fan if row_sib[r] else nd
                        base = t * n_slots + s
                        cnt = count[base]
                        if cnt < row_win[r]:
                            continue
                        checked[r] += 1
                        prev = ring[base * W + (cnt - row_win[r]) % W]
                        req = tick[prev] + row_lat[r]
                        if tick[i] < req:
                            rec[0] = r
                            rec[1] = i
                            rec[2] = prev
                            rec[3] = req
                            if _push(&found, rec) < 0:
                                err = 1
                                break
                    if err:
                        break
            if err:
                break
            s = p_slot[c]
            if s >= 0:
                base = nd * n_slots + s
                ring[base * W + count[base] % W] = i
                count[base] += 1
    free(ring)
    free(count)
    if err:
        free(found.cols)
        raise MemoryError("check_level: cannot grow the violation buffer")
    return _columns(&found)


def mark_last(const int64_t[::1] node, const int64_t[::1] cmd, int64_t n_nodes, int64_t n_cmd,
              int64_t window, int8_t[::1] keep):
    """Mark in ``keep`` the last ``window`` positions of every (node, command) pair (node ids
    in [0, n_nodes), -1: not at this level; commands in [0, n_cmd)): what a streamed check
    carries to the next chunk for the timing rows (sieve.dram.checker.stream; the numpy
    version there is the reference the tests compare with)."""
    cdef Py_ssize_t n = node.shape[0], i
    cdef int64_t k
    if cmd.shape[0] != n or keep.shape[0] != n or n_nodes < 0 or n_cmd < 1 or window < 0:
        raise ValueError("mark_last: lengths or counts do not match")
    for i in range(n):
        if node[i] >= n_nodes or (node[i] >= 0 and not (0 <= cmd[i] < n_cmd)):
            raise ValueError("mark_last: node id or command out of range")
    cdef int64_t* seen = <int64_t*>malloc(max(n_nodes * n_cmd, 1) * sizeof(int64_t))
    if seen == NULL:
        raise MemoryError("mark_last: cannot allocate the counts")
    with nogil:
        for i in range(n_nodes * n_cmd):
            seen[i] = 0
        for i in range(n - 1, -1, -1):
            if node[i] < 0:
                continue
            k = node[i] * n_cmd + cmd[i]
            if seen[k] < window:
                seen[k] += 1
                keep[i] = 1
    free(seen)
