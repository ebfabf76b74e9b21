// The parir::launch operator.
//
//   parir::launch(str program, Tensor(a!)[] outs, Tensor[] ins) -> ()
//
// `program` is the whole CUDA source with its launch plan (print_compiled's output), so a call
// is self-contained: TorchScript, torch.export and torch.compile artifacts replay it in
// processes where the Python front end never ran, and the op rebuilds the kernels from the text
// (through the disk cache). `outs` are the tensors the kernels write, mutated in place. Graphs
// carry the text in one-line form (program.h, to_one_line), which the op accepts too.
//
// Kernels: CUDA (launch on the current stream) and Autograd. The operator has no derivative:
// the autograd kernel refuses calls that autograd would have to track, and bumps the version
// counters of the written tensors (as PyTorch's in-place operators do) before dispatching below
// autograd. A mutating op returning nothing needs no fake kernel: FakeTensorMode and
// functionalization (auto_functionalized) handle it from the schema.
#include "runtime/op.h"

#include <algorithm>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include "ir/error.h"
#include "runtime/launch.h"

namespace parir::runtime {
namespace {

using LaunchSignature = void(const std::string&, at::TensorList, at::TensorList);

const c10::TypedOperatorHandle<LaunchSignature>& launch_handle() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("parir::launch", "")
                                 .typed<LaunchSignature>();
  return handle;
}

// The plan parameter that tensor `index` of `outs` (written) or `ins` stands for.
const PlanParam& param_of(const LaunchPlan& plan, bool written, size_t index) {
  for (const auto& p : plan.params)
    if (p.written == written && index-- == 0) return p;
  fail("parir: {}() was passed more tensors than its launch plan has parameters", plan.function);
}

// Autograd cannot differentiate a parir kernel: with grad mode on, a tensor that requires grad
// would lose its gradient (an input) or have its history overwritten (an output).
void check_no_autograd(const LaunchPlan& plan, at::TensorList outs, at::TensorList ins) {
  if (!c10::GradMode::is_enabled()) return;
  for (bool written : {true, false}) {
    at::TensorList list = written ? outs : ins;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].defined() || !list[i].requires_grad()) continue;
      fail("parir: {}(): argument '{}' requires grad, but parir kernels are not differentiable "
           "by autograd. Call it under torch.no_grad(), pass a detached tensor, or give it a "
           "backward with a torch.autograd.Function (README: Using parir kernels inside "
           "PyTorch, Autograd)",
           plan.function, param_of(plan, written, i).name);
    }
  }
}

void bump_versions(at::TensorList outs) {
  for (const auto& t : outs)
    if (t.defined()) t.unsafeGetTensorImpl()->bump_version();
}

// Tensors the kernels cannot run on directly: subclasses with __torch_dispatch__ (fake and
// functional tensors), functorch wrappers and functionalization wrappers.
bool is_wrapper(const at::Tensor& t) {
  constexpr c10::DispatchKeySet kWrappers = c10::python_ks | c10::functorch_transforms_ks |
                                            c10::DispatchKeySet(c10::DispatchKey::Functionalize);
  return t.defined() && t.key_set().has_any(kWrappers);
}

bool needs_dispatcher(at::TensorList tensors) {
  return std::any_of(tensors.begin(), tensors.end(), is_wrapper);
}

void launch_cuda(const std::string& program, at::TensorList outs, at::TensorList ins) {
  std::shared_ptr<const Program> p = program_for_source(program);
  launch_on_tensors(*p, outs, ins);
}

void launch_autograd(const std::string& program, at::TensorList outs, at::TensorList ins) {
  bool any_requires_grad = false;
  for (at::TensorList list : {outs, ins})
    for (const auto& t : list) any_requires_grad |= t.defined() && t.requires_grad();
  if (any_requires_grad && c10::GradMode::is_enabled())
    check_no_autograd(program_for_source(program)->plan(), outs, ins);
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    launch_handle().call(program, outs, ins);
  }
  bump_versions(outs);
}

}  // namespace

void launch_eager(const Program& program, at::TensorList outs, at::TensorList ins) {
  if (c10::impl::TorchDispatchModeTLS::any_modes_set() || needs_dispatcher(outs) ||
      needs_dispatcher(ins))
    return launch_handle().call(program.one_line_source(), outs, ins);
  check_no_autograd(program.plan(), outs, ins);
  launch_on_tensors(program, outs, ins);
  bump_versions(outs);
}

bool launch_matched(const Program& program, c10::ArrayRef<const at::Tensor*> tensors) {
  if (c10::impl::TorchDispatchModeTLS::any_modes_set()) return false;
  const auto& params = program.plan().params;
  if (tensors.size() != params.size()) return false;
  const bool grad = c10::GradMode::is_enabled();
  c10::SmallVector<void*, 32> ptrs;
  int device = -1;
  for (const at::Tensor* t : tensors) {
    // Calls the checked path explains (or sends through the dispatcher).
    if (is_wrapper(*t) || (grad && t->requires_grad())) return false;
    const int d = t->get_device();
    if (device >= 0 && d != device) return false;
    device = d;
    ptrs.push_back(t->data_ptr());
  }
  launch_on_pointers(program, device, ptrs);
  for (size_t k = 0; k < params.size(); ++k)
    if (params[k].written) tensors[k]->unsafeGetTensorImpl()->bump_version();
  return true;
}

}  // namespace parir::runtime

TORCH_LIBRARY(parir, m) {
  m.def("launch(str program, Tensor(a!)[] outs, Tensor[] ins) -> ()");
}

TORCH_LIBRARY_IMPL(parir, CUDA, m) { m.impl("launch", &parir::runtime::launch_cuda); }

TORCH_LIBRARY_IMPL(parir, Autograd, m) { m.impl("launch", &parir::runtime::launch_autograd); }
