"""Kernels shared by the benchmarks, written as a user would."""

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
