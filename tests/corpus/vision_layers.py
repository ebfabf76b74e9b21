"""Vision layers written as a PyTorch user writes a custom kernel: NCHW tensors named `input`,
`output`, `weight`, `bias`, hyperparameters named as torch.nn.functional names them
(`kernel_size`, `stride`, `padding`, `dilation`, `eps`), sizes `N, C, H, W`.
Pooling (max with and without indices, average with and without the padding counted, adaptive,
global, 2x2 by strided slices), convolutions (direct with stride, padding and dilation; depthwise
through a helper; fused with inference batch_norm and leaky_relu on channels_last tensors;
transposed, in gather form), normalizations (group, instance, batch in training mode, local
response, F.normalize), activations (PReLU on float16, log_softmax over the channels), recurrent
cells (LSTM, GRU), distances and losses (cosine similarity, pairwise distance, triplet margin, KL
divergence, smooth L1 on bfloat16, nll_loss on a segmentation map).

The styles mix as users mix them: flat index loops decoded with // and %, labelled 4-deep
nests, helpers, slice reductions, `.reduce()` loops, `math` functions, `float('-inf')`,
NumPy int64 hyperparameters. Sizes are not multiples of 32. References come from
torch.nn.functional (or torch.nn modules) in float64, computed before the program runs."""

import math

import numpy as np
import torch
import torch.nn.functional as F

import parir_torch as parir

from .common import nonzero, poison, positive, randint


def _d(t):
    """A float64 CPU copy of a tensor, for torch.nn.functional references."""
    return t.detach().cpu().double()


# ----- max_pool2d: a 4-deep labelled nest, sizes from the shapes, -inf padding ---------------

@parir.jit
def max_pool2d(input, output, kernel_size, stride, padding, dilation):
    N, C, H, W = input.shape
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('OH')
            for oh in range(OH):
                parir.label('OW')
                for ow in range(OW):
                    m = float('-inf')
                    for kh in range(kernel_size):
                        ih = oh * stride - padding + kh * dilation
                        for kw in range(kernel_size):
                            iw = ow * stride - padding + kw * dilation
                            if 0 <= ih < H and 0 <= iw < W:
                                m = parir.max(m, input[n, c, ih, iw])
                    output[n, c, oh, ow] = m


def _pool_out(size, k, s, p, d=1):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def case_max_pool2d(rng, device):
    N, C, H, W = 2, 3, 17, 33
    k, s, p, d = 3, 2, 1, 2
    OH, OW = _pool_out(H, k, s, p, d), _pool_out(W, k, s, p, d)
    input = nonzero((N, C, H, W), rng, device=device, hi=3.0)
    output = poison((N, C, OH, OW), device=device)
    ref = F.max_pool2d(_d(input), k, s, p, d)
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'OH': parir.threads(OH),
            'OW': parir.threads(OW)}
    return dict(fn=max_pool2d, args=[input, output, k, s, p, d], spec=spec,
                check=[(output, ref)])


# ----- max_pool2d with indices: one flat index over the output, decoded with // and % --------

@parir.jit
def max_pool2d_with_indices(input, output, indices, N, C, H, W, OH, OW, kernel_size, stride,
                            padding):
    parir.label('idx')
    for idx in range(N * C * OH * OW):
        ow = idx % OW
        oh = (idx // OW) % OH
        c = (idx // (OW * OH)) % C
        n = idx // (OW * OH * C)
        hstart = oh * stride - padding
        wstart = ow * stride - padding
        best = float('-inf')
        best_idx = -1
        for kh in range(kernel_size):
            h = hstart + kh
            if h >= 0 and h < H:
                for kw in range(kernel_size):
                    w = wstart + kw
                    if w >= 0 and w < W:
                        v = input[n, c, h, w]
                        if v > best:
                            best = v
                            best_idx = h * W + w
        output[n, c, oh, ow] = best
        indices[n, c, oh, ow] = best_idx


def case_max_pool2d_with_indices(rng, device):
    N, C, H, W = 2, 3, 17, 33
    k, s, p = 3, 2, 1
    OH, OW = _pool_out(H, k, s, p), _pool_out(W, k, s, p)
    input = nonzero((N, C, H, W), rng, device=device, hi=3.0)
    output = poison((N, C, OH, OW), device=device)
    indices = poison((N, C, OH, OW), dtype=torch.int64, device=device)
    ref, ref_idx = F.max_pool2d(_d(input), k, s, p, return_indices=True)
    spec = {'idx': parir.threads(N * C * OH * OW)}
    return dict(fn=max_pool2d_with_indices,
                args=[input, output, indices, N, C, H, W, OH, OW, k, s, p], spec=spec,
                check=[(output, ref), (indices, ref_idx)])


# ----- avg_pool2d with padding; count_include_pad a bool argument; NumPy int64 sizes ---------

@parir.jit
def avg_pool2d(input, output, kernel_size, stride, padding, count_include_pad):
    N, C, H, W = input.shape
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('plane')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        parir.label('OH')
        for oh in range(OH):
            parir.label('OW')
            for ow in range(OW):
                hstart = oh * stride - padding
                wstart = ow * stride - padding
                hend = min(hstart + kernel_size, H + padding)
                wend = min(wstart + kernel_size, W + padding)
                pool_size = (hend - hstart) * (wend - wstart)
                hstart = max(hstart, 0)
                wstart = max(wstart, 0)
                hend = min(hend, H)
                wend = min(wend, W)
                total = 0.0
                for ih in range(hstart, hend):
                    for iw in range(wstart, wend):
                        total += input[n, c, ih, iw]
                if count_include_pad:
                    divide_factor = pool_size
                else:
                    divide_factor = (hend - hstart) * (wend - wstart)
                output[n, c, oh, ow] = total / divide_factor


def _avg_pool_case(count_include_pad):
    def case(rng, device):
        N, C, H, W = 2, 3, 17, 33
        k, s, p = np.int64(3), np.int64(2), np.int64(1)
        OH, OW = _pool_out(H, int(k), int(s), int(p)), _pool_out(W, int(k), int(s), int(p))
        input = nonzero((N, C, H, W), rng, device=device)
        output = poison((N, C, OH, OW), device=device)
        ref = F.avg_pool2d(_d(input), int(k), int(s), int(p),
                           count_include_pad=count_include_pad)
        spec = {'plane': parir.threads(N * C), 'OH': parir.threads(OH),
                'OW': parir.threads(OW)}
        return dict(fn=avg_pool2d, args=[input, output, k, s, p, count_include_pad],
                    spec=spec, check=[(output, ref)])
    return case


# ----- Direct conv2d with stride, padding and dilation: batch and output channel on blocks,
# ----- the output pixels flattened onto threads ----------------------------------------------

@parir.jit
def conv2d(input, weight, bias, output, stride, padding, dilation):
    N, C, H, W = input.shape
    OC = weight.shape[0]
    KH = weight.shape[2]
    KW = weight.shape[3]
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('N')
    for n in range(N):
        parir.label('OC')
        for oc in range(OC):
            parir.label('pixel')
            for p in range(OH * OW):
                oh = p // OW
                ow = p % OW
                acc = bias[oc]
                for c in range(C):
                    for kh in range(KH):
                        ih = oh * stride - padding + kh * dilation
                        if ih >= 0 and ih < H:
                            for kw in range(KW):
                                iw = ow * stride - padding + kw * dilation
                                if iw >= 0 and iw < W:
                                    acc += input[n, c, ih, iw] * weight[oc, c, kh, kw]
                output[n, oc, oh, ow] = acc


def case_conv2d(rng, device):
    N, C, H, W, OC, K = 2, 3, 17, 33, 5, 3
    stride, padding, dilation = 2, 2, 2
    OH = _pool_out(H, K, stride, padding, dilation)
    OW = _pool_out(W, K, stride, padding, dilation)
    input = nonzero((N, C, H, W), rng, device=device)
    weight = nonzero((OC, C, K, K), rng, device=device)
    bias = nonzero(OC, rng, device=device)
    output = poison((N, OC, OH, OW), device=device)
    ref = F.conv2d(_d(input), _d(weight), _d(bias), stride, padding, dilation)
    spec = {'N': parir.threads(N), 'OC': parir.threads(OC), 'pixel': parir.threads(OH * OW)}
    return dict(fn=conv2d, args=[input, weight, bias, output, stride, padding, dilation],
                spec=spec, check=[(output, ref)])


# ----- Depthwise conv2d (groups=C) with 'same' padding, one output pixel per helper call -----

@parir.jit
def depthwise_pixel(input, weight, n, c, oh, ow, H, W, K, padding):
    acc = 0.0
    for kh in range(K):
        for kw in range(K):
            ih = oh - padding + kh
            iw = ow - padding + kw
            if 0 <= ih < H and 0 <= iw < W:
                acc += input[n, c, ih, iw] * weight[c, 0, kh, kw]
    return acc


@parir.jit
def depthwise_conv2d(input, weight, bias, output, N, C, H, W, K, padding):
    parir.label('NC')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        parir.label('H')
        for oh in range(H):
            parir.label('W')
            for ow in range(W):
                output[n, c, oh, ow] = depthwise_pixel(input, weight, n, c, oh, ow, H, W, K,
                                                       padding) + bias[c]


def case_depthwise_conv2d(rng, device):
    N, C, H, W, K = 2, 3, 17, 33, 5
    padding = K // 2
    input = nonzero((N, C, H, W), rng, device=device)
    weight = nonzero((C, 1, K, K), rng, device=device)
    bias = nonzero(C, rng, device=device)
    output = poison((N, C, H, W), device=device)
    ref = F.conv2d(_d(input), _d(weight), _d(bias), 1, padding, 1, C)
    spec = {'NC': parir.threads(N * C), 'H': parir.threads(H), 'W': parir.threads(W)}
    return dict(fn=depthwise_conv2d,
                args=[input, weight, bias, output, N, C, H, W, K, padding], spec=spec,
                check=[(output, ref)])


# ----- group_norm: one (n, group) per block, mean and variance as .reduce() loops over the
# ----- group's flattened elements ------------------------------------------------------------

@parir.jit
def group_norm(input, weight, bias, output, N, C, H, W, num_groups, eps):
    CPG = C // num_groups
    HxW = H * W
    M = CPG * HxW
    parir.label('group')
    for ng in range(N * num_groups):
        n = ng // num_groups
        g = ng % num_groups
        mean = 0.0
        parir.label('elem')
        for j in range(M):
            c = g * CPG + j // HxW
            mean += input[n, c, (j % HxW) // W, j % W]
        mean = mean / M
        var = 0.0
        parir.label('elem')
        for j in range(M):
            c = g * CPG + j // HxW
            d = input[n, c, (j % HxW) // W, j % W] - mean
            var += d * d
        var = var / M
        rstd = 1.0 / math.sqrt(var + eps)
        parir.label('elem')
        for j in range(M):
            c = g * CPG + j // HxW
            h = (j % HxW) // W
            w = j % W
            output[n, c, h, w] = (input[n, c, h, w] - mean) * rstd * weight[c] + bias[c]


def case_group_norm(rng, device):
    N, C, H, W, G = 2, 6, 17, 33, 3
    eps = 1e-5
    input = nonzero((N, C, H, W), rng, device=device, hi=2.0) + 0.3
    weight = nonzero(C, rng, device=device)
    bias = nonzero(C, rng, device=device)
    output = poison((N, C, H, W), device=device)
    ref = F.group_norm(_d(input), G, _d(weight), _d(bias), eps)
    spec = {'group': parir.threads(N * G), 'elem': parir.threads(256).reduce()}
    return dict(fn=group_norm, args=[input, weight, bias, output, N, C, H, W, G, eps],
                spec=spec, check=[(output, ref)])


# ----- instance_norm with slice reductions over each plane; the mean and 1/std kept ----------

@parir.jit
def instance_norm(input, output, save_mean, save_invstd, N, C, H, W, eps):
    parir.label('plane')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        parir.label('H')
        parir.label('W')
        s = parir.sum(input[n, c, :, :])
        mean = s / (H * W)
        parir.label('H')
        parir.label('W')
        ss = parir.sum((input[n, c, :, :] - mean) * (input[n, c, :, :] - mean))
        invstd = 1.0 / math.sqrt(ss / (H * W) + eps)
        parir.label('H')
        parir.label('W')
        output[n, c, :, :] = (input[n, c, :, :] - mean) * invstd
        save_mean[n, c] = mean
        save_invstd[n, c] = invstd


def case_instance_norm(rng, device):
    N, C, H, W = 2, 3, 17, 33
    eps = 1e-5
    input = nonzero((N, C, H, W), rng, device=device, hi=2.0) + 0.2
    output = poison((N, C, H, W), device=device)
    save_mean = poison((N, C), device=device)
    save_invstd = poison((N, C), device=device)
    x = _d(input)
    ref = F.instance_norm(x, eps=eps)
    ref_mean = x.mean((2, 3))
    ref_invstd = 1.0 / torch.sqrt(x.var((2, 3), unbiased=False) + eps)
    spec = {'plane': parir.threads(N * C), 'W': parir.threads(W)}
    return dict(fn=instance_norm, args=[input, output, save_mean, save_invstd, N, C, H, W, eps],
                spec=spec,
                check=[(output, ref), (save_mean, ref_mean), (save_invstd, ref_invstd)])


# ----- Global average and max pooling of each plane: parir.sum and parir.max of slices -------

@parir.jit
def global_pool(input, avg_out, max_out):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('H')
            parir.label('W')
            avg_out[n, c] = parir.sum(input[n, c, :, :]) / (H * W)
            parir.label('H')
            parir.label('W')
            max_out[n, c] = parir.max(input[n, c, :, :])


def case_global_pool(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, device=device)
    avg_out = poison((N, C), device=device)
    max_out = poison((N, C), device=device)
    x = _d(input)
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'W': parir.threads(64)}
    return dict(fn=global_pool, args=[input, avg_out, max_out], spec=spec,
                check=[(avg_out, F.adaptive_avg_pool2d(x, 1)[:, :, 0, 0]),
                       (max_out, F.adaptive_max_pool2d(x, 1)[:, :, 0, 0])])


# ----- adaptive_avg_pool2d with PyTorch's start and end indices ------------------------------

@parir.jit
def adaptive_avg_pool2d(input, output, N, C, H, W, OH, OW):
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('OH')
            for oh in range(OH):
                parir.label('OW')
                for ow in range(OW):
                    ih0 = (oh * H) // OH
                    ih1 = ((oh + 1) * H + OH - 1) // OH
                    iw0 = (ow * W) // OW
                    iw1 = ((ow + 1) * W + OW - 1) // OW
                    s = 0.0
                    for ih in range(ih0, ih1):
                        for iw in range(iw0, iw1):
                            s += input[n, c, ih, iw]
                    output[n, c, oh, ow] = s / ((ih1 - ih0) * (iw1 - iw0))


def case_adaptive_avg_pool2d(rng, device):
    N, C, H, W = 2, 3, 17, 33
    OH, OW = 5, 7
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.adaptive_avg_pool2d(_d(input), (OH, OW))
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'OH': parir.threads(OH),
            'OW': parir.threads(OW)}
    return dict(fn=adaptive_avg_pool2d, args=[input, output, N, C, H, W, OH, OW], spec=spec,
                check=[(output, ref)])


# ----- LSTM cell, the parameters as the module's state_dict; one thread per hidden unit -----

def lstm_gate(input, hx, params, b, row, input_size, hidden_size):
    acc = params['bias_ih'][row] + params['bias_hh'][row]
    for k in range(input_size):
        acc += input[b, k] * params['weight_ih'][row, k]
    for k in range(hidden_size):
        acc += hx[b, k] * params['weight_hh'][row, k]
    return acc


@parir.jit
def lstm_cell(input, hx, cx, params, hy, cy, batch, input_size, hidden_size):
    parir.label('batch')
    for b in range(batch):
        parir.label('hidden')
        for j in range(hidden_size):
            ingate = parir.sigmoid(lstm_gate(input, hx, params, b, j, input_size, hidden_size))
            forgetgate = parir.sigmoid(
                lstm_gate(input, hx, params, b, hidden_size + j, input_size, hidden_size))
            cellgate = math.tanh(
                lstm_gate(input, hx, params, b, 2 * hidden_size + j, input_size, hidden_size))
            outgate = parir.sigmoid(
                lstm_gate(input, hx, params, b, 3 * hidden_size + j, input_size, hidden_size))
            c_next = forgetgate * cx[b, j] + ingate * cellgate
            cy[b, j] = c_next
            hy[b, j] = outgate * math.tanh(c_next)


def case_lstm_cell(rng, device):
    batch, input_size, hidden_size = 5, 19, 37
    input = nonzero((batch, input_size), rng, device=device)
    hx = nonzero((batch, hidden_size), rng, device=device)
    cx = nonzero((batch, hidden_size), rng, device=device)
    params = {'weight_ih': nonzero((4 * hidden_size, input_size), rng, device=device, hi=0.3),
              'weight_hh': nonzero((4 * hidden_size, hidden_size), rng, device=device, hi=0.3),
              'bias_ih': nonzero(4 * hidden_size, rng, device=device),
              'bias_hh': nonzero(4 * hidden_size, rng, device=device)}
    hy = poison((batch, hidden_size), device=device)
    cy = poison((batch, hidden_size), device=device)
    cell = torch.nn.LSTMCell(input_size, hidden_size).double()
    with torch.no_grad():
        cell.load_state_dict({k: _d(v) for k, v in params.items()})
        ref_h, ref_c = cell(_d(input), (_d(hx), _d(cx)))
    spec = {'batch': parir.threads(batch), 'hidden': parir.threads(hidden_size)}
    return dict(fn=lstm_cell,
                args=[input, hx, cx, params, hy, cy, batch, input_size, hidden_size],
                spec=spec, check=[(hy, ref_h), (cy, ref_c)])


# ----- GRU cell in float64, flat index over (batch, hidden), the three gates' dot products in
# ----- one loop ------------------------------------------------------------------------------

@parir.jit
def gru_cell(input, hx, weight_ih, weight_hh, bias_ih, bias_hh, hy):
    B, I = input.shape
    Hd = hx.shape[1]
    parir.label('idx')
    for idx in range(B * Hd):
        b = idx // Hd
        j = idx % Hd
        r_i = bias_ih[j]
        z_i = bias_ih[Hd + j]
        n_i = bias_ih[2 * Hd + j]
        for k in range(I):
            r_i += input[b, k] * weight_ih[j, k]
            z_i += input[b, k] * weight_ih[Hd + j, k]
            n_i += input[b, k] * weight_ih[2 * Hd + j, k]
        r_h = bias_hh[j]
        z_h = bias_hh[Hd + j]
        n_h = bias_hh[2 * Hd + j]
        for k in range(Hd):
            r_h += hx[b, k] * weight_hh[j, k]
            z_h += hx[b, k] * weight_hh[Hd + j, k]
            n_h += hx[b, k] * weight_hh[2 * Hd + j, k]
        resetgate = 1.0 / (1.0 + math.exp(-(r_i + r_h)))
        updategate = 1.0 / (1.0 + math.exp(-(z_i + z_h)))
        newgate = math.tanh(n_i + resetgate * n_h)
        hy[b, j] = (1.0 - updategate) * newgate + updategate * hx[b, j]


def case_gru_cell(rng, device):
    B, I, Hd = 3, 21, 45
    f = torch.float64
    input = nonzero((B, I), rng, dtype=f, device=device)
    hx = nonzero((B, Hd), rng, dtype=f, device=device)
    weight_ih = nonzero((3 * Hd, I), rng, dtype=f, device=device, hi=0.3)
    weight_hh = nonzero((3 * Hd, Hd), rng, dtype=f, device=device, hi=0.3)
    bias_ih = nonzero(3 * Hd, rng, dtype=f, device=device)
    bias_hh = nonzero(3 * Hd, rng, dtype=f, device=device)
    hy = poison((B, Hd), dtype=f, device=device)
    cell = torch.nn.GRUCell(I, Hd).double()
    with torch.no_grad():
        cell.load_state_dict({'weight_ih': _d(weight_ih), 'weight_hh': _d(weight_hh),
                              'bias_ih': _d(bias_ih), 'bias_hh': _d(bias_hh)})
        ref = cell(_d(input), _d(hx))
    return dict(fn=gru_cell, args=[input, hx, weight_ih, weight_hh, bias_ih, bias_hh, hy],
                spec={'idx': parir.threads(B * Hd)}, check=[(hy, ref)])


# ----- cosine_similarity along dim 1: three sums reduced in one .reduce() loop ---------------

@parir.jit
def cosine_similarity(x1, x2, output, N, D, eps):
    parir.label('row')
    for i in range(N):
        dot = 0.0
        w1 = 0.0
        w2 = 0.0
        parir.label('feature')
        for d in range(D):
            dot += x1[i, d] * x2[i, d]
            w1 += x1[i, d] * x1[i, d]
            w2 += x2[i, d] * x2[i, d]
        output[i] = dot / math.sqrt(max(w1 * w2, eps * eps))


def case_cosine_similarity(rng, device):
    N, D = 7, 300
    eps = 1e-8
    x1 = nonzero((N, D), rng, device=device)
    x2 = nonzero((N, D), rng, device=device)
    output = poison(N, device=device)
    ref = F.cosine_similarity(_d(x1), _d(x2), dim=1, eps=eps)
    spec = {'row': parir.threads(N), 'feature': parir.threads(128).reduce()}
    return dict(fn=cosine_similarity, args=[x1, x2, output, N, D, eps], spec=spec,
                check=[(output, ref)])


# ----- pairwise_distance (p=2) as a slice sum with eps added to the difference --------------

@parir.jit
def pairwise_distance(x1, x2, output, N, eps):
    parir.label('row')
    for i in range(N):
        parir.label('feature')
        sq = parir.sum((x1[i, :] - x2[i, :] + eps) * (x1[i, :] - x2[i, :] + eps))
        output[i] = math.sqrt(sq)


def case_pairwise_distance(rng, device):
    N, D = 9, 129
    eps = 1e-6
    x1 = nonzero((N, D), rng, device=device)
    x2 = nonzero((N, D), rng, device=device)
    output = poison(N, device=device)
    ref = F.pairwise_distance(_d(x1), _d(x2), p=2.0, eps=eps)
    spec = {'row': parir.threads(N), 'feature': parir.threads(64)}
    return dict(fn=pairwise_distance, args=[x1, x2, output, N, eps], spec=spec,
                check=[(output, ref)])


# ----- triplet_margin_loss, mean over the batch: a .reduce() over rows inside parir.gpu ------

@parir.jit
def triplet_margin_loss(anchor, positive, negative, loss, margin, eps):
    N, D = anchor.shape
    with parir.gpu:
        total = 0.0
        parir.label('row')
        for i in range(N):
            d_ap = 0.0
            d_an = 0.0
            for k in range(D):
                t = anchor[i, k] - positive[i, k] + eps
                d_ap += t * t
                u = anchor[i, k] - negative[i, k] + eps
                d_an += u * u
            total += max(math.sqrt(d_ap) - math.sqrt(d_an) + margin, 0.0)
        loss[0] = total / N


def case_triplet_margin_loss(rng, device):
    N, D = 100, 17
    margin, eps = 1.0, 1e-6
    anchor = nonzero((N, D), rng, device=device)
    pos = nonzero((N, D), rng, device=device)
    neg = nonzero((N, D), rng, device=device)
    loss = poison(1, device=device)
    ref = F.triplet_margin_loss(_d(anchor), _d(pos), _d(neg), margin=margin, p=2.0, eps=eps)
    spec = {'row': parir.threads(N).reduce()}
    return dict(fn=triplet_margin_loss, args=[anchor, pos, neg, loss, margin, eps],
                spec=spec, check=[(loss, ref.reshape(1))])


# ----- kl_div (log-probability input, probability target), reduction='batchmean' ------------

@parir.jit
def kl_div(input, target, loss, N, C):
    parir.label('N')
    parir.label('C')
    loss[0] = parir.sum(target[:, :] * (parir.log(target[:, :]) - input[:, :]))
    with parir.gpu:
        loss[0] = loss[0] / N


def case_kl_div(rng, device):
    N, C = 33, 10
    logits = nonzero((N, C), rng, device=device, hi=3.0)
    input = torch.log_softmax(logits.double(), 1).float()
    target = torch.softmax(nonzero((N, C), rng, dtype=torch.float64, hi=3.0), 1).float()
    input, target = input.to(device), target.to(device)
    loss = poison(1, device=device)
    ref = F.kl_div(_d(input), _d(target), reduction="batchmean")
    spec = {'N': parir.threads(N), 'C': parir.threads(C)}
    return dict(fn=kl_div, args=[input, target, loss, N, C], spec=spec,
                check=[(loss, ref.reshape(1))])


# ----- smooth_l1_loss, reduction='none', on bfloat16 NCHW tensors, one flat index ------------

@parir.jit
def smooth_l1_loss(input, target, output, N, C, H, W, beta):
    parir.label('idx')
    for idx in range(N * C * H * W):
        w = idx % W
        h = (idx // W) % H
        c = (idx // (W * H)) % C
        n = idx // (W * H * C)
        z = abs(input[n, c, h, w] - target[n, c, h, w])
        output[n, c, h, w] = 0.5 * z * z / beta if z < beta else z - 0.5 * beta


def case_smooth_l1_loss(rng, device):
    N, C, H, W = 2, 3, 17, 33
    beta = 0.5
    input = nonzero((N, C, H, W), rng, dtype=torch.bfloat16, device=device)
    target = nonzero((N, C, H, W), rng, dtype=torch.bfloat16, device=device)
    output = poison((N, C, H, W), dtype=torch.bfloat16, device=device)
    ref = F.smooth_l1_loss(_d(input), _d(target), reduction="none", beta=beta)
    return dict(fn=smooth_l1_loss, args=[input, target, output, N, C, H, W, beta],
                spec={'idx': parir.threads(N * H * W * C)}, check=[(output, ref)])


# ----- conv2d + batch_norm (inference) + leaky_relu fused, on channels_last tensors; the
# ----- parameters as a module's state_dict with dotted keys; negative_slope read from memory --

BN_EPS = 1e-5


@parir.jit
def conv_bn_leaky_relu(input, params, output, negative_slope, stride, padding):
    N, C, H, W = input.shape
    OC = params['conv.weight'].shape[0]
    K = params['conv.weight'].shape[2]
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('N')
    for n in range(N):
        parir.label('OC')
        for oc in range(OC):
            scale = params['bn.weight'][oc] / math.sqrt(params['bn.running_var'][oc] + BN_EPS)
            parir.label('pixel')
            for p in range(OH * OW):
                oh = p // OW
                ow = p % OW
                acc = params['conv.bias'][oc]
                for kh in range(K):
                    for kw in range(K):
                        ih = oh * stride - padding + kh
                        iw = ow * stride - padding + kw
                        if 0 <= ih < H and 0 <= iw < W:
                            for c in range(C):
                                acc += input[n, c, ih, iw] * params['conv.weight'][oc, c, kh, kw]
                y = (acc - params['bn.running_mean'][oc]) * scale + params['bn.bias'][oc]
                output[n, oc, oh, ow] = y if y > 0.0 else y * negative_slope


def case_conv_bn_leaky_relu(rng, device):
    N, C, H, W, OC, K = 2, 3, 17, 33, 6, 3
    stride, padding = 1, 1
    cl = torch.channels_last
    input = nonzero((N, C, H, W), rng, device=device).to(memory_format=cl)
    params = {'conv.weight': nonzero((OC, C, K, K), rng, device=device),
              'conv.bias': nonzero(OC, rng, device=device),
              'bn.weight': nonzero(OC, rng, device=device),
              'bn.bias': nonzero(OC, rng, device=device),
              'bn.running_mean': nonzero(OC, rng, device=device),
              'bn.running_var': positive(OC, rng, device=device, lo=0.5, hi=2.0)}
    negative_slope = torch.tensor([0.01], device=device)
    output = poison((N, OC, H, W), device=device).to(memory_format=cl)
    d = {k: _d(v) for k, v in params.items()}
    y = F.conv2d(_d(input), d['conv.weight'], d['conv.bias'], stride, padding)
    y = F.batch_norm(y, d['bn.running_mean'], d['bn.running_var'], d['bn.weight'],
                     d['bn.bias'], training=False, eps=BN_EPS)
    ref = F.leaky_relu(y, 0.01)
    spec = {'N': parir.threads(N), 'OC': parir.threads(OC), 'pixel': parir.threads(H * W)}
    return dict(fn=conv_bn_leaky_relu,
                args=[input, params, output, negative_slope, stride, padding], spec=spec,
                check=[(output, ref)])


# ----- log_softmax over the channels of each pixel, slice reductions along a strided dim ----

@parir.jit
def log_softmax_channels(input, output):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('pixel')
        for p in range(H * W):
            h = p // W
            w = p % W
            m = parir.max(input[n, :, h, w])
            s = parir.sum(parir.exp(input[n, :, h, w] - m))
            output[n, :, h, w] = input[n, :, h, w] - m - parir.log(s)


def case_log_softmax_channels(rng, device):
    N, C, H, W = 2, 19, 17, 33
    input = nonzero((N, C, H, W), rng, device=device, hi=4.0)
    output = poison((N, C, H, W), device=device)
    ref = F.log_softmax(_d(input), dim=1)
    spec = {'N': parir.threads(N), 'pixel': parir.threads(H * W)}
    return dict(fn=log_softmax_channels, args=[input, output], spec=spec,
                check=[(output, ref)])


# ----- nll_loss on a segmentation map: class weights, ignore_index, reduction='mean' --------

@parir.jit
def nll_loss2d(input, target, weight, loss, ignore_index):
    N, C, H, W = input.shape
    with parir.gpu:
        total = 0.0
        total_weight = 0.0
        parir.label('pixel')
        for idx in range(N * H * W):
            n = idx // (H * W)
            h = (idx // W) % H
            w = idx % W
            t = target[n, h, w]
            if t != ignore_index:
                total += -weight[t] * input[n, t, h, w]
                total_weight += weight[t]
        loss[0] = total / total_weight


def case_nll_loss2d(rng, device):
    N, C, H, W = 2, 5, 17, 33
    ignore_index = -100
    logits = nonzero((N, C, H, W), rng, dtype=torch.float64, hi=3.0)
    input = F.log_softmax(logits, 1).float().to(device)
    target = randint((N, H, W), rng, 0, C)
    target[torch.rand((N, H, W), generator=rng) < 0.2] = ignore_index
    target = target.to(device)
    weight = positive(C, rng, device=device, lo=0.5, hi=2.0)
    loss = poison(1, device=device)
    ref = F.nll_loss(_d(input), target.cpu(), _d(weight), ignore_index=ignore_index)
    spec = {'pixel': parir.threads(N * H * W).reduce()}
    return dict(fn=nll_loss2d, args=[input, target, weight, loss, ignore_index], spec=spec,
                check=[(loss, ref.reshape(1))])


# ----- conv_transpose2d in gather form: which input pixels reach this output pixel, with
# ----- Python's // and % on negative numerators ----------------------------------------------

@parir.jit
def conv_transpose2d(input, weight, bias, output, stride, padding, dilation):
    N, C, H, W = input.shape
    OC = weight.shape[1]
    K = weight.shape[2]
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('NOC')
    for noc in range(N * OC):
        n = noc // OC
        oc = noc % OC
        parir.label('OH')
        for oh in range(OH):
            parir.label('OW')
            for ow in range(OW):
                acc = bias[oc]
                for kh in range(K):
                    th = oh + padding - kh * dilation
                    ih = th // stride
                    if th % stride == 0 and ih >= 0 and ih < H:
                        for kw in range(K):
                            tw = ow + padding - kw * dilation
                            iw = tw // stride
                            if tw % stride == 0 and iw >= 0 and iw < W:
                                for c in range(C):
                                    acc += input[n, c, ih, iw] * weight[c, oc, kh, kw]
                output[n, oc, oh, ow] = acc


def case_conv_transpose2d(rng, device):
    N, C, H, W, OC, K = 2, 3, 17, 33, 4, 3
    stride, padding, dilation, output_padding = 2, 1, 1, 1
    OH = (H - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1
    OW = (W - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1
    input = nonzero((N, C, H, W), rng, device=device)
    weight = nonzero((C, OC, K, K), rng, device=device)
    bias = nonzero(OC, rng, device=device)
    output = poison((N, OC, OH, OW), device=device)
    ref = F.conv_transpose2d(_d(input), _d(weight), _d(bias), stride, padding, output_padding,
                             1, dilation)
    spec = {'NOC': parir.threads(N * OC), 'OH': parir.threads(OH), 'OW': parir.threads(OW)}
    return dict(fn=conv_transpose2d,
                args=[input, weight, bias, output, stride, padding, dilation], spec=spec,
                check=[(output, ref)])


# ----- batch_norm in training mode: per-channel statistics over (N, H, W) as .reduce() loops,
# ----- the running statistics updated; eps a 0-d float32 tensor ------------------------------

@parir.jit
def batch_norm_train(input, weight, bias, running_mean, running_var, output, save_mean,
                     save_invstd, momentum, eps):
    N, C, H, W = input.shape
    M = N * H * W
    parir.label('C')
    for c in range(C):
        s = 0.0
        parir.label('elem')
        for j in range(M):
            s += input[j // (H * W), c, (j // W) % H, j % W]
        mean = s / M
        var_sum = 0.0
        parir.label('elem')
        for j in range(M):
            d = input[j // (H * W), c, (j // W) % H, j % W] - mean
            var_sum += d * d
        invstd = 1.0 / math.sqrt(var_sum / M + eps)
        save_mean[c] = mean
        save_invstd[c] = invstd
        running_mean[c] = (1.0 - momentum) * running_mean[c] + momentum * mean
        running_var[c] = (1.0 - momentum) * running_var[c] + momentum * var_sum / (M - 1)
        parir.label('elem')
        for j in range(M):
            n = j // (H * W)
            h = (j // W) % H
            w = j % W
            output[n, c, h, w] = (input[n, c, h, w] - mean) * invstd * weight[c] + bias[c]


def case_batch_norm_train(rng, device):
    N, C, H, W = 2, 3, 17, 33
    momentum = 0.1
    eps = torch.tensor(1e-5, dtype=torch.float32)
    input = nonzero((N, C, H, W), rng, device=device, hi=2.0) + 0.4
    weight = nonzero(C, rng, device=device)
    bias = nonzero(C, rng, device=device)
    running_mean = nonzero(C, rng, device=device)
    running_var = positive(C, rng, device=device, lo=0.5, hi=2.0)
    output = poison((N, C, H, W), device=device)
    save_mean = poison(C, device=device)
    save_invstd = poison(C, device=device)
    x = _d(input)
    rm, rv = _d(running_mean), _d(running_var)
    ref = F.batch_norm(x, rm, rv, _d(weight), _d(bias), training=True, momentum=momentum,
                       eps=float(eps))
    ref_mean = x.mean((0, 2, 3))
    ref_invstd = 1.0 / torch.sqrt(x.var((0, 2, 3), unbiased=False) + float(eps))
    spec = {'C': parir.threads(C), 'elem': parir.threads(512).reduce()}
    return dict(fn=batch_norm_train,
                args=[input, weight, bias, running_mean, running_var, output, save_mean,
                      save_invstd, momentum, eps],
                spec=spec,
                check=[(output, ref), (save_mean, ref_mean), (save_invstd, ref_invstd),
                       (running_mean, rm), (running_var, rv)])


# ----- PReLU with a per-channel weight on float16 planes, slices and parir.where, computed
# ----- in float32 (half_in_float32) --------------------------------------------------------------

@parir.jit
def prelu(input, weight, output):
    N, C, H, W = input.shape
    parir.label('plane')
    for nc in range(N * C):
        parir.label('H')
        parir.label('W')
        output[nc // C, nc % C, :, :] = parir.where(
            input[nc // C, nc % C, :, :] >= 0.0, input[nc // C, nc % C, :, :],
            weight[nc % C] * input[nc // C, nc % C, :, :])


def _half_in_float32(spec):
    opts = parir.par(spec)
    opts.half_in_float32 = True
    return opts


def case_prelu(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, dtype=torch.float16, device=device, hi=4.0)
    weight = positive(C, rng, dtype=torch.float16, device=device, lo=0.05, hi=0.3)
    output = poison((N, C, H, W), dtype=torch.float16, device=device)
    ref = F.prelu(_d(input), _d(weight))
    spec = {'plane': parir.threads(N * C), 'H': parir.threads(H), 'W': parir.threads(W)}
    return dict(fn=prelu, args=[input, weight, output], spec=spec, opts=_half_in_float32,
                check=[(output, ref)])


# ----- local_response_norm across channels --------------------------------------------------

@parir.jit
def local_response_norm(input, output, size, alpha, beta, k):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('pixel')
            for p in range(H * W):
                h = p // W
                w = p % W
                sq = 0.0
                for cc in range(max(c - size // 2, 0), min(c + (size - 1) // 2 + 1, C)):
                    sq += input[n, cc, h, w] * input[n, cc, h, w]
                div = (k + alpha * sq / size) ** beta
                output[n, c, h, w] = input[n, c, h, w] / div


def case_local_response_norm(rng, device):
    N, C, H, W = 2, 7, 17, 33
    size, alpha, beta, k = 4, 0.5, 0.75, 1.0
    input = nonzero((N, C, H, W), rng, device=device, hi=2.0)
    output = poison((N, C, H, W), device=device)
    ref = F.local_response_norm(_d(input), size, alpha, beta, k)
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'pixel': parir.threads(H * W)}
    return dict(fn=local_response_norm, args=[input, output, size, alpha, beta, k], spec=spec,
                check=[(output, ref)])


# ----- F.normalize(p=2, dim=1): each pixel's channel vector over a .reduce() label ----------

@parir.jit
def normalize_channels(input, output, eps):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('pixel')
        for p in range(H * W):
            h = p // W
            w = p % W
            sq = 0.0
            parir.label('C')
            for c in range(C):
                sq += input[n, c, h, w] * input[n, c, h, w]
            denom = max(math.sqrt(sq), eps)
            parir.label('C')
            for c in range(C):
                output[n, c, h, w] = input[n, c, h, w] / denom


def case_normalize_channels(rng, device):
    N, C, H, W = 2, 40, 17, 33
    eps = 1e-12
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, H, W), device=device)
    ref = F.normalize(_d(input), p=2.0, dim=1, eps=eps)
    spec = {'N': parir.threads(N), 'pixel': parir.threads(H * W),
            'C': parir.threads(64).reduce()}
    return dict(fn=normalize_channels, args=[input, output, eps], spec=spec,
                check=[(output, ref)])



# ----- 2x2 average pooling by four strided slices of each plane (odd H drops the last row) --

@parir.jit
def avg_pool2x2(input, output):
    N, C, H, W = input.shape
    OH = H // 2
    OW = W // 2
    parir.label('plane')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        parir.label('OH')
        parir.label('OW')
        output[n, c, :, :] = 0.25 * (input[n, c, 0:2 * OH:2, 0:2 * OW:2]
                                     + input[n, c, 1:2 * OH:2, 0:2 * OW:2]
                                     + input[n, c, 0:2 * OH:2, 1:2 * OW:2]
                                     + input[n, c, 1:2 * OH:2, 1:2 * OW:2])


def case_avg_pool2x2(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, H // 2, W // 2), device=device)
    ref = F.avg_pool2d(_d(input), 2)
    spec = {'plane': parir.threads(N * C), 'OH': parir.threads(H // 2),
            'OW': parir.threads(W // 2)}
    return dict(fn=avg_pool2x2, args=[input, output], spec=spec, check=[(output, ref)])


CASES = {
    "vis_max_pool2d": case_max_pool2d,
    "vis_max_pool2d_with_indices": case_max_pool2d_with_indices,
    "vis_avg_pool2d_count_pad": _avg_pool_case(True),
    "vis_avg_pool2d_exclude_pad": _avg_pool_case(False),
    "vis_conv2d": case_conv2d,
    "vis_depthwise_conv2d": case_depthwise_conv2d,
    "vis_group_norm": case_group_norm,
    "vis_instance_norm": case_instance_norm,
    "vis_global_pool": case_global_pool,
    "vis_adaptive_avg_pool2d": case_adaptive_avg_pool2d,
    "vis_lstm_cell": case_lstm_cell,
    "vis_gru_cell": case_gru_cell,
    "vis_cosine_similarity": case_cosine_similarity,
    "vis_pairwise_distance": case_pairwise_distance,
    "vis_triplet_margin_loss": case_triplet_margin_loss,
    "vis_kl_div": case_kl_div,
    "vis_smooth_l1_loss_bf16": case_smooth_l1_loss,
    "vis_conv_bn_leaky_relu_channels_last": case_conv_bn_leaky_relu,
    "vis_log_softmax_channels": case_log_softmax_channels,
    "vis_nll_loss2d": case_nll_loss2d,
    "vis_conv_transpose2d": case_conv_transpose2d,
    "vis_batch_norm_train": case_batch_norm_train,
    "vis_prelu_fp16": case_prelu,
    "vis_local_response_norm": case_local_response_norm,
    "vis_normalize_channels": case_normalize_channels,
    "vis_avg_pool2x2_slices": case_avg_pool2x2,
}
