# The compiled LoadStore trace reader (its only importer is sieve/dram/memtrace.py).
#
# Reads a Ramulator 2 LoadStore trace ("LD 0x40" / "ST 4096", one request per line) from a
# binary file object in blocks and fills the caller's buffers with the requests a chunk at a
# time (LoadStoreReader.read_into), so a trace of any size is read in bounded memory. It parses
# the common line in C: optional blanks, LD or ST, blanks, then 0x/0X and 1-15 hex digits or
# 1-18 decimal digits, optional blanks or a carriage return - exactly what memtrace._FAST
# matches, so every such number is below 2**63. Any other line (a comment, a blank line, a malformed or over-long line) goes to
# the Python reference parser (memtrace._parse_line), which skips it, returns its request, or
# raises the one error that names the file, line and field. Lines are split at b"\n" only, as
# bytes.split does in the reference reader.

cimport cython
from libc.stdint cimport int8_t, int64_t, uint8_t
from libc.string cimport memchr, memmove


# hex digit values by byte, -1 for any other byte
cdef int8_t _HEX[256]
cdef int _k
for _k in range(256):
    _HEX[_k] = -1
for _k in range(10):
    _HEX[48 + _k] = _k
for _k in range(6):
    _HEX[97 + _k] = 10 + _k
    _HEX[65 + _k] = 10 + _k


cdef inline const uint8_t* _parse(const uint8_t* s, const uint8_t* e, int64_t* addr,
                                  int* wr) noexcept nogil:
    """Parse a plain request line from s to e: optional blanks, LD or ST, blanks, 0x/0X and
    1-15 hex digits or 1-18 decimal digits, optional blanks or carriage returns. Where it
    stopped (the first byte after them), or NULL when the bytes are not such a line's start;
    `addr` and `wr` are set when it returns non-NULL. It reads no byte past e, and the byte at
    e only where a run of digits reaches it: that byte must be readable and no digit (the
    line's newline, or the zero the reader keeps after its data), so the digit loops need no
    bounds test."""
    cdef const uint8_t* p = s
    cdef const uint8_t* j
    cdef int64_t v = 0
    cdef int d
    while p < e and (p[0] == 32 or p[0] == 9):
        p += 1
    if p + 2 > e:
        return NULL
    if p[0] == 76 and p[1] == 68:        # "LD"
        wr[0] = 0
    elif p[0] == 83 and p[1] == 84:      # "ST"
        wr[0] = 1
    else:
        return NULL
    p += 2
    j = p
    while p < e and (p[0] == 32 or p[0] == 9):
        p += 1
    if p == j:
        return NULL
    if p + 1 < e and p[0] == 48 and (p[1] == 120 or p[1] == 88):   # "0x"
        p += 2
        j = p
        d = _HEX[p[0]]
        while d >= 0:  # (stops at e: no digit there)
            v = v * 16 + d
            p += 1
            d = _HEX[p[0]]
        if p == j or p - j > 15 or p > e:
            return NULL
    else:
        j = p
        while 48 <= p[0] <= 57:  # (stops at e: no digit there)
            v = v * 10 + (p[0] - 48)
            p += 1
        if p == j or p - j > 18 or p > e:
            return NULL
    while p < e and (p[0] == 32 or p[0] == 9 or p[0] == 13):
        p += 1
    addr[0] = v
    return p


cdef inline int64_t _scan(const uint8_t* s, const uint8_t* e, int64_t max_len, int64_t* addr,
                          int* wr) noexcept nogil:
    """_fast on the line that starts at s, found while parsing it (no memchr first): its
    length (the bytes before its newline) when it is a plain request line whose newline is
    before `e`, else -1 (the caller then finds the line and asks _fast and the reference
    parser, so every verdict is theirs)."""
    cdef const uint8_t* p = _parse(s, e, addr, wr)
    if p == NULL or p >= e or p[0] != 10 or p - s > max_len:
        return -1
    return p - s


cdef inline int _fast(const uint8_t* s, int64_t n, int64_t max_len, int64_t* addr,
                      int* wr) noexcept nogil:
    """1 and (address, write) when the n bytes at s are a plain request line, else 0."""
    if n > max_len:
        return 0
    return _parse(s, s + n, addr, wr) == s + n


@cython.final
cdef class LoadStoreReader:
    """Chunked reader of one LoadStore trace file.

    Args:
        fh: a binary file object (``readinto``), owned by the caller.
        who: the file's name in error messages.
        parse_line: the reference parser, ``parse_line(raw, who, lineno)`` -> ``None`` (skip),
            ``(is_write, address)``, or raises TraceFormatError.
        max_line: longest line accepted (longer ones go to parse_line, which refuses them).
        block: bytes read at a time.
    """

    cdef object fh
    cdef object who
    cdef object parse_line
    cdef int64_t max_line
    cdef bytearray buf
    cdef int64_t start       # first unparsed byte in buf
    cdef int64_t end         # bytes held in buf (buf[end] is 0: _parse stops there)
    cdef int64_t lineno      # lines parsed so far
    cdef bint eof
    cdef bint done
    cdef int64_t block

    def __init__(self, fh, who, parse_line, int64_t max_line, int64_t block=1 << 20):
        if block < 1 or max_line < 1:
            raise ValueError("LoadStoreReader: block and max_line must be >= 1")
        self.fh = fh
        self.who = who
        self.parse_line = parse_line
        self.max_line = max_line
        self.block = block
        self.buf = bytearray(block + max_line + 2)
        self.start = 0
        self.end = 0
        self.lineno = 0
        self.eof = False
        self.done = False

    @property
    def lines(self):
        """Lines parsed so far."""
        return self.lineno

    cdef int _fill(self) except -1:
        """Move the unparsed bytes to the front and read one more block; sets eof."""
        cdef int64_t keep = self.end - self.start
        cdef unsigned char* p = self.buf
        cdef int64_t got
        if keep and self.start:
            memmove(p, p + self.start, keep)
        self.start = 0
        self.end = keep
        if len(self.buf) < keep + self.block + 1:
            self.buf.extend(bytes(keep + self.block + 1 - len(self.buf)))
        view = memoryview(self.buf)[keep:keep + self.block]
        got = self.fh.readinto(view) or 0
        view.release()
        if got == 0:
            self.eof = True
        self.end = keep + got
        p = self.buf
        p[self.end] = 0  # the stop after the data (_parse's digit loops)
        return 0

    def read_into(self, int64_t[::1] addr, uint8_t[::1] wr):
        """The next requests into the caller's buffers (any int64 / uint8 buffers of equal
        length, e.g. ``array.array`` ``"q"`` / ``"B"``: no numpy needed): addresses and
        write flags (0 / 1); returns how many were read (at most the buffers' length), 0 at
        the end of the file."""
        if addr.shape[0] != wr.shape[0] or addr.shape[0] < 1:
            raise ValueError("LoadStoreReader.read_into: the buffers must have the same "
                             "length, at least 1")
        cdef int64_t max_n = addr.shape[0]
        cdef int64_t n = 0, n0, ln, a = 0, at, max_line = self.max_line
        cdef int w = 0
        cdef unsigned char* p
        cdef const uint8_t* line
        cdef const uint8_t* nl
        cdef const uint8_t* e
        cdef int64_t* out_a = &addr[0]
        cdef uint8_t* out_w = &wr[0]
        while n < max_n and not self.done:
            p = self.buf
            # the common lines, each parsed in one pass, in a loop over locals (nothing in it
            # reads the file or calls Python, so the block stays where it is)
            at = self.start
            e = <const uint8_t*>(p + self.end)
            n0 = n
            while n < max_n:
                ln = _scan(<const uint8_t*>(p + at), e, max_line, &a, &w)
                if ln < 0:
                    break
                out_a[n] = a
                out_w[n] = <uint8_t>w
                n += 1
                at += ln + 1
            self.lineno += n - n0
            self.start = at
            if n == max_n:
                break
            nl = <const uint8_t*>memchr(p + self.start, 10, self.end - self.start)
            if nl == NULL:
                if not self.eof and self.end - self.start <= self.max_line:
                    self._fill()
                    continue
                # the last line (no newline at the end of the file), or a line longer than
                # any request line: both go to the reference parser as they stand
                ln = self.end - self.start
                if not self.eof:
                    ln = self.max_line + 1  # (only its length matters: it is refused)
                line = <const uint8_t*>(p + self.start)
                self.lineno += 1
                if _fast(line, ln, self.max_line, &a, &w):
                    addr[n] = a
                    wr[n] = w
                    n += 1
                else:
                    rec = self.parse_line(bytes(self.buf[self.start:self.start + ln]),
                                          self.who, self.lineno)
                    if rec is not None:
                        wr[n] = rec[0]
                        addr[n] = rec[1]
                        n += 1
                self.done = True
                break
            line = <const uint8_t*>(p + self.start)
            ln = nl - line
            self.lineno += 1
            if _fast(line, ln, self.max_line, &a, &w):
                addr[n] = a
                wr[n] = w
                n += 1
            else:
                rec = self.parse_line(bytes(self.buf[self.start:self.start + ln]), self.who,
                                      self.lineno)
                if rec is not None:
                    wr[n] = rec[0]
                    addr[n] = rec[1]
                    n += 1
            self.start += ln + 1
        return n
