"""Slice statements and slice reductions, including the programs the Parir model is known by."""

import parir_torch as parir


@parir.jit
def sum_rows2(x, y, N, M):
    parir.label('N')
    parir.label('M')
    y[:] = parir.sum(x[:, :], axis=1)


@parir.jit
def sum_cols(x, y, N, M):
    parir.label('M')
    parir.label('N')
    y[:] = parir.sum(x[:, :], axis=0)


@parir.jit
def softmax(x, out, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        m = parir.max(x[i, :])
        parir.label('j')
        out[i, :] = parir.exp(x[i, :] - m)
        parir.label('j')
        s = parir.sum(out[i, :])
        parir.label('j')
        out[i, :] /= s


@parir.jit
def jacobi(A, B, T):
    for t in range(1, T):
        parir.label('i')
        parir.label('j')
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        parir.label('i')
        parir.label('j')
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


@parir.jit
def total(x, out, N):
    with parir.gpu:
        out[0] = 0.0
        parir.label('i')
        for i in range(N):
            out[0] += x[i]


@parir.jit
def total_slices(x, out):
    parir.label('i')
    out[0] = parir.sum(x[:])


@parir.jit
def floyd_warshall(path, N):
    for k in range(N):
        parir.label('i')
        for i in range(N):
            parir.label('j')
            path[i, :] = parir.min(path[i, :], path[i, k] + path[k, :])


@parir.jit
def strided_reverse(x, y):
    parir.label('i')
    y[:] = x[:0:-2] * 2.0 + x[1::2]


@parir.jit
def matrix_extremes(x, out):
    # Reductions over every dimension, min and max.
    parir.label('i')
    parir.label('j')
    out[0] = parir.max(x[:, :])
    parir.label('i')
    parir.label('j')
    out[1] = parir.min(x[:, :])
    parir.label('i')
    parir.label('j')
    out[2] = parir.prod(x[:2, :2])


@parir.jit
def slice_sum(x, out):
    parir.label('i')
    out[0] = parir.sum(x[:])


@parir.jit
def slice_prod(x, out):
    parir.label('i')
    out[0] = parir.prod(x[:])


@parir.jit
def slice_min(x, out):
    parir.label('i')
    out[0] = parir.min(x[:])


@parir.jit
def slice_max(x, out):
    parir.label('i')
    out[0] = parir.max(x[:])


@parir.jit
def slice_row_reduce(x, y, N, M):
    # Inside a parallel loop: the reduction accumulates into a local, then y[i] takes it.
    parir.label('i')
    for i in range(N):
        parir.label('j')
        y[i] = parir.sum(x[i, :]) - parir.max(x[i, :])
