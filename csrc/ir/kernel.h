// A kernel as the lowering passes produce it: the statement it runs and how its parallel loops
// map onto the CUDA grid.
#pragma once

#include <map>
#include <set>

#include "ir/launch_plan.h"
#include "ir/specialized_function.h"

namespace parir {

// One level of parallel loops inside a kernel (all parallel loops at one nesting depth).
struct ParLevel {
  int64_t count = 1;   // parallel workers: blocks for outer levels, threads for the innermost
  bool threads = false;  // the innermost level: CUDA threads (and blocks when > one block)
};

struct Kernel {
  std::string name;
  StmtPtr root;                 // a parallel For or a GpuBlock
  std::vector<ParLevel> levels; // outermost first; a GpuBlock root is a level of count 1
  int64_t tpb = 1;              // threads per block (blockDim.x)
  // > 0: the compiler must fit this many blocks on a multiprocessor (the second argument of
  // __launch_bounds__), limiting the registers a thread may use.
  int64_t min_blocks_per_sm = 0;
  int64_t inner_blocks = 1;     // blocks that the innermost level spans
  int64_t cluster = 1;          // > 1: those blocks form a thread block cluster
  // > 1: a block runs this many iterations of the innermost loop over blocks side by side, one
  // per lane (threadIdx.x % lanes), its threads of the inner level being threadIdx.x / lanes;
  // so that neighbouring threads access neighbouring elements when that loop walks the
  // contiguous dimension (map_parallelism). That level's count is a multiple of lanes.
  int64_t lanes = 1;
  // > 1: each warp runs its own iterations of the innermost loop over blocks, this many of them
  // side by side in a block (the iteration's number within the block is threadIdx.x / 32); the
  // inner level is the warp's 32 threads, whose barriers and reductions are the warp's. For
  // short rows (map_parallelism). That level's count is a multiple of warps.
  int64_t warps = 1;
  // The thread-level loops (by variable) in which keep_rows_on_chip gave each thread its
  // elements of a row in groups of this many consecutive ones, for widen_row_groups.
  std::map<std::string, int64_t> row_groups;
  std::vector<std::string> tensors;    // tensor parameters used, in parameter order
  std::vector<std::string> written;    // the subset the kernel stores to
  std::vector<std::string> host_vars;  // host loop variables and host locals it reads (int64)
  std::map<std::string, Type> locals;  // locals assigned in the kernel
  // Reductions whose target several blocks combine into, so they combine atomically.
  std::set<const Reduction*> atomic_reductions;
  // Some access is checked at run time: the kernel takes the plan's error buffer ("@bounds").
  bool bounds_checked = false;
  // Arrays in shared memory, one of each per block, that the kernel's FlatLoads name as they
  // name tensors (passes/tile_time_loops.h): the code generator declares them.
  struct SharedArray {
    std::string name;
    ScalarType elem = ScalarType::Unknown;
    int64_t size = 0;  // elements
    // >= 0: the array lies in the block's dynamic shared memory, at this byte offset (a
    // multiple of 16), which the kernel's launches give it (PlanStep::shared_bytes).
    int64_t dynamic_offset = -1;
  };
  std::vector<SharedArray> shared_arrays;

  int64_t grid() const {
    int64_t g = inner_blocks;
    for (const auto& l : levels)
      if (!l.threads) g *= l.count;
    return g / lanes / warps;
  }
  bool has_thread_level() const { return !levels.empty() && levels.back().threads; }
};

// A local that a pass adds to a kernel after the program was split: the kernel declares it and
// the program knows its type.
inline void add_kernel_local(SpecializedFunction& prog, Kernel& k, const std::string& name,
                             Type type) {
  prog.locals[name] = type;
  k.locals[name] = type;
}

// The result of lowering: the host-side plan and the kernels it launches.
struct Lowered {
  LaunchPlan plan;
  std::vector<Kernel> kernels;

  // The kernel of this name, or null.
  const Kernel* kernel(const std::string& name) const {
    for (const auto& k : kernels)
      if (k.name == name) return &k;
    return nullptr;
  }
};

}  // namespace parir
