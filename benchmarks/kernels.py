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
