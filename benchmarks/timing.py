"""GPU timing and checking shared by the benchmarks.

Kernel times are CUDA-event times on the current stream, after warm-up, as the median of many
repetitions. When one run's data would fit in the L2 cache, callers pass several copies of the
inputs and the repetitions rotate among them, so that each run reads from device memory as it
would in a real program rather than from the cache.
"""

import math
import os
import statistics
import time

import torch


def l2_bytes():
    """The current GPU's L2 cache size in bytes (H100: 50 MB, H200: 60 MB)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 50 * 2 ** 20))


def copies_to_defeat_l2(bytes_per_copy, factor=3, limit=32):
    """How many input copies to rotate so that a run's inputs were evicted since their last
    use: enough copies to exceed `factor` times the L2, at most `limit` (one when a single copy
    is already larger than the cache)."""
    if bytes_per_copy <= 0:
        return 1
    return max(1, min(limit, math.ceil(factor * l2_bytes() / bytes_per_copy)))


def cuda_time_ms(f, warmup=5, reps=30):
    """Median milliseconds of f() on the current stream, by CUDA events, after warm-up."""
    return time_runs(lambda _: f(), [None], warmup=warmup, min_reps=reps, max_reps=reps)["median_ms"]


def time_runs(run, states, restore=None, warmup=2, target_s=0.25, min_reps=5, max_reps=100):
    """Times run(state) by CUDA events, rotating over `states`.

    Warm-up runs come first (compilation and module loading stay out of the numbers); one more
    run, synchronized, estimates the time, which sets the repetitions so that timing takes about
    `target_s` (between min_reps and max_reps). Each repetition records an event pair around
    run(state) alone; restore(state), when given, puts back inputs the run mutated and is
    issued after the end event, so it is not timed and that state's next use is a full
    rotation later. Returns the median, quartiles and count, in milliseconds."""
    n = len(states)
    for i in range(warmup):
        run(states[i % n])
        if restore:
            restore(states[i % n])
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run(states[warmup % n])
    torch.cuda.synchronize()
    estimate_s = max(time.perf_counter() - t0, 1e-6)
    if restore:
        restore(states[warmup % n])
    reps = int(min(max_reps, max(min_reps, target_s / estimate_s)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for r in range(reps):
        state = states[(warmup + 1 + r) % n]
        starts[r].record()
        run(state)
        ends[r].record()
        if restore:
            restore(state)
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {"median_ms": statistics.median(times), "p25_ms": q[0], "p75_ms": q[2], "reps": reps}


def host_time_us(f, calls=10000, reps=5, warmup_calls=500):
    """Host overhead of f as wall time per call over `calls` back-to-back calls, synchronized
    once at the end; median over `reps` such batches, in microseconds.

    f must launch a kernel so small that the GPU finishes it faster than the host can issue
    the next one: the GPU then never is the bottleneck, its queue stays short, and the wall
    time per call is what the host spends per call (argument handling, checks, the launch)."""
    for _ in range(warmup_calls):
        f()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(per_call)


def copy_bandwidth_gbps(nbytes=2 ** 30):
    """Device-to-device copy bandwidth (bytes read plus bytes written per second, in GB/s) of a
    torch copy of `nbytes`: the practical memory ceiling of this GPU."""
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)
    ms = time_runs(lambda _: dst.copy_(src), [None], warmup=3, min_reps=20, max_reps=50)["median_ms"]
    return 2 * nbytes / 1e9 / (ms / 1e3)


def relative_error(out, ref):
    """||out - ref|| / ||ref|| in float64; inf when out has a NaN (an element not written) or a
    different shape."""
    if tuple(out.shape) != tuple(ref.shape):
        return math.inf
    o = out.detach().to(device=ref.device, dtype=torch.float64)
    if torch.isnan(o).any():
        return math.inf
    r = ref.detach().to(torch.float64)
    denom = torch.linalg.vector_norm(r).item()
    diff = torch.linalg.vector_norm(o - r).item()
    return diff / denom if denom > 0 else diff


def write_report(out_dir, filename, lines):
    """Prints a markdown report and writes it to out_dir/filename."""
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, filename), "w") as f:
        f.write(text)
