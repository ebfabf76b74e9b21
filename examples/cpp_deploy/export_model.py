"""Writes the model and data that run_model.cpp loads: a TorchScript module calling two parir
kernels (an elementwise scaled add, then a parallel row sum), and its inputs with a float64
reference. Needs no GPU; with one, it also writes model_aot.pt, the same model with binaries
for that GPU stored in its programs (parir.aot), runs the scripted model from Python and
through a torch.jit.save/load round trip, and stores that output for the C++ program to
compare.

    python3 export_model.py OUT_DIR
"""

import os
import sys

import torch

import parir_torch as parir

ROWS, COLS = 1000, 517  # not multiples of 32
SCALE = 2.5


@parir.jit
def scaled_add(a, x, y, out, N, M):
    parir.label("N")
    for i in range(N):
        for j in range(M):
            out[i, j] = a * x[i, j] + y[i, j]


@parir.jit
def sum_rows(x, s, N, M):
    parir.label("N")
    for i in range(N):
        parir.label("M")
        for j in range(M):
            s[i] += x[i, j]


class Model(torch.nn.Module):
    """out[i] = sum_j (SCALE * x[i, j] + y[i, j]), for x and y of shape (ROWS, COLS)."""

    def __init__(self, aot=False):
        super().__init__()
        # The program texts; with aot, with binaries for this machine's GPU stored in them, so
        # that the model runs without NVRTC there.
        text = parir.aot if aot else parir.print_compiled
        like = torch.empty(ROWS, COLS, device="meta")
        self.add = text(scaled_add, [SCALE, like, like, like, ROWS, COLS],
                        parir.par({"N": parir.threads(ROWS)}))
        self.rows = text(sum_rows, [like, torch.empty(ROWS, device="meta"), ROWS, COLS],
                         parir.par({"N": parir.threads(ROWS), "M": parir.threads(128).reduce()}))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # The outputs are read from the lists launch returns: TorchScript keeps the calls.
        z, = parir.torchscript.launch(self.add, [torch.empty_like(x)], [x, y])
        s, = parir.torchscript.launch(self.rows, [torch.zeros([x.shape[0]], device=x.device)], [z])
        return s


class Data(torch.nn.Module):
    def __init__(self, tensors):
        super().__init__()
        for name, t in tensors.items():
            self.register_buffer(name, t)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(ROWS, COLS, generator=g) + 0.5
    y = torch.rand(ROWS, COLS, generator=g) - 0.25
    expected = (SCALE * x.double() + y.double()).sum(1)
    scripted = parir.torchscript.script(Model())
    assert parir.torchscript.count_launches(scripted) == 2, scripted.graph
    model_path = os.path.join(out_dir, "model.pt")
    torch.jit.save(scripted, model_path)
    data = {"x": x, "y": y, "expected": expected}
    if torch.cuda.is_available():
        aot_path = os.path.join(out_dir, "model_aot.pt")
        torch.jit.save(parir.torchscript.script(Model(aot=True)), aot_path)
        print(f"wrote {aot_path}, with binaries for this GPU")
        loaded = torch.jit.load(model_path)
        out = loaded(x.cuda(), y.cuda()).cpu()
        err = (out.double() - expected).abs().max().item()
        print(f"Python, saved and reloaded: max |out - expected| = {err:.3g}")
        assert err <= 1e-4 * expected.abs().max().item(), err
        data["python_out"] = out
    torch.jit.save(torch.jit.script(Data(data)), os.path.join(out_dir, "data.pt"))
    print(f"wrote {model_path} and data.pt")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
