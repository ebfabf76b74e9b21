"""Training utilities as PyTorch users and library authors write them: llm.c's AdamW kernels
(float32, and bf16 with master weights and stochastic rounding), its fused classifier and layer
norm backward, PyTorch's single-tensor Adam (AMSGrad, the step counter as a tensor) and SGD
(Nesterov), clip_grad_norm_, timm's label smoothing loss, model EMA and accuracy, torchvision's
sigmoid focal loss, bitsandbytes' LLM.int8() vector-wise and blockwise (dynamic map) quantization,
xformers' fused bias + GELU + dropout, PyTorch's EmbeddingBag CUDA kernel, an RMSNorm backward,
torch.amp's unscale and scale update, and a logistic regression trained in one function. Their
variable names, their helpers, Python and NumPy scalars as arguments, sizes off multiples of 32.
"""

import math

import numpy as np
import torch

import parir_torch as parir

from .common import f64, nonzero, poison, positive, randint


# ----- llm.c adamw_kernel2, with its lerp helper; bias corrections computed in the kernel -----

def lerp(start, end, weight):
    # llm.c: fma(weight, end, fma(-weight, start, start))
    return weight * end + (start - weight * start)


def get_learning_rate_cosine(learning_rate, warmup_iterations, train_num_batches,
                             final_learning_rate_frac, step):
    lr = learning_rate
    if step < warmup_iterations:
        lr = learning_rate * (step + 1) / warmup_iterations
    else:
        decay_ratio = (step - warmup_iterations) / (train_num_batches - warmup_iterations)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff starts at 1 and goes to 0
        min_lr = learning_rate * final_learning_rate_frac
        lr = min_lr + coeff * (learning_rate - min_lr)
    return lr


@parir.jit
def adamw_kernel2(params_memory, grads_memory, m_memory, v_memory, num_parameters,
                  max_learning_rate, warmup_iterations, train_num_batches,
                  final_learning_rate_frac, beta1, beta2, t, eps, weight_decay):
    learning_rate = get_learning_rate_cosine(max_learning_rate, warmup_iterations,
                                             train_num_batches, final_learning_rate_frac, t - 1)
    beta1_correction = 1.0 - beta1 ** t
    beta2_correction = 1.0 - beta2 ** t
    parir.label('i')
    for i in range(num_parameters):
        grad = grads_memory[i]
        m = m_memory[i]
        v = v_memory[i]
        # update the first moment (momentum)
        m = lerp(grad, m, beta1)
        m_memory[i] = m
        # update the second moment (RMSprop)
        v = lerp(grad * grad, v, beta2)
        v_memory[i] = v
        m /= beta1_correction  # m_hat
        v /= beta2_correction  # v_hat
        params_memory[i] -= learning_rate * (m / (math.sqrt(v) + eps)
                                             + weight_decay * params_memory[i])


def case_adamw_llmc(rng, device):
    num_parameters, t = 4097, 70
    max_lr, warmup, train_num_batches, final_frac = 6e-4, 50, 1000, 0.1
    beta1, beta2 = np.float32(0.9), np.float32(0.95)
    eps, weight_decay = np.float32(1e-8), np.float32(0.1)
    params = nonzero(num_parameters, rng, device=device)
    grads = nonzero(num_parameters, rng, device=device, lo=0.0, hi=0.1)
    m = nonzero(num_parameters, rng, device=device, lo=0.0, hi=0.01)
    v = positive(num_parameters, rng, device=device, lo=0.0, hi=1e-3)
    p, g, mr, vr = f64(params), f64(grads), f64(m), f64(v)
    b1, b2 = float(beta1), float(beta2)
    mr = b1 * mr + (1 - b1) * g
    vr = b2 * vr + (1 - b2) * g * g
    m_hat = mr / (1 - b1 ** t)
    v_hat = vr / (1 - b2 ** t)
    coeff = 0.5 * (1.0 + math.cos(math.pi * (t - 1 - warmup) / (train_num_batches - warmup)))
    learning_rate = max_lr * final_frac + coeff * (max_lr - max_lr * final_frac)
    p = p - learning_rate * (m_hat / (np.sqrt(v_hat) + float(eps)) + float(weight_decay) * p)
    return dict(fn=adamw_kernel2,
                args=[params, grads, m, v, num_parameters, max_lr, warmup, train_num_batches,
                      final_frac, beta1, beta2, t, eps, weight_decay],
                spec={'i': parir.threads(num_parameters).tpb(512)},
                check=[(params, torch.from_numpy(p)), (m, torch.from_numpy(mr)),
                       (v, torch.from_numpy(vr))])


# ----- llm.c adamw_kernel3: bf16 parameters, float32 master weights, stochastic rounding with
# ----- SquirrelNoise5 (the CUDA intrinsics for the float bits declared as externals) ----------

@parir.external("__float_as_uint", parir.CompileBackend.Cuda, parir.Target.Device)
def __float_as_uint(x: parir.float32) -> parir.uint32:
    return torch.as_tensor(x, dtype=torch.float32).reshape(1).view(torch.uint32)[0]


@parir.external("__uint_as_float", parir.CompileBackend.Cuda, parir.Target.Device)
def __uint_as_float(x: parir.uint32) -> parir.float32:
    return torch.as_tensor(x, dtype=torch.uint32).reshape(1).view(torch.float32)[0]


def SquirrelNoise5(positionX, seed):
    SQ5_BIT_NOISE1 = 0xd2a80a3f  # 11010010101010000000101000111111
    SQ5_BIT_NOISE2 = 0xa884f197  # 10101000100001001111000110010111
    SQ5_BIT_NOISE3 = 0x6C736F4B  # 01101100011100110110111101001011
    SQ5_BIT_NOISE4 = 0xB79F3ABB  # 10110111100111110011101010111011
    SQ5_BIT_NOISE5 = 0x1b56c4f5  # 00011011010101101100010011110101
    mangledBits = parir.uint32(positionX)
    mangledBits *= SQ5_BIT_NOISE1
    mangledBits += seed
    mangledBits ^= (mangledBits >> 9)
    mangledBits += SQ5_BIT_NOISE2
    mangledBits ^= (mangledBits >> 11)
    mangledBits *= SQ5_BIT_NOISE3
    mangledBits ^= (mangledBits >> 13)
    mangledBits += SQ5_BIT_NOISE4
    mangledBits ^= (mangledBits >> 15)
    mangledBits *= SQ5_BIT_NOISE5
    mangledBits ^= (mangledBits >> 17)
    return mangledBits


def Get2dNoiseUint(indexX, indexY, seed):
    PRIME_NUMBER = 198491317  # Large prime number with non-boring bits
    return SquirrelNoise5(indexX + (PRIME_NUMBER * indexY), seed)


def stochastic_rounding(in_, out, idx, block_size, seed):
    # llm.c hashes (threadIdx.x, blockIdx.x * blockDim.x + blockIdx.y)
    random = Get2dNoiseUint(idx % block_size, (idx // block_size) * block_size, seed)
    threshold = random & 0xFFFF
    float_bits = __float_as_uint(in_)
    rounded_bits = float_bits & 0x0000FFFF
    float_bits = (float_bits | 0xFFFF) if rounded_bits > threshold else (float_bits & ~0xFFFF)
    out[idx] = parir.bfloat16(__uint_as_float(float_bits))


@parir.jit
def adamw_kernel3(params_memory, master_params_memory, grads_memory, m_memory, v_memory,
                  num_parameters, learning_rate, beta1, beta2, beta1_correction,
                  beta2_correction, eps, weight_decay, grad_scale, seed, block_size):
    parir.label('idx')
    for idx in range(num_parameters):
        # get the gradient, m, and v for this parameter
        grad = grad_scale * parir.float32(grads_memory[idx])
        m = m_memory[idx]
        v = v_memory[idx]
        # update the first moment (momentum)
        m = lerp(grad, m, beta1)
        m_memory[idx] = m
        # update the second moment (RMSprop)
        v = lerp(grad * grad, v, beta2)
        v_memory[idx] = v
        m /= beta1_correction  # m_hat
        v /= beta2_correction  # v_hat
        # fetch the old value of this parameter as a float
        old_param = master_params_memory[idx]
        # update this parameter
        param = old_param - (learning_rate * (m / (math.sqrt(v) + eps) + weight_decay * old_param))
        # update our low precision version of the parameters using stochastic rounding
        stochastic_rounding(param, params_memory, idx, block_size, seed)
        # write the full, float version of the param into our master copy
        master_params_memory[idx] = param


def squirrel_noise5_np(positionX, seed):
    with np.errstate(over='ignore'):
        m = positionX.astype(np.uint32)
        m *= np.uint32(0xd2a80a3f)
        m += np.uint32(seed)
        m ^= m >> np.uint32(9)
        m += np.uint32(0xa884f197)
        m ^= m >> np.uint32(11)
        m *= np.uint32(0x6C736F4B)
        m ^= m >> np.uint32(13)
        m += np.uint32(0xB79F3ABB)
        m ^= m >> np.uint32(15)
        m *= np.uint32(0x1b56c4f5)
        m ^= m >> np.uint32(17)
    return m


def case_adamw_bf16_stochastic(rng, device):
    num_parameters, t, block_size = 4097, 3, 512
    f32 = np.float32
    learning_rate, beta1, beta2 = f32(3e-4), f32(0.9), f32(0.95)
    eps, weight_decay, grad_scale = f32(1e-8), f32(0.1), f32(0.5)
    beta1_correction, beta2_correction = f32(1.0 - 0.9 ** t), f32(1.0 - 0.95 ** t)
    seed = np.uint32(0x9E3779B9)
    master = nonzero(num_parameters, rng, device=device)
    params = poison(num_parameters, dtype=torch.bfloat16, device=device)
    grads = nonzero(num_parameters, rng, device=device, lo=0.0, hi=0.1).bfloat16()
    m = nonzero(num_parameters, rng, device=device, lo=0.0, hi=0.01)
    v = positive(num_parameters, rng, device=device, lo=0.0, hi=1e-3)
    # the update in float32, operation by operation, since the stochastic rounding reads the
    # low bits of the float32 result
    g = grad_scale * grads.cpu().float().numpy()
    mr, vr, old = m.cpu().numpy(), v.cpu().numpy(), master.cpu().numpy()
    mr = beta1 * mr + (g - beta1 * g)
    vr = beta2 * vr + (g * g - beta2 * (g * g))
    param = old - learning_rate * ((mr / beta1_correction)
                                   / (np.sqrt(vr / beta2_correction) + eps) + weight_decay * old)
    idx = np.arange(num_parameters, dtype=np.int64)
    pos = (idx % block_size + 198491317 * ((idx // block_size) * block_size)) & 0xFFFFFFFF
    threshold = squirrel_noise5_np(pos, seed) & np.uint32(0xFFFF)
    bits = param.view(np.uint32)
    bits = np.where((bits & np.uint32(0xFFFF)) > threshold, bits | np.uint32(0xFFFF),
                    bits & np.uint32(0xFFFF0000))
    ref_params = torch.from_numpy(bits.view(np.float32).copy()).bfloat16()
    return dict(fn=adamw_kernel3,
                args=[params, master, grads, m, v, num_parameters, learning_rate, beta1, beta2,
                      beta1_correction, beta2_correction, eps, weight_decay, grad_scale, seed,
                      block_size],
                spec={'idx': parir.threads(num_parameters).tpb(block_size)},
                # the GPU may contract a multiply-add, so that a bit of the master weight and
                # then the stochastic rounding differ: allow one bfloat16 step
                tol=(4e-3, 1e-6),
                check=[(params, ref_params), (master, torch.from_numpy(param.astype(np.float64))),
                       (m, torch.from_numpy(mr.astype(np.float64))),
                       (v, torch.from_numpy(vr.astype(np.float64)))])


# ----- PyTorch's _single_tensor_adam: L2 weight decay, AMSGrad, step_t += 1 on the device -----

@parir.jit
def single_tensor_adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t, lr, beta1,
                       beta2, eps, weight_decay, amsgrad, maximize, numel):
    # update step
    with parir.gpu:
        step_t[0] += 1
    parir.label('N')
    for i in range(numel):
        g = grad[i] if not maximize else -grad[i]
        if weight_decay != 0:
            g = g + weight_decay * param[i]
        # Decay the first and second moment running average coefficient
        exp_avg[i] = exp_avg[i] + (g - exp_avg[i]) * (1 - beta1)     # exp_avg.lerp_(grad, 1-beta1)
        exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1 - beta2) * g * g
        step = step_t[0]
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = math.sqrt(bias_correction2)
        if amsgrad:
            # Maintains the maximum of all 2nd moment running avg. till now
            max_exp_avg_sq[i] = max(max_exp_avg_sq[i], exp_avg_sq[i])
            # Use the max. for normalizing running avg. of gradient
            denom = math.sqrt(max_exp_avg_sq[i]) / bias_correction2_sqrt + eps
        else:
            denom = math.sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps
        param[i] -= step_size * exp_avg[i] / denom


def case_adam_amsgrad(rng, device):
    numel = 1000
    lr, beta1, beta2, eps, weight_decay = 1e-3, 0.9, 0.999, 1e-8, 1e-2
    param = nonzero(numel, rng, device=device)
    grad = nonzero(numel, rng, device=device, lo=0.0, hi=0.1)
    exp_avg = nonzero(numel, rng, device=device, lo=0.0, hi=0.01)
    exp_avg_sq = positive(numel, rng, device=device, lo=0.0, hi=1e-3)
    max_exp_avg_sq = positive(numel, rng, device=device, lo=0.0, hi=1e-3)
    step_t = torch.tensor([4.0], device=device)     # state['step'], a float32 tensor
    p, g, m, v, vmax = (f64(t) for t in (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq))
    step = 5.0
    g = g + weight_decay * p
    m = m + (g - m) * (1 - beta1)
    v = v * beta2 + (1 - beta2) * g * g
    vmax = np.maximum(vmax, v)
    denom = np.sqrt(vmax) / math.sqrt(1 - beta2 ** step) + eps
    p = p - lr / (1 - beta1 ** step) * m / denom
    return dict(fn=single_tensor_adam,
                args=[param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t, lr, beta1, beta2,
                      eps, weight_decay, True, False, param.numel()],
                spec={'N': parir.threads(numel)},
                check=[(param, torch.from_numpy(p)), (exp_avg, torch.from_numpy(m)),
                       (exp_avg_sq, torch.from_numpy(v)), (max_exp_avg_sq, torch.from_numpy(vmax)),
                       (step_t, torch.tensor([step]))])


# ----- PyTorch's _single_tensor_sgd on a Linear weight: dampening, Nesterov -------------------

@parir.jit
def sgd_step(params, d_p_list, momentum_buffer_list, weight_decay, momentum, lr, dampening,
             nesterov, maximize, first_step, out_features, in_features):
    parir.label('out')
    for o in range(out_features):
        parir.label('in')
        for i in range(in_features):
            d_p = d_p_list[o, i] if not maximize else -d_p_list[o, i]
            if weight_decay != 0:
                d_p = d_p + weight_decay * params[o, i]
            if momentum != 0:
                if first_step:
                    buf = d_p
                else:
                    buf = momentum_buffer_list[o, i] * momentum + (1 - dampening) * d_p
                momentum_buffer_list[o, i] = buf
                if nesterov:
                    d_p = d_p + momentum * buf
                else:
                    d_p = buf
            params[o, i] += -lr * d_p


def case_sgd_nesterov(rng, device):
    out_features, in_features = 33, 97
    weight_decay, momentum, lr, dampening = np.float32(5e-4), np.float32(0.9), 0.1, 0.0
    params = nonzero((out_features, in_features), rng, device=device)
    grad = nonzero((out_features, in_features), rng, device=device, lo=0.0, hi=0.1)
    buf = nonzero((out_features, in_features), rng, device=device, lo=0.0, hi=0.1)
    p, g, b = f64(params), f64(grad), f64(buf)
    wd, mom = float(weight_decay), float(momentum)
    g = -g + wd * p       # maximize=True: the gradient is negated first
    b = b * mom + (1 - dampening) * g
    p = p - lr * (g + mom * b)
    return dict(fn=sgd_step,
                args=[params, grad, buf, weight_decay, momentum, lr, dampening, True, True, False,
                      out_features, in_features],
                spec={'out': parir.threads(out_features), 'in': parir.threads(in_features)},
                check=[(params, torch.from_numpy(p)), (buf, torch.from_numpy(b))])


# ----- torch.nn.utils.clip_grad_norm_ over a Linear's weight and bias grads -------------------

@parir.jit
def clip_grad_norm_(grad_w, grad_b, norm_sq, total_norm_out, clip_coef_clamped, max_norm,
                    out_features, in_features):
    with parir.gpu:
        norm_sq[0] = 0.0
    parir.label('row')
    for o in range(out_features):
        parir.label('col')
        for i in range(in_features):
            norm_sq[0] += grad_w[o, i] * grad_w[o, i]
    parir.label('bias')
    for o in range(out_features):
        norm_sq[0] += grad_b[o] * grad_b[o]
    with parir.gpu:
        total_norm = math.sqrt(norm_sq[0])
        total_norm_out[0] = total_norm
        clip_coef = max_norm / (total_norm + 1e-6)
        # Note: multiplying by the clamped coef is redundant when the coef is clamped to 1, but
        # doing so avoids a `if clip_coef < 1:` conditional which can require a CPU <=> device
        # synchronization when the gradients do not reside in CPU memory.
        clip_coef_clamped[0] = min(clip_coef, 1.0)
    parir.label('row')
    for o in range(out_features):
        parir.label('col')
        for i in range(in_features):
            grad_w[o, i] *= clip_coef_clamped[0]
    parir.label('bias')
    for o in range(out_features):
        grad_b[o] *= clip_coef_clamped[0]


def case_clip_grad_norm(rng, device):
    out_features, in_features, max_norm = 33, 1000, 1.0
    grad_w = nonzero((out_features, in_features), rng, device=device)
    grad_b = nonzero(out_features, rng, device=device)
    norm_sq, total_norm, coef = (poison(1, device=device) for _ in range(3))
    gw, gb = f64(grad_w), f64(grad_b)
    tn = math.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    c = min(max_norm / (tn + 1e-6), 1.0)
    return dict(fn=clip_grad_norm_,
                args=[grad_w, grad_b, norm_sq, total_norm, coef, max_norm, out_features,
                      in_features],
                spec={'row': parir.threads(out_features).reduce(),
                      'col': parir.threads(256).reduce(),
                      'bias': parir.threads(out_features).reduce()},
                check=[(total_norm, torch.tensor([tn])), (coef, torch.tensor([c])),
                       (grad_w, torch.from_numpy(gw * c)), (grad_b, torch.from_numpy(gb * c))])


# ----- llm.c's fused classifier: softmax, cross-entropy (ignore_index, mean) and the backward
# ----- written over the logits in place (dlogits is the logits buffer) --------------------------

def softmax_forward(probs, logits, B, T, V):
    parir.label('b')
    for b in range(B):
        parir.label('t')
        for t in range(T):
            maxval = -10000.0  # TODO something better
            parir.label('v')
            for i in range(V):
                maxval = max(maxval, logits[b, t, i])
            sum = 0.0
            parir.label('v')
            for i in range(V):
                probs[b, t, i] = math.exp(logits[b, t, i] - maxval)
                sum += probs[b, t, i]
            parir.label('v')
            for i in range(V):
                probs[b, t, i] /= sum


def crossentropy_forward(losses, probs, targets, B, T, ignore_index):
    parir.label('b')
    for b in range(B):
        parir.label('t')
        for t in range(T):
            # loss = -log(probs[target])
            ix = targets[b, t]
            if ix == ignore_index:
                losses[b, t] = 0.0
            else:
                losses[b, t] = -math.log(probs[b, t, ix])


def crossentropy_softmax_backward(dlogits, dlosses, probs, targets, B, T, V, ignore_index):
    # backwards through both softmax and crossentropy
    parir.label('b')
    for b in range(B):
        parir.label('t')
        for t in range(T):
            ix = targets[b, t]
            dloss = 0.0 if ix == ignore_index else dlosses[0]
            parir.label('v')
            for i in range(V):
                p = probs[b, t, i]
                indicator = 1.0 if i == ix else 0.0
                dlogits[b, t, i] = (p - indicator) * dloss


@parir.jit
def fused_classifier(losses, mean_loss, dloss_mean, probs, logits, dlogits, targets, B, T, V,
                     ignore_index):
    softmax_forward(probs, logits, B, T, V)
    crossentropy_forward(losses, probs, targets, B, T, ignore_index)
    with parir.gpu:
        total = 0.0
        n_valid = 0
        for b in range(B):
            for t in range(T):
                if targets[b, t] != ignore_index:
                    total += losses[b, t]
                    n_valid += 1
        mean_loss[0] = total / n_valid
        dloss_mean[0] = 1.0 / n_valid
    crossentropy_softmax_backward(dlogits, dloss_mean, probs, targets, B, T, V, ignore_index)


def case_cross_entropy_llmc(rng, device):
    B, T, V, ignore_index = 2, 17, 1000, -100
    logits = nonzero((B, T, V), rng, device=device, lo=0.0, hi=4.0)
    targets = randint((B, T), rng, 0, V)
    targets[0, 3] = targets[1, 0] = targets[1, 16] = ignore_index
    targets = targets.to(device)
    losses, mean_loss = poison((B, T), device=device), poison(1, device=device)
    dloss_mean = poison(1, device=device)
    probs = poison((B, T, V), device=device)
    x = f64(logits)
    e = np.exp(x - x.max(-1, keepdims=True))
    pr = e / e.sum(-1, keepdims=True)
    tg = targets.cpu().numpy()
    valid = tg != ignore_index
    n_valid = int(valid.sum())
    onehot = np.zeros_like(pr)
    np.put_along_axis(onehot, np.where(valid, tg, 0)[..., None], 1.0, -1)
    ref = np.where(valid, -np.log((pr * onehot).sum(-1)), 0.0)
    dlogits = np.where(valid[..., None], (pr - onehot) / n_valid, 0.0)
    # F.cross_entropy(logits, targets, ignore_index=-100) and its gradient, for the record
    lt = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.cross_entropy(lt.view(-1, V), torch.from_numpy(tg).view(-1)).backward()
    assert np.allclose(lt.grad.numpy(), dlogits)
    return dict(fn=fused_classifier,
                args=[losses, mean_loss, dloss_mean, probs, logits, logits, targets, B, T, V,
                      ignore_index],
                spec={'b': parir.threads(B), 't': parir.threads(T),
                      'v': parir.threads(256).reduce()},
                check=[(losses, torch.from_numpy(ref)), (probs, torch.from_numpy(pr)),
                       (mean_loss, torch.tensor([ref[valid].mean()])),
                       (dloss_mean, torch.tensor([1.0 / n_valid])),
                       (logits, torch.from_numpy(dlogits))])


# ----- timm's LabelSmoothingCrossEntropy, written with slice reductions -----------------------

@parir.jit
def label_smoothing_cross_entropy(x, target, loss, mean_loss, smoothing, N, C):
    confidence = 1. - smoothing
    parir.label('N')
    for i in range(N):
        parir.label('C')
        m = parir.max(x[i, :])
        parir.label('C')
        lse = m + parir.log(parir.sum(parir.exp(x[i, :] - m)))
        # nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = lse - x[i, target[i]]
        # smooth_loss = -logprobs.mean(dim=-1)
        parir.label('C')
        smooth_loss = lse - parir.sum(x[i, :]) / C
        loss[i] = confidence * nll_loss + smoothing * smooth_loss
    with parir.gpu:
        mean_loss[0] = 0.0
        for i in range(N):
            mean_loss[0] += loss[i]
        mean_loss[0] /= N


def case_label_smoothing(rng, device):
    N, C, smoothing = 31, 4097, 0.1
    x = nonzero((N, C), rng, device=device, lo=0.0, hi=5.0)
    target = randint(N, rng, 0, C, device=device)
    loss, mean_loss = poison(N, device=device), poison(1, device=device)
    xr = f64(x)
    m = xr.max(1)
    lse = m + np.log(np.exp(xr - m[:, None]).sum(1))
    nll = lse - xr[np.arange(N), target.cpu().numpy()]
    smooth = lse - xr.mean(1)
    ref = (1 - smoothing) * nll + smoothing * smooth
    return dict(fn=label_smoothing_cross_entropy,
                args=[x, target, loss, mean_loss, smoothing, N, C],
                spec={'N': parir.threads(N), 'C': parir.threads(512).reduce()},
                check=[(loss, torch.from_numpy(ref)), (mean_loss, torch.tensor([ref.mean()]))])


# ----- torchvision.ops.sigmoid_focal_loss, reduction 'none' and 'sum' -------------------------

@parir.jit
def sigmoid_focal_loss(inputs, targets, loss, loss_sum, alpha, gamma, N, C):
    with parir.gpu:
        loss_sum[0] = 0.0
    parir.label('N')
    for n in range(N):
        parir.label('C')
        for c in range(C):
            x = inputs[n, c]
            t = targets[n, c]
            p = parir.sigmoid(x)
            # F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
            ce_loss = max(x, 0.0) - x * t + math.log1p(math.exp(-abs(x)))
            p_t = p * t + (1 - p) * (1 - t)
            l = ce_loss * ((1 - p_t) ** gamma)
            if alpha >= 0:
                alpha_t = alpha * t + (1 - alpha) * (1 - t)
                l = alpha_t * l
            loss[n, c] = l
            loss_sum[0] += l


def case_focal_loss(rng, device):
    N, C, alpha, gamma = 31, 80, 0.25, 2.0
    inputs = nonzero((N, C), rng, device=device, lo=0.0, hi=4.0)
    targets = (torch.rand((N, C), generator=rng) < 0.2).float().to(device)
    loss, loss_sum = poison((N, C), device=device), poison(1, device=device)
    x, t = f64(inputs), f64(targets)
    p = 1 / (1 + np.exp(-x))
    ce = np.maximum(x, 0) - x * t + np.log1p(np.exp(-np.abs(x)))
    p_t = p * t + (1 - p) * (1 - t)
    ref = (alpha * t + (1 - alpha) * (1 - t)) * ce * (1 - p_t) ** gamma
    return dict(fn=sigmoid_focal_loss, args=[inputs, targets, loss, loss_sum, alpha, gamma, N, C],
                spec={'N': parir.threads(N).reduce(), 'C': parir.threads(96).reduce()},
                check=[(loss, torch.from_numpy(ref)), (loss_sum, torch.tensor([ref.sum()]))])


# ----- bitsandbytes' int8_vectorwise_quant / int8_vectorwise_dequant: one spec for both -------

Q_ROWS, Q_COLS = 33, 1000
int8_spec = {'row': parir.threads(Q_ROWS), 'col': parir.threads(256).reduce()}


@parir.jit
def int8_vectorwise_quant(A, out_row, row_stats, rows, cols):
    parir.label('row')
    for row in range(rows):
        absmax = 0.0
        parir.label('col')
        for i in range(cols):
            absmax = max(absmax, abs(parir.float32(A[row, i])))
        row_stats[row] = absmax
        parir.label('col')
        for i in range(cols):
            q = parir.round(parir.float32(A[row, i]) * (127.0 / row_stats[row]))
            out_row[row, i] = parir.int8(parir.clamp(q, -127, 127))


@parir.jit
def int8_vectorwise_dequant(A, stats, out, rows, cols):
    # To dequantize we divide by 127, or multiply by the reciprocal.
    parir.label('row')
    for row in range(rows):
        parir.label('col')
        for i in range(cols):
            out[row, i] = A[row, i] * (stats[row] * 7.874015718698502e-3)


def case_int8_quant(rng, device):
    A = nonzero((Q_ROWS, Q_COLS), rng, dtype=torch.float16, device=device, lo=0.0, hi=3.0)
    out_row = poison((Q_ROWS, Q_COLS), dtype=torch.int8, device=device)
    row_stats = poison(Q_ROWS, device=device)
    # The scale and the rounding in float32 as the kernel does them: the int8 codes must match
    # exactly, and a float64 product can round the other way at a .5 boundary.
    a = A.cpu().float().numpy()
    absmax = np.abs(a).max(1)
    q = np.round(a * (np.float32(127.0) / absmax[:, None])).clip(-127, 127)
    return dict(fn=int8_vectorwise_quant, args=[A, out_row, row_stats, Q_ROWS, Q_COLS],
                spec=int8_spec,
                check=[(row_stats, torch.from_numpy(absmax.astype(np.float64))),
                       (out_row, torch.from_numpy(q).to(torch.int8))])


def case_int8_dequant(rng, device):
    A = randint((Q_ROWS, Q_COLS), rng, -127, 128, dtype=torch.int8, device=device)
    stats = positive(Q_ROWS, rng, device=device, lo=0.5, hi=4.0)
    out = poison((Q_ROWS, Q_COLS), device=device)
    ref = f64(A) * f64(stats)[:, None] / 127.0
    return dict(fn=int8_vectorwise_dequant, args=[A, stats, out, Q_ROWS, Q_COLS],
                spec=int8_spec, check=[(out, torch.from_numpy(ref))])


# ----- bitsandbytes' kQuantizeBlockwise with dQuantize's binary search in the dynamic map ----

def dQuantize(smem_code, x):
    pivot = 127
    upper_pivot = 255
    lower_pivot = 0
    lower = -1.0
    upper = 1.0
    val = smem_code[pivot]
    # i>>=1 = {32, 16, 8, 4, 2, 1}
    i = 64
    while i > 0:
        if x > val:
            lower_pivot = pivot
            lower = val
            pivot += i
        else:
            upper_pivot = pivot
            upper = val
            pivot -= i
        val = smem_code[pivot]
        i >>= 1
    if upper_pivot == 255:
        upper = smem_code[upper_pivot]
    if lower_pivot == 0:
        lower = smem_code[lower_pivot]
    if x > val:
        midpoint = (upper + val) * 0.5
        if x > midpoint:
            return upper_pivot
        else:
            return pivot
    else:
        midpoint = (lower + val) * 0.5
        if x < midpoint:
            return lower_pivot
        else:
            return pivot


@parir.jit
def kQuantizeBlockwise(code, A, absmax, out, n, BLOCK_SIZE):
    n_blocks = (n + BLOCK_SIZE - 1) // BLOCK_SIZE
    parir.label('block')
    for block in range(n_blocks):
        local_abs_max = 0.0
        parir.label('j')
        for j in range(block * BLOCK_SIZE, min((block + 1) * BLOCK_SIZE, n)):
            local_abs_max = max(local_abs_max, abs(A[j]))
        absmax[block] = local_abs_max
        local_abs_max = 1.0 / local_abs_max
        parir.label('j')
        for j in range(block * BLOCK_SIZE, min((block + 1) * BLOCK_SIZE, n)):
            out[j] = dQuantize(code, A[j] * local_abs_max)


def create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8):
    # bitsandbytes.functional.create_dynamic_map
    data = []
    non_sign_bits = total_bits - (1 if signed else 1)
    for i in range(max_exponent_bits):
        fraction_items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed
                             else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1)
        boundaries = torch.linspace(0.1, 1, fraction_items, dtype=torch.float64)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2 ** total_bits
    data.sort()
    return torch.tensor(data, dtype=torch.float32)


def case_quantize_blockwise(rng, device):
    n, BLOCK_SIZE = 4097, 256
    n_blocks = (n + BLOCK_SIZE - 1) // BLOCK_SIZE
    code = create_dynamic_map()
    A = nonzero(n, rng, lo=0.0, hi=2.0)
    absmax = poison(n_blocks, device=device)
    out = poison(n, dtype=torch.uint8, device=device)
    # the normalized values as the kernel computes them (float32), then the nearest code
    a = A.numpy()
    pad = np.zeros(n_blocks * BLOCK_SIZE, np.float32)
    pad[:n] = np.abs(a)
    amax = pad.reshape(n_blocks, BLOCK_SIZE).max(1)
    x = a * np.repeat(np.float32(1.0) / amax, BLOCK_SIZE)[:n]
    q = np.abs(code.double().numpy()[None, :] - x.astype(np.float64)[:, None]).argmin(1)
    return dict(fn=kQuantizeBlockwise, args=[code.to(device), A.to(device), absmax, out, n,
                                             BLOCK_SIZE],
                spec={'block': parir.threads(n_blocks), 'j': parir.threads(BLOCK_SIZE).reduce()},
                check=[(absmax, torch.from_numpy(amax.astype(np.float64))),
                       (out, torch.from_numpy(q).to(torch.uint8))])


# ----- xformers' FusedDropoutBias(activation=GeLU): bias, GELU (tanh), dropout from a keep mask

@parir.jit
def fused_bias_gelu_dropout(out, inp, bias, keep, p, N, C):
    GELU_SCALING_FACTOR = math.sqrt(2.0 / math.pi)
    scale = 1.0 / (1.0 - p)
    parir.label('row')
    for n in range(N):
        parir.label('col')
        for c in range(C):
            x = inp[n, c] + bias[c]
            cube = 0.044715 * x * x * x
            x = 0.5 * x * (1.0 + math.tanh(GELU_SCALING_FACTOR * (x + cube)))
            out[n, c] = x * scale if keep[n, c] else 0.0


def case_bias_gelu_dropout(rng, device):
    N, C, p = 33, 3072 + 1, 0.1
    inp = nonzero((N, C), rng, device=device, lo=0.0, hi=3.0)
    bias = nonzero(C, rng, device=device)
    keep = (torch.rand((N, C), generator=rng) >= p).to(device)
    out = poison((N, C), device=device)
    x = f64(inp) + f64(bias)
    ref = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    ref = np.where(keep.cpu().numpy(), ref / (1.0 - p), 0.0)
    return dict(fn=fused_bias_gelu_dropout, args=[out, inp, bias, keep, p, N, C],
                spec={'row': parir.threads(N), 'col': parir.threads(1024)},
                check=[(out, torch.from_numpy(ref))])


# ----- timm's ModelEmaV3: warmup decay, lerp of the float entries of a state_dict -------------

def get_decay(step, decay, min_decay, warmup_gamma, warmup_power, use_warmup):
    if use_warmup:
        d = 1 - (1 + step / warmup_gamma) ** -warmup_power
        return max(min(d, decay), min_decay)
    else:
        return decay


@parir.jit
def model_ema_update(ema, model, step, decay, min_decay, warmup_gamma, warmup_power,
                     use_warmup):
    decay = get_decay(step, decay, min_decay, warmup_gamma, warmup_power, use_warmup)
    parir.label('o')
    for o in range(ema['fc1.weight'].shape[0]):
        parir.label('i')
        for i in range(ema['fc1.weight'].shape[1]):
            ema['fc1.weight'][o, i] = lerp(ema['fc1.weight'][o, i], model['fc1.weight'][o, i],
                                           1. - decay)
    parir.label('o')
    for o in range(ema['fc1.bias'].shape[0]):
        ema['fc1.bias'][o] = lerp(ema['fc1.bias'][o], model['fc1.bias'][o], 1. - decay)
        ema['bn.running_mean'][o] = lerp(ema['bn.running_mean'][o],
                                         model['bn.running_mean'][o], 1. - decay)
    with parir.gpu:
        # buffers that are not floating point are copied
        ema['bn.num_batches_tracked'][0] = model['bn.num_batches_tracked'][0]


def case_model_ema(rng, device):
    step, decay, min_decay, warmup_gamma, warmup_power = 100, 0.9998, 0.0, 1.0, 2 / 3
    hidden, inp = 33, 31
    ema = {'fc1.weight': nonzero((hidden, inp), rng, device=device),
           'fc1.bias': nonzero(hidden, rng, device=device),
           'bn.running_mean': nonzero(hidden, rng, device=device),
           'bn.num_batches_tracked': torch.tensor([99], device=device)}
    model = {'fc1.weight': nonzero((hidden, inp), rng, device=device),
             'fc1.bias': nonzero(hidden, rng, device=device),
             'bn.running_mean': nonzero(hidden, rng, device=device),
             'bn.num_batches_tracked': torch.tensor([100], device=device)}
    d = 1 - (1 + step / warmup_gamma) ** -warmup_power
    d = max(min(d, decay), min_decay)
    ref = {k: f64(ema[k]) + (1 - d) * (f64(model[k]) - f64(ema[k]))
           for k in ('fc1.weight', 'fc1.bias', 'bn.running_mean')}
    return dict(fn=model_ema_update,
                args=[ema, model, step, decay, min_decay, warmup_gamma, warmup_power, True],
                spec={'o': parir.threads(hidden), 'i': parir.threads(inp)},
                check=[(ema[k], torch.from_numpy(v)) for k, v in ref.items()]
                + [(ema['bn.num_batches_tracked'], torch.tensor([100]))])


# ----- PyTorch's EmbeddingBag_updateOutputKernel_sum_mean (mode='mean', padding_idx) ----------

@parir.jit
def embedding_bag_update_output(input, offsets, weight, output, numIndices, numBags,
                                featureSize, padding_idx, mode_mean):
    parir.label('bag')
    for bag in range(numBags):
        parir.label('featureDim')
        for featureDim in range(featureSize):
            begin = offsets[bag] if bag > 0 else 0
            end = offsets[bag + 1] if bag < numBags - 1 else numIndices
            weightFeatSum = 0.0
            bag_size_ = 0
            for emb in range(begin, end):
                pad = input[emb] == padding_idx
                weightValue = weight[input[emb], featureDim]
                weightValue = 0.0 if pad else weightValue
                weightFeatSum += weightValue
                bag_size_ += 0 if pad else 1
            if mode_mean:
                if bag_size_ != 0:
                    weightFeatSum = weightFeatSum / bag_size_
            output[bag, featureDim] = weightFeatSum


def case_embedding_bag(rng, device):
    num_embeddings, featureSize, numBags, padding_idx = 1000, 33, 31, 0
    sizes = randint(numBags, rng, 0, 12)
    sizes[3] = sizes[17] = sizes[numBags - 1] = 0          # empty bags, the last one too
    numIndices = int(sizes.sum())
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)[:-1]])
    input = randint(numIndices, rng, 0, num_embeddings)
    input[::7] = padding_idx
    weight = nonzero((num_embeddings, featureSize), rng, device=device)
    output = poison((numBags, featureSize), device=device)
    w, ref = f64(weight), np.zeros((numBags, featureSize))
    bounds = offsets.tolist() + [numIndices]
    for b in range(numBags):
        idx = [k for k in input[bounds[b]:bounds[b + 1]].tolist() if k != padding_idx]
        if idx:
            ref[b] = w[idx].mean(0)
    return dict(fn=embedding_bag_update_output,
                args=[input.to(device), offsets.to(device), weight, output, numIndices, numBags,
                      featureSize, padding_idx, True],
                spec={'bag': parir.threads(numBags), 'featureDim': parir.threads(featureSize)},
                check=[(output, torch.from_numpy(ref))])


# ----- llm.c layernorm_backward: two row reductions, then atomics into dweight and dbias -----

@parir.jit
def layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C):
    parir.label('b')
    for b in range(B):
        parir.label('t')
        for t in range(T):
            mean_bt = mean[b, t]
            rstd_bt = rstd[b, t]

            # first: two reduce operations
            dnorm_mean = 0.0
            dnorm_norm_mean = 0.0
            parir.label('i')
            for i in range(C):
                norm_bti = (inp[b, t, i] - mean_bt) * rstd_bt
                dnorm_i = weight[i] * dout[b, t, i]
                dnorm_mean += dnorm_i
                dnorm_norm_mean += dnorm_i * norm_bti
            dnorm_mean = dnorm_mean / C
            dnorm_norm_mean = dnorm_norm_mean / C

            # now iterate again and accumulate all the gradients
            parir.label('i')
            for i in range(C):
                norm_bti = (inp[b, t, i] - mean_bt) * rstd_bt
                dnorm_i = weight[i] * dout[b, t, i]
                # gradient contribution to bias
                parir.atomic_add(dbias[i], dout[b, t, i])
                # gradient contribution to weight
                parir.atomic_add(dweight[i], norm_bti * dout[b, t, i])
                # gradient contribution to input
                dval = 0.0
                dval += dnorm_i  # term 1
                dval -= dnorm_mean  # term 2
                dval -= norm_bti * dnorm_norm_mean  # term 3
                dval *= rstd_bt  # final scale
                dinp[b, t, i] += dval


def case_layernorm_backward(rng, device):
    B, T, C, eps = 3, 11, 97, 1e-5
    inp = nonzero((B, T, C), rng, device=device, lo=0.0, hi=2.0)
    weight = nonzero(C, rng, device=device, lo=0.5, hi=1.5)
    dout = nonzero((B, T, C), rng, device=device)
    x = f64(inp)
    mu = x.mean(-1)
    rs = 1.0 / np.sqrt(((x - mu[..., None]) ** 2).mean(-1) + eps)
    mean = torch.from_numpy(mu).float().to(device)
    rstd = torch.from_numpy(rs).float().to(device)
    dinp = nonzero((B, T, C), rng, device=device, lo=0.0, hi=0.1)   # grads accumulate (+=)
    dweight = nonzero(C, rng, device=device, lo=0.0, hi=0.1)
    dbias = nonzero(C, rng, device=device, lo=0.0, hi=0.1)
    m, r, w, dy = f64(mean), f64(rstd), f64(weight), f64(dout)
    norm = (x - m[..., None]) * r[..., None]
    dnorm = w * dy
    dx = (dnorm - dnorm.mean(-1, keepdims=True)
          - norm * (dnorm * norm).mean(-1, keepdims=True)) * r[..., None]
    return dict(fn=layernorm_backward,
                args=[dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T, C],
                spec={'b': parir.threads(B), 't': parir.threads(T),
                      'i': parir.threads(128).reduce()},
                check=[(dinp, torch.from_numpy(f64(dinp) + dx)),
                       (dweight, torch.from_numpy(f64(dweight) + (norm * dy).sum((0, 1)))),
                       (dbias, torch.from_numpy(f64(dbias) + dy.sum((0, 1))))])


# ----- A fused RMSNorm backward (rstd recomputed from x), then dw as a column sum -------------

@parir.jit
def rms_norm_backward(dy, x, weight, dx, dw, rstd, M, N, eps):
    parir.label('row')
    for row in range(M):
        parir.label('col')
        ms = parir.sum(x[row, :] * x[row, :]) / N
        r = 1.0 / math.sqrt(ms + eps)
        rstd[row] = r
        parir.label('col')
        c = parir.sum(dy[row, :] * weight[:] * x[row, :]) * r * r / N
        parir.label('col')
        dx[row, :] = r * (dy[row, :] * weight[:] - x[row, :] * c)
    parir.label('dw_col')
    for col in range(N):
        dw[col] = 0.0
        parir.label('dw_row')
        for row in range(M):
            dw[col] += dy[row, col] * x[row, col] * rstd[row]


def case_rmsnorm_backward(rng, device):
    M, N, eps = 33, 1000, 1e-6
    dy = nonzero((M, N), rng, device=device)
    x = nonzero((M, N), rng, device=device, lo=0.0, hi=2.0)
    weight = nonzero(N, rng, device=device, lo=0.5, hi=1.5)
    dx, rstd = poison((M, N), device=device), poison(M, device=device)
    dw = poison(N, device=device)
    g, xr, w = f64(dy), f64(x), f64(weight)
    r = 1.0 / np.sqrt((xr * xr).mean(1) + eps)
    c = (g * w * xr).sum(1) * r * r / N
    ref_dx = r[:, None] * (g * w - xr * c[:, None])
    ref_dw = (g * xr * r[:, None]).sum(0)
    return dict(fn=rms_norm_backward, args=[dy, x, weight, dx, dw, rstd, M, N, eps],
                spec={'row': parir.threads(M), 'col': parir.threads(256).reduce(),
                      'dw_col': parir.threads(N), 'dw_row': parir.threads(32).reduce()},
                check=[(dx, torch.from_numpy(ref_dx)), (dw, torch.from_numpy(ref_dw)),
                       (rstd, torch.from_numpy(r))])


# ----- timm.utils.accuracy(output, target, topk=(1, 5)) --------------------------------------

@parir.jit
def accuracy(output, target, correct, acc1, acc5, batch_size, num_classes):
    with parir.gpu:
        correct[0] = 0
        correct[1] = 0
    parir.label('n')
    for n in range(batch_size):
        # output.topk(1)
        pred = parir.argmax(output[n, :])
        if pred == target[n]:
            correct[0] += 1
        # the target is in the top 5 when fewer than 5 classes score higher
        rank = 0
        parir.label('c')
        for c in range(num_classes):
            if output[n, c] > output[n, target[n]]:
                rank += 1
        if rank < 5:
            correct[1] += 1
    with parir.gpu:
        acc1[0] = correct[0] * 100. / batch_size
        acc5[0] = correct[1] * 100. / batch_size


def case_topk_accuracy(rng, device):
    batch_size, num_classes = 33, 1000
    output = nonzero((batch_size, num_classes), rng, device=device)
    target = randint(batch_size, rng, 0, num_classes)
    o = f64(output)
    top = np.argsort(-o, 1)
    target[:6] = torch.from_numpy(top[:6, 0])        # some right, some in the top 5
    target[6:12] = torch.from_numpy(top[6:12, 3])
    target = target.to(device)
    correct = poison(2, dtype=torch.int64, device=device)
    acc1, acc5 = poison(1, device=device), poison(1, device=device)
    t = target.cpu().numpy()
    c1 = int((top[:, 0] == t).sum())
    c5 = int((top[:, :5] == t[:, None]).any(1).sum())
    return dict(fn=accuracy, args=[output, target, correct, acc1, acc5, batch_size, num_classes],
                spec={'n': parir.threads(batch_size).reduce(), 'c': parir.threads(128).reduce()},
                check=[(correct, torch.tensor([c1, c5])),
                       (acc1, torch.tensor([c1 * 100. / batch_size])),
                       (acc5, torch.tensor([c5 * 100. / batch_size]))])


# ----- torch.amp: _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ -----------

@parir.jit
def amp_unscale_and_update(grads, found_inf, inv_scale, current_scale, growth_tracker,
                           growth_factor, backoff_factor, growth_interval, numel):
    parir.label('i')
    for i in range(numel):
        val = grads[i]
        if not math.isfinite(val):
            found_inf[0] = 1.
        grads[i] = val * inv_scale[0]
    with parir.gpu:
        if found_inf[0] != 0:
            current_scale[0] = current_scale[0] * backoff_factor
            growth_tracker[0] = 0
        else:
            # Entering this branch means we just carried out a successful step,
            # so growth_tracker is incremented before comparing to growth_interval.
            successful = growth_tracker[0] + 1
            if successful == growth_interval:
                new_scale = current_scale[0] * growth_factor
                # Do not grow the scale past fp32 bounds to inf.
                if math.isfinite(new_scale):
                    current_scale[0] = new_scale
                growth_tracker[0] = 0
            else:
                growth_tracker[0] = successful


def _amp_case(rng, device, with_inf):
    numel, growth_factor, backoff_factor, growth_interval = 4097, 2.0, 0.5, 2000
    scale = 65536.0
    grads = nonzero(numel, rng, device=device, lo=1.0, hi=1000.0)
    if with_inf:
        grads[5] = float('inf')
        grads[4000] = float('nan')
    found_inf = torch.zeros(1, device=device)
    inv_scale = torch.tensor([1.0 / scale], device=device)
    current_scale = torch.tensor([scale], device=device)
    growth_tracker = torch.tensor([growth_interval - 1], dtype=torch.int32, device=device)
    ref = f64(grads) / scale
    new_scale = scale * backoff_factor if with_inf else scale * growth_factor
    return dict(fn=amp_unscale_and_update,
                args=[grads, found_inf, inv_scale, current_scale, growth_tracker, growth_factor,
                      backoff_factor, growth_interval, numel],
                spec={'i': parir.threads(numel)},
                check=[(grads, torch.from_numpy(ref)),
                       (found_inf, torch.tensor([1.0 if with_inf else 0.0])),
                       (current_scale, torch.tensor([new_scale])),
                       (growth_tracker, torch.tensor([0], dtype=torch.int32))])


def case_amp_unscale(rng, device):
    return _amp_case(rng, device, True)


# ----- A whole training loop on the GPU: logistic regression by full-batch gradient descent ---

@parir.jit
def train_logreg(X, y, w, b, grad_w, grad_b, losses, lr, n_steps, N, D):
    for step in range(n_steps):
        with parir.gpu:
            grad_b[0] = 0.0
            losses[step] = 0.0
        parir.label('d')
        for d in range(D):
            grad_w[d] = 0.0
        # forward, BCE loss and gradients; the weight gradient is scattered with atomics
        parir.label('n')
        for n in range(N):
            z = b[0]
            for d in range(D):
                z += X[n, d] * w[d]
            p = 1.0 / (1.0 + math.exp(-z))
            losses[step] += -(y[n] * math.log(p) + (1 - y[n]) * math.log(1 - p)) / N
            err = (p - y[n]) / N
            grad_b[0] += err
            for d in range(D):
                parir.atomic_add(grad_w[d], err * X[n, d])
        # SGD update
        parir.label('d')
        for d in range(D):
            w[d] -= lr * grad_w[d]
        with parir.gpu:
            b[0] -= lr * grad_b[0]


def case_logreg_train(rng, device):
    N, D, n_steps, lr = 1000, 7, 3, 0.5
    X = nonzero((N, D), rng, device=device, lo=0.0, hi=2.0)
    y = (torch.rand(N, generator=rng) < 0.5).float().to(device)
    w = nonzero(D, rng, device=device, lo=0.0, hi=0.1)
    b = torch.zeros(1, device=device)
    grad_w, grad_b = poison(D, device=device), poison(1, device=device)
    losses = poison(n_steps, device=device)
    Xr, yr, wr, br = f64(X), f64(y), f64(w), 0.0
    ref_losses = []
    for _ in range(n_steps):
        pr = 1.0 / (1.0 + np.exp(-(Xr @ wr + br)))
        ref_losses.append(-(yr * np.log(pr) + (1 - yr) * np.log(1 - pr)).mean())
        err = (pr - yr) / N
        gw, gb = Xr.T @ err, err.sum()
        wr, br = wr - lr * gw, br - lr * gb
    return dict(fn=train_logreg,
                args=[X, y, w, b, grad_w, grad_b, losses, lr, n_steps, N, D],
                spec={'n': parir.threads(N).reduce(), 'd': parir.threads(D)},
                check=[(w, torch.from_numpy(wr)), (b, torch.tensor([br])),
                       (losses, torch.tensor(ref_losses)), (grad_w, torch.from_numpy(gw)),
                       (grad_b, torch.tensor([gb]))])


CASES = {
    "tu_adamw_llmc": case_adamw_llmc,
    "tu_adamw_bf16_stochastic": case_adamw_bf16_stochastic,
    "tu_adam_amsgrad": case_adam_amsgrad,
    "tu_sgd_nesterov": case_sgd_nesterov,
    "tu_clip_grad_norm": case_clip_grad_norm,
    "tu_cross_entropy_llmc": case_cross_entropy_llmc,
    "tu_label_smoothing_ce": case_label_smoothing,
    "tu_sigmoid_focal_loss": case_focal_loss,
    "tu_int8_vectorwise_quant": case_int8_quant,
    "tu_int8_vectorwise_dequant": case_int8_dequant,
    "tu_quantize_blockwise": case_quantize_blockwise,
    "tu_bias_gelu_dropout": case_bias_gelu_dropout,
    "tu_model_ema": case_model_ema,
    "tu_embedding_bag": case_embedding_bag,
    "tu_layernorm_backward": case_layernorm_backward,
    "tu_rmsnorm_backward": case_rmsnorm_backward,
    "tu_topk_accuracy": case_topk_accuracy,
    "tu_amp_unscale": case_amp_unscale,
    "tu_logreg_train": case_logreg_train,
}
