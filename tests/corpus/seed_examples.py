"""The examples of the Parir README and of its successor's API reference, ported literally.

The code is the documents' own (two-space indentation and all), with ``import parir_torch as
parir`` for ``import parir``; what the documents leave out (sizes, data, the call) is filled in
as their text describes it. The references are torch's or NumPy's.
"""

import os

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive

HERE = os.path.dirname(os.path.abspath(__file__))


# ----- Parir README, "Example": the row sums, outer loop parallel ----------------------------

@parir.jit
def sum_rows(x, y, N, M):
  parir.label('N')
  for i in range(N):
    for j in range(M):
      y[i] += x[i,j]


def case_readme_sum_rows(rng, device):
    N, M = 1000, 17
    x = nonzero((N, M), rng, device=device)
    y = nonzero(N, rng, device=device)   # accumulated into, so its initial value counts
    ref = torch.from_numpy(f64(y) + f64(x).sum(1))
    p = {'N': parir.threads(N)}
    return dict(fn=sum_rows, args=[x, y, N, M], spec=p, check=[(y, ref)])


# ----- Parir README, "Parallel Reduction": the inner loop a parallel reduction ----------------

@parir.jit
def sum_rows_reduce(x, y, N, M):
  parir.label('N')
  for i in range(N):
    parir.label('M')
    for j in range(M):
      y[i] += x[i,j]


def case_readme_sum_rows_reduce(rng, device):
    # M larger than a block: the reduction spans blocks and combines atomically into y[i].
    N, M = 3, 4097
    x = nonzero((N, M), rng, device=device)
    y = nonzero(N, rng, device=device)
    ref = torch.from_numpy(f64(y) + f64(x).sum(1))
    p = {'N': parir.threads(N), 'M': parir.threads(M).reduce()}
    return dict(fn=sum_rows_reduce, args=[x, y, N, M], spec=p, check=[(y, ref)])


# ----- Parir README, "Slicing": the row sums as a slice reduction ------------------------------

@parir.jit
def sum_rows_slice(x, y, N, M):
  parir.label('N')
  parir.label('M')
  y[:] = parir.sum(x[:,:], axis=1)


def case_readme_sum_rows_slice(rng, device):
    N, M = 33, 1000
    x = nonzero((N, M), rng, device=device)
    y = poison(N, device=device)
    ref = torch.from_numpy(f64(x).sum(1))
    p = {'N': parir.threads(N), 'M': parir.threads(M)}
    return dict(fn=sum_rows_slice, args=[x, y, N, M], spec=p, check=[(y, ref)])


# ----- Parir README, "Slicing": a reduction over all dimensions --------------------------------

@parir.jit
def sum_all_slice(x, y, N, M):
  parir.label('N')
  parir.label('M')
  y[0] = parir.sum(x[:,:])


def case_readme_sum_all_slice(rng, device):
    N, M = 31, 33
    x = nonzero((N, M), rng, device=device)
    y = poison(1, device=device)
    ref = torch.from_numpy(np.array([f64(x).sum()]))
    p = {'N': parir.threads(N), 'M': parir.threads(M)}
    return dict(fn=sum_all_slice, args=[x, y, N, M], spec=p, check=[(y, ref)])


# ----- Parir README, "Sequential Code on the GPU": the one-dimensional sum ---------------------
# The README names it `sum`; kept, though it hides Python's builtin in this module.

@parir.jit
def sum(x, y, N):
  with parir.gpu:
    y[0] = 0.0
    parir.label('N')
    for i in range(N):
      y[0] += x[i]


def case_readme_gpu_sum(rng, device):
    N = 4097
    x = nonzero(N, rng, device=device)
    y = poison(1, device=device)
    ref = torch.from_numpy(np.array([f64(x).sum()]))
    # A reduction, as the successor's reference spells out for this loop.
    p = {'N': parir.threads(N).reduce()}
    return dict(fn=sum, args=[x, y, N], spec=p, check=[(y, ref)])


# ----- Parir README, "Working Around Limitations": print_compiled and compile_string -----------

def _parallelize(p):
    # The README passes `opts=parir.parallelize(p)` to print_compiled and compile_string.
    return parir.parallelize(p)


def _run_compile_string(case):
    x, y, N, M = case["args"]
    p = case["spec"]
    code = parir.print_compiled(sum_rows_reduce, [x, y, N, M], opts=parir.parallelize(p))
    fn = parir.compile_string("sum_rows_reduce", code, opts=parir.parallelize({}))
    fn(x, y, N, M)


def case_readme_print_compiled(rng, device):
    N, M = 32, 1000
    x = nonzero((N, M), rng, device=device)
    y = nonzero(N, rng, device=device)
    ref = torch.from_numpy(f64(y) + f64(x).sum(1))
    p = {'N': parir.threads(32), 'M': parir.threads(128).reduce()}
    return dict(fn=sum_rows_reduce, args=[x, y, N, M], spec=p, check=[(y, ref)],
                opts=_parallelize, run=_run_compile_string)


# ----- ParPy API reference, LoopPar.reduce: a reduction into one element -----------------------

@parir.jit
def accumulate(x, y, N):
  parir.label('N')
  for i in range(N):
    x[0] += y[i]


def case_api_reduce(rng, device):
    N = 1000
    x = nonzero(1, rng, dtype=torch.float64, device=device)
    y = nonzero(N, rng, dtype=torch.float64, device=device)
    ref = torch.from_numpy(f64(x) + f64(y).sum())
    p = {'N': parir.threads(N).reduce()}
    return dict(fn=accumulate, args=[x, y, N], spec=p, check=[(x, ref)])


# ----- ParPy API reference, external: an intrinsic and a function from a user's header --------

@parir.external("__fdividef", parir.CompileBackend.Cuda, parir.Target.Device)
def fast_divide(a: parir.float32, b: parir.float32) -> parir.float32:
    return a / b


@parir.external("smoothstep", parir.CompileBackend.Cuda, parir.Target.Device,
                header="smooth.cuh")
def smoothstep(e0: float, e1: float, v: parir.float32) -> parir.float32:
    # What seq=True runs; the GPU runs smooth.cuh's.
    t = min(max((v - e0) / (e1 - e0), 0.0), 1.0)
    return t * t * (3.0 - 2.0 * t)


@parir.jit
def parir_normalize_smooth(x, y, out, N):
    parir.label('N')
    for i in range(N):
        out[i] = smoothstep(0.0, 2.0, fast_divide(x[i], y[i]))


def _with_includes(p):
    opts = parir.par(p)
    opts.includes = [HERE]
    return opts


def case_api_external(rng, device):
    N = 1000
    x = nonzero(N, rng, device=device, hi=2.0)
    y = positive(N, rng, device=device, lo=0.5, hi=1.5)
    out = poison(N, device=device)
    t = np.clip(f64(x) / f64(y) / 2.0, 0.0, 1.0)
    ref = torch.from_numpy(t * t * (3.0 - 2.0 * t))
    p = {'N': parir.threads(N)}
    # __fdividef is approximate (2 ulp): a float32 tolerance with some room.
    return dict(fn=parir_normalize_smooth, args=[x, y, out, N], spec=p, check=[(out, ref)],
                opts=_with_includes, tol=(1e-4, 1e-5))


# ----- ParPy API reference, LoopPar.tpb: a block size other than the default -------------------

@parir.jit
def parir_scale_rows(x, s, out, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        for j in range(M):
            out[i, j] = x[i, j] * s[i]


def case_api_tpb(rng, device):
    N, M = 33, 4097
    x = nonzero((N, M), rng, device=device)
    s = nonzero(N, rng, device=device)
    out = poison((N, M), device=device)
    ref = torch.from_numpy(f64(x) * f64(s)[:, None])
    p = {'N': parir.threads(N), 'M': parir.threads(M).tpb(256)}
    return dict(fn=parir_scale_rows, args=[x, s, out, N, M], spec=p, check=[(out, ref)])


# ----- ParPy API reference, CompileOptions: thread block clusters for a reduction --------------

@parir.jit
def parir_row_softmax(x, out, N, M):
    parir.label('N')
    for i in range(N):
        m = -parir.inf
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


def _clusters(p):
    opts = parir.par(p)
    opts.use_cuda_thread_block_clusters = True
    opts.max_thread_blocks_per_cluster = 16
    return opts


def case_api_clusters(rng, device):
    # Rows of 4097 over 4096 threads: a reduction into a local spanning 4 blocks, which the
    # reference allows with clusters.
    N, M = 3, 4097
    x = nonzero((N, M), rng, device=device, hi=4.0)
    out = poison((N, M), device=device)
    e = np.exp(f64(x) - f64(x).max(1, keepdims=True))
    ref = torch.from_numpy(e / e.sum(1, keepdims=True))
    p = {'N': parir.threads(N), 'M': parir.threads(4096).reduce()}
    return dict(fn=parir_row_softmax, args=[x, out, N, M], spec=p, check=[(out, ref)],
                opts=_clusters)


# ----- ParPy API reference, CompileOptions: CUDA graphs for a host loop of launches -----------

@parir.jit
def parir_relax(x, y, T, N):
    for t in range(T):
        parir.label('N')
        for i in range(1, N - 1):
            y[i] = 0.5 * (x[i - 1] + x[i + 1])
        parir.label('N')
        for i in range(1, N - 1):
            x[i] = y[i]


def _graphs(p):
    opts = parir.par(p)
    opts.use_cuda_graphs = True
    return opts


def case_api_cuda_graphs(rng, device):
    N, T = 33, 20
    x = nonzero(N, rng, dtype=torch.float64, device=device)
    y = nonzero(N, rng, dtype=torch.float64, device=device)
    a, b = f64(x), f64(y)
    for _ in range(T):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a[1:-1] = b[1:-1]
    return dict(fn=parir_relax, args=[x, y, T, N], spec={'N': parir.threads(N - 2)},
                opts=_graphs, check=[(x, torch.from_numpy(a)), (y, torch.from_numpy(b))])


# ----- ParPy API reference, CompileOptions: 32-bit integers and floats the compiler chooses ---

@parir.jit
def parir_ramp(x, out, scale, N):
    parir.label('N')
    for i in range(N):
        out[i] = x[i] * scale + i / N


def _small_types(p):
    opts = parir.par(p)
    opts.force_int_size = parir.ElemSize.I32
    opts.force_float_size = parir.ElemSize.F32
    return opts


def case_api_force_sizes(rng, device):
    N = 1000
    x = nonzero(N, rng, device=device)
    out = poison(N, device=device)
    ref = f64(x) * 0.75 + np.arange(N) / N
    return dict(fn=parir_ramp, args=[x, out, 0.75, N], spec={'N': parir.threads(N)},
                opts=_small_types, check=[(out, torch.from_numpy(ref))])


# ----- Parir README, "Sequential Code on the GPU": the version the compiler rejects ------------
# Not a program of CASES: the README shows it to explain the error, since `y[0] = 0.0` would
# run on the host, which cannot touch GPU data.

@parir.jit
def sum_host_init(x, y, N):
  y[0] = 0.0
  parir.label('N')
  for i in range(N):
    y[0] += x[i]


CASES = {
    "readme_sum_rows": case_readme_sum_rows,
    "readme_sum_rows_reduce": case_readme_sum_rows_reduce,
    "readme_sum_rows_slice": case_readme_sum_rows_slice,
    "readme_sum_all_slice": case_readme_sum_all_slice,
    "readme_gpu_sum": case_readme_gpu_sum,
    "readme_print_compiled": case_readme_print_compiled,
    "api_reduce": case_api_reduce,
    "api_external": case_api_external,
    "api_tpb": case_api_tpb,
    "api_clusters": case_api_clusters,
    "api_cuda_graphs": case_api_cuda_graphs,
    "api_force_sizes": case_api_force_sizes,
}
