"""Image filters on (H, W) and (H, W, 3) images: colour conversion, blurs, edge detection and a
brightness/contrast adjustment of 8-bit images."""

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- RGB to grayscale, weights as NumPy float32 scalars --------------------------------------

@parir.jit
def parir_grayscale(img, gray, wr, wg, wb, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(W):
            gray[i, j] = wr * img[i, j, 0] + wg * img[i, j, 1] + wb * img[i, j, 2]


def case_grayscale(rng, device):
    H, W = 33, 31
    img = randint((H, W, 3), rng, 1, 256, dtype=torch.uint8, device=device)
    gray = poison((H, W), device=device)
    wr, wg, wb = np.float32(0.299), np.float32(0.587), np.float32(0.114)
    i = img.cpu().numpy().astype(np.float64)
    ref = float(wr) * i[..., 0] + float(wg) * i[..., 1] + float(wb) * i[..., 2]
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    return dict(fn=parir_grayscale, args=[img, gray, wr, wg, wb, H, W], spec=spec,
                check=[(gray, torch.from_numpy(ref))])


# ----- 3x3 box blur with clamp-to-edge borders --------------------------------------------------

@parir.jit
def parir_box_blur(src, dst, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(W):
            acc = 0.0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    ii = min(max(i + di, 0), H - 1)
                    jj = min(max(j + dj, 0), W - 1)
                    acc += src[ii, jj]
            dst[i, j] = acc / 9.0


def case_box_blur(rng, device):
    H, W = 31, 100
    src = nonzero((H, W), rng, device=device)
    dst = poison((H, W), device=device)
    p = np.pad(f64(src), 1, mode="edge")
    ref = sum(p[1 + di:1 + di + H, 1 + dj:1 + dj + W]
              for di in (-1, 0, 1) for dj in (-1, 0, 1)) / 9.0
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    return dict(fn=parir_box_blur, args=[src, dst, H, W], spec=spec,
                check=[(dst, torch.from_numpy(ref))])


# ----- Sobel edge magnitude, interior pixels; the border set to zero ---------------------------

@parir.jit
def parir_sobel(img, mag, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(W):
            if i == 0 or j == 0 or i == H - 1 or j == W - 1:
                mag[i, j] = 0.0
            else:
                gx = (img[i - 1, j + 1] + 2.0 * img[i, j + 1] + img[i + 1, j + 1]
                      - img[i - 1, j - 1] - 2.0 * img[i, j - 1] - img[i + 1, j - 1])
                gy = (img[i + 1, j - 1] + 2.0 * img[i + 1, j] + img[i + 1, j + 1]
                      - img[i - 1, j - 1] - 2.0 * img[i - 1, j] - img[i - 1, j + 1])
                mag[i, j] = parir.sqrt(gx * gx + gy * gy)


def case_sobel(rng, device):
    H, W = 33, 33
    img = positive((H, W), rng, device=device)
    mag = poison((H, W), device=device)
    a = f64(img)
    gx = (a[:-2, 2:] + 2 * a[1:-1, 2:] + a[2:, 2:]) - (a[:-2, :-2] + 2 * a[1:-1, :-2] + a[2:, :-2])
    gy = (a[2:, :-2] + 2 * a[2:, 1:-1] + a[2:, 2:]) - (a[:-2, :-2] + 2 * a[:-2, 1:-1] + a[:-2, 2:])
    ref = np.zeros((H, W))
    ref[1:-1, 1:-1] = np.sqrt(gx ** 2 + gy ** 2)
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    return dict(fn=parir_sobel, args=[img, mag, H, W], spec=spec,
                check=[(mag, torch.from_numpy(ref))])


# ----- Separable Gaussian blur: a horizontal pass into a buffer, then a vertical one ----------

@parir.jit
def parir_gaussian_blur(src, tmp, dst, w, R, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(R, W - R):
            s = 0.0
            for k in range(-R, R + 1):
                s += w[k + R] * src[i, j + k]
            tmp[i, j] = s
    parir.label('y')
    for i in range(R, H - R):
        parir.label('x')
        for j in range(R, W - R):
            s = 0.0
            for k in range(-R, R + 1):
                s += w[k + R] * tmp[i + k, j]
            dst[i, j] = s


def case_gaussian_blur(rng, device):
    H, W, R = 33, 100, 2
    src = nonzero((H, W), rng, device=device)
    tmp = torch.zeros((H, W), device=device)
    dst = torch.zeros((H, W), device=device)
    g = np.exp(-0.5 * (np.arange(-R, R + 1) / 1.2) ** 2)
    w = torch.tensor(g / g.sum(), dtype=torch.float32, device=device)
    a, wk = f64(src), f64(w)
    t = np.zeros((H, W))
    for k in range(-R, R + 1):
        t[:, R:W - R] += wk[k + R] * a[:, R + k:W - R + k]
    ref = np.zeros((H, W))
    for k in range(-R, R + 1):
        ref[R:H - R, R:W - R] += wk[k + R] * t[R + k:H - R + k, R:W - R]
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    return dict(fn=parir_gaussian_blur, args=[src, tmp, dst, w, R, H, W], spec=spec,
                check=[(dst, torch.from_numpy(ref))])


# ----- Brightness and contrast of an 8-bit RGB image, saturating --------------------------------

@parir.jit
def parir_adjust(img, out, contrast, brightness, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(W):
            for c in range(3):
                v = contrast * (img[i, j, c] - 128.0) + 128.0 + brightness
                out[i, j, c] = parir.uint8(min(max(v, 0.0), 255.0))


def case_adjust(rng, device):
    H, W = 1, 4097
    img = randint((H, W, 3), rng, 1, 256, dtype=torch.uint8, device=device)
    out = poison((H, W, 3), dtype=torch.uint8, device=device)
    contrast, brightness = 1.5, np.float32(-10.0)
    v = contrast * (img.cpu().numpy().astype(np.float64) - 128.0) + 128.0 + float(brightness)
    ref = np.trunc(np.clip(v, 0.0, 255.0)).astype(np.int64)
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    return dict(fn=parir_adjust, args=[img, out, contrast, brightness, H, W], spec=spec,
                check=[(out, torch.from_numpy(ref))])




# ----- Mandelbrot escape counts: a while loop per pixel ----------------------------------------

@parir.jit
def parir_mandelbrot(counts, x0, y0, dx, dy, max_iter, H, W):
    parir.label('y')
    for i in range(H):
        parir.label('x')
        for j in range(W):
            cr = x0 + j * dx
            ci = y0 + i * dy
            zr = 0.0
            zi = 0.0
            n = 0
            while zr * zr + zi * zi <= 4.0 and n < max_iter:
                t = zr * zr - zi * zi + cr
                zi = 2.0 * zr * zi + ci
                zr = t
                n += 1
            counts[i, j] = n


def case_mandelbrot(rng, device):
    H, W, max_iter = 31, 33, 50
    x0, y0, dx, dy = -2.0, -1.2, 2.6 / W, 2.4 / H
    counts = poison((H, W), dtype=torch.int32, device=device)
    ref = np.zeros((H, W), dtype=np.int64)
    for i in range(H):
        for j in range(W):
            c = complex(x0 + j * dx, y0 + i * dy)
            z, n = 0j, 0
            while abs(z) ** 2 <= 4.0 and n < max_iter:
                z = z * z + c
                n += 1
            ref[i, j] = n
    spec = {'y': parir.threads(H), 'x': parir.threads(W)}
    # Points on the set's edge may escape one step apart in other roundings; the reference
    # and the kernel both use float64 and the same operation order.
    return dict(fn=parir_mandelbrot, args=[counts, x0, y0, dx, dy, max_iter, H, W],
                spec=spec, check=[(counts, torch.from_numpy(ref))])


CASES = {
    "grayscale": case_grayscale,
    "box_blur": case_box_blur,
    "sobel": case_sobel,
    "gaussian_blur": case_gaussian_blur,
    "adjust_uint8": case_adjust,
    "mandelbrot": case_mandelbrot,
}
