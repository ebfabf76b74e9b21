"""Programs as users write them: helpers that take a row of a tensor (x[i], KE[0]) and index it,
helpers with statements in conditional expressions, one name reused for unrelated values (an
int index in one branch and a float in another; a loop variable in one loop and a local in
another), NumPy scalars, constants computed at the top of the function (`1 - beta1 ** t`,
`1 / math.sqrt(d)`, `half = d // 2` as a slice bound), NumPy's names (np.pi, np.exp,
np.float32), float('-inf'), 64-bit hash constants, bytes used as indices.
Each program runs with seq=True and, on the CPU, through the compiler and NVRTC; on the GPU its
result is compared with the plain-Python run."""

import math
import warnings

import numpy as np
import pytest
import torch

import parir_torch as parir
from parir_torch import _C


@parir.jit
def add_inplace(x, y, M):
    parir.label("j")
    for j in range(M):
        x[j] += y[j]


@parir.jit
def add_rows(x, y, N, M):
    parir.label("i")
    for i in range(N):
        add_inplace(x[i], y[i], M)


def energy(pos, vel, KE, PE, N):
    # The caller passes rows of 2-D tensors: KE[0] here is an element of a row.
    parir.label("n")
    for n in range(N):
        KE[0] += 0.5 * vel[n] * vel[n]
    parir.label("n")
    for n in range(N):
        PE[0] += pos[n] * pos[n]


@parir.jit
def step_energies(pos, vel, KE, PE, N):
    energy(pos, vel, KE[0], PE[1], N)


@parir.jit
def shift_plane(img, k, N, M):
    parir.label("i")
    for i in range(N):
        scale_row(img[k, i, :], M)


def scale_row(row, M):
    for j in range(M):
        row[j] = row[j] * 2.0 + 1.0


def bump(v):
    w = v * 2.0
    if w > 1.0:
        w = 1.0
    return w + 0.5


@parir.jit
def pick(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = x[i] if x[i] < 0.0 else bump(x[i])


@parir.jit
def pick_logical(x, y, N):
    parir.label("i")
    for i in range(N):
        # bump() runs only where x[i] > 0 (and where it does not, for `or`), as in Python.
        a = x[i] > 0.0 and bump(x[i]) > 1.0
        b = x[i] > 0.0 or bump(x[i]) > 1.0
        y[i] = parir.float32(a) + 2.0 * parir.float32(b)


@parir.jit
def gather_or_zero(G, xyz, out, N):
    parir.label("i")
    for i in range(N):
        if xyz[i] >= 0:
            x = xyz[i] // 4
            out[i] = G[x]
        else:
            x = 0.0
            out[i] = x


@parir.jit
def diagonals(D, N):
    # j is a local in the first loop and a loop variable in the second.
    parir.label("i")
    for i in range(1, N):
        j = N - i
        D[i, j] = D[i - 1, j] + 1.0
    parir.label("i")
    for i in range(N):
        for j in range(1, N):
            D[i, j] = D[i, j] + D[i, j - 1] * 0.5


@parir.jit
def scale_by(x, y, g, N):
    parir.label("i")
    for i in range(N):
        y[i] = g * x[i] + g


@parir.jit
def row_sums(x, y, N):
    parir.label("i")
    for i in range(N):
        y[i] = parir.sum(x[i, :])


@parir.jit
def bias_corrected(m, m_hat, n, beta1, step, hs):
    # AdamW's bias correction and attention's scale, computed once at the top from scalars.
    correction = 1.0 - beta1 ** step
    scale = 1.0 / math.sqrt(hs)
    half = hs // 2
    parir.label("i")
    for i in range(n):
        m_hat[i] = m[i] / correction * scale + half


@parir.jit
def swiglu(xw, h):
    n_rows, two_d = xw.shape
    d = two_d // 2
    parir.label("row")
    for row in range(n_rows):
        parir.label("col")
        h[row, :] = xw[row, :d] * parir.sigmoid(xw[row, :d]) * xw[row, d:]


@parir.jit
def splitmix64(state, out, N):
    parir.label("i")
    for i in range(N):
        z = state[i] + 0x9E3779B97F4A7C15
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB
        out[i] = z ^ (z >> 31)


@parir.jit
def byte_lookup(table, data, out, N):
    parir.label("i")
    for i in range(N):
        out[i] = table[data[i]]


@parir.jit
def numpy_names(x, out, N):
    parir.label("i")
    for i in range(N):
        best = float("-inf")
        if x[i] > best:
            best = np.float32(x[i] * np.pi)
        out[i] = np.exp(best / 8) + (0.0 if x[i] < np.inf else 1.0)


@parir.jit
def julia_steps(zr0, zi0, out, N):
    # The update as Python writes it: both new values from the old ones.
    parir.label("i")
    for i in range(N):
        zr = zr0[i]
        zi = zi0[i]
        for k in range(6):
            zr, zi = zr * zr - zi * zi + 0.25, 2.0 * zr * zi - 0.5
        out[i] = zr + zi


@parir.jit
def swap_columns(x, N):
    parir.label("i")
    for i in range(N):
        x[i, 0], x[i, 2] = x[i, 2], x[i, 0]
        a, b = x[i, 1], x[i, 3]
        a, b = b, a
        x[i, 1], x[i, 3] = a, b


@parir.jit
def value_range(r, g, b, out, N):
    # colorsys' rgb_to_hsv starts so.
    parir.label("i")
    for i in range(N):
        out[i] = max(r[i], g[i], b[i]) - min(r[i], g[i], b[i], 0.25)


@parir.jit
def rounded(x, out, N):
    parir.label("i")
    for i in range(N):
        out[i] = round(x[i] * 10.0) + round(2.5)


@parir.jit
def unsigned_compare(a, b, out, N):
    parir.label("i")
    for i in range(N):
        out[i] = 1 if a[i] > b[i] else (2 if a[i] == b[i] else 0)


@parir.jit
def row_means_and_count(x, y, count, N, M):
    # The loop over rows reduces too (count[0] += 1 beside the inner loop: an atomic update
    # by each block), and each row's sum starts over in s.
    parir.label("n")
    for n in range(N):
        s = 0.0
        parir.label("m")
        for j in range(M):
            s += x[n, j]
        y[n] = s / M
        if s > 0.0:
            count[0] += 1


# Module-level numbers, as Numba code reads them (frozen when the function is decorated).
RATE = 0.25
STEPS = 3
HALF = np.float32(0.5)
USE_HALF = True


def damped(v):
    return v * HALF if USE_HALF else v


@parir.jit
def module_numbers(x, out, N):
    parir.label("i")
    for i in range(N):
        acc = x[i]
        for s in range(STEPS):
            acc = acc - RATE * damped(acc)
        out[i] = acc


def first_two(v):
    return v[0] + v[1]


def forward(v):
    # Never indexes v itself: passes the caller's view on.
    s = first_two(v)
    return s


@parir.jit
def forwarded_rows(x, out, N):
    parir.label("i")
    for i in range(N):
        out[i] = forward(x[i])


def norm_cdf(x, mu=0.0, sigma=1.0):
    return 0.5 * (1.0 + math.erf((x - mu) / (sigma * math.sqrt(2.0))))


@parir.jit
def cdfs(x, out, N):
    # Defaults left out, one given, none left out.
    parir.label("i")
    for i in range(N):
        out[i] = norm_cdf(x[i]) + norm_cdf(x[i], 1.0) * 2.0 + norm_cdf(x[i], 0.5, 2.0) * 4.0


@parir.jit
def wrapped_heading(x, out, N):
    # math.fmod for an angle's wrap, NumPy's where and remainder, as Numba code writes them.
    parir.label("i")
    for i in range(N):
        out[i] = math.fmod(x[i] * 7.0, 2.0 * math.pi) + np.where(x[i] > 0.0, 1.0, -1.0) \
            + np.remainder(x[i], 0.3)


def to_polar(x, y):
    return math.hypot(x, y), math.atan2(y, x)


def sorted_pair(a, b):
    # Tuples returned from both branches.
    if a <= b:
        return a, b
    else:
        return b, a


def polar_then_scaled(x, y, s):
    # A tuple helper that unpacks another; its locals shadow the caller's names.
    r, t = to_polar(x, y)
    r = r * s
    return r, t + 1.0


def log_and_count(x, counts, i):
    # Called for its effects: the tuple it returns is dropped.
    counts[i] = counts[i] + 1
    return x * 2.0, x * 3.0


@parir.jit
def tuple_results(x, y, polar, pair, digits, counts, N):
    parir.label("i")
    for i in range(N):
        polar[i, 0], polar[i, 1] = to_polar(x[i], y[i])
        lo, hi = sorted_pair(x[i], y[i])
        pair[i, 0] = lo
        pair[i, 1] = hi - lo
        r, t = polar_then_scaled(x[i], y[i], 0.5)
        x[i], y[i] = y[i] + r, x[i] + t      # the targets are among the values' operands
        q, rem = divmod(i * 37 + 5, 7)
        digits[i, 0], digits[i, 1] = divmod(int(parir.abs(x[i]) * 100.0), i + 3)
        digits[i, 2] = q * 10 + rem
        log_and_count(x[i], counts, i)


@parir.jit
def doubling(v, N):
    k = 2
    for p in range(3):
        k = k * 2
        parir.label("i")
        for i in range(N):
            v[i] += k


@parir.jit
def driven_decay(x, w, N, steps):
    # A time step whose forcing the host would compute from the step number.
    for step in range(steps):
        phase = math.sin(0.1 * step)
        amplitude = 0.5 * phase + 0.25
        parir.label("i")
        for i in range(N):
            x[i] = 0.9 * x[i] + amplitude * w[i]


@parir.jit
def two_kernels_a_step(a, b, N, steps):
    for t in range(steps):
        dt = 1.0 / (t + 1)
        k = parir.int32(t * 3)
        parir.label("i")
        for i in range(N):
            a[i] += dt * b[i]
        parir.label("i")
        for i in range(N):
            b[i] = b[i] - k * 0.001 * a[i]


@parir.jit
def read_before_assigned(v, N, steps):
    # Each step adds the previous step's value: it must outlive the step, on the GPU.
    previous = 0.0
    for t in range(steps):
        if t > 0:
            parir.label("i")
            for i in range(N):
                v[i] += previous
        previous = 0.5 * t


@parir.jit
def scaled_by_memory(v, N, steps):
    for t in range(steps):
        s = v[0] * t
        parir.label("i")
        for i in range(N):
            v[i] += s


@parir.jit
def hillis_steele_scan(x, tmp, N):
    # An inclusive prefix sum as a CUDA port writes its host loop:
    # for (offset = 1; offset < N; offset *= 2) { step<<<...>>>(...); copy<<<...>>>(...); }
    offset = 1
    while offset < N:
        parir.label("i")
        for i in range(N):
            if i >= offset:
                tmp[i] = x[i] + x[i - offset]
            else:
                tmp[i] = x[i]
        parir.label("i")
        for i in range(N):
            x[i] = tmp[i]
        offset *= 2


@parir.jit
def host_expressions(v, N):
    # Host locals computed with min, abs, **, ~, a conditional expression and a swap.
    k = 1
    src, dst = 0, 1
    it = 0
    while k < N:
        parir.label("i")
        for i in range(N):
            v[src, i] += k + dst
        k = min(k * 3, N) if it % 2 == 0 else abs(-k - 1) ** 2
        src, dst = dst, src
        it += 1 + (~k & 0)


@parir.jit
def tree_rounds(x, N):
    # m halves through another local, and an offset only the kernel reads.
    m = N
    phase = 0
    while m > 1:
        h = m // 2
        offset = phase % 2
        parir.label("i")
        for i in range(N // 2):
            x[2 * i + offset] += 1.0
        m = h
        phase += 1


@parir.jit
def growing_rounds(v, N):
    # A host loop whose range a host local sets, and an if on it.
    k = 1
    for p in range(3):
        k = k * 2
        for q in range(k):
            parir.label("i")
            for i in range(N):
                v[i] += 1.0
        if k > 4:
            parir.label("i")
            for i in range(N):
                v[i] *= 0.5


@parir.jit
def shrinking_windows(x, sums, N):
    # Parallel ranges that host locals bound: a window that halves, a start and a stride that
    # move, a reduction into an element a host local picks, and an inner level of a nest.
    w = N
    r = 0
    while w > 0:
        parir.label("i")
        for i in range(w):
            x[r % 2, i] += 1.0
        parir.label("i")
        for i in range(N - w, N, r + 1):
            x[(r + 1) % 2, i] *= 0.5
        parir.label("j")
        for j in range(w):
            sums[r] += x[0, j]
        parir.label("row")
        for row in range(2):
            parir.label("col")
            for col in range(w // 2, w):
                x[row, col] -= 0.25
        w //= 2
        r += 1


@parir.jit
def ping_pong(a, b, N, steps):
    # A CUDA port's pointer swap: the kernel reads src and writes dst, then they trade places.
    src, dst = a, b
    for t in range(steps):
        parir.label("i")
        for i in range(1, N - 1):
            dst[i] = (src[i - 1] + src[i] + src[i + 1]) / 3.0 + t
        src, dst = dst, src


@parir.jit
def swaps_in_nested_loops(a, b, rowsum, steps):
    # Slices and a shape read through the names, and an inner loop of an odd number of swaps
    # that makes the outer one swap too.
    src, dst = a, b
    n = src.shape[0]
    for outer in range(2):
        for t in range(steps):
            parir.label("i")
            dst[:, :] = src[:, :] * 0.5 + 1.0
            parir.label("r")
            for i in range(n):
                rowsum[outer, t, i] = parir.sum(dst[i, :])
            src, dst = dst, src


def smooth(dst, src, N):
    parir.label("i")
    for i in range(N):
        dst[i] = 0.5 * src[i] + 0.25 * src[(i + 1) % N] + 0.25 * src[(i - 1) % N]


@parir.jit
def rotate_three(a, b, c, out, N, steps):
    # Three buffers rotated through a helper's arguments; the last one read after the loop.
    old, cur, new = a, b, c
    for step in range(2, 2 + steps):
        smooth(new, cur, N)
        parir.label("i")
        for i in range(N):
            new[i] += old[i] * 0.1 * step
        old, cur, new = cur, new, old
    parir.label("i")
    for i in range(N):
        out[i] = cur[i]


@parir.jit
def normalize(w, out, n):
    # A local summed by one parallel loop and read by the next.
    total = 0.0
    parir.label("i")
    for i in range(n):
        total += w[i]
    parir.label("j")
    for j in range(n):
        out[j] = w[j] / total


@parir.jit
def loss_and_gradients(x, y, w, loss, grad, count, N, D):
    # One pass that sums a loss, counts, and scatters a gradient with atomics: the loss stays
    # the reduction, the count is updated atomically (the loop cannot be copied per
    # accumulation, which would repeat the atomics).
    parir.label("n")
    for n in range(N):
        z = 0.0
        for d in range(D):
            z += x[n, d] * w[d]
        err = z - y[n]
        loss[0] += err * err
        count[0] += 1
        for d in range(D):
            parir.atomic_add(grad[d], err * x[n, d])


def clipped(v, limit):
    return min(max(v, -limit), limit)


@parir.jit
def scale_clipped(x, out, scale, N):
    # The argument is reassigned (from a helper of it), as Python allows.
    scale = clipped(scale * 2.0, 1.5)
    parir.label("i")
    for i in range(N):
        out[i] = x[i] * scale


@parir.jit
def sign_flips(fabs, N):
    # Found by the fuzzer: `*= (1 - 2 * ((3 % 3) & 1))` is `*= 1`, which folds to
    # fabs[i] = fabs[i]; under .reduce() that changes nothing and was rejected as an update
    # parir cannot combine.
    parir.label("i")
    for i in range(0, 2, 2):
        parir.label("j")
        for j in range(0, N, 2):
            fabs[i] *= (1 - 2 * ((3 % 3) & 1))


@parir.jit
def keep_below(p, q):
    # Found by the fuzzer: the branch's one statement assigns t to itself and folds away.
    t = p * 2
    if 5 > p:
        t = t
    return t


@parir.jit
def folded_branch_in_a_step(v, N):
    for t in range(3):
        h = keep_below(-t, v) + t
        parir.label("i")
        for i in range(N):
            v[i] += h


@parir.jit
def folded_loop(v, N):
    s = 1
    for t in range(3):
        s = s
    parir.label("i")
    for i in range(N):
        v[i] += s + 2


def _cases(device, n=33, m=31):
    g = torch.Generator().manual_seed(5)
    r = lambda *s: torch.randn(*s, generator=g).to(device)  # noqa: E731
    return {
        "rows": (add_rows, lambda: [r(n, m), r(n, m), n, m], [0],
                 {"i": parir.threads(n), "j": parir.threads(m)}),
        "energies": (step_energies, lambda: [r(n), r(n), torch.zeros(2, 3, device=device),
                                             torch.zeros(2, 3, device=device), n], [2, 3],
                     {"n": parir.threads(n).reduce()}),
        "plane": (shift_plane, lambda: [r(3, n, m), 1, n, m], [0], {"i": parir.threads(n)}),
        "select": (pick, lambda: [r(n), torch.full((n,), float("nan"), device=device), n], [1],
                   {"i": parir.threads(n)}),
        "webs": (gather_or_zero, lambda: [r(4 * n), torch.randint(-20, 4 * n, (n,), generator=g)
                                          .to(device), torch.full((n,), float("nan"),
                                                                  device=device), n], [2],
                 {"i": parir.threads(n)}),
        "loop_var_and_local": (diagonals, lambda: [r(n, n), n], [0], {"i": parir.threads(n)}),
        "numpy_scalar": (scale_by, lambda: [r(n), torch.full((n,), float("nan"), device=device),
                                            np.float32(0.5), n], [1], {"i": parir.threads(n)}),
        # 200 int8 ones add up to 200 in int64 (as torch.sum does), not to -56 in int8.
        "int8_row_sums": (row_sums, lambda: [torch.ones(n, 200, dtype=torch.int8, device=device),
                                             torch.zeros(n, dtype=torch.int32, device=device),
                                             n], [1], {"i": parir.threads(n)}),
        "logical": (pick_logical, lambda: [r(n), torch.full((n,), float("nan"), device=device),
                                           n], [1], {"i": parir.threads(n)}),
        "constants_at_top": (bias_corrected, lambda: [r(n), torch.full((n,), float("nan"),
                                                                         device=device),
                                                      n, 0.9, 7, 64], [1],
                             {"i": parir.threads(n)}),
        "slice_bound_local": (swiglu, lambda: [r(n, 2 * m), torch.full((n, m), float("nan"),
                                                                        device=device)], [1],
                              {"row": parir.threads(n), "col": parir.threads(32)}),
        "hash64": (splitmix64, lambda: [torch.randint(-2 ** 62, 2 ** 62, (n,), generator=g)
                                        .to(torch.uint64).to(device),
                                        torch.zeros(n, dtype=torch.uint64, device=device), n],
                   [1], {"i": parir.threads(n)}),
        "byte_lookup": (byte_lookup, lambda: [torch.arange(256, dtype=torch.int32).to(device) * 7,
                                              torch.randint(0, 256, (n,), generator=g)
                                              .to(torch.uint8).to(device),
                                              torch.full((n,), -1, dtype=torch.int32,
                                                         device=device), n], [2],
                        {"i": parir.threads(n)}),
        "numpy_names": (numpy_names, lambda: [r(n), torch.full((n,), float("nan"),
                                                                device=device), n], [1],
                        {"i": parir.threads(n)}),
        "math_fmod_np_where": (wrapped_heading, lambda: [r(n), torch.full((n,), float("nan"),
                                                                          device=device), n],
                               [1], {"i": parir.threads(n)}),
        "module_numbers": (module_numbers, lambda: [r(n), torch.full((n,), float("nan"),
                                                                      device=device), n],
                           [1], {"i": parir.threads(n)}),
        "view_passed_on": (forwarded_rows, lambda: [r(n, 4), torch.full((n,), float("nan"),
                                                                        device=device), n],
                           [1], {"i": parir.threads(n)}),
        "defaults": (cdfs, lambda: [r(n), torch.full((n,), float("nan"), device=device), n],
                     [1], {"i": parir.threads(n)}),
        "tuple_update": (julia_steps, lambda: [r(n) * 0.3, r(n) * 0.3,
                                               torch.full((n,), float("nan"), device=device), n],
                         [2], {"i": parir.threads(n)}),
        "host_local_doubled": (doubling, lambda: [r(n), n], [0], {"i": parir.threads(n)}),
        "host_while_scan": (hillis_steele_scan, lambda: [r(n), torch.full((n,), float("nan"),
                                                                          device=device), n],
                            [0], {"i": parir.threads(n)}),
        "host_local_range": (growing_rounds, lambda: [r(n), n], [0], {"i": parir.threads(n)}),
        "host_expressions": (host_expressions, lambda: [r(2, n), n], [0],
                             {"i": parir.threads(n)}),
        "host_locals_chained": (tree_rounds, lambda: [r(n + 1), n], [0],
                                {"i": parir.threads(n // 2)}),
        "host_local_parallel_ranges": (shrinking_windows, lambda: [r(2, n), r(8), n], [0, 1],
                                       {"i": parir.threads(n), "j": parir.threads(64).reduce(),
                                        "row": parir.threads(2), "col": parir.threads(16)}),
        "tensor_swap": (ping_pong, lambda: [r(n), r(n), n, 5], [0, 1],
                        {"i": parir.threads(n)}),
        "tensor_rotation": (rotate_three, lambda: [r(n), r(n), r(n),
                                                   torch.full((n,), float("nan"), device=device),
                                                   n, 7], [0, 1, 2, 3],
                            {"i": parir.threads(n)}),
        "tensor_swap_nested": (swaps_in_nested_loops,
                               lambda: [r(n, 7), r(n, 7), torch.full((2, 3, n), float("nan"),
                                                                     device=device), 3],
                               [0, 1, 2], {"i": parir.threads(7 * n), "r": parir.threads(n)}),
        "host_local_sum": (normalize, lambda: [r(n).abs() + 0.5,
                                               torch.full((n,), float("nan"), device=device), n],
                           [1], {"i": parir.threads(n).reduce(), "j": parir.threads(n)}),
        "no_change_under_reduce": (sign_flips,
                                   lambda: [torch.arange(1, n + 1, device=device), n], [0],
                                   {"i": parir.threads(31), "j": parir.threads(2).reduce()}),
        "accumulations_and_atomics": (loss_and_gradients,
                                      lambda: [r(n, 5), r(n), r(5), torch.zeros(1, device=device),
                                               torch.zeros(5, device=device),
                                               torch.zeros(1, dtype=torch.int64, device=device),
                                               n, 5],
                                      [3, 4, 5], {"n": parir.threads(n).reduce()}),
        "assigned_argument": (scale_clipped, lambda: [r(n), torch.full((n,), float("nan"),
                                                                        device=device), 0.6, n],
                              [1], {"i": parir.threads(n)}),
        "tuple_swaps": (swap_columns, lambda: [r(n, 4), n], [0], {"i": parir.threads(n)}),
        "tuple_results": (tuple_results,
                          lambda: [r(n), r(n), torch.full((n, 2), float("nan"), device=device),
                                   torch.full((n, 2), float("nan"), device=device),
                                   torch.full((n, 3), -1, dtype=torch.int64, device=device),
                                   torch.zeros(n, dtype=torch.int32, device=device), n],
                          [0, 1, 2, 3, 4, 5], {"i": parir.threads(n)}),
        "max_of_three": (value_range, lambda: [r(n), r(n), r(n),
                                               torch.full((n,), float("nan"), device=device), n],
                         [3], {"i": parir.threads(n)}),
        "python_round": (rounded, lambda: [r(n), torch.full((n,), -7, dtype=torch.int64,
                                                             device=device), n], [1],
                         {"i": parir.threads(n)}),
        "uint32_compare": (unsigned_compare,
                           lambda: [torch.randint(0, 2 ** 32, (n,), generator=g)
                                    .to(torch.uint32).to(device),
                                    torch.randint(0, 2 ** 32, (n,), generator=g)
                                    .to(torch.uint32).to(device),
                                    torch.full((n,), -1, dtype=torch.int32, device=device), n],
                           [2], {"i": parir.threads(n)}),
        "local_reset_in_reduce": (row_means_and_count,
                                  lambda: [r(n, 100), torch.full((n,), float("nan"),
                                                                 device=device),
                                           torch.zeros(1, dtype=torch.int64, device=device),
                                           n, 100], [1, 2],
                                  {"n": parir.threads(n).reduce(),
                                   "m": parir.threads(128).reduce()}),
    }


@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_compiles_and_runs_as_python(name):
    fn, make, outs, spec = _cases("cpu")[name]
    args = make()
    src = parir.print_compiled(fn, args, parir.par(spec))
    _C.nvrtc_compile(src, "sm_90")
    fn(*args, seq=True)


def test_integer_slice_sums_add_up_in_int64():
    x, y = torch.ones(3, 200, dtype=torch.int8), torch.zeros(3, dtype=torch.int32)
    src = parir.print_compiled(row_sums, [x, y, 3], parir.par({"i": parir.threads(3)}))
    assert "int64_t red1;" in src
    row_sums(x, y, 3, seq=True)
    assert y.tolist() == [200, 200, 200]


def test_a_view_argument_reads_the_callers_element():
    src = parir.print_compiled(add_rows, [torch.zeros(4, 5), torch.zeros(4, 5), 4, 5],
                               parir.par({"i": parir.threads(4), "j": parir.threads(5)}))
    assert "x[i * 5 + j_add_inplace] = (x[i * 5 + j_add_inplace] + y[i * 5 + j_add_inplace]);" in src


def test_a_view_indexed_by_a_slice_in_the_middle_is_explained():
    @parir.jit
    def bad(x, N):
        parir.label("i")
        for i in range(N):
            scale_row(x[:, i], N)

    with pytest.raises(parir.ParirError, match=r"indexed by integers in its leading dimensions"):
        parir.print_compiled(bad, [torch.zeros(4, 4), 4], parir.par({"i": parir.threads(4)}))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(_cases("cpu")))
def test_gpu_matches_python(name):
    fn, make, outs, spec = _cases("cuda")[name]
    args = make()
    expected = [a.cpu().clone() if isinstance(a, torch.Tensor) else a for a in args]
    fn(*args, opts=parir.par(spec))
    fn(*expected, seq=True)
    for k in outs:
        torch.testing.assert_close(args[k].cpu(), expected[k], rtol=1e-5, atol=1e-5)


def test_constants_at_the_top_are_folded_into_the_kernel():
    src = parir.print_compiled(bias_corrected, [torch.zeros(4), torch.zeros(4), 4, 0.9, 7, 64],
                               parir.par({"i": parir.threads(4)}))
    kernel = src.split("//@")[0]
    assert "pow" not in kernel and "correction" not in kernel and "half" not in kernel
    m, m_hat = torch.ones(4), torch.zeros(4)
    bias_corrected(m, m_hat, 4, 0.9, 7, 64, seq=True)
    assert m_hat[0].item() == pytest.approx(1 / (1 - 0.9 ** 7) / 8 + 32, rel=1e-6)


def _relax(src, dst, n, h, k):
    scale = k / (h * h)  # the same value in every step that calls this helper
    parir.label('i')
    for i in range(1, n - 1):
        dst[i] = src[i] + scale * (src[i - 1] - 2.0 * src[i] + src[i + 1])


@parir.jit
def relax_steps(u, v, n, steps):
    h = 1.0 / (n - 1)
    k = 0.25 * h * h
    a, b = u, v
    for t in range(steps):
        _relax(a, b, n, h, k)
        a, b = b, a


@parir.jit
def scale_changes(x, n, steps):
    s = 1.0
    for t in range(steps):
        parir.label('i')
        for i in range(n):
            x[i] *= s
        s = 2.0  # a second value: a local on the GPU


def test_a_helpers_constants_are_folded_in_every_step_that_calls_it():
    n, steps = 37, 5
    u = torch.rand(n, generator=torch.Generator().manual_seed(3), dtype=torch.float64) + 1
    v = u.clone()
    spec = parir.par({"i": parir.threads(n)})
    src = parir.print_compiled(relax_steps, [u, v, n, steps], spec)
    assert "block(1)" not in src and "//@ temp" not in src and "scale" not in src
    expected_u, expected_v = u.clone(), v.clone()
    relax_steps(expected_u, expected_v, n, steps, seq=True)
    a, b = u.numpy().copy(), v.numpy().copy()
    for _ in range(steps):
        b[1:-1] = a[1:-1] + 0.25 * (a[:-2] - 2 * a[1:-1] + a[2:])
        a, b = b, a
    torch.testing.assert_close(expected_v, torch.from_numpy(a), rtol=1e-12, atol=0)
    # A local given two values stays a local.
    src = parir.print_compiled(scale_changes, [torch.ones(8), 8, 3], spec)
    assert "//@ temp s" in src


@pytest.mark.gpu
def test_a_helpers_constants_folded_on_the_gpu():
    n, steps = 1001, 7
    u = torch.rand(n, generator=torch.Generator().manual_seed(4), dtype=torch.float64) + 1
    v = torch.full((n,), float("nan"), dtype=torch.float64)
    v[0], v[-1] = u[0], u[-1]
    gu, gv = u.cuda(), v.cuda()
    relax_steps(gu, gv, n, steps, opts=parir.par({"i": parir.threads(n)}))
    relax_steps(u, v, n, steps, seq=True)
    torch.testing.assert_close(gu.cpu(), u, rtol=1e-12, atol=0)
    torch.testing.assert_close(gv.cpu(), v, rtol=1e-12, atol=0)


def test_a_slice_bound_from_the_shape_at_the_top_is_a_constant():
    src = parir.print_compiled(swiglu, [torch.zeros(3, 10), torch.zeros(3, 5)],
                               parir.par({"row": parir.threads(3), "col": parir.threads(32)}))
    assert "xw[row * 10 + (5L + " in src or "5L" in src  # the upper half starts at d = 5


def test_64_bit_hash_constants_are_uint64_as_in_c():
    state = torch.tensor([0, 1, 2 ** 40], dtype=torch.uint64)
    out = torch.zeros(3, dtype=torch.uint64)
    splitmix64(state, out, 3, seq=True)

    def reference(s):
        mask = (1 << 64) - 1
        z = (s + 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    got = [v & ((1 << 64) - 1) for v in out.view(torch.int64).tolist()]
    assert got == [reference(s) for s in (0, 1, 2 ** 40)]
    src = parir.print_compiled(splitmix64, [state, out, 3], parir.par({"i": parir.threads(3)}))
    assert "11400714819323198485UL" in src


def test_a_byte_used_as_an_index_indexes_in_the_plain_python_run():
    table = torch.arange(256, dtype=torch.int32) * 7
    data = torch.tensor([3, 0, 200, 255], dtype=torch.uint8)
    out = torch.zeros(4, dtype=torch.int32)
    byte_lookup(table, data, out, 4, seq=True)
    assert out.tolist() == [21, 0, 1400, 1785]


def test_unsigned_shifts_run_as_python():
    @parir.jit
    def shifts(x, y, out, N):
        parir.label("i")
        for i in range(N):
            out[i] = (x[i] << 3) ^ (x[i] >> 5) | (y[i] >> 63)

    x = torch.tensor([1, 2 ** 31 + 5, 2 ** 32 - 1], dtype=torch.uint32)
    y = torch.tensor([-1, 5, -(2 ** 62)], dtype=torch.int64).to(torch.uint64)
    out = torch.zeros(3, dtype=torch.int64)
    shifts(x, y, out, 3, seq=True)
    want = []
    for a, b in zip([1, 2 ** 31 + 5, 2 ** 32 - 1], [2 ** 64 - 1, 5, 2 ** 64 - 2 ** 62]):
        v = ((((a << 3) & 0xFFFFFFFF) ^ (a >> 5)) | (b >> 63))
        want.append(v - (1 << 64) if v >= 1 << 63 else v)
    assert out.tolist() == want


def test_a_bitwise_update_under_reduce_is_an_error_not_a_race():
    @parir.jit
    def xor_checksum(x, out, N):
        parir.label("i")
        for i in range(N):
            out[0] ^= x[i]

    x, out = torch.zeros(100, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    with pytest.raises(parir.ParirError, match=r"test_user_programs\.py:\d+: the reduction loop "
                       r"on line \d+ updates out\[0\] with \^ .*parir\.atomic_xor"):
        parir.print_compiled(xor_checksum, [x, out, 100],
                             parir.par({"i": parir.threads(64).reduce()}))


def test_an_update_that_folds_to_no_change_under_reduce_compiles():
    x = torch.arange(1, 10, dtype=torch.int64)
    spec = parir.par({"i": parir.threads(31), "j": parir.threads(2).reduce()})
    parir.print_compiled(sign_flips, [x, 9], spec)
    sign_flips(x, 9, seq=True)
    assert x.tolist() == list(range(1, 10))


ETA = 0.3


def test_a_global_constant_in_a_local_is_its_value():
    @parir.jit
    def adjust(delta, w, N):
        parir.label("k")
        for k in range(N):
            new_dw = ETA * delta[k]
            w[k] += new_dw

    delta, w = torch.arange(5.0), torch.ones(5)
    src = parir.print_compiled(adjust, [delta, w, 5], parir.par({"k": parir.threads(5)}))
    assert "new_dw = (0.300000012f * delta[k]);" in src  # a weak float: float32 beside delta
    _C.nvrtc_compile(src, "sm_90")
    adjust(delta, w, 5, seq=True)
    torch.testing.assert_close(w, 1.0 + 0.3 * torch.arange(5.0))

    @parir.jit
    def undefined(delta, w, N):
        parir.label("k")
        for k in range(N):
            w[k] += ETA_UNDEFINED * delta[k]  # noqa: F821

    with pytest.raises(parir.ParirError, match=r"test_user_programs\.py:\d+: name "
                                               r"'ETA_UNDEFINED' is not defined.*module's numbers"):
        parir.print_compiled(undefined, [delta, w, 5], parir.par({"k": parir.threads(5)}))


def test_numpy_functions_parir_lacks_are_named():
    @parir.jit
    def minimum(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = np.minimum(x[i], 0.0)

    with pytest.raises(parir.ParirError, match=r"np\.minimum cannot be used in a parir "
                                               r"function"):
        parir.print_compiled(minimum, [torch.zeros(3), 3], parir.par({"i": parir.threads(3)}))


def test_float_of_a_string_that_is_not_a_number():
    @parir.jit
    def bad(x, N):
        parir.label("i")
        for i in range(N):
            x[i] = float("one")

    with pytest.raises(parir.ParirError, match=r"float\('one'\) is not a number"):
        parir.print_compiled(bad, [torch.zeros(3), 3], parir.par({"i": parir.threads(3)}))


def test_thread_counts_from_numpy_integers():
    assert parir.threads(np.int64(4097)).nthreads == 4097
    assert parir.threads(np.int32(64)).tpb(np.int64(64)).threads_per_block == 64
    with pytest.raises(parir.ParirTypeError):
        parir.threads(np.float32(3))


@parir.jit
def png_sub(img, out, bpp):
    H, W = img.shape
    parir.label("y")
    for y in range(H):
        parir.label("x")
        for x in range(W):
            out[y, x] = img[y, x - bpp] if x >= bpp else parir.uint8(0)


def test_a_loop_variable_computed_in_a_narrower_type_warns():
    img, out = torch.zeros(2, 300, dtype=torch.uint8), torch.zeros(2, 300, dtype=torch.uint8)
    spec = parir.par({"y": parir.threads(2), "x": parir.threads(64)})
    with pytest.warns(parir.ParirWarning, match=r"x takes values from 0 to 299 here, and meets a "
                                                r"uint8 value.*parir\.int64"):
        parir.print_compiled(png_sub, [img, out, np.uint8(3)], spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within uint8: no warning
        parir.print_compiled(png_sub, [img[:, :200], out[:, :200], np.uint8(3)], spec)


def test_a_write_through_a_local_read_from_memory_warns():
    @parir.jit
    def scatter(x, idx, y, N):
        parir.label("i")
        for i in range(N):
            k = idx[i]
            y[k] = x[i]

    args = [torch.zeros(8), torch.zeros(8, dtype=torch.int64), torch.zeros(8), 8]
    with pytest.warns(parir.ParirWarning, match=r"this write to 'y' inside a parallel loop goes "
                                                r"to an element chosen by data"):
        parir.print_compiled(scatter, args, parir.par({"i": parir.threads(8)}))


def test_a_running_maximum_kept_with_an_if_is_explained():
    @parir.jit
    def running_max(x, out, N):
        parir.label("r")
        for r in range(1):
            maxval = -parir.inf
            parir.label("i")
            for i in range(N):
                if x[i] > maxval:
                    maxval = x[i]
            out[0] = maxval

    spec = parir.par({"r": parir.threads(1), "i": parir.threads(256).reduce()})
    with pytest.raises(parir.ParirError, match=r"`if v > maxval: maxval = v` is "
                                               r"maxval = max\(maxval, v\)"):
        parir.print_compiled(running_max, [torch.zeros(8), torch.zeros(1), 8], spec)


def test_a_loop_bound_from_a_math_function_of_scalars():
    @parir.jit
    def fill_square(x, N):
        side = int(math.sqrt(N))
        parir.label("i")
        for i in range(side):
            x[i] = parir.floor(2.5) + max(0.0, -0.0) + parir.abs(-1.0)

    x = torch.zeros(64)
    src = parir.print_compiled(fill_square, [x, 64], parir.par({"i": parir.threads(64)}))
    kernel = src.split("//@")[0]
    assert "i < 8L" in kernel and "x[i] = 3.0f;" in kernel
    fill_square(x, 64, seq=True)
    assert x[:8].tolist() == [3.0] * 8 and x[8:].abs().sum() == 0


def test_tuple_assignment_computes_every_value_first():
    zr0, zi0 = torch.tensor([0.1, -0.2]), torch.tensor([0.3, 0.05])
    out = torch.zeros(2)
    julia_steps(zr0, zi0, out, 2, seq=True)
    expected = []
    for a, b in zip(zr0.tolist(), zi0.tolist()):
        a, b = torch.tensor(a), torch.tensor(b)  # float32, as the kernel computes
        for _ in range(6):
            a, b = a * a - b * b + 0.25, 2.0 * a * b - 0.5
        expected.append((a + b).item())
    torch.testing.assert_close(out, torch.tensor(expected))
    x = torch.arange(8.0).reshape(2, 4)
    swap_columns(x, 2, seq=True)
    assert x.tolist() == [[2.0, 3.0, 0.0, 1.0], [6.0, 7.0, 4.0, 5.0]]


def test_dict_keys_with_dots_name_state_dict_entries():
    @parir.jit
    def ema(model, shadow, decay, N):
        parir.label("i")
        for i in range(N):
            shadow["fc1.weight"][i] = decay * shadow["fc1.weight"][i] + (1.0 - decay) * model["fc1.weight"][i]

    m, s = {"fc1.weight": torch.ones(5)}, {"fc1.weight": torch.zeros(5)}
    src = parir.print_compiled(ema, [m, s, 0.9, 5], parir.par({"i": parir.threads(5)}))
    _C.nvrtc_compile(src, "sm_90")
    ema(m, s, 0.9, 5, seq=True)
    torch.testing.assert_close(s["fc1.weight"], torch.full((5,), 0.1))


def test_a_host_computed_integer_is_an_argument_and_a_float_lives_on_the_gpu():
    # k = k * 2 in a host loop: the plan computes it and the kernel takes it as an argument.
    src = parir.print_compiled(doubling, [torch.zeros(4), 4], parir.par({"i": parir.threads(4)}))
    assert "//@   k = (k * 2)\n" in src and "_on_gpu" not in src and "int64_t k)" in src
    v = torch.zeros(4)
    doubling(v, 4, seq=True)
    assert v.tolist() == [4 + 8 + 16] * 4

    @parir.jit
    def halving(v, N):
        # A float the host cannot compute: each assignment runs as a one-thread kernel.
        s = 1.0
        for p in range(3):
            s = s * 0.5
            parir.label("i")
            for i in range(N):
                v[i] += s

    src = parir.print_compiled(halving, [torch.zeros(4), 4], parir.par({"i": parir.threads(4)}))
    assert "//@ temp s_on_gpu" in src and "s_on_gpu0[0] = (s_on_gpu0[0] * 0.5);" in src


FOLDED_HOST_CODE = [(folded_branch_in_a_step, -3.0), (folded_loop, 3.0)]


@pytest.mark.parametrize("fn, want", FOLDED_HOST_CODE)
def test_host_code_whose_body_folds_away_has_a_plan_the_runtime_reads(fn, want):
    src = parir.print_compiled(fn, [torch.zeros(8), 8], parir.par({"i": parir.threads(8)}))
    _C.Program(src)  # what a call reads before it launches anything
    v = torch.zeros(8)
    fn(v, 8, seq=True)
    assert v.tolist() == [want] * 8


@pytest.mark.gpu
@pytest.mark.parametrize("fn, want", FOLDED_HOST_CODE)
def test_host_code_whose_body_folds_away_runs(fn, want):
    v = torch.zeros(8, device="cuda")
    fn(v, 8, opts=parir.par({"i": parir.threads(8)}))
    assert v.tolist() == [want] * 8


def test_a_float_of_the_host_loop_variable_is_computed_by_the_kernels():
    # Each thread computes dt and k from t: a step launches its two kernels and nothing else.
    spec = parir.par({"i": parir.threads(40)})
    spec.time_tiling = False
    args = [torch.zeros(40), torch.zeros(40), 40, 5]
    src = parir.print_compiled(two_kernels_a_step, args, spec)
    assert "_on_gpu" not in src and "grid(1) block(1)" not in src
    assert "//@ for t in range(0, 5, 1):" in src and src.count("//@   launch ") == 2
    assert "(1.0 / ((double)(t + 1L)))" in src and "((int32_t)(t * 3L))" in src
    # Which leaves the steps' kernels such that the loop runs in tiles of time steps.
    src = parir.print_compiled(two_kernels_a_step, args, parir.par({"i": parir.threads(40)}))
    assert "label 'time tiles'" in src and "(1.0 / ((double)(t_step" in src
    src = parir.print_compiled(driven_decay, args, spec)
    assert "_on_gpu" not in src and "parir::sin((0.10000000000000001 * ((double)step)))" in src


def test_math_of_the_time_step_is_computed_once_a_step_not_once_an_element():
    # Tiles of 4,096 elements on 1,024 threads: a thread's four elements of a step share one
    # sine, computed inside the loop over steps and before the loop over the thread's elements.
    args = [torch.zeros(4096), torch.zeros(4096), 4096, 1000]
    src = parir.print_compiled(driven_decay, args, parir.par({"i": parir.threads(4096)}))
    for kernel in src.split('extern "C"')[1:]:
        assert kernel.count("parir::sin(") == 1
        step_loop = kernel.index("for (int64_t step_step")
        sine = kernel.index("parir::sin(")
        element_loop = kernel.index("label 'i': parallel over 1024 threads")
        assert step_loop < sine < element_loop
        assert kernel[sine:element_loop].count(";") == 1


def test_host_values_read_before_their_assignment_or_of_memory_stay_on_the_gpu():
    spec = parir.par({"i": parir.threads(40)})
    for fn in (read_before_assigned, scaled_by_memory):
        src = parir.print_compiled(fn, [torch.zeros(40), 40, 5], spec)
        assert "_on_gpu" in src and "grid(1) block(1)" in src, fn.__name__
    v = torch.zeros(3)
    read_before_assigned(v, 3, 4, seq=True)
    assert v.tolist() == [0.0 + 0.5 + 1.0] * 3


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 1000, 4096, 4097])
def test_floats_of_the_host_loop_variable_match_plain_python(n):
    g = torch.Generator(device="cuda").manual_seed(n)
    spec = parir.par({"i": parir.threads(n)})
    x0, w = torch.rand(n, device="cuda", generator=g) - 0.5, torch.rand(n, device="cuda", generator=g)
    x, want = x0.clone(), x0.cpu()
    driven_decay(x, w, n, 37, opts=spec)
    driven_decay(want, w.cpu(), n, 37, seq=True)
    torch.testing.assert_close(x.cpu(), want, rtol=1e-5, atol=1e-6)
    a0, b0 = torch.rand(n, device="cuda", generator=g), torch.rand(n, device="cuda", generator=g)
    a, b, a_want, b_want = a0.clone(), b0.clone(), a0.cpu(), b0.cpu()
    two_kernels_a_step(a, b, n, 9, opts=spec)
    two_kernels_a_step(a_want, b_want, n, 9, seq=True)
    torch.testing.assert_close(a.cpu(), a_want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b.cpu(), b_want, rtol=1e-5, atol=1e-6)
    for fn in (read_before_assigned, scaled_by_memory):
        v0 = torch.rand(n, device="cuda", generator=g)
        v, v_want = v0.clone(), v0.cpu()
        fn(v, n, 6, opts=spec)
        fn(v_want, n, 6, seq=True)
        torch.testing.assert_close(v.cpu(), v_want, rtol=1e-5, atol=1e-6, msg=fn.__name__)


def test_updates_beside_the_inner_loops_of_a_reduce_loop_are_atomic():
    src = parir.print_compiled(row_means_and_count,
                               [torch.zeros(33, 100), torch.zeros(33),
                                torch.zeros(1, dtype=torch.int64), 33, 100],
                               parir.par({"n": parir.threads(33).reduce(),
                                          "m": parir.threads(128).reduce()}))
    assert "parir::atomic_combine(parir::Sum(), &count[0], 1L);" in src

    @parir.jit
    def product_of_row_sums(x, out, N, M):
        parir.label("n")
        for n in range(N):
            s = 0.0
            parir.label("m")
            for j in range(M):
                s += x[n, j]
            out[0] *= s

    spec = {"n": parir.threads(33).reduce(), "m": parir.threads(128).reduce()}
    with pytest.raises(parir.ParirError, match=r"holds parallel loops, so its blocks all make "
                                               r"this update of out\[0\]"):
        parir.print_compiled(product_of_row_sums, [torch.zeros(33, 100), torch.ones(1), 33, 100],
                             parir.par(spec))


def test_integer_locals_the_host_reads_stay_on_the_host():
    # The plan computes them; the kernels take them as arguments.
    src = parir.print_compiled(hillis_steele_scan, [torch.zeros(5), torch.zeros(5), 5],
                               parir.par({"i": parir.threads(5)}))
    assert "//@ offset = 1\n//@ while (offset < 5):\n" in src
    assert "//@   offset = (offset * 2)\n" in src
    assert "int64_t offset" in src and "_on_gpu" not in src
    src = parir.print_compiled(growing_rounds, [torch.zeros(4), 4],
                               parir.par({"i": parir.threads(4)}))
    assert "//@   for q in range(0, k, 1):" in src and "//@   if (k > 4):" in src
    v = torch.ones(4)
    growing_rounds(v, 4, seq=True)
    assert v.tolist() == [(1 + 2 + 4 + 8) * 0.5] * 4


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 33, 1000, 4097])
def test_a_host_while_loop_runs_eagerly_as_a_graph_and_under_torch_compile(n):
    g = torch.Generator(device="cuda").manual_seed(n)
    x0 = torch.rand(n, device="cuda", generator=g) + 0.5
    want = torch.cumsum(x0.double(), 0)
    for how in ["eager", "graphs", "torch.compile"]:
        opts = parir.par({"i": parir.threads(n)})
        opts.use_cuda_graphs = how == "graphs"
        x, tmp = x0.clone(), torch.full_like(x0, float("nan"))

        def scan(x, tmp):
            hillis_steele_scan(x, tmp, n, opts=opts)
            return x

        if how == "torch.compile":
            torch._dynamo.reset()
            scan = torch.compile(scan, fullgraph=True)
        for _ in range(2 if how == "graphs" else 1):  # the second call replays the graph
            x.copy_(x0)
            scan(x, tmp)
        torch.testing.assert_close(x.double(), want, rtol=1e-5, atol=1e-5, msg=how)


@pytest.mark.parametrize("fn, args, spec, tensors", [
    (host_expressions, lambda: [torch.zeros(2, 40), 40], {"i": parir.threads(40)}, ["v"]),
    (tree_rounds, lambda: [torch.zeros(41), 40], {"i": parir.threads(20)}, ["x"]),
])
def test_host_locals_reach_a_plan_the_runtime_reads(fn, args, spec, tensors):
    with warnings.catch_warnings():
        warnings.simplefilter("error", parir.ParirWarning)  # no race warning on x[2 * i + offset]
        src = parir.print_compiled(fn, args(), parir.par(spec))
    assert "_on_gpu" not in src
    program = _C.Program(src)  # what a call reads before it launches anything
    assert [name for name, _ in program.params] == tensors


def test_host_locals_that_the_host_cannot_compute_are_explained():
    @parir.jit
    def timed(v, N):
        t = 0.0
        while t < 1.0:
            parir.label("i")
            for i in range(N):
                v[i] += 1.0
            t += 0.25

    with pytest.raises(parir.ParirError, match=r"'t' is assigned outside the parallel loops and "
                                               r"read by the host .* the host computes with "
                                               r"integers only and 't' is a float64"):
        parir.print_compiled(timed, [torch.zeros(4), 4], parir.par({"i": parir.threads(4)}))

    @parir.jit
    def reassigned(v, N):
        k = 1
        while k < N:
            parir.label("i")
            for i in range(N):
                k = i
                v[i] += k
            k *= 2

    with pytest.raises(parir.ParirError, match=r"code on the GPU may read 'k' but not assign "
                                               r"it. For a loop that runs until the GPU says so"):
        parir.print_compiled(reassigned, [torch.zeros(4), 4], parir.par({"i": parir.threads(4)}))

    @parir.jit
    def from_data(v, steps, N):
        k = 1
        while k < N:
            parir.label("i")
            for i in range(N):
                v[i] += 1.0
            k = k + steps[0]

    with pytest.raises(parir.ParirError, match=r"reads tensor 'steps', whose data is on the GPU"):
        parir.print_compiled(from_data, [torch.zeros(4), torch.ones(1, dtype=torch.int64), 4],
                             parir.par({"i": parir.threads(4)}))

    @parir.jit
    def range_set_on_gpu(v, N):
        k = 1
        while k < N:
            parir.label("i")
            for i in range(k):
                v[i] += 1.0
            with parir.gpu:
                k = k * 2 + 1

    with pytest.raises(parir.ParirError, match=r":[\d-]+: the range of this parallel loop reads "
                                               r"'k', which parallel code assigns"):
        parir.print_compiled(range_set_on_gpu, [torch.zeros(8), 8],
                             parir.par({"i": parir.threads(8)}))

    @parir.jit
    def sliced_window(x, y, N):
        w = N
        while w > 1:
            parir.label("i")
            y[:w] = x[:w] * 2.0
            w //= 2

    with pytest.raises(parir.ParirError, match=r"the stop of a slice of 'y' must be a constant.*"
                                               r"a loop's range may read a local the host"):
        parir.print_compiled(sliced_window, [torch.zeros(8), torch.zeros(8), 8],
                             parir.par({"i": parir.threads(8)}))

    @parir.jit
    def range_from_data(v, counts, N):
        k = counts[0]
        parir.label("i")
        for i in range(k):
            v[i] += 1.0

    with pytest.raises(parir.ParirError, match=r"reads tensor 'counts', whose data is on the GPU"):
        parir.print_compiled(range_from_data, [torch.zeros(8), torch.ones(1, dtype=torch.int64),
                                               8], parir.par({"i": parir.threads(8)}))

    @parir.jit
    def loop_variable_kept(v, N):
        k = 0
        for k in range(2):
            parir.label("i")
            for i in range(N):
                v[i] += k
        while k < 4:
            parir.label("i")
            for i in range(N):
                v[i] += 1.0
            k += 1

    with pytest.raises(parir.ParirError, match=r"'k' is used both as a loop variable and as a "
                                               r"local variable; rename one of them"):
        parir.print_compiled(loop_variable_kept, [torch.zeros(4), 4],
                             parir.par({"i": parir.threads(4)}))


def test_a_local_summed_on_the_host_without_reduce_is_an_error_not_a_race():
    with pytest.raises(parir.ParirError, match=r"'total' is assigned outside the parallel loops, "
                                               r"and here inside the parallel loop 'i'.*"
                                               r"parir\.threads\(n\)\.reduce\(\) for 'i'"):
        parir.print_compiled(normalize, [torch.ones(4), torch.zeros(4), 4],
                             parir.par({"i": parir.threads(4), "j": parir.threads(4)}))


def test_module_numbers_are_constants_and_locals_hide_them():
    x = torch.arange(4.0)
    src = parir.print_compiled(module_numbers, [x, torch.zeros(4), 4],
                               parir.par({"i": parir.threads(4)}))
    assert "0.25" in src and "STEPS" not in src and "RATE" not in src

    @parir.jit
    def shadowed(x, N):
        parir.label("i")
        for i in range(N):
            RATE = 2.0
            x[i] = x[i] * RATE

    shadowed(x, 4, seq=True)
    src = parir.print_compiled(shadowed, [x, 4], parir.par({"i": parir.threads(4)}))
    # The local's one value, folded, and not the module's RATE (0.25).
    kernel = src.split("//@")[0]
    assert "2.0" in kernel and "0.25" not in kernel


def test_locals_naming_tensors_follow_the_swaps_the_compiler_can_count():
    # Unrolled by the period of the swap: two copies of the kernel, with the tensors in each
    # order, and the odd last step after the loop.
    src = parir.print_compiled(ping_pong, [torch.zeros(9), torch.zeros(9), 9, 5],
                               parir.par({"i": parir.threads(9)}))
    assert "for t in range(0, 4, 2):" in src
    x, y = torch.rand(9, dtype=torch.float64), torch.rand(9, dtype=torch.float64)
    want = [x.clone(), y.clone()]
    for t in range(5):
        src_, dst_ = want[t % 2], want[(t + 1) % 2]
        dst_[1:8] = (src_[0:7] + src_[1:8] + src_[2:9]) / 3.0 + t
    ping_pong(x, y, 9, 5, seq=True)
    torch.testing.assert_close([x, y], want)

    @parir.jit
    def copy_back_when_odd(a, b, N, steps):
        src, dst = a, b
        for t in range(steps):
            parir.label("i")
            for i in range(N):
                dst[i] = src[i] * 2.0
            src, dst = dst, src
        if steps % 2 == 1:
            parir.label("i")
            for i in range(N):
                a[i] = src[i]

    src = parir.print_compiled(copy_back_when_odd, [torch.zeros(4), torch.zeros(4), 4, 3],
                               parir.par({"i": parir.threads(4)}))
    kernels = src.split("//@")[0]
    assert "a[i] = b[i];" in kernels  # src names b after three swaps
    a, b = torch.ones(4), torch.zeros(4)
    copy_back_when_odd(a, b, 4, 3, seq=True)
    assert a.tolist() == [8.0] * 4


def test_locals_naming_tensors_the_run_decides_are_explained():
    spec = parir.par({"i": parir.threads(8)})
    args = [torch.zeros(8), torch.zeros(8), 8]

    @parir.jit
    def while_swap(a, b, N):
        src, dst = a, b
        k = 1
        while k < N:
            parir.label("i")
            for i in range(N):
                dst[i] = src[i] + k
            src, dst = dst, src
            k *= 2

    with pytest.raises(parir.ParirError, match=r":\d+-\d+: after a while loop, '(src|dst)' "
                                               r"names '[ab]' or '[ab]' depending on what only "
                                               r"the run decides.*step\(b, a\)"):
        parir.print_compiled(while_swap, args, spec)

    @parir.jit
    def branch_swap(a, b, N, flip):
        src = a
        if flip[0] > 0:
            src = b
        parir.label("i")
        for i in range(N):
            a[i] = src[i]

    with pytest.raises(parir.ParirError, match=r"after the branches of an if, 'src' names"):
        parir.print_compiled(branch_swap, args + [torch.ones(1)], spec)

    @parir.jit
    def swapped_in_kernel(a, b, N):
        src, dst = a, b
        parir.label("i")
        for i in range(N):
            src, dst = dst, src
            dst[i] = src[i]

    with pytest.raises(parir.ParirError, match=r"is assigned here, inside a labelled loop"):
        parir.print_compiled(swapped_in_kernel, args, spec)

    @parir.jit
    def swapped_in_gpu_while(a, b, N, residual):
        # Numba's laplace2d: the loop reads a residual that the GPU computes.
        src, dst = a, b
        with parir.gpu:
            while residual[0] > 1e-3:
                parir.label("i")
                for i in range(N):
                    dst[i] = 0.5 * src[i]
                residual[0] = residual[0] * 0.5
                src, dst = dst, src

    with pytest.raises(parir.ParirError, match=r"inside a labelled loop or `with parir\.gpu:`.*"
                                               r"two steps an iteration"):
        parir.print_compiled(swapped_in_gpu_while, args + [torch.ones(1)], spec)

    @parir.jit
    def tensor_or_number(a, b, N):
        src = a
        parir.label("i")
        for i in range(N):
            b[i] = src[i]
        src = 2.0

    with pytest.raises(parir.ParirError, match=r"'src' names a tensor elsewhere and is assigned "
                                               r"2\.0 here"):
        parir.print_compiled(tensor_or_number, args, spec)
