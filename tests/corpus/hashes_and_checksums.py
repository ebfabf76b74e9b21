"""Hashes, checksums and hash-based structures over rows of bytes and integer tensors, written as C
programmers porting to Python and Numba CUDA users write them: FNV-1a (64-bit, a uint64 hash,
its constants as module globals), MurmurHash3 (uint32 with helpers for the rotation and the
finalizer), xxHash32 and CRC-32C in Numba's style (np.uint32 module constants), Adler-32
(uint32), Fletcher-16 (uint16), CRC-8 and CRC-16/XMODEM (helpers taking a row) checksums, Java's
String.hashCode (int32 wrap-around), XOR checksums by atomic updates (uint8 and int32 elements),
a Bloom filter (atomic ORs), an open-addressing hash table (compare-and-swap on uint32 keys),
and hash partitioning by a uint64 hash modulo the partition count; with them the same mixing
arithmetic in ciphers and random numbers: modular exponentiation with a Fermat test (a bool
mask), an XOR stream cipher with byte rotations, and a C library LCG (int32 wrap-around). The
references are computed in plain Python or NumPy before the programs run."""

import numpy as np
import torch

import parir_torch as parir

from .bits_and_bytes import _np_rng, _random_bytes
from .common import poison, randint


# ----- FNV-1a, 64-bit, of each row: the offset basis and prime as module constants ------------

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3


@parir.jit
def fnv1a64_rows(data, h_out):
    parir.label('row')
    for r in range(data.shape[0]):
        h = FNV64_OFFSET
        for j in range(data.shape[1]):
            h ^= data[r, j]
            h *= FNV64_PRIME
        h_out[r] = h


def _fnv1a64(bs):
    h = 0xCBF29CE484222325
    for b in bs:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >> 63 else h      # the same bits as int64


def case_fnv1a64(rng, device):
    rows, n_bytes = 33, 31
    data = _random_bytes((rows, n_bytes), rng)
    data[0, :] = torch.tensor(list(b"a" * n_bytes), dtype=torch.uint8)
    ref = torch.tensor([_fnv1a64(row.tolist()) for row in data], dtype=torch.int64)
    h_out = poison(rows, dtype=torch.uint64, device=device)
    return dict(fn=fnv1a64_rows, args=[data.to(device), h_out],
                spec={'row': parir.threads(rows)}, check=[(h_out, ref)])


# ----- MurmurHash3 x86_32 of each row, in uint32, with helpers for rotl32 and fmix32 ---------

@parir.jit
def rotl32(x, r):
    return (x << r) | (x >> (32 - r))


@parir.jit
def fmix32(h):
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    return h


@parir.jit
def murmur3_32_rows(data, seed, out, n_bytes):
    c1 = 0xCC9E2D51
    c2 = 0x1B873593
    n_blocks = n_bytes // 4
    parir.label('row')
    for r in range(data.shape[0]):
        h = parir.uint32(seed)
        for b in range(n_blocks):
            k = (parir.uint32(data[r, 4 * b]) | (parir.uint32(data[r, 4 * b + 1]) << 8)
                 | (parir.uint32(data[r, 4 * b + 2]) << 16)
                 | (parir.uint32(data[r, 4 * b + 3]) << 24))
            k *= c1
            k = rotl32(k, 15)
            k *= c2
            h ^= k
            h = rotl32(h, 13)
            h = h * 5 + 0xE6546B64
        tail = 4 * n_blocks
        rem = n_bytes & 3
        k1 = parir.uint32(0)
        if rem >= 3:
            k1 ^= parir.uint32(data[r, tail + 2]) << 16
        if rem >= 2:
            k1 ^= parir.uint32(data[r, tail + 1]) << 8
        if rem >= 1:
            k1 ^= parir.uint32(data[r, tail])
            k1 *= c1
            k1 = rotl32(k1, 15)
            k1 *= c2
            h ^= k1
        h ^= n_bytes
        h = fmix32(h)
        out[r] = h


def _murmur3_32(key, seed):
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    h = seed
    nblocks = len(key) // 4
    for i in range(nblocks):
        k = int.from_bytes(key[4 * i:4 * i + 4], "little")
        k = rotl((k * 0xCC9E2D51) & m, 15) * 0x1B873593 & m
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & m
    tail = key[4 * nblocks:]
    k = 0
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        k = rotl((k * 0xCC9E2D51) & m, 15) * 0x1B873593 & m
        h ^= k
    h ^= len(key)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    h ^= h >> 16
    return h


# Published test vectors of MurmurHash3_x86_32, checked when the module is imported.
assert _murmur3_32(b"", 1) == 0x514E28B7
assert _murmur3_32(b"", 0xFFFFFFFF) == 0x81F16F39
assert _murmur3_32(b"\0\0\0\0", 0) == 0x2362F9DE
assert _murmur3_32(b"aaaa", 0x9747B28C) == 0x5A97808A
assert _murmur3_32(b"Hello, world!", 0x9747B28C) == 0x24884CBA


def case_murmur3(rng, device, rows=33, n_bytes=31):
    seed = np.uint32(0x9747B28C)
    data = _random_bytes((rows, n_bytes), rng)
    ref = torch.tensor([_murmur3_32(bytes(row.tolist()), int(seed)) for row in data],
                       dtype=torch.int64)
    out = poison(rows, dtype=torch.int64, device=device)
    return dict(fn=murmur3_32_rows, args=[data.to(device), seed, out, n_bytes],
                spec={'row': parir.threads(rows)}, check=[(out, ref)])


def case_murmur3_one_row(rng, device):
    return case_murmur3(rng, device, rows=1, n_bytes=1000)


# ----- Adler-32 (zlib's, uint32 sums modulo 65521) of each row --------------------------------

MOD_ADLER = 65521


@parir.jit
def adler32_rows(data, out, n_bytes):
    parir.label('row')
    for r in range(data.shape[0]):
        a = parir.uint32(1)
        b = parir.uint32(0)
        for j in range(n_bytes):
            a = (a + data[r, j]) % MOD_ADLER
            b = (b + a) % MOD_ADLER
        out[r] = parir.int64((b << 16) | a)


def case_adler32(rng, device):
    import zlib
    rows, n_bytes = 33, 1000
    data = _random_bytes((rows, n_bytes), rng)
    data[0, :] = 255                              # the sums wrap around 65521 the most
    ref = torch.tensor([zlib.adler32(bytes(row.tolist())) for row in data], dtype=torch.int64)
    out = poison(rows, dtype=torch.int64, device=device)
    return dict(fn=adler32_rows, args=[data.to(device), out, n_bytes],
                spec={'row': parir.threads(rows)}, check=[(out, ref)])


# ----- Fletcher-16 of each row, uint16 sums as in the C original -----------------------------

@parir.jit
def fletcher16_rows(data, out):
    parir.label('row')
    for r in range(len(data)):
        sum1 = parir.uint16(0)
        sum2 = parir.uint16(0)
        for j in range(data.shape[1]):
            sum1 = (sum1 + data[r, j]) % 255
            sum2 = (sum2 + sum1) % 255
        out[r] = (sum2 << 8) | sum1


def _fletcher16(bs):
    s1 = s2 = 0
    for b in bs:
        s1 = (s1 + b) % 255
        s2 = (s2 + s1) % 255
    return (s2 << 8) | s1


def case_fletcher16(rng, device):
    rows, n_bytes = 31, 33
    data = _random_bytes((rows, n_bytes), rng)
    data[0, :5] = torch.tensor(list(b"abcde"), dtype=torch.uint8)
    assert _fletcher16(b"abcde") == 0xC8F0            # Wikipedia's example
    ref = torch.tensor([_fletcher16(row.tolist()) for row in data], dtype=torch.int32)
    out = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=fletcher16_rows, args=[data.to(device), out],
                spec={'row': parir.threads(rows)}, check=[(out, ref)])


# ----- Modular exponentiation by squaring, and a Fermat base-2 test as a bool mask ------------

@parir.jit
def powmod(base, exp, mod):
    result = 1 % mod
    base = base % mod
    while exp > 0:
        if exp & 1:
            result = result * base % mod
        exp >>= 1
        base = base * base % mod
    return result


@parir.jit
def modpow_kernel(bases, exps, mods, out, fermat, N):
    parir.label('i')
    for i in range(N):
        out[i] = powmod(bases[i], exps[i], mods[i])
        fermat[i] = powmod(2, mods[i] - 1, mods[i]) == 1


def case_modpow(rng, device):
    N = 1000
    bases = randint(N, rng, 0, 2**40, dtype=torch.int64)
    exps = randint(N, rng, 0, 2**31 - 1, dtype=torch.int32)
    mods = randint(N, rng, 2, 2**31 - 1, dtype=torch.int64)
    mods[:4] = torch.tensor([1, 2, 2147483647, 561])          # 561 fools Fermat's test
    exps[:2] = torch.tensor([0, 0], dtype=torch.int32)
    ref = torch.tensor([pow(int(b), int(e), int(m)) for b, e, m in zip(bases, exps, mods)],
                       dtype=torch.int64)
    ref_f = torch.tensor([pow(2, int(m) - 1, int(m)) == 1 for m in mods])
    out = poison(N, dtype=torch.int64, device=device)
    fermat = ~ref_f.to(device)                    # every element wrong until written
    return dict(fn=modpow_kernel, args=[bases.to(device), exps.to(device), mods.to(device), out,
                                        fermat, N],
                spec={'i': parir.threads(N)}, check=[(out, ref), (fermat, ref_f)])


# ----- XOR stream cipher with a repeating key and a byte rotation, and its inverse -----------

@parir.jit
def xor_cipher(data, key, out, back, n_bytes, key_len):
    parir.label('row')
    for r in range(data.shape[0]):
        parir.label('byte')
        for j in range(n_bytes):
            k = key[(r + j) % key_len]
            byte = data[r, j] ^ k
            out[r, j] = (byte << 3) | (byte >> 5)          # rotl8, uint8 arithmetic
            c = out[r, j]
            back[r, j] = ((c >> 3) | (c << 5)) ^ k


def case_xor_cipher(rng, device):
    rows, n_bytes, key_len = 3, 1000, 7
    data = _random_bytes((rows, n_bytes), rng)
    key = _random_bytes(key_len, rng)
    d = data.numpy().astype(np.int64)
    kk = key.numpy().astype(np.int64)[(np.arange(rows)[:, None] + np.arange(n_bytes)) % key_len]
    x = d ^ kk
    ref = (((x << 3) | (x >> 5)) & 0xFF).astype(np.uint8)
    out = poison((rows, n_bytes), dtype=torch.uint8, device=device)
    back = poison((rows, n_bytes), dtype=torch.uint8, device=device)
    return dict(fn=xor_cipher, args=[data.to(device), key.to(device), out, back, n_bytes,
                                     key_len],
                spec={'row': parir.threads(rows), 'byte': parir.threads(256)},
                check=[(out, torch.from_numpy(ref)), (back, data.clone())])


# ----- Java's String.hashCode (int32 wrap-around) of rows of 16-bit chars of varying lengths --

@parir.jit
def java_string_hash(chars, lengths, h_out):
    parir.label('row')
    for r in range(chars.shape[0]):
        h = parir.int32(0)
        for j in range(lengths[r]):
            h = 31 * h + chars[r, j]
        h_out[r] = h


def _java_hash(cs):
    h = 0
    for c in cs:
        h = (31 * h + c) & 0xFFFFFFFF
    return h - (1 << 32) if h >> 31 else h


def case_java_hash(rng, device):
    rows, width = 33, 31
    chars = randint((rows, width), rng, 0, 30000, dtype=torch.int16)
    lengths = randint(rows, rng, 0, width + 1, dtype=torch.int32)
    text = "Hello, world"
    chars[0, :len(text)] = torch.tensor([ord(c) for c in text], dtype=torch.int16)
    lengths[0] = len(text)
    assert _java_hash([ord(c) for c in "hello"]) == 99162322
    ref = torch.tensor([_java_hash(chars[r, :int(lengths[r])].tolist()) for r in range(rows)],
                       dtype=torch.int32)
    h_out = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=java_string_hash, args=[chars.to(device), lengths.to(device), h_out],
                spec={'row': parir.threads(rows)}, check=[(h_out, ref)])


# ----- The C library's LCG in int32 state (wrapping multiply-add), 15-bit outputs ------------

@parir.jit
def lcg_rand(state, out, n_draws, N):
    parir.label('i')
    for i in range(N):
        x = state[i]
        for d in range(n_draws):
            x = x * 1103515245 + 12345
            out[i, d] = (x >> 16) & 0x7FFF
        state[i] = x


def case_lcg_rand(rng, device):
    N, n_draws = 1000, 5
    state = randint(N, rng, -2**31, 2**31, dtype=torch.int32)
    ref_out = np.zeros((N, n_draws), dtype=np.int16)
    ref_state = np.zeros(N, dtype=np.int32)
    for i, s in enumerate(state.tolist()):
        x = s & 0xFFFFFFFF
        for d in range(n_draws):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
            ref_out[i, d] = (x >> 16) & 0x7FFF
        ref_state[i] = x - (1 << 32) if x >> 31 else x
    out = poison((N, n_draws), dtype=torch.int16, device=device)
    st = state.to(device)
    return dict(fn=lcg_rand, args=[st, out, n_draws, N], spec={'i': parir.threads(N)},
                check=[(st, torch.from_numpy(ref_state)), (out, torch.from_numpy(ref_out))])


# ----- XOR checksums by atomic updates: a byte per row (uint8) and 32-bit words of the whole --

@parir.jit
def xor_checksum(data, row_xor, word_xor):
    parir.label('row')
    for r in range(data.shape[0]):
        parir.label('col')
        for j in range(data.shape[1]):
            byte = data[r, j]
            parir.atomic_xor(row_xor[r], byte)
            parir.atomic_xor(word_xor[0], parir.int32(byte) << ((j & 3) * 8))


def case_xor_checksum(rng, device):
    rows, n_bytes = 33, 1000
    data = _random_bytes((rows, n_bytes), rng)
    d = data.numpy()
    ref_rows = np.bitwise_xor.reduce(d, axis=1)
    ref_word = np.bitwise_xor.reduce(d.reshape(-1).view("<i4"))
    row_xor = torch.zeros(rows, dtype=torch.uint8, device=device)
    word_xor = torch.zeros(1, dtype=torch.int32, device=device)
    return dict(fn=xor_checksum, args=[data.to(device), row_xor, word_xor],
                spec={'row': parir.threads(rows), 'col': parir.threads(256)},
                check=[(row_xor, torch.from_numpy(ref_rows)),
                       (word_xor, torch.tensor([int(ref_word)], dtype=torch.int32))])


# ----- A Bloom filter: keys inserted with atomic ORs into int32 words, then queried ----------

BLOOM_K = 3


@parir.jit
def bloom_insert_query(keys, queries, bits, found, n_bits):
    parir.label('i')
    for i in range(keys.shape[0]):
        h1 = fmix32(parir.uint32(keys[i]))
        h2 = fmix32(h1 ^ 0x5BD1E995) | 1
        for k in range(BLOOM_K):
            bit = parir.int64((h1 + k * h2) % n_bits)
            parir.atomic_or(bits[bit >> 5], 1 << (bit & 31))
    parir.label('q')
    for q in range(queries.shape[0]):
        h1 = fmix32(parir.uint32(queries[q]))
        h2 = fmix32(h1 ^ 0x5BD1E995) | 1
        hit = True
        for k in range(BLOOM_K):
            bit = parir.int64((h1 + k * h2) % n_bits)
            if ((bits[bit >> 5] >> (bit & 31)) & 1) == 0:
                hit = False
        found[q] = hit


def _fmix32_ref(h):
    m = 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    return h ^ (h >> 16)


def _bloom_bits_ref(key, n_bits):
    h1 = _fmix32_ref(key & 0xFFFFFFFF)
    h2 = _fmix32_ref(h1 ^ 0x5BD1E995) | 1
    return [((h1 + k * h2) & 0xFFFFFFFF) % n_bits for k in range(BLOOM_K)]


def case_bloom(rng, device):
    n_keys, n_words = 100, 33
    n_bits = 32 * n_words
    keys = randint(n_keys, rng, -2**31, 2**31, dtype=torch.int32)
    queries = torch.cat([keys, randint(n_keys, rng, -2**31, 2**31, dtype=torch.int32)])
    words = np.zeros(n_words, dtype=np.uint32)
    for key in keys.tolist():
        for b in _bloom_bits_ref(key, n_bits):
            words[b >> 5] |= np.uint32(1 << (b & 31))
    ref_found = torch.tensor([all((int(words[b >> 5]) >> (b & 31)) & 1
                                  for b in _bloom_bits_ref(q, n_bits)) for q in queries.tolist()])
    assert bool(ref_found[:n_keys].all()) and not bool(ref_found[n_keys:].all())
    bits = torch.zeros(n_words, dtype=torch.int32, device=device)
    found = ~ref_found.to(device)                 # every element wrong until written
    return dict(fn=bloom_insert_query,
                args=[keys.to(device), queries.to(device), bits, found, n_bits],
                spec={'i': parir.threads(n_keys), 'q': parir.threads(2 * n_keys)},
                check=[(bits, torch.from_numpy(words.view(np.int32).copy())),
                       (found, ref_found)])


# ----- A GPU hash table (open addressing, linear probing, uint32 keys, CAS inserts) ----------

kEmpty = 0xFFFFFFFF


@parir.jit
def hash_table_insert_lookup(keys, vals, table_keys, table_vals, queries, results, capacity):
    parir.label('i')
    for i in range(keys.shape[0]):
        key = keys[i]
        slot = fmix32(key) & (capacity - 1)
        done = False
        while not done:
            prev = parir.atomic_cas(table_keys[slot], kEmpty, key)
            if prev == kEmpty or prev == key:
                table_vals[slot] = vals[i]
                done = True
            else:
                slot = (slot + 1) & (capacity - 1)
    parir.label('q')
    for q in range(queries.shape[0]):
        key = queries[q]
        slot = fmix32(key) & (capacity - 1)
        while table_keys[slot] != key and table_keys[slot] != kEmpty:
            slot = (slot + 1) & (capacity - 1)
        results[q] = table_vals[slot] if table_keys[slot] == key else -1


def case_hash_table(rng, device):
    n, capacity = 1000, 2048
    g = _np_rng(rng)
    pool = g.choice(2**32 - 1, size=2 * n, replace=False).astype(np.uint32)
    keys, absent = pool[:n], pool[n:]
    vals = g.integers(0, 2**31 - 1, size=n).astype(np.int32)
    queries = np.concatenate([keys[::2], absent[:n // 2]])
    lookup = dict(zip(keys.tolist(), vals.tolist()))
    ref = torch.tensor([lookup.get(q, -1) for q in queries.tolist()], dtype=torch.int32)
    table_keys = torch.full((capacity,), kEmpty, dtype=torch.uint32, device=device)
    table_vals = torch.zeros(capacity, dtype=torch.int32, device=device)
    results = poison(len(queries), dtype=torch.int32, device=device)
    return dict(fn=hash_table_insert_lookup,
                args=[torch.from_numpy(keys).to(device), torch.from_numpy(vals).to(device),
                      table_keys, table_vals, torch.from_numpy(queries).to(device), results,
                      capacity],
                spec={'i': parir.threads(n), 'q': parir.threads(len(queries))},
                check=[(results, ref)])


# ----- CRC-8 (polynomial 0x07) and CRC-16/XMODEM (uint16) helpers taking a row of bytes ------

@parir.jit
def crc8(buf, n):
    crc = parir.uint8(0)
    for j in range(n):
        crc ^= buf[j]
        for k in range(8):
            if crc & 0x80:
                crc = (crc << 1) ^ 0x07
            else:
                crc <<= 1
    return crc


@parir.jit
def crc16_xmodem(buf, n):
    crc = parir.uint16(0)
    for j in range(n):
        crc ^= parir.uint16(buf[j]) << 8
        for k in range(8):
            if crc & 0x8000:
                crc = (crc << 1) ^ 0x1021
            else:
                crc <<= 1
    return crc


@parir.jit
def row_crcs(data, lengths, c8, c16):
    parir.label('row')
    for r in range(data.shape[0]):
        c8[r] = crc8(data[r], lengths[r])
        c16[r] = crc16_xmodem(data[r], lengths[r])


def _crc8_ref(bs):
    crc = 0
    for b in bs:
        crc ^= b
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def case_row_crcs(rng, device):
    import binascii
    rows, width = 33, 31
    data = _random_bytes((rows, width), rng)
    lengths = randint(rows, rng, 0, width + 1, dtype=torch.int32)
    data[0, :9] = torch.tensor(list(b"123456789"), dtype=torch.uint8)
    lengths[0] = 9
    assert _crc8_ref(b"123456789") == 0xF4 and binascii.crc_hqx(b"123456789", 0) == 0x31C3
    blobs = [bytes(data[r, :int(lengths[r])].tolist()) for r in range(rows)]
    ref8 = torch.tensor([_crc8_ref(b) for b in blobs], dtype=torch.uint8)
    ref16 = torch.tensor([binascii.crc_hqx(b, 0) for b in blobs], dtype=torch.int32)
    c8 = poison(rows, dtype=torch.uint8, device=device)
    c16 = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=row_crcs, args=[data.to(device), lengths.to(device), c8, c16],
                spec={'row': parir.threads(rows)}, check=[(c8, ref8), (c16, ref16)])


# ----- xxHash32 of each row, Numba style: the primes as module-level np.uint32 constants -----

PRIME32_1 = np.uint32(0x9E3779B1)
PRIME32_2 = np.uint32(0x85EBCA77)
PRIME32_3 = np.uint32(0xC2B2AE3D)
PRIME32_4 = np.uint32(0x27D4EB2F)
PRIME32_5 = np.uint32(0x165667B1)


@parir.jit
def read32(buf, p):
    return (parir.uint32(buf[p]) | (parir.uint32(buf[p + 1]) << 8)
            | (parir.uint32(buf[p + 2]) << 16) | (parir.uint32(buf[p + 3]) << 24))


@parir.jit
def xxh32_round(acc, lane):
    acc += lane * PRIME32_2
    acc = rotl32(acc, 13)
    acc *= PRIME32_1
    return acc


@parir.jit
def xxh32_rows(data, lengths, seed, out):
    parir.label('row')
    for r in range(data.shape[0]):
        n = lengths[r]
        p = 0
        if n >= 16:
            v1 = seed + PRIME32_1 + PRIME32_2
            v2 = seed + PRIME32_2
            v3 = seed + 0
            v4 = seed - PRIME32_1
            while p <= n - 16:
                v1 = xxh32_round(v1, read32(data[r], p))
                v2 = xxh32_round(v2, read32(data[r], p + 4))
                v3 = xxh32_round(v3, read32(data[r], p + 8))
                v4 = xxh32_round(v4, read32(data[r], p + 12))
                p += 16
            h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18)
        else:
            h = seed + PRIME32_5
        h += parir.uint32(n)
        while p + 4 <= n:
            h += read32(data[r], p) * PRIME32_3
            h = rotl32(h, 17) * PRIME32_4
            p += 4
        while p < n:
            h += data[r, p] * PRIME32_5
            h = rotl32(h, 11) * PRIME32_1
            p += 1
        h ^= h >> 15
        h *= PRIME32_2
        h ^= h >> 13
        h *= PRIME32_3
        h ^= h >> 16
        out[r] = h


def _xxh32(data, seed):
    m = 0xFFFFFFFF
    p1, p2, p3, p4, p5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    def rnd(acc, lane):
        return rotl((acc + lane * p2) & m, 13) * p1 & m

    n, p = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed, (seed - p1) & m]
        while p <= n - 16:
            v = [rnd(v[k], int.from_bytes(data[p + 4 * k:p + 4 * k + 4], "little"))
                 for k in range(4)]
            p += 16
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while p + 4 <= n:
        h = rotl((h + int.from_bytes(data[p:p + 4], "little") * p3) & m, 17) * p4 & m
        p += 4
    while p < n:
        h = rotl((h + data[p] * p5) & m, 11) * p1 & m
        p += 1
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    return h ^ (h >> 16)


# Test vectors of XXH32 (the reference implementation's, and python-xxhash's README).
assert _xxh32(b"", 0) == 0x02CC5D05
assert _xxh32(b"a", 0) == 0x550D7456
assert _xxh32(b"abc", 0) == 0x32D153FF
assert _xxh32(b"Nobody inspects the spammish repetition", 0) == 0xE2293B2F


def case_xxh32(rng, device, rows=33, width=31):
    seed = np.uint32(0x2545F491)
    data = _random_bytes((rows, width), rng)
    lengths = randint(rows, rng, 0, width + 1, dtype=torch.int32)
    k = min(rows, 3)
    lengths[:k] = torch.tensor([width, 0, 16][:k], dtype=torch.int32)
    ref = torch.tensor([_xxh32(bytes(data[r, :int(lengths[r])].tolist()), int(seed))
                        for r in range(rows)], dtype=torch.int64)
    out = poison(rows, dtype=torch.int64, device=device)
    return dict(fn=xxh32_rows, args=[data.to(device), lengths.to(device), seed, out],
                spec={'row': parir.threads(rows)}, check=[(out, ref)])


def case_xxh32_one_row(rng, device):
    return case_xxh32(rng, device, rows=1, width=1000)


# ----- CRC-32C (Castagnoli), bitwise, Numba style: uint32 state, the polynomial a np.uint32 ---

CRC32C_POLY = np.uint32(0x82F63B78)


@parir.jit
def crc32c_rows(data, lengths, out):
    parir.label('row')
    for r in range(data.shape[0]):
        crc = np.uint32(0xFFFFFFFF)
        for j in range(lengths[r]):
            crc ^= data[r, j]
            for k in range(8):
                if crc & 1:
                    crc = (crc >> 1) ^ CRC32C_POLY
                else:
                    crc >>= 1
        out[r] = ~crc


def _crc32c(bs):
    crc = 0xFFFFFFFF
    for b in bs:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def case_crc32c(rng, device):
    rows, width = 33, 31
    data = _random_bytes((rows, width), rng)
    lengths = randint(rows, rng, 0, width + 1, dtype=torch.int32)
    data[0, :9] = torch.tensor(list(b"123456789"), dtype=torch.uint8)
    lengths[0] = 9
    assert _crc32c(b"123456789") == 0xE3069283          # the standard check value
    ref = torch.tensor([_crc32c(data[r, :int(lengths[r])].tolist()) for r in range(rows)],
                       dtype=torch.int64)
    out = poison(rows, dtype=torch.int64, device=device)
    return dict(fn=crc32c_rows, args=[data.to(device), lengths.to(device), out],
                spec={'row': parir.threads(rows)}, check=[(out, ref)])


# ----- Hash partitioning of rows (a hash join's first pass): FNV-1a 64 with the constants
#       written inline, the partition as the hash modulo the partition count, counts by atomics -

@parir.jit
def hash_partition(keys, part, counts, n_parts):
    parir.label('row')
    for r in range(keys.shape[0]):
        h = 0xCBF29CE484222325
        for j in range(keys.shape[1]):
            h ^= keys[r, j]
            h *= 0x100000001B3
        p = h % n_parts
        part[r] = p
        parir.atomic_add(counts[p], 1)


def case_hash_partition(rng, device):
    rows, width, n_parts = 1000, 8, 31
    keys = _random_bytes((rows, width), rng)
    hashes = [_fnv1a64(row.tolist()) & 0xFFFFFFFFFFFFFFFF for row in keys]
    ref_part = torch.tensor([h % n_parts for h in hashes], dtype=torch.int32)
    ref_counts = torch.bincount(ref_part.long(), minlength=n_parts).to(torch.int32)
    part = poison(rows, dtype=torch.int32, device=device)
    counts = torch.zeros(n_parts, dtype=torch.int32, device=device)
    return dict(fn=hash_partition, args=[keys.to(device), part, counts, n_parts],
                spec={'row': parir.threads(rows)},
                check=[(part, ref_part), (counts, ref_counts)])


CASES = {
    "bits_fnv1a64": case_fnv1a64,
    "bits_murmur3": case_murmur3,
    "bits_murmur3_one_row": case_murmur3_one_row,
    "bits_adler32": case_adler32,
    "bits_fletcher16": case_fletcher16,
    "bits_modpow": case_modpow,
    "bits_xor_cipher": case_xor_cipher,
    "bits_java_hash": case_java_hash,
    "bits_lcg_rand": case_lcg_rand,
    "bits_xor_checksum": case_xor_checksum,
    "bits_bloom": case_bloom,
    "bits_hash_table": case_hash_table,
    "bits_row_crcs": case_row_crcs,
    "bits_xxh32": case_xxh32,
    "bits_xxh32_one_row": case_xxh32_one_row,
    "bits_crc32c": case_crc32c,
    "bits_hash_partition": case_hash_partition,
}
