"""Kernels ported from Rodinia and the CUDA samples, with their authors' names, flattened index
arithmetic, constants and host loops: Rodinia's hotspot.cu (the chip's Cap/Rx/Ry/Rz computed
from hotspot.c's #defines, the two MatrixTemp buffers swapped after every step, the result
copied out of the last one), gaussian.cu (Fan1 and Fan2 launched for each t, then BackSub),
lavaMD's kernel_gpu_cuda (boxes of particles and their neighbour boxes, FOUR_VECTOR records),
particlefilter's likelihood (roundDouble, the disk's objxy offsets into the video) with the
weights' update, normalization and estimate, and nn's euclid with findLowest; the CUDA
samples' scalarProd (ACCUM_N accumulators a vector), convolutionSeparable (rows then columns,
KERNEL_RADIUS 8, zero outside the image), fastWalshTransform (fwtBatch2Kernel's radix-4 passes
while stride > 0, a radix-2 pass for odd log2N, modulateKernel: a dyadic convolution),
dwtHaar1D (a level a launch, approximations ping-ponged), SobolQRNG (initSobolDirectionVectors
from a primitive-polynomial table, then a Gray-code point per thread) and quasirandomGenerator's
inverseCNDKernel (MoroInvCND on unsigned ints)."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


def _np_rng(rng):
    return np.random.default_rng(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))


# ----- Rodinia hotspot.cu: calculate_temp for one step over the flattened grid (edges clamped),
# the host loop swapping temp_src and temp_dst, and the chip's constants derived on the host ---

# hotspot.c's #defines and globals
MAX_PD = 3.0e6              # maximum power density possible (say 300W for a 10mm x 10mm chip)
PRECISION = 0.001           # required precision in degrees
SPEC_HEAT_SI = 1.75e6
K_SI = 100
FACTOR_CHIP = 0.5           # capacitance fitting factor
t_chip = 0.0005             # chip parameters
chip_height = 0.016
chip_width = 0.016
amb_temp = 80.0             # ambient temperature, assuming no package at all


def calculate_temp(power, temp_src, temp_dst, grid_cols, grid_rows, Cap, Rx, Ry, Rz, step):
    step_div_Cap = step / Cap
    Rx_1 = 1 / Rx
    Ry_1 = 1 / Ry
    Rz_1 = 1 / Rz
    parir.label('by')
    for yidx in range(grid_rows):
        parir.label('bx')
        for xidx in range(grid_cols):
            index = grid_cols * yidx + xidx
            N = yidx - 1 if yidx - 1 >= 0 else 0
            S = yidx + 1 if yidx + 1 <= grid_rows - 1 else grid_rows - 1
            W = xidx - 1 if xidx - 1 >= 0 else 0
            E = xidx + 1 if xidx + 1 <= grid_cols - 1 else grid_cols - 1
            temp_dst[index] = temp_src[index] + step_div_Cap * (
                power[index]
                + (temp_src[grid_cols * S + xidx] + temp_src[grid_cols * N + xidx]
                   - 2.0 * temp_src[index]) * Ry_1
                + (temp_src[grid_cols * yidx + E] + temp_src[grid_cols * yidx + W]
                   - 2.0 * temp_src[index]) * Rx_1
                + (amb_temp - temp_src[index]) * Rz_1)


@parir.jit
def compute_tran_temp(MatrixPower, MatrixTemp0, MatrixTemp1, MatrixOut, col, row,
                      total_iterations):
    grid_height = chip_height / row
    grid_width = chip_width / col
    Cap = FACTOR_CHIP * SPEC_HEAT_SI * t_chip * grid_width * grid_height
    Rx = grid_width / (2.0 * K_SI * t_chip * grid_height)
    Ry = grid_height / (2.0 * K_SI * t_chip * grid_width)
    Rz = t_chip / (K_SI * grid_height * grid_width)
    max_slope = MAX_PD / (FACTOR_CHIP * t_chip * SPEC_HEAT_SI)
    step = PRECISION / max_slope
    temp_src, temp_dst = MatrixTemp0, MatrixTemp1
    for t in range(total_iterations):
        calculate_temp(MatrixPower, temp_src, temp_dst, col, row, Cap, Rx, Ry, Rz, step)
        temp_src, temp_dst = temp_dst, temp_src
    parir.label('n')
    for n in range(row * col):
        MatrixOut[n] = temp_src[n]


def case_hotspot(rng, device):
    row, col, total_iterations = 29, 37, 5
    grid_height, grid_width = chip_height / row, chip_width / col
    Cap = FACTOR_CHIP * SPEC_HEAT_SI * t_chip * grid_width * grid_height
    Rx = grid_width / (2.0 * K_SI * t_chip * grid_height)
    Ry = grid_height / (2.0 * K_SI * t_chip * grid_width)
    Rz = t_chip / (K_SI * grid_height * grid_width)
    step = PRECISION / (MAX_PD / (FACTOR_CHIP * t_chip * SPEC_HEAT_SI))
    temp = positive(row * col, rng, lo=320.0, hi=345.0)
    power = positive(row * col, rng, lo=0.01, hi=0.5)
    t, p = f64(temp).reshape(row, col), f64(power).reshape(row, col)
    states = [t]
    for _ in range(total_iterations):
        src = states[-1]
        up = np.pad(src, 1, mode="edge")
        states.append(src + step / Cap * (
            p + (up[2:, 1:-1] + up[:-2, 1:-1] - 2.0 * src) / Ry
            + (up[1:-1, 2:] + up[1:-1, :-2] - 2.0 * src) / Rx + (amb_temp - src) / Rz))
    assert np.abs(states[-1] - t).max() > 1e-3
    MatrixTemp0 = temp.to(device)
    MatrixTemp1 = poison(row * col, device=device)
    MatrixOut = poison(row * col, device=device)
    return dict(fn=compute_tran_temp,
                args=[power.to(device), MatrixTemp0, MatrixTemp1, MatrixOut, col, row,
                      total_iterations],
                spec={'by': parir.threads(row), 'bx': parir.threads(col),
                      'n': parir.threads(row * col)},
                # temperatures near 330 K change by a few mK a step: compare at float32's grain
                tol=(1e-6, 1e-6),
                check=[(MatrixOut, torch.from_numpy(states[5].ravel())),
                       (MatrixTemp0, torch.from_numpy(states[4].ravel())),
                       (MatrixTemp1, torch.from_numpy(states[5].ravel()))])


# ----- Rodinia gaussian.cu: ForwardSub launches Fan1 (the multipliers of column t) and Fan2
# (rows below t, and b) for each t, on flattened a and m; BackSub as the host's loop ----------

def Fan1(m_cuda, a_cuda, Size, t):
    parir.label('x')
    for xidx in range(Size - 1 - t):
        m_cuda[Size * (xidx + t + 1) + t] = (a_cuda[Size * (xidx + t + 1) + t]
                                            / a_cuda[Size * t + t])


def Fan2(m_cuda, a_cuda, b_cuda, Size, j1, t):
    parir.label('x')
    for xidx in range(Size - 1 - t):
        parir.label('y')
        for yidx in range(Size - t):
            a_cuda[Size * (xidx + 1 + t) + (yidx + t)] -= (m_cuda[Size * (xidx + 1 + t) + t]
                                                           * a_cuda[Size * t + (yidx + t)])
            if yidx == 0:
                b_cuda[xidx + 1 + t] -= m_cuda[Size * (xidx + 1 + t) + (yidx + t)] * b_cuda[t]


@parir.jit
def gaussian(m, a, b, finalVec, Size):
    # ForwardSub
    for t in range(Size - 1):
        Fan1(m, a, Size, t)
        Fan2(m, a, b, Size, Size - t, t)
    # BackSub
    with parir.gpu:
        for i in range(Size):
            finalVec[Size - i - 1] = b[Size - i - 1]
            for j in range(i):
                finalVec[Size - i - 1] -= (a[Size * (Size - i - 1) + (Size - j - 1)]
                                           * finalVec[Size - j - 1])
            finalVec[Size - i - 1] = (finalVec[Size - i - 1]
                                      / a[Size * (Size - i - 1) + (Size - i - 1)])


def case_gaussian(rng, device):
    Size = 37
    a = nonzero((Size, Size), rng, dtype=torch.float64)
    a += torch.diag(torch.where(torch.diag(a) < 0, -1.0, 1.0) * Size / 2)   # no pivoting needed
    a = a.float()
    b = nonzero(Size, rng)
    A, bb = f64(a), f64(b)
    x = np.linalg.solve(A, bb)
    U, L, y = A.copy(), np.zeros((Size, Size)), bb.copy()
    for t in range(Size - 1):
        L[t + 1:, t] = U[t + 1:, t] / U[t, t]
        U[t + 1:, t:] -= np.outer(L[t + 1:, t], U[t, t:])
        y[t + 1:] -= L[t + 1:, t] * y[t]
    assert np.allclose(np.tril(U, -1), 0.0) and np.allclose((np.eye(Size) + L) @ U, A)
    m = torch.zeros(Size * Size, device=device)                # InitPerRun
    a_cuda = a.reshape(-1).to(device)
    b_cuda = b.to(device)
    finalVec = poison(Size, device=device)
    return dict(fn=gaussian, args=[m, a_cuda, b_cuda, finalVec, Size],
                spec={'x': parir.threads(Size), 'y': parir.threads(Size)},
                check=[(finalVec, torch.from_numpy(x)), (b_cuda, torch.from_numpy(y)),
                       (m, torch.from_numpy(L.ravel())), (a_cuda, torch.from_numpy(U.ravel()))])


# ----- CUDA samples scalarProd: a vector a block, ACCUM_N accumulators striding through it,
# their partial sums combined (the shared-memory tree as a reduction) ------------------------

ACCUM_N = 1024


@parir.jit
def scalarProdGPU(d_C, d_A, d_B, vectorN, elementN):
    parir.label('vec')
    for vec in range(vectorN):
        vectorBase = elementN * vec      # IMUL(elementN, vec)
        vectorEnd = vectorBase + elementN
        sum = 0.0
        parir.label('iAccum')
        for iAccum in range(ACCUM_N):
            for pos in range(vectorBase + iAccum, vectorEnd, ACCUM_N):
                sum += d_A[pos] * d_B[pos]
        d_C[vec] = sum


def case_scalar_prod(rng, device):
    vectorN, elementN = 37, 1500
    h_A = nonzero(vectorN * elementN, rng)
    h_B = nonzero(vectorN * elementN, rng)
    ref = (f64(h_A) * f64(h_B)).reshape(vectorN, elementN).sum(1)
    d_C = poison(vectorN, device=device)
    return dict(fn=scalarProdGPU, args=[d_C, h_A.to(device), h_B.to(device), vectorN, elementN],
                spec={'vec': parir.threads(vectorN), 'iAccum': parir.threads(256).reduce()},
                check=[(d_C, torch.from_numpy(ref))])


# ----- CUDA samples convolutionSeparable: convolutionRows into the buffer, convolutionColumns
# out of it, c_Kernel[KERNEL_RADIUS - k], zero outside the image ------------------------------

KERNEL_RADIUS = 8
KERNEL_LENGTH = 2 * KERNEL_RADIUS + 1


def convolutionRows(d_Dst, d_Src, c_Kernel, imageW, imageH):
    parir.label('y')
    for y in range(imageH):
        parir.label('x')
        for x in range(imageW):
            sum = 0.0
            for k in range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
                d = x + k
                if d >= 0 and d < imageW:
                    sum += d_Src[y * imageW + d] * c_Kernel[KERNEL_RADIUS - k]
            d_Dst[y * imageW + x] = sum


def convolutionColumns(d_Dst, d_Src, c_Kernel, imageW, imageH):
    parir.label('y')
    for y in range(imageH):
        parir.label('x')
        for x in range(imageW):
            sum = 0.0
            for k in range(-KERNEL_RADIUS, KERNEL_RADIUS + 1):
                d = y + k
                if d >= 0 and d < imageH:
                    sum += d_Src[d * imageW + x] * c_Kernel[KERNEL_RADIUS - k]
            d_Dst[y * imageW + x] = sum


@parir.jit
def convolutionSeparable(d_Output, d_Buffer, d_Input, c_Kernel, imageW, imageH):
    convolutionRows(d_Buffer, d_Input, c_Kernel, imageW, imageH)
    convolutionColumns(d_Output, d_Buffer, c_Kernel, imageW, imageH)


def case_convolution_separable(rng, device):
    imageW, imageH = 67, 45
    h_Kernel = nonzero(KERNEL_LENGTH, rng)
    h_Input = nonzero(imageW * imageH, rng)
    img, ker = f64(h_Input).reshape(imageH, imageW), f64(h_Kernel)
    rows = np.stack([np.convolve(r, ker, mode="same") for r in img])
    cols = np.stack([np.convolve(c, ker, mode="same") for c in rows.T]).T
    d_Output = poison(imageW * imageH, device=device)
    d_Buffer = poison(imageW * imageH, device=device)
    return dict(fn=convolutionSeparable,
                args=[d_Output, d_Buffer, h_Input.to(device), h_Kernel.to(device), imageW,
                      imageH],
                spec={'y': parir.threads(imageH), 'x': parir.threads(imageW)},
                check=[(d_Buffer, torch.from_numpy(rows.ravel())),
                       (d_Output, torch.from_numpy(cols.ravel()))])


# ----- CUDA samples fastWalshTransform: fwtBatchGPU's radix-4 passes (stride >>= 2 on the
# host), the radix-2 pass of an odd log2N, modulateKernel: dyadic convolution of M rows ------

def fwtBatch2Kernel(d_Output, d_Input, stride, M, N):
    parir.label('batch')
    for by in range(M):
        parir.label('pos')
        for pos in range(N // 4):
            base = by * N            # d_Src = d_Input + blockIdx.y * N
            lo = pos & (stride - 1)
            i0 = ((pos - lo) << 2) + lo
            i1 = i0 + stride
            i2 = i1 + stride
            i3 = i2 + stride
            D0 = d_Input[base + i0]
            D1 = d_Input[base + i1]
            D2 = d_Input[base + i2]
            D3 = d_Input[base + i3]
            T = D0
            D0 = D0 + D2
            D2 = T - D2
            T = D1
            D1 = D1 + D3
            D3 = T - D3
            T = D0
            d_Output[base + i0] = D0 + D1
            d_Output[base + i1] = T - D1
            T = D2
            d_Output[base + i2] = D2 + D3
            d_Output[base + i3] = T - D3


def fwtRadix2(d_Data, M, N):
    # Do single radix-2 stage for odd power of two
    parir.label('batch')
    for by in range(M):
        parir.label('pos')
        for pos in range(N // 2):
            i0 = by * N + (pos << 1)
            i1 = i0 + 1
            D0 = d_Data[i0]
            D1 = d_Data[i1]
            d_Data[i0] = D0 + D1
            d_Data[i1] = D0 - D1


def fwtBatchGPU(d_Data, M, log2N):
    N = 1 << log2N
    stride = N >> 2
    while stride > 0:
        fwtBatch2Kernel(d_Data, d_Data, stride, M, N)
        stride >>= 2
    if log2N & 1:
        fwtRadix2(d_Data, M, N)


def modulateGPU(d_A, d_B, M, N):
    rcpN = 1.0 / N
    parir.label('batch')
    for by in range(M):
        parir.label('pos')
        for pos in range(N):
            d_A[by * N + pos] *= d_B[by * N + pos] * rcpN


@parir.jit
def fwt_dyadic_convolution(d_Data, d_Kernel, M, log2N):
    fwtBatchGPU(d_Data, M, log2N)
    fwtBatchGPU(d_Kernel, M, log2N)
    modulateGPU(d_Data, d_Kernel, M, 1 << log2N)
    fwtBatchGPU(d_Data, M, log2N)


def case_fast_walsh(rng, device):
    M, log2N = 3, 9
    N = 1 << log2N
    h_Data = nonzero(M * N, rng)
    h_Kernel = nonzero(M * N, rng)
    data, ker = f64(h_Data).reshape(M, N), f64(h_Kernel).reshape(M, N)
    idx = np.arange(N)
    xor = idx[:, None] ^ idx[None, :]
    # dyadicConvolutionCPU: h_Result[i] = sum_j h_Data[j] * h_Kernel[i ^ j]
    conv = np.stack([ker[r][xor] @ data[r] for r in range(M)])
    parity = np.array([bin(v).count("1") & 1 for v in range(N)])
    H = np.where(parity[idx[:, None] & idx[None, :]] == 1, -1.0, 1.0)
    d_Data = h_Data.to(device)
    d_Kernel = h_Kernel.to(device)
    return dict(fn=fwt_dyadic_convolution, args=[d_Data, d_Kernel, M, log2N],
                spec={'batch': parir.threads(M), 'pos': parir.threads(256)},
                check=[(d_Data, torch.from_numpy(conv.ravel())),
                       (d_Kernel, torch.from_numpy((ker @ H.T).ravel()))])


# ----- CUDA samples dwtHaar1D: one decomposition level a launch, the details stored at
# od[slength_step_half + k], the approximations ping-ponged between two buffers -------------

INV_SQRT_2 = 0.70710678118654752440


def dwtHaar1D_level(id, od, approx_final, slength_step_half):
    parir.label('k')
    for k in range(slength_step_half):
        data0 = id[2 * k]
        data1 = id[2 * k + 1]
        approx_final[k] = (data0 + data1) * INV_SQRT_2
        od[slength_step_half + k] = (data0 - data1) * INV_SQRT_2


@parir.jit
def dwtHaar1D(d_idata, d_approx, d_odata, slength, dlevels):
    src, dst = d_idata, d_approx
    for level in range(dlevels):
        slength_step_half = slength >> (level + 1)
        dwtHaar1D_level(src, d_odata, dst, slength_step_half)
        src, dst = dst, src
    with parir.gpu:
        d_odata[0] = src[0]


def case_dwt_haar(rng, device):
    dlevels = 9
    slength = 1 << dlevels
    signal = nonzero(slength, rng)
    s = f64(signal)
    ref = np.zeros(slength)
    ref[0] = s.sum() / 2.0 ** (dlevels / 2)
    for lev in range(1, dlevels + 1):
        blocks = s.reshape(-1, 1 << lev)
        half = 1 << (lev - 1)
        d = (blocks[:, :half].sum(1) - blocks[:, half:].sum(1)) / 2.0 ** (lev / 2)
        ref[slength >> lev:(slength >> lev) + len(d)] = d
    d_approx = poison(slength, device=device)
    d_odata = poison(slength, device=device)
    return dict(fn=dwtHaar1D, args=[signal.to(device), d_approx, d_odata, slength, dlevels],
                spec={'k': parir.threads(256)},
                check=[(d_odata, torch.from_numpy(ref))])


# ----- CUDA samples SobolQRNG: initSobolDirectionVectors (Bratley & Fox, a thread a dimension,
# from Joe & Kuo's primitive polynomials), then sobolGPU's Gray-code point per thread --------

n_directions = 32
k_2powneg32 = np.float32(2.3283064e-10)

# sobol_primitives: dimension, degree, a, m[] (Joe & Kuo, new-joe-kuo-6.21201)
SOBOL_PRIMITIVES = [
    (1, 0, 0, []), (2, 1, 0, [1]), (3, 2, 1, [1, 3]), (4, 3, 1, [1, 3, 1]),
    (5, 3, 2, [1, 1, 1]), (6, 4, 1, [1, 1, 3, 3]), (7, 4, 4, [1, 3, 5, 13]),
    (8, 5, 2, [1, 1, 5, 5, 17]), (9, 5, 4, [1, 1, 5, 5, 5]), (10, 5, 7, [1, 1, 7, 11, 19]),
]


@parir.jit
def sobolQRNG(degree, a, m, directions, output, n_vectors, n_dimensions):
    parir.label('dim')
    for dim in range(n_dimensions):
        v = dim * n_directions
        # First dimension is a special case
        if dim == 0:
            for i in range(n_directions):
                # All m's are 1
                directions[v + i] = 1 << (31 - i)
        else:
            d = degree[dim]
            # The first direction numbers (up to the degree of the polynomial)
            # are simply v[i] = m[i] / 2^i (stored in Q0.32 format)
            for i in range(d):
                directions[v + i] = m[dim, i] << (31 - i)
            # v[i] = a[1]v[i-1] ^ a[2]v[i-2] ^ ... ^ a[v-1]v[i-d+1] ^ v[i-d] ^ v[i-d]/2^d
            for i in range(d, n_directions):
                # First compute the last term (v[i-d]/2^d)
                directions[v + i] = directions[v + i - d] ^ (directions[v + i - d] >> d)
                # Now compute the other terms
                for j in range(1, d):
                    directions[v + i] ^= ((a[dim] >> (d - 1 - j)) & 1) * directions[v + i - j]
    parir.label('dim')
    for dim in range(n_dimensions):
        parir.label('i0')
        for i0 in range(n_vectors):
            g = parir.uint32(i0 ^ (i0 >> 1))
            X = parir.uint32(0)
            for k in range(n_directions):
                mask = -(g & 1)
                X ^= mask & directions[dim * n_directions + k]
                g = g >> 1
            output[n_vectors * dim + i0] = parir.float32(X) * k_2powneg32


def case_sobol(rng, device):
    n_vectors, n_dimensions = 211, 7
    # the table's rows, shuffled by the generator: each dimension still reads its own row
    g = _np_rng(rng)
    rows = [SOBOL_PRIMITIVES[0]] + [SOBOL_PRIMITIVES[1 + int(r)]
                                    for r in g.permutation(len(SOBOL_PRIMITIVES) - 1)]
    rows = rows[:n_dimensions]
    degree = torch.tensor([r[1] for r in rows], dtype=torch.int32)
    a = torch.tensor([r[2] for r in rows], dtype=torch.int64).to(torch.uint32)
    m = torch.zeros((n_dimensions, 8), dtype=torch.int64)
    for dim, r in enumerate(rows):
        m[dim, :len(r[3])] = torch.tensor(r[3])
    # Bratley & Fox's recurrence on the m's: m_i = 2 a_1 m_{i-1} ^ ... ^ 2^s m_{i-s} ^ m_{i-s}
    ref_v = np.zeros((n_dimensions, n_directions), dtype=np.int64)
    for dim, (_, s, coeffs, m0) in enumerate(rows):
        if dim == 0:
            mm = [1] * n_directions
        else:
            mm = list(m0)
            for i in range(s, n_directions):
                val = (mm[i - s] << s) ^ mm[i - s]
                for j in range(1, s):
                    if (coeffs >> (s - 1 - j)) & 1:
                        val ^= mm[i - j] << j
                mm.append(val)
        for i in range(n_directions):
            ref_v[dim, i] = (mm[i] << (31 - i)) & 0xFFFFFFFF
    # sobolCPU: x[i] = x[i-1] ^ v[c], c the index of the rightmost zero bit of i - 1
    ref_x = np.zeros((n_dimensions, n_vectors), dtype=np.int64)
    for dim in range(n_dimensions):
        X = 0
        for i in range(1, n_vectors):
            c = ((~(i - 1)) & (i - 1 + 1)).bit_length() - 1
            X ^= int(ref_v[dim, c])
            ref_x[dim, i] = X
    ref_out = ref_x.astype(np.float32).astype(np.float64) * 2.0 ** -32
    assert np.allclose(ref_out[0, :8], [0, .5, .75, .25, .375, .875, .625, .125])
    directions = poison(n_dimensions * n_directions, dtype=torch.int64, device=device)
    directions = directions.to(torch.uint32)
    output = poison(n_dimensions * n_vectors, device=device)
    return dict(fn=sobolQRNG,
                args=[degree.to(device), a.to(device), m.to(torch.uint32).to(device),
                      directions, output, n_vectors, n_dimensions],
                spec={'dim': parir.threads(n_dimensions), 'i0': parir.threads(n_vectors)},
                check=[(directions, torch.from_numpy(ref_v.ravel())),
                       (output, torch.from_numpy(ref_out.ravel()))])


# ----- CUDA samples quasirandomGenerator: inverseCNDKernel, MoroInvCND of the given unsigned
# ints and of (pos + 1) * distance generated on the fly --------------------------------------

a1 = np.float32(2.50662823884)
a2 = np.float32(-18.61500062529)
a3 = np.float32(41.39119773534)
a4 = np.float32(-25.44106049637)
b1 = np.float32(-8.4735109309)
b2 = np.float32(23.08336743743)
b3 = np.float32(-21.06224101826)
b4 = np.float32(3.13082909833)
c1 = np.float32(0.337475482272615)
c2 = np.float32(0.976169019091719)
c3 = np.float32(0.160797971491821)
c4 = np.float32(2.76438810333863E-02)
c5 = np.float32(3.8405729373609E-03)
c6 = np.float32(3.951896511919E-04)
c7 = np.float32(3.21767881768E-05)
c8 = np.float32(2.888167364E-07)
c9 = np.float32(3.960315187E-07)


def MoroInvCND(x):
    negate = False
    # Ensure the conversion to floating point will give a value in the range (0,0.5] by
    # restricting the input to the bottom half of the input domain. We will later reflect the
    # result if the input was originally in the top half of the input domain
    if x >= 0x80000000:
        x = 0xffffffff - x
        negate = True
    # x is now in the range [0,0x80000000) (i.e. [0,0x7fffffff])
    # Convert to floating point in (0,0.5]
    x1 = np.float32(1.0) / np.float32(0xffffffff)
    x2 = x1 / np.float32(2.0)
    p1 = x * x1 + x2
    # Convert to floating point in (-0.5,0]
    p2 = p1 - np.float32(0.5)
    # The input to the Moro inversion is p2 which is in the range (-0.5,0]. This means that our
    # output will be the negative side of the bell curve (which we will reflect if "negate" is
    # true).
    # Moro inversion
    if p2 > np.float32(-0.42):
        z = p2 * p2
        z = p2 * (((a4 * z + a3) * z + a2) * z + a1) / ((((b4 * z + b3) * z + b2) * z + b1) * z
                                                         + np.float32(1.0))
    else:
        z = parir.log(-parir.log(p1))
        z = -(c1 + z * (c2 + z * (c3 + z * (c4 + z * (c5 + z * (c6 + z * (c7 + z * (
            c8 + z * c9))))))))
    # If the original input (x) was in the top half of the range, reflect to get the positive
    # side of the bell curve
    return -z if negate else z


@parir.jit
def inverseCND(d_Output, d_Uniform, d_Input, pathN):
    distance = 0xffffffff // (pathN + 1)
    parir.label('pos')
    for pos in range(pathN):
        d = d_Input[pos]
        d_Output[pos] = MoroInvCND(d)
    parir.label('pos')
    for pos in range(pathN):
        d = parir.uint32((pos + 1) * distance)
        d_Uniform[pos] = MoroInvCND(d)


def case_moro_inv_cnd(rng, device):
    pathN = 1001
    d_Input = randint(pathN, rng, 0, 2**32, dtype=torch.int64)
    d_Input[:4] = torch.tensor([0, 0xffffffff, 0x7fffffff, 0x80000000])
    distance = 0xffffffff // (pathN + 1)

    def inv_cnd(u):
        u = u.astype(np.float64)
        p = np.where(u >= 2**31, 0xffffffff - u, u) / 0xffffffff + 0.5 / 0xffffffff
        z = torch.special.ndtri(torch.from_numpy(p)).numpy()
        return np.where(u >= 2**31, -z, z)

    ref_in = inv_cnd(d_Input.numpy())
    ref_uni = inv_cnd((np.arange(1, pathN + 1) * distance))
    d_Output = poison(pathN, device=device)
    d_Uniform = poison(pathN, device=device)
    return dict(fn=inverseCND,
                args=[d_Output, d_Uniform, d_Input.to(torch.uint32).to(device), pathN],
                spec={'pos': parir.threads(pathN)},
                tol=(1e-5, 1e-6),
                check=[(d_Output, torch.from_numpy(ref_in)),
                       (d_Uniform, torch.from_numpy(ref_uni))])


# ----- Rodinia lavaMD kernel_gpu_cuda: a block a home box, a thread a particle of it, the loop
# over the box and its neighbour boxes, FOUR_VECTOR records (v, x, y, z) read through views ---

NUMBER_PAR_PER_BOX = 5


def DOT(A, B):
    return A[1] * B[1] + A[2] * B[2] + A[3] * B[3]


@parir.jit
def kernel_gpu_cuda(alpha, box_offset, box_nn, box_nei, rv, qv, fv, number_boxes):
    parir.label('bx')
    for bx in range(number_boxes):
        # parameters
        a2 = 2.0 * alpha * alpha
        # home box
        first_i = box_offset[bx]
        # loop over neighbouring boxes of home box
        for k in range(1 + box_nn[bx]):
            # neighbour box - get pointer to the right box
            if k == 0:
                pointer = bx           # set first box to be processed to home box
            else:
                pointer = box_nei[bx, k - 1]
            first_j = box_offset[pointer]
            parir.label('wtx')
            for wtx in range(NUMBER_PAR_PER_BOX):
                for j in range(NUMBER_PAR_PER_BOX):
                    r2 = rv[first_i + wtx, 0] + rv[first_j + j, 0] - DOT(rv[first_i + wtx],
                                                                        rv[first_j + j])
                    u2 = a2 * r2
                    vij = math.exp(-u2)
                    fs = 2 * vij
                    dx = rv[first_i + wtx, 1] - rv[first_j + j, 1]
                    fxij = fs * dx
                    dy = rv[first_i + wtx, 2] - rv[first_j + j, 2]
                    fyij = fs * dy
                    dz = rv[first_i + wtx, 3] - rv[first_j + j, 3]
                    fzij = fs * dz
                    fv[first_i + wtx, 0] += qv[first_j + j] * vij
                    fv[first_i + wtx, 1] += qv[first_j + j] * fxij
                    fv[first_i + wtx, 2] += qv[first_j + j] * fyij
                    fv[first_i + wtx, 3] += qv[first_j + j] * fzij


def case_lavamd(rng, device):
    boxes1d_arg, alpha = 3, 0.5
    number_boxes = boxes1d_arg ** 3
    offset, nn, nei = [], [], []
    for i in range(boxes1d_arg):              # z
        for j in range(boxes1d_arg):          # y
            for k in range(boxes1d_arg):      # x
                nh = (i * boxes1d_arg + j) * boxes1d_arg + k
                offset.append(nh * NUMBER_PAR_PER_BOX)
                row = []
                for l in (-1, 0, 1):
                    for m in (-1, 0, 1):
                        for n in (-1, 0, 1):
                            if (0 <= i + l < boxes1d_arg and 0 <= j + m < boxes1d_arg
                                    and 0 <= k + n < boxes1d_arg and (l, m, n) != (0, 0, 0)):
                                row.append(((i + l) * boxes1d_arg + (j + m)) * boxes1d_arg
                                           + (k + n))
                nn.append(len(row))
                nei.append(row + [-1] * (26 - len(row)))
    space_elem = number_boxes * NUMBER_PAR_PER_BOX
    rv = positive((space_elem, 4), rng, dtype=torch.float64, lo=0.1, hi=1.0)
    qv = positive(space_elem, rng, dtype=torch.float64, lo=0.1, hi=1.0)
    r, q = f64(rv), f64(qv)
    fv_ref = np.zeros((space_elem, 4))
    for bx in range(number_boxes):
        home = slice(offset[bx], offset[bx] + NUMBER_PAR_PER_BOX)
        for pointer in [bx] + nei[bx][:nn[bx]]:
            other = slice(offset[pointer], offset[pointer] + NUMBER_PAR_PER_BOX)
            rA, rB, qB = r[home], r[other], q[other]
            r2 = rA[:, None, 0] + rB[None, :, 0] - rA[:, 1:] @ rB[:, 1:].T
            vij = np.exp(-2.0 * alpha * alpha * r2)
            d = rA[:, None, 1:] - rB[None, :, 1:]
            fv_ref[home, 0] += vij @ qB
            fv_ref[home, 1:] += np.einsum('ij,ijc,j->ic', 2 * vij, d, qB)
    fv = torch.zeros((space_elem, 4), dtype=torch.float64, device=device)
    return dict(fn=kernel_gpu_cuda,
                args=[alpha, torch.tensor(offset, dtype=torch.int64, device=device),
                      torch.tensor(nn, dtype=torch.int32, device=device),
                      torch.tensor(nei, dtype=torch.int64, device=device), rv.to(device),
                      qv.to(device), fv, number_boxes],
                spec={'bx': parir.threads(number_boxes), 'wtx': parir.threads(NUMBER_PAR_PER_BOX)},
                check=[(fv, torch.from_numpy(fv_ref))])


# ----- Rodinia particlefilter (ex_particle_OPENMP_seq.c): the likelihood of each particle from
# the disk's pixels in frame k (roundDouble, ind clamped to max_size), the weights updated by
# exp(likelihood), normalized by their sum, and the weighted estimate of the position ----------

def roundDouble(value):
    newValue = int(value)
    if value - newValue < .5:
        return newValue
    else:
        return newValue + 1


@parir.jit
def particleFilter_likelihood(I, arrayX, arrayY, objxy, ind, likelihood, weights, estimate,
                              IszY, Nfr, k, max_size, countOnes, Nparticles):
    parir.label('x')
    for x in range(Nparticles):
        # compute the likelihood: remember our assumption is that you know
        # foreground and the background image intensity distribution.
        for y in range(countOnes):
            indX = roundDouble(arrayX[x]) + objxy[y * 2 + 1]
            indY = roundDouble(arrayY[x]) + objxy[y * 2]
            ind[x * countOnes + y] = abs(indX * IszY * Nfr + indY * Nfr + k)
            if ind[x * countOnes + y] >= max_size:
                ind[x * countOnes + y] = 0
        likelihood[x] = 0
        for y in range(countOnes):
            likelihood[x] += ((I[ind[x * countOnes + y]] - 100) ** 2
                              - (I[ind[x * countOnes + y]] - 228) ** 2) / 50.0
        likelihood[x] = likelihood[x] / countOnes
    # update & normalize weights
    # using equation (63) of Arulampalam Tutorial
    parir.label('x')
    for x in range(Nparticles):
        weights[x] = weights[x] * math.exp(likelihood[x])
    sumWeights = 0.0
    parir.label('sum')
    for x in range(Nparticles):
        sumWeights += weights[x]
    parir.label('x')
    for x in range(Nparticles):
        weights[x] = weights[x] / sumWeights
    xe = 0.0
    ye = 0.0
    # estimate the object location by expected values
    parir.label('sum')
    for x in range(Nparticles):
        xe += arrayX[x] * weights[x]
        ye += arrayY[x] * weights[x]
    with parir.gpu:
        estimate[0] = xe
        estimate[1] = ye


def case_particle_filter(rng, device):
    IszX, IszY, Nfr, k, Nparticles, radius = 37, 41, 3, 2, 301, 3
    max_size = IszX * IszY * Nfr
    # the video: background 100, the object's pixels 228, noise, as videoSequence makes it
    g = _np_rng(rng)
    video = np.full((IszX, IszY, Nfr), 100.0)
    video[14:20, 17:24, :] = 228.0
    video = np.clip(np.round(video + 5.0 * g.standard_normal(video.shape)), 1, 255)
    I = video.astype(np.int32).ravel()          # I[x * IszY * Nfr + y * Nfr + k]
    # strelDisk and getneighbors
    diameter = radius * 2 - 1
    offs = [(x - radius + 1, y - radius + 1) for x in range(diameter) for y in range(diameter)
            if math.sqrt((x - radius + 1) ** 2 + (y - radius + 1) ** 2) < radius]
    countOnes = len(offs)
    objxy = np.array([[dy, dx] for dx, dy in offs], dtype=np.int32).ravel()
    arrayX = 17.0 + 5.0 * g.standard_normal(Nparticles)
    arrayY = 20.0 + 5.0 * g.standard_normal(Nparticles)
    arrayX[:3] = [-2.6, IszX + 3.2, 16.5]      # off the frame: ind clamped, or abs
    weights0 = g.uniform(0.5, 1.5, Nparticles) / Nparticles
    rX = np.where(arrayX - np.trunc(arrayX) < .5, np.trunc(arrayX), np.trunc(arrayX) + 1)
    rY = np.where(arrayY - np.trunc(arrayY) < .5, np.trunc(arrayY), np.trunc(arrayY) + 1)
    indX = rX[:, None].astype(np.int64) + objxy[1::2][None, :]
    indY = rY[:, None].astype(np.int64) + objxy[0::2][None, :]
    ref_ind = np.abs(indX * IszY * Nfr + indY * Nfr + k)
    ref_ind[ref_ind >= max_size] = 0
    Iv = I[ref_ind].astype(np.float64)
    ref_lik = (((Iv - 100) ** 2 - (Iv - 228) ** 2) / 50.0).mean(1)
    w = weights0 * np.exp(ref_lik)
    w = w / w.sum()
    ref_est = np.array([(arrayX * w).sum(), (arrayY * w).sum()])
    ind = poison(Nparticles * countOnes, dtype=torch.int32, device=device)
    likelihood = poison(Nparticles, dtype=torch.float64, device=device)
    weights = torch.from_numpy(weights0).to(device)
    estimate = poison(2, dtype=torch.float64, device=device)
    return dict(fn=particleFilter_likelihood,
                args=[torch.from_numpy(I).to(device), torch.from_numpy(arrayX).to(device),
                      torch.from_numpy(arrayY).to(device), torch.from_numpy(objxy).to(device),
                      ind, likelihood, weights, estimate, IszY, Nfr, k, max_size, countOnes,
                      Nparticles],
                spec={'x': parir.threads(Nparticles), 'sum': parir.threads(Nparticles).reduce()},
                check=[(ind, torch.from_numpy(ref_ind.ravel())),
                       (likelihood, torch.from_numpy(ref_lik)), (weights, torch.from_numpy(w)),
                       (estimate, torch.from_numpy(ref_est))])


# ----- Rodinia nn (nn_cuda.cu): euclid's distance of every record to (lat, lng), then
# findLowest's selection of the resultsCount nearest, swapping records and distances ---------

@parir.jit
def nn_search(d_locations, d_distances, results, numRecords, lat, lng, resultsCount):
    parir.label('globalId')
    for globalId in range(numRecords):
        d_distances[globalId] = math.sqrt(
            (lat - d_locations[globalId, 0]) * (lat - d_locations[globalId, 0])
            + (lng - d_locations[globalId, 1]) * (lng - d_locations[globalId, 1]))
    # findLowest
    with parir.gpu:
        for i in range(resultsCount):
            minLoc = i
            for j in range(i, numRecords):
                val = d_distances[j]
                if val < d_distances[minLoc]:
                    minLoc = j
            # swap locations and distances
            d_locations[i, 0], d_locations[minLoc, 0] = d_locations[minLoc, 0], d_locations[i, 0]
            d_locations[i, 1], d_locations[minLoc, 1] = d_locations[minLoc, 1], d_locations[i, 1]
            d_distances[i], d_distances[minLoc] = d_distances[minLoc], d_distances[i]
            # add distance to the min we just found
            results[i, 0] = d_locations[i, 0]
            results[i, 1] = d_locations[i, 1]
            results[i, 2] = d_distances[i]


def case_nn(rng, device):
    numRecords, resultsCount, lat, lng = 1001, 5, 30.0, 90.0
    g = _np_rng(rng)
    loc = np.stack([g.uniform(0.0, 60.0, numRecords), g.uniform(0.0, 180.0, numRecords)], 1)
    loc = loc.astype(np.float32)
    dist = np.sqrt(((loc.astype(np.float64) - [lat, lng]) ** 2).sum(1))
    srt = np.sort(dist)
    assert (np.diff(srt[:resultsCount + 1]) > 1e-3).all()
    # the selection's swaps, replayed
    recs, dists = loc.astype(np.float64).copy(), dist.copy()
    for i in range(resultsCount):
        minLoc = i + int(np.argmin(dists[i:]))
        recs[[i, minLoc]] = recs[[minLoc, i]]
        dists[[i, minLoc]] = dists[[minLoc, i]]
    ref_results = np.concatenate([recs[:resultsCount], dists[:resultsCount, None]], 1)
    d_locations = torch.from_numpy(loc).to(device)
    d_distances = poison(numRecords, device=device)
    results = poison((resultsCount, 3), device=device)
    return dict(fn=nn_search,
                args=[d_locations, d_distances, results, numRecords, lat, lng, resultsCount],
                spec={'globalId': parir.threads(numRecords)},
                check=[(results, torch.from_numpy(ref_results)),
                       (d_distances, torch.from_numpy(dists)),
                       (d_locations, torch.from_numpy(recs))])


CASES = {
    "rs_hotspot": case_hotspot,
    "rs_gaussian": case_gaussian,
    "rs_scalar_prod": case_scalar_prod,
    "rs_convolution_separable": case_convolution_separable,
    "rs_fast_walsh": case_fast_walsh,
    "rs_dwt_haar": case_dwt_haar,
    "rs_sobol": case_sobol,
    "rs_moro_inv_cnd": case_moro_inv_cnd,
    "rs_lavamd": case_lavamd,
    "rs_particle_filter": case_particle_filter,
    "rs_nn": case_nn,
}
