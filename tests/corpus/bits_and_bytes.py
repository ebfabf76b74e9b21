"""Byte and bit programs over integer tensors of several dtypes, written as C programmers porting
to Python write them: base64 encoding and UTF-8 decoding and counting of rows of bytes, run-length
encoding, bit reversal of uint32 values kept in int64, Gray codes and their inverse, Hamming
distances between binary codes (uint8), saturating int8 arithmetic and Q15 fixed point (int16,
with an int64 reduction), GCDs (Euclid's and Stein's), Collatz step counts, bitset intersections
(int64 words), leading and trailing zero counts and parity, bits packed from and unpacked into
bool masks, bool masks combined and counted as slices, nibbles as uint8 slices, lowest-bit tricks
on uint32 tensors, byte presence by atomic updates (bool and int16 elements), integers formatted
as decimal and hex text, zigzag and varint encodings, 12-bit packed samples, byte swaps, and
16-bit PCM samples from bytes. The references are computed in plain Python or NumPy before the
programs run."""

import base64

import numpy as np
import torch

import parir_torch as parir

from .common import poison, randint


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


def _random_bytes(shape, rng):
    return randint(shape, rng, 0, 256, dtype=torch.uint8)


# ----- base64 encoding of each row (RFC 4648, '=' padding), the alphabet as a byte table -----

B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@parir.jit
def base64_encode_rows(data, table, out, n_bytes):
    n_groups = (n_bytes + 2) // 3
    parir.label('row')
    for r in range(data.shape[0]):
        parir.label('group')
        for g in range(n_groups):
            i = 3 * g
            b0 = parir.int32(data[r, i])
            b1 = parir.int32(data[r, i + 1]) if i + 1 < n_bytes else 0
            b2 = parir.int32(data[r, i + 2]) if i + 2 < n_bytes else 0
            triple = (b0 << 16) | (b1 << 8) | b2
            out[r, 4 * g] = table[(triple >> 18) & 0x3F]
            out[r, 4 * g + 1] = table[(triple >> 12) & 0x3F]
            out[r, 4 * g + 2] = table[(triple >> 6) & 0x3F] if i + 1 < n_bytes else 0x3D
            out[r, 4 * g + 3] = table[triple & 0x3F] if i + 2 < n_bytes else 0x3D


def case_base64(rng, device, rows=33, n_bytes=31):
    data = _random_bytes((rows, n_bytes), rng)
    enc = [base64.b64encode(bytes(row.tolist())) for row in data]
    ref = torch.tensor([list(e) for e in enc], dtype=torch.uint8)
    table = torch.tensor(list(B64_ALPHABET), dtype=torch.uint8)
    out = poison(tuple(ref.shape), dtype=torch.uint8, device=device)
    return dict(fn=base64_encode_rows, args=[data.to(device), table.to(device), out, n_bytes],
                spec={'row': parir.threads(rows), 'group': parir.threads(64)},
                check=[(out, ref)])


def case_base64_one_row(rng, device):
    return case_base64(rng, device, rows=1, n_bytes=1001)


# ----- UTF-8: decoding each row into code points (a while loop over variable-length chars) ----

@parir.jit
def utf8_decode_rows(data, lengths, code_points, n_chars):
    parir.label('row')
    for r in range(data.shape[0]):
        p = 0
        k = 0
        n_bytes = lengths[r]
        while p < n_bytes:
            byte = data[r, p]
            if byte < 0x80:
                cp = parir.int32(byte)
                n = 1
            elif (byte & 0xE0) == 0xC0:
                cp = parir.int32(byte & 0x1F)
                n = 2
            elif (byte & 0xF0) == 0xE0:
                cp = parir.int32(byte & 0x0F)
                n = 3
            else:
                cp = parir.int32(byte & 0x07)
                n = 4
            for c in range(1, n):
                cp = (cp << 6) | (data[r, p + c] & 0x3F)
            code_points[r, k] = cp
            k += 1
            p += n
        n_chars[r] = k
        while k < code_points.shape[1]:
            code_points[r, k] = -1
            k += 1


def _random_text(g, n_chars):
    ranges = [(0x20, 0x7F), (0x80, 0x800), (0x800, 0xD800), (0xE000, 0x10000),
              (0x10000, 0x110000)]
    chars = []
    for _ in range(n_chars):
        lo, hi = ranges[int(g.integers(0, len(ranges)))]
        chars.append(chr(int(g.integers(lo, hi))))
    return "".join(chars)


def _utf8_rows(rng, rows, max_chars):
    g = _np_rng(rng)
    texts = [_random_text(g, int(g.integers(0, max_chars + 1))) for _ in range(rows)]
    texts[0] = ""
    texts[-1] = "x" * max_chars
    encoded = [t.encode("utf-8") for t in texts]
    width = max(len(e) for e in encoded)
    data = torch.zeros(rows, width, dtype=torch.uint8)
    for r, e in enumerate(encoded):
        data[r, :len(e)] = torch.tensor(list(e), dtype=torch.uint8)
    lengths = torch.tensor([len(e) for e in encoded], dtype=torch.int32)
    return texts, data, lengths


def case_utf8_decode(rng, device):
    rows, max_chars = 33, 31
    texts, data, lengths = _utf8_rows(rng, rows, max_chars)
    ref_cp = torch.full((rows, max_chars), -1, dtype=torch.int32)
    for r, t in enumerate(texts):
        ref_cp[r, :len(t)] = torch.tensor([ord(c) for c in t], dtype=torch.int32)
    ref_n = torch.tensor([len(t) for t in texts], dtype=torch.int32)
    code_points = poison((rows, max_chars), dtype=torch.int32, device=device)
    n_chars = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=utf8_decode_rows,
                args=[data.to(device), lengths.to(device), code_points, n_chars],
                spec={'row': parir.threads(rows)},
                check=[(code_points, ref_cp), (n_chars, ref_n)])


# ----- UTF-8: counting code points (bytes that are not continuation bytes), a block per row ---

@parir.jit
def utf8_count_rows(data, lengths, counts):
    parir.label('row')
    for r in range(data.shape[0]):
        count = 0
        parir.label('byte')
        for j in range(data.shape[1]):
            if j < lengths[r] and (data[r, j] & 0xC0) != 0x80:
                count += 1
        counts[r] = count


def case_utf8_count(rng, device):
    rows = 31
    texts, data, lengths = _utf8_rows(rng, rows, 333)
    ref = torch.tensor([len(t) for t in texts], dtype=torch.int32)
    counts = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=utf8_count_rows, args=[data.to(device), lengths.to(device), counts],
                spec={'row': parir.threads(rows), 'byte': parir.threads(128).reduce()},
                check=[(counts, ref)])


# ----- Run-length encoding of each row: runs of at most 255, the rest of the row zeroed -------

@parir.jit
def rle_encode_rows(data, values, run_lengths, n_runs):
    rows, n = data.shape
    parir.label('row')
    for r in range(rows):
        k = 0
        j = 0
        while j < n:
            byte = data[r, j]
            run = 1
            while j + run < n and data[r, j + run] == byte and run < 255:
                run += 1
            values[r, k] = byte
            run_lengths[r, k] = run
            k += 1
            j += run
        n_runs[r] = k
        for t in range(k, n):
            values[r, t] = 0
            run_lengths[r, t] = 0


def _rle_ref(row):
    vals, lens = [], []
    j = 0
    while j < len(row):
        run = 1
        while j + run < len(row) and row[j + run] == row[j] and run < 255:
            run += 1
        vals.append(row[j])
        lens.append(run)
        j += run
    return vals, lens


def case_rle(rng, device):
    rows, n = 31, 1000
    g = _np_rng(rng)
    data = np.zeros((rows, n), dtype=np.uint8)
    for r in range(rows):
        j = 0
        while j < n:
            run = int(g.integers(1, 40))
            data[r, j:j + run] = int(g.integers(0, 4))
            j += run
    data[0, :] = 7                               # one run of 1000: four runs of at most 255
    data[1, :] = np.arange(n) % 256              # no runs at all
    ref_v = np.zeros((rows, n), dtype=np.uint8)
    ref_l = np.zeros((rows, n), dtype=np.uint8)
    ref_n = np.zeros(rows, dtype=np.int64)
    for r in range(rows):
        vals, lens = _rle_ref(data[r].tolist())
        ref_v[r, :len(vals)] = vals
        ref_l[r, :len(lens)] = lens
        ref_n[r] = len(vals)
    values = poison((rows, n), dtype=torch.uint8, device=device)
    run_lengths = poison((rows, n), dtype=torch.uint8, device=device)
    n_runs = poison(rows, dtype=torch.int64, device=device)
    return dict(fn=rle_encode_rows,
                args=[torch.from_numpy(data).to(device), values, run_lengths, n_runs],
                spec={'row': parir.threads(rows)},
                check=[(values, torch.from_numpy(ref_v)), (run_lengths, torch.from_numpy(ref_l)),
                       (n_runs, torch.from_numpy(ref_n))])


# ----- Bit reversal of uint32 values held in int64: swaps of halves, and bit by bit ----------

@parir.jit
def reverse_bits32(v):
    v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
    v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
    v = ((v >> 4) & 0x0F0F0F0F) | ((v & 0x0F0F0F0F) << 4)
    v = ((v >> 8) & 0x00FF00FF) | ((v & 0x00FF00FF) << 8)
    v = (v >> 16) | ((v << 16) & 0xFFFFFFFF)
    return v


@parir.jit
def bit_reverse(x, out, out_loop, N):
    parir.label('i')
    for i in range(N):
        out[i] = reverse_bits32(x[i])
        v = x[i]
        rev = 0
        for b in range(32):
            rev = (rev << 1) | (v & 1)
            v >>= 1
        out_loop[i] = rev


def case_bit_reverse(rng, device):
    N = 1000
    x = randint(N, rng, 0, 2**32, dtype=torch.int64)
    x[:4] = torch.tensor([0, 1, 0xFFFFFFFF, 0x80000000])
    ref = torch.tensor([int(format(int(v), "032b")[::-1], 2) for v in x], dtype=torch.int64)
    out = poison(N, dtype=torch.int64, device=device)
    out_loop = poison(N, dtype=torch.int64, device=device)
    return dict(fn=bit_reverse, args=[x.to(device), out, out_loop, N],
                spec={'i': parir.threads(N)}, check=[(out, ref), (out_loop, ref)])


# ----- Gray code and its inverse (a while loop, and the shift fold) on int32 ------------------

@parir.jit
def gray_codes(n, gray, inverse, inverse_fold, N):
    parir.label('i')
    for i in range(N):
        g = n[i] ^ (n[i] >> 1)
        gray[i] = g
        b = g
        mask = g >> 1
        while mask != 0:
            b ^= mask
            mask >>= 1
        inverse[i] = b
        f = g
        f ^= f >> 16
        f ^= f >> 8
        f ^= f >> 4
        f ^= f >> 2
        f ^= f >> 1
        inverse_fold[i] = f


def case_gray(rng, device):
    N = 1000
    n = randint(N, rng, 0, 2**31 - 1, dtype=torch.int32)
    n[:3] = torch.tensor([0, 1, 2**31 - 1], dtype=torch.int32)
    ref_g = torch.tensor([int(v) ^ (int(v) >> 1) for v in n], dtype=torch.int32)
    gray = poison(N, dtype=torch.int32, device=device)
    inverse = poison(N, dtype=torch.int32, device=device)
    inverse_fold = poison(N, dtype=torch.int32, device=device)
    return dict(fn=gray_codes, args=[n.to(device), gray, inverse, inverse_fold, N],
                spec={'i': parir.threads(N)},
                check=[(gray, ref_g), (inverse, n.clone()), (inverse_fold, n.clone())])


# ----- Hamming distances between binary codes (uint8 bytes), popcount of a byte as a helper ---

@parir.jit
def popcount8(byte):
    byte = byte - ((byte >> 1) & 0x55)
    byte = (byte & 0x33) + ((byte >> 2) & 0x33)
    return (byte + (byte >> 4)) & 0x0F


@parir.jit
def hamming_matrix(codes_a, codes_b, dist, n_bytes):
    parir.label('i')
    for i in range(codes_a.shape[0]):
        parir.label('j')
        for j in range(codes_b.shape[0]):
            d = parir.int32(0)
            for k in range(n_bytes):
                d += popcount8(codes_a[i, k] ^ codes_b[j, k])
            dist[i, j] = d


def case_hamming_matrix(rng, device):
    na, nb, n_bytes = 33, 31, 16
    a = _random_bytes((na, n_bytes), rng)
    b = _random_bytes((nb, n_bytes), rng)
    a[0, :] = 0
    b[0, :] = 255
    bits_a = np.unpackbits(a.numpy(), axis=1)
    bits_b = np.unpackbits(b.numpy(), axis=1)
    ref = (bits_a[:, None, :] != bits_b[None, :, :]).sum(-1).astype(np.int32)
    dist = poison((na, nb), dtype=torch.int32, device=device)
    return dict(fn=hamming_matrix, args=[a.to(device), b.to(device), dist, n_bytes],
                spec={'i': parir.threads(na), 'j': parir.threads(nb)},
                check=[(dist, torch.from_numpy(ref))])


# ----- Saturating int8 addition and subtraction (as ARM's QADD8), and the wrapping sum --------

@parir.jit
def saturating_i8(a, b, sat_add, sat_sub, wrap_add, N):
    parir.label('i')
    for i in range(N):
        s = parir.int16(a[i]) + parir.int16(b[i])
        if s > 127:
            s = 127
        elif s < -128:
            s = -128
        sat_add[i] = s
        sat_sub[i] = parir.int8(max(-128, min(127, parir.int16(a[i]) - b[i])))
        wrap_add[i] = a[i] + b[i]


def case_saturating_i8(rng, device):
    N = 1000
    a = randint(N, rng, -128, 128, dtype=torch.int8)
    b = randint(N, rng, -128, 128, dtype=torch.int8)
    a[:4] = torch.tensor([127, -128, 127, -128], dtype=torch.int8)
    b[:4] = torch.tensor([127, -128, -128, 127], dtype=torch.int8)
    a16, b16 = a.numpy().astype(np.int16), b.numpy().astype(np.int16)
    ref_add = np.clip(a16 + b16, -128, 127).astype(np.int8)
    ref_sub = np.clip(a16 - b16, -128, 127).astype(np.int8)
    ref_wrap = ((a16 + b16 + 128) % 256 - 128).astype(np.int8)
    outs = [poison(N, dtype=torch.int8, device=device) for _ in range(3)]
    return dict(fn=saturating_i8, args=[a.to(device), b.to(device), *outs, N],
                spec={'i': parir.threads(N)},
                check=[(outs[0], torch.from_numpy(ref_add)), (outs[1], torch.from_numpy(ref_sub)),
                       (outs[2], torch.from_numpy(ref_wrap))])


# ----- Q15 fixed point (int16): rounded, saturated products, and dot products of rows --------

@parir.jit
def q15_mul(a, b, out, N):
    parir.label('i')
    for i in range(N):
        p = parir.int32(a[i]) * parir.int32(b[i])
        p = (p + 0x4000) >> 15
        out[i] = min(max(p, -32768), 32767)


def _q15_mul_ref(a, b):
    p = (a.astype(np.int64) * b.astype(np.int64) + 0x4000) >> 15
    return np.clip(p, -32768, 32767).astype(np.int16)


def case_q15_mul(rng, device):
    N = 1000
    a = randint(N, rng, -32768, 32768, dtype=torch.int16)
    b = randint(N, rng, -32768, 32768, dtype=torch.int16)
    a[:3] = torch.tensor([-32768, -32768, 16384], dtype=torch.int16)
    b[:3] = torch.tensor([-32768, 32767, 16384], dtype=torch.int16)
    ref = torch.from_numpy(_q15_mul_ref(a.numpy(), b.numpy()))
    out = poison(N, dtype=torch.int16, device=device)
    return dict(fn=q15_mul, args=[a.to(device), b.to(device), out, N],
                spec={'i': parir.threads(N)}, check=[(out, ref)])


@parir.jit
def q15_dot_rows(x, w, out):
    rows, n = x.shape
    parir.label('row')
    for r in range(rows):
        acc = parir.int64(0)
        parir.label('j')
        for j in range(n):
            acc += parir.int32(x[r, j]) * w[r, j]
        acc = (acc + 0x4000) >> 15
        out[r] = parir.int16(min(max(acc, -32768), 32767))


def case_q15_dot(rng, device):
    rows, n = 33, 1000
    x = randint((rows, n), rng, -32768, 32768, dtype=torch.int16)
    w = randint((rows, n), rng, -4096, 4096, dtype=torch.int16)
    x[0, :] = 32767                           # saturates high
    w[0, :] = 4095
    acc = (x.numpy().astype(np.int64) * w.numpy().astype(np.int64)).sum(1)
    ref = np.clip((acc + 0x4000) >> 15, -32768, 32767).astype(np.int16)
    out = poison(rows, dtype=torch.int16, device=device)
    return dict(fn=q15_dot_rows, args=[x.to(device), w.to(device), out],
                spec={'row': parir.threads(rows), 'j': parir.threads(256).reduce()},
                check=[(out, torch.from_numpy(ref))])


# ----- GCD per pair: Euclid's loop with a tuple swap, and Stein's binary GCD as a helper -----

@parir.jit
def binary_gcd(u, v):
    if u == 0 or v == 0:
        return u | v
    else:
        shift = 0
        while ((u | v) & 1) == 0:
            u >>= 1
            v >>= 1
            shift += 1
        while (u & 1) == 0:
            u >>= 1
        while v != 0:
            while (v & 1) == 0:
                v >>= 1
            if u > v:
                u, v = v, u
            v -= u
        return u << shift


@parir.jit
def gcd_pairs(a, b, out_euclid, out_stein, N):
    parir.label('i')
    for i in range(N):
        x = a[i]
        y = b[i]
        while y != 0:
            x, y = y, x % y
        out_euclid[i] = x
        out_stein[i] = binary_gcd(a[i], b[i])


def case_gcd(rng, device):
    import math
    N = 1000
    g = randint(N, rng, 1, 1000, dtype=torch.int64)
    a = g * randint(N, rng, 0, 100000, dtype=torch.int64)
    b = g * randint(N, rng, 0, 100000, dtype=torch.int64)
    a[:3] = torch.tensor([0, 0, 48])
    b[:3] = torch.tensor([0, 17, 0])
    ref = torch.tensor([math.gcd(int(x), int(y)) for x, y in zip(a, b)], dtype=torch.int64)
    out_e = poison(N, dtype=torch.int64, device=device)
    out_s = poison(N, dtype=torch.int64, device=device)
    return dict(fn=gcd_pairs, args=[a.to(device), b.to(device), out_e, out_s, N],
                spec={'i': parir.threads(N)}, check=[(out_e, ref), (out_s, ref)])


# ----- Collatz: steps to reach 1 and the highest value on the way ----------------------------

@parir.jit
def collatz(start, steps, peak, N):
    parir.label('i')
    for i in range(N):
        n = start[i]
        k = 0
        top = n
        while n != 1:
            if n & 1:
                n = 3 * n + 1
            else:
                n >>= 1
            top = max(top, n)
            k += 1
        steps[i] = k
        peak[i] = top


def _collatz_ref(n):
    k, top = 0, n
    while n != 1:
        n = 3 * n + 1 if n & 1 else n // 2
        top = max(top, n)
        k += 1
    return k, top


def case_collatz(rng, device):
    N = 1000
    start = torch.arange(1, N + 1, dtype=torch.int64)
    start[500:] = randint(N - 500, rng, 1, 10**6, dtype=torch.int64)
    refs = [_collatz_ref(int(v)) for v in start]
    assert _collatz_ref(27) == (111, 9232)
    ref_steps = torch.tensor([s for s, _ in refs], dtype=torch.int32)
    ref_peak = torch.tensor([p for _, p in refs], dtype=torch.int64)
    steps = poison(N, dtype=torch.int32, device=device)
    peak = poison(N, dtype=torch.int64, device=device)
    return dict(fn=collatz, args=[start.to(device), steps, peak, N],
                spec={'i': parir.threads(N)}, check=[(steps, ref_steps), (peak, ref_peak)])


# ----- Bitset intersections and unions: 64-bit words, SWAR popcount in int64 -----------------

@parir.jit
def popcount64(x):
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return (x * 0x0101010101010101) >> 56


@parir.jit
def bitset_counts(sets_a, sets_b, inter, union, n_words):
    parir.label('i')
    for i in range(sets_a.shape[0]):
        parir.label('j')
        for j in range(sets_b.shape[0]):
            c_and = 0
            c_or = 0
            for w in range(n_words):
                c_and += popcount64(sets_a[i, w] & sets_b[j, w])
                c_or += popcount64(sets_a[i, w] | sets_b[j, w])
            inter[i, j] = c_and
            union[i, j] = c_or


def case_bitset_counts(rng, device):
    na, nb, n_words = 33, 31, 5
    g = _np_rng(rng)
    a = g.integers(0, 2**63, size=(na, n_words), dtype=np.uint64) * np.uint64(2) \
        + g.integers(0, 2, size=(na, n_words), dtype=np.uint64)
    b = g.integers(0, 2**63, size=(nb, n_words), dtype=np.uint64) * np.uint64(2) \
        + g.integers(0, 2, size=(nb, n_words), dtype=np.uint64)
    a[0, :] = np.uint64(2**64 - 1)
    b[0, :] = np.uint64(0)
    bits_a = np.unpackbits(a.view(np.uint8), axis=1)
    bits_b = np.unpackbits(b.view(np.uint8), axis=1)
    ref_i = (bits_a[:, None, :] & bits_b[None, :, :]).sum(-1).astype(np.int32)
    ref_u = (bits_a[:, None, :] | bits_b[None, :, :]).sum(-1).astype(np.int32)
    ta = torch.from_numpy(a.view(np.int64).copy())
    tb = torch.from_numpy(b.view(np.int64).copy())
    inter = poison((na, nb), dtype=torch.int32, device=device)
    union = poison((na, nb), dtype=torch.int32, device=device)
    return dict(fn=bitset_counts, args=[ta.to(device), tb.to(device), inter, union, n_words],
                spec={'i': parir.threads(na), 'j': parir.threads(nb)},
                check=[(inter, torch.from_numpy(ref_i)), (union, torch.from_numpy(ref_u))])


# ----- Leading zeros (Hacker's Delight's nlz), trailing zeros (a while loop) and parity ------

@parir.jit
def bit_scan(x, clz, ctz, parity, N):
    parir.label('i')
    for i in range(N):
        v = parir.int64(x[i]) & 0xFFFFFFFF
        if v == 0:
            clz[i] = 32
            ctz[i] = 32
        else:
            n = 0
            u = v
            if u <= 0x0000FFFF:
                n += 16
                u <<= 16
            if u <= 0x00FFFFFF:
                n += 8
                u <<= 8
            if u <= 0x0FFFFFFF:
                n += 4
                u <<= 4
            if u <= 0x3FFFFFFF:
                n += 2
                u <<= 2
            if u <= 0x7FFFFFFF:
                n += 1
            clz[i] = n
            w = v
            t = 0
            while (w & 1) == 0:
                w >>= 1
                t += 1
            ctz[i] = t
        p = v ^ (v >> 16)
        p ^= p >> 8
        p ^= p >> 4
        p &= 0xF
        parity[i] = ((0x6996 >> p) & 1) == 1


def case_bit_scan(rng, device):
    N = 1000
    x = randint(N, rng, -2**31, 2**31, dtype=torch.int32)
    x[:200] = x[:200] >> randint(200, rng, 0, 32, dtype=torch.int32)   # more leading zeros
    x[200:400] = x[200:400] << randint(200, rng, 0, 32, dtype=torch.int32)
    x[:5] = torch.tensor([0, 1, -1, -2**31, 2**31 - 1], dtype=torch.int32)
    u = [int(v) & 0xFFFFFFFF for v in x]
    ref_clz = torch.tensor([32 - v.bit_length() for v in u], dtype=torch.int32)
    ref_ctz = torch.tensor([(v & -v).bit_length() - 1 if v else 32 for v in u], dtype=torch.int32)
    ref_par = torch.tensor([bin(v).count("1") % 2 == 1 for v in u])
    clz = poison(N, dtype=torch.int32, device=device)
    ctz = poison(N, dtype=torch.int32, device=device)
    parity = ~ref_par.to(device)                   # every element wrong until written
    return dict(fn=bit_scan, args=[x.to(device), clz, ctz, parity, N],
                spec={'i': parir.threads(N)},
                check=[(clz, ref_clz), (ctz, ref_ctz), (parity, ref_par)])


# ----- Bits packed from a bool mask (LSB first, as np.packbits(bitorder='little')) -----------

@parir.jit
def pack_bits(mask, packed, n_bits):
    parir.label('row')
    for r in range(mask.shape[0]):
        parir.label('byte')
        for j in range(packed.shape[1]):
            byte = 0
            for k in range(8):
                idx = 8 * j + k
                if idx < n_bits and mask[r, idx]:
                    byte |= 1 << k
            packed[r, j] = byte


def case_pack_bits(rng, device):
    rows, n_bits = 31, 1001
    mask = torch.rand(rows, n_bits, generator=rng) < 0.3
    ref = torch.from_numpy(np.packbits(mask.numpy(), axis=1, bitorder="little"))
    packed = poison(tuple(ref.shape), dtype=torch.uint8, device=device)
    return dict(fn=pack_bits, args=[mask.to(device), packed, n_bits],
                spec={'row': parir.threads(rows), 'byte': parir.threads(128)},
                check=[(packed, ref)])


# ----- ... and unpacked into a bool mask and its complement (`~` of a bool is `not`) ---------

@parir.jit
def unpack_bits(packed, mask, inverted):
    parir.label('row')
    for r in range(mask.shape[0]):
        parir.label('bit')
        for j in range(mask.shape[1]):
            bit = ((packed[r, j >> 3] >> (j & 7)) & 1) != 0
            mask[r, j] = bit
            inverted[r, j] = ~bit


def case_unpack_bits(rng, device):
    rows, n_bits = 33, 1000
    packed = _random_bytes((rows, (n_bits + 7) // 8), rng)
    ref = torch.from_numpy(np.unpackbits(packed.numpy(), axis=1, count=n_bits,
                                         bitorder="little").astype(bool))
    mask = ~ref.to(device)                         # every element wrong until written
    inverted = ref.clone().to(device)
    return dict(fn=unpack_bits, args=[packed.to(device), mask, inverted],
                spec={'row': parir.threads(rows), 'bit': parir.threads(256)},
                check=[(mask, ref), (inverted, ~ref)])


# ----- 16-bit PCM samples from bytes: little- and big-endian, and the high byte sign-extended --

@parir.jit
def decode_pcm16(raw, le, be, hi_signed, n_samples):
    parir.label('i')
    for i in range(n_samples):
        lo = raw[2 * i]
        hi = raw[2 * i + 1]
        le[i] = parir.int16((parir.int32(hi) << 8) | lo)
        be[i] = parir.int16((parir.int32(lo) << 8) | hi)
        hi_signed[i] = parir.int8(hi)


def case_decode_pcm16(rng, device):
    n = 1000
    raw = _random_bytes(2 * n, rng)
    raw[:4] = torch.tensor([0xFF, 0x7F, 0x00, 0x80], dtype=torch.uint8)
    b = raw.numpy().tobytes()
    ref_le = torch.from_numpy(np.frombuffer(b, dtype="<i2").astype(np.int16))
    ref_be = torch.from_numpy(np.frombuffer(b, dtype=">i2").astype(np.int16))
    ref_hi = torch.from_numpy(raw.numpy()[1::2].view(np.int8).copy())
    le = poison(n, dtype=torch.int16, device=device)
    be = poison(n, dtype=torch.int16, device=device)
    hi_signed = poison(n, dtype=torch.int8, device=device)
    return dict(fn=decode_pcm16, args=[raw.to(device), le, be, hi_signed, n],
                spec={'i': parir.threads(n)},
                check=[(le, ref_le), (be, ref_be), (hi_signed, ref_hi)])


# ----- Integers formatted as text: right-aligned decimal (divmod) and 8 hex digits ----------

@parir.jit
def format_ints(values, dec, hexa, N):
    width = dec.shape[1]
    parir.label('i')
    for i in range(N):
        v = values[i]
        neg = v < 0
        if neg:
            v = -v
        pos = width - 1
        q, d = divmod(v, 10)
        dec[i, pos] = 0x30 + d
        pos -= 1
        while q > 0:
            q, d = divmod(q, 10)
            dec[i, pos] = 0x30 + d
            pos -= 1
        if neg:
            dec[i, pos] = 0x2D
            pos -= 1
        while pos >= 0:
            dec[i, pos] = 0x20
            pos -= 1
        u = values[i] & 0xFFFFFFFF
        for k in range(8):
            nib = (u >> (28 - 4 * k)) & 0xF
            hexa[i, k] = nib + 0x30 if nib < 10 else nib + 0x57


def case_format_ints(rng, device):
    N, width = 1000, 21
    mag = randint(N, rng, 0, 2**62, dtype=torch.int64) >> randint(N, rng, 0, 62)
    values = torch.where(torch.rand(N, generator=rng) < 0.5, -mag, mag)
    values[:5] = torch.tensor([0, -1, 9, 2**63 - 1, -(2**63 - 1)])
    ref_dec = torch.tensor([list(f"{v:>{width}d}".encode()) for v in values.tolist()],
                           dtype=torch.uint8)
    ref_hex = torch.tensor([list(f"{v & 0xFFFFFFFF:08x}".encode()) for v in values.tolist()],
                           dtype=torch.uint8)
    dec = poison((N, width), dtype=torch.uint8, device=device)
    hexa = poison((N, 8), dtype=torch.uint8, device=device)
    return dict(fn=format_ints, args=[values.to(device), dec, hexa, N],
                spec={'i': parir.threads(N)}, check=[(dec, ref_dec), (hexa, ref_hex)])


# ----- Bool masks combined as slices, and per-row counts, any and all --------------------------

@parir.jit
def mask_stats(mask_a, mask_b, both, either, differ, n_set, any_set, all_set):
    rows, n = mask_a.shape
    parir.label('row')
    parir.label('col')
    both[:, :] = mask_a[:, :] & mask_b[:, :]
    parir.label('row')
    parir.label('col')
    either[:, :] = mask_a[:, :] | mask_b[:, :]
    parir.label('row')
    parir.label('col')
    differ[:, :] = mask_a[:, :] ^ mask_b[:, :]
    parir.label('row')
    for r in range(rows):
        parir.label('col')
        n_set[r] = parir.sum(both[r, :])
        parir.label('col')
        any_set[r] = parir.max(mask_a[r, :])
        parir.label('col')
        all_set[r] = parir.min(mask_b[r, :])


def case_mask_stats(rng, device):
    rows, n = 33, 1000
    a = torch.rand(rows, n, generator=rng) < 0.01
    b = torch.rand(rows, n, generator=rng) < 0.995
    a[0, :] = False
    b[1, :] = True
    refs = [a & b, a | b, a ^ b, (a & b).sum(1).to(torch.int32), a.any(1), b.all(1)]
    outs = ([~r.to(device) for r in refs[:3]]     # every element wrong until written
            + [poison(rows, dtype=torch.int32, device=device)]
            + [~r.to(device) for r in refs[4:]])
    return dict(fn=mask_stats, args=[a.to(device), b.to(device), *outs],
                spec={'row': parir.threads(rows), 'col': parir.threads(256)},
                check=list(zip(outs, refs)))


# ----- Nibbles of bytes, as slice statements over a uint8 vector ------------------------------

@parir.jit
def nibble_ops(data, hi, lo, swapped, inverted):
    parir.label('i')
    hi[:] = data[:] >> 4
    parir.label('i')
    lo[:] = data[:] & 0x0F
    parir.label('i')
    swapped[:] = (data[:] << 4) | (data[:] >> 4)
    parir.label('i')
    inverted[:] = ~data[:]


def case_nibble_ops(rng, device):
    n = 1000
    data = _random_bytes(n, rng)
    d = data.numpy().astype(np.int64)
    refs = [d >> 4, d & 0xF, ((d << 4) | (d >> 4)) & 0xFF, ~d & 0xFF]
    refs = [torch.from_numpy(r.astype(np.uint8)) for r in refs]
    outs = [poison(n, dtype=torch.uint8, device=device) for _ in refs]
    return dict(fn=nibble_ops, args=[data.to(device), *outs], spec={'i': parir.threads(n)},
                check=list(zip(outs, refs)))


# ----- Hacker's Delight on uint32 tensors: lowest set bit, clearing it, next power of two ----

@parir.jit
def lowest_bits(x, low, cleared, next_pow2, N):
    parir.label('i')
    for i in range(N):
        v = x[i]
        low[i] = v & -v
        cleared[i] = v & (v - 1)
        s = v - 1
        s |= s >> 1
        s |= s >> 2
        s |= s >> 4
        s |= s >> 8
        s |= s >> 16
        next_pow2[i] = s + 1


def case_lowest_bits(rng, device):
    N = 1000
    x = randint(N, rng, 0, 2**32, dtype=torch.int64) >> randint(N, rng, 0, 32)
    x[:5] = torch.tensor([0, 1, 2**31, 2**31 + 1, 2**32 - 1])
    vals = x.tolist()
    m = 0xFFFFFFFF
    ref_low = [v & (-v & m) for v in vals]
    ref_cleared = [v & ((v - 1) & m) for v in vals]
    ref_np2 = [(1 << ((v - 1).bit_length())) & m if v else 0 for v in vals]
    refs = [torch.tensor(r, dtype=torch.int64) for r in (ref_low, ref_cleared, ref_np2)]
    outs = [poison(N, dtype=torch.uint32, device=device) for _ in refs]
    return dict(fn=lowest_bits, args=[x.to(torch.uint32).to(device), *outs, N],
                spec={'i': parir.threads(N)}, check=list(zip(outs, refs)))


# ----- Protocol Buffers' zigzag and varint encodings of int64 values -------------------------

@parir.jit
def zigzag_varint(values, zz, buf, n_bytes, N):
    parir.label('i')
    for i in range(N):
        n = values[i]
        z = (n << 1) ^ (n >> 63)
        zz[i] = z
        v = parir.uint64(z)
        pos = 0
        while v >= 0x80:
            buf[i, pos] = (v & 0x7F) | 0x80
            v >>= 7
            pos += 1
        buf[i, pos] = v
        n_bytes[i] = pos + 1
        for t in range(pos + 1, buf.shape[1]):
            buf[i, t] = 0


def _varint_ref(n):
    z = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    zz = z - (1 << 64) if z >> 63 else z
    out = []
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return zz, out


def case_zigzag_varint(rng, device):
    N = 1000
    mag = randint(N, rng, 0, 2**62, dtype=torch.int64) >> randint(N, rng, 0, 62)
    values = torch.where(torch.rand(N, generator=rng) < 0.5, -mag - 1, mag)
    values[:6] = torch.tensor([0, -1, 1, 63, -2**63, 2**63 - 1])
    refs = [_varint_ref(v) for v in values.tolist()]
    assert _varint_ref(-2)[1] == [3] and _varint_ref(150)[1] == [0xAC, 0x02]
    ref_zz = torch.tensor([z for z, _ in refs], dtype=torch.int64)
    ref_buf = torch.zeros(N, 10, dtype=torch.uint8)
    for i, (_, bs) in enumerate(refs):
        ref_buf[i, :len(bs)] = torch.tensor(bs, dtype=torch.uint8)
    ref_n = torch.tensor([len(bs) for _, bs in refs], dtype=torch.int8)
    zz = poison(N, dtype=torch.int64, device=device)
    buf = poison((N, 10), dtype=torch.uint8, device=device)
    n_bytes = poison(N, dtype=torch.int8, device=device)
    return dict(fn=zigzag_varint, args=[values.to(device), zz, buf, n_bytes, N],
                spec={'i': parir.threads(N)},
                check=[(zz, ref_zz), (buf, ref_buf), (n_bytes, ref_n)])


# ----- Which byte values occur (atomic OR into bools) and a histogram of high nibbles (int16) --

@parir.jit
def byte_presence(data, seen, nibble_hist, N):
    parir.label('i')
    for i in range(N):
        byte = data[i]
        parir.atomic_or(seen[byte], True)
        parir.atomic_add(nibble_hist[byte >> 4], 1)


def case_byte_presence(rng, device):
    N = 1000
    alphabet = torch.tensor(list(b"ACGTacgtN\n\x00\xff\x80"), dtype=torch.uint8)
    data = alphabet[randint(N, rng, 0, len(alphabet))]
    ref_seen = torch.zeros(256, dtype=torch.bool)
    ref_seen[data.long()] = True
    ref_hist = torch.bincount((data >> 4).long(), minlength=16).to(torch.int16)
    seen = torch.zeros(256, dtype=torch.bool, device=device)
    nibble_hist = torch.zeros(16, dtype=torch.int16, device=device)
    return dict(fn=byte_presence, args=[data.to(device), seen, nibble_hist, N],
                spec={'i': parir.threads(N)}, check=[(seen, ref_seen), (nibble_hist, ref_hist)])


# ----- 12-bit samples packed LSB first (as in packed RAW images), unsigned and sign-extended --

@parir.jit
def unpack12(packed, samples, signed_samples, n_samples):
    parir.label('i')
    for i in range(n_samples):
        bitpos = 12 * i
        b = bitpos >> 3
        word = parir.int32(packed[b]) | (parir.int32(packed[b + 1]) << 8)
        v = (word >> (bitpos & 7)) & 0xFFF
        samples[i] = v
        signed_samples[i] = v - 0x1000 if v & 0x800 else v


def case_unpack12(rng, device):
    n = 1001
    vals = randint(n, rng, 0, 4096, dtype=torch.int64)
    vals[:3] = torch.tensor([0, 0xFFF, 0x800])
    big = 0
    for i, v in enumerate(vals.tolist()):
        big |= v << (12 * i)
    n_packed = (12 * n + 7) // 8
    packed = torch.tensor(list(big.to_bytes(n_packed, "little")), dtype=torch.uint8)
    ref = vals.to(torch.int16)
    ref_signed = torch.where(vals >= 0x800, vals - 0x1000, vals).to(torch.int16)
    samples = poison(n, dtype=torch.int16, device=device)
    signed_samples = poison(n, dtype=torch.int16, device=device)
    return dict(fn=unpack12, args=[packed.to(device), samples, signed_samples, n],
                spec={'i': parir.threads(n)},
                check=[(samples, ref), (signed_samples, ref_signed)])


# ----- Byte swaps: of int32 values with shifts and masks, and of 4-byte groups in place ------

@parir.jit
def bswap32(x, swapped, raw, N):
    parir.label('i')
    for i in range(N):
        v = x[i]
        swapped[i] = (((v >> 24) & 0xFF) | ((v >> 8) & 0xFF00) | ((v << 8) & 0xFF0000)
                      | (v << 24))
        b = 4 * i
        raw[b], raw[b + 1], raw[b + 2], raw[b + 3] = raw[b + 3], raw[b + 2], raw[b + 1], raw[b]


def case_bswap32(rng, device):
    N = 1000
    x = randint(N, rng, -2**31, 2**31, dtype=torch.int32)
    x[:3] = torch.tensor([0x12345678, -2**31, -1], dtype=torch.int32)
    ref = torch.from_numpy(x.numpy().byteswap().copy())
    raw = _random_bytes(4 * N, rng)
    ref_raw = raw.reshape(N, 4).flip(1).reshape(-1).clone()
    swapped = poison(N, dtype=torch.int32, device=device)
    raw_d = raw.to(device)
    return dict(fn=bswap32, args=[x.to(device), swapped, raw_d, N],
                spec={'i': parir.threads(N)}, check=[(swapped, ref), (raw_d, ref_raw)])


CASES = {
    "bits_base64": case_base64,
    "bits_base64_one_row": case_base64_one_row,
    "bits_utf8_decode": case_utf8_decode,
    "bits_utf8_count": case_utf8_count,
    "bits_rle": case_rle,
    "bits_reverse": case_bit_reverse,
    "bits_gray": case_gray,
    "bits_hamming_matrix": case_hamming_matrix,
    "bits_saturating_i8": case_saturating_i8,
    "bits_q15_mul": case_q15_mul,
    "bits_q15_dot": case_q15_dot,
    "bits_gcd": case_gcd,
    "bits_collatz": case_collatz,
    "bits_bitset_counts": case_bitset_counts,
    "bits_bit_scan": case_bit_scan,
    "bits_pack_bits": case_pack_bits,
    "bits_unpack_bits": case_unpack_bits,
    "bits_decode_pcm16": case_decode_pcm16,
    "bits_format_ints": case_format_ints,
    "bits_mask_stats": case_mask_stats,
    "bits_nibble_ops": case_nibble_ops,
    "bits_lowest_bits": case_lowest_bits,
    "bits_zigzag_varint": case_zigzag_varint,
    "bits_byte_presence": case_byte_presence,
    "bits_unpack12": case_unpack12,
    "bits_bswap32": case_bswap32,
}
