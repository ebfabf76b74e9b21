"""The Python side of a cached call, on a CPU: the specialization key and the cache lookup.

    python3 benchmarks/call_path_cpu.py [--repeat 25]

A cached call of a jit function builds its key from the options and every argument, finds the
compiled program and launches it. This measures all of that but the launch, which is replaced by
a no-op, so it needs no GPU: CPU tensors stand in for CUDA tensors (`is_cuda` reads `is_cpu` in
this process), which costs the same attribute read. Each case is timed in batches; the best
batch gives the time per call. overheads.py measures the whole call, launch included, on a GPU.
"""

import argparse
import os
import sys
import timeit

import torch

torch.Tensor.is_cuda = torch._C.TensorBase.is_cpu  # CPU tensors take the CUDA tensors' path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import parir_torch as parir  # noqa: E402
from kernels import args1, args4, args16, axpy, rms_norm  # noqa: E402


def cases():
    n = 1024
    t = [torch.rand(n) for _ in range(16)]
    x2, w, out2 = torch.rand(8, 128), torch.rand(128), torch.rand(8, 128)
    spec = parir.par({"i": parir.threads(n)})
    return [
        ("1 tensor, 1 int", args1, (t[0], n), spec),
        ("4 tensors, 1 int", args4, (*t[:4], n), spec),
        ("16 tensors, 1 int", args16, (*t[:16], n), spec),
        ("axpy: 1 float, 2 tensors, 1 int", axpy, (2.5, t[0], t[1], n), spec),
        ("rms_norm: 3 tensors, 2 ints, 1 float", rms_norm, (x2, w, out2, 8, 128, 1e-6),
         parir.par({"N": parir.threads(8), "D": parir.threads(128).reduce()})),
    ]


def cached_call(fn, args, opts):
    """fn(*args, opts=opts) after compiling it, with the launch replaced by a no-op."""
    try:
        fn(*args, opts=opts)
    except parir.ParirError:  # the launch, without a GPU
        pass
    for compiled in fn._cache.values():
        compiled.launch = lambda call_args: None
    return lambda: fn(*args, opts=opts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--number", type=int, default=5000)
    a = parser.parse_args()
    for name, fn, args, opts in cases():
        call = cached_call(fn, args, opts)
        best = min(timeit.repeat(call, number=a.number, repeat=a.repeat)) / a.number
        assert fn.cache_size() == 1, "every timed call must find the compiled program"
        print(f"{name:40s} {best * 1e9:7.0f} ns per call")


if __name__ == "__main__":
    main()
