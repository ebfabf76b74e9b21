"""Row-wise inclusive prefix sums (cumsum along the last dimension) of float32 matrices, next to
torch.cumsum and a Triton kernel written as Triton's tutorials write one (tl.cumsum).

    python benchmarks/bench_scans.py [--quick] [--out benchmarks/results]

Shapes from many short rows to few long ones. Implementations:

* parir: `row_cumsum`, `out[i, :] = parir.cumsum(x[i, :])` with the rows on blocks and the
  row a parallel scan (`.scan()`): a block's threads walk the row in tiles of blockDim.x
  elements, scanning each tile with warp shuffles and carrying the tiles' total;
* parir with each row over several blocks, for shapes with too few rows to fill the GPU: the
  same function with `.scan()` asking for more threads than a block holds, so that each block
  takes a chunk of the row (one kernel for the chunks' totals, one to scan them);
* torch.cumsum(x, 1);
* Triton: one program per row, tl.cumsum over chunks of BLOCK elements with the running total
  of the chunks before carried in a register.

Each output is checked against a float64 torch.cumsum before it is timed (tolerance growing
with the row length); times are medians of CUDA-event timings after warm-up (timing.py);
GB/s counts the input read and the output written once.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parir_torch as parir  # noqa: E402
from timing import cuda_time_ms, write_report  # noqa: E402

SHAPES = [(65536, 256), (16384, 1024), (4096, 4096), (256, 65536), (16, 1 << 20)]
QUICK_SHAPES = [(1024, 256), (64, 4096)]


@parir.jit
def row_cumsum(x, out, N):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        out[i, :] = parir.cumsum(x[i, :])


def parir_call(x, out):
    """The parir benchmark call, as (args, opts): one block per row, scanning it with up to
    1024 threads (fewer for short rows, so that a tile is not mostly idle)."""
    n, m = x.shape
    tpb = min(1024, max(32, 1 << (m - 1).bit_length()))
    return [x, out, n], parir.par({'i': parir.threads(n), 'j': parir.threads(tpb).scan()})


def parir_chunked_call(x, out, blocks_wanted=264):
    """The same function with each row split over several blocks (a chunk each, scanned in two
    kernels), enough to give the GPU about `blocks_wanted` blocks; None when one block per row
    already gives that many."""
    n, m = x.shape
    per_row = min(-(-blocks_wanted // n), -(-m // 1024))
    if per_row < 2:
        return None
    return [x, out, n], parir.par({'i': parir.threads(n),
                                   'j': parir.threads(per_row * 1024).scan()})


def _triton(x, out):
    import triton
    import triton.language as tl

    @triton.jit
    def row_cumsum_kernel(x_ptr, out_ptr, M, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        carry = tl.zeros((), dtype=tl.float32)
        for start in range(0, M, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < M
            v = tl.load(x_ptr + row * M + offs, mask=mask, other=0.0)
            tl.store(out_ptr + row * M + offs, tl.cumsum(v, axis=0) + carry, mask=mask)
            carry += tl.sum(v, axis=0)

    n, m = x.shape
    block = min(triton.next_power_of_2(m), 4096)
    return lambda: row_cumsum_kernel[(n,)](x, out, m, BLOCK=block)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for n, m in QUICK_SHAPES if args.quick else SHAPES:
        x = torch.rand(n, m, device="cuda", generator=gen) - 0.5
        want = torch.cumsum(x.double(), 1)
        out = torch.empty_like(x)
        pargs, opts = parir_call(x, out)
        chunked = parir_chunked_call(x, out)
        # Triton's entry makes its launcher (defining the kernel once) inside the try below.
        impls = [("parir, parallel scan", lambda: row_cumsum(*pargs, opts=opts))]
        if chunked:
            impls.append((f"parir, {chunked[1].parallelize['j'].nthreads // 1024} blocks per row",
                          lambda: row_cumsum(*chunked[0], opts=chunked[1])))
        impls += [
                 ("torch.cumsum", lambda: torch.cumsum(x, 1, out=out)),
                 ("Triton, tl.cumsum", lambda: _triton(x, out))]
        for name, make in impls:
            try:
                run = make() if name.startswith("Triton") else make
                out.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                tol = 1e-5 * max(1.0, m ** 0.5)
                torch.testing.assert_close(out.double(), want, rtol=tol, atol=tol)
                ms = cuda_time_ms(run)
                rows.append((n, m, name, ms, f"{2 * x.numel() * 4 / 1e9 / (ms / 1e3):.0f} GB/s"))
            except Exception as e:  # a missing Triton, say: recorded, the rest still runs
                rows.append((n, m, name, None, f"failed: {type(e).__name__}: {e}"[:120]))
    lines = [f"# Row-wise cumsum (float32) on {torch.cuda.get_device_name()} "
             f"(torch {torch.__version__})", "",
             "| rows x length | implementation | ms | bandwidth |", "|---|---|---|---|"]
    for n, m, name, ms, note in rows:
        lines.append(f"| {n}x{m} | {name} | {'' if ms is None else f'{ms:.3f}'} | {note} |")
    write_report(args.out, "scans.md", lines)


if __name__ == "__main__":
    main()
