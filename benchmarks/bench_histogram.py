"""Histograms by atomic updates, with few bins (heavy contention) and many (little), next to
torch.histc, torch.bincount and a Triton kernel written as Triton's tutorials write one.

    python benchmarks/bench_histogram.py [--quick] [--out benchmarks/results]

x holds 2^26 float32 values uniform in [0, 1) (--quick: 2^20); value x[i] falls in bin
min(int(x[i] * B), B - 1) of B bins, B from 16 (the threads of a warp all collide) to 2^20
(collisions are rare). Implementations:

* parir, one thread per element: `kernels.histogram`, one `parir.atomic_add` per element;
* parir, grid-stride: the same function with 2^18 threads, each counting N / 2^18 elements;
* parir, per-block rows: `kernels.histogram_blocks`, each of 1024 blocks counting a contiguous
  chunk into a row of its own, then a kernel summing the rows (B <= 4096: the rows are
  1024 * B counts);
* torch.histc(x, B, 0, 1) (float counts), and torch.bincount of the same bins computed by torch
  (the index computation included);
* Triton: one program per 1024 elements, `tl.atomic_add` of 1 per element.

Every implementation's counts are checked against torch.bincount before it is timed; times are
medians of CUDA-event timings after warm-up (timing.py), and
each timed run zeroes its histogram (and rows) first, as a caller would.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parir_torch as parir  # noqa: E402
from kernels import histogram, histogram_blocks  # noqa: E402
from timing import cuda_time_ms, write_report  # noqa: E402

BINS = [16, 256, 4096, 65536, 2 ** 20]
BLOCKS = 1024  # rows of histogram_blocks


def uses_rows(n, bins):
    """Whether the per-block variant runs: its rows hold BLOCKS * bins counts."""
    return bins <= 4096 and n % BLOCKS == 0


def parir_calls(x, hist, partial, n, bins):
    """(name, function, arguments, options) of each parir implementation: what the benchmark runs
    and what CI compiles (on meta tensors). `partial` holds the rows, when uses_rows()."""
    calls = [("parir, one thread per element", histogram, [x, hist, n, bins],
              parir.par({'i': parir.threads(n)})),
             ("parir, grid-stride over 2^18 threads", histogram, [x, hist, n, bins],
              parir.par({'i': parir.threads(min(n, 2 ** 18))}))]
    if uses_rows(n, bins):
        calls.append((f"parir, per-block rows ({BLOCKS} blocks)", histogram_blocks,
                      [x, partial, hist, n, bins, BLOCKS],
                      parir.par({'P': parir.threads(BLOCKS), 'T': parir.threads(1024),
                                 'B': parir.threads(bins)})))
    return calls


def implementations(x, n, bins):
    """(name, make): make() returns (run, counts), where run() computes a histogram and counts()
    returns the histogram of the last run."""
    hist = torch.empty(bins, dtype=torch.int32, device="cuda")
    partial = (torch.empty(BLOCKS, bins, dtype=torch.int32, device="cuda")
               if uses_rows(n, bins) else None)

    def parir_run(fn, args, opts):
        def run():
            # The counts start at zero: the histogram's, or the rows of the per-block variant
            # (whose second kernel writes every bin of the histogram).
            (partial if fn is histogram_blocks else hist).zero_()
            fn(*args, opts=opts)
        return lambda: (run, lambda: hist)

    out = [(name, parir_run(fn, args, opts))
           for name, fn, args, opts in parir_calls(x, hist, partial, n, bins)]
    out += [("torch.histc", lambda: _torch(lambda: torch.histc(x, bins, 0, 1))),
            ("torch.bincount", lambda: _torch(lambda: torch.bincount(
                (x * bins).long().clamp_(max=bins - 1), minlength=bins))),
            ("Triton, tl.atomic_add", lambda: _triton(x, n, bins))]
    return out


def _torch(f):
    """A torch function that returns a new tensor each run, as (run, counts)."""
    last = [None]

    def run():
        last[0] = f()

    return run, lambda: last[0]


def _triton(x, n, bins):
    import triton
    import triton.language as tl

    @triton.jit
    def histogram_kernel(x_ptr, hist_ptr, n, bins, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + offs, mask=mask, other=0.0)
        b = tl.minimum((v * bins).to(tl.int32), bins - 1)
        tl.atomic_add(hist_ptr + b, 1, mask=mask)

    hist = torch.empty(bins, dtype=torch.int32, device="cuda")
    grid = (triton.cdiv(n, 1024),)
    return (lambda: (hist.zero_(), histogram_kernel[grid](x, hist, n, bins, BLOCK=1024)),
            lambda: hist)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    n = 2 ** 20 if args.quick else 2 ** 26
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.rand(n, device="cuda", generator=gen)
    rows = []
    for bins in BINS:
        want = torch.bincount((x * bins).long().clamp(max=bins - 1), minlength=bins)
        for name, make in implementations(x, n, bins):
            try:
                run, counts = make()
                run()  # zeroes its histogram first: a run that computed nothing fails the check
                torch.cuda.synchronize()
                got = counts().long()
                if not torch.equal(got, want):
                    rows.append((bins, name, None, f"wrong: {(got != want).sum().item()} bins "
                                                   f"differ"))
                    continue
                ms = cuda_time_ms(run)
                rows.append((bins, name, ms, f"{n / ms / 1e6:.1f} G elements/s"))
            except Exception as e:  # a missing Triton, say: recorded, the rest still runs
                rows.append((bins, name, None, f"failed: {type(e).__name__}: {e}"[:120]))
    lines = [f"# Histograms of {n} float32 values on {torch.cuda.get_device_name()} "
             f"(torch {torch.__version__})", "",
             "| bins | implementation | ms | throughput |", "|---|---|---|---|"]
    for bins, name, ms, note in rows:
        lines.append(f"| {bins} | {name} | {'' if ms is None else f'{ms:.3f}'} | {note} |")
    write_report(args.out, "histogram.md", lines)


if __name__ == "__main__":
    main()
