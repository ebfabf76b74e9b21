"""The README's example: row sums of a matrix, in parallel over the rows.

Runs on the GPU when there is one; without a GPU it prints the CUDA C++ that parir generates.
"""

import torch

import parir_torch as parir


@parir.jit
def sum_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        for j in range(M):
            y[i] += x[i, j]


def main():
    N, M = 1000, 517
    opts = parir.par({'N': parir.threads(N)})
    if not torch.cuda.is_available():
        x, y = torch.randn(N, M), torch.zeros(N)
        print(parir.print_compiled(sum_rows, [x, y, N, M], opts))
        print("No CUDA GPU was found: above is the CUDA C++ that parir generates for sum_rows; "
              "on a GPU this example runs it.")
        return

    x = torch.randn(N, M, device='cuda')
    y = torch.zeros(N, device='cuda')
    sum_rows(x, y, N, M, opts=opts)  # compiled with NVRTC, runs on the GPU
    assert torch.allclose(y, x.sum(1), atol=1e-4)

    y_seq = torch.zeros(8, device='cuda')
    sum_rows(x[:8], y_seq, 8, M, seq=True)  # the same function as plain Python
    assert torch.allclose(y_seq, x[:8].sum(1), atol=1e-4)

    print(parir.print_compiled(sum_rows, [x, y, N, M], opts))
    print(f"sum_rows ran on {torch.cuda.get_device_name()}: max |error| vs x.sum(1) = "
          f"{(y - x.sum(1)).abs().max().item():.2e}")


if __name__ == '__main__':
    main()
