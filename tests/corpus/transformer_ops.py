"""Custom kernels for transformer layers, written the way their usual authors write them
(FasterTransformer's fused bias activations, LLaMA's SwiGLU, llm.c's CUDA kernels,
bitsandbytes' row-wise int8 quantization, Apex's fused dropout + residual + layer norm), with
their variable names and habits: flattened index loops, views of one packed buffer as
arguments (q, k, v of a qkv tensor, a padded vocab, a transposed batch), sizes read from shapes,
unicode names for the hyperparameters, NumPy scalars, float16/bfloat16 storage with float32
arithmetic, int32 and int64 indices. Several layers share one specification dict."""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint

# One specification for the row-wise layers, kept at module level as a model keeps it and
# shared by several functions: rows on blocks, the features on threads (a reduction where the
# loop accumulates, an ordinary parallel loop elsewhere).
ROW_SPEC = {
    'row': parir.threads(64),
    'col': parir.threads(256).reduce(),
}


# ----- FasterTransformer's add_bias_gelu: in place on a half buffer, one flat index ----------

@parir.jit
def add_bias_gelu(out, bias, m, n):
    parir.label('elem')
    for id in range(m * n):
        val = parir.float32(out[id]) + parir.float32(bias[id % n])
        cdf = 0.5 * (1.0 + parir.tanh(0.7978845608028654 * (val + 0.044715 * val * val * val)))
        out[id] = val * cdf


def case_add_bias_gelu(rng, device):
    m, n = 4, 1000
    out2d = nonzero((m, n), rng, dtype=torch.float16, device=device, hi=3.0)
    bias = nonzero(n, rng, dtype=torch.float16, device=device)
    ref = torch.nn.functional.gelu(torch.from_numpy(f64(out2d) + f64(bias)), approximate="tanh")
    return dict(fn=add_bias_gelu, args=[out2d.view(-1), bias, m, n],
                spec={'elem': parir.threads(m * n)}, check=[(out2d, ref)])


# ----- SwiGLU as LLaMA's MLP writes it: x, gate = x.chunk(2, dim=-1); F.silu(x) * gate --------

def silu(v):
    return v * parir.sigmoid(v)


@parir.jit
def swiglu_fwd(xw, h):
    n_rows, two_d = xw.shape      # the gate and up projections come out of one matmul
    d = two_d // 2
    parir.label('row')
    for row in range(n_rows):
        parir.label('col')
        h[row, :] = silu(xw[row, :d]) * xw[row, d:]


def case_swiglu(rng, device):
    n_rows, H = 17, 513
    xw = nonzero((n_rows, 2 * H), rng, dtype=torch.bfloat16, device=device, hi=4.0)
    h = poison((n_rows, H), dtype=torch.bfloat16, device=device)
    a, b = f64(xw[:, :H]), f64(xw[:, H:])
    ref = a / (1.0 + np.exp(-a)) * b
    return dict(fn=swiglu_fwd, args=[xw, h], spec=ROW_SPEC, check=[(h, torch.from_numpy(ref))])


# ----- Rotary position embedding, interleaved pairs (GPT-J / llm.c), q and k of a qkv buffer --

@parir.jit
def rope_forward(q, k, freqs_cos, freqs_sin, q_out, k_out, B, T, NH, HD):
    parir.label('bt')
    for bt in range(B * T):
        b = bt // T
        t = bt % T
        parir.label('hd')
        for hd in range(NH * HD):
            h = hd // HD
            d = hd % HD
            xor = d ^ 1          # the other element of d's (real, imag) pair
            c = freqs_cos[t, d // 2]
            s = freqs_sin[t, d // 2]
            if d % 2 == 0:
                q_out[b, t, h, d] = q[b, t, h, d] * c - q[b, t, h, xor] * s
                k_out[b, t, h, d] = k[b, t, h, d] * c - k[b, t, h, xor] * s
            else:
                q_out[b, t, h, d] = q[b, t, h, d] * c + q[b, t, h, xor] * s
                k_out[b, t, h, d] = k[b, t, h, d] * c + k[b, t, h, xor] * s


def case_rope(rng, device):
    B, T, NH, HD = 1, 33, 3, 16
    qkv = nonzero((B, T, 3, NH, HD), rng, device=device)
    q, k = qkv[:, :, 0], qkv[:, :, 1]                     # (B, T, NH, HD), strided views
    theta = 10000.0 ** (-np.arange(0, HD, 2, dtype=np.float64) / HD)
    angles = np.arange(T, dtype=np.float64)[:, None] * theta[None, :]
    freqs_cos = torch.from_numpy(np.cos(angles)).float().to(device)
    freqs_sin = torch.from_numpy(np.sin(angles)).float().to(device)
    q_out = poison((B, T, NH, HD), device=device)
    k_out = poison((B, T, NH, HD), device=device)

    def rotate(x):
        xc = x[..., 0::2] + 1j * x[..., 1::2]
        rot = xc * (f64(freqs_cos) + 1j * f64(freqs_sin))[None, :, None, :]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = rot.real, rot.imag
        return torch.from_numpy(out)

    return dict(fn=rope_forward,
                args=[q, k, freqs_cos, freqs_sin, q_out, k_out, B, T, NH, HD],
                spec={'bt': parir.threads(B * T), 'hd': parir.threads(NH * HD)},
                check=[(q_out, rotate(f64(q))), (k_out, rotate(f64(k)))])


# ----- Cross-entropy forward over a padded vocab (llm.c's Vp), int64 targets, ignore_index ----

@parir.jit
def cross_entropy_fwd(logits, targets, losses, probs, ignore_index, BT, V):
    parir.label('row')
    for i in range(BT):
        maxval = -float('inf')  # as Triton's kernels write it
        parir.label('V')
        for v in range(V):
            maxval = parir.max(maxval, logits[i, v])
        sumval = 0.0
        parir.label('V')
        for v in range(V):
            sumval += parir.exp(logits[i, v] - maxval)
        lse = maxval + parir.log(sumval)
        ix = targets[i]
        if ix == ignore_index:
            losses[i] = 0.0
        else:
            losses[i] = lse - logits[i, ix]
        parir.label('V')
        for v in range(V):
            probs[i, v] = parir.exp(logits[i, v] - lse)


def case_cross_entropy(rng, device):
    BT, V, Vp = 5, 1000, 1024
    logits_padded = nonzero((BT, Vp), rng, device=device, hi=8.0)
    logits = logits_padded[:, :V]                       # only the real vocab
    targets = randint(BT, rng, 0, V, dtype=torch.int64, device=device)
    targets[2] = -100
    losses = poison(BT, device=device)
    probs = poison((BT, V), device=device)
    lg = torch.from_numpy(f64(logits))
    ref_loss = torch.nn.functional.cross_entropy(lg, targets.cpu(), ignore_index=-100,
                                                 reduction="none")
    return dict(fn=cross_entropy_fwd, args=[logits, targets, losses, probs, -100, BT, V],
                spec={'row': parir.threads(BT), 'V': parir.threads(1024).reduce()},
                check=[(losses, ref_loss), (probs, torch.softmax(lg, dim=1))])


# ----- One causal attention head (llm.c attention_forward_kernel1), q, k, v views of qkv -----

@parir.jit
def attention_forward(q, k, v, preatt, att, out, T, HS):
    parir.label('t')
    for t in range(T):
        scale = 1.0 / math.sqrt(HS)
        # pass 1: calculate query dot key and maxval
        maxval = -10000.0  # TODO something better
        parir.label('t2')
        for t2 in range(t + 1):
            val = 0.0
            for i in range(HS):
                val += parir.float32(q[t, i]) * parir.float32(k[t2, i])
            val *= scale
            maxval = max(maxval, val)   # llm.c: if (val > maxval) { maxval = val; }
            preatt[t, t2] = val
        # pass 2: calculate the exp and keep track of sum
        expsum = 0.0
        parir.label('t2')
        for t2 in range(t + 1):
            expv = parir.exp(preatt[t, t2] - maxval)
            expsum += expv
            att[t, t2] = expv
        expsum_inv = 0.0 if expsum == 0.0 else 1.0 / expsum
        # pass 3: normalize to get the softmax
        parir.label('t2')
        for t2 in range(T):
            if t2 <= t:
                att[t, t2] *= expsum_inv
            else:
                # causal attention mask. not strictly necessary to set to zero here
                # only doing this explicitly for debugging and checking to PyTorch
                att[t, t2] = 0.0
        # pass 4: accumulate weighted values into the output of attention
        parir.label('i')
        for i in range(HS):
            o = 0.0
            for t2 in range(t + 1):
                o += att[t, t2] * parir.float32(v[t2, i])
            out[t, i] = o


def case_causal_attention(rng, device):
    T, C, HS = 33, 48, 16
    qkv = nonzero((T, 3 * C), rng, dtype=torch.float16, device=device)
    q, k, v = qkv[:, 0:HS], qkv[:, C:C + HS], qkv[:, 2 * C:2 * C + HS]   # head 0
    preatt = torch.zeros((T, T), device=device)   # the kernel leaves t2 > t as it was
    att = poison((T, T), device=device)
    out = poison((T, HS), dtype=torch.float16, device=device)
    s = f64(q) @ f64(k).T / math.sqrt(HS)
    upper = np.triu_indices(T, 1)
    ref_pre = s.copy()
    ref_pre[upper] = 0.0
    s[upper] = -np.inf
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return dict(fn=attention_forward, args=[q, k, v, preatt, att, out, T, HS],
                spec={'t': parir.threads(T), 't2': parir.threads(64).reduce(),
                      'i': parir.threads(HS)},
                check=[(preatt, torch.from_numpy(ref_pre)), (att, torch.from_numpy(p)),
                       (out, torch.from_numpy(p @ f64(v)))])


# ----- Batch norm forward (training): statistics over the columns, running stats updated ------

@parir.jit
def batch_norm_fwd(x, weight, bias, running_mean, running_var, save_mean, save_invstd, y,
                   momentum, ε, N, C):
    parir.label('C')
    for c in range(C):
        mean = 0.0
        parir.label('N')
        for n in range(N):
            mean += x[n, c]
        mean /= N
        var = 0.0
        parir.label('N')
        for n in range(N):
            var += (x[n, c] - mean) ** 2
        invstd = 1.0 / parir.sqrt(var / N + ε)
        save_mean[c] = mean
        save_invstd[c] = invstd
        running_mean[c] = (1 - momentum) * running_mean[c] + momentum * mean
        running_var[c] = (1 - momentum) * running_var[c] + momentum * var / (N - 1)
        parir.label('N')
        for n in range(N):
            y[n, c] = (x[n, c] - mean) * invstd * weight[c] + bias[c]


def case_batch_norm(rng, device):
    N, C = 500, 33
    # channel-major storage, seen as (N, C) through a transpose
    x = (nonzero((C, N), rng, device=device, hi=2.0) + 0.3).t()
    weight = nonzero(C, rng, device=device)
    bias = nonzero(C, rng, device=device)
    running_mean = nonzero(C, rng, device=device)
    running_var = positive(C, rng, device=device)
    save_mean, save_invstd = poison(C, device=device), poison(C, device=device)
    y = poison((N, C), device=device)
    momentum, ε = 0.1, np.float32(1e-5)
    a = f64(x)
    mu, var = a.mean(0), a.var(0)
    ref_rm = 0.9 * f64(running_mean) + 0.1 * mu
    ref_rv = 0.9 * f64(running_var) + 0.1 * a.var(0, ddof=1)
    invstd = 1.0 / np.sqrt(var + float(ε))
    ref_y = (a - mu) * invstd * f64(weight) + f64(bias)
    return dict(fn=batch_norm_fwd,
                args=[x, weight, bias, running_mean, running_var, save_mean, save_invstd, y,
                      momentum, ε, N, C],
                spec={'C': parir.threads(C), 'N': parir.threads(256).reduce()},
                check=[(save_mean, torch.from_numpy(mu)), (save_invstd, torch.from_numpy(invstd)),
                       (running_mean, torch.from_numpy(ref_rm)),
                       (running_var, torch.from_numpy(ref_rv)), (y, torch.from_numpy(ref_y))])


# ----- AdamW step (llm.c adamw_kernel2) with a bfloat16 copy of the master weights -----------

def lerp(start, end, weight):
    return start + weight * (end - start)


@parir.jit
def adamw_kernel2(params_memory, params_bf16, grads_memory, m_memory, v_memory, num_parameters,
                  learning_rate, β1, β2, t, ε, lambda_):
    β1_correction = 1.0 - β1 ** t
    β2_correction = 1.0 - β2 ** t
    parir.label('i')
    for i in range(num_parameters):
        grad = grads_memory[i]
        m = m_memory[i]
        v = v_memory[i]
        # update the first moment (momentum)
        m = lerp(grad, m, β1)
        m_memory[i] = m
        # update the second moment (RMSprop)
        v = lerp(grad * grad, v, β2)
        v_memory[i] = v
        m /= β1_correction   # m_hat
        v /= β2_correction   # v_hat
        p = params_memory[i] - learning_rate * (m / (parir.sqrt(v) + ε)
                                                + lambda_ * params_memory[i])
        params_memory[i] = p
        params_bf16[i] = parir.bfloat16(p)


def case_adamw(rng, device):
    n = 4097
    params = nonzero(n, rng, device=device)
    grads = nonzero(n, rng, device=device)
    m_mem = nonzero(n, rng, device=device, hi=0.1)
    v_mem = positive(n, rng, device=device, lo=0.01, hi=0.1)
    params_bf16 = poison(n, dtype=torch.bfloat16, device=device)
    lr, β1, β2, t = np.float32(3e-4), 0.9, 0.95, 7
    ε, lambda_ = np.float32(1e-8), np.float32(0.1)
    p, g, m, v = f64(params), f64(grads), f64(m_mem), f64(v_mem)
    m = β1 * m + (1 - β1) * g
    v = β2 * v + (1 - β2) * g * g
    m_hat, v_hat = m / (1 - β1 ** t), v / (1 - β2 ** t)
    p = p - float(lr) * (m_hat / (np.sqrt(v_hat) + float(ε)) + float(lambda_) * p)
    return dict(fn=adamw_kernel2,
                args=[params, params_bf16, grads, m_mem, v_mem, n, lr, β1, β2, t, ε, lambda_],
                spec={'i': parir.threads(n)},
                check=[(params, torch.from_numpy(p)), (params_bf16, torch.from_numpy(p)),
                       (m_mem, torch.from_numpy(m)), (v_mem, torch.from_numpy(v))])


# ----- Token + position embedding (llm.c encoder_forward_kernel2), int32 ids, int64 positions

@parir.jit
def parir_kernel(out, inp, pos, wte, wpe, B, T, C):
    parir.label('N')
    for idx in range(B * T * C):
        bt = idx // C
        b = bt // T
        t = bt % T
        c = idx % C
        ix = inp[b, t]
        out[b, t, c] = wte[ix, c] + wpe[pos[b, t], c]


def case_embedding(rng, device):
    B, T, C, V, maxT = 2, 31, 33, 97, 40
    inp = randint((B, T), rng, 0, V, dtype=torch.int32, device=device)
    pos = (torch.arange(T, dtype=torch.int64) + 3).expand(B, T).to(device)  # an offset, a view
    wte = nonzero((V, C), rng, dtype=torch.float16, device=device)
    wpe = nonzero((maxT, C), rng, device=device)
    out = poison((B, T, C), device=device)
    ref = f64(wte)[inp.cpu().long().numpy()] + f64(wpe)[pos.cpu().numpy()]
    return dict(fn=parir_kernel, args=[out, inp, pos, wte, wpe, B, T, C],
                spec={'N': parir.threads(B * T * C)}, check=[(out, torch.from_numpy(ref))])


# ----- Row-wise int8 quantization by absmax, and back (bitsandbytes' quantize_rowwise) -------

@parir.jit
def quantize_rowwise(x, output, output_maxs, x_deq, n_rows, n_elements):
    parir.label('row')
    for pid in range(n_rows):
        max_val = 0.0
        parir.label('col')
        for j in range(n_elements):
            max_val = max(max_val, abs(x[pid, j]))
        output_maxs[pid] = max_val
        parir.label('col')
        for j in range(n_elements):
            output[pid, j] = parir.int8(parir.round(127.0 * (x[pid, j] / max_val)))
        parir.label('col')
        for j in range(n_elements):
            x_deq[pid, j] = output[pid, j] * (output_maxs[pid] / 127.0)


def case_int8_quant(rng, device):
    n_rows, n_elements = 5, 1000
    x = nonzero((n_rows, n_elements), rng, device=device, hi=3.0)
    # common.poison's -7777 does not fit int8; -128 is a value the rounding never gives
    output = torch.full((n_rows, n_elements), -128, dtype=torch.int8, device=device)
    output_maxs = poison(n_rows, device=device)
    x_deq = poison((n_rows, n_elements), device=device)
    # float32 on purpose: the rounding to int8 must see the same quotient as the kernel
    xc = x.cpu()
    maxs = xc.abs().amax(1)
    q = torch.round(127.0 * (xc / maxs[:, None])).to(torch.int8)
    deq = q.double() * (maxs / 127.0).double()[:, None]
    return dict(fn=quantize_rowwise, args=[x, output, output_maxs, x_deq, n_rows, n_elements],
                spec=ROW_SPEC, check=[(output_maxs, maxs), (output, q), (x_deq, deq)])


# ----- Fused bias + dropout + residual add + layer norm (Apex / FasterTransformer) -----------

@parir.jit
def dropout_add_layer_norm(x, bias, mask, residual, h, y, γ, β, ε, N, D):
    parir.label('row')
    for i in range(N):
        parir.label('col')
        for j in range(D):
            h[i, j] = residual[i, j] + (x[i, j] + bias[j]) * mask[i, j]
        mean = 0.0
        parir.label('col')
        for j in range(D):
            mean += h[i, j]
        mean = mean / D
        var = 0.0
        parir.label('col')
        for j in range(D):
            diff = h[i, j] - mean
            var += diff * diff
        rstd = parir.rsqrt(var / D + ε)
        parir.label('col')
        for j in range(D):
            y[i, j] = (h[i, j] - mean) * rstd * γ[j] + β[j]


def case_dropout_add_layer_norm(rng, device):
    N, D, p_drop = 5, 1000, 0.1
    x_full = nonzero((N, D + 24), rng, device=device, hi=2.0)   # the matmul's padded output
    x = x_full[:, :D]
    bias = nonzero(D, rng, device=device)
    keep = torch.rand((N, D), generator=rng) >= p_drop
    mask = (keep.double() / (1.0 - p_drop)).float().to(device)
    residual = nonzero((N, D), rng, device=device)
    y = poison((N, D), device=device)
    γ, β = nonzero(D, rng, device=device), nonzero(D, rng, device=device)
    ε = 1e-5
    hh = f64(residual) + (f64(x) + f64(bias)) * f64(mask)
    h = residual          # in place: the residual stream is updated, as in FasterTransformer
    mu = hh.mean(1, keepdims=True)
    var = ((hh - mu) ** 2).mean(1, keepdims=True)
    ref_y = (hh - mu) / np.sqrt(var + ε) * f64(γ) + f64(β)
    return dict(fn=dropout_add_layer_norm, args=[x, bias, mask, residual, h, y, γ, β, ε, N, D],
                spec=ROW_SPEC, check=[(h, torch.from_numpy(hh)), (y, torch.from_numpy(ref_y))])


CASES = {
    "tf_add_bias_gelu_fp16": case_add_bias_gelu,
    "tf_swiglu_bf16_chunk": case_swiglu,
    "tf_rope_qk_views": case_rope,
    "tf_cross_entropy_padded_vocab": case_cross_entropy,
    "tf_causal_attention_head": case_causal_attention,
    "tf_batch_norm_columns": case_batch_norm,
    "tf_adamw_step": case_adamw,
    "tf_embedding_parir_kernel": case_embedding,
    "tf_int8_quant_rowwise": case_int8_quant,
    "tf_dropout_add_layer_norm": case_dropout_add_layer_norm,
}
