# The Sieve greedy's inner loop (seed §5 "Sieving Algorithm"), compiled so that one decision for
# hundreds of experts costs microseconds when called from Python (the seed reports ~20 us on a
# B200 GPU for a DeepSeek-R1 layer). sieve.sched.greedy is the only importer; it also holds the
# pure-Python reference that tests compare this loop with, decision by decision.
#
# Model (all times ns): experts sorted by token count, most popular first (ties: lower id);
# start with every activated expert on PIM; move the next one to the GPU while
#     T_total = max(T_comm, T_GPU(G), T_PIM(S))
# strictly decreases, where T_GPU(G) = max((B0 + sum_G (W + A n)) / bw, (F0 + sum_G F n) / peak)
# (the seed's roofline, GPU-side experts as one grouped GEMM) and
# T_PIM(S) = busy + [S non-empty] * fixed + sum_S p(n), p(n) = table[n] for n < len(table),
# else n * slope (the roofline fallback of a count never observed); ``fixed`` is the PIM time
# a program pays once however many experts it runs (the GPU step of the "layer" order).

from libc.stdint cimport int8_t, int64_t
from libc.stdlib cimport free, malloc


cdef inline double _dmax(double a, double b) noexcept nogil:
    return a if a > b else b


# Layout of the `par` argument of sieve_greedy (one buffer: fewer arguments to convert).
P_B0 = 0      # bytes of the layer's fixed GPU work
P_F0 = 1      # FLOPs of the layer's fixed GPU work
P_W = 2       # weight bytes of one GPU-side expert
P_A = 3       # bytes per token of a GPU-side expert
P_F = 4       # FLOPs per token of a GPU-side expert
P_BW = 5      # HBM bytes per ns
P_PEAK = 6    # FLOPs per ns
P_BUSY = 7    # PIM time already taken (attention), ns
P_COMM = 8    # T_comm, ns
P_SLOPE = 9   # roofline ns per token of one PIM expert (counts beyond the table)
P_FIXED = 10  # PIM time paid once per non-empty program, ns
P_GPU = 11    # out: T_GPU of the result, ns
P_PIM = 12    # out: T_PIM of the result as decided, ns
P_STEPS = 13  # out: candidate moves evaluated
P_N = 14


def sieve_greedy(const int64_t[::1] counts, const double[::1] table, int8_t[::1] on_pim,
                 double[::1] par):
    """One Sieve decision. Reads the model from par[0:11] (P_* layout), writes on_pim (1 = PIM,
    per expert) and par[P_GPU], par[P_PIM], par[P_STEPS]; returns the number of experts moved
    to the GPU, or -1 if a buffer could not be allocated."""
    cdef Py_ssize_t E = counts.shape[0]
    cdef Py_ssize_t K = table.shape[0]
    cdef Py_ssize_t i, j, n_act = 0, moved = 0, steps = 0
    cdef int64_t c, cmax = 0
    cdef double nb, nf, pim, t_cur, g_new, p_new, t_new, pe, g_cur
    cdef int64_t* order
    cdef int64_t* start
    if on_pim.shape[0] != E or par.shape[0] < P_N:
        raise ValueError("sieve_greedy: on_pim must match counts and par hold P_N values")
    cdef double b0 = par[0], f0 = par[1], w = par[2], a = par[3], f = par[4], bw = par[5]
    cdef double peak = par[6], busy = par[7], comm = par[8], slope = par[9]
    cdef double fixed = par[10]
    if bw <= 0 or peak <= 0:
        raise ValueError("sieve_greedy: bw and peak must be > 0")
    for i in range(E):
        c = counts[i]
        if c < 0:
            raise ValueError("sieve_greedy: token counts must be >= 0")
        if c > cmax:
            cmax = c
    order = <int64_t*>malloc((E + 1) * sizeof(int64_t))
    start = <int64_t*>malloc((cmax + 2) * sizeof(int64_t))
    if order == NULL or start == NULL:
        free(order)
        free(start)
        return -1
    with nogil:
        # counting sort by count, descending, stable in expert id
        for j in range(cmax + 2):
            start[j] = 0
        for i in range(E):
            c = counts[i]
            on_pim[i] = 0
            if c > 0:
                start[cmax - c + 1] += 1
                n_act += 1
        for j in range(1, cmax + 2):
            start[j] += start[j - 1]
        for i in range(E):
            c = counts[i]
            if c > 0:
                order[start[cmax - c]] = i
                start[cmax - c] += 1
        # all activated experts on PIM
        pim = busy + (fixed if n_act > 0 else 0.0)
        for j in range(n_act):
            c = counts[order[j]]
            on_pim[order[j]] = 1
            pim += table[c] if c < K else c * slope
        nb = b0
        nf = f0
        g_cur = _dmax(nb / bw, nf / peak)
        t_cur = _dmax(comm, _dmax(g_cur, pim))
        for j in range(n_act):
            c = counts[order[j]]
            pe = table[c] if c < K else c * slope
            g_new = _dmax((nb + w + a * c) / bw, (nf + f * c) / peak)
            p_new = pim - pe - (fixed if j == n_act - 1 else 0.0)
            t_new = _dmax(comm, _dmax(g_new, p_new))
            steps += 1
            if t_new < t_cur:
                nb += w + a * c
                nf += f * c
                pim = p_new
                g_cur = g_new
                t_cur = t_new
                on_pim[order[j]] = 0
                moved += 1
            else:
                break
        par[11] = g_cur
        par[12] = pim
        par[13] = <double>steps
    free(order)
    free(start)
    return moved
