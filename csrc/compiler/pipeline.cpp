#include "compiler/pipeline.h"

#include <chrono>

#include "codegen/cuda_codegen.h"
#include "codegen/plan_text.h"
#include "passes/apply_parallel_spec.h"
#include "passes/detect_reductions.h"
#include "passes/detect_scans.h"
#include "passes/expand_cooperative_calls.h"
#include "passes/flatten_indices.h"
#include "passes/fold_none_tests.h"
#include "passes/fuse_host_loops.h"
#include "passes/group_neighbour_rows.h"
#include "passes/hoist_invariant_math.h"
#include "passes/infer_types.h"
#include "passes/inline_host_values.h"
#include "passes/keep_host_locals_on_gpu.h"
#include "passes/keep_rows_on_chip.h"
#include "passes/load_reduction_targets_early.h"
#include "passes/lower_slices.h"
#include "passes/map_parallelism.h"
#include "passes/reject_overlapping_outputs.h"
#include "passes/resolve_tensor_aliases.h"
#include "passes/simplify.h"
#include "passes/specialize_aligned_kernels.h"
#include "passes/specialize_arguments.h"
#include "passes/split_variable_webs.h"
#include "passes/verify_bounds.h"
#include "passes/widen_accesses.h"
#include "passes/widen_row_groups.h"
#include "passes/warn_narrowed_loop_variables.h"
#include "passes/warn_racy_writes.h"
#include "passes/split_parallel_nests.h"
#include "passes/split_multi_block_kernels.h"
#include "passes/split_host_device.h"
#include "passes/tile_matrix_products.h"
#include "passes/tile_time_loops.h"
#include "passes/unroll_accumulations.h"

namespace parir {
namespace {

// Records the IR after each pass with the time since compilation started, when debugging.
class PassLog {
 public:
  explicit PassLog(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}

  void after(const char* pass, const std::string& ir) {
    if (!on_) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start_)
                    .count();
    bool same = ir == last_;
    text += fmt::format("=== after {} ({:.3f} ms){}\n", pass, ms, same ? " (unchanged)" : "");
    if (!same) text += ir + "\n";
    last_ = ir;
  }

  std::string text;

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_;
  std::string last_;
};

std::string dump(const SpecializedFunction& p) {
  std::string out = fmt::format("def {}(...):\n", p.name);
  return out + to_string(p.body, 1);
}

std::string dump(const Lowered& l) {
  std::string out;
  for (const auto& k : l.kernels)
    out += fmt::format("kernel {} grid({}) block({}):\n{}", k.name, k.grid(), k.tpb,
                       to_string(Body{k.root}, 1));
  return out + print_plan(l.plan);
}

}  // namespace

CompileResult compile(const Function& fn, const std::vector<ArgValue>& args,
                      const CompileOptions& opts, const CalleeTable& callees) {
  CompileResult result;
  PassLog log(opts.debug_print);
  log.after("parse", to_string(fn));

  // Called Python functions are inlined; externals stay calls.
  Function inlined = inline_functions(fn, callees);
  log.after("inline_functions", to_string(inlined));

  // Tests of None arguments become constants; the code they rule out is dropped unread.
  inlined = fold_none_tests(inlined, args);
  log.after("fold_none_tests", to_string(inlined));

  // Locals that name tensor arguments (buffers swapped between time steps) become the tensors
  // they name; host loops that swap them are unrolled by the period of the swap.
  inlined = resolve_tensor_aliases(inlined, args);
  log.after("resolve_tensor_aliases", to_string(inlined));

  // Scalars become constants and tensors get types: everything below is specialized.
  SpecializedFunction prog = specialize_arguments(inlined, args, opts);
  log.after("specialize_arguments", dump(prog));

  // Slice statements become loops over their slice dimensions.
  lower_slices(prog, opts);
  log.after("lower_slices", dump(prog));

  // Labelled loops named in the parallel spec become parallel loops.
  apply_parallel_spec(prog, opts.parallelize);
  log.after("apply_parallel_spec", dump(prog));

  // A name reused for unrelated values gets one name per web, each typed on its own.
  split_variable_webs(prog);
  log.after("split_variable_webs", dump(prog));

  // Every expression gets a type and every conversion becomes explicit.
  infer_types(prog);
  log.after("infer_types", dump(prog));

  // Fold the constants that specialization exposed.
  simplify(prog);
  log.after("simplify", dump(prog));

  // Floats the host would compute from its loop variables are computed where kernels read them.
  inline_host_values(prog);
  log.after("inline_host_values", dump(prog));

  // Locals assigned outside the parallel loops live in one-element temporaries on the GPU.
  keep_host_locals_on_gpu(prog);
  log.after("keep_host_locals_on_gpu", dump(prog));

  // Accesses are checked against the shapes: out of bounds is an error, in bounds is marked.
  verify_bounds(prog, &result.bounds);
  log.after("verify_bounds", dump(prog));

  // Writes to a tensor whose elements share memory (an expanded tensor) would race: an error.
  reject_overlapping_outputs(prog);

  // Writes to data-chosen elements inside parallel loops may race: a warning, not an error.
  warn_racy_writes(prog);

  // Loop variables computed in a narrower integer type they overflow wrap: a warning.
  warn_narrowed_loop_variables(prog);

  // Reduction loops get their target and operation; their bodies accumulate per thread.
  detect_reductions(prog);
  log.after("detect_reductions", dump(prog));

  // Scan loops get their running value; their bodies split around the element they combine.
  detect_scans(prog);
  log.after("detect_scans", dump(prog));

  // Calls of cooperative externals run on the threads of a block, in a loop of their own.
  expand_cooperative_calls(prog);
  log.after("expand_cooperative_calls", dump(prog));

  // Nests whose sibling loops request different thread counts are cut into several.
  split_parallel_nests(prog);
  log.after("split_parallel_nests", dump(prog));

  // Kernels whose blocks would have to wait for each other are cut where they would.
  split_multi_block_kernels(prog, opts);
  log.after("split_multi_block_kernels", dump(prog));

  // Outermost parallel loops become kernels; the code around them becomes the launch plan.
  Lowered lowered = split_host_device(prog);
  log.after("split_host_device", dump(lowered));

  // Parallel levels map onto blocks and threads.
  map_parallelism(prog, lowered, opts);
  log.after("map_parallelism", dump(lowered));

  // Threads that walk one row in several loops keep their elements of it in registers, or in
  // shared memory where the registers cannot hold them.
  keep_rows_on_chip(prog, lowered, opts.wide_accesses && size_in_bytes(prog.int_type) == 8);
  log.after("keep_rows_on_chip", dump(lowered));

  // Element accesses become offsets through the tensors' strides.
  flatten_indices(prog, lowered, opts.bounds_check);
  log.after("flatten_indices", dump(lowered));

  // Loop nests of matrix products run in tiles, each thread on several pairs from registers.
  if (opts.product_tiling) {
    tile_matrix_products(prog, lowered);
    log.after("tile_matrix_products", dump(lowered));
  }

  // Time loops of one-dimensional stencils run several time steps per launch, on tiles.
  if (opts.time_tiling) {
    tile_time_loops(prog, lowered);
    log.after("tile_time_loops", dump(lowered));
  }

  // Loops that walk a contiguous dimension move 16 bytes per access where aligned.
  if (opts.wide_accesses) {
    widen_accesses(prog, lowered, opts.memory_bandwidth_gbps);
    log.after("widen_accesses", dump(lowered));
    // Rows kept in registers in groups of consecutive elements move a group per access.
    widen_row_groups(prog, lowered);
    log.after("widen_row_groups", dump(lowered));
  }

  // Reductions into tensor elements load the element before their loop, not after it.
  load_reduction_targets_early(prog, lowered);
  log.after("load_reduction_targets_early", dump(lowered));

  // Loops that only load and accumulate keep several iterations' loads in flight.
  unroll_accumulations(lowered);
  log.after("unroll_accumulations", dump(lowered));

  // Blocks that read their neighbours' rows walk a few consecutive rows each.
  group_neighbour_rows(prog, lowered);
  log.after("group_neighbour_rows", dump(lowered));

  // Math of values a loop does not change is computed once before the loop.
  hoist_invariant_math(prog, lowered);
  log.after("hoist_invariant_math", dump(lowered));

  // A host loop of small kernels becomes, in addition, one persistent kernel.
  if (opts.persistent_loops) {
    fuse_host_loops(lowered);
    log.after("fuse_host_loops", dump(lowered));
  }

  // Kernels that test their tensors' alignment get a copy for aligned data, chosen at launch.
  if (opts.wide_accesses) {
    specialize_aligned_kernels(lowered);
    log.after("specialize_aligned_kernels", dump(lowered));
  }

  lowered.plan.cuda_graphs = opts.use_cuda_graphs;
  if (fn.source && fn.source->def_line > 0)
    lowered.plan.location = fmt::format("{}:{}", fn.source->filename, fn.source->def_line);
  lowered.plan.includes = opts.includes;
  lowered.plan.extra_flags = opts.extra_flags;
  lowered.plan.link_libraries = opts.link_libraries;
  result.cuda = generate_cuda(prog, lowered);
  log.after("generate_cuda", result.cuda);
  result.debug_log = std::move(log.text);
  result.warnings = std::move(prog.warnings);
  return result;
}

}  // namespace parir
