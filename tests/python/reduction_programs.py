"""Parallel reductions: one program per operation, a row-wise reduction into a tensor and into
a local, and a softmax built from three reduction-level loops."""

import parir_torch as parir


@parir.jit
def total_sum(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] += x[i]


@parir.jit
def total_prod(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] *= x[i]


@parir.jit
def total_min(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] = parir.min(out[0], x[i])


@parir.jit
def total_max(x, out, N):
    parir.label('i')
    for i in range(N):
        out[0] = max(x[i], out[0])


@parir.jit
def sum_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            y[i] += x[i, j]


@parir.jit
def row_max_local(x, y, N, M):
    parir.label('N')
    for i in range(N):
        m = x[i, 0]
        parir.label('M')
        for j in range(M):
            m = parir.max(m, x[i, j])
        y[i] = m


@parir.jit
def softmax_rows(x, out, N, M):
    parir.label('N')
    for i in range(N):
        m = x[i, 0]
        parir.label('M')
        for j in range(M):
            m = parir.max(m, x[i, j])
        s = 0.0
        parir.label('M')
        for j in range(M):
            out[i, j] = parir.exp(x[i, j] - m)
            s += out[i, j]
        parir.label('M')
        for j in range(M):
            out[i, j] = out[i, j] / s


@parir.jit
def total_in_gpu_block(x, out, N):
    with parir.gpu:
        out[0] = 0.0
        parir.label('i')
        for i in range(N):
            out[0] += x[i]


@parir.jit
def count_positive(x, out, N):
    parir.label('i')
    for i in range(N):
        if x[i] > 0:
            out[0] += 1
