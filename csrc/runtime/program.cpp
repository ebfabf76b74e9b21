#include "runtime/program.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <list>
#include <map>
#include <unordered_map>

#include "codegen/plan_text.h"
#include "codegen/prelude.h"
#include "ir/error.h"
#include "runtime/disk_cache.h"
#include "runtime/driver.h"
#include "runtime/plan_runner.h"

#ifndef PARIR_VERSION
#define PARIR_VERSION "dev"
#endif

namespace parir::runtime {

NvrtcOutput compile_cached(const std::string& source, const std::string& arch,
                           const NvrtcOptions& base, DeferredLog* log, const std::string& what) {
  NvrtcOptions opts = base;
  opts.arch = arch;
  for (auto& h : prelude_headers()) opts.headers.push_back(std::move(h));
  // Everything that determines the binary goes into the key.
  std::string key_text = fmt::format(
      "parir {}\nnvrtc {}\narch {}\ninclude {}\nflags {}\nrelocatable {}\nprelude {}\n{}\n"
      "source {}",
      PARIR_VERSION, nvrtc_version(), arch, fmt::join(opts.include_dirs, ";"),
      fmt::join(opts.extra_flags, ";"), !opts.link_libraries.empty(), kPrelude, kHalfHeader,
      source);
  std::string key = cache_key(key_text);
  std::string name = what.empty() ? std::string("a program") : what;
  DeferredLog now;  // when the caller gave no log: sent on return
  DeferredLog& out_log = log ? *log : now;
  if (auto hit = cache_load(key)) {
    NvrtcOutput out;
    out.binary = std::move(*hit);
    out.is_cubin = arch.rfind("sm_", 0) == 0;
    out_log.add(LogLevel::Debug, fmt::format("{}: {} binary from the disk cache ({}/{}.bin)",
                                             name, arch, cache_root(), key));
    return out;
  }
  auto start = std::chrono::steady_clock::now();
  NvrtcOutput out = compile_cuda(source, "parir_kernels.cu", opts);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  cache_store(key, out.binary);
  out_log.add(LogLevel::Debug,
              fmt::format("{}: NVRTC compiled it for {} in {:.1f} ms ({} bytes of {}; not in the "
                          "disk cache, stored as {}/{}.bin)",
                          name, arch, ms, out.binary.size(), out.is_cubin ? "CUBIN" : "PTX",
                          cache_root(), key));
  return out;
}

namespace {

constexpr size_t kBoundsErrorBytes = 16;  // sizeof(parir::BoundsError) in the prelude

CUfunction lookup_function(const Driver& drv, CUmodule module, const std::string& name) {
  CUfunction f = nullptr;
  CUresult r = drv.cuModuleGetFunction(&f, module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    fail("parir: the launch plan launches kernel '{}', but the CUDA source defines no "
         "extern \"C\" __global__ function of that name",
         name);
  drv.check(r, "cuModuleGetFunction");
  return f;
}

}  // namespace

struct Program::Module {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;  // by LaunchPlan::kernels index
  // Kernels whose launches ask for shared memory "if available" that this GPU cannot give:
  // launched with none (by LaunchPlan::kernels index).
  std::vector<bool> without_shared;
  // Where bounds-checked kernels record the first violation (a parir::BoundsError of the
  // prelude: int id, int unused, long long index); 0 when the plan checks nothing.
  CUdeviceptr bounds = 0;
  // Plans run as CUDA graphs: the stream they are captured on (the legacy default stream
  // cannot be captured), and the sets of tensor addresses seen lately, each with its graph
  // once captured, most recently used last. Guarded by Program::mutex_.
  struct Graph {
    std::vector<void*> params;
    CUgraphExec exec = nullptr;  // null until captured
  };
  CUstream capture_stream = nullptr;
  std::vector<Graph> graphs;
  // Host loops with a persistent kernel run as that kernel (PlanStep::persistent): the GPU has
  // thread block clusters and each such kernel's cluster fits on it.
  bool persistent = false;
};

namespace {

// Appends the items of `more` that `to` does not have yet.
void append_new(std::vector<std::string>& to, const std::vector<std::string>& more) {
  for (const auto& m : more)
    if (std::find(to.begin(), to.end(), m) == to.end()) to.push_back(m);
}

// Links the compiled source with the device libraries into one CUBIN, with the driver's JIT
// linker (it needs a current context). Its error log explains unresolved symbols.
std::string link(const Driver& drv, const NvrtcOutput& bin, const std::vector<std::string>& libs) {
  char log[8192] = {0};
  CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* val[] = {log, reinterpret_cast<void*>(sizeof(log))};
  CUlinkState state = nullptr;
  drv.check(drv.cuLinkCreate_v2(2, opt, val, &state), "cuLinkCreate");
  struct Destroy {
    const Driver& d;
    CUlinkState s;
    ~Destroy() { d.cuLinkDestroy(s); }
  } destroy{drv, state};
  auto check = [&](CUresult r, const std::string& what) {
    if (r != CUDA_SUCCESS) fail("parir: linking {} failed: {}", what, log[0] ? log : "(no log)");
  };
  check(drv.cuLinkAddData_v2(state, bin.is_cubin ? CU_JIT_INPUT_CUBIN : CU_JIT_INPUT_PTX,
                             const_cast<char*>(bin.binary.data()), bin.binary.size(),
                             "parir_kernels", 0, nullptr, nullptr),
        "the generated code");
  auto ends_with = [](const std::string& s, const char* suffix) {
    const size_t n = std::char_traits<char>::length(suffix);
    return s.size() > n && s.compare(s.size() - n, n, suffix) == 0;
  };
  for (const auto& lib : libs) {
    // The file's kind from its extension, as nvlink reads it; anything else is an object file
    // (nvcc -rdc=true -c).
    CUjitInputType kind = ends_with(lib, ".a")        ? CU_JIT_INPUT_LIBRARY
                          : ends_with(lib, ".ptx")    ? CU_JIT_INPUT_PTX
                          : ends_with(lib, ".cubin")  ? CU_JIT_INPUT_CUBIN
                          : ends_with(lib, ".fatbin") ? CU_JIT_INPUT_FATBINARY
                                                      : CU_JIT_INPUT_OBJECT;
    check(drv.cuLinkAddFile_v2(state, kind, lib.c_str(), 0, nullptr, nullptr), lib);
  }
  void* cubin = nullptr;
  size_t size = 0;
  check(drv.cuLinkComplete(state, &cubin, &size), "the module");
  return std::string(static_cast<const char*>(cubin), size);  // copied: freed with the state
}

}  // namespace

std::string to_one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\\') out += "\\\\";
    else out += c;
  }
  return out;
}

std::string from_one_line(const std::string& text) {
  if (text.find('\n') != std::string::npos) return text;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == 'n' || text[i + 1] == '\\')) {
      out += text[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace {

// "sum_rows (model.py:12)", or the function's name alone for a plan without a location.
std::string profile_name_of(const LaunchPlan& plan) {
  size_t colon = plan.location.rfind(':');
  if (plan.location.empty() || colon == std::string::npos) return plan.function;
  std::string file = std::filesystem::path(plan.location.substr(0, colon)).filename().string();
  return fmt::format("{} ({}:{})", plan.function, file, plan.location.substr(colon + 1));
}

}  // namespace

namespace {

// Whether some launch of `steps` runs inside a host loop.
bool launches_in_host_loop(const std::vector<PlanStep>& steps, bool in_loop = false) {
  for (const auto& s : steps) {
    if (s.kind == PlanStep::Kind::Launch && in_loop) return true;
    bool loop = in_loop || s.kind == PlanStep::Kind::For || s.kind == PlanStep::Kind::While;
    if (launches_in_host_loop(s.body, loop) || launches_in_host_loop(s.else_body, loop))
      return true;
  }
  return false;
}

}  // namespace

Program::Program(std::string cuda_source, NvrtcOptions options)
    : source_(from_one_line(cuda_source)),
      one_line_source_(to_one_line(source_)),
      options_(std::move(options)) {
  SplitProgram split = split_stored_binaries(source_);
  code_ = std::move(split.source);
  stored_ = std::move(split.binaries);
  plan_ = parse_plan(code_);
  profile_name_ = profile_name_of(plan_);
  has_host_loop_ = launches_in_host_loop(plan_.steps);
  // The plan's own options first: the text alone must build the same binary anywhere.
  NvrtcOptions merged;
  merged.include_dirs = plan_.includes;
  merged.extra_flags = plan_.extra_flags;
  merged.link_libraries = plan_.link_libraries;
  append_new(merged.include_dirs, options_.include_dirs);
  append_new(merged.extra_flags, options_.extra_flags);
  append_new(merged.link_libraries, options_.link_libraries);
  options_ = std::move(merged);
}

namespace {

// What a destroyed program leaves to unload, with the device it lives on.
struct RetiredModule {
  int device;
  CUmodule module;
  std::vector<CUgraphExec> graphs;
  CUstream capture_stream;
  CUdeviceptr bounds;
};

std::atomic<int64_t> loaded_modules{0};

// Modules of destroyed programs, waiting to be unloaded. Never freed: programs may be destroyed
// during static destruction at exit, after any ordinary static would be gone.
std::mutex& retired_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<RetiredModule>& retired_modules() {
  static auto* v = new std::vector<RetiredModule>;
  return *v;
}

// Unloads retired modules once enough have gathered to be worth the device synchronization
// that must come first (their kernels may still be running). Called only right before a module
// load, outside any stream capture.
void unload_retired_modules(const Driver& drv, DeferredLog& log) {
  constexpr size_t kBatch = 32;
  std::vector<RetiredModule> batch;
  {
    std::lock_guard<std::mutex> lock(retired_mutex());
    if (retired_modules().size() < kBatch) return;
    batch.swap(retired_modules());
  }
  std::map<int, std::vector<RetiredModule>> by_device;
  for (const auto& r : batch) by_device[r.device].push_back(r);
  for (const auto& [device, modules] : by_device) {
    make_context_current(device);
    drv.check(drv.cuCtxSynchronize(), "cuCtxSynchronize");
    for (const auto& r : modules) {
      for (CUgraphExec g : r.graphs) drv.cuGraphExecDestroy(g);
      if (r.capture_stream) drv.cuStreamDestroy_v2(r.capture_stream);
      if (r.bounds) drv.cuMemFree_v2(r.bounds);
      drv.cuModuleUnload(r.module);
      --loaded_modules;
    }
  }
  log.add(LogLevel::Debug, fmt::format("unloaded the {} CUDA modules of dropped programs",
                                       batch.size()));
}

// A kernel's dynamic shared memory (a launch's shared(bytes)): past 48 KB, with its static
// shared memory, it must be allowed per kernel, up to what the GPU lets one block have (227 KB
// on an H100, 163 KB on an A100, 99 KB on sm_86 and sm_89); more is an error that names the
// kernel, not a failed launch, unless the launches ask for it "if available" (false: the
// kernel is launched without it).
bool allow_dynamic_shared(const Driver& drv, CUfunction f, int device, const std::string& kernel,
                          int64_t bytes, bool if_available) {
  CUdevice dev;
  drv.check(drv.cuDeviceGet(&dev, device), "cuDeviceGet");
  int most = 0, static_bytes = 0;
  drv.check(drv.cuDeviceGetAttribute(&most, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     dev),
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  drv.check(drv.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
            "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  if (bytes + static_bytes > most) {
    if (if_available) return false;
    fail("parir: kernel '{}' is launched with {} bytes of dynamic shared memory (and uses {} "
         "of its own), more than the {} bytes a block may have on device {}",
         kernel, bytes, static_bytes, most, device);
  }
  drv.check(drv.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(bytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  return true;
}

}  // namespace

Program::~Program() {
  // Nothing is unloaded here: a program may be destroyed during a stream capture or at exit,
  // where driver calls are not allowed or fail. See unload_retired_modules.
  if (launched_in_capture_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(retired_mutex());
  for (size_t device = 0; device < modules_.size(); ++device) {
    if (!modules_[device]) continue;
    const Module& m = *modules_[device];
    std::vector<CUgraphExec> graphs;
    for (const auto& g : m.graphs)
      if (g.exec) graphs.push_back(g.exec);
    retired_modules().push_back(
        {static_cast<int>(device), m.module, std::move(graphs), m.capture_stream, m.bounds});
  }
}

const Program::Module& Program::module_for(int device, CUstream stream, bool capturing) const {
  if (device >= 0 && device < kLockFreeDevices)
    if (const Module* m = loaded_[device].load(std::memory_order_acquire)) return *m;
  DeferredLog log;  // sent once the lock below is released: a log sink may wait for Python
  std::lock_guard<std::mutex> lock(mutex_);
  if (device < 0) fail("parir: invalid device ordinal {}", device);
  if (static_cast<int>(modules_.size()) <= device) modules_.resize(device + 1);
  if (modules_[device]) return *modules_[device];

  const Driver& drv = Driver::get();
  if (capturing)
    fail("parir: {}() is called for the first time on device {} while the stream is being "
         "captured into a CUDA graph; compiling and loading its kernels is not allowed during "
         "capture. Call it once before capturing (a warm-up run)",
         plan_.function, device);
  unload_retired_modules(drv, log);
  make_context_current(device);
  auto [major, minor] = compute_capability(device);
  auto m = std::make_unique<Module>();
  m->module = load_module(device, major, minor, log);
  ++loaded_modules;
  // Resolve every kernel now, so that launching needs no lock and no lookup by name. Each
  // kernel may use the largest cluster it is launched with.
  // Persistent loops' kernels run only on GPUs with clusters (compiled for others, they are
  // empty and never launched).
  const bool clusters = major >= 9;
  std::vector<int64_t> cluster(plan_.kernels.size(), 1), shared(plan_.kernels.size(), 0);
  std::vector<bool> persistent(plan_.kernels.size(), false);
  std::vector<bool> shared_optional(plan_.kernels.size(), true);
  for (const auto& s : plan_.steps)
    for (const auto& p : s.persistent) persistent[p.kernel_index] = true;
  for_each_launch(plan_.steps, [&](const PlanStep& step) {
    for (int k : {step.kernel_index, step.aligned_kernel_index}) {
      if (k < 0) continue;
      cluster[k] = std::max(cluster[k], step.cluster);
      shared[k] = std::max(shared[k], step.shared_bytes);
      if (step.shared_bytes > 0 && !step.shared_if_available) shared_optional[k] = false;
    }
  });
  try {
    for (size_t k = 0; k < plan_.kernels.size(); ++k) {
      CUfunction f = lookup_function(drv, m->module, plan_.kernels[k]);
      // Beyond the portable cluster size (H100 and H200 allow 16).
      if (cluster[k] > 8 && (clusters || !persistent[k]))
        drv.check(
            drv.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
      const bool granted = shared[k] == 0 || allow_dynamic_shared(drv, f, device, plan_.kernels[k],
                                                                   shared[k], shared_optional[k]);
      m->functions.push_back(f);
      m->without_shared.push_back(!granted);
    }
    if (!plan_.bounds_sites.empty())
      drv.check(drv.cuMemAlloc_v2(&m->bounds, kBoundsErrorBytes), "cuMemAlloc");
    m->persistent = clusters && persistent_loops_fit(drv, *m);
  } catch (...) {
    drv.cuModuleUnload(m->module);  // nothing of it has run yet
    --loaded_modules;
    throw;
  }
  modules_[device] = std::move(m);
  if (device < kLockFreeDevices) loaded_[device].store(modules_[device].get(), std::memory_order_release);
  return *modules_[device];
}

CUmodule Program::load_module(int device, int major, int minor, DeferredLog& log) const {
  const Driver& drv = Driver::get();
  const std::string gpu = fmt::format("cuda:{} (sm_{}{})", device, major, minor);
  auto load = [&](NvrtcOutput bin, CUmodule* module) {
    if (!options_.link_libraries.empty()) {
      bin.binary = link(drv, bin, options_.link_libraries);
      bin.is_cubin = true;
    }
    return drv.cuModuleLoadData(module, bin.binary.data());
  };
  // A stored binary first: no NVRTC, and no compile pause for CUBIN.
  if (const StoredBinary* stored = binary_for_device(stored_, major, minor)) {
    NvrtcOutput bin;
    bin.binary = stored->binary;
    bin.is_cubin = stored->is_cubin();
    CUmodule module = nullptr;
    CUresult r = load(bin, &module);
    if (r == CUDA_SUCCESS) {
      log.add(LogLevel::Debug,
              fmt::format("{}: loaded its stored {} binary on {}{}", plan_.function,
                          stored->arch, gpu,
                          stored->is_cubin() ? "" : " (the driver compiled the PTX)"));
      return module;
    }
    std::string why;
    try {
      drv.check(r, "cuModuleLoadData");
    } catch (const Error& e) {
      why = e.what();
    }
    log.add(LogLevel::Info, fmt::format("{}: its stored {} binary does not load on {} ({}); "
                                        "compiling its source with NVRTC",
                                        plan_.function, stored->arch, gpu, why));
  } else if (!stored_.empty()) {
    log.add(LogLevel::Info,
            fmt::format("{}: none of its stored binaries ({}) runs on {}; compiling its source "
                        "with NVRTC",
                        plan_.function, describe_archs(stored_), gpu));
  }
  NvrtcOutput bin;
  try {
    bin = compile_cached(code_, choose_arch(major, minor), options_, &log, plan_.function);
  } catch (const Error& e) {
    if (stored_.empty()) throw;
    fail("parir: {}(): none of its stored binaries ({}) runs on {}, and compiling its source "
         "failed: {}",
         plan_.function, describe_archs(stored_), gpu, e.what());
  }
  CUmodule module = nullptr;
  drv.check(load(bin, &module), "cuModuleLoadData");
  return module;
}

std::string Program::with_binaries(const std::vector<std::string>& archs, bool ptx) const {
  if (archs.empty()) fail("parir.aot: no architectures to store binaries for");
  std::vector<int> supported = nvrtc_supported_archs();
  std::vector<StoredBinary> binaries;
  int oldest = 0;
  for (const auto& arch : archs) {
    StoredBinary b;
    b.arch = arch;
    bool well_formed = arch.size() > 3 && arch.rfind("sm_", 0) == 0 &&
                       arch.find_first_not_of("0123456789", 3) == std::string::npos &&
                       arch.size() < 8;
    if (!well_formed)
      fail("parir.aot: '{}' is not an architecture; write sm_ and the compute capability's "
           "digits, e.g. sm_90 for 9.0",
           arch);
    if (std::find(supported.begin(), supported.end(), b.number()) == supported.end())
      fail("parir.aot: this NVRTC cannot compile for {}; it knows sm_{}", arch,
           fmt::join(supported, ", sm_"));
    if (std::any_of(binaries.begin(), binaries.end(),
                    [&](const StoredBinary& other) { return other.arch == arch; }))
      continue;  // listed twice
    b.binary = compile_cached(code_, arch, options_, nullptr, plan_.function).binary;
    oldest = oldest == 0 ? b.number() : std::min(oldest, b.number());
    binaries.push_back(std::move(b));
  }
  if (ptx) {
    StoredBinary b;
    b.arch = fmt::format("compute_{}", oldest);
    b.binary = compile_cached(code_, b.arch, options_, nullptr, plan_.function).binary;
    binaries.push_back(std::move(b));
  }
  return append_stored_binaries(code_, binaries);
}

namespace {

bool is_capturing(const Driver& drv, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  drv.check(drv.cuStreamIsCapturing(stream, &status), "cuStreamIsCapturing");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace

void Program::prepare(int device, CUstream stream) const {
  const Driver& drv = Driver::get();
  make_context_current(device);
  module_for(device, stream, stream && is_capturing(drv, stream));
}

size_t Program::compile(const std::string& arch) const {
  return compile_cached(code_, arch, options_, nullptr, plan_.function).binary.size();
}

void Program::launch(int device, CUstream stream, void* const* params, size_t count) const {
  if (count != plan_.params.size() + plan_.temporaries.size())
    fail("parir: {}() expects {} tensors and {} temporaries, got {}", plan_.function,
         plan_.params.size(), plan_.temporaries.size(), count);
  const Driver& drv = Driver::get();
  // First: a thread that never used the device (autograd's backward threads) has no current
  // context, and the driver calls below need one.
  make_context_current(device);
  bool capturing = is_capturing(drv, stream);
  const Module& mod = module_for(device, stream, capturing);
  if (capturing) {
    if (mod.bounds)
      fail("parir: {}() checks bounds at run time (CompileOptions.bounds_check, or debug=True), "
           "which reads the result of the checks back after each call; that cannot happen "
           "inside a CUDA graph capture. Capture it without bounds checks",
           plan_.function);
    // The launches join a capture that PyTorch (or the user) started; that graph may outlive
    // this program, so its modules must stay loaded.
    launched_in_capture_.store(true, std::memory_order_relaxed);
    return launch_plan(mod, stream, params);
  }
  if (mod.bounds)
    drv.check(drv.cuMemsetD8Async(mod.bounds, 0, kBoundsErrorBytes, stream), "cuMemsetD8Async");
  const bool graph = plan_.cuda_graphs == CudaGraphs::On ||
                     (plan_.cuda_graphs == CudaGraphs::Auto && has_host_loop_ && !mod.bounds);
  if (graph)
    launch_graph(mod, stream, params, count);
  else
    launch_plan(mod, stream, params);
  if (mod.bounds) report_bounds_violation(mod, stream);
}

void Program::launch_graph(const Module& mod, CUstream stream, void* const* params,
                           size_t count) const {
  // Kernel arguments are part of a captured graph, so each set of tensor addresses has its own.
  // A few are kept: a program called in turn on several sets of buffers (double buffering, or
  // a benchmark rotating input copies) replays each without capturing it again.
  constexpr size_t kGraphsKept = 8;
  const Driver& drv = Driver::get();
  std::lock_guard<std::mutex> lock(mutex_);
  Module& m = const_cast<Module&>(mod);
  auto same = [&](const Module::Graph& g) {
    return std::equal(params, params + count, g.params.begin(), g.params.end());
  };
  auto it = std::find_if(m.graphs.begin(), m.graphs.end(), same);
  if (it == m.graphs.end()) {
    if (m.graphs.size() == kGraphsKept) {
      if (m.graphs.front().exec) drv.cuGraphExecDestroy(m.graphs.front().exec);  // freed once
      m.graphs.erase(m.graphs.begin());                                     // its launches end
    }
    m.graphs.push_back({std::vector<void*>(params, params + count), nullptr});
    it = m.graphs.end() - 1;
    // Auto: a set of addresses seen for the first time is launched as it is; only a call that
    // comes back with it pays for a capture, which replays then repay.
    if (plan_.cuda_graphs == CudaGraphs::Auto) return launch_plan(mod, stream, params);
  } else {
    std::rotate(it, it + 1, m.graphs.end());  // most recently used last
    it = m.graphs.end() - 1;
  }
  if (!it->exec) {
    if (!m.capture_stream)
      drv.check(drv.cuStreamCreate(&m.capture_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    drv.check(drv.cuStreamBeginCapture_v2(m.capture_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCapture");
    CUgraph graph = nullptr;
    try {
      launch_plan(mod, m.capture_stream, params);
    } catch (...) {
      drv.cuStreamEndCapture(m.capture_stream, &graph);
      if (graph) drv.cuGraphDestroy(graph);
      throw;
    }
    drv.check(drv.cuStreamEndCapture(m.capture_stream, &graph), "cuStreamEndCapture");
    CUgraphExec exec = nullptr;
    CUresult r = drv.cuGraphInstantiateWithFlags(&exec, graph, 0);
    drv.cuGraphDestroy(graph);
    drv.check(r, "cuGraphInstantiate");
    it->exec = exec;
  }
  drv.check(drv.cuGraphLaunch(it->exec, stream), "cuGraphLaunch");
}

void Program::report_bounds_violation(const Module& mod, CUstream stream) const {
  const Driver& drv = Driver::get();
  struct {
    int32_t id;
    int32_t unused;
    int64_t index;
  } error{};
  static_assert(sizeof(error) == kBoundsErrorBytes, "parir::BoundsError's layout");
  drv.check(drv.cuMemcpyDtoHAsync_v2(&error, mod.bounds, sizeof(error), stream),
            "cuMemcpyDtoHAsync");
  drv.check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (error.id == 0) return;
  if (error.id < 1 || error.id > static_cast<int>(plan_.bounds_sites.size()))
    fail("parir: {}(): a bounds check reported the unknown check {}", plan_.function, error.id);
  const BoundsSite& c = plan_.bounds_sites[error.id - 1];
  fail("{}:{}: {}(): index {} of '{}' (dimension {}) is out of bounds: that dimension has {} "
       "element{} (valid indices {}..{}). Kernel '{}' skipped the access and maybe others like "
       "it; this is the first one it found",
       c.file, c.line, plan_.function, error.index, display_name(c.tensor), c.dim, c.extent,
       c.extent == 1 ? "" : "s", -c.extent, c.extent - 1, c.kernel);
}

namespace {

// The configuration of launch `step` as a thread block cluster on `stream`; `attr` holds the
// cluster's size, which the configuration points to.
CUlaunchConfig cluster_launch(const PlanStep& step, unsigned shared_bytes, CUstream stream,
                              CUlaunchAttribute& attr) {
  attr = CUlaunchAttribute{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = static_cast<unsigned>(step.cluster);
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(step.grid);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = static_cast<unsigned>(step.block);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return config;
}

}  // namespace

bool Program::persistent_loops_fit(const Driver& drv, const Module& mod) const {
  bool any = false;
  for (const auto& s : plan_.steps) {
    for (const auto& p : s.persistent) {
      CUlaunchAttribute cluster;
      CUlaunchConfig config =
          cluster_launch(p, static_cast<unsigned>(p.shared_bytes), nullptr, cluster);
      int clusters = 0;
      if (drv.cuOccupancyMaxActiveClusters(&clusters, mod.functions[p.kernel_index], &config) !=
              CUDA_SUCCESS ||
          clusters < 1)
        return false;
      any = true;
    }
  }
  return any;
}

void Program::launch_plan(const Module& mod, CUstream stream, void* const* params) const {
  const Driver& drv = Driver::get();
  run_plan(plan_, [&](const PlanStep& step, const HostEnv& env) {
    if (step.grid == 0) return;  // an empty parallel range: nothing to run
    // Kernel arguments: tensor pointers and host loop variables, each passed by address. The
    // buffers are this thread's, reused from launch to launch without allocating (the driver
    // copies the arguments when the launch is queued, and launches never nest).
    thread_local std::vector<void*> ptrs, args;
    thread_local std::vector<int64_t> ints;
    ptrs.assign(step.resolved_args.size(), nullptr);
    ints.assign(step.resolved_args.size(), 0);
    args.assign(step.resolved_args.size(), nullptr);
    // The kernel's copy for aligned data, when every tensor's data pointer is a multiple of 16.
    uintptr_t any_misaligned = 0;
    for (size_t i = 0; i < step.resolved_args.size(); ++i) {
      const PlanStep::Arg& a = step.resolved_args[i];
      switch (a.kind) {
        case PlanStep::Arg::Kind::Param:
          ptrs[i] = params[a.index];
          any_misaligned |= reinterpret_cast<uintptr_t>(ptrs[i]) % 16;
          break;
        case PlanStep::Arg::Kind::HostVar:
          ints[i] = env.values[a.index];
          break;
        case PlanStep::Arg::Kind::BoundsBuffer:
          ptrs[i] = reinterpret_cast<void*>(mod.bounds);
          break;
      }
      args[i] = a.kind == PlanStep::Arg::Kind::HostVar ? static_cast<void*>(&ints[i])
                                                        : static_cast<void*>(&ptrs[i]);
    }
    const int kernel = step.aligned_kernel_index >= 0 && !any_misaligned
                           ? step.aligned_kernel_index
                           : step.kernel_index;
    CUfunction f = mod.functions[kernel];
    const auto shared_bytes =
        mod.without_shared[kernel] ? 0u : static_cast<unsigned>(step.shared_bytes);
    if (step.cluster > 1) {
      CUlaunchAttribute cluster;
      CUlaunchConfig config = cluster_launch(step, shared_bytes, stream, cluster);
      drv.check(drv.cuLaunchKernelEx(&config, f, args.data(), nullptr), "cuLaunchKernelEx");
      return;
    }
    drv.check(drv.cuLaunchKernel(f, static_cast<unsigned>(step.grid), 1, 1,
                                 static_cast<unsigned>(step.block), 1, 1,
                                 shared_bytes, stream, args.data(),
                                 nullptr),
              "cuLaunchKernel");
  }, mod.persistent);
}

int64_t loaded_module_count() { return loaded_modules.load(); }

// ---------------------------------------------------------------------------------------------

std::shared_ptr<const Program> program_for_source(const std::string& source) {
  constexpr size_t kMaxPrograms = 256;
  static std::mutex mutex;
  static std::list<std::pair<std::string, std::shared_ptr<const Program>>> lru;
  static std::unordered_map<std::string, decltype(lru)::iterator> index;
  DeferredLog log;  // sent once the lock is released
  std::lock_guard<std::mutex> lock(mutex);
  auto it = index.find(source);
  if (it != index.end()) {
    lru.splice(lru.begin(), lru, it->second);
    return it->second->second;
  }
  auto program = std::make_shared<const Program>(source);
  lru.emplace_front(source, program);
  index[source] = lru.begin();
  if (lru.size() > kMaxPrograms) {
    log.add(LogLevel::Debug,
            fmt::format("{}: the parir::launch operator dropped its program, the least recently "
                        "used of {} (its text is compiled again if it comes back)",
                        lru.back().second->plan().function, kMaxPrograms));
    index.erase(lru.back().first);
    lru.pop_back();
  }
  return program;
}

}  // namespace parir::runtime
