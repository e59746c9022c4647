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
from libc.math cimport ceil, pow, sqrt
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


# Layout of the `par` argument of sieve_cp_greedy (the critical-path variant, sieve.sched.cp).
# Times are ns from when the layer's expert work may start (the decision's end).
Q_W = 0       # weight bytes of one GPU-side expert
Q_A = 1       # bytes per token of a GPU-side expert (activations in and out)
Q_F = 2       # FLOPs per token of a GPU-side expert
Q_BW = 3      # HBM bytes per ns
Q_PEAK = 4    # FLOPs per ns
Q_K0 = 5      # fixed GPU time of a non-empty grouped GEMM (its kernel launches)
Q_H = 6       # when the GPU's HBM lane is free for the expert weights
Q_G = 7       # when the GPU's compute lane is free
Q_D = 8       # when the tokens dispatched from other GPUs have arrived
Q_P = 9       # when the PIM units are free (attention or another program before)
Q_SLOPE = 10  # roofline ns per token of one PIM expert (counts beyond the table)
Q_FIXED = 11  # PIM time paid once per non-empty program, ns
Q_C = 12      # when the link can take the layer's combine (a floor of the estimate)
Q_EG = 13     # out: estimated end of the GPU-side experts
Q_EP = 14     # out: estimated end of the PIM-side experts
Q_STEPS = 15  # out: candidate moves evaluated
# two-batch overlap: the layer's period is also bounded by each lane's work of both
# micro-batches (sieve.sched.partition.LayerTiming; 0 outside it drops the bound)
Q_CHAIN = 16  # this micro-batch's own work of the layer outside its expert phase
Q_PG = 17     # compute-lane work of both micro-batches in the layer, these experts excepted
Q_PH = 18     # HBM-lane weight streams of both, likewise
Q_PP = 19     # PIM work of both, likewise
# two-batch overlap: the other micro-batch's next attention (LayerTiming.other_attn_*)
Q_OR = 20     # when it could start if nothing of this split delayed it (< 0: no such term)
Q_OB = 21     # its kernels from the first weight load on, behind the GPU experts (< 0: none)
Q_J0 = 22     # out: the estimate of the starting split (all on PIM)
Q_J = 23      # out: the estimate of the chosen split (Q_J0 - Q_J: the decision's saving)
# the GPU experts' kernel as the calibrated kernel model combines it (sieve.hw.gpu): memory and
# compute time as a p-norm, compute on token counts padded to whole tiles per expert
Q_PN = 24     # the p of the combine (<= 0: max, the seed's roofline)
Q_TMIN = 25   # smallest token tile of a grouped GEMM (0: no padding)
Q_TMAX = 26   # largest token tile
Q_NACT = 27   # out: activated experts (token count > 0)
Q_CMAX = 28   # out: the largest token count (the caller grows a table shorter than it)
# two-batch overlap: the other micro-batch's cycle (LayerTiming.other_stream_*, other_chain_ns,
# other_rest_ns, other_attn_on_pim)
Q_XE = 29     # when its GPU expert stream would end on the shared HBM lane (< 0: no term)
Q_XR = 30     # that stream's work left (this split's stream delays it by at most this)
Q_XC = 31     # its chain from that end to the start of its next attention
Q_XA = 32     # its attention and its chain after it to its next decision
Q_XP = 33     # 1: that attention runs on the PIM after this split's PIM experts; 0: it does not
Q_N = 34


cdef inline double _cbrt12(double x) noexcept nogil:
    """Cube root of x in [1, 2] (the p = 3 combine's 1 + r^3): a quadratic first guess
    (Chebyshev fit, 8e-4 relative) and two Halley steps, y <- y (y^3 + 2x) / (2y^3 + x);
    within 3 ulp (6.7e-16) of libm's cbrt on [1, 2] (tests/test_sched_cp.py) at a quarter of its
    cost. sieve.sched.cp._cbrt12 is the same arithmetic in Python."""
    cdef double y = 0.6242864310132806 + x * (0.43551165145893983 + x * -0.05900474451917884)
    cdef double y3 = y * y * y
    y = y * (y3 + 2.0 * x) / (2.0 * y3 + x)
    y3 = y * y * y
    return y * (y3 + 2.0 * x) / (2.0 * y3 + x)


cdef inline double _comb(double x, double y, double pn) noexcept nogil:
    """Memory and compute time of one kernel: max (pn <= 0) or the p-norm
    hi * (1 + (lo / hi)^pn)^(1 / pn) (sieve.hw.gpu._combine), for pn = 3 (the calibration's)
    and 2 by products and _cbrt12 / sqrt instead of two pow calls (sieve.sched.cp._combine,
    the reference, does the same arithmetic)."""
    cdef double hi = x if x > y else y
    cdef double lo = y if x > y else x
    cdef double r
    if pn <= 0 or hi <= 0:
        return hi
    r = lo / hi
    if pn == 3.0:
        return hi * _cbrt12(1.0 + r * r * r)
    if pn == 2.0:
        return hi * sqrt(1.0 + r * r)
    return hi * pow(1.0 + pow(r, pn), 1.0 / pn)


cdef inline double _pad(int64_t c, double tmin, double tmax) noexcept nogil:
    """Token rows of one expert's tiles: c rounded up to whole tiles of the height the kernel
    model picks (sieve.hw.gpu._token_tiles: tmax from tmax tokens on, else the next power of
    two within [tmin, tmax]); c itself when tmax <= 0."""
    if tmax <= 0 or c <= 0:
        return <double>c
    cdef double t = <double>c, tm
    if t >= tmax:
        tm = tmax
    else:
        tm = 1.0
        while tm < t:
            tm *= 2.0
        if tm < tmin:
            tm = tmin
        if tm > tmax:
            tm = tmax
    return ceil(t / tm) * tm


cdef inline double _cp_tgpu(double n, double tok, double tokp, double w, double a, double f,
                            double bw, double peak, double k0, double pn) noexcept nogil:
    """Kernel time of the GPU-side experts' grouped GEMM: t_GPU = k0 + comb(bytes / bw, FLOPs
    of the padded tokens / peak); 0 without experts."""
    if n <= 0:
        return 0.0
    return k0 + _comb((w * n + a * tok) / bw, f * tokp / peak, pn)


cdef inline double _cp_gpu(double n, double tok, double t_gpu, double a, double bw, double k0,
                           double h, double g, double d) noexcept nogil:
    """End of the GPU-side experts: the grouped GEMM (t_gpu, _cp_tgpu) streams its weights
    from when the HBM lane is free, and cannot end before its kernels' fixed time k0 and its
    tokens' activations have run after the dispatch on a free compute lane (work queued there,
    e.g. the other micro-batch's, goes first)."""
    if n <= 0:
        return 0.0
    return _dmax(h + t_gpu, _dmax(g, d) + k0 + a * tok / bw)


cdef inline double _cp_att(double e_g, double pim, double h, double p0, double pp, double orr,
                           double ob) noexcept nogil:
    """Two-batch overlap: the PIM lane's period when the other micro-batch's next attention is
    what it runs after this split's PIM experts: that attention is ready at R (its kernels
    before the first weight load from a free compute lane, the rest after the HBM lane and
    this split's GPU experts, E_G, or the lane alone without GPU experts), and the PIM idles
    from the end of these PIM experts until R. 0 without the term (orr < 0)."""
    if orr < 0:
        return 0.0
    cdef double r = orr
    if ob >= 0:
        r = _dmax(orr, e_g if e_g > 0 else h) + ob
    return pp + _dmax(pim, r - p0)


cdef inline double _cp_obj(double t, double n, double t_gpu, double pim, double w, double bw,
                           double chain, double pg, double ph, double pp) noexcept nogil:
    """The layer's estimate: the expert phase's end T after this micro-batch's own chain, and
    (two-batch overlap) each lane's work of both micro-batches with this split's: the GPU
    experts' weight stream on the HBM lane, the rest of their kernel time on the compute lane,
    the PIM program on PIM. With the period terms 0 it is T (each lane term is <= T)."""
    cdef double occ_h = 0.0, occ_g = 0.0
    if n > 0:
        occ_h = w * n / bw
        occ_g = t_gpu - occ_h
    return _dmax(_dmax(t + chain, pg + occ_g), _dmax(ph + occ_h, pp + pim))


cdef inline double _cp_cyc(double n, double w, double bw, double pim, double p0, double xe,
                           double xr, double xc, double xa, double xp) noexcept nogil:
    """Two-batch overlap: the earliest the other micro-batch decides again: its GPU expert
    stream's projected end xe, delayed by this split's weight stream (at most the xr it has
    left: processor sharing), then its chain xc to its next attention; that attention, on
    the PIM (xp > 0), also after this split's PIM experts (p0 + pim); then xa, the attention
    and the rest of its chain. 0 without the term (xe < 0)."""
    if xe < 0:
        return 0.0
    cdef double occ_h = w * n / bw if n > 0 else 0.0
    cdef double s = xe + (occ_h if occ_h < xr else xr) + xc
    if xp > 0 and p0 + pim > s:
        s = p0 + pim
    return s + xa


cdef struct FillFit:
    Py_ssize_t lo       # smallest observed count (-1: none)
    Py_ssize_t hi       # largest observed count
    Py_ssize_t n_seen   # observed counts (>= 1)
    double a, b         # least-squares line a + b n through them (one: b = values[m] / m)


cdef inline void _fill_fit(const double* values, const int64_t* n_obs, Py_ssize_t K,
                           FillFit* fit) noexcept nogil:
    """The observed counts of a cost table (1 <= n < K) and the line fill_unobserved
    extrapolates them by."""
    cdef Py_ssize_t i
    cdef double sx = 0.0, sy = 0.0, sxx = 0.0, sxy = 0.0, x, y, den
    fit.lo = -1
    fit.hi = -1
    fit.n_seen = 0
    fit.a = 0.0
    fit.b = 0.0
    for i in range(1, K):
        if n_obs[i] > 0:
            fit.n_seen += 1
            x = <double>i
            y = values[i]
            sx += x
            sy += y
            sxx += x * x
            sxy += x * y
            if fit.lo < 0:
                fit.lo = i
            fit.hi = i
    if fit.n_seen == 1:
        fit.b = values[fit.lo] / <double>fit.lo
    elif fit.n_seen > 1:
        den = fit.n_seen * sxx - sx * sx
        fit.b = (fit.n_seen * sxy - sx * sy) / den
        fit.a = (sy - fit.b * sx) / fit.n_seen


cdef inline double _fill_at(Py_ssize_t i, const double* values, const int64_t* n_obs,
                            double slope, const FillFit* fit) noexcept nogil:
    """fill_unobserved's value for one count 1 <= i < K (fit: _fill_fit of the table)."""
    cdef Py_ssize_t prev, nxt
    cdef double est
    if n_obs[i] > 0 or fit.n_seen == 0:
        return values[i]
    if fit.n_seen == 1:
        est = fit.b * i
    elif i < fit.lo or i > fit.hi:
        est = fit.a + fit.b * i
    else:  # between the observed counts around it
        prev = i - 1
        while n_obs[prev] == 0:
            prev -= 1
        nxt = i + 1
        while n_obs[nxt] == 0:
            nxt += 1
        est = values[prev] + (values[nxt] - values[prev]) * (i - prev) / <double>(nxt - prev)
    return est if est > i * slope else i * slope


def cp_timing(double[::1] par, object t, double fixed):
    """Write a LayerTiming (sieve.sched.partition) and the PIM fixed time into sieve_cp_greedy's
    par (Q_H ... Q_OB, Q_XE ... Q_XP, Q_FIXED; None for other_attn_* and other_stream_end_ns
    -> -1): sieve.sched.cp.sieve_cp's one
    call per decision instead of a dozen item stores in Python."""
    if par.shape[0] < Q_N:
        raise ValueError("cp_timing: par must hold Q_N values")
    cdef object o_r = t.other_attn_ready_ns, o_b = t.other_attn_blocked_ns
    par[6] = t.hbm_ready_ns  # Q_H
    par[7] = t.gpu_ready_ns  # Q_G
    par[8] = t.dispatch_ns  # Q_D
    par[9] = t.pim_ready_ns  # Q_P
    par[12] = t.combine_ready_ns  # Q_C
    par[11] = fixed  # Q_FIXED
    par[16] = t.chain_ns  # Q_CHAIN
    par[17] = t.gpu_period_ns  # Q_PG
    par[18] = t.hbm_period_ns  # Q_PH
    par[19] = t.pim_period_ns  # Q_PP
    par[20] = -1.0 if o_r is None else <double>o_r  # Q_OR
    par[21] = -1.0 if o_b is None else <double>o_b  # Q_OB
    cdef object x_e = t.other_stream_end_ns
    par[29] = -1.0 if x_e is None else <double>x_e  # Q_XE
    par[30] = 0.0 if x_e is None else <double>t.other_stream_left_ns  # Q_XR
    par[31] = 0.0 if x_e is None else <double>t.other_chain_ns  # Q_XC
    par[32] = 0.0 if x_e is None else <double>t.other_rest_ns  # Q_XA
    par[33] = 1.0 if (x_e is not None and t.other_attn_on_pim) else 0.0  # Q_XP


def sieve_cp_greedy(const int64_t[::1] counts, const double[::1] table,
                    const int64_t[::1] n_obs, int8_t[::1] on_pim, double[::1] par):
    """One decision of the critical-path Sieve: the seed's sort and single scan, moving the next
    most popular expert to the GPU while the estimate strictly decreases: T = max(link free for
    the combine, end of GPU experts, end of PIM experts), under two-batch overlap with the
    lanes' period bounds (_cp_obj), the other micro-batch's next attention (_cp_att) and its
    next decision (_cp_cyc; Q_* layout of par). A count's PIM time is table[c], read
    with its unobserved counts filled from the observed ones (fill_unobserved's values, only
    for the counts the layer has) when n_obs (the table's observations per count) is given,
    as is when n_obs is empty; c * slope past the table's end. Returns the experts moved, -1
    on no memory."""
    cdef Py_ssize_t E = counts.shape[0]
    cdef Py_ssize_t K = table.shape[0]
    cdef Py_ssize_t i, j, n_act = 0, moved = 0, steps = 0
    cdef int64_t c, cmax = 0, c_prev
    cdef double pim, t_cur, t0, e_g, e_p, t_new, pe = 0.0, n_g = 0.0, tok_g = 0.0, eg_cur, ep_cur
    cdef double tokp_g = 0.0, cp = 0.0, tg, p0
    cdef int64_t* order
    cdef int64_t* start
    cdef bint fill = n_obs.shape[0] > 0
    cdef FillFit fit
    if on_pim.shape[0] != E or par.shape[0] < Q_N:
        raise ValueError("sieve_cp_greedy: on_pim must match counts and par hold Q_N values")
    if fill and n_obs.shape[0] != K:
        raise ValueError("sieve_cp_greedy: n_obs must be empty or match the table")
    cdef double w = par[Q_W], a = par[Q_A], f = par[Q_F], bw = par[Q_BW], peak = par[Q_PEAK]
    cdef double k0 = par[Q_K0], h = par[Q_H], g = par[Q_G], d = par[Q_D], p = par[Q_P]
    cdef double slope = par[Q_SLOPE], fixed = par[Q_FIXED], cr = par[Q_C]
    cdef double chain = par[Q_CHAIN], pg = par[Q_PG], ph = par[Q_PH], pp = par[Q_PP]
    cdef double orr = par[Q_OR], ob = par[Q_OB]
    cdef double xe = par[Q_XE], xr = par[Q_XR], xc = par[Q_XC], xa = par[Q_XA], xp = par[Q_XP]
    cdef double pn = par[Q_PN], tmin = par[Q_TMIN], tmax = par[Q_TMAX]
    if bw <= 0 or peak <= 0:
        raise ValueError("sieve_cp_greedy: bw and peak must be > 0")
    for i in range(E):
        c = counts[i]
        if c < 0:
            raise ValueError("sieve_cp_greedy: token counts must be >= 0")
        if c > cmax:
            cmax = c
    order = <int64_t*>malloc((E + 1) * sizeof(int64_t))
    start = <int64_t*>malloc((cmax + 2) * sizeof(int64_t))
    if order == NULL or start == NULL:
        free(order)
        free(start)
        return -1
    with nogil:
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
        if fill:
            _fill_fit(&table[0], &n_obs[0], K, &fit)
        pim = fixed if n_act > 0 else 0.0
        c_prev = -1
        for j in range(n_act):
            c = counts[order[j]]
            on_pim[order[j]] = 1
            if c != c_prev:  # sorted: each distinct count's PIM time read once
                c_prev = c
                pe = (c * slope if c >= K else _fill_at(c, &table[0], &n_obs[0], slope, &fit)
                      if fill else table[c])
            pim += pe
        p0 = _dmax(p, d)  # the PIM program starts after its tokens and a free PIM
        eg_cur = 0.0
        ep_cur = p0 + pim if n_act > 0 else 0.0
        t_cur = _dmax(_cp_obj(_dmax(cr, _dmax(eg_cur, ep_cur)), 0.0, 0.0, pim, w, bw, chain,
                              pg, ph, pp),
                      _dmax(_cp_att(0.0, pim, h, p0, pp, orr, ob),
                            _cp_cyc(0.0, w, bw, pim, p0, xe, xr, xc, xa, xp)))
        t0 = t_cur
        c_prev = -1
        for j in range(n_act):
            c = counts[order[j]]
            if c != c_prev:  # sorted: a count's PIM time and tile rows once per distinct count
                c_prev = c
                pe = (c * slope if c >= K else _fill_at(c, &table[0], &n_obs[0], slope, &fit)
                      if fill else table[c])
                cp = _pad(c, tmin, tmax)
            tg = _cp_tgpu(n_g + 1, tok_g + c, tokp_g + cp, w, a, f, bw, peak, k0, pn)
            e_g = _cp_gpu(n_g + 1, tok_g + c, tg, a, bw, k0, h, g, d)
            pim -= pe + (fixed if j == n_act - 1 else 0.0)
            e_p = p0 + pim if j < n_act - 1 else 0.0
            t_new = _dmax(_cp_obj(_dmax(cr, _dmax(e_g, e_p)), n_g + 1, tg,
                                  pim if j < n_act - 1 else 0.0, w, bw, chain, pg, ph, pp),
                          _dmax(_cp_att(e_g, pim if j < n_act - 1 else 0.0, h, p0, pp, orr,
                                        ob),
                                _cp_cyc(n_g + 1, w, bw, pim if j < n_act - 1 else 0.0, p0,
                                        xe, xr, xc, xa, xp)))
            steps += 1
            if t_new < t_cur:
                n_g += 1
                tok_g += c
                tokp_g += cp
                eg_cur = e_g
                ep_cur = e_p
                t_cur = t_new
                on_pim[order[j]] = 0
                moved += 1
            else:
                break
        par[13] = eg_cur  # Q_EG
        par[14] = ep_cur  # Q_EP
        par[15] = <double>steps  # Q_STEPS
        par[22] = t0  # Q_J0
        par[23] = t_cur  # Q_J
        par[27] = <double>n_act  # Q_NACT
        par[28] = <double>cmax  # Q_CMAX
    free(order)
    free(start)
    return moved


def fill_unobserved(const double[::1] values, const int64_t[::1] n_obs, double slope,
                    double[::1] out):
    """The runtime cost table read with its unobserved counts estimated from the observed ones
    (sieve.sched.estimator.EmaCostTable.filled, which holds the rule and the numpy reference
    the tests compare with): observed counts keep their value; with none observed the
    roofline ``n * slope``; with one, ``values[m] * n / m``; with several, the straight line
    between the two observed neighbours, beyond the observed range the least-squares line
    through every observed count; never below the roofline; ``out[0] = 0``. Returns the number
    of observed counts. (sieve_cp_greedy reads the same values count by count, _fill_at.)"""
    cdef Py_ssize_t K = values.shape[0], i
    cdef FillFit fit
    if n_obs.shape[0] != K or out.shape[0] != K:
        raise ValueError("fill_unobserved: values, n_obs and out must have one length")
    if K == 0:
        return 0
    with nogil:
        _fill_fit(&values[0], &n_obs[0], K, &fit)
        out[0] = 0.0
        for i in range(1, K):
            out[i] = _fill_at(i, &values[0], &n_obs[0], slope, &fit)
    return fit.n_seen
