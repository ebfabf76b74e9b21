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
#include "runtime/nvrtc.h"

namespace parir::runtime {

// Compiles `source` for `arch` through the disk cache: a hit skips NVRTC.
NvrtcOutput compile_cached(const std::string& source, const std::string& arch,
                           const NvrtcOptions& base = {});

// A program's text on one line, its newlines written as \n and backslashes as \\, and back.
// Text without a newline is taken to be in that form (a launch plan needs several lines).
// torch.compile graphs carry programs so: Inductor copies a graph node's string arguments
// unescaped into comments of the Python it generates, where a newline would end the comment.
std::string to_one_line(const std::string& text);
std::string from_one_line(const std::string& text);

class Program {
 public:
  // Parses the launch plan; compiles nothing yet. The source may be in one-line form.
  explicit Program(std::string cuda_source, NvrtcOptions options = {});
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::string& source() const { return source_; }
  const std::string& one_line_source() const { return one_line_source_; }
  const LaunchPlan& plan() const { return plan_; }

  // Runs the plan on device `device` and stream `stream`. params[i] is the device pointer of
  // plan().params[i], followed by one for each of plan().temporaries. Compiles and loads the module on first use on a device; that may not
  // happen while the stream is being captured into a CUDA graph (an error says so). A plan with
  // cuda_graphs is captured into a graph once per set of tensor addresses and replayed.
  void launch(int device, CUstream stream, const std::vector<void*>& params) const;

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

 private:
  struct Module;
  const Module& module_for(int device, CUstream stream, bool capturing) const;
  // The plan's launches, one by one, on `stream`.
  void launch_plan(const Module& mod, CUstream stream, const std::vector<void*>& params) const;
  // The plan as a CUDA graph (LaunchPlan::cuda_graphs), captured once per set of tensors.
  void launch_graph(const Module& mod, CUstream stream, const std::vector<void*>& params) const;
  // After a bounds-checked launch: waits for it and raises the first violation it recorded.
  void report_bounds_violation(const Module& mod, CUstream stream) const;

  std::string source_;
  std::string one_line_source_;
  NvrtcOptions options_;
  LaunchPlan plan_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Module>> modules_;  // by device ordinal
  mutable std::atomic<bool> launched_in_capture_{false};
};

// How many modules parir has loaded and not unloaded, over all programs and devices.
int64_t loaded_module_count();

// The programs the parir::launch op has seen, by source text. Bounded: the least recently used
// program beyond the limit is dropped (it is rebuilt from its source if it comes back).
std::shared_ptr<const Program> program_for_source(const std::string& source);

}  // namespace parir::runtime
