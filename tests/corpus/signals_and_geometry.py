"""Signal processing, geometry and graphics, ported the way CUDA, Numba and CuPy users write
them: FIR and 'same' convolution as in CuPy RawKernel posts, a naive DFT, Goertzel's DTMF
detector, a per-channel biquad (scipy.signal.lfilter's transposed direct form II), a
cross-correlation delay search, the Numba CUDA Mandelbrot example, a Julia set with the
complex update as one tuple assignment, a ray-sphere shader,
bilinear resize, torchvision's box_iou, W. R. Franklin's PNPOLY, histogram equalization,
colorsys' rgb_to_hsv, and the odd-even transposition and bitonic sorts of the CUDA samples."""

import colorsys
import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- FIR filter, one thread per output sample (y = lfilter(taps, 1.0, x)) -----------------

@parir.jit
def fir_filter(x, taps, y, n, ntaps):
    parir.label('i')
    for i in range(n):
        acc = 0.0
        for k in range(ntaps):
            if i - k >= 0:
                acc += taps[k] * x[i - k]
        y[i] = acc


def _fir_case(n):
    def case(rng, device):
        ntaps = 31
        x = nonzero(n, rng, device=device)
        # a windowed-sinc low-pass, as scipy.signal.firwin(31, 0.2) would give
        m = np.arange(ntaps) - (ntaps - 1) / 2
        h = np.sinc(0.2 * m) * np.hamming(ntaps)
        taps = torch.from_numpy(h / h.sum()).float().to(device)
        y = poison(n, device=device)
        ref = np.convolve(f64(x), f64(taps))[:n]
        return dict(fn=fir_filter, args=[x, taps, y, n, ntaps],
                    spec={'i': parir.threads(n)},
                    check=[(y, torch.from_numpy(ref))])
    return case


# ----- 1-D convolution, mode='same', a batch of signals (CuPy RawKernel style) ---------------

@parir.jit
def conv1d_same(x, h, y, B, N, M):
    half = M // 2
    parir.label('b')
    for b in range(B):
        parir.label('i')
        for i in range(N):
            acc = 0.0
            for j in range(M):
                xi = i - j + half
                if 0 <= xi < N:
                    acc += h[j] * x[b, xi]
            y[b, i] = acc


def case_conv1d_same(rng, device):
    B, N, M = 4, 1000, 15
    x = nonzero((B, N), rng, device=device)
    h = nonzero(M, rng, device=device)
    y = poison((B, N), device=device)
    xs, hs = f64(x), f64(h)
    ref = np.stack([np.convolve(xs[b], hs, mode='same') for b in range(B)])
    return dict(fn=conv1d_same, args=[x, h, y, B, N, M],
                spec={'b': parir.threads(B), 'i': parir.threads(N)},
                check=[(y, torch.from_numpy(ref))])


# ----- naive DFT of a real signal: one block per frequency, the sum over n reduced ----------

@parir.jit
def dft(x, re, im, N):
    parir.label('k')
    for k in range(N):
        sr = 0.0
        si = 0.0
        parir.label('n')
        for n in range(N):
            angle = 2.0 * math.pi * k * n / N
            sr += x[n] * math.cos(angle)
            si -= x[n] * math.sin(angle)
        re[k] = sr
        im[k] = si


def case_dft(rng, device):
    N = np.int32(257)
    x = nonzero(int(N), rng, device=device)
    re, im = poison(int(N), device=device), poison(int(N), device=device)
    X = np.fft.fft(f64(x))
    return dict(fn=dft, args=[x, re, im, N],
                spec={'k': parir.threads(int(N)), 'n': parir.threads(64).reduce()},
                check=[(re, torch.from_numpy(X.real.copy())),
                       (im, torch.from_numpy(X.imag.copy()))])


# ----- Goertzel's algorithm: DTMF bins of every channel, channels-last data as a view --------

@parir.jit
def goertzel(x, bins, power, nch, nbins, N):
    parir.label('ch')
    for ch in range(nch):
        parir.label('b')
        for b in range(nbins):
            coeff = 2.0 * math.cos(2.0 * math.pi * bins[b] / N)
            s_prev = 0.0
            s_prev2 = 0.0
            for n in range(N):
                s = x[ch, n] + coeff * s_prev - s_prev2
                s_prev2 = s_prev
                s_prev = s
            power[ch, b] = s_prev2 * s_prev2 + s_prev * s_prev - coeff * s_prev * s_prev2


def case_goertzel(rng, device):
    N, fs, nch = 205, 8000.0, 33
    freqs = [697, 770, 852, 941, 1209, 1336, 1477, 1633]
    k = [int(round(N * f / fs)) for f in freqs]
    t = np.arange(N) / fs
    low = torch.randint(0, 4, (nch,), generator=rng).numpy()
    high = torch.randint(4, 8, (nch,), generator=rng).numpy()
    noise = 0.1 * f64(nonzero((N, nch), rng, dtype=torch.float64))
    data = np.stack([np.sin(2 * np.pi * freqs[low[c]] * t) + np.sin(2 * np.pi * freqs[high[c]] * t)
                     for c in range(nch)], axis=1) + noise
    samples = torch.from_numpy(data).float().to(device)          # (N, nch), as recorded
    bins = torch.tensor(k, dtype=torch.int32, device=device)
    power = poison((nch, len(k)), device=device)
    X = np.fft.fft(f64(samples), axis=0)[k, :]
    ref = (np.abs(X) ** 2).T
    return dict(fn=goertzel, args=[samples.t(), bins, power, nch, len(k), N],
                spec={'ch': parir.threads(nch), 'b': parir.threads(len(k))},
                tol=(1e-4, 1e-5),
                check=[(power, torch.from_numpy(ref))])


# ----- biquad per channel, scipy.signal.lfilter's direct form II transposed, with zi ---------

@parir.jit
def biquad(x, y, zi, b0, b1, b2, a1, a2, nch, nsamp):
    parir.label('ch')
    for ch in range(nch):
        z1 = zi[ch, 0]
        z2 = zi[ch, 1]
        for n in range(nsamp):
            xn = x[ch, n]
            yn = b0 * xn + z1
            z1 = b1 * xn - a1 * yn + z2
            z2 = b2 * xn - a2 * yn
            y[ch, n] = yn
        zi[ch, 0] = z1
        zi[ch, 1] = z2


def case_biquad(rng, device):
    nch, nsamp = 31, 1000
    # RBJ cookbook low-pass, f0 / fs = 0.1, Q = 1 / sqrt(2)
    w0 = 2 * math.pi * 0.1
    alpha = math.sin(w0) / (2 * (1 / math.sqrt(2)))
    a0 = 1 + alpha
    coef = [(1 - math.cos(w0)) / 2 / a0, (1 - math.cos(w0)) / a0, (1 - math.cos(w0)) / 2 / a0,
            -2 * math.cos(w0) / a0, (1 - alpha) / a0]
    b0, b1, b2, a1, a2 = (np.float32(c) for c in coef)
    x = nonzero((nch, nsamp), rng, device=device)
    zi = nonzero((nch, 2), rng, device=device, lo=0.0, hi=0.5)
    y = poison((nch, nsamp), device=device)
    B0, B1, B2, A1, A2 = (float(c) for c in (b0, b1, b2, a1, a2))
    xs = f64(x)
    z1, z2 = f64(zi)[:, 0].copy(), f64(zi)[:, 1].copy()
    ref = np.zeros((nch, nsamp))
    for n in range(nsamp):
        yn = B0 * xs[:, n] + z1
        z1 = B1 * xs[:, n] - A1 * yn + z2
        z2 = B2 * xs[:, n] - A2 * yn
        ref[:, n] = yn
    return dict(fn=biquad, args=[x, y, zi, b0, b1, b2, a1, a2, nch, nsamp],
                spec={'ch': parir.threads(nch)},
                check=[(y, torch.from_numpy(ref)),
                       (zi, torch.from_numpy(np.stack([z1, z2], axis=1)))])


# ----- cross-correlation over lags, then the lag of the peak (time-delay estimation) ---------

@parir.jit
def xcorr_delay(x, y, corr, delay, N, maxlag):
    nlags = 2 * maxlag + 1
    parir.label('lag')
    for l in range(nlags):
        lag = l - maxlag
        acc = 0.0
        parir.label('n')
        for n in range(N):
            m = n + lag
            if m >= 0 and m < N:
                acc += x[n] * y[m]
        corr[l] = acc
    with parir.gpu:
        best = 0
        bestval = corr[0]
        for l in range(1, nlags):
            if corr[l] > bestval:
                bestval = corr[l]
                best = l
        delay[0] = best - maxlag


def case_xcorr(rng, device):
    N, maxlag, D = 500, 40, 17
    s = f64(nonzero(N + D, rng, dtype=torch.float64))
    noise = 0.05 * f64(nonzero(N, rng, dtype=torch.float64))
    x = torch.from_numpy(s[D:]).float().to(device)
    y = torch.from_numpy(s[:N] + noise).float().to(device)     # y[n + D] ~ x[n]
    corr = poison(2 * maxlag + 1, device=device)
    delay = poison(1, dtype=torch.int64, device=device)
    xs, ys = f64(x), f64(y)
    full = np.correlate(ys, xs, mode='full')                  # lag L at index L + N - 1
    ref = full[N - 1 - maxlag:N + maxlag]
    assert int(np.argmax(ref)) - maxlag == D
    return dict(fn=xcorr_delay, args=[x, y, corr, delay, N, maxlag],
                spec={'lag': parir.threads(2 * maxlag + 1), 'n': parir.threads(128).reduce()},
                check=[(corr, torch.from_numpy(ref)), (delay, torch.tensor([D]))])


# ----- the Numba CUDA Mandelbrot example: a device function per pixel, uint8 image -----------

def mandel(x, y, max_iters):
    # Numba's example returns from inside its for loop; here the loop runs while |z| < 2
    zr = 0.0
    zi = 0.0
    i = 0
    while i < max_iters and zr * zr + zi * zi < 4.0:
        tmp = zr * zr - zi * zi + x
        zi = 2.0 * zr * zi + y
        zr = tmp
        i += 1
    return i


@parir.jit
def create_fractal(min_x, max_x, min_y, max_y, image, iters):
    height = image.shape[0]
    width = image.shape[1]
    pixel_size_x = (max_x - min_x) / width
    pixel_size_y = (max_y - min_y) / height
    parir.label('x')
    for x in range(width):
        real = min_x + x * pixel_size_x
        parir.label('y')
        for y in range(height):
            imag = min_y + y * pixel_size_y
            image[y, x] = mandel(real, imag, iters)


def _mandel_ref(cr, ci, iters):
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    count = np.zeros(cr.shape, dtype=np.int64)
    for _ in range(iters):
        active = zr * zr + zi * zi < 4.0
        tmp = zr * zr - zi * zi + cr
        zi = np.where(active, 2.0 * zr * zi + ci, zi)
        zr = np.where(active, tmp, zr)
        count += active
    return count


def case_mandelbrot(rng, device):
    height, width, iters = 33, 97, 20
    min_x, max_x, min_y, max_y = -2.0, 1.0, -1.0, 1.0
    image = poison((height, width), dtype=torch.uint8, device=device)
    xs = min_x + np.arange(width) * ((max_x - min_x) / width)
    ys = min_y + np.arange(height) * ((max_y - min_y) / height)
    cr, ci = np.meshgrid(xs, ys)
    ref = _mandel_ref(cr, ci, iters)
    # escape counts that a rounding difference (an FMA on the GPU) could change are avoided
    for eps in (1e-9, -1e-9):
        assert np.array_equal(ref, _mandel_ref(cr + eps, ci + eps, iters))
    return dict(fn=create_fractal, args=[min_x, max_x, min_y, max_y, image, iters],
                spec={'y': parir.threads(height), 'x': parir.threads(width)},
                check=[(image, torch.from_numpy(ref).to(torch.uint8))])


# ----- Julia set as Python authors write it: the complex update as one tuple assignment ------

@parir.jit
def julia(out, cx, cy, width, height, max_iter, zoom):
    parir.label('py')
    for py in range(height):
        parir.label('px')
        for px in range(width):
            zr = 1.5 * (px - width / 2) / (0.5 * zoom * width)
            zi = (py - height / 2) / (0.5 * zoom * height)
            it = 0
            while zr * zr + zi * zi < 4.0 and it < max_iter:
                zr, zi = zr * zr - zi * zi + cx, 2.0 * zr * zi + cy
                it += 1
            out[py, px] = it


def _julia_ref(zr, zi, cx, cy, max_iter):
    count = np.zeros(zr.shape, dtype=np.int64)
    for _ in range(max_iter):
        active = zr * zr + zi * zi < 4.0
        zr, zi = (np.where(active, zr * zr - zi * zi + cx, zr),
                  np.where(active, 2.0 * zr * zi + cy, zi))
        count += active
    return count


def case_julia(rng, device):
    width, height, max_iter, zoom = 33, 31, 40, 1.0
    cx, cy = -0.7, 0.27015
    out = poison((height, width), dtype=torch.int32, device=device)
    px, py = np.meshgrid(np.arange(width), np.arange(height))
    zr = 1.5 * (px - width / 2) / (0.5 * zoom * width)
    zi = (py - height / 2) / (0.5 * zoom * height)
    ref = _julia_ref(zr, zi, cx, cy, max_iter)
    for eps in (1e-9, -1e-9):
        assert np.array_equal(ref, _julia_ref(zr + eps, zi + eps, cx, cy, max_iter))
    return dict(fn=julia, args=[out, cx, cy, width, height, np.int32(max_iter), zoom],
                spec={'py': parir.threads(height), 'px': parir.threads(width)},
                check=[(out, torch.from_numpy(ref).to(torch.int32))])


# ----- ray-sphere intersection per pixel, nearest hit, Lambert shading -----------------------

def dot3(ax, ay, az, bx, by, bz):
    return ax * bx + ay * by + az * bz


def hit_sphere(cx, cy, cz, r, dx, dy, dz):
    # the ray starts at the origin: oc = origin - center
    ocx = -cx
    ocy = -cy
    ocz = -cz
    b = dot3(ocx, ocy, ocz, dx, dy, dz)
    c = dot3(ocx, ocy, ocz, ocx, ocy, ocz) - r * r
    disc = b * b - c
    t = -1.0
    if disc > 0.0:
        t = -b - math.sqrt(disc)
    return t


@parir.jit
def render(spheres, albedo, img, hit_id, width, height, nspheres, fov, lx, ly, lz):
    aspect = width / height
    scale = math.tan(fov * 0.5)
    parir.label('py')
    for py in range(height):
        parir.label('px')
        for px in range(width):
            u = (2.0 * (px + 0.5) / width - 1.0) * aspect * scale
            v = (1.0 - 2.0 * (py + 0.5) / height) * scale
            inv_len = 1.0 / math.sqrt(u * u + v * v + 1.0)
            dx = u * inv_len
            dy = v * inv_len
            dz = -inv_len
            tmin = 1e30
            hit = -1
            for s in range(nspheres):
                t = hit_sphere(spheres[s, 0], spheres[s, 1], spheres[s, 2], spheres[s, 3],
                               dx, dy, dz)
                if t > 1e-4 and t < tmin:
                    tmin = t
                    hit = s
            if hit >= 0:
                r = spheres[hit, 3]
                nx = (tmin * dx - spheres[hit, 0]) / r
                ny = (tmin * dy - spheres[hit, 1]) / r
                nz = (tmin * dz - spheres[hit, 2]) / r
                diffuse = max(dot3(nx, ny, nz, lx, ly, lz), 0.0)
                img[py, px] = 0.1 + 0.9 * albedo[hit] * diffuse
            else:
                img[py, px] = 0.5 * (v + 1.0) * 0.3     # sky gradient
            hit_id[py, px] = hit


def _render_ref(S, alb, width, height, fov, L):
    aspect = width / height
    scale = math.tan(fov * 0.5)
    px, py = np.meshgrid(np.arange(width), np.arange(height))
    u = (2.0 * (px + 0.5) / width - 1.0) * aspect * scale
    v = (1.0 - 2.0 * (py + 0.5) / height) * scale
    inv = 1.0 / np.sqrt(u * u + v * v + 1.0)
    d = np.stack([u * inv, v * inv, -inv], axis=-1)
    ts, margins = [], []
    for cx, cy, cz, r in S:
        c = np.array([cx, cy, cz])
        b = d @ (-c)
        disc = b * b - (c @ c - r * r)
        margins.append(np.abs(disc) / (b * b + c @ c + r * r))   # against float32's grain
        ts.append(np.where(disc > 0, -b - np.sqrt(np.maximum(disc, 0)), -1.0))
    ts = np.stack(ts)                                    # (nspheres, height, width)
    valid = ts > 1e-4
    tm = np.where(valid, ts, np.inf)
    hit = np.where(valid.any(0), tm.argmin(0), -1)
    tmin = tm.min(0)
    srt = np.sort(tm, axis=0)
    # no pixel where float32 rounding could flip a hit or the nearest sphere
    margin_ok = min(m.min() for m in margins) > 1e-5 and (
        (srt[1][np.isfinite(srt[0])] - srt[0][np.isfinite(srt[0])]).min() > 1e-3)
    P = np.where(hit >= 0, tmin, 0.0)[..., None] * d
    idx = np.maximum(hit, 0)
    n = (P - S[idx, :3]) / S[idx, 3][..., None]
    diffuse = np.maximum(n @ np.asarray(L), 0.0)
    img = np.where(hit >= 0, 0.1 + 0.9 * alb[idx] * diffuse, 0.5 * (v + 1.0) * 0.3)
    return img, hit, margin_ok


def case_raysphere(rng, device):
    width, height, fov = 47, 33, math.radians(60.0)
    spheres = torch.tensor([[0.0, 0.0, -5.0, 1.3], [1.9, 0.4, -4.2, 0.55],
                            [-2.2, -0.5, -6.0, 1.0], [0.3, -101.5, -6.0, 100.0]],
                           dtype=torch.float32)
    albedo = torch.tensor([0.9, 0.6, 0.75, 0.5], dtype=torch.float32)
    ln = math.sqrt(1.0 + 1.0 + 0.25)
    lx, ly, lz = -1.0 / ln, 1.0 / ln, 0.5 / ln
    img = poison((height, width), device=device)
    hit_id = poison((height, width), dtype=torch.int32, device=device)
    ref, ref_hit, margin_ok = _render_ref(f64(spheres), f64(albedo), width, height, fov,
                                          (lx, ly, lz))
    assert margin_ok
    return dict(fn=render,
                args=[spheres.to(device), albedo.to(device), img, hit_id, width, height,
                      spheres.shape[0], fov, lx, ly, lz],
                spec={'py': parir.threads(height), 'px': parir.threads(width)},
                tol=(1e-4, 1e-4),
                check=[(img, torch.from_numpy(ref)),
                       (hit_id, torch.from_numpy(ref_hit).to(torch.int32))])


# ----- bilinear resize of one channel of an HWC image (half-pixel centres, edge clamps) ------

@parir.jit
def resize_bilinear(src, dst, scale_y, scale_x):
    in_h, in_w = src.shape
    out_h, out_w = dst.shape
    parir.label('y')
    for y in range(out_h):
        parir.label('x')
        for x in range(out_w):
            fy = (y + 0.5) * scale_y - 0.5
            fx = (x + 0.5) * scale_x - 0.5
            y0 = int(math.floor(fy))
            x0 = int(math.floor(fx))
            wy = fy - y0
            wx = fx - x0
            y1 = min(y0 + 1, in_h - 1)
            x1 = min(x0 + 1, in_w - 1)
            y0 = max(y0, 0)
            x0 = max(x0, 0)
            top = (1.0 - wx) * src[y0, x0] + wx * src[y0, x1]
            bottom = (1.0 - wx) * src[y1, x0] + wx * src[y1, x1]
            dst[y, x] = (1.0 - wy) * top + wy * bottom


def case_resize_bilinear(rng, device):
    in_h, in_w, out_h, out_w = 31, 33, 64, 20
    img = positive((in_h, in_w, 3), rng, device=device, lo=0.0, hi=1.0)
    dst = poison((out_h, out_w), device=device)
    scale_y, scale_x = in_h / out_h, in_w / out_w
    s = f64(img)[:, :, 1]
    fy = (np.arange(out_h) + 0.5) * scale_y - 0.5
    fx = (np.arange(out_w) + 0.5) * scale_x - 0.5
    y0, x0 = np.floor(fy).astype(int), np.floor(fx).astype(int)
    wy, wx = (fy - y0)[:, None], (fx - x0)[None, :]
    y1, x1 = np.minimum(y0 + 1, in_h - 1), np.minimum(x0 + 1, in_w - 1)
    y0, x0 = np.maximum(y0, 0), np.maximum(x0, 0)
    top = (1 - wx) * s[y0][:, x0] + wx * s[y0][:, x1]
    bottom = (1 - wx) * s[y1][:, x0] + wx * s[y1][:, x1]
    ref = (1 - wy) * top + wy * bottom
    return dict(fn=resize_bilinear,
                args=[img[:, :, 1], dst, scale_y, scale_x],
                spec={'y': parir.threads(out_h), 'x': parir.threads(out_w)},
                check=[(dst, torch.from_numpy(ref))])


# ----- pairwise IoU of two box sets (torchvision.ops.box_iou), boxes as a view of dets -------

def box_area(b):
    return (b[2] - b[0]) * (b[3] - b[1])


@parir.jit
def box_iou(boxes1, boxes2, iou, N, M):
    parir.label('i')
    for i in range(N):
        parir.label('j')
        for j in range(M):
            area1 = box_area(boxes1[i])
            area2 = box_area(boxes2[j])
            lt_x = max(boxes1[i, 0], boxes2[j, 0])
            lt_y = max(boxes1[i, 1], boxes2[j, 1])
            rb_x = min(boxes1[i, 2], boxes2[j, 2])
            rb_y = min(boxes1[i, 3], boxes2[j, 3])
            w = max(rb_x - lt_x, 0.0)
            h = max(rb_y - lt_y, 0.0)
            inter = w * h
            iou[i, j] = inter / (area1 + area2 - inter)


def _boxes(n, rng):
    xy = positive((n, 2), rng, dtype=torch.float64, lo=0.0, hi=60.0)
    wh = positive((n, 2), rng, dtype=torch.float64, lo=5.0, hi=40.0)
    return torch.cat([xy, xy + wh], 1)


def case_box_iou(rng, device):
    N, M = 33, 31
    dets = torch.cat([_boxes(N, rng), torch.rand((N, 1), generator=rng).double()], 1)
    dets = dets.float().to(device)                  # x1, y1, x2, y2, score
    boxes2 = _boxes(M, rng).float().to(device)
    iou = poison((N, M), device=device)
    a, b = f64(dets)[:, :4], f64(boxes2)
    area1 = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area2 = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    ref = inter / (area1[:, None] + area2[None, :] - inter)
    assert (ref > 0).any() and (ref == 0).any()
    return dict(fn=box_iou, args=[dets[:, :4], boxes2, iou, N, M],
                spec={'i': parir.threads(N), 'j': parir.threads(M)},
                check=[(iou, torch.from_numpy(ref))])


# ----- PNPOLY (W. Randolph Franklin): crossings of a ray with the edges, one point a thread ---

@parir.jit
def pnpoly(vertx, verty, testx, testy, inside, nvert, npts):
    parir.label('p')
    for p in range(npts):
        tx = testx[p]
        ty = testy[p]
        c = False
        j = nvert - 1
        for i in range(nvert):
            if ((verty[i] > ty) != (verty[j] > ty)) and (
                    tx < (vertx[j] - vertx[i]) * (ty - verty[i]) / (verty[j] - verty[i])
                    + vertx[i]):
                c = not c
            j = i
        inside[p] = c


def _segment_distance(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = np.clip(((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
    return np.hypot(px - (ax + t * dx), py - (ay + t * dy))


def case_pnpoly(rng, device):
    nvert, npts = 11, 1000
    # a star: alternating outer and inner radii, not convex
    ang = 2 * np.pi * np.arange(nvert) / nvert
    rad = np.where(np.arange(nvert) % 2 == 0, 1.0, 0.45)
    vx = torch.from_numpy(rad * np.cos(ang)).float()
    vy = torch.from_numpy(rad * np.sin(ang)).float()
    pts = (2.4 * torch.rand((npts, 2), generator=rng) - 1.2).float()
    V = np.stack([f64(vx), f64(vy)], 1)
    P = f64(pts)
    dist = np.min([_segment_distance(P[:, 0], P[:, 1], *V[i - 1], *V[i])
                   for i in range(nvert)], axis=0)
    P[dist < 1e-3] = (0.05, 0.02)           # points on an edge are left to rounding: moved
    testx = torch.from_numpy(P[:, 0].copy()).float()
    testy = torch.from_numpy(P[:, 1].copy()).float()
    # the reference by winding number: the angles the edges subtend sum to 2 pi inside
    tx, ty = f64(testx), f64(testy)
    wind = np.zeros(npts)
    for i in range(nvert):
        ax, ay = V[i - 1, 0] - tx, V[i - 1, 1] - ty
        bx, by = V[i, 0] - tx, V[i, 1] - ty
        wind += np.arctan2(ax * by - ay * bx, ax * bx + ay * by)
    ref = np.abs(wind) > np.pi
    assert ref.any() and not ref.all()
    inside = poison(npts, dtype=torch.bool, device=device)
    return dict(fn=pnpoly,
                args=[vx.to(device), vy.to(device), testx.to(device), testy.to(device), inside,
                      nvert, npts],
                spec={'p': parir.threads(npts)},
                check=[(inside, torch.from_numpy(ref))])


# ----- histogram equalization: atomic histogram, CDF on one thread, then the lookup ---------

@parir.jit
def equalize_hist(img, hist, cdf, lut, out, height, width):
    parir.label('bin')
    for b in range(256):
        hist[b] = 0
    parir.label('row')
    for y in range(height):
        parir.label('col')
        for x in range(width):
            parir.atomic_add(hist[img[y, x]], 1)
    with parir.gpu:
        cdf[0] = hist[0]
        for b in range(1, 256):
            cdf[b] = cdf[b - 1] + hist[b]
        cdf_min = 0
        for b in range(256):
            if cdf_min == 0 and cdf[b] > 0:
                cdf_min = cdf[b]
        total = height * width
        for b in range(256):
            if cdf[b] > cdf_min:
                lut[b] = int((cdf[b] - cdf_min) * 255.0 / (total - cdf_min) + 0.5)
            else:
                lut[b] = 0
    parir.label('row')
    for y in range(height):
        parir.label('col')
        for x in range(width):
            out[y, x] = lut[img[y, x]]


def case_equalize_hist(rng, device):
    height, width = 61, 67
    # a low-contrast image: values crowded into [60, 140)
    g = 100.0 + 15.0 * torch.randn((height, width), generator=rng, dtype=torch.float64)
    img = g.clamp(60, 139).round().to(torch.uint8).to(device)
    hist = poison(256, dtype=torch.int32, device=device)
    cdf = poison(256, dtype=torch.int32, device=device)
    lut = poison(256, dtype=torch.uint8, device=device)
    out = poison((height, width), dtype=torch.uint8, device=device)
    v = f64(img).astype(np.int64)
    ref_hist = np.bincount(v.ravel(), minlength=256)
    ref_cdf = np.cumsum(ref_hist)
    cmin = ref_cdf[ref_cdf > 0].min()
    scaled = (ref_cdf - cmin) * 255.0 / (v.size - cmin)
    ref_lut = np.where(ref_cdf > cmin, np.floor(scaled + 0.5), 0).astype(np.int64)
    return dict(fn=equalize_hist, args=[img, hist, cdf, lut, out, height, width],
                spec={'bin': parir.threads(256), 'row': parir.threads(height),
                      'col': parir.threads(width)},
                check=[(hist, torch.from_numpy(ref_hist).to(torch.int32)),
                       (cdf, torch.from_numpy(ref_cdf).to(torch.int32)),
                       (lut, torch.from_numpy(ref_lut).to(torch.uint8)),
                       (out, torch.from_numpy(ref_lut[v]).to(torch.uint8))])


# ----- RGB to HSV per pixel, colorsys.rgb_to_hsv's branches, uint8 in, float32 out ---------

@parir.jit
def rgb_to_hsv(img, hsv, height, width):
    parir.label('y')
    for y in range(height):
        parir.label('x')
        for x in range(width):
            r = img[y, x, 0] / 255.0
            g = img[y, x, 1] / 255.0
            b = img[y, x, 2] / 255.0
            maxc = max(max(r, g), b)
            minc = min(min(r, g), b)
            rangec = maxc - minc
            v = maxc
            if minc == maxc:
                hsv[y, x, 0] = 0.0
                hsv[y, x, 1] = 0.0
                hsv[y, x, 2] = v
            else:
                s = rangec / maxc
                rc = (maxc - r) / rangec
                gc = (maxc - g) / rangec
                bc = (maxc - b) / rangec
                if r == maxc:
                    h = bc - gc
                elif g == maxc:
                    h = 2.0 + rc - bc
                else:
                    h = 4.0 + gc - rc
                h = (h / 6.0) % 1.0
                hsv[y, x, 0] = h
                hsv[y, x, 1] = s
                hsv[y, x, 2] = v


def case_rgb_to_hsv(rng, device):
    height, width = 31, 33
    img = randint((height, width, 3), rng, 0, 256, dtype=torch.uint8)
    img[::4, ::3, 1] = img[::4, ::3, 0]          # some ties between channels
    img[::5, ::2, :] = img[::5, ::2, :1]         # and some grey pixels
    img[1, 1] = torch.tensor([0, 0, 0], dtype=torch.uint8)
    img = img.to(device)
    hsv = poison((height, width, 3), device=device)
    px = f64(img) / 255.0
    ref = np.array([[colorsys.rgb_to_hsv(*px[y, x]) for x in range(width)]
                    for y in range(height)])
    return dict(fn=rgb_to_hsv, args=[img, hsv, height, width],
                spec={'y': parir.threads(height), 'x': parir.threads(width)},
                check=[(hsv, torch.from_numpy(ref))])


# ----- odd-even transposition sort of each row, a host loop over the phases -----------------

@parir.jit
def odd_even_sort(a, rows, n):
    for phase in range(n):
        parir.label('row')
        for r in range(rows):
            parir.label('i')
            for i in range(n // 2):
                j = 2 * i + phase % 2
                if j + 1 < n:
                    if a[r, j] > a[r, j + 1]:
                        tmp = a[r, j]
                        a[r, j] = a[r, j + 1]
                        a[r, j + 1] = tmp


def case_odd_even_sort(rng, device):
    rows, n = 5, 101
    a = randint((rows, n), rng, -1000, 1000, dtype=torch.int32, device=device)
    ref = np.sort(f64(a).astype(np.int64), axis=1)
    return dict(fn=odd_even_sort, args=[a, rows, n],
                spec={'row': parir.threads(rows), 'i': parir.threads(n // 2)},
                check=[(a, torch.from_numpy(ref).to(torch.int32))])


# ----- bitonic sort, the CUDA sample's bitonic_sort_step inside its two host loops ----------

@parir.jit
def bitonic_sort(dev_values, NUM_VALS):
    k = 2
    while k <= NUM_VALS:            # for (k = 2; k <= NUM_VALS; k <<= 1)
        j = k >> 1
        while j > 0:                # for (j = k >> 1; j > 0; j = j >> 1)
            parir.label('i')
            for i in range(NUM_VALS):
                ixj = i ^ j
                # the threads with the lowest ids sort the array
                if ixj > i:
                    if (i & k) == 0:
                        # sort ascending
                        if dev_values[i] > dev_values[ixj]:
                            temp = dev_values[i]
                            dev_values[i] = dev_values[ixj]
                            dev_values[ixj] = temp
                    if (i & k) != 0:
                        # sort descending
                        if dev_values[i] < dev_values[ixj]:
                            temp = dev_values[i]
                            dev_values[i] = dev_values[ixj]
                            dev_values[ixj] = temp
            j = j >> 1
        k = k << 1


def case_bitonic_sort(rng, device):
    NUM_VALS = 1024
    values = nonzero(NUM_VALS, rng, device=device, lo=0.0, hi=100.0)
    ref = np.sort(f64(values))
    return dict(fn=bitonic_sort, args=[values, NUM_VALS],
                spec={'i': parir.threads(NUM_VALS).tpb(512)},
                check=[(values, torch.from_numpy(ref))])


# The same sort as a Python author writes it with for loops over the exponents on the host,
# k and j computed in the kernel from them.

@parir.jit
def bitonic_sort_exp(dev_values, NUM_VALS):
    log_n = int(math.log2(NUM_VALS))
    for p in range(1, log_n + 1):
        for q in range(p - 1, -1, -1):
            parir.label('i')
            for i in range(NUM_VALS):
                k = 1 << p
                j = 1 << q
                ixj = i ^ j
                if ixj > i:
                    if (i & k) == 0:
                        if dev_values[i] > dev_values[ixj]:
                            temp = dev_values[i]
                            dev_values[i] = dev_values[ixj]
                            dev_values[ixj] = temp
                    else:
                        if dev_values[i] < dev_values[ixj]:
                            temp = dev_values[i]
                            dev_values[i] = dev_values[ixj]
                            dev_values[ixj] = temp


def case_bitonic_sort_exp(rng, device):
    case = case_bitonic_sort(rng, device)
    case["fn"] = bitonic_sort_exp
    return case


CASES = {
    "sg_fir_filter": _fir_case(4097),
    "sg_fir_filter_n1": _fir_case(1),
    "sg_conv1d_same": case_conv1d_same,
    "sg_dft": case_dft,
    "sg_goertzel": case_goertzel,
    "sg_biquad": case_biquad,
    "sg_xcorr_delay": case_xcorr,
    "sg_mandelbrot": case_mandelbrot,
    "sg_julia": case_julia,
    "sg_raysphere": case_raysphere,
    "sg_resize_bilinear": case_resize_bilinear,
    "sg_box_iou": case_box_iou,
    "sg_pnpoly": case_pnpoly,
    "sg_equalize_hist": case_equalize_hist,
    "sg_rgb_to_hsv": case_rgb_to_hsv,
    "sg_odd_even_sort": case_odd_even_sort,
    "sg_bitonic_sort": case_bitonic_sort,
    "sg_bitonic_sort_exp": case_bitonic_sort_exp,
}
