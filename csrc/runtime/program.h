// A compiled program at run time: CUDA source with its launch plan, compiled to a binary for
// each GPU architecture it runs on and loaded as a module on each device.
//
// Torch-free: it deals in raw device pointers and CUDA streams. launch.cpp checks tensors
// against the plan and calls Program::launch; both the eager path and the parir::launch op
// end there.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/launch_plan.h"
#include "runtime/log.h"
#include "runtime/nvrtc.h"
#include "runtime/stored_binaries.h"

namespace parir::runtime {

struct Driver;

// Compiles `source` for `arch` through the disk cache: a hit skips NVRTC. Says which it was,
// and how long NVRTC took, to `log` (or at once when null), naming the program `what`.
NvrtcOutput compile_cached(const std::string& source, const std::string& arch,
                           const NvrtcOptions& base = {}, DeferredLog* log = nullptr,
                           const std::string& what = "");

// A program's text on one line, its newlines written as \n and backslashes as \\, and back.
// Text without a newline is taken to be in that form (a launch plan needs several lines).
// torch.compile graphs carry programs so: Inductor copies a graph node's string arguments
// unescaped into comments of the Python it generates, where a newline would end the comment.
std::string to_one_line(const std::string& text);
std::string from_one_line(const std::string& text);

class Program {
 public:
  // Parses the launch plan; compiles nothing yet. The source may be in one-line form, and may
  // end with stored binaries (stored_binaries.h).
  explicit Program(std::string cuda_source, NvrtcOptions options = {});
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // The whole text, stored binaries included.
  const std::string& source() const { return source_; }
  const std::string& one_line_source() const { return one_line_source_; }
  const LaunchPlan& plan() const { return plan_; }
  const std::vector<StoredBinary>& stored_binaries() const { return stored_; }
  // "sum_rows (model.py:12)": the function and where it is defined, the name of each call's
  // range in profiler traces (launch.cpp).
  const std::string& profile_name() const { return profile_name_; }

  // Runs the plan on device `device` and stream `stream`. params[i] is the device pointer of
  // plan().params[i], followed by one for each of plan().temporaries. Compiles and loads the module on first use on a device; that may not
  // happen while the stream is being captured into a CUDA graph (an error says so). A plan run
  // as a CUDA graph (LaunchPlan::cuda_graphs) is captured once per set of tensor addresses and
  // replayed.
  void launch(int device, CUstream stream, void* const* params, size_t count) const;

  // Compiles and loads for `device` now, e.g. before a CUDA graph capture. `stream` (may be
  // null) is checked not to be capturing.
  void prepare(int device, CUstream stream = nullptr) const;

  // Unloading: a destroyed program hands its modules to a list that is emptied (after a device
  // synchronization, since unloading code that may still run is undefined) just before some
  // later module load, which is known to happen outside a stream capture. A program that was
  // ever launched into a capture keeps its modules: the CUDA graph may outlive the program.

  // Compiles with NVRTC for a GPU architecture such as "sm_90", without loading (needs no GPU):
  // the size of the binary. Compile errors are raised as for a launch.
  size_t compile(const std::string& arch) const;

  // The text with binaries stored for `archs` ("sm_80", ...: CUBIN each) and, with `ptx`, PTX
  // for the oldest of them, which the driver compiles for newer GPUs. Needs NVRTC, not a GPU.
  std::string with_binaries(const std::vector<std::string>& archs, bool ptx) const;

 private:
  struct Module;
  const Module& module_for(int device, CUstream stream, bool capturing) const;
  // The module for a device of compute capability major.minor: from a stored binary that runs
  // there, else compiled (and linked) from the source.
  CUmodule load_module(int device, int major, int minor, DeferredLog& log) const;
  // The plan's launches, one by one, on `stream`.
  void launch_plan(const Module& mod, CUstream stream, void* const* params) const;
  // The plan as a CUDA graph (LaunchPlan::cuda_graphs), captured once per set of tensors.
  // Under CudaGraphs::Auto, a set of tensors seen for the first time is launched plainly.
  void launch_graph(const Module& mod, CUstream stream, void* const* params, size_t count) const;
  // Whether every persistent loop's cluster fits on the module's device.
  bool persistent_loops_fit(const Driver& drv, const Module& mod) const;
  // After a bounds-checked launch: waits for it and raises the first violation it recorded.
  void report_bounds_violation(const Module& mod, CUstream stream) const;

  std::string source_;
  std::string one_line_source_;
  std::string code_;  // source_ without the stored binaries: what NVRTC compiles
  std::vector<StoredBinary> stored_;
  std::string profile_name_;
  NvrtcOptions options_;
  LaunchPlan plan_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Module>> modules_;  // by device ordinal
  // The loaded modules of the first devices again, read without the lock: every launch looks
  // its module up, and a module, once loaded, stays until the program is destroyed.
  static constexpr int kLockFreeDevices = 16;
  mutable std::atomic<const Module*> loaded_[kLockFreeDevices] = {};
  mutable std::atomic<bool> launched_in_capture_{false};
  bool has_host_loop_ = false;  // some launch runs inside a host loop (CudaGraphs::Auto)
};

// How many modules parir has loaded and not unloaded, over all programs and devices.
int64_t loaded_module_count();

// The programs the parir::launch op has seen, by source text. Bounded: the least recently used
// program beyond the limit is dropped (it is rebuilt from its source if it comes back).
std::shared_ptr<const Program> program_for_source(const std::string& source);

}  // namespace parir::runtime
