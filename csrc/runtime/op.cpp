// The parir::launch operator.
//
//   parir::launch(str program, Tensor(a!)[] outs, Tensor[] ins) -> ()
//
// `program` is the whole CUDA source with its launch plan (print_compiled's output), so a call
// is self-contained: TorchScript, torch.export and torch.compile artifacts replay it in
// processes where the Python front end never ran, and the op rebuilds the kernels from the text
// (through the disk cache). `outs` are the tensors the kernels write, mutated in place.
#include <torch/library.h>

#include "runtime/launch.h"

namespace parir::runtime {
namespace {

void launch_op(const std::string& program, at::TensorList outs, at::TensorList ins) {
  std::shared_ptr<const Program> p = program_for_source(program);
  launch_on_tensors(*p, outs.vec(), ins.vec());
}

}  // namespace
}  // namespace parir::runtime

TORCH_LIBRARY(parir, m) {
  m.def("launch(str program, Tensor(a!)[] outs, Tensor[] ins) -> ()");
}

TORCH_LIBRARY_IMPL(parir, CUDA, m) { m.impl("launch", &parir::runtime::launch_op); }
