"""Data-parallel least squares with parir kernels on every rank's own GPU.

Each rank holds its shard of the rows of X and y, computes the gradient of
0.5 * ||X w - y||^2 on its shard with two parir kernels (a row-wise residual, a column-wise
reduction), the ranks sum their gradients with an NCCL all-reduce, and each applies the same
step with a third parir kernel. The weights are then compared with a float64 reference run on
all rows, on every rank.

    torchrun --standalone --nproc-per-node=2 examples/distributed/allreduce_gradients.py

Each rank prints `rank R on cuda:R: OK` (or raises); the exit status is torchrun's. Where it
cannot run (no torchrun, no GPU for each rank) it says why in one line and exits with 0.
"""

import os
import sys

import torch
import torch.distributed as dist

import parir_torch as parir

ROWS_PER_RANK, COLS = 1000, 77  # not multiples of 32
STEPS, LEARNING_RATE = 20, 10.0


@parir.jit
def residual(X, w, y, r, N, D):
    parir.label("N")
    for i in range(N):
        s = 0.0
        parir.label("D")
        for j in range(D):
            s += X[i, j] * w[j]
        r[i] = s - y[i]


@parir.jit
def gradient(X, r, g, N, D):
    parir.label("D")
    for j in range(D):
        parir.label("N")
        for i in range(N):
            g[j] += X[i, j] * r[i]


@parir.jit
def descend(w, g, scale, D):
    parir.label("D")
    for j in range(D):
        w[j] = w[j] - scale * g[j]


def problem(world_size, seed=0):
    """The whole problem, made identically on every rank: X and y of all ranks' rows, with y
    close to X @ w_true for weights w_true in [-1, 1)."""
    gen = torch.Generator().manual_seed(seed)
    rows = ROWS_PER_RANK * world_size
    X = (torch.rand(rows, COLS, generator=gen, dtype=torch.float64) - 0.25) / COLS ** 0.5
    w_true = torch.rand(COLS, generator=gen, dtype=torch.float64) * 2 - 1
    y = X @ w_true + 0.01 * torch.randn(rows, generator=gen, dtype=torch.float64)
    return X, y


def reference(X, y, steps, scale):
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    for _ in range(steps):
        w -= scale * (X.T @ (X @ w - y))
    return w


def why_it_cannot_run():
    """One line saying why this machine cannot run the example, or None when it can."""
    if "RANK" not in os.environ:
        return ("allreduce_gradients.py runs one process per GPU: start it with "
                "torchrun --standalone --nproc-per-node=2 examples/distributed/"
                "allreduce_gradients.py")
    if not torch.cuda.is_available():
        return ("allreduce_gradients.py needs an NVIDIA GPU for each rank, and PyTorch finds "
                "no CUDA GPU here")
    if int(os.environ["LOCAL_RANK"]) >= torch.cuda.device_count():
        return (f"allreduce_gradients.py needs a GPU for each rank: rank "
                f"{os.environ['LOCAL_RANK']} has none ({torch.cuda.device_count()} GPU(s) here)")
    return None


def main():
    why = why_it_cannot_run()
    if why is not None:
        print(why, file=sys.stderr)
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)

    X_all, y_all = problem(world)
    shard = slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)
    X = X_all[shard].float().to(device)
    y = y_all[shard].float().to(device)
    n, d = X.shape
    scale = LEARNING_RATE / (ROWS_PER_RANK * world)  # a step along the mean over all rows
    w = torch.zeros(d, device=device)
    r = torch.empty(n, device=device)
    g = torch.empty(d, device=device)
    rows = parir.par({"N": parir.threads(n), "D": parir.threads(128).reduce()})
    cols = parir.par({"D": parir.threads(d), "N": parir.threads(256).reduce()})
    step = parir.par({"D": parir.threads(d)})
    for _ in range(STEPS):
        r.fill_(float("nan"))
        residual(X, w, y, r, n, d, opts=rows)
        g.zero_()
        gradient(X, r, g, n, d, opts=cols)
        dist.all_reduce(g)  # sum over ranks, on this rank's current stream
        descend(w, g, scale, d, opts=step)

    expected = reference(X_all, y_all, STEPS, scale)
    got = w.double().cpu()
    err = (got - expected).abs().max().item()
    assert torch.isfinite(got).all(), f"rank {rank}: non-finite weights"
    assert err <= 1e-4 * expected.abs().max().item(), \
        f"rank {rank}: max |w - reference| = {err:.3g}"
    # Every rank ends with the same weights: compare with rank 0's.
    first = w.clone()
    dist.broadcast(first, src=0)
    assert torch.equal(first, w), f"rank {rank}: weights differ from rank 0's"
    assert w.device == device and g.device == device
    print(f"rank {rank} on cuda:{local_rank}: OK (max |w - reference| = {err:.2g})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
