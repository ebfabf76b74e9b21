// Loads a TorchScript model that calls parir kernels (saved by export_model.py), runs it on
// the GPU and compares its output with the reference saved next to it. No Python: the
// parir::launch operator comes from libparir_torch_ops, which compiles the kernels from the
// program text stored in the model (NVRTC, through parir's disk cache).
//
//   run_model model.pt data.pt
//
// data.pt is a scripted module whose attributes are the inputs `x`, `y`, the float64 reference
// `expected`, and, when the model was also run from Python, that output `python_out`.
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s model.pt data.pt\n", argv[0]);
    return 2;
  }
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "run_model: no CUDA GPU\n");
    return 2;
  }
  torch::jit::script::Module model = torch::jit::load(argv[1]);
  torch::jit::script::Module data = torch::jit::load(argv[2]);
  torch::Tensor x = data.attr("x").toTensor().cuda();
  torch::Tensor y = data.attr("y").toTensor().cuda();
  torch::Tensor expected = data.attr("expected").toTensor();

  torch::NoGradGuard no_grad;
  bool ok = true;
  for (int run = 0; run < 3; ++run) {  // the first run compiles, the others reuse the kernels
    torch::Tensor out = model.forward({x, y}).toTensor().cpu();
    bool finite = out.isfinite().all().item<bool>();
    double err = (out.to(torch::kDouble) - expected).abs().max().item<double>();
    double scale = expected.abs().max().item<double>();
    std::printf("run %d: output %s, max |out - expected| = %.3g (max |expected| = %.3g)\n", run,
                finite ? "finite" : "NOT FINITE", err, scale);
    ok = ok && finite && err <= 1e-4 * std::max(1.0, scale);
    if (data.hasattr("python_out")) {
      bool same = torch::equal(out, data.attr("python_out").toTensor());
      std::printf("       %s the output of the same model run from Python\n",
                  same ? "equal to" : "DIFFERENT FROM");
      ok = ok && same;
    }
  }
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
