"""Triton versions of the roofline kernels, written the way Triton's tutorials write them: what a
user who picked Triton instead of parir would run.

axpy follows the vector-add tutorial; softmax the fused-softmax tutorial (one program per row,
BLOCK_SIZE = next_power_of_2(n_cols), its choice of num_warps); layer norm is the layer-norm
tutorial's forward kernel; row sum, row max and RMS norm are written the same ways. Column sum
is a 2-D tiled reduction (each program takes BLOCK_N columns and walks down the rows), full sum
a block sum plus one atomic add per program, and the stencil a 2-D tiled kernel with masks.

Importing this module never fails: without Triton, AVAILABLE is False, WHY says why, and the
functions raise RuntimeError (the roofline suite reports Triton as unavailable and goes on).
"""

import torch

try:
    import triton
    import triton.language as tl
    AVAILABLE, WHY = True, ""
except Exception as e:  # not installed, or an install that cannot load
    triton = tl = None
    AVAILABLE, WHY = False, f"{type(e).__name__}: {e}"


def _require():
    if not AVAILABLE:
        raise RuntimeError(f"Triton is not importable ({WHY})")


def _tutorial_warps(block_size):
    # The fused-softmax tutorial's choice: more warps for longer rows.
    return 16 if block_size >= 4096 else 8 if block_size >= 2048 else 4


def _norm_block_and_warps(x, n_cols):
    # The layer-norm tutorial's choice: blocks of up to 64 KB of the row, a warp per 256 elements
    # (at most 8).
    block = min(65536 // x.element_size(), triton.next_power_of_2(n_cols))
    return block, min(max(block // 256, 1), 8)


# The kernels exist only where Triton does; the wrappers below check first.
if AVAILABLE:
    @triton.jit
    def _axpy_kernel(x_ptr, y_ptr, a, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        block_start = pid * BLOCK_SIZE
        offsets = block_start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(y_ptr + offsets, y + a * x, mask=mask)

    @triton.jit
    def _row_sum_kernel(x_ptr, y_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row_idx = tl.program_id(0)
        col_offsets = tl.arange(0, BLOCK_SIZE)
        row = tl.load(x_ptr + row_idx * row_stride + col_offsets, mask=col_offsets < n_cols,
                      other=0.0)
        tl.store(y_ptr + row_idx, tl.sum(row, axis=0))

    @triton.jit
    def _row_max_kernel(x_ptr, y_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row_idx = tl.program_id(0)
        col_offsets = tl.arange(0, BLOCK_SIZE)
        row = tl.load(x_ptr + row_idx * row_stride + col_offsets, mask=col_offsets < n_cols,
                      other=-float('inf'))
        tl.store(y_ptr + row_idx, tl.max(row, axis=0))

    @triton.jit
    def _col_sum_kernel(x_ptr, y_ptr, n_rows, n_cols, row_stride,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        pid = tl.program_id(0)
        cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        col_mask = cols < n_cols
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for start in range(0, n_rows, BLOCK_M):
            rows = start + tl.arange(0, BLOCK_M)
            mask = (rows[:, None] < n_rows) & col_mask[None, :]
            acc += tl.load(x_ptr + rows[:, None] * row_stride + cols[None, :], mask=mask,
                           other=0.0)
        tl.store(y_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)

    @triton.jit
    def _sum_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
        tl.atomic_add(out_ptr, tl.sum(x, axis=0))

    @triton.jit
    def _softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                        BLOCK_SIZE: tl.constexpr):
        row_idx = tl.program_id(0)
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        row = tl.load(input_ptrs, mask=col_offsets < n_cols, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=col_offsets < n_cols)

    @triton.jit
    def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps,
                              BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        mean = 0
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y, mask=mask)

    @triton.jit
    def _rms_norm_fwd(X, Y, W, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        # The layer-norm tutorial's forward kernel with the mean and bias taken out.
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _ss = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _ss += x * x
        rstd = 1 / tl.sqrt(tl.sum(_ss, axis=0) / N + eps)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            tl.store(Y + cols, x * rstd * w, mask=mask)

    @triton.jit
    def _stencil_2d_kernel(x_ptr, y_ptr, n_rows, n_cols, stride,
                           BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
        # A BLOCK_I x BLOCK_J tile of the interior per program; the border is not written.
        i = 1 + tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)[:, None]
        j = 1 + tl.program_id(1) * BLOCK_J + tl.arange(0, BLOCK_J)[None, :]
        mask = (i < n_rows - 1) & (j < n_cols - 1)
        p = x_ptr + i * stride + j
        c = tl.load(p, mask=mask)
        up = tl.load(p - stride, mask=mask)
        down = tl.load(p + stride, mask=mask)
        left = tl.load(p - 1, mask=mask)
        right = tl.load(p + 1, mask=mask)
        tl.store(y_ptr + i * stride + j, 0.2 * (c + up + down + left + right), mask=mask)


def axpy(a, x, y):
    """y += a * x in place; returns y."""
    _require()
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)  # noqa: E731
    _axpy_kernel[grid](x, y, a, n_elements, BLOCK_SIZE=1024)
    return y


def row_sum(x):
    _require()
    n_rows, n_cols = x.shape
    y = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(n_cols)
    _row_sum_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK_SIZE=block,
                               num_warps=_tutorial_warps(block))
    return y


def row_max(x):
    _require()
    n_rows, n_cols = x.shape
    y = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    block = triton.next_power_of_2(n_cols)
    _row_max_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK_SIZE=block,
                               num_warps=_tutorial_warps(block))
    return y


def col_sum(x):
    _require()
    n_rows, n_cols = x.shape
    y = torch.empty(n_cols, device=x.device, dtype=x.dtype)
    # 32 columns (128-byte row segments, one per warp load) by 128 rows per step: 16 KB of
    # loads in flight per program, and 8192 columns give 256 programs.
    BLOCK_M, BLOCK_N = 128, 32
    _col_sum_kernel[(triton.cdiv(n_cols, BLOCK_N),)](x, y, n_rows, n_cols, x.stride(0),
                                                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return y


def full_sum(x):
    """The sum of all elements as a 1-element tensor (zeroed, then added to atomically)."""
    _require()
    n_elements = x.numel()
    out = torch.zeros(1, device=x.device, dtype=x.dtype)
    BLOCK_SIZE = 4096
    _sum_kernel[(triton.cdiv(n_elements, BLOCK_SIZE),)](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out


def softmax(x):
    _require()
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    y = torch.empty_like(x)
    _softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE,
                               num_warps=_tutorial_warps(BLOCK_SIZE))
    return y


def layer_norm(x, weight, bias, eps):
    _require()
    M, N = x.shape
    y = torch.empty_like(x)
    # The tutorial's forward also stores each row's mean and 1/std (for the backward pass).
    mean = torch.empty((M,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M,), dtype=torch.float32, device=x.device)
    BLOCK_SIZE, num_warps = _norm_block_and_warps(x, N)
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps,
                                BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y


def rms_norm(x, weight, eps):
    _require()
    M, N = x.shape
    y = torch.empty_like(x)
    BLOCK_SIZE, num_warps = _norm_block_and_warps(x, N)
    _rms_norm_fwd[(M,)](x, y, weight, x.stride(0), N, eps, BLOCK_SIZE=BLOCK_SIZE,
                        num_warps=num_warps)
    return y


def stencil_2d(x, y):
    """The 5-point average of x over the interior, into y's interior; returns that view."""
    _require()
    n_rows, n_cols = x.shape
    assert x.stride() == y.stride() and x.stride(1) == 1
    BLOCK_I, BLOCK_J = 16, 128
    grid = (triton.cdiv(n_rows - 2, BLOCK_I), triton.cdiv(n_cols - 2, BLOCK_J))
    _stencil_2d_kernel[grid](x, y, n_rows, n_cols, x.stride(0), BLOCK_I=BLOCK_I, BLOCK_J=BLOCK_J)
    return y[1:-1, 1:-1]
