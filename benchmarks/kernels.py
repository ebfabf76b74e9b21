"""Kernels of the roofline and overhead benchmarks, written as a user would."""

import parir_torch as parir


@parir.jit
def sum_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i] += x[i, j]


@parir.jit
def add(a, b, c, N):
    parir.label('i')
    for i in range(N):
        c[i] = a[i] + b[i]


@parir.jit
def sum_rows_reduce(x, y, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            y[i] += x[i, j]


@parir.jit
def col_sums(x, partial, y, N, M, R):
    # Column sums in two phases, for parallelism: R chunks of rows times M columns of partial
    # sums (neighbouring threads read neighbouring elements), then one sum per column.
    parir.label('R')
    for r in range(R):
        parir.label('M')
        for j in range(M):
            s = 0.0
            for i in range(r * N // R, (r + 1) * N // R):
                s += x[i, j]
            partial[r, j] = s
    parir.label('M')
    for j in range(M):
        t = 0.0
        for r in range(R):
            t += partial[r, j]
        y[j] = t


@parir.jit
def total_sum(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] += x[i]


@parir.jit
def softmax_rows(x, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        m = parir.max(x[i, :])
        parir.label('M')
        out[i, :] = parir.exp(x[i, :] - m)
        parir.label('M')
        s = parir.sum(out[i, :])
        parir.label('M')
        out[i, :] /= s


@parir.jit
def row_max(x, y, N, M):
    parir.label('N')
    parir.label('M')
    y[:] = parir.max(x[:, :], axis=1)


@parir.jit
def axpy(a, x, y, N):
    parir.label('i')
    for i in range(N):
        y[i] += a * x[i]


@parir.jit
def row_sums_slice(x, y, N, M):
    # The row sums as the README also writes them: a slice reduction, no zeroed output needed.
    parir.label('N')
    parir.label('M')
    y[:] = parir.sum(x[:, :], axis=1)


@parir.jit
def col_sums_slice(x, y, N, M):
    # The column sums as one would first write them: a slice reduction over the rows.
    parir.label('M')
    parir.label('N')
    y[:] = parir.sum(x[:, :], axis=0)


@parir.jit
def layer_norm(x, w, b, out, N, D, eps):
    parir.label('N')
    for i in range(N):
        parir.label('D')
        mean = parir.sum(x[i, :]) / D
        parir.label('D')
        var = parir.sum((x[i, :] - mean) * (x[i, :] - mean)) / D
        rstd = 1.0 / parir.sqrt(var + eps)
        parir.label('D')
        out[i, :] = (x[i, :] - mean) * rstd * w[:] + b[:]


@parir.jit
def stencil_2d(x, y, N, M):
    # The 5-point average over the interior; the border of y is left as it is.
    parir.label('i')
    for i in range(1, N - 1):
        parir.label('j')
        for j in range(1, M - 1):
            y[i, j] = 0.2 * (x[i, j] + x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1])


# Tiny kernels with 1, 4 and 16 tensor arguments, for the per-call host overhead.

@parir.jit
def args1(a, N):
    parir.label('i')
    for i in range(N):
        a[i] += 1.0


@parir.jit
def args4(a, b, c, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = a[i] + b[i] + c[i]


@parir.jit
def args16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = (a0[i] + a1[i] + a2[i] + a3[i] + a4[i] + a5[i] + a6[i] + a7[i] + a8[i] + a9[i] +
                  a10[i] + a11[i] + a12[i] + a13[i] + a14[i])


@parir.jit
def rms_norm(x, w, out, N, D, eps):
    parir.label('N')
    for i in range(N):
        parir.label('D')
        ss = parir.sum(x[i, :] * x[i, :])
        r = 1.0 / parir.sqrt(ss / D + eps)
        parir.label('D')
        out[i, :] = x[i, :] * r * w[:]


@parir.jit
def gather(x, idx, out, N):
    # An index read from memory: the one kind of access the compiler cannot prove in bounds.
    parir.label('i')
    for i in range(N):
        out[i] = x[idx[i]]


@parir.jit
def histogram(x, hist, N, B):
    # One atomic increment per element: threads whose values share a bin collide on it.
    parir.label('i')
    for i in range(N):
        b = parir.min(parir.int64(x[i] * B), B - 1)
        parir.atomic_add(hist[b], 1)


@parir.jit
def histogram_blocks(x, partial, hist, N, B, P):
    # Each of P blocks counts a contiguous chunk of x into a row of its own (zeroed by the
    # caller), so that only the threads of one block collide on a count; then the rows are
    # summed. N is a multiple of P.
    parir.label('P')
    for p in range(P):
        parir.label('T')
        for i in range(p * (N // P), (p + 1) * (N // P)):
            b = parir.min(parir.int64(x[i] * B), B - 1)
            parir.atomic_add(partial[p, b], 1)
    parir.label('B')
    for b in range(B):
        s = 0
        for p in range(P):
            s += partial[p, b]
        hist[b] = s
