"""Optional arguments as PyTorch, Triton and Numba users write them: parameters that default to
`None` and are tested with `is None` / `is not None`, the signatures of torch.nn.functional
(`F.layer_norm(..., weight=None, bias=None)`, `F.linear(input, weight, bias=None)`,
`F.scaled_dot_product_attention(..., attn_mask=None, scale=None)`, `F.batch_norm` without its
affine parameters, `F.embedding_bag(..., per_sample_weights=None, padding_idx=None)`,
`F.cross_entropy(..., weight=None, ignore_index=-100, label_smoothing=0.0)`, `torch.clamp`'s
optional bounds, `F.rms_norm(..., eps=None)`), the Triton kernels' optional outputs and inputs
(the layer-norm tutorial's `Mean` and `Rstd`, flash-attn's `residual=None` and `residual_out`
with `has_residual = residual is not None` standing in for a constexpr), Megatron's bias +
dropout + residual with `bias=None` in eval mode, a fused bias GELU, Hugging Face's rotary
embedding with `position_ids=None`, and torch's fused Adam with a state dict whose
`'max_exp_avg_sq'` is None unless AMSGrad and optional `grad_scale` / `found_inf` tensors.

The tests sit where those authors put them: `if bias is not None:` in the loop body,
`w = weight[col] if weight is not None else 1.0`, `if lo is not None and v < lo:`,
`if found_inf is None or found_inf[0] == 0.0:`, a helper that returns a default for a missing
per-channel tensor, a default computed before the loops (`if scale is None: scale = 1.0 /
math.sqrt(E)`). Each program runs both ways: a case with the tensor given and one with None,
or with the trailing parameters left out of the call so that their defaults apply. Sizes are
not multiples of 32. References come from torch / torch.nn.functional (or torch.optim) in
float64, computed before the program runs."""

import math

import torch
import torch.nn.functional as F

import parir_torch as parir

from .common import nonzero, poison, positive, randint


def _d(t):
    """A float64 CPU copy of a tensor, for the torch references."""
    return t.detach().cpu().double()


def _row_spec(rows):
    return {'row': parir.threads(rows), 'col': parir.threads(1024).reduce()}


# ----- Layer norm as the Triton tutorial writes it: optional W and B (F.layer_norm's weight=None,
# ----- bias=None) and the optional Mean and Rstd outputs saved for the backward pass -----------

@parir.jit
def layer_norm_fwd(X, Y, W=None, B=None, eps=1e-5, Mean=None, Rstd=None):
    M, N = X.shape
    parir.label('row')
    for row in range(M):
        mean = 0.0
        parir.label('col')
        for col in range(N):
            mean += X[row, col]
        mean = mean / N
        var = 0.0
        parir.label('col')
        for col in range(N):
            var += (X[row, col] - mean) * (X[row, col] - mean)
        var = var / N
        rstd = 1.0 / math.sqrt(var + eps)
        if Mean is not None:
            Mean[row] = mean
        if Rstd is not None:
            Rstd[row] = rstd
        parir.label('col')
        for col in range(N):
            x_hat = (X[row, col] - mean) * rstd
            w = W[col] if W is not None else 1.0
            b = B[col] if B is not None else 0.0
            Y[row, col] = x_hat * w + b


def _layer_norm_case(affine, stats):
    def case(rng, device):
        M, N = 7, 1000
        X = nonzero((M, N), rng, device=device, hi=3.0) + 0.5
        Y = poison((M, N), device=device)
        W = nonzero(N, rng, device=device)
        B = nonzero(N, rng, device=device)
        if affine == "none":
            args = [X, Y]  # weight, bias, eps and the statistics left at their defaults
            ref = F.layer_norm(_d(X), (N,))
        elif affine == "bias":
            args = [X, Y, None, B]
            ref = F.layer_norm(_d(X), (N,), None, _d(B))
        else:
            args = [X, Y, W, B, 1e-6]
            ref = F.layer_norm(_d(X), (N,), _d(W), _d(B), eps=1e-6)
        check = [(Y, ref)]
        if stats:
            Mean = poison(M, device=device)
            Rstd = poison(M, device=device)
            args += [Mean, Rstd]
            var, mu = torch.var_mean(_d(X), dim=1, correction=0)
            check += [(Mean, mu), (Rstd, 1.0 / torch.sqrt(var + 1e-6))]
        return dict(fn=layer_norm_fwd, args=args, spec=_row_spec(M), check=check)
    return case


# ----- RMS norm with an optional residual, as flash-attn's Triton kernel takes it: the sum
# ----- x + residual normalized and, when residual_out is given, stored in float32
# ----- (residual_in_fp32); eps=None means the float32 eps, as F.rms_norm's default ---------------

@parir.jit
def rms_norm_fwd(x, weight, out, residual=None, residual_out=None, eps=None):
    if eps is None:
        eps = 1.1920928955078125e-07  # torch.finfo(torch.float32).eps, the compute type's
    has_residual = residual is not None
    store_residual_out = residual_out is not None
    n_rows, n_cols = x.shape
    parir.label('row')
    for row in range(n_rows):
        sum_sq = 0.0
        parir.label('col')
        for col in range(n_cols):
            v = parir.float32(x[row, col])
            if has_residual:
                v += parir.float32(residual[row, col])
            if store_residual_out:
                residual_out[row, col] = v
            sum_sq += v * v
        rstd = 1.0 / math.sqrt(sum_sq / n_cols + eps)
        parir.label('col')
        for col in range(n_cols):
            v = parir.float32(x[row, col])
            if has_residual:
                v += parir.float32(residual[row, col])
            out[row, col] = v * rstd * parir.float32(weight[col])


def _rms_norm_case(with_residual, store):
    def case(rng, device):
        n_rows, n_cols = 9, 2049
        x = nonzero((n_rows, n_cols), rng, dtype=torch.bfloat16, device=device, hi=3.0)
        weight = nonzero(n_cols, rng, dtype=torch.bfloat16, device=device)
        out = poison((n_rows, n_cols), dtype=torch.bfloat16, device=device)
        args = [x, weight, out]
        h = _d(x)
        eps = torch.finfo(torch.float32).eps
        check = []
        if with_residual:
            residual = nonzero((n_rows, n_cols), rng, dtype=torch.bfloat16, device=device)
            h = h + _d(residual)
            args.append(residual)
            if store:
                residual_out = poison((n_rows, n_cols), device=device)
                eps = 1e-5
                args += [residual_out, eps]
                check.append((residual_out, h.clone()))
        ref = F.rms_norm(h, (n_cols,), _d(weight), eps=eps)
        return dict(fn=rms_norm_fwd, args=args, spec=_row_spec(n_rows),
                    check=[(out, ref)] + check)
    return case


# ----- F.linear(input, weight, bias=None): rows of the batch on blocks, output features on
# ----- threads, the bias added after the dot product when there is one --------------------------

@parir.jit
def linear(input, weight, output, bias=None):
    N, in_features = input.shape
    out_features = weight.shape[0]
    parir.label('N')
    for n in range(N):
        parir.label('out')
        for o in range(out_features):
            acc = 0.0
            for k in range(in_features):
                acc += input[n, k] * weight[o, k]
            if bias is not None:
                acc += bias[o]
            output[n, o] = acc


def _linear_case(with_bias):
    def case(rng, device):
        N, in_features, out_features = 77, 33, 100
        input = nonzero((N, in_features), rng, device=device)
        weight = nonzero((out_features, in_features), rng, device=device)
        bias = nonzero(out_features, rng, device=device) if with_bias else None
        output = poison((N, out_features), device=device)
        ref = F.linear(_d(input), _d(weight), None if bias is None else _d(bias))
        args = [input, weight, output] + ([bias] if with_bias else [])
        return dict(fn=linear, args=args,
                    spec={'N': parir.threads(N), 'out': parir.threads(out_features)},
                    check=[(output, ref)])
    return case


# ----- Scaled dot-product attention with F.scaled_dot_product_attention's attn_mask=None (an
# ----- additive float mask) and scale=None (1 / sqrt(E)), the attention weights kept as
# ----- nn.MultiheadAttention returns them; one (batch, head, query) a block ----------------------

@parir.jit
def sdpa_fwd(q, k, v, attn, out, attn_mask=None, scale=None):
    B, H, L, E = q.shape
    S = k.shape[2]
    Ev = v.shape[3]
    if scale is None:
        scale = 1.0 / math.sqrt(E)
    parir.label('bhl')
    for bhl in range(B * H * L):
        b = bhl // (H * L)
        h = (bhl // L) % H
        l = bhl % L
        parir.label('s')
        for s in range(S):
            score = 0.0
            for e in range(E):
                score += q[b, h, l, e] * k[b, h, s, e]
            score = score * scale
            if attn_mask is not None:
                score += attn_mask[l, s]
            attn[b, h, l, s] = score
        m = float('-inf')
        parir.label('s')
        for s in range(S):
            m = max(m, attn[b, h, l, s])
        denom = 0.0
        parir.label('s')
        for s in range(S):
            p = math.exp(attn[b, h, l, s] - m)
            attn[b, h, l, s] = p
            denom += p
        parir.label('s')
        for s in range(S):
            attn[b, h, l, s] = attn[b, h, l, s] / denom
        parir.label('ev')
        for ev in range(Ev):
            acc = 0.0
            for s in range(S):
                acc += attn[b, h, l, s] * v[b, h, s, ev]
            out[b, h, l, ev] = acc


def _sdpa_case(masked):
    def case(rng, device):
        B, H, E, Ev = 2, 3, 24, 20
        L, S = (33, 33) if masked else (33, 45)
        q = nonzero((B, H, L, E), rng, device=device)
        k = nonzero((B, H, S, E), rng, device=device)
        v = nonzero((B, H, S, Ev), rng, device=device)
        attn = poison((B, H, L, S), device=device)
        out = poison((B, H, L, Ev), device=device)
        args = [q, k, v, attn, out]
        mask = scale = None
        if masked:
            # causal, with a relative-position bias on the positions it keeps
            mask = nonzero((L, S), rng, device=device)
            mask = mask.masked_fill(torch.ones(L, S, dtype=torch.bool, device=device).triu(1),
                                    float('-inf'))
            scale = 0.3
            args += [mask, scale]
        m = None if mask is None else _d(mask)
        ref = F.scaled_dot_product_attention(_d(q), _d(k), _d(v), attn_mask=m, scale=scale)
        scores = _d(q) @ _d(k).transpose(-1, -2) * (1.0 / math.sqrt(E) if scale is None
                                                      else scale)
        weights = torch.softmax(scores if m is None else scores + m, dim=-1)
        spec = {'bhl': parir.threads(B * H * L), 's': parir.threads(64).reduce(),
                'ev': parir.threads(Ev)}
        return dict(fn=sdpa_fwd, args=args, spec=spec, check=[(attn, weights), (out, ref)])
    return case


# ----- Megatron's bias_dropout_add: out = residual + dropout(x + bias), bias=None for layers
# ----- built without one, and the dropout mask precomputed (as Apex keeps it), None in eval ----

@parir.jit
def bias_dropout_add(x, bias, residual, out, prob, mask=None):
    n_tokens, hidden = x.shape
    parir.label('i')
    for i in range(n_tokens * hidden):
        t = i // hidden
        h = i % hidden
        v = x[t, h]
        if bias is not None:
            v = v + bias[h]
        if mask is not None:
            v = v * mask[t, h] / (1.0 - prob)  # as F.dropout scales the kept elements
        out[t, h] = residual[t, h] + v


def _bias_dropout_add_case(with_bias, training):
    def case(rng, device):
        n_tokens, hidden, prob = 77, 1000, 0.1
        x = nonzero((n_tokens, hidden), rng, device=device)
        bias = nonzero(hidden, rng, device=device) if with_bias else None
        residual = nonzero((n_tokens, hidden), rng, device=device)
        out = poison((n_tokens, hidden), device=device)
        h = _d(x) if bias is None else _d(x) + _d(bias)
        args = [x, bias, residual, out, prob]
        if training:
            mask = (torch.rand((n_tokens, hidden), generator=rng) >= prob).to(device)
            h = h * _d(mask) / (1.0 - prob)
            args.append(mask)
        return dict(fn=bias_dropout_add, args=args,
                    spec={'i': parir.threads(n_tokens * hidden)},
                    check=[(out, _d(residual) + h)])
    return case


# ----- A fused bias + GELU on float16 activations, as Megatron's bias_gelu and
# ----- F.gelu(approximate=...) write it: bias=None for a layer without one, the approximation
# ----- a bool, the activation a helper returning from both branches ---------------------------

def gelu(v, approximate):
    if approximate:
        return 0.5 * v * (1.0 + math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
    else:
        return 0.5 * v * (1.0 + math.erf(v * 0.7071067811865476))


@parir.jit
def bias_gelu(x, out, bias=None, approximate=False):
    M, N = x.shape
    parir.label('m')
    for m in range(M):
        parir.label('n')
        for n in range(N):
            v = parir.float32(x[m, n])
            if bias is not None:
                v += parir.float32(bias[n])
            out[m, n] = gelu(v, approximate)


def _bias_gelu_case(with_bias):
    def case(rng, device):
        M, N = 33, 1000
        x = nonzero((M, N), rng, dtype=torch.float16, device=device, hi=3.0)
        out = poison((M, N), dtype=torch.float16, device=device)
        if with_bias:
            bias = nonzero(N, rng, dtype=torch.float16, device=device)
            args = [x, out, bias, True]
            ref = F.gelu(_d(x) + _d(bias), approximate='tanh')
        else:
            args = [x, out]
            ref = F.gelu(_d(x))
        return dict(fn=bias_gelu, args=args,
                    spec={'m': parir.threads(M), 'n': parir.threads(N)},
                    check=[(out, ref)])
    return case


# ----- torch.clamp's optional bounds, as a Numba user ports them: lo=None, hi=None, each
# ----- tested with `and` before the comparison it guards -------------------------------------

@parir.jit
def clamp_kernel(x, y, lo=None, hi=None):
    parir.label('i')
    for i in range(x.shape[0]):
        v = x[i]
        if lo is not None and v < lo:
            v = lo
        if hi is not None and v > hi:
            v = hi
        y[i] = v


def _clamp_case(lo, hi, dtype=torch.float32):
    def case(rng, device):
        n = 1000
        if dtype.is_floating_point:
            x = nonzero(n, rng, device=device)
        else:
            x = randint(n, rng, -50, 50, dtype=dtype, device=device)
        y = poison(n, dtype=dtype, device=device)
        args = [x, y]
        if lo is not None or hi is not None:
            args.append(lo)
        if hi is not None:
            args.append(hi)
        ref = torch.clamp(x.cpu().double() if dtype.is_floating_point else x.cpu(),
                          min=lo, max=hi)
        return dict(fn=clamp_kernel, args=args, spec={'i': parir.threads(n)},
                    check=[(y, ref)])
    return case


# ----- Batch norm in inference, F.batch_norm(input, running_mean, running_var, weight=None,
# ----- bias=None): a helper reads a per-channel parameter or gives the default when the layer
# ----- has no affine parameters (affine=False) ------------------------------------------------

def channel_param(p, c, default):
    if p is None:
        return default
    else:
        return p[c]


@parir.jit
def batch_norm_inference(input, output, running_mean, running_var, weight=None, bias=None,
                         eps=1e-5):
    N, C, H, W = input.shape
    parir.label('nc')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        inv_std = 1.0 / math.sqrt(running_var[c] + eps)
        scale = channel_param(weight, c, 1.0) * inv_std
        shift = channel_param(bias, c, 0.0) - running_mean[c] * scale
        parir.label('hw')
        for hw in range(H * W):
            output[n, c, hw // W, hw % W] = input[n, c, hw // W, hw % W] * scale + shift


def _batch_norm_case(affine):
    def case(rng, device):
        N, C, H, W = 2, 5, 17, 13
        input = nonzero((N, C, H, W), rng, device=device, hi=3.0)
        output = poison((N, C, H, W), device=device)
        running_mean = nonzero(C, rng, device=device)
        running_var = positive(C, rng, device=device, lo=0.5, hi=2.0)
        args = [input, output, running_mean, running_var]
        if affine:
            weight = nonzero(C, rng, device=device)
            bias = nonzero(C, rng, device=device)
            args += [weight, bias]
            ref = F.batch_norm(_d(input), _d(running_mean), _d(running_var), _d(weight),
                               _d(bias), training=False)
        else:
            ref = F.batch_norm(_d(input), _d(running_mean), _d(running_var), training=False)
        return dict(fn=batch_norm_inference, args=args,
                    spec={'nc': parir.threads(N * C), 'hw': parir.threads(H * W)},
                    check=[(output, ref)])
    return case


# ----- torch's fused AdamW step on one parameter: the optimizer's state a dict whose
# ----- 'max_exp_avg_sq' is None unless AMSGrad, the param group a dict of scalars, and the
# ----- optional grad_scale and found_inf tensors of torch._fused_adamw_ (mixed precision) --------

@parir.jit
def adamw_step(param, grad, state, group, step, grad_scale=None, found_inf=None):
    lr = group['lr']
    beta1 = group['beta1']
    beta2 = group['beta2']
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2_sqrt = math.sqrt(1.0 - beta2 ** step)
    parir.label('i')
    for i in range(param.shape[0]):
        if found_inf is None or found_inf[0] == 0.0:
            g = grad[i]
            if grad_scale is not None:
                g = g / grad_scale[0]
            p = param[i] * (1.0 - lr * group['weight_decay'])
            exp_avg = beta1 * state['exp_avg'][i] + (1.0 - beta1) * g
            exp_avg_sq = beta2 * state['exp_avg_sq'][i] + (1.0 - beta2) * g * g
            state['exp_avg'][i] = exp_avg
            state['exp_avg_sq'][i] = exp_avg_sq
            if state['max_exp_avg_sq'] is not None:
                max_sq = max(state['max_exp_avg_sq'][i], exp_avg_sq)
                state['max_exp_avg_sq'][i] = max_sq
                denom = math.sqrt(max_sq) / bias_correction2_sqrt + group['eps']
            else:
                denom = math.sqrt(exp_avg_sq) / bias_correction2_sqrt + group['eps']
            param[i] = p - lr / bias_correction1 * exp_avg / denom


def _adamw_case(amsgrad, scaled, skipped=False):
    def case(rng, device):
        n, step = 1000, 7
        group = {'lr': 1e-2, 'beta1': 0.9, 'beta2': 0.999, 'eps': 1e-8, 'weight_decay': 0.05}
        param = nonzero(n, rng, device=device)
        grad = nonzero(n, rng, device=device, hi=4.0)
        state = {'exp_avg': nonzero(n, rng, device=device, hi=0.1),
                 'exp_avg_sq': positive(n, rng, device=device, lo=1e-3, hi=0.1),
                 'max_exp_avg_sq': (positive(n, rng, device=device, lo=1e-3, hi=0.2)
                                    if amsgrad else None)}
        args = [param, grad, state, group, step]
        inv_scale = 1.0
        if scaled:
            grad_scale = torch.full((1,), 1024.0, device=device)
            found_inf = torch.full((1,), 1.0 if skipped else 0.0, device=device)
            args += [grad_scale, found_inf]
            inv_scale = 1.0 / 1024.0
        # The reference: torch.optim.AdamW's single-tensor step from the same state, in float64.
        p = _d(param).requires_grad_()
        p.grad = _d(grad) * inv_scale
        opt = torch.optim.AdamW([p], lr=group['lr'], betas=(group['beta1'], group['beta2']),
                                eps=group['eps'], weight_decay=group['weight_decay'],
                                amsgrad=amsgrad, foreach=False)
        st = {'step': torch.tensor(float(step - 1), dtype=torch.float64),
              'exp_avg': _d(state['exp_avg']), 'exp_avg_sq': _d(state['exp_avg_sq'])}
        if amsgrad:
            st['max_exp_avg_sq'] = _d(state['max_exp_avg_sq'])
        opt.state[p] = st
        if not skipped:
            opt.step()
        check = [(param, p.detach().clone()), (state['exp_avg'], st['exp_avg']),
                 (state['exp_avg_sq'], st['exp_avg_sq'])]
        if amsgrad:
            check.append((state['max_exp_avg_sq'], st['max_exp_avg_sq']))
        return dict(fn=adamw_step, args=args, spec={'i': parir.threads(n)}, check=check)
    return case


# ----- F.embedding_bag(input, weight, offsets, mode='sum', per_sample_weights=None,
# ----- padding_idx=None): one bag a block, the embedding dimension on threads; entries equal
# ----- to padding_idx are left out of the sum ----------------------------------------------

@parir.jit
def embedding_bag_sum(input, offsets, weight, output, per_sample_weights=None,
                      padding_idx=None):
    n_bags = offsets.shape[0]
    n_indices = input.shape[0]
    embedding_dim = weight.shape[1]
    parir.label('bag')
    for bag in range(n_bags):
        start = offsets[bag]
        end = offsets[bag + 1] if bag + 1 < n_bags else n_indices
        parir.label('dim')
        for d in range(embedding_dim):
            acc = 0.0
            for k in range(start, end):
                idx = input[k]
                if padding_idx is None or idx != padding_idx:
                    w = weight[idx, d]
                    if per_sample_weights is not None:
                        w = w * per_sample_weights[k]
                    acc += w
            output[bag, d] = acc


def _embedding_bag_case(weighted, padding_idx):
    def case(rng, device):
        num_embeddings, embedding_dim, n_bags = 50, 77, 33
        lengths = randint(n_bags, rng, 0, 9)
        lengths[5] = 0  # an empty bag sums to zero
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
        n_indices = int(lengths.sum())
        input = randint(n_indices, rng, 0, num_embeddings)
        if padding_idx is not None:
            input[::4] = padding_idx
        weight = nonzero((num_embeddings, embedding_dim), rng, device=device)
        output = poison((n_bags, embedding_dim), device=device)
        psw = nonzero(n_indices, rng, device=device) if weighted else None
        ref = F.embedding_bag(input, _d(weight), offsets, mode='sum',
                              per_sample_weights=None if psw is None else _d(psw),
                              padding_idx=padding_idx)
        args = [input.to(device), offsets.to(device), weight, output]
        if weighted or padding_idx is not None:
            args += [psw, padding_idx]
        return dict(fn=embedding_bag_sum, args=args,
                    spec={'bag': parir.threads(n_bags), 'dim': parir.threads(embedding_dim)},
                    check=[(output, ref)])
    return case


# ----- F.cross_entropy(logits, target, weight=None, ignore_index=-100, reduction='none',
# ----- label_smoothing=0.0) over rows of classes: the per-class weight scales the target's term
# ----- and each class's share of the smoothing ------------------------------------------------

@parir.jit
def cross_entropy_fwd(logits, target, losses, weight=None, ignore_index=-100,
                      label_smoothing=0.0):
    n_rows, n_classes = logits.shape
    parir.label('row')
    for row in range(n_rows):
        m = float('-inf')
        parir.label('col')
        for c in range(n_classes):
            m = max(m, logits[row, c])
        sum_exp = 0.0
        parir.label('col')
        for c in range(n_classes):
            sum_exp += math.exp(logits[row, c] - m)
        lse = m + math.log(sum_exp)
        smooth = 0.0
        if label_smoothing > 0.0:
            parir.label('col')
            for c in range(n_classes):
                smooth += (lse - logits[row, c]) * (weight[c] if weight is not None else 1.0)
        t = target[row]
        if t == ignore_index:
            losses[row] = 0.0
        else:
            w_t = weight[t] if weight is not None else 1.0
            losses[row] = ((1.0 - label_smoothing) * w_t * (lse - logits[row, t])
                           + label_smoothing * smooth / n_classes)


def _cross_entropy_case(weighted, label_smoothing):
    def case(rng, device):
        n_rows, n_classes = 77, 333
        logits = nonzero((n_rows, n_classes), rng, device=device, hi=6.0)
        target = randint(n_rows, rng, 0, n_classes)
        target[::10] = -100
        losses = poison(n_rows, device=device)
        weight = positive(n_classes, rng, device=device, lo=0.2, hi=2.0) if weighted else None
        ref = F.cross_entropy(_d(logits), target, None if weight is None else _d(weight),
                              reduction='none', label_smoothing=label_smoothing)
        args = [logits, target.to(device), losses]
        if weighted or label_smoothing:
            args += [weight, -100, label_smoothing]
        return dict(fn=cross_entropy_fwd, args=args, spec=_row_spec(n_rows),
                    check=[(losses, ref)])
    return case


# ----- Hugging Face's apply_rotary_pos_emb(q, k, cos, sin, position_ids=None): rotate_half's
# ----- halves, the cos/sin cache indexed by the token's position, given (a KV cache's offsets,
# ----- left padding) or the token's index ------------------------------------------------------

@parir.jit
def apply_rotary_pos_emb(q, k, cos, sin, q_embed, k_embed, position_ids=None):
    bsz, num_heads, seq_len, head_dim = q.shape
    half = head_dim // 2
    parir.label('bht')
    for bht in range(bsz * num_heads * seq_len):
        b = bht // (num_heads * seq_len)
        h = (bht // seq_len) % num_heads
        t = bht % seq_len
        pos = position_ids[b, t] if position_ids is not None else t
        parir.label('d')
        for d in range(head_dim):
            c = cos[pos, d]
            s = sin[pos, d]
            if d < half:
                q_embed[b, h, t, d] = q[b, h, t, d] * c - q[b, h, t, d + half] * s
                k_embed[b, h, t, d] = k[b, h, t, d] * c - k[b, h, t, d + half] * s
            else:
                q_embed[b, h, t, d] = q[b, h, t, d] * c + q[b, h, t, d - half] * s
                k_embed[b, h, t, d] = k[b, h, t, d] * c + k[b, h, t, d - half] * s


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rope_case(with_positions):
    def case(rng, device):
        bsz, num_heads, seq_len, head_dim, max_pos = 2, 3, 33, 48, 100
        q = nonzero((bsz, num_heads, seq_len, head_dim), rng, device=device)
        k = nonzero((bsz, num_heads, seq_len, head_dim), rng, device=device)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64)
                                      / head_dim))
        freqs = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q_embed = poison(q.shape, device=device)
        k_embed = poison(k.shape, device=device)
        args = [q, k, cos.float().to(device), sin.float().to(device), q_embed, k_embed]
        if with_positions:
            past = randint((bsz, 1), rng, 0, max_pos - seq_len)  # tokens already in the cache
            position_ids = past + torch.arange(seq_len)[None, :]
            args.append(position_ids.to(device))
        else:
            position_ids = torch.arange(seq_len)[None, :].expand(bsz, seq_len)
        c = cos.float().double()[position_ids][:, None]  # (bsz, 1, seq_len, head_dim)
        s = sin.float().double()[position_ids][:, None]
        q_ref = _d(q) * c + _rotate_half(_d(q)) * s
        k_ref = _d(k) * c + _rotate_half(_d(k)) * s
        return dict(fn=apply_rotary_pos_emb, args=args,
                    spec={'bht': parir.threads(bsz * num_heads * seq_len),
                          'd': parir.threads(head_dim)},
                    check=[(q_embed, q_ref), (k_embed, k_ref)])
    return case


CASES = {
    "optional_layer_norm_defaults": _layer_norm_case("none", False),
    "optional_layer_norm_bias_only": _layer_norm_case("bias", False),
    "optional_layer_norm_affine_mean_rstd": _layer_norm_case("affine", True),
    "optional_rms_norm_eps_default": _rms_norm_case(False, False),
    "optional_rms_norm_residual": _rms_norm_case(True, False),
    "optional_rms_norm_residual_out": _rms_norm_case(True, True),
    "optional_linear_no_bias": _linear_case(False),
    "optional_linear_bias": _linear_case(True),
    "optional_sdpa_no_mask_default_scale": _sdpa_case(False),
    "optional_sdpa_mask_scale": _sdpa_case(True),
    "optional_bias_dropout_add_train": _bias_dropout_add_case(True, True),
    "optional_bias_dropout_add_eval_no_bias": _bias_dropout_add_case(False, False),
    "optional_bias_dropout_add_no_bias_train": _bias_dropout_add_case(False, True),
    "optional_bias_gelu_fp16_no_bias": _bias_gelu_case(False),
    "optional_bias_gelu_fp16_bias_tanh": _bias_gelu_case(True),
    "optional_clamp_lo": _clamp_case(-0.5, None),
    "optional_clamp_hi": _clamp_case(None, 0.25),
    "optional_clamp_lo_hi": _clamp_case(-0.3, 0.6),
    "optional_clamp_int32_lo": _clamp_case(0, None, torch.int32),
    "optional_batch_norm_affine": _batch_norm_case(True),
    "optional_batch_norm_no_affine": _batch_norm_case(False),
    "optional_adamw": _adamw_case(False, False),
    "optional_adamw_amsgrad_grad_scale": _adamw_case(True, True),
    "optional_adamw_found_inf": _adamw_case(False, True, skipped=True),
    "optional_embedding_bag": _embedding_bag_case(False, None),
    "optional_embedding_bag_weighted_padding": _embedding_bag_case(True, 0),
    "optional_cross_entropy": _cross_entropy_case(False, 0.0),
    "optional_cross_entropy_weight_smoothing": _cross_entropy_case(True, 0.1),
    "optional_cross_entropy_weight": _cross_entropy_case(True, 0.0),
    "optional_rotary_position_ids": _rope_case(True),
    "optional_rotary_no_position_ids": _rope_case(False),
}
