"""Kernels ported from well-known GPU and Python codes, with their authors' names, loop structure
and habits: Rosetta Code's table-driven CRC-32 (the table built on the GPU), Tero Karras's Morton
codes (NVIDIA's "Thinking Parallel, Part III"), Marsaglia's xorwow streams (cuRAND's default
generator) over host rounds, PMPP's vertex-centric BFS with a fixed number of levels,
NetworkX's pagerank_python with atomics, scikit-learn's Lloyd iteration for k-means, Soman et
al.'s hook-and-jump connected components, GPU Gems 3's split-based radix sort, the jacobi.cu
course example's ping-pong solver, rosinality's VQ-VAE codebook lookup, a joint histogram's
mutual information and an edge-parallel Bellman-Ford with atomic_min."""

import zlib

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


# ----- Rosetta Code's C rc_crc32: the 256-entry table (one thread an entry), then a message a
# thread, crc = (crc >> 8) ^ table[(crc & 0xff) ^ octet] --------------------------------------

@parir.jit
def rc_crc32(table, buf, crc_out, nmsg, len_):
    parir.label('i')
    for i in range(256):
        rem = i  # remainder from polynomial division
        for j in range(8):
            if rem & 1:
                rem >>= 1
                rem ^= 0xedb88320
            else:
                rem >>= 1
        table[i] = rem
    parir.label('msg')
    for m in range(nmsg):
        crc = 0xFFFFFFFF
        for p in range(len_):
            octet = buf[m, p]
            crc = (crc >> 8) ^ table[(crc & 0xff) ^ octet]
        crc_out[m] = crc ^ 0xFFFFFFFF


def case_crc32_table(rng, device):
    nmsg, len_ = 257, 33
    buf = randint((nmsg, len_), rng, 0, 256, dtype=torch.uint8)
    ref = np.array([zlib.crc32(bytes(row)) for row in buf.numpy()], dtype=np.int64)
    ref_table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        ref_table.append(c)
    table = poison(256, dtype=torch.int64, device=device).to(torch.uint32)
    crc_out = poison(nmsg, dtype=torch.int64, device=device).to(torch.uint32)
    return dict(fn=rc_crc32, args=[table, buf.to(device), crc_out, nmsg, len_],
                spec={'i': parir.threads(256), 'msg': parir.threads(nmsg)},
                check=[(table, torch.tensor(ref_table, dtype=torch.int64)),
                       (crc_out, torch.from_numpy(ref))])


# ----- Karras's 30-bit Morton codes: expandBits by multiply-and-mask on unsigned ints, the
# points normalized to the scene's bounding box, reduced first (as an LBVH builder does) ------

def expandBits(v):
    # Expands a 10-bit integer into 30 bits by inserting 2 zeros after each bit.
    v = (v * 0x00010001) & 0xFF0000FF
    v = (v * 0x00000101) & 0x0F00F00F
    v = (v * 0x00000011) & 0xC30C30C3
    v = (v * 0x00000005) & 0x49249249
    return v


def morton3D(x, y, z):
    # Calculates a 30-bit Morton code for the given 3D point located within the unit cube [0,1].
    x = min(max(x * 1024.0, 0.0), 1023.0)
    y = min(max(y * 1024.0, 0.0), 1023.0)
    z = min(max(z * 1024.0, 0.0), 1023.0)
    xx = expandBits(parir.uint32(x))
    yy = expandBits(parir.uint32(y))
    zz = expandBits(parir.uint32(z))
    return xx * 4 + yy * 2 + zz


@parir.jit
def morton_codes(points, bbox, codes, N):
    parir.label('i')
    bbox[0] = parir.min(points[:, 0])
    parir.label('i')
    bbox[1] = parir.min(points[:, 1])
    parir.label('i')
    bbox[2] = parir.min(points[:, 2])
    parir.label('i')
    bbox[3] = parir.max(points[:, 0])
    parir.label('i')
    bbox[4] = parir.max(points[:, 1])
    parir.label('i')
    bbox[5] = parir.max(points[:, 2])
    parir.label('i')
    for i in range(N):
        x = (points[i, 0] - bbox[0]) / (bbox[3] - bbox[0])
        y = (points[i, 1] - bbox[1]) / (bbox[4] - bbox[1])
        z = (points[i, 2] - bbox[2]) / (bbox[5] - bbox[2])
        codes[i] = morton3D(x, y, z)


def _expand_bits_ref(v):
    out = np.zeros_like(v)
    for b in range(10):
        out |= ((v >> b) & 1) << (3 * b)
    return out


def case_morton3d(rng, device):
    N = 4097
    points = nonzero((N, 3), rng, device="cpu", lo=0.05, hi=3.0)
    p = points.numpy()                      # float32: the kernel's arithmetic, exactly
    lo, hi = p.min(0), p.max(0)
    u = (p - lo) / (hi - lo)
    q = np.minimum(np.maximum(u * np.float32(1024.0), np.float32(0.0)), np.float32(1023.0))
    q = q.astype(np.int64)
    ref = _expand_bits_ref(q[:, 0]) * 4 + _expand_bits_ref(q[:, 1]) * 2 + _expand_bits_ref(q[:, 2])
    bbox = poison(6, device=device)
    codes = poison(N, dtype=torch.int64, device=device).to(torch.uint32)
    return dict(fn=morton_codes, args=[points.to(device), bbox, codes, N],
                spec={'i': parir.threads(N)},
                check=[(bbox, torch.from_numpy(np.concatenate([lo, hi]).astype(np.float64))),
                       (codes, torch.from_numpy(ref))])


# ----- Marsaglia's xorwow (Wikipedia's C, cuRAND's XORWOW): five words of state and a Weyl
# counter per thread, one draw per thread in each host round ----------------------------------

@parir.jit
def xorwow_streams(x, counter, out, uniform, nthreads, rounds):
    for r in range(rounds):
        parir.label('tid')
        for tid in range(nthreads):
            t = x[tid, 4]
            s = x[tid, 0]
            x[tid, 4] = x[tid, 3]
            x[tid, 3] = x[tid, 2]
            x[tid, 2] = x[tid, 1]
            x[tid, 1] = s
            t ^= t >> 2
            t ^= t << 1
            t ^= s ^ (s << 4)
            x[tid, 0] = t
            counter[tid] += 362437
            v = t + counter[tid]
            out[r, tid] = v
            uniform[r, tid] = parir.float32(v) * 2.3283064365386963e-10 + 1.1641532e-10


def case_xorwow(rng, device):
    nthreads, rounds = 1000, 7
    x0 = randint((nthreads, 5), rng, 1, 2**32 - 1, dtype=torch.int64)
    c0 = randint(nthreads, rng, 0, 2**32 - 1, dtype=torch.int64)
    st = x0.numpy().astype(np.uint32).copy()
    cnt = c0.numpy().astype(np.uint32).copy()
    ref = np.zeros((rounds, nthreads), dtype=np.uint32)
    for r in range(rounds):
        t = st[:, 4].copy()
        s = st[:, 0].copy()
        st[:, 4] = st[:, 3]
        st[:, 3] = st[:, 2]
        st[:, 2] = st[:, 1]
        st[:, 1] = s
        t ^= t >> np.uint32(2)
        t ^= t << np.uint32(1)
        t ^= s ^ (s << np.uint32(4))
        st[:, 0] = t
        cnt += np.uint32(362437)
        ref[r] = t + cnt
    ref_u = ref.astype(np.float64) * 2.0 ** -32 + 2.0 ** -33
    x = x0.to(torch.uint32).to(device)
    counter = c0.to(torch.uint32).to(device)
    out = poison((rounds, nthreads), dtype=torch.int64, device=device).to(torch.uint32)
    uniform = poison((rounds, nthreads), device=device)
    return dict(fn=xorwow_streams, args=[x, counter, out, uniform, nthreads, rounds],
                spec={'tid': parir.threads(nthreads)},
                check=[(x, torch.from_numpy(st.astype(np.int64))),
                       (counter, torch.from_numpy(cnt.astype(np.int64))),
                       (out, torch.from_numpy(ref.astype(np.int64))),
                       (uniform, torch.from_numpy(ref_u))])


# ----- CSR graphs ------------------------------------------------------------------------------

def _random_csr(n, rng, max_deg):
    g = _np_rng(rng)
    adj = [sorted({int(v) for v in g.integers(0, n, size=int(g.integers(0, max_deg + 1)))
                   if v != u}) for u in range(n)]
    rowptr = np.zeros(n + 1, dtype=np.int32)
    rowptr[1:] = np.cumsum([len(a) for a in adj])
    cols = np.array([v for a in adj for v in a], dtype=np.int32)
    return adj, rowptr, cols


# ----- PMPP (Hwu, Kirk, El Hajj), vertex-centric push BFS: level[] in uint32 with UINT_MAX for
# unvisited, one kernel per level, the host's loop over currLevel fixed ---------------------

UINT_MAX = 0xFFFFFFFF


@parir.jit
def bfs_pmpp(srcPtrs, dst, level, newVertexVisited, numVertices, numLevels):
    for currLevel in range(1, numLevels + 1):
        parir.label('vertex')
        for vertex in range(numVertices):
            if level[vertex] == currLevel - 1:
                for edge in range(srcPtrs[vertex], srcPtrs[vertex + 1]):
                    neighbor = dst[edge]
                    if level[neighbor] == UINT_MAX:  # Neighbor not visited
                        level[neighbor] = currLevel
                        newVertexVisited[currLevel - 1] = 1


def case_bfs_pmpp(rng, device):
    n, numLevels, source = 1000, 6, 3
    adj, rowptr, cols = _random_csr(n, rng, 3)
    lev = np.full(n, UINT_MAX, dtype=np.int64)
    lev[source] = 0
    visited = np.zeros(numLevels, dtype=np.int64)
    frontier = [source]
    for cur in range(1, numLevels + 1):
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if lev[v] == UINT_MAX:
                    lev[v] = cur
                    nxt.append(v)
        visited[cur - 1] = 1 if nxt else 0
        frontier = nxt
    assert visited[0] and (lev == UINT_MAX).any()
    level = torch.full((n,), UINT_MAX, dtype=torch.int64)
    level[source] = 0
    level = level.to(torch.uint32).to(device)
    newVertexVisited = torch.zeros(numLevels, dtype=torch.int32, device=device)
    return dict(fn=bfs_pmpp,
                args=[torch.from_numpy(rowptr).to(device), torch.from_numpy(cols).to(device),
                      level, newVertexVisited, n, numLevels],
                spec={'vertex': parir.threads(n)},
                check=[(level, torch.from_numpy(lev)),
                       (newVertexVisited, torch.from_numpy(visited))])


# ----- NetworkX's pagerank_python: x[nbr] += alpha * xlast[n] * wt over out-edges (atomics),
# the dangling nodes' mass spread evenly, the l1 error of each iteration kept ---------------

@parir.jit
def pagerank_nx(rowptr, cols, out_degree, x, xlast, err_hist, alpha, N, max_iter):
    for it in range(max_iter):
        parir.label('n')
        for n in range(N):
            xlast[n] = x[n]
            x[n] = 0.0
        danglesum = 0.0
        parir.label('red')
        for n in range(N):
            if out_degree[n] == 0:
                danglesum += alpha * xlast[n]
        parir.label('n')
        for n in range(N):
            # this matrix multiply looks odd because it is doing a left multiply x^T=xlast^T*W
            for e in range(rowptr[n], rowptr[n + 1]):
                nbr = cols[e]
                wt = 1.0 / out_degree[n]
                parir.atomic_add(x[nbr], alpha * xlast[n] * wt)
            parir.atomic_add(x[n], danglesum * (1.0 / N) + (1.0 - alpha) * (1.0 / N))
        # check convergence, l1 norm
        err = 0.0
        parir.label('red')
        for n in range(N):
            err += abs(x[n] - xlast[n])
        with parir.gpu:
            err_hist[it] = err


def case_pagerank_nx(rng, device):
    N, max_iter, alpha = 1000, 5, 0.85
    adj, rowptr, cols = _random_csr(N, rng, 5)
    deg = np.array([len(a) for a in adj], dtype=np.int32)
    assert (deg == 0).any()
    x = np.full(N, 1.0 / N)
    errs = []
    for _ in range(max_iter):
        xlast = x
        x = np.zeros(N)
        danglesum = alpha * xlast[deg == 0].sum()
        for n in range(N):
            for nbr in adj[n]:
                x[nbr] += alpha * xlast[n] / deg[n]
            x[n] += danglesum / N + (1.0 - alpha) / N
        errs.append(np.abs(x - xlast).sum())
    x_t = torch.full((N,), 1.0 / N, dtype=torch.float32, device=device)
    xlast_t = poison(N, device=device)
    err_hist = poison(max_iter, device=device)
    return dict(fn=pagerank_nx,
                args=[torch.from_numpy(rowptr).to(device), torch.from_numpy(cols).to(device),
                      torch.from_numpy(deg).to(device), x_t, xlast_t, err_hist, alpha, N,
                      max_iter],
                spec={'n': parir.threads(N), 'red': parir.threads(N).reduce()},
                check=[(x_t, torch.from_numpy(x)), (xlast_t, torch.from_numpy(xlast)),
                       (err_hist, torch.tensor(errs))])


# ----- scikit-learn's Lloyd iteration (_k_means_lloyd.pyx): labels by the nearest center,
# centers_new and weight_in_clusters summed (atomically here), _average_centers, center_shift --

@parir.jit
def kmeans_lloyd(X, centers, centers_new, weight_in_clusters, labels, center_shift,
                 n_samples, n_features, n_clusters, max_iter):
    for it in range(max_iter):
        parir.label('cluster')
        for j in range(n_clusters):
            weight_in_clusters[j] = 0.0
            for k in range(n_features):
                centers_new[j, k] = 0.0
        parir.label('sample')
        for i in range(n_samples):
            min_sq_dist = parir.inf
            label = 0
            for j in range(n_clusters):
                sq_dist = 0.0
                for k in range(n_features):
                    diff = X[i, k] - centers[j, k]
                    sq_dist += diff * diff
                if sq_dist < min_sq_dist:
                    min_sq_dist = sq_dist
                    label = j
            labels[i] = label
            parir.atomic_add(weight_in_clusters[label], 1.0)
            for k in range(n_features):
                parir.atomic_add(centers_new[label, k], X[i, k])
        parir.label('cluster')
        for j in range(n_clusters):
            if weight_in_clusters[j] > 0:
                alpha = 1.0 / weight_in_clusters[j]
                for k in range(n_features):
                    centers_new[j, k] *= alpha
            else:
                for k in range(n_features):
                    centers_new[j, k] = centers[j, k]
            shift = 0.0
            for k in range(n_features):
                shift += (centers_new[j, k] - centers[j, k]) ** 2
                centers[j, k] = centers_new[j, k]
            center_shift[it, j] = parir.sqrt(shift)


def case_kmeans_lloyd(rng, device):
    n_samples, n_features, n_clusters, max_iter = 1000, 5, 7, 4
    g = _np_rng(rng)
    true_centers = g.uniform(-5, 5, size=(n_clusters, n_features))
    X = true_centers[g.integers(0, n_clusters, n_samples)] + g.normal(size=(n_samples, n_features))
    init = X[g.choice(n_samples, n_clusters, replace=False)].copy()
    c = init.copy()
    shifts = np.zeros((max_iter, n_clusters))
    for it in range(max_iter):
        d = ((X[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        part = np.sort(d, axis=1)
        assert (part[:, 1] - part[:, 0] > 1e-9).all()     # no ties between centers
        lab = d.argmin(1)
        new = c.copy()
        for j in range(n_clusters):
            if (lab == j).any():
                new[j] = X[lab == j].mean(0)
        shifts[it] = np.sqrt(((new - c) ** 2).sum(1))
        c = new
    weights = np.bincount(lab, minlength=n_clusters).astype(np.float64)
    Xt = torch.from_numpy(X).to(device)
    centers = torch.from_numpy(init).to(device)
    centers_new = poison((n_clusters, n_features), dtype=torch.float64, device=device)
    weight_in_clusters = poison(n_clusters, dtype=torch.float64, device=device)
    labels = poison(n_samples, dtype=torch.int32, device=device)
    center_shift = poison((max_iter, n_clusters), dtype=torch.float64, device=device)
    return dict(fn=kmeans_lloyd,
                args=[Xt, centers, centers_new, weight_in_clusters, labels, center_shift,
                      n_samples, n_features, n_clusters, max_iter],
                spec={'sample': parir.threads(n_samples), 'cluster': parir.threads(n_clusters)},
                check=[(centers, torch.from_numpy(c)), (centers_new, torch.from_numpy(c)),
                       (labels, torch.from_numpy(lab)),
                       (weight_in_clusters, torch.from_numpy(weights)),
                       (center_shift, torch.from_numpy(shifts))])


# ----- Shiloach-Vishkin as Soman, Kishore & Narayanan run it on the GPU: hooking over the edge
# list (the larger root under the smaller), then pointer jumping until every tree is a star --

@parir.jit
def cc_hook_jump(src, dst, parent, num_vertices, num_edges, num_rounds):
    parir.label('v')
    for v in range(num_vertices):
        parent[v] = v
    for r in range(num_rounds):
        parir.label('e')
        for e in range(num_edges):
            u = src[e]
            v = dst[e]
            pu = parent[u]
            pv = parent[v]
            if pu < pv and pv == parent[pv]:
                parent[pv] = pu
            elif pv < pu and pu == parent[pu]:
                parent[pu] = pv
        parir.label('v')
        for v in range(num_vertices):
            while parent[v] != parent[parent[v]]:
                parent[v] = parent[parent[v]]


def case_cc_hook_jump(rng, device):
    num_vertices, num_edges, num_rounds = 1000, 700, 12
    g = _np_rng(rng)
    src = g.integers(0, num_vertices, num_edges)
    dst = g.integers(0, num_vertices, num_edges)
    # the reference: the smallest vertex of each component, by union-find
    root = list(range(num_vertices))

    def find(a):
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a
    for a, b in zip(src, dst):
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            root[max(ra, rb)] = min(ra, rb)
    ref = np.array([find(v) for v in range(num_vertices)], dtype=np.int64)
    assert len(set(ref.tolist())) > 1 and (ref != np.arange(num_vertices)).any()
    parent = poison(num_vertices, dtype=torch.int32, device=device)
    return dict(fn=cc_hook_jump,
                args=[torch.from_numpy(src.astype(np.int32)).to(device),
                      torch.from_numpy(dst.astype(np.int32)).to(device), parent,
                      num_vertices, num_edges, num_rounds],
                spec={'v': parir.threads(num_vertices), 'e': parir.threads(num_edges)},
                check=[(parent, torch.from_numpy(ref))])


# ----- GPU Gems 3 ch. 39 (Harris, Sengupta, Owens): radix sort by split, one bit a pass:
# e = !b, f = exclusive scan of e, totalFalses, d = b ? t : f, scatter, then copy back ------

@parir.jit
def radix_sort_split(keys, e, f, out, n, nbits):
    for bit in range(nbits):
        parir.label('i')
        for i in range(n):
            b = (keys[i] >> bit) & 1
            e[i] = 1 - b
        parir.label('scan')
        f[:] = parir.cumsum(e[:], exclusive=True)
        totalFalses = e[n - 1] + f[n - 1]
        parir.label('i')
        for i in range(n):
            if e[i] == 1:
                d = f[i]
            else:
                t = i - f[i] + totalFalses
                d = t
            out[d] = keys[i]
        parir.label('i')
        for i in range(n):
            keys[i] = out[i]


def case_radix_sort_split(rng, device):
    n, nbits = 1000, 14
    keys = randint(n, rng, 0, 1 << nbits, dtype=torch.int32, device=device)
    ref = np.sort(keys.cpu().numpy())
    return dict(fn=radix_sort_split,
                args=[keys, poison(n, dtype=torch.int32, device=device),
                      poison(n, dtype=torch.int32, device=device),
                      poison(n, dtype=torch.int32, device=device), n, nbits],
                spec={'i': parir.threads(n), 'scan': parir.threads(n).scan()},
                check=[(keys, torch.from_numpy(ref))])


# ----- jacobi.cu, the course example: jacobiOnDevice over flat A, the host's k % 2 choosing
# which buffer is x_now and which x_next, then the residual's norm ------------------------

def jacobiOnDevice(x_next, A, x_now, b, Ni, Nj):
    parir.label('idx')
    for idx in range(Ni):
        sigma = 0.0
        idx_Ai = idx * Nj
        for j in range(Nj):
            if idx != j:
                sigma += A[idx_Ai + j] * x_now[j]
        x_next[idx] = (b[idx] - sigma) / A[idx_Ai + idx]


@parir.jit
def jacobi_solve(A, b, x, x_new, resid, Ni, Nj, iters):
    for k in range(iters):
        if k % 2:
            jacobiOnDevice(x, A, x_new, b, Ni, Nj)
        else:
            jacobiOnDevice(x_new, A, x, b, Ni, Nj)
    with parir.gpu:
        resid[0] = 0.0
        parir.label('red')
        for i in range(Ni):
            r = b[i]
            for j in range(Nj):
                r -= A[i * Nj + j] * x_new[j]
            resid[0] += r * r


def case_jacobi_solve(rng, device):
    Ni, iters = 61, 25
    A = positive((Ni, Ni), rng, dtype=torch.float64)
    A += torch.diag(0.25 * A.sum(1))                 # diagonally dominant, slow to converge
    A = A.float()
    b = nonzero(Ni, rng)
    a64, b64 = f64(A), f64(b)
    D = np.diag(a64)
    R = a64 - np.diag(D)
    xs = [np.zeros(Ni), np.zeros(Ni)]                # x, x_new
    for k in range(iters):
        src, dstb = (1, 0) if k % 2 else (0, 1)
        xs[dstb] = (b64 - R @ xs[src]) / D
    r = b64 - a64 @ xs[1]
    x = torch.zeros(Ni, device=device)
    x_new = poison(Ni, device=device)
    resid = poison(1, device=device)
    return dict(fn=jacobi_solve,
                args=[A.reshape(-1).to(device), b.to(device), x, x_new, resid, Ni, Ni, iters],
                spec={'idx': parir.threads(Ni), 'red': parir.threads(Ni).reduce()},
                tol=(1e-4, 1e-5),
                check=[(x, torch.from_numpy(xs[0])), (x_new, torch.from_numpy(xs[1])),
                       (resid, torch.tensor([r @ r]))])


# ----- rosinality's VQ-VAE Quantize.forward: dist = |z|^2 - 2 z.embed + |embed|^2 with embed
# (dim, n_embed), embed_ind = (-dist).max(1), quantize = embed.T[embed_ind] ------------------

@parir.jit
def vq_quantize(flatten, embed, dist, embed_ind, quantize, N, dim, n_embed):
    parir.label('row')
    for i in range(N):
        parir.label('code')
        for k in range(n_embed):
            f2 = 0.0
            fe = 0.0
            e2 = 0.0
            for c in range(dim):
                f2 += flatten[i, c] ** 2
                fe += flatten[i, c] * embed[c, k]
                e2 += embed[c, k] ** 2
            dist[i, k] = f2 - 2 * fe + e2
        parir.label('code')
        ind = parir.argmax(-dist[i, :])
        embed_ind[i] = ind
        parir.label('ch')
        quantize[i, :] = embed[:, ind]


def case_vq_quantize(rng, device):
    N, dim, n_embed = 97, 7, 70
    flatten = nonzero((N, dim), rng)
    embed = nonzero((dim, n_embed), rng)
    fl, em = f64(flatten), f64(embed)
    d = (fl ** 2).sum(1, keepdims=True) - 2 * fl @ em + (em ** 2).sum(0, keepdims=True)
    part = np.sort(d, axis=1)
    assert (part[:, 1] - part[:, 0] > 1e-4).all()    # no near ties in float32
    ind = d.argmin(1)
    dist = poison((N, n_embed), device=device)
    embed_ind = poison(N, dtype=torch.int64, device=device)
    quantize = poison((N, dim), device=device)
    return dict(fn=vq_quantize,
                args=[flatten.to(device), embed.to(device), dist, embed_ind, quantize, N, dim,
                      n_embed],
                spec={'row': parir.threads(N), 'code': parir.threads(n_embed),
                      'ch': parir.threads(dim)},
                check=[(dist, torch.from_numpy(d)), (embed_ind, torch.from_numpy(ind)),
                       (quantize, torch.from_numpy(em.T[ind].copy()))])


# ----- mutual information of two uint8 images from their joint histogram (atomics), the
# marginals as row and column sums, sum p_xy log(p_xy / (p_x p_y)) as a reduction ----------

@parir.jit
def mutual_information(img1, img2, hist, px, py, mi, H, W, bins):
    parir.label('b1')
    for i in range(bins):
        parir.label('b2')
        for j in range(bins):
            hist[i, j] = 0
    parir.label('y')
    for y in range(H):
        parir.label('x')
        for x in range(W):
            a = int(img1[y, x]) * bins // 256
            b = int(img2[y, x]) * bins // 256
            parir.atomic_add(hist[a, b], 1)
    parir.label('b1')
    for i in range(bins):
        parir.label('b2')
        px[i] = parir.sum(hist[i, :])
    parir.label('b2')
    for j in range(bins):
        parir.label('b1')
        py[j] = parir.sum(hist[:, j])
    total = H * W
    acc = 0.0
    parir.label('b1')
    for i in range(bins):
        parir.label('b2')
        for j in range(bins):
            if hist[i, j] > 0:
                pxy = hist[i, j] / total
                acc += pxy * parir.log(pxy / ((px[i] / total) * (py[j] / total)))
    with parir.gpu:
        mi[0] = acc


def case_mutual_information(rng, device):
    H, W, bins = 61, 67, 20
    g = 100.0 + 30.0 * torch.randn((H, W), generator=rng, dtype=torch.float64)
    img1 = g.clamp(0, 255).round().to(torch.uint8)
    noise = 20.0 * torch.randn((H, W), generator=rng, dtype=torch.float64)
    img2 = (255.0 - g + noise).clamp(0, 255).round().to(torch.uint8)
    a = img1.numpy().astype(np.int64) * bins // 256
    b = img2.numpy().astype(np.int64) * bins // 256
    ref_hist = np.zeros((bins, bins), dtype=np.int64)
    np.add.at(ref_hist, (a.ravel(), b.ravel()), 1)
    pxy = ref_hist / (H * W)
    p_x, p_y = pxy.sum(1), pxy.sum(0)
    nz = pxy > 0
    ref_mi = (pxy[nz] * np.log(pxy[nz] / np.outer(p_x, p_y)[nz])).sum()
    hist = poison((bins, bins), dtype=torch.int32, device=device)
    px = poison(bins, dtype=torch.int32, device=device)
    py = poison(bins, dtype=torch.int32, device=device)
    mi = poison(1, dtype=torch.float64, device=device)
    return dict(fn=mutual_information,
                args=[img1.to(device), img2.to(device), hist, px, py, mi, H, W, bins],
                spec={'b1': parir.threads(bins).reduce(), 'b2': parir.threads(bins).reduce(),
                      'y': parir.threads(H), 'x': parir.threads(W)},
                check=[(hist, torch.from_numpy(ref_hist)),
                       (px, torch.from_numpy(ref_hist.sum(1))),
                       (py, torch.from_numpy(ref_hist.sum(0))),
                       (mi, torch.tensor([ref_mi]))])


# ----- Bellman-Ford, edge-parallel as in Numba CUDA ports: relax every edge with
# cuda.atomic.min(dist, dst[e], dist[u] + w[e]), n - 1 rounds on the host ----------------------

INF = 2147483647


@parir.jit
def bellman_ford(src, dst, w, dist, num_vertices, num_edges, source):
    parir.label('v')
    for v in range(num_vertices):
        dist[v] = 0 if v == source else INF
    for _ in range(num_vertices - 1):
        parir.label('e')
        for e in range(num_edges):
            u = src[e]
            if dist[u] != INF:
                parir.atomic_min(dist[dst[e]], dist[u] + w[e])


def case_bellman_ford(rng, device):
    num_vertices, num_edges, source = 97, 300, 5
    g = _np_rng(rng)
    src = g.integers(0, num_vertices, num_edges)
    dst = g.integers(0, num_vertices, num_edges)
    w = g.integers(1, 20, num_edges)
    ref = np.full(num_vertices, INF, dtype=np.int64)
    ref[source] = 0
    for _ in range(num_vertices - 1):
        for u, v, c in zip(src, dst, w):
            if ref[u] != INF and ref[u] + c < ref[v]:
                ref[v] = ref[u] + c
    assert (ref == INF).any() and (ref < INF).sum() > 10
    dist = poison(num_vertices, dtype=torch.int32, device=device)
    return dict(fn=bellman_ford,
                args=[torch.from_numpy(src.astype(np.int32)).to(device),
                      torch.from_numpy(dst.astype(np.int32)).to(device),
                      torch.from_numpy(w.astype(np.int32)).to(device), dist,
                      num_vertices, num_edges, source],
                spec={'v': parir.threads(num_vertices), 'e': parir.threads(num_edges)},
                check=[(dist, torch.from_numpy(ref))])


CASES = {
    "pk_crc32_table": case_crc32_table,
    "pk_morton3d": case_morton3d,
    "pk_xorwow": case_xorwow,
    "pk_bfs_pmpp": case_bfs_pmpp,
    "pk_pagerank_nx": case_pagerank_nx,
    "pk_kmeans_lloyd": case_kmeans_lloyd,
    "pk_cc_hook_jump": case_cc_hook_jump,
    "pk_radix_sort_split": case_radix_sort_split,
    "pk_jacobi_solve": case_jacobi_solve,
    "pk_vq_quantize": case_vq_quantize,
    "pk_mutual_information": case_mutual_information,
    "pk_bellman_ford": case_bellman_ford,
}
