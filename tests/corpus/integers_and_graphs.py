"""Integer, bit and graph programs ported from well-known GPU codes, written with their authors'
names and habits: Marsaglia's xorshift32 and Jarzynski & Olano's PCG hash (uint32 arithmetic
kept in int64 with masks) and splitmix64 on uint64, one specification shared by the three; the
CUDA samples' histogram256 reading bytes packed in 32-bit words and a PNG "Sub" filter histogram
on a uint8 view; CRC-32 (zlib's polynomial, bitwise) and FNV-1a (int32 wrapping) per row of
bytes; Hacker's Delight population count; Rodinia's BFS on a CSR graph, a pull-style PageRank,
label propagation for connected components; radix sort's per-block digit counts; Conway's Game
of Life on a torus; Mark Harris's tiled transpose (flat indices, and a copy into a transposed
view); and stream compaction (flags, an exclusive scan, a scatter)."""

import zlib

import numpy as np
import torch

import parir_torch as parir

from .common import poison, randint


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


# ----- Random-number steps: xorshift32 (Marsaglia 2003), PCG hash (JCGT 2020), splitmix64 -----
# One specification for the three functions, with fewer threads than some calls have elements.

RNG_SPEC = {'i': parir.threads(1000)}


@parir.jit
def xorshift32(state, out, steps, N):
    parir.label('i')
    for i in range(N):
        x = state[i]
        for s in range(steps):
            xor = x ^ ((x << 13) & 0xFFFFFFFF)
            xor ^= xor >> 17
            x = xor ^ ((xor << 5) & 0xFFFFFFFF)
        state[i] = x
        out[i] = parir.float32(x) * 2.3283064365386963e-10   # 2**-32


def pcg_hash(input):
    state = (input * 747796405 + 2891336453) & 0xFFFFFFFF
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & 0xFFFFFFFF
    return (word >> 22) ^ word


@parir.jit
def pcg_fill(seed, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = pcg_hash(i ^ seed)


@parir.jit
def splitmix64(state, out, N):
    parir.label('i')
    for i in range(N):
        z = state[i] + 0x9E3779B97F4A7C15
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB
        out[i] = z ^ (z >> 31)


def _xorshift32_ref(x, steps):
    for _ in range(steps):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
    return x


def _pcg_hash_ref(v):
    state = (v * 747796405 + 2891336453) & 0xFFFFFFFF
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & 0xFFFFFFFF
    return (word >> 22) ^ word


def case_xorshift32(rng, device):
    N = 4097
    steps = np.int32(3)
    state0 = randint(N, rng, 1, 2**32, dtype=torch.int64)
    ref_state = torch.tensor([_xorshift32_ref(int(v), int(steps)) for v in state0],
                             dtype=torch.int64)
    ref_out = (ref_state.numpy().astype(np.float32) * np.float32(2.0**-32))
    state = state0.to(device)
    out = poison(N, device=device)
    return dict(fn=xorshift32, args=[state, out, steps, N], spec=RNG_SPEC,
                check=[(state, ref_state), (out, torch.from_numpy(ref_out))])


def case_pcg_fill(rng, device):
    N = 33
    seed = np.uint32(0x9E3779B9)
    ref = torch.tensor([_pcg_hash_ref(i ^ int(seed)) for i in range(N)], dtype=torch.int64)
    out = poison(N, dtype=torch.int64, device=device)
    return dict(fn=pcg_fill, args=[seed, out, N], spec=RNG_SPEC, check=[(out, ref)])


def _splitmix64_ref(x):
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    return z - (1 << 64) if z >> 63 else z      # the same bits as int64


def case_splitmix64(rng, device):
    N = 31
    state = randint(N, rng, 0, 2**62, dtype=torch.int64)
    ref = torch.tensor([_splitmix64_ref(int(v)) for v in state], dtype=torch.int64)
    out = poison(N, dtype=torch.uint64, device=device)
    return dict(fn=splitmix64, args=[state.to(torch.uint64).to(device), out, N], spec=RNG_SPEC,
                check=[(out, ref)])


# ----- CUDA samples' histogram256: bytes read four at a time from 32-bit words ----------------

@parir.jit
def histogram256(d_Data, d_Histogram, dataCount):
    parir.label('pos')
    for pos in range(dataCount):
        data = d_Data[pos]
        parir.atomic_add(d_Histogram[(data >> 0) & 0xFF], 1)
        parir.atomic_add(d_Histogram[(data >> 8) & 0xFF], 1)
        parir.atomic_add(d_Histogram[(data >> 16) & 0xFF], 1)
        parir.atomic_add(d_Histogram[(data >> 24) & 0xFF], 1)


def case_histogram256(rng, device):
    n_words = 1000
    raw = randint(4 * n_words, rng, 0, 256, dtype=torch.uint8)
    ref = torch.from_numpy(np.bincount(raw.numpy(), minlength=256).astype(np.int32))
    d_Data = raw.to(device).view(torch.int32)          # the bytes as little-endian words
    hist = torch.zeros(256, dtype=torch.int32, device=device)
    return dict(fn=histogram256, args=[d_Data, hist, n_words],
                spec={'pos': parir.threads(256 * 4)}, check=[(hist, ref)])


# ----- PNG's "Sub" filter residuals (uint8, wrapping) counted over a strided view ------------

@parir.jit
def png_sub_histogram(img, hist, bpp):
    H, W = img.shape
    parir.label('y')
    for y in range(H):
        parir.label('x')
        for x in range(W):
            # x - bpp as written would be a uint8 (x is weak, as a Python int is in PyTorch)
            # and wrap for x >= 256; parir warns and suggests computing in int64.
            b = parir.int64(bpp)
            left = img[y, x - b] if x >= b else parir.uint8(0)
            r = img[y, x] - left                # mod 256, as png.c's (png_byte)(*rp - *lp)
            parir.atomic_add(hist[r], 1)


def case_png_sub_histogram(rng, device):
    base = randint((6, 1100), rng, 0, 256, dtype=torch.uint8)
    img = base[1:, 2::2]                        # 5 x 549, strided: rows longer than 256
    bpp = np.uint8(3)                           # bytes per pixel (RGB), a byte as in png.h
    a = img.numpy().astype(np.int64)
    left = np.zeros_like(a)
    left[:, 3:] = a[:, :-3]
    ref = torch.from_numpy(np.bincount(((a - left) % 256).ravel(), minlength=256)
                           .astype(np.int64))
    img = base.to(device)[1:, 2::2]
    hist = torch.zeros(256, dtype=torch.int64, device=device)
    return dict(fn=png_sub_histogram, args=[img, hist, bpp],
                spec={'y': parir.threads(5), 'x': parir.threads(256)}, check=[(hist, ref)])


# ----- CRC-32 (bitwise, zlib's reflected polynomial) and FNV-1a (int32) of each row -----------

@parir.jit
def row_hashes(data, crc_out, fnv_out):
    rows, len_ = data.shape
    parir.label('row')
    for i in range(rows):
        crc = parir.int64(0xFFFFFFFF)
        h = parir.int32(-2128831035)           # 2166136261, the FNV offset basis, as int32
        for j in range(len_):
            byte = data[i, j]
            crc ^= byte
            for k in range(8):
                mask = -(crc & 1)
                crc = (crc >> 1) ^ (0xEDB88320 & mask)
            h ^= byte
            h *= 16777619                      # wraps, as uint32 would
        crc_out[i] = ~crc & 0xFFFFFFFF
        fnv_out[i] = h


def _fnv1a32(bs):
    h = 2166136261
    for b in bs:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def case_row_hashes(rng, device, rows=33, row_bytes=31):
    buf = randint((rows, row_bytes + 1), rng, 0, 256, dtype=torch.uint8)
    blobs = [bytes(r.tolist()) for r in buf[:, 1:]]
    ref_crc = torch.tensor([zlib.crc32(b) for b in blobs], dtype=torch.int64)
    ref_fnv = torch.from_numpy(np.array([_fnv1a32(b) for b in blobs], dtype=np.uint32)
                               .view(np.int32).copy())
    data = buf.to(device)[:, 1:]                # a view: rows start one byte in
    crc_out = poison(rows, dtype=torch.int64, device=device)
    fnv_out = poison(rows, dtype=torch.int32, device=device)
    return dict(fn=row_hashes, args=[data, crc_out, fnv_out],
                spec={'row': parir.threads(rows)}, check=[(crc_out, ref_crc), (fnv_out, ref_fnv)])


def case_row_hashes_one_row(rng, device):
    return case_row_hashes(rng, device, rows=1, row_bytes=1000)


# ----- Population count: Hacker's Delight's pop() on int32, Kernighan's loop, and the total --

@parir.jit
def popcount_bits(x, pop_swar, pop_loop, total, N):
    parir.label('i')
    for i in range(N):
        int_ = x[i]
        v = int_ - ((int_ >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        c = (v * 0x01010101) >> 24
        pop_swar[i] = c
        u = parir.int64(int_) & 0xFFFFFFFF
        k = 0
        while u != 0:
            u &= u - 1
            k += 1
        pop_loop[i] = k
        total[0] += c


def case_popcount(rng, device):
    N = 1000
    x = randint(N, rng, -2**31, 2**31, dtype=torch.int32)
    x[:4] = torch.tensor([0, -1, -2**31, 2**31 - 1], dtype=torch.int32)
    counts = np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in x], dtype=np.int64)
    ref_counts = torch.from_numpy(counts)
    ref_total = torch.tensor([counts.sum()], dtype=torch.int64)
    x = x.to(device)
    pop_swar = poison(N, dtype=torch.int32, device=device)
    pop_loop = poison(N, dtype=torch.uint8, device=device)
    total = torch.zeros(1, dtype=torch.int64, device=device)
    return dict(fn=popcount_bits, args=[x, pop_swar, pop_loop, total, N],
                spec={'i': parir.threads(256).reduce()},
                check=[(pop_swar, ref_counts), (pop_loop, ref_counts), (total, ref_total)])


# ----- Graphs in CSR form (int32 row pointers and columns) -----------------------------------

def random_graph(n, rng, max_deg, symmetric=False):
    g = _np_rng(rng)
    adj = [set() for _ in range(n)]
    for u in range(n):
        for v in g.integers(0, n, size=int(g.integers(0, max_deg + 1))):
            if v != u:
                adj[u].add(int(v))
                if symmetric:
                    adj[int(v)].add(u)
    rowptr = np.zeros(n + 1, dtype=np.int32)
    rowptr[1:] = np.cumsum([len(a) for a in adj])
    cols = np.array([v for a in adj for v in sorted(a)], dtype=np.int32)
    return adj, torch.from_numpy(rowptr), torch.from_numpy(cols)


# ----- Rodinia's BFS (Harish & Narayanan): two kernels per level, the host loop fixed --------

@parir.jit
def bfs_rodinia(rowptr, cols, g_graph_mask, g_updating_graph_mask, g_graph_visited, g_cost,
                g_over, no_of_nodes, n_iter):
    for it in range(n_iter):
        parir.label('tid')
        for tid in range(no_of_nodes):
            if g_graph_mask[tid]:
                g_graph_mask[tid] = False
                for i in range(rowptr[tid], rowptr[tid + 1]):
                    id = cols[i]
                    if not g_graph_visited[id]:
                        g_cost[id] = g_cost[tid] + 1
                        g_updating_graph_mask[id] = True
        parir.label('tid')
        for tid in range(no_of_nodes):
            if g_updating_graph_mask[tid]:
                g_graph_mask[tid] = True
                g_graph_visited[tid] = True
                g_over[0] = True
                g_updating_graph_mask[tid] = False


def case_bfs_rodinia(rng, device):
    n, n_iter, source = 1000, np.int32(5), 0
    adj, rowptr, cols = random_graph(n, rng, 4)
    cost = [-1] * n
    cost[source] = 0
    frontier, visited = {source}, {source}
    over = False
    for _ in range(int(n_iter)):
        nxt = set()
        for u in frontier:
            for v in adj[u]:
                if v not in visited:
                    cost[v] = cost[u] + 1
                    nxt.add(v)
        visited |= nxt
        over = over or bool(nxt)
        frontier = nxt
    mask = torch.zeros(n, dtype=torch.bool)
    mask[list(frontier)] = True
    vis = torch.zeros(n, dtype=torch.bool)
    vis[list(visited)] = True

    g_graph_mask = torch.zeros(n, dtype=torch.bool, device=device)
    g_graph_mask[source] = True
    g_graph_visited = g_graph_mask.clone()
    g_updating = torch.zeros(n, dtype=torch.bool, device=device)
    g_cost = torch.full((n,), -1, dtype=torch.int32, device=device)
    g_cost[source] = 0
    g_over = torch.zeros(1, dtype=torch.bool, device=device)
    return dict(fn=bfs_rodinia,
                args=[rowptr.to(device), cols.to(device), g_graph_mask, g_updating,
                      g_graph_visited, g_cost, g_over, n, n_iter],
                spec={'tid': parir.threads(n)},
                check=[(g_cost, torch.tensor(cost, dtype=torch.int32)), (g_graph_mask, mask),
                       (g_graph_visited, vis), (g_updating, torch.zeros(n, dtype=torch.bool)),
                       (g_over, torch.tensor([over]))])


# ----- PageRank, pull style over incoming edges, a warp reducing each vertex's edges ----------

@parir.jit
def pagerank_pull(in_rowptr, in_cols, out_degree, pr, pr_next, damping, N, n_iter):
    for it in range(n_iter):
        parir.label('v')
        for v in range(N):
            s = 0.0
            parir.label('e')
            for e in range(in_rowptr[v], in_rowptr[v + 1]):
                u = in_cols[e]
                s += pr[u] / out_degree[u]
            pr_next[v] = (1.0 - damping) / N + damping * s
        parir.label('v')
        for v in range(N):
            pr[v] = pr_next[v]


def case_pagerank_pull(rng, device):
    N, n_iter, damping = 1000, 4, np.float32(0.85)
    adj, _, _ = random_graph(N, rng, 6)
    incoming = [[] for _ in range(N)]
    for u in range(N):
        for v in adj[u]:
            incoming[v].append(u)
    out_degree = np.array([len(a) for a in adj], dtype=np.int32)
    in_rowptr = np.zeros(N + 1, dtype=np.int32)
    in_rowptr[1:] = np.cumsum([len(a) for a in incoming])
    in_cols = np.array([u for a in incoming for u in a], dtype=np.int32)
    pr = np.full(N, 1.0 / N)
    d = float(damping)
    for _ in range(n_iter):
        nxt = np.array([(1.0 - d) / N + d * sum(pr[u] / out_degree[u] for u in incoming[v])
                        for v in range(N)])
        pr = nxt
    pr_t = torch.full((N,), 1.0 / N, dtype=torch.float32, device=device)
    pr_next = poison(N, device=device)
    return dict(fn=pagerank_pull,
                args=[torch.from_numpy(in_rowptr).to(device), torch.from_numpy(in_cols).to(device),
                      torch.from_numpy(out_degree).to(device), pr_t, pr_next, damping, N, n_iter],
                spec={'v': parir.threads(N), 'e': parir.threads(32).reduce()},
                check=[(pr_t, torch.from_numpy(pr)), (pr_next, torch.from_numpy(pr))])


# ----- Connected components by label propagation: each vertex takes its neighbours' minimum --

@parir.jit
def cc_label_prop(rowptr, cols, labels, labels_next, changed, N, n_iter):
    for it in range(n_iter):
        parir.label('v')
        for v in range(N):
            m = labels[v]
            parir.label('nbr')
            for e in range(rowptr[v], rowptr[v + 1]):
                m = min(m, labels[cols[e]])
            labels_next[v] = m
            if m != labels[v]:
                changed[it] = True
        parir.label('v')
        for v in range(N):
            labels[v] = labels_next[v]


def case_cc_label_prop(rng, device):
    N, n_iter = 1000, 6
    adj, rowptr, cols = random_graph(N, rng, 2, symmetric=True)
    lab = np.arange(N, dtype=np.int64)
    ch = np.zeros(n_iter, dtype=bool)
    for it in range(n_iter):
        nxt = np.array([min([lab[v]] + [lab[u] for u in adj[v]]) for v in range(N)])
        ch[it] = bool((nxt != lab).any())
        lab = nxt
    labels = torch.arange(N, dtype=torch.int32, device=device)
    labels_next = poison(N, dtype=torch.int32, device=device)
    changed = torch.zeros(n_iter, dtype=torch.bool, device=device)
    return dict(fn=cc_label_prop,
                args=[rowptr.to(device), cols.to(device), labels, labels_next, changed, N,
                      n_iter],
                spec={'v': parir.threads(N), 'nbr': parir.threads(32).reduce()},
                check=[(labels, torch.from_numpy(lab)), (labels_next, torch.from_numpy(lab)),
                       (changed, torch.from_numpy(ch))])


# ----- Radix sort's upsweep: per-block counts of one 4-bit digit, then digit-major offsets ----

@parir.jit
def radix_count(keys, counts, offsets, shift, n, num_blocks, BLOCK):
    RADIX = 16
    parir.label('block')
    for b in range(num_blocks):
        parir.label('thread')
        for t in range(BLOCK):
            i = b * BLOCK + t
            if i < n:
                digit = (keys[i] >> shift) & (RADIX - 1)
                parir.atomic_add(counts[b, digit], 1)
    with parir.gpu:
        s = 0
        for d in range(RADIX):
            for b in range(num_blocks):
                offsets[b, d] = s
                s += counts[b, d]


def case_radix_count(rng, device):
    n, BLOCK = 4097, 256
    num_blocks = (n + BLOCK - 1) // BLOCK
    shift = np.int32(8)
    keys = randint(n, rng, 0, 2**31 - 1, dtype=torch.int32)
    digits = ((keys.numpy().astype(np.int64) >> 8) & 15)
    ref_counts = np.zeros((num_blocks, 16), dtype=np.int64)
    for i, d in enumerate(digits):
        ref_counts[i // BLOCK, d] += 1
    flat = ref_counts.T.ravel()                 # digit-major
    ref_offsets = (np.cumsum(flat) - flat).reshape(16, num_blocks).T
    counts = torch.zeros(num_blocks, 16, dtype=torch.int32, device=device)
    offsets = poison((num_blocks, 16), dtype=torch.int32, device=device)
    return dict(fn=radix_count, args=[keys.to(device), counts, offsets, shift, n, num_blocks,
                                      BLOCK],
                spec={'block': parir.threads(num_blocks), 'thread': parir.threads(BLOCK)},
                check=[(counts, torch.from_numpy(ref_counts)),
                       (offsets, torch.from_numpy(np.ascontiguousarray(ref_offsets)))])


# ----- Conway's Game of Life on a torus, uint8 cells, generations in a host loop -------------

@parir.jit
def life_step(grid, new_grid, N, M, birth, survive):
    parir.label('row')
    for i in range(N):
        parir.label('col')
        for j in range(M):
            ν = 0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    if di != 0 or dj != 0:
                        ν += grid[(i + di + N) % N, (j + dj) % M]
            alive = grid[i, j]
            new_grid[i, j] = 1 if ν == birth or (ν == survive and alive) else 0


@parir.jit
def life(a, b, N, M, generations, birth, survive):      # B3/S23: birth=3, survive=2
    for g in range(generations // 2):
        life_step(a, b, N, M, birth, survive)
        life_step(b, a, N, M, birth, survive)


def _life_ref(a, gens):
    for _ in range(gens):
        n = sum(np.roll(np.roll(a, di, 0), dj, 1)
                for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)
        a = ((n == 3) | ((n == 2) & (a == 1))).astype(np.uint8)
    return a


def case_life(rng, device):
    N, M, gens = 31, 33, 4
    a0 = (torch.rand(N, M, generator=rng) < 0.35).to(torch.uint8)
    ref_a = _life_ref(a0.numpy(), gens)
    ref_b = _life_ref(a0.numpy(), gens - 1)
    a = a0.to(device)
    b = poison((N, M), dtype=torch.uint8, device=device)
    return dict(fn=life, args=[a, b, N, M, gens, np.uint8(3), np.uint8(2)],
                spec={'row': parir.threads(N), 'col': parir.threads(M)},
                check=[(a, torch.from_numpy(ref_a)), (b, torch.from_numpy(ref_b))])


# ----- Mark Harris's transposeNaive with TILE_DIM x BLOCK_ROWS threads, flat row-major data --

@parir.jit
def parir_kernel(odata, idata, width, height):
    TILE_DIM = 32
    BLOCK_ROWS = 8
    parir.label('blockIdx_y')
    for by in range((height + TILE_DIM - 1) // TILE_DIM):
        parir.label('blockIdx_x')
        for bx in range((width + TILE_DIM - 1) // TILE_DIM):
            parir.label('threadIdx')
            for t in range(TILE_DIM * BLOCK_ROWS):
                x = bx * TILE_DIM + t % TILE_DIM
                y = by * TILE_DIM + t // TILE_DIM
                for j in range(0, TILE_DIM, BLOCK_ROWS):
                    if x < width and y + j < height:
                        odata[x * height + (y + j)] = idata[(y + j) * width + x]


def case_transpose_naive(rng, device):
    width, height = 100, 33
    idata = randint(width * height, rng, -30000, 30000, dtype=torch.int16)
    ref = idata.reshape(height, width).t().contiguous().reshape(-1)
    odata = poison(width * height, dtype=torch.int16, device=device)
    gy, gx = (height + 31) // 32, (width + 31) // 32
    return dict(fn=parir_kernel, args=[odata, idata.to(device), width, height],
                spec={'blockIdx_y': parir.threads(gy), 'blockIdx_x': parir.threads(gx),
                      'threadIdx': parir.threads(256)},
                check=[(odata, ref)])


# ----- The same transpose written as a copy into a transposed view ---------------------------

@parir.jit
def copy_into(dst, src):
    parir.label('i')
    for i in range(len(src)):
        parir.label('j')
        for j in range(src.shape[1]):
            dst[i, j] = src[i, j]


def case_transpose_view(rng, device):
    x = randint((1000, 34), rng, -100, 100, dtype=torch.int64)
    src = x[:, 1:]                              # 1000 x 33, row stride 34
    ref = src.t().contiguous()
    out = poison((33, 1000), dtype=torch.int64, device=device)
    return dict(fn=copy_into, args=[out.t(), x.to(device)[:, 1:]],
                spec={'i': parir.threads(1000), 'j': parir.threads(33)},
                check=[(out, ref)])


# ----- Stream compaction: flags, an exclusive scan of them, a scatter of the survivors --------

@parir.jit
def compact_nonzero(x, flags, pos, out, count, N):
    parir.label('i')
    for i in range(N):
        flags[i] = 1 if x[i] != 0 else 0
    with parir.gpu:
        s = 0
        parir.label('scan')
        for i in range(N):
            pos[i] = s
            s += flags[i]
        count[0] = s
    parir.label('i')
    for i in range(N):
        if flags[i]:
            out[pos[i]] = x[i]


def case_compact_nonzero(rng, device):
    N = 4097
    x = randint(N, rng, -3, 4, dtype=torch.int32)
    keep = x.numpy() != 0
    ref_flags = torch.from_numpy(keep.astype(np.int32))
    ref_pos = torch.from_numpy(np.cumsum(keep) - keep).to(torch.int32)
    ref_out = torch.from_numpy(x.numpy()[keep])
    k = int(keep.sum())
    flags = poison(N, dtype=torch.int32, device=device)
    pos = poison(N, dtype=torch.int32, device=device)
    out = poison(N, dtype=torch.int32, device=device)
    count = poison(1, dtype=torch.int64, device=device)
    return dict(fn=compact_nonzero, args=[x.to(device), flags, pos, out, count, N],
                spec={'i': parir.threads(N), 'scan': parir.threads(1024).scan()},
                check=[(flags, ref_flags), (pos, ref_pos), (out[:k], ref_out),
                       (count, torch.tensor([k]))])


CASES = {
    "int_xorshift32": case_xorshift32,
    "int_pcg_hash": case_pcg_fill,
    "int_splitmix64": case_splitmix64,
    "int_histogram256": case_histogram256,
    "int_png_sub_histogram": case_png_sub_histogram,
    "int_row_hashes": case_row_hashes,
    "int_row_hashes_one_row": case_row_hashes_one_row,
    "int_popcount": case_popcount,
    "int_bfs_rodinia": case_bfs_rodinia,
    "int_pagerank_pull": case_pagerank_pull,
    "int_cc_label_prop": case_cc_label_prop,
    "int_radix_count": case_radix_count,
    "int_life": case_life,
    "int_transpose_naive": case_transpose_naive,
    "int_transpose_view": case_transpose_view,
    "int_compact_nonzero": case_compact_nonzero,
}
