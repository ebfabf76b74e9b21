#include "runtime/driver.h"

#include <dlfcn.h>

#include <iterator>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

#include "ir/error.h"
#include "runtime/nvrtc.h"

namespace parir::runtime {
namespace {

struct Loaded {
  Driver driver{};
  std::string error;  // why the driver cannot be used; empty when it can
};

// "CUDA_ERROR_X: description", using the driver's own names for its errors.
std::string describe(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* desc = nullptr;
  if (d.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    return fmt::format("unknown CUDA error {}", static_cast<int>(r));
  if (d.cuGetErrorString(r, &desc) != CUDA_SUCCESS || !desc) desc = "no description";
  return fmt::format("{}: {}", name, desc);
}

void* open_libcuda(std::vector<std::string>& tried) {
  const char* const names[] = {"libcuda.so.1", "libcuda.so"};
  // PyTorch has usually loaded the driver already; take that copy, since a second libcuda from
  // another directory would not share its contexts.
  if (void* h = dlopen(names[0], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return h;
  std::vector<std::string> candidates;
  for (const auto& dir : library_dirs())
    for (const char* name : names) candidates.push_back(dir + "/" + name);
  candidates.insert(candidates.end(), std::begin(names), std::end(names));
  for (const auto& c : candidates) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* err = dlerror();
    tried.push_back(fmt::format("{}: {}", c, err ? err : "cannot be loaded"));
  }
  return nullptr;
}

// Loads libcuda and calls cuInit once; the outcome, failure included, is kept for the process.
const Loaded& load() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tried;
    void* h = open_libcuda(tried);
    if (!h) {
      l.error = fmt::format("the CUDA driver (libcuda.so.1) is not installed or cannot be "
                            "loaded:\n  {}",
                            fmt::join(tried, "\n  "));
      return;
    }
    Driver& d = l.driver;
    auto sym = [&](auto& f, const char* name) {
      // None of these entry points is versioned (no cuXxx_v2 #define in cuda.h), and the legacy
      // (non-_ptsz) launch and capture queries are the ones that match PyTorch's streams.
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      if (!f && l.error.empty()) l.error = fmt::format("libcuda has no symbol {}", name);
    };
    sym(d.cuInit, "cuInit");
    sym(d.cuGetErrorString, "cuGetErrorString");
    sym(d.cuGetErrorName, "cuGetErrorName");
    sym(d.cuDeviceGet, "cuDeviceGet");
    sym(d.cuDeviceGetCount, "cuDeviceGetCount");
    sym(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    sym(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(d.cuCtxGetCurrent, "cuCtxGetCurrent");
    sym(d.cuCtxSetCurrent, "cuCtxSetCurrent");
    sym(d.cuCtxSynchronize, "cuCtxSynchronize");
    sym(d.cuModuleLoadData, "cuModuleLoadData");
    sym(d.cuModuleUnload, "cuModuleUnload");
    sym(d.cuModuleGetFunction, "cuModuleGetFunction");
    sym(d.cuFuncSetAttribute, "cuFuncSetAttribute");
    sym(d.cuFuncGetAttribute, "cuFuncGetAttribute");
    sym(d.cuLaunchKernel, "cuLaunchKernel");
    sym(d.cuStreamIsCapturing, "cuStreamIsCapturing");
    sym(d.cuStreamCreate, "cuStreamCreate");
    sym(d.cuStreamDestroy_v2, "cuStreamDestroy_v2");
    sym(d.cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2");
    sym(d.cuStreamEndCapture, "cuStreamEndCapture");
    sym(d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    sym(d.cuGraphLaunch, "cuGraphLaunch");
    sym(d.cuGraphExecDestroy, "cuGraphExecDestroy");
    sym(d.cuGraphDestroy, "cuGraphDestroy");
    sym(d.cuMemAlloc_v2, "cuMemAlloc_v2");
    sym(d.cuMemFree_v2, "cuMemFree_v2");
    sym(d.cuMemsetD8Async, "cuMemsetD8Async");
    sym(d.cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2");
    sym(d.cuStreamSynchronize, "cuStreamSynchronize");
    sym(d.cuLaunchKernelEx, "cuLaunchKernelEx");
    sym(d.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");
    sym(d.cuLinkCreate_v2, "cuLinkCreate_v2");
    sym(d.cuLinkAddData_v2, "cuLinkAddData_v2");
    sym(d.cuLinkAddFile_v2, "cuLinkAddFile_v2");
    sym(d.cuLinkComplete, "cuLinkComplete");
    sym(d.cuLinkDestroy, "cuLinkDestroy");
    if (!l.error.empty()) return;
    if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS)
      l.error = fmt::format("cuInit: {}", describe(d, r));
  });
  return l;
}

}  // namespace

const Driver& Driver::get() {
  const Loaded& l = load();
  if (!l.error.empty()) fail("parir: cannot use the GPU: {}", l.error);
  return l.driver;
}

bool Driver::available(std::string* why) {
  std::string reason;
  bool ok = false;
  try {
    const Loaded& l = load();
    int count = 0;
    if (!l.error.empty()) {
      reason = l.error;
    } else if (CUresult r = l.driver.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
      reason = fmt::format("cuDeviceGetCount: {}", describe(l.driver, r));
    } else if (count == 0) {
      reason = "the driver reports no GPU";
    } else {
      reason = fmt::format("{} GPU{}", count, count == 1 ? "" : "s");
      ok = true;
    }
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown error while loading the CUDA driver";
  }
  if (why) *why = std::move(reason);
  return ok;
}

void Driver::check(CUresult r, const char* what) const {
  if (r != CUDA_SUCCESS) fail("{}: {}", what, describe(*this, r));
}

namespace {

// The primary context of device `ordinal`: the one the CUDA runtime, and so PyTorch, uses, so
// kernels loaded into it can touch PyTorch's memory and run on its streams. Retained once and
// never released, as PyTorch does, so it outlives every module loaded into it.
CUcontext primary_context(const Driver& d, int ordinal) {
  static std::mutex mutex;
  static std::map<int, CUcontext> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = contexts.find(ordinal);
  if (it == contexts.end()) {
    CUdevice dev;
    d.check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    CUcontext ctx = nullptr;
    d.check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    it = contexts.emplace(ordinal, ctx).first;
  }
  return it->second;
}

}  // namespace

void make_context_current(int ordinal) {
  const Driver& d = Driver::get();
  // Every launch comes here: each thread remembers the contexts it has seen, so that only its
  // first use of a device takes the lock.
  thread_local std::vector<CUcontext> seen;
  if (ordinal < 0) fail("parir: invalid device ordinal {}", ordinal);
  if (static_cast<size_t>(ordinal) >= seen.size()) seen.resize(ordinal + 1, nullptr);
  if (!seen[ordinal]) seen[ordinal] = primary_context(d, ordinal);
  CUcontext ctx = seen[ordinal];
  CUcontext current = nullptr;
  d.check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != ctx) d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

std::pair<int, int> compute_capability(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::pair<int, int>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(ordinal); it != cache.end()) return it->second;
  const Driver& d = Driver::get();
  CUdevice dev;
  d.check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  int major = 0, minor = 0;
  d.check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  d.check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  return cache[ordinal] = {major, minor};
}

}  // namespace parir::runtime
