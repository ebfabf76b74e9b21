// The launch plan: what runs on the host around the kernels.
//
// Sequential loops outside the outermost parallel loop run on the host and launch kernels each
// iteration. The plan records them, the kernel launches with their grid and arguments, and the
// tensor parameters the kernels were specialized for. It is printed at the end of the generated
// CUDA source as comment lines starting with "//@", so that one text holds everything needed to
// run a compiled function: the runtime (and the parir::launch op, in a process where the Python
// front end never ran) parses it back; a user can read and edit it. codegen/plan_text.h prints
// and parses that text; runtime/plan_runner.h runs a plan. Example:
//
//   //@ parir.plan jacobi
//   //@ signature jacobi(A, B, steps=10)
//   //@ location /home/me/jacobi.py:7
//   //@ param A float32[100, 100] strides(100, 1) inout
//   //@ param B float32[100, 100] strides(100, 1) inout
//   //@ for t in range(1, 10, 1):
//   //@   launch jacobi_0 grid(98) block(128) (A, B)
//   //@   launch jacobi_1 grid(98) block(128) (B, A)
//
// Integer locals that the host computes appear as assignments and while loops:
//
//   //@ k = 2
//   //@ while k <= 1024:
//   //@   launch sort grid(2) block(512) (values, k)
//   //@   k = k << 1
//
// A loop or branch whose body does nothing on the host (`for t in range(3): s = s`, folded
// away) has the body `pass`, as in Python.
//
// A launch may add shared(bytes) and cluster(blocks) after block(...), and after its arguments
// aligned(KERNEL): the kernel's copy for tensors whose data is 16-byte aligned, launched instead
// when every tensor argument's is (passes/specialize_aligned_kernels.h). Lines "include DIR",
// "flag FLAG" and "link FILE" after the signature give NVRTC include directories and flags and
// the device libraries to link. With CompileOptions.bounds_check, lines "check ID KERNEL TENSOR
// DIM EXTENT LINE FILE" describe the run-time bounds checks, and the launches of checked kernels
// take "@bounds", the buffer a violation is recorded in. Lines "apart TENSOR from A, B" name
// tensors whose memory must not overlap (ApartTensors).
//
// Expressions in loop bounds, conditions and assignments are int64 Python expressions over host
// loop variables and host locals: literals, names, + - * // % ** << >> & | ^ ~, comparisons,
// and/or/not, `a if c else b`, parentheses, conversions to integer types (parir.int32(k)) and
// the builtins of is_host_builtin (parir.min(a, b)).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace parir {

// Whether a plan's launches run as a CUDA graph (CompileOptions.use_cuda_graphs).
enum class CudaGraphs {
  // A plan with a host loop: captured the second time a call passes the same tensor addresses
  // (so that a call made once pays no capture), replayed from then on. Other plans: launched.
  Auto,
  On,   // captured on the first call with each set of tensor addresses
  Off,  // launched one by one
};

struct PlanParam {
  std::string name;
  TensorType type;
  bool written = false;  // "inout": some kernel stores to it; "in" otherwise
};

struct PlanStep {
  enum class Kind { For, If, While, Assign, Launch };
  Kind kind = Kind::Launch;
  // For: var in range(lo, hi, step); If and While: cond; Assign: var = value (a host local,
  // LaunchPlan::host_locals).
  std::string var;
  ExprPtr lo, hi, step, cond, value;
  std::vector<PlanStep> body, else_body;
  // For: the loop as one persistent kernel, when passes/fuse_host_loops.h made one (a Launch
  // of a single thread block cluster that runs every iteration, "//@ persistent ..." before
  // the for line); empty otherwise. The runtime launches it instead of the loop when the
  // device can run the cluster, and runs the loop otherwise.
  std::vector<PlanStep> persistent;
  // Launch
  std::string kernel;
  int64_t grid = 1, block = 1, shared_bytes = 0;
  // "shared(S if available)": a GPU that cannot give a block S bytes launches the kernel with
  // none, and the kernel takes another path (parir::dynamic_shared_bytes()); otherwise more
  // than the GPU allows is an error.
  bool shared_if_available = false;
  int64_t cluster = 1;  // thread block cluster size (blocks), when > 1
  std::vector<std::string> args;  // tensor parameters and host loop variables, in order
  // The kernel's copy that assumes every tensor argument's data pointer is a multiple of 16
  // bytes ("aligned(KERNEL)"), launched instead when that holds; empty if it has none.
  std::string aligned_kernel;
  // Resolved by resolve_launch_args, so that running the plan looks nothing up by name: the
  // kernel's position in LaunchPlan::kernels, and for each argument its source.
  int kernel_index = -1;
  int aligned_kernel_index = -1;  // of aligned_kernel, when there is one
  struct Arg {
    enum class Kind {
      Param,         // LaunchPlan::params[index], or temporaries[index - params.size()]
      HostVar,       // the host local or host loop variable at `index` of the HostEnv
      BoundsBuffer,  // "@bounds": where a bounds-checked kernel records a violation
    };
    Kind kind = Kind::Param;
    int index = 0;
  };
  std::vector<Arg> resolved_args;
};

// A run-time bounds check of a kernel ("//@ check ID KERNEL TENSOR DIM EXTENT LINE FILE"): what
// a violation recorded with this id is reported as.
struct BoundsSite {
  int id = 0;  // from 1
  std::string kernel, tensor;
  int dim = 0;
  int64_t extent = 0;
  int line = 0;
  std::string file;
};

// A tensor parameter whose memory must not overlap that of other tensor parameters
// ("//@ apart A from B, c"): a loop that runs in tiles of time steps (passes/tile_time_loops.h)
// reads B and c for many time steps while A changes. The runtime checks the arguments of each
// call and raises an error naming the two that share memory.
struct ApartTensors {
  std::string tensor;
  std::vector<std::string> others;
};

// The launch argument through which bounds-checked kernels record violations.
inline constexpr const char* kBoundsBufferArg = "@bounds";

struct LaunchPlan {
  std::string function;
  // The call the code was specialized for ("//@ signature f(x, N=1000)"): the original
  // function's parameters in order, tensors by name and scalars with the values they were
  // specialized on. compile_string's callable takes the same arguments; the op ignores it.
  std::string signature;
  // Where the function is defined, "FILE:LINE" of its `def` ("//@ location FILE:LINE"): what
  // profiler traces name each call by. Empty for plans written without it.
  std::string location;
  // How to compile and link the source ("//@ include DIR", "//@ flag FLAG", "//@ link FILE"):
  // CompileOptions.includes, extra_flags and the device libraries of libs, so that a process
  // that only has this text builds the same binary.
  std::vector<std::string> includes, extra_flags, link_libraries;
  // Whether the sequence runs as one CUDA graph ("//@ parir.plan f cuda_graphs" for On,
  // "no_cuda_graphs" for Off, nothing for Auto); CompileOptions.use_cuda_graphs.
  CudaGraphs cuda_graphs = CudaGraphs::Auto;
  std::vector<PlanParam> params;
  // Tensors the runtime allocates for each call ("//@ temp partial0 float32[4]"), uninitialized,
  // and passes to the kernels after the parameters: where blocks of a kernel leave results for
  // a later kernel (see passes/split_multi_block_kernels.h).
  std::vector<PlanParam> temporaries;
  std::vector<PlanStep> steps;
  // The integer locals the host keeps (the variables of Assign steps), in order of first
  // assignment; they start at 0 (set by resolve_launch_args). A run's HostEnv holds them
  // first, then the variables of the host loops around the step it runs.
  std::vector<std::string> host_locals;
  // The kernels launched, each once, in order of first launch, a launch's aligned copy after its
  // kernel (set by resolve_launch_args).
  std::vector<std::string> kernels;
  // The run-time bounds checks of the kernels (CompileOptions.bounds_check), by id - 1.
  std::vector<BoundsSite> bounds_sites;
  // Tensor parameters that must not share memory with others (see ApartTensors).
  std::vector<ApartTensors> apart;

  const PlanParam* param(const std::string& name) const;
};

// The builtins a launch plan's expressions may call: min, max and abs of integers.
inline bool is_host_builtin(Builtin fn) {
  return fn == Builtin::Min || fn == Builtin::Max || fn == Builtin::Abs;
}

// Calls `fn` on every launch step of the plan, in order, inside loops and both branches of ifs,
// and on the persistent kernels of loops (after the loop's body).
void for_each_launch(std::vector<PlanStep>& steps, const std::function<void(PlanStep&)>& fn);
void for_each_launch(const std::vector<PlanStep>& steps,
                     const std::function<void(const PlanStep&)>& fn);

// Fills LaunchPlan::kernels, host_locals, and each launch's kernel_index and resolved_args.
// Throws parir::Error for an argument that is neither a parameter, a host local nor an enclosing
// host loop variable.
void resolve_launch_args(LaunchPlan& plan);

}  // namespace parir
