#include "runtime/launch.h"

#include <optional>

#include <ATen/record_function.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>
#include <c10/cuda/CUDAStream.h>

#include "ir/error.h"

namespace parir::runtime {
namespace {

std::optional<ScalarType> parir_type(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Bool:
      return ScalarType::Bool;
    case c10::ScalarType::Char:
      return ScalarType::I8;
    case c10::ScalarType::Short:
      return ScalarType::I16;
    case c10::ScalarType::Int:
      return ScalarType::I32;
    case c10::ScalarType::Long:
      return ScalarType::I64;
    case c10::ScalarType::Byte:
      return ScalarType::U8;
    case c10::ScalarType::UInt16:
      return ScalarType::U16;
    case c10::ScalarType::UInt32:
      return ScalarType::U32;
    case c10::ScalarType::UInt64:
      return ScalarType::U64;
    case c10::ScalarType::Half:
      return ScalarType::F16;
    case c10::ScalarType::BFloat16:
      return ScalarType::BF16;
    case c10::ScalarType::Float:
      return ScalarType::F32;
    case c10::ScalarType::Double:
      return ScalarType::F64;
    default:
      return std::nullopt;
  }
}

c10::ScalarType torch_type(ScalarType t) {
  for (auto candidate :
       {c10::ScalarType::Bool, c10::ScalarType::Char, c10::ScalarType::Short, c10::ScalarType::Int,
        c10::ScalarType::Long, c10::ScalarType::Byte, c10::ScalarType::UInt16,
        c10::ScalarType::UInt32, c10::ScalarType::UInt64, c10::ScalarType::Half,
        c10::ScalarType::BFloat16, c10::ScalarType::Float, c10::ScalarType::Double})
    if (parir_type(candidate) == t) return candidate;
  fail("parir: no torch dtype for {}", python_name(t));
}

void check_tensor(const std::string& fn, const PlanParam& p, const at::Tensor& t) {
  if (!t.defined()) fail("parir: {}(): argument '{}' is an undefined tensor", fn, p.name);
  if (!t.is_cuda())
    fail("parir: {}(): argument '{}' is on {}, but parir kernels need CUDA tensors; move it "
         "with .cuda()",
         fn, p.name, t.device().str());
  if (t.is_neg())
    fail("parir: {}(): argument '{}' is a negated view (its memory holds the negations of its "
         "values, as z.conj().imag gives); pass {}.resolve_neg()",
         fn, p.name, p.name);
  auto type = parir_type(t.scalar_type());
  if (type != p.type.elem)
    fail("parir: {}(): argument '{}' has dtype {}, but the kernel was compiled for {}", fn, p.name,
         c10::toString(t.scalar_type()), python_name(p.type.elem));
  bool same = t.dim() == p.type.rank();
  for (int d = 0; same && d < t.dim(); ++d) {
    same = t.size(d) == p.type.shape[d] &&
           (t.size(d) <= 1 || t.stride(d) == p.type.strides[d]);
  }
  if (!same)
    fail("parir: {}(): argument '{}' has shape {} and strides {}, but the kernel was compiled "
         "for shape [{}] and strides [{}]",
         fn, p.name, fmt::format("[{}]", fmt::join(t.sizes(), ", ")),
         fmt::format("[{}]", fmt::join(t.strides(), ", ")),
         fmt::join(p.type.shape, ", "), fmt::join(p.type.strides, ", "));
}

// A loop that runs in tiles of time steps reads some tensors for many steps while others
// change (LaunchPlan::apart): arguments that share memory there are an error that names them,
// where the tiles would compute a different answer than the step-by-step loop.
void check_apart(const LaunchPlan& plan, const c10::SmallVectorImpl<void*>& ptrs) {
  auto bytes = [&](const std::string& name) -> std::pair<uintptr_t, uintptr_t> {
    const PlanParam* p = plan.param(name);
    if (!p) fail("parir: {}(): the plan's 'apart' line names '{}', not a parameter", plan.function,
                 name);
    int64_t last = 0;
    for (int d = 0; d < p->type.rank(); ++d) {
      if (p->type.shape[d] == 0) return {0, 0};
      last += (p->type.shape[d] - 1) * p->type.strides[d];
    }
    auto start = reinterpret_cast<uintptr_t>(ptrs[p - plan.params.data()]);
    return {start, start + (last + 1) * size_in_bytes(p->type.elem)};
  };
  for (const auto& a : plan.apart) {
    auto [start, end] = bytes(a.tensor);
    for (const auto& other : a.others) {
      auto [other_start, other_end] = bytes(other);
      if (start < other_end && other_start < end)
        fail("parir: {}(){}: arguments '{}' and '{}' share memory, but its time loop runs in "
             "tiles of time steps, which read '{}' for several steps while '{}' changes; pass "
             "separate tensors, or compile with opts.time_tiling = False",
             plan.function, plan.location.empty() ? "" : " at " + plan.location, a.tensor, other,
             other, a.tensor);
    }
  }
}

}  // namespace

void launch_on_tensors(const Program& program, at::TensorList outs, at::TensorList ins) {
  const LaunchPlan& plan = program.plan();
  // The kernels' pointers on the stack (a launch allocates nothing on the heap but the plan's
  // temporaries).
  c10::SmallVector<void*, 32> ptrs;
  size_t next_out = 0, next_in = 0;
  int device = -1;
  for (const auto& p : plan.params) {
    at::TensorList list = p.written ? outs : ins;
    size_t& next = p.written ? next_out : next_in;
    if (next >= list.size())
      fail("parir: {}() needs {} written and {} read-only tensors; too few were passed",
           plan.function, std::count_if(plan.params.begin(), plan.params.end(),
                                        [](const PlanParam& q) { return q.written; }),
           std::count_if(plan.params.begin(), plan.params.end(),
                         [](const PlanParam& q) { return !q.written; }));
    const at::Tensor& t = list[next++];
    check_tensor(plan.function, p, t);
    int d = t.get_device();
    if (device >= 0 && d != device)
      fail("parir: {}(): argument '{}' is on cuda:{}, but other arguments are on cuda:{}; all "
           "tensors of one call must be on the same GPU",
           plan.function, p.name, d, device);
    device = d;
    ptrs.push_back(t.data_ptr());
  }
  if (next_out != outs.size() || next_in != ins.size())
    fail("parir: {}() was passed more tensors than its launch plan has parameters",
         plan.function);
  launch_on_pointers(program, device, ptrs);
}

void launch_on_pointers(const Program& program, int device, c10::SmallVectorImpl<void*>& ptrs) {
  // Each call is a range named after the user's function, "sum_rows (model.py:12)", in
  // torch.profiler traces (and NVTX ranges in Nsight under torch.autograd.profiler.emit_nvtx):
  // eager calls, torch.compile graphs, TorchScript and C++ programs all come here. Without a
  // profiler this costs a check of whether any callbacks are registered.
  std::optional<at::RecordFunction> range;
  if (at::hasCallbacks()) {
    range.emplace(at::RecordScope::USER_SCOPE);
    if (range->isActive()) range->before(std::string_view(program.profile_name()));
  }
  const LaunchPlan& plan = program.plan();
  if (!plan.apart.empty()) check_apart(plan, ptrs);
  const auto current = c10::cuda::current_device();
  if (device < 0) device = current;
  // Switches the current device only when the tensors live on another one.
  std::optional<c10::cuda::CUDAGuard> guard;
  if (device != current) guard.emplace(static_cast<c10::DeviceIndex>(device));
  CUstream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  // The plan's temporaries, from the caching allocator on this stream: freed when this
  // function returns, their memory is reused only by work queued after the launches.
  c10::SmallVector<at::Tensor, 4> temporaries;
  for (const auto& t : plan.temporaries) {
    temporaries.push_back(at::empty(t.type.shape, at::TensorOptions()
                                                      .dtype(torch_type(t.type.elem))
                                                      .device(at::kCUDA, device)));
    ptrs.push_back(temporaries.back().data_ptr());
  }
  program.launch(device, stream, ptrs.data(), ptrs.size());
}

void prepare_on_current_stream(const Program& program, int device) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  program.prepare(device,
                  c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream());
}

}  // namespace parir::runtime
