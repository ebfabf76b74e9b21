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
def col_sums(x, y, N, M):
    # One thread per column, walking down the rows: neighbouring threads read neighbouring
    # elements.
    parir.label('M')
    for j in range(M):
        for i in range(N):
            y[j] += x[i, j]


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
