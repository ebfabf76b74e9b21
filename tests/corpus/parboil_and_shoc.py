"""Kernels ported from the Parboil benchmarks and the SHOC suite, with their authors' names,
flattened index arithmetic, #define constants as module globals, helper functions and host loops:
Parboil's mri-q (ComputePhiMag_GPU, then ComputeQ_GPU launched once per tile of
KERNEL_Q_K_ELEMS_PER_GRID k-space samples copied into the ck tile, kValues as a dict of arrays,
two samples an iteration), cutcp (cuda_cutoff_potential_lattice: atoms in BIN_DEPTH-deep bins,
a neighbour list of bin offsets, the smoothed 1/r inside the cutoff), tpacf (doCompute's binary
search of the bin boundaries for DD, then RR and DR for each random set), sad (mb_sad_calc's 4x4
SADs over the search window with clamped reference reads, larger_sad_calc_8 and
larger_sad_calc_16 building the 4x8 ... 16x16 SADs in the SAD_TYPE_*_IX layout), stencil
(the naive 7-point kernel with c0 and c1, Index3D, the host loop swapping d_A0 and d_Anext
through d_temp), lbm (performStreamCollide's push scheme with OBSTACLE bounce-back and ACCEL
cells, here on a periodic D2Q9 lattice, the grids swapped every time step), histo (the main
kernel's atomic 32-bit bins, the final kernel's saturation at UINT8_MAX, numIterations times),
spmv in JDS (spmv_jds_naive with sh_zcnt_int per warp and the row permutation) and sgemm's
basicSgemm reference (column-major, 'N'/'T'); SHOC's MD (compute_lj_force over a column-major
neighbour list), Reduction (reduce's two loads a step over gridSize, partial sums finished by
the host), Scan (reduce, top_scan, bottom_scan seeded by the block sums), Stencil2D (the
9-point CPUStencil with wCenter, wCardinal and wDiagonal, std::swap of the buffers, the copy
back for an odd nIters), Spmv (spmv_csr_scalar_kernel, spmv_csr_vector_kernel's warp per row
and spmv_ellpackr_kernel) and Sort (radix sort by 4-bit digits: radixSortBlocks' 1-bit splits
within a block, findRadixOffsets, the scan of the counters and reorderData)."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, randint


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


# ----- Parboil mri-q: ComputePhiMag_GPU, the kValues built from it, ComputeQ_GPU launched once
# per grid of KERNEL_Q_K_ELEMS_PER_GRID samples (the tile copied into ck, cudaMemcpyToSymbol) --

PI = 3.1415926535897932384626433832795029
PIx2 = 6.2831853071795864769252867665590058
KERNEL_PHI_MAG_THREADS_PER_BLOCK = 512
KERNEL_Q_THREADS_PER_BLOCK = 256
KERNEL_Q_K_ELEMS_PER_GRID = 64        # 1024 in Parboil


def ComputePhiMag_GPU(phiR, phiI, phiMag, numK):
    parir.label('indexK')
    for indexK in range(numK):
        real = phiR[indexK]
        imag = phiI[indexK]
        phiMag[indexK] = real * real + imag * imag


def ComputeQ_GPU(numK, kGlobalIndex, x, y, z, Qr, Qi, ck, numX):
    parir.label('xIndex')
    for xIndex in range(numX):
        # Read block's X values from global mem to shared mem
        sX = x[xIndex]
        sY = y[xIndex]
        sZ = z[xIndex]
        sQr = Qr[xIndex]
        sQi = Qi[xIndex]
        # Loop over all elements of K in constant mem to compute a partial value for X.
        kIndex = 0
        kGlobal = kGlobalIndex
        if numK % 2:
            expArg = PIx2 * (ck['Kx'][0] * sX + ck['Ky'][0] * sY + ck['Kz'][0] * sZ)
            sQr += ck['PhiMag'][0] * math.cos(expArg)
            sQi += ck['PhiMag'][0] * math.sin(expArg)
            kIndex += 1
            kGlobal += 1
        while kIndex < KERNEL_Q_K_ELEMS_PER_GRID and kGlobal < numK:
            expArg = PIx2 * (ck['Kx'][kIndex] * sX + ck['Ky'][kIndex] * sY
                             + ck['Kz'][kIndex] * sZ)
            sQr += ck['PhiMag'][kIndex] * math.cos(expArg)
            sQi += ck['PhiMag'][kIndex] * math.sin(expArg)
            kIndex1 = kIndex + 1
            expArg1 = PIx2 * (ck['Kx'][kIndex1] * sX + ck['Ky'][kIndex1] * sY
                              + ck['Kz'][kIndex1] * sZ)
            sQr += ck['PhiMag'][kIndex1] * math.cos(expArg1)
            sQi += ck['PhiMag'][kIndex1] * math.sin(expArg1)
            kIndex += 2
            kGlobal += 2
        Qr[xIndex] = sQr
        Qi[xIndex] = sQi


@parir.jit
def mri_q(kx, ky, kz, x, y, z, phiR, phiI, phiMag, kVals, ck, Qr, Qi, numK, numX):
    ComputePhiMag_GPU(phiR, phiI, phiMag, numK)
    parir.label('k')
    for k in range(numK):
        kVals['Kx'][k] = kx[k]
        kVals['Ky'][k] = ky[k]
        kVals['Kz'][k] = kz[k]
        kVals['PhiMag'][k] = phiMag[k]
    # setupMemoryGPU: cudaMemset(Qr_d, 0), cudaMemset(Qi_d, 0)
    parir.label('xIndex')
    for xIndex in range(numX):
        Qr[xIndex] = 0.0
        Qi[xIndex] = 0.0
    # computeQ_GPU
    QGrids = numK // KERNEL_Q_K_ELEMS_PER_GRID
    if numK % KERNEL_Q_K_ELEMS_PER_GRID:
        QGrids += 1
    for QGrid in range(QGrids):
        # Put the tile of K values into constant mem
        QGridBase = QGrid * KERNEL_Q_K_ELEMS_PER_GRID
        numElems = min(KERNEL_Q_K_ELEMS_PER_GRID, numK - QGridBase)
        parir.label('k')
        for k in range(numElems):
            ck['Kx'][k] = kVals['Kx'][QGridBase + k]
            ck['Ky'][k] = kVals['Ky'][QGridBase + k]
            ck['Kz'][k] = kVals['Kz'][QGridBase + k]
            ck['PhiMag'][k] = kVals['PhiMag'][QGridBase + k]
        ComputeQ_GPU(numK, QGridBase, x, y, z, Qr, Qi, ck, numX)


def case_mri_q(rng, device):
    numK, numX = 130, 77
    kx, ky, kz = (nonzero(numK, rng, lo=0.05, hi=0.5) for _ in range(3))
    x, y, z = (nonzero(numX, rng, lo=0.1, hi=1.0) for _ in range(3))
    phiR, phiI = nonzero(numK, rng), nonzero(numK, rng)
    K = np.stack([f64(kx), f64(ky), f64(kz)], 1)
    X = np.stack([f64(x), f64(y), f64(z)], 1)
    mag = f64(phiR) ** 2 + f64(phiI) ** 2
    arg = 2 * np.pi * (X @ K.T)
    ref_Qr, ref_Qi = np.cos(arg) @ mag, np.sin(arg) @ mag
    phiMag = poison(numK, device=device)
    kVals = {n: poison(numK, device=device) for n in ('Kx', 'Ky', 'Kz', 'PhiMag')}
    ck = {n: poison(KERNEL_Q_K_ELEMS_PER_GRID, device=device) for n in ('Kx', 'Ky', 'Kz', 'PhiMag')}
    Qr, Qi = poison(numX, device=device), poison(numX, device=device)
    return dict(fn=mri_q,
                args=[kx.to(device), ky.to(device), kz.to(device), x.to(device), y.to(device),
                      z.to(device), phiR.to(device), phiI.to(device), phiMag, kVals, ck, Qr, Qi,
                      numK, numX],
                spec={'indexK': parir.threads(numK), 'k': parir.threads(KERNEL_Q_K_ELEMS_PER_GRID),
                      'xIndex': parir.threads(numX)},
                tol=(1e-4, 1e-5),
                check=[(phiMag, torch.from_numpy(mag)), (Qr, torch.from_numpy(ref_Qr)),
                       (Qi, torch.from_numpy(ref_Qi)),
                       (kVals['PhiMag'], torch.from_numpy(mag)),
                       (ck['Kx'][:numK % KERNEL_Q_K_ELEMS_PER_GRID],
                        torch.from_numpy(K[-(numK % KERNEL_Q_K_ELEMS_PER_GRID):, 0]))])


# ----- Parboil stencil: the naive 7-point kernel (Index3D, c0 and c1), the host's time loop
# swapping the device pointers through d_temp, the result copied out of d_A0 -----------------

def Index3D(nx, ny, i, j, k):
    return i + nx * (j + ny * k)


def naive_kernel(c0, c1, A0, Anext, nx, ny, nz):
    parir.label('k')
    for k in range(1, nz - 1):
        parir.label('j')
        for j in range(1, ny - 1):
            parir.label('i')
            for i in range(1, nx - 1):
                Anext[Index3D(nx, ny, i, j, k)] = (
                    A0[Index3D(nx, ny, i, j, k + 1)] + A0[Index3D(nx, ny, i, j, k - 1)]
                    + A0[Index3D(nx, ny, i, j + 1, k)] + A0[Index3D(nx, ny, i, j - 1, k)]
                    + A0[Index3D(nx, ny, i + 1, j, k)] + A0[Index3D(nx, ny, i - 1, j, k)]
                ) * c1 - A0[Index3D(nx, ny, i, j, k)] * c0


@parir.jit
def stencil(h_Anext, d_A0, d_Anext, nx, ny, nz, iteration):
    c0 = 1.0 / 6.0
    c1 = 1.0 / 6.0 / 6.0
    for t in range(iteration):
        naive_kernel(c0, c1, d_A0, d_Anext, nx, ny, nz)
        d_temp = d_A0
        d_A0 = d_Anext
        d_Anext = d_temp
    # cudaMemcpy(h_Anext, d_A0, ...)
    parir.label('n')
    for n in range(nx * ny * nz):
        h_Anext[n] = d_A0[n]


def case_stencil(rng, device):
    nx, ny, nz, iteration = 19, 13, 7, 5
    h_A0 = nonzero(nx * ny * nz, rng)
    c0, c1 = 1.0 / 6.0, 1.0 / 36.0
    a = f64(h_A0).reshape(nz, ny, nx)
    states = [a]
    for _ in range(iteration):
        src = states[-1]
        dst = src.copy()
        dst[1:-1, 1:-1, 1:-1] = (src[2:, 1:-1, 1:-1] + src[:-2, 1:-1, 1:-1]
                                 + src[1:-1, 2:, 1:-1] + src[1:-1, :-2, 1:-1]
                                 + src[1:-1, 1:-1, 2:] + src[1:-1, 1:-1, :-2]) * c1 \
            - src[1:-1, 1:-1, 1:-1] * c0
        states.append(dst)
    d_A0 = h_A0.clone().to(device)
    d_Anext = h_A0.clone().reshape(nz, ny, nx)
    d_Anext[1:-1, 1:-1, 1:-1] = float("nan")      # cudaMemcpy of h_A0 into both: the halo
    d_Anext = d_Anext.reshape(-1).to(device)
    h_Anext = poison(nx * ny * nz, device=device)
    return dict(fn=stencil, args=[h_Anext, d_A0, d_Anext, nx, ny, nz, iteration],
                spec={'k': parir.threads(nz - 2), 'j': parir.threads(ny - 2),
                      'i': parir.threads(nx - 2), 'n': parir.threads(nx * ny * nz)},
                check=[(h_Anext, torch.from_numpy(states[5].ravel())),
                       (d_A0, torch.from_numpy(states[4].ravel())),
                       (d_Anext, torch.from_numpy(states[5].ravel()))])


# ----- Parboil sgemm: basicSgemm, the reference of the benchmark (column-major A, B transposed,
# 'N' and 'T'), C[mm + nn * ldc] = C * beta + alpha * c -------------------------------------

@parir.jit
def basicSgemm(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc):
    parir.label('mm')
    for mm in range(m):
        parir.label('nn')
        for nn in range(n):
            c = 0.0
            for i in range(k):
                a = A[mm + i * lda]
                b = B[nn + i * ldb]
                c += a * b
            C[mm + nn * ldc] = C[mm + nn * ldc] * beta + alpha * c


def case_sgemm(rng, device):
    matArow, matAcol, matBcol = 45, 29, 51
    A = nonzero(matArow * matAcol, rng)           # column-major, lda = matArow
    B = nonzero(matAcol * matBcol, rng)           # transposed: B[nn + i * ldb], ldb = matBcol
    C = nonzero(matArow * matBcol, rng)
    alpha, beta = 1.0, 0.5
    Am = f64(A).reshape(matAcol, matArow).T
    Bm = f64(B).reshape(matAcol, matBcol)
    Cm = f64(C).reshape(matBcol, matArow).T
    ref = (Cm * beta + alpha * (Am @ Bm)).T.ravel()
    C = C.to(device)
    return dict(fn=basicSgemm,
                args=[matArow, matBcol, matAcol, alpha, A.to(device), matArow, B.to(device),
                      matBcol, beta, C, matArow],
                spec={'mm': parir.threads(matArow), 'nn': parir.threads(matBcol)},
                check=[(C, torch.from_numpy(ref))])


# ----- Parboil spmv (JDS): spmv_jds_naive, a thread a row of the sorted matrix, the number of
# jagged diagonals of its warp from sh_zcnt_int, the sum stored through d_perm ----------------

WARP_SIZE = 32


@parir.jit
def spmv_jds_naive(dst_vector, d_data, d_index, d_perm, x_vec, dim, jds_ptr_int, sh_zcnt_int):
    parir.label('ix')
    for ix in range(dim):
        sum = 0.0
        bound = sh_zcnt_int[ix // WARP_SIZE]
        for k in range(bound):
            j = jds_ptr_int[k] + ix
            in_ = d_index[j]
            d = d_data[j]
            t = x_vec[in_]
            sum += d * t
        dst_vector[d_perm[ix]] = sum


def _coo_to_jds(dense_rows, dim, pad=WARP_SIZE):
    """Parboil's coo_to_jds: rows sorted by length, padded to groups of a warp, diagonal k
    holding element k of every row of the groups that reach it."""
    lengths = np.array([len(r) for r in dense_rows])
    perm = np.argsort(-lengths, kind="stable")
    ngroups = (dim + pad - 1) // pad
    zcnt = np.array([lengths[perm[g * pad:(g + 1) * pad]].max() for g in range(ngroups)])
    depth = int(zcnt.max())
    ptr, data, index = [], [], []
    for k in range(depth):
        ptr.append(len(data))
        rows_in_diag = int(sum(pad for g in range(ngroups) if zcnt[g] > k))
        for ix in range(rows_in_diag):
            row = dense_rows[perm[ix]] if ix < dim else []
            if k < len(row):
                data.append(row[k][1])
                index.append(row[k][0])
            else:
                data.append(0.0)
                index.append(0)
    return perm, zcnt, np.array(ptr), np.array(data), np.array(index)


def case_spmv_jds(rng, device):
    dim, ncols = 257, 203
    g = _np_rng(rng)
    rows = []
    for r in range(dim):
        cnt = int(g.integers(0, 14)) if r % 9 else 0
        cols = np.sort(g.choice(ncols, cnt, replace=False))
        rows.append([(int(c), float(np.float32(v))) for c, v in
                     zip(cols, g.uniform(0.1, 1.0, cnt) * g.choice([-1.0, 1.0], cnt))])
    perm, zcnt, ptr, data, index = _coo_to_jds(rows, dim)
    x_vec = nonzero(ncols, rng)
    xv = f64(x_vec)
    ref = np.array([sum(v * xv[c] for c, v in row) for row in rows])
    dst_vector = poison(dim, device=device)
    return dict(fn=spmv_jds_naive,
                args=[dst_vector, torch.tensor(data, dtype=torch.float32, device=device),
                      torch.tensor(index, dtype=torch.int32, device=device),
                      torch.tensor(perm, dtype=torch.int32, device=device), x_vec.to(device),
                      dim, torch.tensor(ptr, dtype=torch.int32, device=device),
                      torch.tensor(zcnt, dtype=torch.int32, device=device)],
                spec={'ix': parir.threads(dim)},
                check=[(dst_vector, torch.from_numpy(ref))])


# ----- SHOC Spmv: spmv_csr_scalar_kernel (a thread a row), spmv_csr_vector_kernel (a warp a
# row, its lanes' partial sums reduced), spmv_ellpackr_kernel (column-major ELLPACK-R) --------

def spmv_csr_scalar_kernel(val, cols, rowDelimiters, dim, out, vec):
    parir.label('myRow')
    for myRow in range(dim):
        t = 0.0
        start = rowDelimiters[myRow]
        end = rowDelimiters[myRow + 1]
        for j in range(start, end):
            col = cols[j]
            t += val[j] * vec[col]
        out[myRow] = t


def spmv_csr_vector_kernel(val, cols, rowDelimiters, dim, out, vec):
    parir.label('myRow')
    for myRow in range(dim):
        rowStart = rowDelimiters[myRow]
        rowEnd = rowDelimiters[myRow + 1]
        mySum = 0.0
        parir.label('threadId')
        for id in range(WARP_SIZE):
            j = rowStart + id
            while j < rowEnd:
                col = cols[j]
                mySum += val[j] * vec[col]
                j += WARP_SIZE
        out[myRow] = mySum


def spmv_ellpackr_kernel(val, cols, rowLengths, dim, out, vec):
    parir.label('t')
    for t in range(dim):
        result = 0.0
        max = rowLengths[t]
        for i in range(max):
            ind = i * dim + t
            result += val[ind] * vec[cols[ind]]
        out[t] = result


@parir.jit
def shoc_spmv(val, cols, rowDelimiters, h_valPad, h_colsPad, h_rowLengths, vec, dim,
              out_scalar, out_vector, out_ellpackr):
    spmv_csr_scalar_kernel(val, cols, rowDelimiters, dim, out_scalar, vec)
    spmv_csr_vector_kernel(val, cols, rowDelimiters, dim, out_vector, vec)
    spmv_ellpackr_kernel(h_valPad, h_colsPad, h_rowLengths, dim, out_ellpackr, vec)


def case_shoc_spmv(rng, device):
    dim = 101
    g = _np_rng(rng)
    counts = g.integers(0, 70, dim)
    counts[::11] = 0
    rowDelimiters = np.concatenate([[0], np.cumsum(counts)])
    nnz = int(rowDelimiters[-1])
    cols = np.concatenate([np.sort(g.choice(dim, c, replace=False)) for c in counts])
    val = nonzero(nnz, rng)
    vec = nonzero(dim, rng)
    v, x = f64(val), f64(vec)
    ref = np.array([(v[a:b] * x[cols[a:b]]).sum() for a, b in
                    zip(rowDelimiters[:-1], rowDelimiters[1:])])
    # convertToPadded / ELLPACK-R: column-major, each row's entries then zeros
    maxrl = int(counts.max())
    valPad = np.zeros((maxrl, dim), dtype=np.float32)
    colsPad = np.zeros((maxrl, dim), dtype=np.int32)
    for r in range(dim):
        a, b = rowDelimiters[r], rowDelimiters[r + 1]
        valPad[:b - a, r] = val.numpy()[a:b]
        colsPad[:b - a, r] = cols[a:b]
    outs = [poison(dim, device=device) for _ in range(3)]
    return dict(fn=shoc_spmv,
                args=[val.to(device), torch.tensor(cols, dtype=torch.int32, device=device),
                      torch.tensor(rowDelimiters, dtype=torch.int32, device=device),
                      torch.from_numpy(valPad.ravel()).to(device),
                      torch.from_numpy(colsPad.ravel()).to(device),
                      torch.tensor(counts, dtype=torch.int32, device=device), vec.to(device),
                      dim] + outs,
                spec={'myRow': parir.threads(dim), 'threadId': parir.threads(WARP_SIZE).reduce(),
                      't': parir.threads(dim)},
                check=[(o, torch.from_numpy(ref)) for o in outs])


# ----- SHOC MD: compute_lj_force, a thread an atom, its neighbours from the column-major
# neighList (neighList[j * inum + idx]), the Lennard-Jones force inside cutsq -----------------

cutsq = 16.0                 # Square of the cutoff distance
domainEdge = 20.0            # Edge length of the cubic domain
lj1 = 1.5                    # LJ constants
lj2 = 2.0
maxNeighbors = 16            # 128 in SHOC


@parir.jit
def compute_lj_force(force3, position, neighCount, neighList, cutsq, lj1, lj2, inum):
    parir.label('idx')
    for idx in range(inum):
        ipos_x = position[idx, 0]
        ipos_y = position[idx, 1]
        ipos_z = position[idx, 2]
        f_x = 0.0
        f_y = 0.0
        f_z = 0.0
        j = 0
        while j < neighCount:
            jidx = neighList[j * inum + idx]
            # Uncoalesced read
            delx = ipos_x - position[jidx, 0]
            dely = ipos_y - position[jidx, 1]
            delz = ipos_z - position[jidx, 2]
            r2inv = delx * delx + dely * dely + delz * delz
            # If distance is less than cutoff, calculate force
            if r2inv < cutsq:
                r2inv = 1.0 / r2inv
                r6inv = r2inv * r2inv * r2inv
                forceC = r2inv * r6inv * (lj1 * r6inv - lj2)
                f_x += delx * forceC
                f_y += dely * forceC
                f_z += delz * forceC
            j += 1
        force3[idx, 0] = f_x
        force3[idx, 1] = f_y
        force3[idx, 2] = f_z


def case_shoc_md(rng, device):
    nAtoms = 257
    g = _np_rng(rng)
    # atoms jittered about a lattice, so that no two come very close (drand48 in a cube)
    side = 7
    lattice = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = (lattice[g.permutation(len(lattice))[:nAtoms]] + 0.5
           + g.uniform(-0.25, 0.25, (nAtoms, 3))) * (domainEdge / side)
    position = np.concatenate([pos, np.zeros((nAtoms, 1))], 1).astype(np.float32)
    p = position[:, :3].astype(np.float64)
    d2 = ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    nbr = np.argsort(d2, 1, kind="stable")[:, :maxNeighbors]           # buildNeighborList
    dl = p[:, None, :] - p[nbr]
    r2 = (dl ** 2).sum(-1)
    r2inv = 1.0 / r2
    r6inv = r2inv ** 3
    forceC = np.where(r2 < cutsq, r2inv * r6inv * (lj1 * r6inv - lj2), 0.0)
    ref = (dl * forceC[..., None]).sum(1)
    assert (r2 < cutsq).any() and (r2 >= cutsq).any()
    neighList = torch.tensor(nbr.T.ravel(), dtype=torch.int32, device=device)
    force3 = poison((nAtoms, 3), device=device)
    return dict(fn=compute_lj_force,
                args=[force3, torch.from_numpy(position).to(device), maxNeighbors, neighList,
                      cutsq, lj1, lj2, nAtoms],
                spec={'idx': parir.threads(nAtoms)},
                check=[(force3, torch.from_numpy(ref))])


# ----- SHOC Stencil2D: the 9-point CPUStencil on a Matrix2D with a halo of one, wCenter,
# wCardinal, wDiagonal, std::swap of currData and newData, the copy back for an odd nIters ---

@parir.jit
def stencil2d(mtx, tmpMtx, wCenter, wCardinal, wDiagonal, nRows, nCols, nIters):
    currData, newData = mtx, tmpMtx
    for iter in range(nIters):
        parir.label('i')
        for i in range(1, nRows - 1):
            parir.label('j')
            for j in range(1, nCols - 1):
                oldCenterValue = currData[i, j]
                oldNSEWValues = (currData[i - 1, j] + currData[i + 1, j] + currData[i, j - 1]
                                 + currData[i, j + 1])
                oldDiagonalValues = (currData[i - 1, j - 1] + currData[i + 1, j - 1]
                                     + currData[i - 1, j + 1] + currData[i + 1, j + 1])
                newData[i, j] = (wCenter * oldCenterValue + wCardinal * oldNSEWValues
                                 + wDiagonal * oldDiagonalValues)
        currData, newData = newData, currData
    # if we ended with the current data in the temporary matrix, copy it back
    if nIters % 2 == 1:
        parir.label('i')
        for i in range(nRows):
            parir.label('j')
            for j in range(nCols):
                mtx[i, j] = currData[i, j]


def case_shoc_stencil2d(rng, device):
    nRows, nCols, nIters = 37, 45, 5
    wCenter, wCardinal, wDiagonal = 0.25, 0.15, 0.05
    mtx = nonzero((nRows, nCols), rng)
    a = f64(mtx)
    for _ in range(nIters):
        b = a.copy()
        b[1:-1, 1:-1] = (wCenter * a[1:-1, 1:-1]
                         + wCardinal * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
                         + wDiagonal * (a[:-2, :-2] + a[2:, :-2] + a[:-2, 2:] + a[2:, 2:]))
        a = b
    tmpMtx = mtx.clone()               # be sure to start with the halo values
    tmpMtx[1:-1, 1:-1] = float("nan")
    mtx, tmpMtx = mtx.to(device), tmpMtx.to(device)
    return dict(fn=stencil2d,
                args=[mtx, tmpMtx, wCenter, wCardinal, wDiagonal, nRows, nCols, nIters],
                spec={'i': parir.threads(nRows), 'j': parir.threads(nCols)},
                check=[(mtx, torch.from_numpy(a)), (tmpMtx, torch.from_numpy(a))])


# ----- Parboil histo: per iteration the 32-bit bins cleared, the main kernel's atomic
# increments, the final kernel's saturation to unsigned char at UINT8_MAX --------------------

UINT8_MAX = 255


@parir.jit
def histo(img, global_histo, final_histo, img_width, img_height, histo_width, histo_height,
          numIterations):
    for iter in range(numIterations):
        # cudaMemset(global_histo, 0, ...)
        parir.label('bin')
        for i in range(histo_width * histo_height):
            global_histo[i] = 0
        # histo_main_kernel
        parir.label('pixel')
        for i in range(img_width * img_height):
            value = img[i]
            parir.atomic_add(global_histo[value], 1)
        # histo_final_kernel
        parir.label('bin')
        for i in range(histo_width * histo_height):
            final_histo[i] = min(global_histo[i], UINT8_MAX)


def case_histo(rng, device):
    img_width, img_height, histo_width, histo_height, numIterations = 67, 41, 16, 13, 2
    nbins = histo_width * histo_height
    npix = img_width * img_height
    g = _np_rng(rng)
    # a skewed image: a few bins collect most pixels and saturate
    img = np.where(g.uniform(size=npix) < 0.6, g.integers(0, 5, npix) * 37,
                   g.integers(0, nbins, npix)).astype(np.int64)
    counts = np.bincount(img, minlength=nbins)
    assert counts.max() > UINT8_MAX
    global_histo = poison(nbins, dtype=torch.int64, device=device).to(torch.uint32)
    final_histo = poison(nbins, dtype=torch.uint8, device=device)
    return dict(fn=histo,
                args=[torch.from_numpy(img).to(torch.uint32).to(device), global_histo,
                      final_histo, img_width, img_height, histo_width, histo_height,
                      numIterations],
                spec={'bin': parir.threads(nbins), 'pixel': parir.threads(npix)},
                check=[(final_histo, torch.from_numpy(np.minimum(counts, UINT8_MAX))),
                       (global_histo, torch.from_numpy(counts))])



# ----- Parboil tpacf: doCompute's pairs, the dot product's bin found by binary search of the
# decreasing binb boundaries, the histograms updated atomically; DD once, RR and DR for each
# random set, as main's loop over the random files --------------------------------------------

D2R = math.pi / 180.0
bins_per_dec = 5
min_arcmin = 1.0
max_arcmin = 10000.0


def doCompute(data1, n1, data2, n2, doSelf, data_bins, nbins, binb):
    parir.label('i')
    for i in range(n1 - 1 if doSelf else n1):
        xi = data1[i, 0]
        yi = data1[i, 1]
        zi = data1[i, 2]
        for j in range(i + 1 if doSelf else 0, n2):
            dot = xi * data2[j, 0] + yi * data2[j, 1] + zi * data2[j, 2]
            # run binary search
            min = 0
            max = nbins
            while max > min + 1:
                k = (min + max) // 2
                if dot >= binb[k]:
                    max = k
                else:
                    min = k
            if dot >= binb[min]:
                parir.atomic_add(data_bins[min], 1)
            elif dot < binb[max]:
                parir.atomic_add(data_bins[max + 1], 1)
            else:
                parir.atomic_add(data_bins[max], 1)


@parir.jit
def tpacf(data, random, binb, DD, RRS, DRS, npd, npr, nbins, num_sets):
    parir.label('h')
    for b in range(nbins + 2):
        DD[b] = 0
        RRS[b] = 0
        DRS[b] = 0
    doCompute(data, npd, data, npd, 1, DD, nbins, binb)
    for rf in range(num_sets):
        doCompute(random[rf], npr, random[rf], npr, 1, RRS, nbins, binb)
        doCompute(data, npd, random[rf], npr, 0, DRS, nbins, binb)


def _tpacf_points(n, g):
    # ra and dec in degrees, then x, y, z as readdatafile converts them
    ra = g.uniform(0.0, 360.0, n)
    dec = np.degrees(np.arcsin(g.uniform(-1.0, 1.0, n)))
    cd = np.cos(dec * D2R)
    return np.stack([cd * np.cos(ra * D2R), cd * np.sin(ra * D2R), np.sin(dec * D2R)], 1)


def case_tpacf(rng, device):
    npd, npr, num_sets = 67, 53, 2
    g = _np_rng(rng)
    nbins = int(math.floor(bins_per_dec * (math.log10(max_arcmin) - math.log10(min_arcmin))))
    binb = np.cos(10.0 ** (math.log10(min_arcmin) + np.arange(nbins + 1) * 1.0 / bins_per_dec)
                  / 60.0 * D2R)
    data = _tpacf_points(npd, g)
    random = np.stack([_tpacf_points(npr, g) for _ in range(num_sets)])

    def hist(dots):
        # bin k + 1 holds binb[k] > dot >= binb[k + 1]; 0 above binb[0], nbins + 1 below
        h = np.zeros(nbins + 2, dtype=np.int64)
        np.add.at(h, np.searchsorted(-binb, -dots, side="right"), 1)
        return h

    iu = np.triu_indices(npd, 1)
    ref_DD = hist((data @ data.T)[iu])
    ir = np.triu_indices(npr, 1)
    ref_RRS = sum(hist((r @ r.T)[ir]) for r in random)
    ref_DRS = sum(hist((data @ r.T).ravel()) for r in random)
    assert (ref_DD[1:-1] > 0).sum() > 5
    DD, RRS, DRS = (poison(nbins + 2, dtype=torch.int64, device=device) for _ in range(3))
    return dict(fn=tpacf,
                args=[torch.from_numpy(data).to(device), torch.from_numpy(random).to(device),
                      torch.from_numpy(binb).to(device), DD, RRS, DRS, npd, npr, nbins,
                      num_sets],
                spec={'h': parir.threads(nbins + 2), 'i': parir.threads(128)},
                check=[(DD, torch.from_numpy(ref_DD)), (RRS, torch.from_numpy(ref_RRS)),
                       (DRS, torch.from_numpy(ref_DRS))])


# ----- Parboil cutcp: cuda_cutoff_potential_lattice, a thread a lattice point, the atoms of
# the bins its neighbour list reaches (BIN_DEPTH slots a bin, q = 0 past the last atom), the
# potential smoothed to zero at the cutoff; the bins padded by c empty layers (binZeroAddr) ----

BIN_DEPTH = 8
BIN_LENGTH = 4.0
BIN_INVLEN = 1.0 / BIN_LENGTH


def cuda_cutoff_potential_lattice(binDim_x, binDim_y, binZeroAddr, h, cutoff2, inv_cutoff2,
                                  regionZeroAddr, binBaseAddr, NbrList, NbrListLen, nx, ny, nz):
    parir.label('zRegionIndex')
    for kk in range(nz):
        parir.label('yRegionIndex')
        for jj in range(ny):
            parir.label('xRegionIndex')
            for ii in range(nx):
                # this thread's lattice point and its bin
                x = ii * h
                y = jj * h
                z = kk * h
                myBinIndex_x = int(x * BIN_INVLEN)
                myBinIndex_y = int(y * BIN_INVLEN)
                myBinIndex_z = int(z * BIN_INVLEN)
                energy = 0.0
                for nbrid in range(NbrListLen):
                    i = myBinIndex_x + NbrList[nbrid, 0]
                    j = myBinIndex_y + NbrList[nbrid, 1]
                    k = myBinIndex_z + NbrList[nbrid, 2]
                    binIndex = (k * binDim_y + j) * binDim_x + i
                    # no more atoms in bin once aq is 0 (the CUDA loop's break)
                    m = 0
                    while m < BIN_DEPTH and binBaseAddr[binZeroAddr + binIndex * BIN_DEPTH + m,
                                                        3] != 0.0:
                        aq = binBaseAddr[binZeroAddr + binIndex * BIN_DEPTH + m, 3]
                        dx = binBaseAddr[binZeroAddr + binIndex * BIN_DEPTH + m, 0] - x
                        dy = binBaseAddr[binZeroAddr + binIndex * BIN_DEPTH + m, 1] - y
                        dz = binBaseAddr[binZeroAddr + binIndex * BIN_DEPTH + m, 2] - z
                        r2 = dx * dx + dy * dy + dz * dz
                        if r2 < cutoff2:
                            s = (1.0 - r2 * inv_cutoff2)
                            energy += aq * parir.rsqrt(r2) * s * s
                        m += 1
                regionZeroAddr[(kk * ny + jj) * nx + ii] += energy


@parir.jit
def cutcp(binBaseAddr, NbrList, lattice, binDim_x, binDim_y, binZeroAddr, h, cutoff,
          NbrListLen, nx, ny, nz):
    cutoff2 = cutoff * cutoff
    inv_cutoff2 = 1.0 / cutoff2
    # cudaMemset(regionZeroCuda, 0, lnall * sizeof(float))
    parir.label('n')
    for n in range(nx * ny * nz):
        lattice[n] = 0.0
    cuda_cutoff_potential_lattice(binDim_x, binDim_y, binZeroAddr, h, cutoff2, inv_cutoff2,
                                  lattice, binBaseAddr, NbrList, NbrListLen, nx, ny, nz)


def case_cutcp(rng, device):
    nx, ny, nz, h, cutoff = 7, 6, 5, 1.0, 4.0
    g = _np_rng(rng)
    c = int(math.ceil(cutoff * BIN_INVLEN))           # bins in the cutoff
    inner = [int(math.ceil((n - 1) * h * BIN_INVLEN)) + 1 for n in (nx, ny, nz)]
    binDim_x, binDim_y, binDim_z = (b + 2 * c for b in inner)
    # the neighbour list: bin offsets whose bins come within the cutoff of the bin's points
    NbrList = [(i, j, k) for k in range(-c, c + 1) for j in range(-c, c + 1)
               for i in range(-c, c + 1)
               if ((max(abs(i) - 1, 0) ** 2 + max(abs(j) - 1, 0) ** 2 + max(abs(k) - 1, 0) ** 2)
                   * BIN_LENGTH ** 2 < cutoff ** 2)]
    natoms = 24
    atoms = np.concatenate([g.uniform(-1.0, [(nx - 1) * h + 1, (ny - 1) * h + 1,
                                             (nz - 1) * h + 1], (natoms, 3)),
                            g.uniform(0.2, 1.0, (natoms, 1)) * g.choice([-1, 1], (natoms, 1))],
                           1).astype(np.float32)
    atoms = atoms[(atoms[:, :3] >= 0).all(1)]
    bins = np.zeros((binDim_x * binDim_y * binDim_z * BIN_DEPTH, 4), dtype=np.float32)
    fill = {}
    kept = []
    for a in atoms:
        bi, bj, bk = (int(v * BIN_INVLEN) + c for v in a[:3])
        b = (bk * binDim_y + bj) * binDim_x + bi
        if fill.get(b, 0) == BIN_DEPTH:
            continue                                   # an extra atom: Parboil's CPU does these
        bins[b * BIN_DEPTH + fill.get(b, 0)] = a
        fill[b] = fill.get(b, 0) + 1
        kept.append(a)
    kept = np.array(kept, dtype=np.float64)
    pts = np.stack(np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij"),
                   -1).reshape(-1, 3)[:, ::-1] * h
    r2 = ((pts[:, None, :] - kept[None, :, :3]) ** 2).sum(-1)
    s = np.where(r2 < cutoff ** 2, 1.0 - r2 / cutoff ** 2, 0.0)
    ref = (kept[None, :, 3] / np.sqrt(r2) * s * s).sum(1)
    binZeroAddr = ((c * binDim_y + c) * binDim_x + c) * BIN_DEPTH
    lattice = poison(nx * ny * nz, device=device)
    return dict(fn=cutcp,
                args=[torch.from_numpy(bins).to(device),
                      torch.tensor(NbrList, dtype=torch.int32, device=device), lattice,
                      binDim_x, binDim_y, binZeroAddr, h, cutoff, len(NbrList), nx, ny, nz],
                spec={'n': parir.threads(nx * ny * nz), 'zRegionIndex': parir.threads(nz),
                      'yRegionIndex': parir.threads(ny), 'xRegionIndex': parir.threads(nx)},
                check=[(lattice, torch.from_numpy(ref))])


# ----- Parboil sad: mb_sad_calc (a macroblock a block, a thread a search position, the 4x4
# SADs with the reference read clamped to the frame, as the texture clamps), then
# larger_sad_calc_8 and larger_sad_calc_16, in the SAD_TYPE_*_IX layout ---------------------

SEARCH_RANGE = 2                               # 16 in Parboil
SEARCH_DIMENSION = 2 * SEARCH_RANGE + 1
MAX_POS = SEARCH_DIMENSION * SEARCH_DIMENSION
MAX_POS_PADDED = 32                            # MAX_POS rounded up to a multiple of 8 ... 16
SAD_TYPE_1_CT = 16                             # 4x4
SAD_TYPE_2_CT = 8                              # 4x8
SAD_TYPE_3_CT = 8                              # 8x4
SAD_TYPE_4_CT = 4                              # 8x8
SAD_TYPE_5_CT = 2                              # 8x16
SAD_TYPE_6_CT = 2                              # 16x8
SAD_TYPE_7_CT = 1                              # 16x16


def SAD_TYPE_1_IX(image_size):
    return 0


def SAD_TYPE_2_IX(image_size):
    return image_size * SAD_TYPE_1_CT * MAX_POS_PADDED


def SAD_TYPE_3_IX(image_size):
    return image_size * (SAD_TYPE_1_CT + SAD_TYPE_2_CT) * MAX_POS_PADDED


def SAD_TYPE_4_IX(image_size):
    return image_size * (SAD_TYPE_1_CT + SAD_TYPE_2_CT + SAD_TYPE_3_CT) * MAX_POS_PADDED


def SAD_TYPE_5_IX(image_size):
    return image_size * (SAD_TYPE_1_CT + SAD_TYPE_2_CT + SAD_TYPE_3_CT
                         + SAD_TYPE_4_CT) * MAX_POS_PADDED


def SAD_TYPE_6_IX(image_size):
    return image_size * (SAD_TYPE_1_CT + SAD_TYPE_2_CT + SAD_TYPE_3_CT + SAD_TYPE_4_CT
                         + SAD_TYPE_5_CT) * MAX_POS_PADDED


def SAD_TYPE_7_IX(image_size):
    return image_size * (SAD_TYPE_1_CT + SAD_TYPE_2_CT + SAD_TYPE_3_CT + SAD_TYPE_4_CT
                         + SAD_TYPE_5_CT + SAD_TYPE_6_CT) * MAX_POS_PADDED


def get_ref(ref, x, y, width, height):
    # tex2D with cudaAddressModeClamp
    return ref[min(max(y, 0), height - 1) * width + min(max(x, 0), width - 1)]


def mb_sad_calc(blk_sad, frame, ref, mb_width, mb_height):
    width = mb_width * 16
    height = mb_height * 16
    parir.label('mb')
    for mb in range(mb_width * mb_height):
        mb_x = mb % mb_width
        mb_y = mb // mb_width
        parir.label('pos')
        for pos in range(MAX_POS):
            search_x = (pos % SEARCH_DIMENSION) - SEARCH_RANGE
            search_y = (pos // SEARCH_DIMENSION) - SEARCH_RANGE
            for blk in range(16):
                blkx = blk % 4
                blky = blk // 4
                sad = 0
                for y in range(4):
                    for x in range(4):
                        cx = mb_x * 16 + blkx * 4 + x
                        cy = mb_y * 16 + blky * 4 + y
                        sad += abs(parir.int32(frame[cy * width + cx])
                                   - parir.int32(get_ref(ref, cx + search_x, cy + search_y,
                                                         width, height)))
                blk_sad[SAD_TYPE_1_IX(mb_width * mb_height)
                        + (mb * SAD_TYPE_1_CT + blk) * MAX_POS_PADDED + pos] = sad


def larger_sad_calc_8(blk_sad, mb_width, mb_height):
    image_size = mb_width * mb_height
    parir.label('mb')
    for mb in range(image_size):
        parir.label('pos')
        for pos in range(MAX_POS):
            for quad in range(4):
                # the four 4x4 blocks of this 8x8 block
                b00 = (quad // 2) * 8 + (quad % 2) * 2
                s00 = blk_sad[(mb * SAD_TYPE_1_CT + b00) * MAX_POS_PADDED + pos]
                s01 = blk_sad[(mb * SAD_TYPE_1_CT + b00 + 1) * MAX_POS_PADDED + pos]
                s10 = blk_sad[(mb * SAD_TYPE_1_CT + b00 + 4) * MAX_POS_PADDED + pos]
                s11 = blk_sad[(mb * SAD_TYPE_1_CT + b00 + 5) * MAX_POS_PADDED + pos]
                # 4x8: left and right columns
                blk_sad[SAD_TYPE_2_IX(image_size)
                        + (mb * SAD_TYPE_2_CT + quad * 2) * MAX_POS_PADDED + pos] = s00 + s10
                blk_sad[SAD_TYPE_2_IX(image_size)
                        + (mb * SAD_TYPE_2_CT + quad * 2 + 1) * MAX_POS_PADDED + pos] = s01 + s11
                # 8x4: top and bottom rows
                blk_sad[SAD_TYPE_3_IX(image_size)
                        + (mb * SAD_TYPE_3_CT + quad * 2) * MAX_POS_PADDED + pos] = s00 + s01
                blk_sad[SAD_TYPE_3_IX(image_size)
                        + (mb * SAD_TYPE_3_CT + quad * 2 + 1) * MAX_POS_PADDED + pos] = s10 + s11
                # 8x8
                blk_sad[SAD_TYPE_4_IX(image_size)
                        + (mb * SAD_TYPE_4_CT + quad) * MAX_POS_PADDED + pos] = (s00 + s01 + s10
                                                                                + s11)


def larger_sad_calc_16(blk_sad, mb_width, mb_height):
    image_size = mb_width * mb_height
    parir.label('mb')
    for mb in range(image_size):
        parir.label('pos')
        for pos in range(MAX_POS):
            q0 = blk_sad[SAD_TYPE_4_IX(image_size) + (mb * SAD_TYPE_4_CT) * MAX_POS_PADDED + pos]
            q1 = blk_sad[SAD_TYPE_4_IX(image_size)
                         + (mb * SAD_TYPE_4_CT + 1) * MAX_POS_PADDED + pos]
            q2 = blk_sad[SAD_TYPE_4_IX(image_size)
                         + (mb * SAD_TYPE_4_CT + 2) * MAX_POS_PADDED + pos]
            q3 = blk_sad[SAD_TYPE_4_IX(image_size)
                         + (mb * SAD_TYPE_4_CT + 3) * MAX_POS_PADDED + pos]
            # 8x16
            blk_sad[SAD_TYPE_5_IX(image_size) + (mb * SAD_TYPE_5_CT) * MAX_POS_PADDED + pos] = \
                q0 + q2
            blk_sad[SAD_TYPE_5_IX(image_size)
                    + (mb * SAD_TYPE_5_CT + 1) * MAX_POS_PADDED + pos] = q1 + q3
            # 16x8
            blk_sad[SAD_TYPE_6_IX(image_size) + (mb * SAD_TYPE_6_CT) * MAX_POS_PADDED + pos] = \
                q0 + q1
            blk_sad[SAD_TYPE_6_IX(image_size)
                    + (mb * SAD_TYPE_6_CT + 1) * MAX_POS_PADDED + pos] = q2 + q3
            # 16x16
            blk_sad[SAD_TYPE_7_IX(image_size) + mb * MAX_POS_PADDED + pos] = q0 + q1 + q2 + q3


@parir.jit
def sad_calc(blk_sad, frame, ref, mb_width, mb_height):
    mb_sad_calc(blk_sad, frame, ref, mb_width, mb_height)
    larger_sad_calc_8(blk_sad, mb_width, mb_height)
    larger_sad_calc_16(blk_sad, mb_width, mb_height)


def case_sad(rng, device):
    mb_width, mb_height = 3, 1
    width, height = mb_width * 16, mb_height * 16
    image_size = mb_width * mb_height
    frame = randint(width * height, rng, 1, 256, dtype=torch.int64)
    ref = randint(width * height, rng, 1, 256, dtype=torch.int64)
    cur, rf = frame.numpy().reshape(height, width), ref.numpy().reshape(height, width)
    padded = np.pad(rf, SEARCH_RANGE, mode="edge")
    total = image_size * 41 * MAX_POS_PADDED
    out = np.full(total, -1, dtype=np.int64)
    sads = np.zeros((image_size, 4, 4, MAX_POS), dtype=np.int64)     # [mb, blky, blkx, pos]
    for mb in range(image_size):
        mx, my = mb % mb_width, mb // mb_width
        block = cur[my * 16:my * 16 + 16, mx * 16:mx * 16 + 16]
        for pos in range(MAX_POS):
            sx, sy = pos % SEARCH_DIMENSION, pos // SEARCH_DIMENSION
            window = padded[my * 16 + sy:my * 16 + sy + 16, mx * 16 + sx:mx * 16 + sx + 16]
            d = np.abs(block - window).reshape(4, 4, 4, 4).sum((1, 3))
            sads[mb, :, :, pos] = d
    base = [0]
    for ct in (16, 8, 8, 4, 2, 2, 1):
        base.append(base[-1] + image_size * ct * MAX_POS_PADDED)

    def put(t, mb, b, ct, v):
        out[base[t] + (mb * ct + b) * MAX_POS_PADDED + np.arange(MAX_POS)] = v

    for mb in range(image_size):
        s = sads[mb]
        for b in range(16):
            put(0, mb, b, 16, s[b // 4, b % 4])
        for q in range(4):
            qy, qx = q // 2, q % 2
            s00, s01 = s[2 * qy, 2 * qx], s[2 * qy, 2 * qx + 1]
            s10, s11 = s[2 * qy + 1, 2 * qx], s[2 * qy + 1, 2 * qx + 1]
            put(1, mb, 2 * q, 8, s00 + s10)
            put(1, mb, 2 * q + 1, 8, s01 + s11)
            put(2, mb, 2 * q, 8, s00 + s01)
            put(2, mb, 2 * q + 1, 8, s10 + s11)
            put(3, mb, q, 4, s00 + s01 + s10 + s11)
        q = [s[2 * (k // 2):2 * (k // 2) + 2, 2 * (k % 2):2 * (k % 2) + 2].sum((0, 1))
             for k in range(4)]
        put(4, mb, 0, 2, q[0] + q[2])
        put(4, mb, 1, 2, q[1] + q[3])
        put(5, mb, 0, 2, q[0] + q[1])
        put(5, mb, 1, 2, q[2] + q[3])
        put(6, mb, 0, 1, q[0] + q[1] + q[2] + q[3])
    written = out >= 0
    # the padding past MAX_POS stays as it was; no SAD of a 16x16 block reaches 65535
    blk_sad = torch.full((total,), 65535, dtype=torch.uint16, device=device)
    ref_out = np.where(written, out, 65535)
    return dict(fn=sad_calc,
                args=[blk_sad, frame.to(torch.uint16).to(device),
                      ref.to(torch.uint16).to(device), mb_width, mb_height],
                spec={'mb': parir.threads(image_size), 'pos': parir.threads(MAX_POS)},
                check=[(blk_sad, torch.from_numpy(ref_out))])


# ----- Parboil lbm: performStreamCollide's push scheme (each cell's collided distributions
# written into its neighbours' cells), OBSTACLE cells bouncing back, ACCEL cells at a fixed
# velocity, on a periodic D2Q9 lattice in the CUDA version's layout (a plane a direction);
# the host's time loop swapping srcGrid and dstGrid -----------------------------------------

OMEGA = 1.95
DFL1 = 4.0 / 9.0
DFL2 = 1.0 / 9.0
DFL3 = 1.0 / 36.0
SIZE_X = 23
SIZE_Y = 17
TOTAL_CELLS = SIZE_X * SIZE_Y
C, N, S, E, W, NE, NW, SE, SW = range(9)
N_CELL_ENTRIES = 9
OBSTACLE = 1 << 0
ACCEL = 1 << 1


def CALC_INDEX(x, y, e):
    return e * TOTAL_CELLS + (x + y * SIZE_X)


def performStreamCollide(srcGrid, dstGrid, flags):
    parir.label('y')
    for y in range(SIZE_Y):
        parir.label('x')
        for x in range(SIZE_X):
            xp = (x + 1) % SIZE_X
            xm = (x - 1) % SIZE_X
            yp = (y + 1) % SIZE_Y
            ym = (y - 1) % SIZE_Y
            SRC_C = srcGrid[CALC_INDEX(x, y, C)]
            SRC_N = srcGrid[CALC_INDEX(x, y, N)]
            SRC_S = srcGrid[CALC_INDEX(x, y, S)]
            SRC_E = srcGrid[CALC_INDEX(x, y, E)]
            SRC_W = srcGrid[CALC_INDEX(x, y, W)]
            SRC_NE = srcGrid[CALC_INDEX(x, y, NE)]
            SRC_NW = srcGrid[CALC_INDEX(x, y, NW)]
            SRC_SE = srcGrid[CALC_INDEX(x, y, SE)]
            SRC_SW = srcGrid[CALC_INDEX(x, y, SW)]
            if flags[x + y * SIZE_X] & OBSTACLE:
                dstGrid[CALC_INDEX(x, y, C)] = SRC_C
                dstGrid[CALC_INDEX(x, ym, S)] = SRC_N
                dstGrid[CALC_INDEX(x, yp, N)] = SRC_S
                dstGrid[CALC_INDEX(xm, y, W)] = SRC_E
                dstGrid[CALC_INDEX(xp, y, E)] = SRC_W
                dstGrid[CALC_INDEX(xm, ym, SW)] = SRC_NE
                dstGrid[CALC_INDEX(xp, ym, SE)] = SRC_NW
                dstGrid[CALC_INDEX(xm, yp, NW)] = SRC_SE
                dstGrid[CALC_INDEX(xp, yp, NE)] = SRC_SW
            else:
                rho = (SRC_C + SRC_N + SRC_S + SRC_E + SRC_W + SRC_NE + SRC_NW + SRC_SE
                       + SRC_SW)
                ux = SRC_E - SRC_W + SRC_NE - SRC_NW + SRC_SE - SRC_SW
                uy = SRC_N - SRC_S + SRC_NE + SRC_NW - SRC_SE - SRC_SW
                ux /= rho
                uy /= rho
                if flags[x + y * SIZE_X] & ACCEL:
                    ux = 0.005
                    uy = 0.002
                u2 = 1.5 * (ux * ux + uy * uy)
                dstGrid[CALC_INDEX(x, y, C)] = ((1.0 - OMEGA) * SRC_C
                                                + DFL1 * OMEGA * rho * (1.0 - u2))
                dstGrid[CALC_INDEX(x, yp, N)] = ((1.0 - OMEGA) * SRC_N + DFL2 * OMEGA * rho
                                                 * (1.0 + uy * (4.5 * uy + 3.0) - u2))
                dstGrid[CALC_INDEX(x, ym, S)] = ((1.0 - OMEGA) * SRC_S + DFL2 * OMEGA * rho
                                                 * (1.0 + uy * (4.5 * uy - 3.0) - u2))
                dstGrid[CALC_INDEX(xp, y, E)] = ((1.0 - OMEGA) * SRC_E + DFL2 * OMEGA * rho
                                                 * (1.0 + ux * (4.5 * ux + 3.0) - u2))
                dstGrid[CALC_INDEX(xm, y, W)] = ((1.0 - OMEGA) * SRC_W + DFL2 * OMEGA * rho
                                                 * (1.0 + ux * (4.5 * ux - 3.0) - u2))
                dstGrid[CALC_INDEX(xp, yp, NE)] = ((1.0 - OMEGA) * SRC_NE + DFL3 * OMEGA * rho
                                                   * (1.0 + (+ux + uy) * (4.5 * (+ux + uy) + 3.0)
                                                      - u2))
                dstGrid[CALC_INDEX(xm, yp, NW)] = ((1.0 - OMEGA) * SRC_NW + DFL3 * OMEGA * rho
                                                   * (1.0 + (-ux + uy) * (4.5 * (-ux + uy) + 3.0)
                                                      - u2))
                dstGrid[CALC_INDEX(xp, ym, SE)] = ((1.0 - OMEGA) * SRC_SE + DFL3 * OMEGA * rho
                                                   * (1.0 + (+ux - uy) * (4.5 * (+ux - uy) + 3.0)
                                                      - u2))
                dstGrid[CALC_INDEX(xm, ym, SW)] = ((1.0 - OMEGA) * SRC_SW + DFL3 * OMEGA * rho
                                                   * (1.0 + (-ux - uy) * (4.5 * (-ux - uy) + 3.0)
                                                      - u2))


@parir.jit
def lbm(srcGrid, dstGrid, flags, nTimeSteps):
    for t in range(nTimeSteps):
        performStreamCollide(srcGrid, dstGrid, flags)
        srcGrid, dstGrid = dstGrid, srcGrid        # LBM_swapGrids


_LBM_DIRS = [(0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1)]
_LBM_OPP = [0, 2, 1, 4, 3, 8, 7, 6, 5]
_LBM_W = [4 / 9] + [1 / 9] * 4 + [1 / 36] * 4


def _lbm_step(f, flag):
    """f[e, y, x]: collide (or bounce back), then push to the neighbour cells, periodic."""
    rho = f.sum(0)
    ux = sum(f[e] * _LBM_DIRS[e][0] for e in range(9)) / rho
    uy = sum(f[e] * _LBM_DIRS[e][1] for e in range(9)) / rho
    acc = (flag & ACCEL) != 0
    ux, uy = np.where(acc, 0.005, ux), np.where(acc, 0.002, uy)
    u2 = 1.5 * (ux * ux + uy * uy)
    obst = (flag & OBSTACLE) != 0
    out = np.empty_like(f)
    for e, (dx, dy) in enumerate(_LBM_DIRS):
        cu = dx * ux + dy * uy
        post = (1.0 - OMEGA) * f[e] + _LBM_W[e] * OMEGA * rho * (1.0 + cu * (4.5 * cu + 3.0)
                                                                   - u2)
        post = np.where(obst, f[_LBM_OPP[e]], post)   # an obstacle sends back what came in
        out[e] = np.roll(post, (dy, dx), axis=(0, 1))
    return out


def case_lbm(rng, device):
    nTimeSteps = 4
    g = _np_rng(rng)
    flags = np.zeros((SIZE_Y, SIZE_X), dtype=np.int32)
    flags[6:9, 8:11] = OBSTACLE                       # a block in the channel
    flags[0, :] |= OBSTACLE
    flags[SIZE_Y - 1, :] |= OBSTACLE
    flags[2:SIZE_Y - 2, 1] = ACCEL                    # the inflow column
    w = np.array(_LBM_W)[:, None, None]
    f0 = w * (1.0 + 0.05 * g.uniform(-1.0, 1.0, (9, SIZE_Y, SIZE_X)))
    f0 = f0.astype(np.float32)
    states = [f0.astype(np.float64)]
    for _ in range(nTimeSteps):
        states.append(_lbm_step(states[-1], flags))
    srcGrid = torch.from_numpy(f0.ravel()).to(device)
    dstGrid = poison(N_CELL_ENTRIES * TOTAL_CELLS, device=device)
    return dict(fn=lbm, args=[srcGrid, dstGrid, torch.from_numpy(flags.ravel()).to(device),
                              nTimeSteps],
                spec={'y': parir.threads(SIZE_Y), 'x': parir.threads(SIZE_X)},
                tol=(1e-4, 1e-5),
                check=[(srcGrid, torch.from_numpy(states[4].ravel())),
                       (dstGrid, torch.from_numpy(states[3].ravel()))])


# ----- SHOC Reduction: reduce<T, blockSize>, each thread summing two elements a step
# (g_idata[i] and g_idata[i + blockSize]) over the grid, the block's sum into g_odata; the
# partial sums finished by the host's loop ---------------------------------------------------

blockSize = 256


def reduce(g_idata, g_odata, n, gridDim):
    parir.label('blockIdx')
    for blockIdx in range(gridDim):
        sdata = 0.0
        parir.label('tid')
        for tid in range(blockSize):
            i = (blockIdx * (blockSize * 2)) + tid
            gridSize = blockSize * 2 * gridDim
            while i < n:
                sdata += g_idata[i] + g_idata[i + blockSize]
                i += gridSize
        g_odata[blockIdx] = sdata


@parir.jit
def shoc_reduction(d_idata, d_odata, result, size, num_blocks):
    reduce(d_idata, d_odata, size, num_blocks)
    # cudaMemcpy(h_odata, d_odata, ...); the partial sums added on the host
    with parir.gpu:
        result[0] = 0.0
        for i in range(num_blocks):
            result[0] += d_odata[i]


def case_shoc_reduction(rng, device):
    num_blocks = 37
    size = 2 * blockSize * 45
    d_idata = nonzero(size, rng)
    x = f64(d_idata)
    gridSize = 2 * blockSize * num_blocks
    starts = np.arange(0, size, 2 * blockSize)
    chunk = x.reshape(-1, 2 * blockSize).sum(1)
    partial = np.array([chunk[(starts // (2 * blockSize)) % num_blocks == b].sum()
                        for b in range(num_blocks)])
    assert gridSize < size < 2 * gridSize
    d_odata = poison(num_blocks, device=device)
    result = poison(1, device=device)
    return dict(fn=shoc_reduction, args=[d_idata.to(device), d_odata, result, size, num_blocks],
                spec={'blockIdx': parir.threads(num_blocks),
                      'tid': parir.threads(blockSize).reduce()},
                check=[(d_odata, torch.from_numpy(partial)),
                       (result, torch.from_numpy(np.array([x.sum()])))])


# ----- SHOC Scan: reduce (each block's region summed into isums, the last block taking the
# extra elements), top_scan (an exclusive scan of the block sums in one block), bottom_scan
# (each block's inclusive scan of its region seeded with its block's sum) --------------------

def scan_reduce(in_, isums, n, num_blocks, num_threads):
    parir.label('block')
    for blockIdx in range(num_blocks):
        # Calculate which range of data this thread block is responsible for
        region_size = ((n // 4) // num_blocks) * 4
        block_start = blockIdx * region_size
        # Give the last block any extra elements
        block_stop = n if blockIdx == num_blocks - 1 else block_start + region_size
        sum = 0.0
        parir.label('thread')
        for tid in range(num_threads):
            i = block_start + tid
            # Reduce multiple elements per thread
            while i < block_stop:
                sum += in_[i]
                i += num_threads
        isums[blockIdx] = sum


def top_scan(isums, num_blocks):
    val = 0.0
    parir.label('top')
    for i in range(num_blocks):
        v = isums[i]
        isums[i] = val
        val += v


def bottom_scan(in_, out, isums, n, num_blocks):
    parir.label('block')
    for blockIdx in range(num_blocks):
        region_size = ((n // 4) // num_blocks) * 4
        block_start = blockIdx * region_size
        block_stop = n if blockIdx == num_blocks - 1 else block_start + region_size
        seed = isums[blockIdx]
        parir.label('scan')
        for i in range(block_start, block_stop):
            seed += in_[i]
            out[i] = seed


@parir.jit
def shoc_scan(d_idata, d_odata, d_block_sums, size, num_blocks, num_threads):
    scan_reduce(d_idata, d_block_sums, size, num_blocks, num_threads)
    top_scan(d_block_sums, num_blocks)
    bottom_scan(d_idata, d_odata, d_block_sums, size, num_blocks)


def case_shoc_scan(rng, device):
    size, num_blocks, num_threads = 3001, 7, 256
    d_idata = nonzero(size, rng)
    x = f64(d_idata)
    region = ((size // 4) // num_blocks) * 4
    bounds = [b * region for b in range(num_blocks)] + [size]
    sums = np.array([x[bounds[b]:bounds[b + 1]].sum() for b in range(num_blocks)])
    d_odata = poison(size, device=device)
    d_block_sums = poison(num_blocks, device=device)
    return dict(fn=shoc_scan, args=[d_idata.to(device), d_odata, d_block_sums, size,
                                    num_blocks, num_threads],
                spec={'block': parir.threads(num_blocks),
                      'thread': parir.threads(num_threads).reduce(),
                      'top': parir.threads(32).scan(), 'scan': parir.threads(num_threads).scan()},
                check=[(d_odata, torch.from_numpy(np.cumsum(x))),
                       (d_block_sums, torch.from_numpy(np.cumsum(sums) - sums))])


# ----- SHOC Sort: radixSortStep for each 4-bit digit of the 32-bit keys: radixSortBlocks (a
# block's keys split by each bit in turn, the ranks of the zeros by a scan), findRadixOffsets
# (where each digit starts in a sorted block, and how many there are), the scan of the counters
# (digit-major, scanArrayRecursive), reorderData (each pair to its digit's global offset) ----

SORT_BITS = 32
SORT_BLOCK_SIZE = 64           # 4 * CTA_SIZE = 1024 in SHOC


def radixSortBlocks(nbits, startbit, keysOut, valuesOut, keysIn, valuesIn, sKeys, sValues,
                    sRank, numElements, totalBlocks):
    parir.label('block')
    for blockId in range(totalBlocks):
        base = blockId * SORT_BLOCK_SIZE
        blockLen = min(SORT_BLOCK_SIZE, numElements - base)
        parir.label('thread')
        for t in range(blockLen):
            keysOut[base + t] = keysIn[base + t]
            valuesOut[base + t] = valuesIn[base + t]
        # radixSortBlockKeysValues: one split per bit
        for shift in range(startbit, startbit + nbits):
            numtrue = 0
            parir.label('thread')
            for t in range(blockLen):
                sRank[base + t] = numtrue
                numtrue += 1 - ((keysOut[base + t] >> shift) & 1)
            parir.label('thread')
            for t in range(blockLen):
                key = keysOut[base + t]
                if (key >> shift) & 1:
                    r = numtrue + t - sRank[base + t]
                else:
                    r = sRank[base + t]
                sKeys[base + r] = key
                sValues[base + r] = valuesOut[base + t]
            parir.label('thread')
            for t in range(blockLen):
                keysOut[base + t] = sKeys[base + t]
                valuesOut[base + t] = sValues[base + t]


def findRadixOffsets(keys, counters, blockOffsets, startbit, numElements, totalBlocks):
    parir.label('block')
    for blockId in range(totalBlocks):
        base = blockId * SORT_BLOCK_SIZE
        blockLen = min(SORT_BLOCK_SIZE, numElements - base)
        parir.label('radix')
        for r in range(16):
            blockOffsets[blockId * 16 + r] = 0
            counters[r * totalBlocks + blockId] = 0
        parir.label('thread')
        for localId in range(1, blockLen):
            if (keys[base + localId] >> startbit) & 0xF != (keys[base + localId - 1]
                                                              >> startbit) & 0xF:
                blockOffsets[blockId * 16 + ((keys[base + localId] >> startbit) & 0xF)] = localId
        # Compute the sizes of each block.
        parir.label('thread')
        for localId in range(1, blockLen):
            radix1 = (keys[base + localId - 1] >> startbit) & 0xF
            if (keys[base + localId] >> startbit) & 0xF != radix1:
                counters[radix1 * totalBlocks + blockId] = (localId
                                                            - blockOffsets[blockId * 16 + radix1])
        last = (keys[base + blockLen - 1] >> startbit) & 0xF
        counters[last * totalBlocks + blockId] = blockLen - blockOffsets[blockId * 16 + last]


def reorderData(startbit, outKeys, outValues, keys, values, blockOffsets, offsets, numElements,
                totalBlocks):
    parir.label('block')
    for blockId in range(totalBlocks):
        parir.label('thread')
        for localId in range(SORT_BLOCK_SIZE):
            i = blockId * SORT_BLOCK_SIZE + localId
            if i < numElements:
                radix = (keys[i] >> startbit) & 0xF
                globalOffset = (offsets[radix * totalBlocks + blockId] + localId
                                - blockOffsets[blockId * 16 + radix])
                outKeys[globalOffset] = keys[i]
                outValues[globalOffset] = values[i]


@parir.jit
def shoc_sort(d_keys, d_vals, d_tempKeys, d_tempVals, sKeys, sValues, sRank, d_counters,
              d_countersSum, d_blockOffsets, numElements, numBlocks):
    nbits = 4
    for shift in range(0, SORT_BITS, nbits):
        # radixSortStep
        radixSortBlocks(nbits, shift, d_tempKeys, d_tempVals, d_keys, d_vals, sKeys, sValues,
                        sRank, numElements, numBlocks)
        findRadixOffsets(d_tempKeys, d_counters, d_blockOffsets, shift, numElements, numBlocks)
        parir.label('counters')
        d_countersSum[:] = parir.cumsum(d_counters[:], exclusive=True)
        reorderData(shift, d_keys, d_vals, d_tempKeys, d_tempVals, d_blockOffsets,
                    d_countersSum, numElements, numBlocks)


def case_shoc_sort(rng, device):
    numElements = 150
    numBlocks = (numElements + SORT_BLOCK_SIZE - 1) // SORT_BLOCK_SIZE
    keys = randint(numElements, rng, 1, 2**32)
    keys[:20] = keys[20:40]                           # equal keys: the sort must be stable
    keys[40:70] = keys[40:70] & 0xFFFF0F0F
    vals = torch.arange(numElements)
    order = np.argsort(keys.numpy(), kind="stable")
    u32 = lambda t: t.to(torch.uint32).to(device)     # noqa: E731
    d_keys, d_vals = u32(keys), u32(vals)
    scratch = [u32(poison(numElements, dtype=torch.int64)) for _ in range(4)]
    sRank = poison(numElements, dtype=torch.int32, device=device)
    d_counters = poison(16 * numBlocks, dtype=torch.int32, device=device)
    d_countersSum = poison(16 * numBlocks, dtype=torch.int32, device=device)
    d_blockOffsets = poison(16 * numBlocks, dtype=torch.int32, device=device)
    return dict(fn=shoc_sort,
                args=[d_keys, d_vals] + scratch + [sRank, d_counters, d_countersSum,
                                                  d_blockOffsets, numElements, numBlocks],
                spec={'block': parir.threads(numBlocks),
                      'thread': parir.threads(SORT_BLOCK_SIZE).scan(),
                      'radix': parir.threads(16), 'counters': parir.threads(1024).scan()},
                check=[(d_keys, torch.from_numpy(keys.numpy()[order])),
                       (d_vals, torch.from_numpy(order))])

CASES = {
    "pb_mri_q": case_mri_q,
    "pb_stencil": case_stencil,
    "pb_sgemm": case_sgemm,
    "pb_spmv_jds": case_spmv_jds,
    "pb_shoc_spmv": case_shoc_spmv,
    "pb_shoc_md": case_shoc_md,
    "pb_shoc_stencil2d": case_shoc_stencil2d,
    "pb_histo": case_histo,
    "pb_tpacf": case_tpacf,
    "pb_cutcp": case_cutcp,
    "pb_sad": case_sad,
    "pb_lbm": case_lbm,
    "pb_shoc_reduction": case_shoc_reduction,
    "pb_shoc_scan": case_shoc_scan,
    "pb_shoc_sort": case_shoc_sort,
}
