"""Reductions and softmax at sizes that fill the GPU, next to torch and to the device-to-device
copy bandwidth measured in the same run.

    python benchmarks/bench_reductions.py [--out benchmarks/results]

Each kernel's output is checked against a float64 reference before it is timed. Times are
medians of CUDA-event timings after warm-up; GB/s counts the bytes each computation must move
at least once (inputs read, outputs written).
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parir_torch as parir  # noqa: E402
from timing import cuda_time_ms, write_report  # noqa: E402
from kernels import col_sums, row_max, softmax_rows, sum_rows_reduce, total_sum  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    device = torch.cuda.get_device_name()
    gen = torch.Generator(device="cuda").manual_seed(0)

    big = torch.empty(2 ** 28, device="cuda")  # 1 GiB
    dst = torch.empty_like(big)
    copy_ms = cuda_time_ms(lambda: dst.copy_(big))
    copy_gbps = 2 * big.numel() * 4 / 1e9 / (copy_ms / 1e3)
    del big, dst

    N, M = 16384, 8192  # 512 MiB of float32
    x = torch.rand(N, M, device="cuda", generator=gen) - 0.5
    rows = []

    def record(name, parir_fn, torch_fn, nbytes, out, ref):
        parir_fn()
        torch.cuda.synchronize()
        torch.testing.assert_close(out.double(), ref, rtol=1e-3, atol=1e-2)
        p_ms, t_ms = cuda_time_ms(parir_fn), cuda_time_ms(torch_fn)
        rows.append((name, p_ms, t_ms, nbytes / 1e9 / (p_ms / 1e3), nbytes / 1e9 / (t_ms / 1e3)))

    y = torch.zeros(N, device="cuda")
    spec = parir.par({"N": parir.threads(N), "M": parir.threads(1024).reduce()})
    record("row sums 16384x8192", lambda: (y.zero_(), sum_rows_reduce(x, y, N, M, opts=spec)),
           lambda: x.sum(1), x.numel() * 4, y, x.double().sum(1))

    ym = torch.zeros(N, device="cuda")
    spec = parir.par({"N": parir.threads(N), "M": parir.threads(1024)})
    record("row max 16384x8192", lambda: row_max(x, ym, N, M, opts=spec),
           lambda: torch.amax(x, 1), x.numel() * 4, ym, x.double().amax(1))

    yc = torch.zeros(M, device="cuda")
    R = 64
    partial = torch.empty(R, M, device="cuda")
    spec = parir.par({"R": parir.threads(R), "M": parir.threads(M)})
    record("column sums 16384x8192", lambda: col_sums(x, partial, yc, N, M, R, opts=spec),
           lambda: x.sum(0), x.numel() * 4, yc, x.double().sum(0))

    flat = x.view(-1)
    tot = torch.zeros(1, device="cuda")
    spec = parir.par({"i": parir.threads(2 ** 20).reduce()})
    record("full sum 2^27", lambda: (tot.zero_(), total_sum(flat, tot, flat.numel(), opts=spec)),
           lambda: flat.sum(), flat.numel() * 4, tot, flat.double().sum().reshape(1))

    out = torch.empty_like(x)
    spec = parir.par({"N": parir.threads(N), "M": parir.threads(1024)})
    record("softmax 16384x8192", lambda: softmax_rows(x, out, N, M, opts=spec),
           lambda: torch.softmax(x, 1), 2 * x.numel() * 4, out, torch.softmax(x.double(), 1))

    lines = [f"# Reductions on {device} (torch {torch.__version__})", "",
             f"Device-to-device copy (torch, 1 GiB): {copy_gbps:.0f} GB/s (read + write).", "",
             "| kernel (float32) | parir ms | torch ms | parir GB/s | torch GB/s | parir / copy bw | "
             "speed-up vs torch |", "|---|---|---|---|---|---|---|"]
    for name, p_ms, t_ms, p_bw, t_bw in rows:
        lines.append(f"| {name} | {p_ms:.3f} | {t_ms:.3f} | {p_bw:.0f} | {t_bw:.0f} | "
                     f"{p_bw / copy_gbps:.0%} | {t_ms / p_ms:.2f}x |")
    write_report(args.out, "reductions.md", lines)


if __name__ == "__main__":
    main()
