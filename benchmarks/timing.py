"""GPU timing shared by the benchmarks."""

import statistics

import torch


def cuda_time_ms(f, warmup=5, reps=30):
    """Median milliseconds of f() on the current stream, by CUDA events, after warm-up."""
    for _ in range(warmup):
        f()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(start, end):
        s.record()
        f()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, end))
