"""Row-wise argmax of float32 matrices: parir.argmax with the row's dimension as a parallel
reduction (one block per row: each thread keeps the best (value, index) pair of its strided
elements, then the block combines the pairs), the sequential form (one thread per row, one pass
keeping the value and its index), torch.argmax, and a Triton kernel in the style of its
tutorials (one program per row, tl.argmax over a block holding the whole row), in the same run.

    python benchmarks/bench_argmax.py [--quick] [--out benchmarks/results]

Each implementation's indices are checked against torch.argmax before it is timed; times are
medians of CUDA-event timings after warm-up, and GB/s counts the matrix read once.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parir_torch as parir  # noqa: E402
from timing import cuda_time_ms, write_report  # noqa: E402

SHAPES = [(16384, 1024), (4096, 8192), (65536, 128)]


@parir.jit
def row_argmax(x, idx, N, M):
    parir.label('N')
    for i in range(N):
        parir.label('M')
        idx[i] = parir.argmax(x[i, :])


def implementations(x, N, M):
    """(name, run): run() returns the int64 indices of the rows' maxima."""
    idx = torch.empty(N, dtype=torch.int64, device="cuda")
    # A block per row, its threads over the row: 256, or fewer for short rows (at least a warp).
    tpb = min(256, max(32, 1 << (M - 1).bit_length()))
    parallel = parir.par({'N': parir.threads(N), 'M': parir.threads(tpb).reduce()})
    sequential = parir.par({'N': parir.threads(N).tpb(128)})

    def parir_run(spec):
        return lambda: (row_argmax(x, idx, N, M, opts=spec), idx)[1]

    return [(f"parir.argmax, parallel reduce ({tpb} threads per row)", parir_run(parallel)),
            ("parir.argmax, one thread per row", parir_run(sequential)),
            ("torch.argmax", lambda: torch.argmax(x, dim=1)),
            ("Triton, tl.argmax", _triton(x, N, M))]


def _triton(x, N, M):
    import triton
    import triton.language as tl

    @triton.jit
    def argmax_kernel(x_ptr, out_ptr, stride, M, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * stride + cols, mask=cols < M, other=-float("inf"))
        tl.store(out_ptr + row, tl.argmax(v, axis=0))

    out = torch.empty(N, dtype=torch.int64, device="cuda")
    block = triton.next_power_of_2(M)
    return lambda: (argmax_kernel[(N,)](x, out, x.stride(0), M, BLOCK=block), out)[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for N, M in SHAPES[:1] if args.quick else SHAPES:
        x = torch.rand(N, M, device="cuda", generator=gen)
        want = torch.argmax(x, dim=1)
        for name, run in implementations(x, N, M):
            try:
                got = run()
                torch.cuda.synchronize()
                if not torch.equal(got, want):
                    rows.append((N, M, name, None, f"wrong: {(got != want).sum().item()} rows"))
                    continue
                ms = cuda_time_ms(run)
                rows.append((N, M, name, ms, f"{x.numel() * 4 / 1e9 / (ms / 1e3):.0f} GB/s"))
            except Exception as e:  # a missing Triton, say: recorded, the rest still runs
                rows.append((N, M, name, None, f"failed: {type(e).__name__}: {e}"[:120]))
    lines = [f"# Row-wise argmax (float32) on {torch.cuda.get_device_name()} "
             f"(torch {torch.__version__})", "",
             "| shape | implementation | ms | bandwidth |", "|---|---|---|---|"]
    for N, M, name, ms, note in rows:
        lines.append(f"| {N}x{M} | {name} | {'' if ms is None else f'{ms:.3f}'} | {note} |")
    write_report(args.out, "argmax.md", lines)


if __name__ == "__main__":
    main()
