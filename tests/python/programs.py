"""Test programs: each is a parir function, a way to make its arguments for a size, its
parallel specification, and a reference result computed with torch or plain Python.

Every program runs through the compiler and NVRTC on the CPU (test_compile.py) and on the GPU
against its reference (test_gpu.py)."""

import math

import torch

import parir_torch as parir

# ----- the programs -------------------------------------------------------------------------


@parir.jit
def sum_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i] += x[i, j]


@parir.jit
def axpy(a, x, y, out, N):
    parir.label('i')
    for i in range(N):
        out[i] = a * x[i] + y[i]


@parir.jit
def add_matrices(a, b, c, N, M):
    # Two parallel levels: rows on blocks, columns on threads.
    parir.label('row')
    for i in range(N):
        parir.label('col')
        for j in range(M):
            c[i, j] = a[i, j] + b[i, j]


@parir.jit
def repeated_scale(x, T, N):
    # A sequential loop outside the parallel loop runs on the host and launches a kernel per
    # iteration; its variable reaches the kernel as an argument.
    for t in range(T):
        parir.label('i')
        for i in range(N):
            x[i] = x[i] * 0.5 + t


@parir.jit
def prefix_sum(x, y, N):
    with parir.gpu:
        y[0] = x[0]
        for i in range(1, N):
            y[i] = y[i - 1] + x[i]


@parir.jit
def fill_then_scale(x, y, N):
    # Sequential code on the GPU around a parallel loop in one block.
    with parir.gpu:
        y[0] = 2.0
        parir.label('i')
        for i in range(1, N):
            y[i] = x[i] * y[0]


@parir.jit
def control_flow(x, y, N):
    parir.label('i')
    for i in range(N):
        v = x[i]
        if v > 0.5:
            y[i] = 1.0
        elif v < -0.5:
            y[i] = -1.0
        else:
            steps = 0
            while v < 0.5 and steps < 100:
                v = v + 0.25
                steps += 1
            y[i] = steps if v > 0.0 else -v


@parir.jit
def int_ops(a, b, out, N):
    parir.label('i')
    for i in range(N):
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x // y
        out[i, 4] = x % y
        out[i, 5] = x & y
        out[i, 6] = x | y
        out[i, 7] = x ^ y
        out[i, 8] = (x << 2) >> 1
        out[i, 9] = ~x
        out[i, 10] = -x
        out[i, 11] = x ** 3
        out[i, 12] = parir.min(x, y)
        out[i, 13] = parir.max(x, y)
        out[i, 14] = parir.abs(x)
        out[i, 15] = 1 if (x > y and not x == 0) or y == 3 else 0


@parir.jit
def float_ops(a, b, out, N):
    parir.label('i')
    for i in range(N):
        x = a[i]
        y = b[i]
        out[i, 0] = x + y * 2.5
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = x // y
        out[i, 5] = x % y
        out[i, 6] = parir.abs(x) ** 0.5
        out[i, 7] = parir.exp(x)
        out[i, 8] = parir.log(parir.abs(x) + 1.0)
        out[i, 9] = parir.sqrt(parir.abs(y))
        out[i, 10] = parir.sin(x)
        out[i, 11] = parir.cos(y)
        out[i, 12] = parir.tanh(x)
        out[i, 13] = parir.atan2(x, y)
        out[i, 14] = parir.min(x, y)
        out[i, 15] = parir.max(x, y)
        out[i, 16] = parir.min(x, parir.inf)
        out[i, 17] = parir.float32(parir.int32(x * 10.0))
        out[i, 18] = x if x > y else y
        out[i, 19] = -x


@parir.jit
def compare_to_bool(a, b, out, N):
    parir.label('i')
    for i in range(N):
        out[i, 0] = a[i] < b[i]
        out[i, 1] = a[i] <= b[i]
        out[i, 2] = a[i] > b[i]
        out[i, 3] = a[i] >= b[i]
        out[i, 4] = a[i] == b[i]
        out[i, 5] = a[i] != b[i]
        out[i, 6] = 0.0 < a[i] < b[i]


@parir.jit
def bool_logic(p, q, out, N):
    parir.label('i')
    for i in range(N):
        out[i, 0] = p[i] and q[i]
        out[i, 1] = p[i] or q[i]
        out[i, 2] = not p[i]
        out[i, 3] = p[i] ^ q[i]
        out[i, 4] = ~p[i]


@parir.jit
def reverse_strided(x, y, N):
    # range() with a negative step, and with three arguments.
    parir.label('i')
    for i in range(N - 1, -1, -1):
        y[N - 1 - i] = x[i]
    parir.label('i')
    for i in range(0, N, 3):
        y[i] = y[i] * 2.0


@parir.jit
def transpose_copy(x, y, N, M):
    # x may be a non-contiguous view: indexing follows its strides.
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            y[i, j] = x[i, j]


@parir.jit
def mixed_types(xi, xf, out, N):
    parir.label('i')
    for i in range(N):
        k = xi[i]          # int32
        f = xf[i]          # float64
        s = 0              # a weak int local that becomes float64
        s += f * k
        out[i] = s + k / 2 + parir.float64(k // 2)


@parir.jit
def lower_triangle_sums(x, y, N):
    # An inner loop whose bound depends on the outer loop's variable.
    parir.label('i')
    for i in range(N):
        s = 0.0
        for j in range(i + 1):
            s += x[i, j]
        y[i] = s


@parir.jit
def roll_by_one(x, y, N):
    # x[i - 1] at i == 0 is x[-1], the last element, as in Python.
    parir.label('i')
    for i in range(N):
        y[i] = x[i - 1]


# ----- arguments and references --------------------------------------------------------------


def _rand(shape, dtype, gen, device, low=-1.0, high=1.0):
    t = torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low
    # Non-zero: nudge exact zeros away.
    t = torch.where(t == 0, torch.full_like(t, 0.125), t)
    return t.to(dtype).to(device)


def _poison(shape, dtype, device):
    shape = (shape,) if isinstance(shape, int) else shape
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype, device=device)
    return torch.full(shape, -77, dtype=dtype, device=device)


def case_sum_rows(n, gen, device, dtype=torch.float32, m=None):
    m = m or max(1, n // 3 + 5)
    x = _rand((n, m), dtype, gen, device)
    y = torch.zeros(n, dtype=dtype, device=device)
    return dict(fn=sum_rows, args=[x, y, n, m], spec={'N': parir.threads(n)},
                check=[(y, x.double().sum(1))])


def case_axpy(n, gen, device, dtype=torch.float32):
    x, y = _rand(n, dtype, gen, device), _rand(n, dtype, gen, device)
    out = _poison(n, dtype, device)
    return dict(fn=axpy, args=[1.75, x, y, out, n], spec={'i': parir.threads(n)},
                check=[(out, 1.75 * x.double() + y.double())])


def case_add_matrices(n, gen, device, dtype=torch.float64):
    m = 37
    a, b = _rand((n, m), dtype, gen, device), _rand((n, m), dtype, gen, device)
    c = _poison((n, m), dtype, device)
    return dict(fn=add_matrices, args=[a, b, c, n, m],
                spec={'row': parir.threads(n), 'col': parir.threads(m)},
                check=[(c, a + b)])


def case_repeated_scale(n, gen, device, dtype=torch.float32):
    x = _rand(n, dtype, gen, device)
    ref = x.double().clone()
    for t in range(4):
        ref = ref * 0.5 + t
    return dict(fn=repeated_scale, args=[x, 4, n], spec={'i': parir.threads(n)},
                check=[(x, ref)])


def case_prefix_sum(n, gen, device, dtype=torch.float64):
    x = _rand(n, dtype, gen, device)
    y = _poison(n, dtype, device)
    return dict(fn=prefix_sum, args=[x, y, n], spec={}, check=[(y, torch.cumsum(x, 0))])


def case_fill_then_scale(n, gen, device, dtype=torch.float32):
    n = max(n, 2)
    x = _rand(n, dtype, gen, device)
    y = _poison(n, dtype, device)
    ref = x.double() * 2.0
    ref[0] = 2.0
    return dict(fn=fill_then_scale, args=[x, y, n], spec={'i': parir.threads(min(n, 1024))},
                check=[(y, ref)])


def _control_flow_ref(x):
    out = []
    for v in x.double().tolist():
        if v > 0.5:
            out.append(1.0)
        elif v < -0.5:
            out.append(-1.0)
        else:
            steps = 0
            while v < 0.5 and steps < 100:
                v += 0.25
                steps += 1
            out.append(float(steps) if v > 0.0 else -v)
    return torch.tensor(out, dtype=torch.float64)


def case_control_flow(n, gen, device, dtype=torch.float32):
    x = _rand(n, dtype, gen, device)
    y = _poison(n, dtype, device)
    return dict(fn=control_flow, args=[x, y, n], spec={'i': parir.threads(n)},
                check=[(y, _control_flow_ref(x.cpu()))])


def _int_ops_ref(a, b):
    rows = []
    for x, y in zip(a.tolist(), b.tolist()):
        rows.append([x + y, x - y, x * y, x // y, x % y, x & y, x | y, x ^ y, (x << 2) >> 1,
                     ~x, -x, x ** 3, min(x, y), max(x, y), abs(x),
                     1 if (x > y and not x == 0) or y == 3 else 0])
    return torch.tensor(rows, dtype=torch.int64)


def case_int_ops(n, gen, device, dtype=torch.int32):
    a = torch.randint(-50, 50, (n,), generator=gen).to(dtype)
    b = torch.randint(1, 9, (n,), generator=gen).to(dtype) * torch.where(
        torch.rand(n, generator=gen) < 0.5, -1, 1).to(dtype)
    out = _poison((n, 16), dtype, device)
    return dict(fn=int_ops, args=[a.to(device), b.to(device), out, n],
                spec={'i': parir.threads(n)}, check=[(out, _int_ops_ref(a, b))])


def _float_ops_ref(a, b):
    rows = []
    for x, y in zip(a.tolist(), b.tolist()):
        rows.append([x + y * 2.5, x - y, x * y, x / y, x // y, x % y, abs(x) ** 0.5,
                     math.exp(x), math.log(abs(x) + 1.0), math.sqrt(abs(y)), math.sin(x),
                     math.cos(y), math.tanh(x), math.atan2(x, y), min(x, y), max(x, y), x,
                     float(int(x * 10.0)), x if x > y else y, -x])
    return torch.tensor(rows, dtype=torch.float64)


def case_float_ops(n, gen, device, dtype=torch.float64):
    a, b = _rand(n, dtype, gen, device, -3, 3), _rand(n, dtype, gen, device, -3, 3)
    out = _poison((n, 20), dtype, device)
    return dict(fn=float_ops, args=[a, b, out, n], spec={'i': parir.threads(n)},
                check=[(out, _float_ops_ref(a.cpu().double(), b.cpu().double()))])


def case_compare_to_bool(n, gen, device, dtype=torch.float32):
    a, b = _rand(n, dtype, gen, device), _rand(n, dtype, gen, device)
    b[::7] = a[::7]  # some equal pairs
    out = torch.zeros((n, 7), dtype=torch.bool, device=device)
    ref = torch.stack([a < b, a <= b, a > b, a >= b, a == b, a != b, (0.0 < a) & (a < b)], 1)
    return dict(fn=compare_to_bool, args=[a, b, out, n], spec={'i': parir.threads(n)},
                check=[(out, ref)])


def case_bool_logic(n, gen, device, dtype=torch.bool):
    p = (torch.rand(n, generator=gen) < 0.5).to(device)
    q = (torch.rand(n, generator=gen) < 0.5).to(device)
    out = torch.zeros((n, 5), dtype=torch.bool, device=device)
    ref = torch.stack([p & q, p | q, ~p, p ^ q, ~p], 1)
    return dict(fn=bool_logic, args=[p, q, out, n], spec={'i': parir.threads(n)},
                check=[(out, ref)])


def case_reverse_strided(n, gen, device, dtype=torch.float32):
    x = _rand(n, dtype, gen, device)
    y = _poison(n, dtype, device)
    ref = torch.flip(x, [0]).double()
    ref[0::3] *= 2.0
    return dict(fn=reverse_strided, args=[x, y, n], spec={'i': parir.threads(n)},
                check=[(y, ref)])


def case_transpose_copy(n, gen, device, dtype=torch.float32):
    m = 19
    base = _rand((m, n), dtype, gen, device)
    x = base.t()  # shape (n, m), strides (1, n)
    y = _poison((n, m), dtype, device)
    return dict(fn=transpose_copy, args=[x, y, n, m],
                spec={'i': parir.threads(n), 'j': parir.threads(m)}, check=[(y, x)])


def case_mixed_types(n, gen, device, dtype=torch.float64):
    xi = torch.randint(-20, 20, (n,), generator=gen, dtype=torch.int32).to(device)
    xf = _rand(n, torch.float64, gen, device)
    out = _poison(n, torch.float64, device)
    k = xi.double()
    ref = xf * k + k / 2 + torch.div(xi, 2, rounding_mode='floor').double()
    return dict(fn=mixed_types, args=[xi, xf, out, n], spec={'i': parir.threads(n)},
                check=[(out, ref)])


def case_lower_triangle_sums(n, gen, device, dtype=torch.float64):
    x = _rand((n, n), dtype, gen, device)
    y = _poison(n, dtype, device)
    return dict(fn=lower_triangle_sums, args=[x, y, n], spec={'i': parir.threads(n)},
                check=[(y, torch.tril(x).sum(1))])


def case_roll_by_one(n, gen, device, dtype=torch.float32):
    x = _rand(n, dtype, gen, device)
    y = _poison(n, dtype, device)
    return dict(fn=roll_by_one, args=[x, y, n], spec={'i': parir.threads(n)},
                check=[(y, torch.roll(x, 1))])


CASES = {
    name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}
