// Benchmark support: what each layer of a launch costs on the host, measured in C++ without
// Python in the loop (benchmarks/launch.py prints it beside the whole call's cost).
#include "python/launch_costs.h"

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <chrono>

#include "ir/error.h"
#include "runtime/driver.h"
#include "runtime/launch.h"
#include "runtime/op.h"
#include "runtime/program.h"
#include "runtime/stored_binaries.h"

namespace parir {
namespace {

namespace py = pybind11;
using runtime::Driver;

// Microseconds per call of f: `calls` back-to-back calls, then one device synchronization (as
// benchmarks/timing.py's host_time_us does in Python); the median of `reps` batches, after a
// warm-up batch.
template <typename F> double us_per_call(F&& f, int calls, int reps = 5) {
  const Driver& drv = Driver::get();
  std::vector<double> times;
  for (int r = -1; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    drv.check(drv.cuCtxSynchronize(), "cuCtxSynchronize");
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                           start).count();
    if (r >= 0) times.push_back(us / calls);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The program's first kernel launched with cuLaunchKernel alone, from a module this function
// loads itself (same source and compiler options, so the same binary): the floor under
// parir's launch path.
double raw_launch_us(const runtime::Program& program, const std::vector<void*>& params,
                     CUstream stream, int device, int calls) {
  const LaunchPlan& plan = program.plan();
  if (!plan.link_libraries.empty())
    fail("parir: launch_costs: {}() links device libraries; time a program without", plan.function);
  const PlanStep* first = nullptr;
  for_each_launch(plan.steps, [&](const PlanStep& s) {
    if (!first) first = &s;
  });
  if (!first) fail("parir: launch_costs: {}() launches no kernel", plan.function);
  const Driver& drv = Driver::get();
  auto [major, minor] = runtime::compute_capability(device);
  runtime::NvrtcOptions options;
  options.include_dirs = plan.includes;
  options.extra_flags = plan.extra_flags;
  runtime::NvrtcOutput bin =
      runtime::compile_cached(runtime::split_stored_binaries(program.source()).source,
                              runtime::choose_arch(major, minor), options);
  CUmodule module = nullptr;
  drv.check(drv.cuModuleLoadData(&module, bin.binary.data()), "cuModuleLoadData");
  struct Unload {
    const Driver& d;
    CUmodule m;
    ~Unload() { d.cuModuleUnload(m); }
  } unload{drv, module};
  CUfunction f = nullptr;
  drv.check(drv.cuModuleGetFunction(&f, module, first->kernel.c_str()), "cuModuleGetFunction");
  std::vector<void*> ptrs(first->resolved_args.size());
  std::vector<int64_t> ints(first->resolved_args.size());
  std::vector<void*> args(first->resolved_args.size());
  for (size_t i = 0; i < first->resolved_args.size(); ++i) {
    const PlanStep::Arg& a = first->resolved_args[i];
    if (a.kind == PlanStep::Arg::Kind::BoundsBuffer)
      fail("parir: launch_costs: {}() checks bounds at run time", plan.function);
    if (a.kind == PlanStep::Arg::Kind::Param) ptrs[i] = params.at(a.index);
    args[i] = a.kind == PlanStep::Arg::Kind::HostVar ? static_cast<void*>(&ints[i])
                                                      : static_cast<void*>(&ptrs[i]);
  }
  return us_per_call(
      [&] {
        drv.check(drv.cuLaunchKernel(f, static_cast<unsigned>(first->grid), 1, 1,
                                     static_cast<unsigned>(first->block), 1, 1,
                                     static_cast<unsigned>(first->shared_bytes), stream,
                                     args.data(), nullptr),
                  "cuLaunchKernel");
      },
      calls);
}

py::dict launch_costs(const runtime::Program& program, const std::vector<at::Tensor>& outs,
                      const std::vector<at::Tensor>& ins, int calls) {
  if (!program.plan().temporaries.empty())
    fail("parir: launch_costs: {}() allocates temporaries; time a program without",
         program.plan().function);
  runtime::launch_eager(program, outs, ins);  // compiles and loads
  const int device = c10::cuda::current_device();
  CUstream stream = c10::cuda::getCurrentCUDAStream().stream();
  std::vector<void*> params;
  {
    size_t o = 0, i = 0;
    for (const auto& p : program.plan().params)
      params.push_back((p.written ? outs[o++] : ins[i++]).data_ptr());
  }
  const Driver& drv = Driver::get();
  py::dict out;
  py::gil_scoped_release release;
  double raw = raw_launch_us(program, params, stream, device, calls);
  double capturing = us_per_call(
      [&] {
        CUstreamCaptureStatus s;
        drv.cuStreamIsCapturing(stream, &s);
      },
      calls);
  double device_and_stream = us_per_call(
      [&] {
        volatile auto d = c10::cuda::current_device();
        volatile auto s = c10::cuda::getCurrentCUDAStream(d).stream();
        (void)s;
      },
      calls);
  double program_launch =
      us_per_call([&] { program.launch(device, stream, params.data(), params.size()); }, calls);
  double on_tensors = us_per_call([&] { runtime::launch_on_tensors(program, outs, ins); }, calls);
  double eager = us_per_call([&] { runtime::launch_eager(program, outs, ins); }, calls);
  py::gil_scoped_acquire acquire;
  out["cuLaunchKernel"] = raw;
  out["cuStreamIsCapturing"] = capturing;
  out["current device and stream"] = device_and_stream;
  out["Program::launch"] = program_launch;
  out["launch_on_tensors"] = on_tensors;
  out["launch_eager"] = eager;
  return out;
}

}  // namespace

void add_launch_costs(py::module& m) {
  m.def("launch_costs", &launch_costs, py::arg("program"), py::arg("outs"), py::arg("ins"),
        py::arg("calls") = 10000,
        "Microseconds per call of each layer of a launch of `program` on the tensors (written "
        "ones first), measured in C++: cuLaunchKernel of its first kernel alone, "
        "cuStreamIsCapturing, the current device and stream, Program::launch, "
        "launch_on_tensors and launch_eager (the whole launch below Python). For benchmarks.");
}

}  // namespace parir
