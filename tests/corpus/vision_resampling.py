"""Resampling and data movement written as a PyTorch user writes a custom kernel: NCHW tensors
named `input`, `output`, hyperparameters named as torch.nn.functional names them (`stride`,
`padding`, `align_corners`, `upscale_factor`), sizes `N, C, H, W`. Resampling (nearest, bilinear
with either corner convention, bicubic; grid_sample, bilinear and nearest; roi_align), patches
(im2col as F.unfold, col2im as F.fold with atomic adds), data movement (one_hot, masked_fill with
a bool mask, pixel_shuffle on float16, pixel_unshuffle by strided slices, reflection padding,
flips by slices with negative steps), and per-pixel work across channels and planes (CBAM's
channel pooling, the predicted class of each pixel by parir.argmax, the integral image by two
cumsums, per-channel fake quantization).

The styles mix as users mix them: flat index loops decoded with // and %, labelled 4-deep
nests, helpers, slice statements, `math.floor` and Python's round, `float('-inf')`, NumPy int64
hyperparameters. Sizes are not multiples of 32. References come from torch.nn.functional (or
torch), in float64 where the input is float32, computed before the program runs; roi_align,
which torch.nn.functional lacks, against a NumPy transcription of torchvision's."""

import math

import numpy as np
import torch
import torch.nn.functional as F

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint
from .vision_layers import _d, _pool_out


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ----- im2col (F.unfold): one flat index over the columns, zeros where the patch is padding -

@parir.jit
def im2col(input, output, N, C, H, W, KH, KW, stride, padding, OH, OW):
    L = OH * OW
    parir.label('idx')
    for idx in range(N * C * KH * KW * L):
        l = idx % L
        row = (idx // L) % (C * KH * KW)
        n = idx // (L * C * KH * KW)
        c = row // (KH * KW)
        kh = (row // KW) % KH
        kw = row % KW
        ih = (l // OW) * stride - padding + kh
        iw = (l % OW) * stride - padding + kw
        output[n, row, l] = input[n, c, ih, iw] if 0 <= ih < H and 0 <= iw < W else 0.0


def case_im2col(rng, device):
    N, C, H, W, KH, KW = 2, 3, 17, 33, 3, 4
    stride, padding = 2, 1
    OH, OW = _pool_out(H, KH, stride, padding), _pool_out(W, KW, stride, padding)
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C * KH * KW, OH * OW), device=device)
    ref = F.unfold(_d(input), (KH, KW), padding=padding, stride=stride)
    spec = {'idx': parir.threads(N * C * KH * KW * OH * OW)}
    return dict(fn=im2col, args=[input, output, N, C, H, W, KH, KW, stride, padding, OH, OW],
                spec=spec, check=[(output, ref)])


# ----- Nearest upsampling (up in H, down in W) by integer source indices ---------------------

@parir.jit
def upsample_nearest2d(input, output):
    N, C, H, W = input.shape
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('OH')
            for oh in range(OH):
                ih = min(oh * H // OH, H - 1)
                parir.label('OW')
                for ow in range(OW):
                    iw = min(ow * W // OW, W - 1)
                    output[n, c, oh, ow] = input[n, c, ih, iw]


def case_upsample_nearest(rng, device):
    N, C, H, W = 2, 3, 17, 33
    OH, OW = 40, 20
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.interpolate(_d(input), size=(OH, OW), mode="nearest")
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'OH': parir.threads(OH),
            'OW': parir.threads(OW)}
    return dict(fn=upsample_nearest2d, args=[input, output], spec=spec, check=[(output, ref)])


# ----- Bilinear upsampling as PyTorch's kernel computes its source index, either corner
# ----- convention from one bool argument ----------------------------------------------------

def area_pixel_compute_scale(input_size, output_size, align_corners):
    if align_corners:
        return (input_size - 1) / (output_size - 1)
    else:
        return input_size / output_size


def area_pixel_compute_source_index(scale, dst_index, align_corners):
    if align_corners:
        return scale * dst_index
    else:
        src_idx = scale * (dst_index + 0.5) - 0.5
        return max(src_idx, 0.0)


@parir.jit
def upsample_bilinear2d(input, output, align_corners):
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
                h1r = area_pixel_compute_source_index(
                    area_pixel_compute_scale(H, OH, align_corners), oh, align_corners)
                h1 = int(h1r)
                h1p = 1 if h1 < H - 1 else 0
                h1lambda = h1r - h1
                h0lambda = 1.0 - h1lambda
                w1r = area_pixel_compute_source_index(
                    area_pixel_compute_scale(W, OW, align_corners), ow, align_corners)
                w1 = int(w1r)
                w1p = 1 if w1 < W - 1 else 0
                w1lambda = w1r - w1
                w0lambda = 1.0 - w1lambda
                output[n, c, oh, ow] = (
                    h0lambda * (w0lambda * input[n, c, h1, w1]
                                + w1lambda * input[n, c, h1, w1 + w1p])
                    + h1lambda * (w0lambda * input[n, c, h1 + h1p, w1]
                                  + w1lambda * input[n, c, h1 + h1p, w1 + w1p]))


def _bilinear_case(align_corners):
    def case(rng, device):
        N, C, H, W = 2, 3, 17, 33
        OH, OW = 37, 50
        input = nonzero((N, C, H, W), rng, device=device)
        output = poison((N, C, OH, OW), device=device)
        ref = F.interpolate(_d(input), size=(OH, OW), mode="bilinear",
                            align_corners=align_corners)
        spec = {'plane': parir.threads(N * C), 'OH': parir.threads(OH),
                'OW': parir.threads(OW)}
        return dict(fn=upsample_bilinear2d, args=[input, output, align_corners], spec=spec,
                    check=[(output, ref)])
    return case


# ----- grid_sample, bilinear, zero padding, align_corners=False; channels in a sequential
# ----- loop under each output pixel, the corner weights computed once --------------------------

def pixel_or_zero(input, n, c, y, x, H, W):
    if 0 <= y < H and 0 <= x < W:
        return input[n, c, y, x]
    else:
        return 0.0


@parir.jit
def grid_sample_bilinear(input, grid, output):
    N, C, H, W = input.shape
    OH = grid.shape[1]
    OW = grid.shape[2]
    parir.label('N')
    for n in range(N):
        parir.label('pixel')
        for p in range(OH * OW):
            oh = p // OW
            ow = p % OW
            ix = ((grid[n, oh, ow, 0] + 1.0) * W - 1.0) / 2.0
            iy = ((grid[n, oh, ow, 1] + 1.0) * H - 1.0) / 2.0
            ix_nw = math.floor(ix)
            iy_nw = math.floor(iy)
            nw = (ix_nw + 1 - ix) * (iy_nw + 1 - iy)
            ne = (ix - ix_nw) * (iy_nw + 1 - iy)
            sw = (ix_nw + 1 - ix) * (iy - iy_nw)
            se = (ix - ix_nw) * (iy - iy_nw)
            for c in range(C):
                output[n, c, oh, ow] = (pixel_or_zero(input, n, c, iy_nw, ix_nw, H, W) * nw
                                        + pixel_or_zero(input, n, c, iy_nw, ix_nw + 1, H, W) * ne
                                        + pixel_or_zero(input, n, c, iy_nw + 1, ix_nw, H, W) * sw
                                        + pixel_or_zero(input, n, c, iy_nw + 1, ix_nw + 1, H, W)
                                        * se)


def case_grid_sample(rng, device):
    N, C, H, W = 2, 3, 17, 33
    OH, OW = 9, 13
    input = nonzero((N, C, H, W), rng, device=device)
    grid = (torch.rand((N, OH, OW, 2), generator=rng, dtype=torch.float64) * 2.3 - 1.15)
    grid = grid.float().to(device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.grid_sample(_d(input), _d(grid), mode="bilinear", padding_mode="zeros",
                        align_corners=False)
    spec = {'N': parir.threads(N), 'pixel': parir.threads(OH * OW)}
    return dict(fn=grid_sample_bilinear, args=[input, grid, output], spec=spec,
                check=[(output, ref)])


# ----- roi_align (torchvision's, aligned=True, a fixed sampling ratio) -----------------------

def bilinear_interpolate(input, n, c, H, W, y, x):
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return 0.0
    else:
        y = max(y, 0.0)
        x = max(x, 0.0)
        y_low = int(y)
        x_low = int(x)
        y_high = y_low + 1
        x_high = x_low + 1
        if y_low >= H - 1:
            y_high = H - 1
            y_low = H - 1
            y = float(y_low)
        if x_low >= W - 1:
            x_high = W - 1
            x_low = W - 1
            x = float(x_low)
        ly = y - y_low
        lx = x - x_low
        hy = 1.0 - ly
        hx = 1.0 - lx
        return (hy * hx * input[n, c, y_low, x_low] + hy * lx * input[n, c, y_low, x_high]
                + ly * hx * input[n, c, y_high, x_low] + ly * lx * input[n, c, y_high, x_high])


@parir.jit
def roi_align(input, rois, output, spatial_scale, sampling_ratio, aligned):
    N, C, H, W = input.shape
    K = rois.shape[0]
    pooled_height = output.shape[2]
    pooled_width = output.shape[3]
    parir.label('roi')
    for k in range(K):
        parir.label('C')
        for c in range(C):
            parir.label('bin')
            for b in range(pooled_height * pooled_width):
                ph = b // pooled_width
                pw = b % pooled_width
                n = int(rois[k, 0])
                offset = 0.5 if aligned else 0.0
                roi_start_w = rois[k, 1] * spatial_scale - offset
                roi_start_h = rois[k, 2] * spatial_scale - offset
                roi_end_w = rois[k, 3] * spatial_scale - offset
                roi_end_h = rois[k, 4] * spatial_scale - offset
                roi_width = roi_end_w - roi_start_w
                roi_height = roi_end_h - roi_start_h
                if not aligned:
                    roi_width = max(roi_width, 1.0)
                    roi_height = max(roi_height, 1.0)
                bin_size_h = roi_height / pooled_height
                bin_size_w = roi_width / pooled_width
                count = max(sampling_ratio * sampling_ratio, 1)
                output_val = 0.0
                for iy in range(sampling_ratio):
                    y = roi_start_h + ph * bin_size_h + (iy + 0.5) * bin_size_h / sampling_ratio
                    for ix in range(sampling_ratio):
                        x = (roi_start_w + pw * bin_size_w
                             + (ix + 0.5) * bin_size_w / sampling_ratio)
                        output_val += bilinear_interpolate(input, n, c, H, W, y, x)
                output[k, c, ph, pw] = output_val / count


def _roi_align_ref(inp, rois, spatial_scale, PH, PW, sampling_ratio, aligned):
    N, C, H, W = inp.shape
    K = rois.shape[0]
    out = np.zeros((K, C, PH, PW))

    def interp(n, y, x):
        if y < -1.0 or y > H or x < -1.0 or x > W:
            return np.zeros(C)
        y, x = max(y, 0.0), max(x, 0.0)
        yl, xl = int(np.floor(y)), int(np.floor(x))
        if yl >= H - 1:
            yl = yh = H - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= W - 1:
            xl = xh = W - 1
            x = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, x - xl
        hy, hx = 1 - ly, 1 - lx
        return (hy * hx * inp[n, :, yl, xl] + hy * lx * inp[n, :, yl, xh]
                + ly * hx * inp[n, :, yh, xl] + ly * lx * inp[n, :, yh, xh])

    off = 0.5 if aligned else 0.0
    for k in range(K):
        n = int(rois[k, 0])
        sw, sh, ew, eh = (rois[k, 1:] * spatial_scale - off)
        rw, rh = ew - sw, eh - sh
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / PH, rw / PW
        for ph in range(PH):
            for pw in range(PW):
                acc = np.zeros(C)
                for iy in range(sampling_ratio):
                    y = sh + ph * bh + (iy + 0.5) * bh / sampling_ratio
                    for ix in range(sampling_ratio):
                        x = sw + pw * bw + (ix + 0.5) * bw / sampling_ratio
                        acc += interp(n, y, x)
                out[k, :, ph, pw] = acc / max(sampling_ratio * sampling_ratio, 1)
    return out


def case_roi_align(rng, device):
    N, C, H, W = 2, 3, 17, 33
    K, PH, PW = 5, 4, 3
    spatial_scale, sampling_ratio, aligned = 0.5, 2, True
    input = nonzero((N, C, H, W), rng, device=device)
    # Boxes in image coordinates (twice the feature map), one partly outside it.
    x1 = torch.rand(K, generator=rng, dtype=torch.float64) * 50.0
    y1 = torch.rand(K, generator=rng, dtype=torch.float64) * 25.0
    bw = 4.0 + torch.rand(K, generator=rng, dtype=torch.float64) * 30.0
    bh = 4.0 + torch.rand(K, generator=rng, dtype=torch.float64) * 16.0
    idx = torch.tensor([0, 1, 1, 0, 1], dtype=torch.float64)
    rois64 = torch.stack([idx, x1, y1, x1 + bw, y1 + bh], 1)
    rois = rois64.float()
    output = poison((K, C, PH, PW), device=device)
    ref = _roi_align_ref(f64(input), f64(rois), spatial_scale, PH, PW, sampling_ratio, aligned)
    spec = {'roi': parir.threads(K), 'C': parir.threads(C), 'bin': parir.threads(PH * PW)}
    return dict(fn=roi_align,
                args=[input, rois.to(device), output, spatial_scale, sampling_ratio, aligned],
                spec=spec, check=[(output, _t(ref))])


# ----- one_hot of a segmentation map (N, H, W) -> (N, H, W, num_classes), int64 --------------

@parir.jit
def one_hot(labels, output, num_classes):
    N, H, W = labels.shape
    parir.label('N')
    for n in range(N):
        parir.label('H')
        for h in range(H):
            parir.label('W')
            for w in range(W):
                for k in range(num_classes):
                    output[n, h, w, k] = 1 if labels[n, h, w] == k else 0


def case_one_hot(rng, device):
    N, H, W = 2, 17, 33
    num_classes = np.int64(7)
    labels = randint((N, H, W), rng, 0, int(num_classes), device=device)
    output = poison((N, H, W, int(num_classes)), dtype=torch.int64, device=device)
    ref = F.one_hot(labels.cpu(), int(num_classes))
    spec = {'N': parir.threads(N), 'H': parir.threads(H), 'W': parir.threads(W)}
    return dict(fn=one_hot, args=[labels, output, num_classes], spec=spec,
                check=[(output, ref)])


# ----- masked_fill of attention scores with a bool mask broadcast over the batch ------------

@parir.jit
def masked_fill(input, mask, output, B, T):
    parir.label('B')
    for b in range(B):
        parir.label('i')
        for i in range(T):
            parir.label('j')
            for j in range(T):
                if mask[i, j]:
                    output[b, i, j] = float('-inf')
                else:
                    output[b, i, j] = input[b, i, j]


def case_masked_fill(rng, device):
    B, T = 3, 37
    input = nonzero((B, T, T), rng, device=device)
    mask = (torch.rand((T, T), generator=rng) < 0.3).to(device)
    output = poison((B, T, T), device=device)
    ref = _d(input).masked_fill(mask.cpu(), float("-inf"))
    spec = {'B': parir.threads(B), 'i': parir.threads(T), 'j': parir.threads(T)}
    return dict(fn=masked_fill, args=[input, mask, output, B, T], spec=spec,
                check=[(output, ref)])


# ----- pixel_shuffle on float16: a 4-deep nest over the output, upscale_factor a NumPy int --

@parir.jit
def pixel_shuffle(input, output, upscale_factor):
    N, C, OH, OW = output.shape
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('OH')
            for oh in range(OH):
                parir.label('OW')
                for ow in range(OW):
                    h = oh // upscale_factor
                    i = oh % upscale_factor
                    w = ow // upscale_factor
                    j = ow % upscale_factor
                    output[n, c, oh, ow] = input[
                        n, c * upscale_factor * upscale_factor + i * upscale_factor + j, h, w]


def case_pixel_shuffle(rng, device):
    N, C, H, W, r = 2, 3, 17, 11, np.int64(3)
    R = int(r)
    input = nonzero((N, C * R * R, H, W), rng, dtype=torch.float16, device=device)
    output = poison((N, C, H * R, W * R), dtype=torch.float16, device=device)
    ref = F.pixel_shuffle(input.cpu(), R)
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'OH': parir.threads(H * R),
            'OW': parir.threads(W * R)}
    return dict(fn=pixel_shuffle, args=[input, output, r], spec=spec, check=[(output, ref)])


# ----- The predicted class of each pixel: parir.argmax over the channels --------------------

@parir.jit
def segmentation_argmax(logits, pred):
    N, C, H, W = logits.shape
    parir.label('N')
    for n in range(N):
        parir.label('H')
        for h in range(H):
            parir.label('W')
            for w in range(W):
                pred[n, h, w] = parir.argmax(logits[n, :, h, w])


def case_segmentation_argmax(rng, device):
    N, C, H, W = 2, 21, 17, 33
    logits = nonzero((N, C, H, W), rng, device=device, hi=5.0)
    pred = poison((N, H, W), dtype=torch.int64, device=device)
    ref = torch.argmax(logits.cpu(), dim=1)
    spec = {'N': parir.threads(N), 'H': parir.threads(H), 'W': parir.threads(W)}
    return dict(fn=segmentation_argmax, args=[logits, pred], spec=spec, check=[(pred, ref)])


# ----- col2im (F.fold): zero the image, then scatter every column element with atomic_add ---

@parir.jit
def col2im(input, output, N, C, H, W, KH, KW, stride, padding, OH, OW):
    parir.label('pixel')
    for idx in range(N * C * H * W):
        output[idx // (C * H * W), (idx // (H * W)) % C, (idx // W) % H, idx % W] = 0.0
    L = OH * OW
    parir.label('col')
    for idx in range(N * C * KH * KW * L):
        l = idx % L
        row = (idx // L) % (C * KH * KW)
        n = idx // (L * C * KH * KW)
        c = row // (KH * KW)
        kh = (row // KW) % KH
        kw = row % KW
        ih = (l // OW) * stride - padding + kh
        iw = (l % OW) * stride - padding + kw
        if ih >= 0 and ih < H and iw >= 0 and iw < W:
            parir.atomic_add(output[n, c, ih, iw], input[n, row, l])


def case_col2im(rng, device):
    N, C, H, W, KH, KW = 2, 3, 17, 33, 3, 3
    stride, padding = 1, 1
    OH, OW = _pool_out(H, KH, stride, padding), _pool_out(W, KW, stride, padding)
    input = nonzero((N, C * KH * KW, OH * OW), rng, device=device)
    output = poison((N, C, H, W), device=device)
    ref = F.fold(_d(input), (H, W), (KH, KW), padding=padding, stride=stride)
    spec = {'pixel': parir.threads(N * C * H * W), 'col': parir.threads(N * C * KH * KW * OH * OW)}
    return dict(fn=col2im, args=[input, output, N, C, H, W, KH, KW, stride, padding, OH, OW],
                spec=spec, check=[(output, ref)])


# ----- Bicubic upsampling (align_corners=False), PyTorch's cubic convolution with A = -0.75 --

def cubic_convolution1(x, A):
    return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0


def cubic_convolution2(x, A):
    return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A


def cubic_interp1d(x0, x1, x2, x3, t):
    A = -0.75
    return (x0 * cubic_convolution2(t + 1.0, A) + x1 * cubic_convolution1(t, A)
            + x2 * cubic_convolution1(1.0 - t, A) + x3 * cubic_convolution2(2.0 - t, A))


def bounded(input, n, c, y, x, H, W):
    return input[n, c, min(max(y, 0), H - 1), min(max(x, 0), W - 1)]


@parir.jit
def upsample_bicubic2d(input, output):
    N, C, H, W = input.shape
    OH = output.shape[2]
    OW = output.shape[3]
    height_scale = H / OH
    width_scale = W / OW
    parir.label('plane')
    for nc in range(N * C):
        n = nc // C
        c = nc % C
        parir.label('pixel')
        for p in range(OH * OW):
            oh = p // OW
            ow = p % OW
            real_y = height_scale * (oh + 0.5) - 0.5
            input_y = math.floor(real_y)
            t_y = real_y - input_y
            real_x = width_scale * (ow + 0.5) - 0.5
            input_x = math.floor(real_x)
            t_x = real_x - input_x
            r0 = cubic_interp1d(bounded(input, n, c, input_y - 1, input_x - 1, H, W),
                                bounded(input, n, c, input_y - 1, input_x, H, W),
                                bounded(input, n, c, input_y - 1, input_x + 1, H, W),
                                bounded(input, n, c, input_y - 1, input_x + 2, H, W), t_x)
            r1 = cubic_interp1d(bounded(input, n, c, input_y, input_x - 1, H, W),
                                bounded(input, n, c, input_y, input_x, H, W),
                                bounded(input, n, c, input_y, input_x + 1, H, W),
                                bounded(input, n, c, input_y, input_x + 2, H, W), t_x)
            r2 = cubic_interp1d(bounded(input, n, c, input_y + 1, input_x - 1, H, W),
                                bounded(input, n, c, input_y + 1, input_x, H, W),
                                bounded(input, n, c, input_y + 1, input_x + 1, H, W),
                                bounded(input, n, c, input_y + 1, input_x + 2, H, W), t_x)
            r3 = cubic_interp1d(bounded(input, n, c, input_y + 2, input_x - 1, H, W),
                                bounded(input, n, c, input_y + 2, input_x, H, W),
                                bounded(input, n, c, input_y + 2, input_x + 1, H, W),
                                bounded(input, n, c, input_y + 2, input_x + 2, H, W), t_x)
            output[n, c, oh, ow] = cubic_interp1d(r0, r1, r2, r3, t_y)


def case_upsample_bicubic(rng, device):
    N, C, H, W = 2, 2, 17, 33
    OH, OW = 21, 40
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.interpolate(_d(input), size=(OH, OW), mode="bicubic", align_corners=False)
    spec = {'plane': parir.threads(N * C), 'pixel': parir.threads(OH * OW)}
    return dict(fn=upsample_bicubic2d, args=[input, output], spec=spec, check=[(output, ref)])


# ----- CBAM's channel pooling: mean and max over the channels, slice reductions with axis=0
# ----- into (H, W) slices of the output --------------------------------------------------------

@parir.jit
def channel_pool(input, output):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('H')
        parir.label('W')
        output[n, 0, :, :] = parir.sum(input[n, :, :, :], axis=0) / C
        parir.label('H')
        parir.label('W')
        output[n, 1, :, :] = parir.max(input[n, :, :, :], axis=0)


def case_channel_pool(rng, device):
    N, C, H, W = 2, 7, 17, 33
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, 2, H, W), device=device)
    x = _d(input)
    ref = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], 1)
    spec = {'N': parir.threads(N), 'H': parir.threads(H), 'W': parir.threads(W)}
    return dict(fn=channel_pool, args=[input, output], spec=spec, check=[(output, ref)])


# ----- F.pad(mode='reflect') with a different pad on each side, NumPy int64 pads ------------

def reflect_index(i, n):
    if i < 0:
        return -i
    elif i >= n:
        return 2 * (n - 1) - i
    else:
        return i


@parir.jit
def reflection_pad2d(input, output, pad_left, pad_top):
    N, C, H, W = input.shape
    OH = output.shape[2]
    OW = output.shape[3]
    parir.label('idx')
    for idx in range(N * C * OH * OW):
        ow = idx % OW
        oh = (idx // OW) % OH
        nc = idx // (OW * OH)
        output[nc // C, nc % C, oh, ow] = input[nc // C, nc % C, reflect_index(oh - pad_top, H),
                                                reflect_index(ow - pad_left, W)]


def case_reflection_pad2d(rng, device):
    N, C, H, W = 2, 3, 17, 33
    left, right, top, bottom = np.int64(3), np.int64(1), np.int64(2), np.int64(5)
    OH, OW = H + int(top) + int(bottom), W + int(left) + int(right)
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.pad(_d(input), (int(left), int(right), int(top), int(bottom)), mode="reflect")
    return dict(fn=reflection_pad2d, args=[input, output, left, top],
                spec={'idx': parir.threads(N * C * OH * OW)}, check=[(output, ref)])


# ----- Flips as slices with negative steps: horizontal and vertical -------------------------

@parir.jit
def flip_planes(input, hflipped, vflipped):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            parir.label('H')
            parir.label('W')
            hflipped[n, c, :, :] = input[n, c, :, ::-1]
            parir.label('H')
            parir.label('W')
            vflipped[n, c, :, :] = input[n, c, ::-1, :]


def case_flip_planes(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, device=device)
    hflipped = poison((N, C, H, W), device=device)
    vflipped = poison((N, C, H, W), device=device)
    x = input.cpu()
    spec = {'N': parir.threads(N), 'C': parir.threads(C), 'H': parir.threads(H),
            'W': parir.threads(W)}
    return dict(fn=flip_planes, args=[input, hflipped, vflipped], spec=spec,
                check=[(hflipped, torch.flip(x, (3,))), (vflipped, torch.flip(x, (2,)))])


# ----- pixel_unshuffle by 2 (space to depth), four strided slices of each plane ------------

@parir.jit
def pixel_unshuffle2(input, output):
    N, C, H, W = input.shape
    parir.label('N')
    for n in range(N):
        for c in range(C):
            parir.label('OH')
            parir.label('OW')
            output[n, 4 * c, :, :] = input[n, c, 0::2, 0::2]
            parir.label('OH')
            parir.label('OW')
            output[n, 4 * c + 1, :, :] = input[n, c, 0::2, 1::2]
            parir.label('OH')
            parir.label('OW')
            output[n, 4 * c + 2, :, :] = input[n, c, 1::2, 0::2]
            parir.label('OH')
            parir.label('OW')
            output[n, 4 * c + 3, :, :] = input[n, c, 1::2, 1::2]


def case_pixel_unshuffle(rng, device):
    N, C, H, W, r = 2, 3, 18, 34, 2
    input = nonzero((N, C, H, W), rng, device=device)
    output = poison((N, C * r * r, H // r, W // r), device=device)
    ref = F.pixel_unshuffle(input.cpu(), r)
    spec = {'N': parir.threads(N), 'OH': parir.threads(H // r), 'OW': parir.threads(W // r)}
    return dict(fn=pixel_unshuffle2, args=[input, output], spec=spec, check=[(output, ref)])


# ----- Integral image (summed-area table): a cumsum along W, then along H -------------------

@parir.jit
def integral_image(input, rowsum, output):
    N, C, H, W = input.shape
    parir.label('plane')
    for nc in range(N * C):
        parir.label('row')
        parir.label('scan')
        rowsum[nc // C, nc % C, :, :] = parir.cumsum(input[nc // C, nc % C, :, :], axis=1)
        parir.label('scan')
        parir.label('col')
        output[nc // C, nc % C, :, :] = parir.cumsum(rowsum[nc // C, nc % C, :, :], axis=0)


def case_integral_image(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, device=device)
    rowsum = poison((N, C, H, W), device=device)
    output = poison((N, C, H, W), device=device)
    x = _d(input)
    # The loops across the scans share a thread count: parallel loops at one depth must.
    spec = {'plane': parir.threads(N * C), 'row': parir.threads(64), 'col': parir.threads(64),
            'scan': parir.threads(64).scan()}
    return dict(fn=integral_image, args=[input, rowsum, output], spec=spec,
                check=[(rowsum, x.cumsum(3)), (output, x.cumsum(3).cumsum(2))])


# ----- grid_sample, nearest, zero padding: Python's round (half to even, as nearbyint) ------

@parir.jit
def grid_sample_nearest(input, grid, output):
    N, C, H, W = input.shape
    OH = grid.shape[1]
    OW = grid.shape[2]
    parir.label('N')
    for n in range(N):
        parir.label('OH')
        for oh in range(OH):
            parir.label('OW')
            for ow in range(OW):
                ix = round(((grid[n, oh, ow, 0] + 1.0) * W - 1.0) / 2.0)
                iy = round(((grid[n, oh, ow, 1] + 1.0) * H - 1.0) / 2.0)
                for c in range(C):
                    output[n, c, oh, ow] = pixel_or_zero(input, n, c, iy, ix, H, W)


def case_grid_sample_nearest(rng, device):
    N, C, H, W = 2, 3, 17, 33
    OH, OW = 11, 19
    input = nonzero((N, C, H, W), rng, device=device)
    grid = (torch.rand((N, OH, OW, 2), generator=rng, dtype=torch.float64) * 2.3 - 1.15)
    grid = grid.float().to(device)
    output = poison((N, C, OH, OW), device=device)
    ref = F.grid_sample(_d(input), _d(grid), mode="nearest", padding_mode="zeros",
                        align_corners=False)
    spec = {'N': parir.threads(N), 'OH': parir.threads(OH), 'OW': parir.threads(OW)}
    return dict(fn=grid_sample_nearest, args=[input, grid, output], spec=spec,
                check=[(output, ref)])


# ----- Per-channel fake quantization (QAT), int32 zero points, NumPy int64 bounds -----------

@parir.jit
def fake_quantize_per_channel(input, scale, zero_point, output, quant_min, quant_max):
    N, C, H, W = input.shape
    parir.label('idx')
    for idx in range(N * C * H * W):
        w = idx % W
        h = (idx // W) % H
        c = (idx // (W * H)) % C
        n = idx // (W * H * C)
        inv_scale = 1.0 / scale[c]
        q = round(input[n, c, h, w] * inv_scale) + zero_point[c]
        q = min(max(q, quant_min), quant_max)
        output[n, c, h, w] = (q - zero_point[c]) * scale[c]


def case_fake_quantize(rng, device):
    N, C, H, W = 2, 3, 17, 33
    input = nonzero((N, C, H, W), rng, device=device, hi=3.0)
    scale = positive(C, rng, device=device, lo=0.01, hi=0.03)
    zero_point = randint(C, rng, -10, 10, dtype=torch.int32, device=device)
    output = poison((N, C, H, W), device=device)
    quant_min, quant_max = np.int64(-128), np.int64(127)
    ref = torch.fake_quantize_per_channel_affine(input.cpu(), scale.cpu(), zero_point.cpu(), 1,
                                                 int(quant_min), int(quant_max))
    return dict(fn=fake_quantize_per_channel,
                args=[input, scale, zero_point, output, quant_min, quant_max],
                spec={'idx': parir.threads(N * C * H * W)}, check=[(output, ref)])


CASES = {
    "vis_im2col": case_im2col,
    "vis_upsample_nearest": case_upsample_nearest,
    "vis_upsample_bilinear_align": _bilinear_case(True),
    "vis_upsample_bilinear": _bilinear_case(False),
    "vis_grid_sample": case_grid_sample,
    "vis_roi_align": case_roi_align,
    "vis_one_hot": case_one_hot,
    "vis_masked_fill": case_masked_fill,
    "vis_pixel_shuffle_fp16": case_pixel_shuffle,
    "vis_segmentation_argmax": case_segmentation_argmax,
    "vis_col2im_atomic": case_col2im,
    "vis_upsample_bicubic": case_upsample_bicubic,
    "vis_channel_pool": case_channel_pool,
    "vis_reflection_pad2d": case_reflection_pad2d,
    "vis_flip_slices": case_flip_planes,
    "vis_pixel_unshuffle_slices": case_pixel_unshuffle,
    "vis_integral_image": case_integral_image,
    "vis_grid_sample_nearest": case_grid_sample_nearest,
    "vis_fake_quantize_per_channel": case_fake_quantize,
}
