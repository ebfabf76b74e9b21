#include "runtime/nvrtc.h"

#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <type_traits>

#include "ir/error.h"

namespace parir::runtime {
namespace {

std::mutex dirs_mutex;
std::vector<std::string> extra_dirs;

const char* const kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

// The NVRTC entry points, looked up by name in the first library that has them all. Only the
// types come from <nvrtc.h>: nothing links against libnvrtc.
struct Nvrtc {
  void* handle = nullptr;
  std::string path;
  std::vector<std::string> tried;  // "<path>: <why it was not used>", for nvrtc_status()
  std::string error;               // set when no usable library was found

  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*GetNumSupportedArchs)(int*);
  nvrtcResult (*GetSupportedArchs)(int*);

  // Opens `path` and resolves every entry point; on failure records why and leaves no handle.
  bool open(const std::string& path) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      tried.push_back(fmt::format("{}: {}", path, err ? err : "cannot be loaded"));
      return false;
    }
    std::string missing;
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      if (!f && missing.empty()) missing = name;
    };
    sym(CreateProgram, "nvrtcCreateProgram");
    sym(CompileProgram, "nvrtcCompileProgram");
    sym(GetProgramLogSize, "nvrtcGetProgramLogSize");
    sym(GetProgramLog, "nvrtcGetProgramLog");
    sym(GetCUBINSize, "nvrtcGetCUBINSize");
    sym(GetCUBIN, "nvrtcGetCUBIN");
    sym(GetPTXSize, "nvrtcGetPTXSize");
    sym(GetPTX, "nvrtcGetPTX");
    sym(DestroyProgram, "nvrtcDestroyProgram");
    sym(GetErrorString, "nvrtcGetErrorString");
    sym(Version, "nvrtcVersion");
    sym(GetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    sym(GetSupportedArchs, "nvrtcGetSupportedArchs");
    if (!missing.empty()) {
      // Too old (or not NVRTC at all): keep looking rather than fail on a later candidate's
      // behalf.
      tried.push_back(fmt::format("{}: has no symbol {}", path, missing));
      dlclose(h);
      return false;
    }
    handle = h;
    this->path = path;
    return true;
  }

  void check(nvrtcResult r, const char* what) const {
    if (r != NVRTC_SUCCESS) fail("parir: {} failed: {}", what, GetErrorString(r));
  }
};

// The `lib` directories of the NVIDIA wheels installed next to the PyTorch loaded in this
// process (site-packages/nvidia/*/lib, found from libc10.so's location), newest CUDA first.
// This is how a C++ program linked against the pip wheel's LibTorch finds NVRTC.
std::vector<std::string> wheel_dirs_next_to_torch() {
  std::string libc10;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (std::filesystem::path(name).filename() != "libc10.so") return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &libc10);
  std::vector<std::string> dirs;
  if (libc10.empty()) return dirs;
  std::error_code ec;
  // .../site-packages/torch/lib/libc10.so -> .../site-packages/nvidia
  auto nvidia = std::filesystem::path(libc10).parent_path().parent_path().parent_path() / "nvidia";
  for (const auto& entry : std::filesystem::directory_iterator(nvidia, ec))
    if (std::filesystem::is_directory(entry.path() / "lib", ec))
      dirs.push_back((entry.path() / "lib").string());
  std::sort(dirs.rbegin(), dirs.rend());  // cu13 before cu12, whatever the directory order
  return dirs;
}

// Where NVRTC may be, in order (see nvrtc.h).
std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> candidates;
  auto add_dir = [&](const std::string& dir) {
    for (const char* name : kNames) candidates.push_back(dir + "/" + name);
  };
  if (const char* p = std::getenv("PARIR_NVRTC_PATH"); p && *p) {
    // The one place to look: a process can be kept from NVRTC (and so limited to programs
    // with stored binaries), and a wrong path is an error rather than another NVRTC.
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec))
      add_dir(p);
    else
      candidates.push_back(p);
    return candidates;
  }
  for (const auto& dir : library_dirs()) add_dir(dir);
  // An NVRTC this process has loaded already (PyTorch loads one for its own JIT kernels).
  for (const char* name : kNames)
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      dlclose(h);
      candidates.push_back(name);
    }
  for (const auto& dir : wheel_dirs_next_to_torch()) add_dir(dir);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* p = std::getenv(var); p && *p) add_dir(std::string(p) + "/lib64");
  for (const char* name : kNames) candidates.push_back(name);
  add_dir("/usr/local/cuda/lib64");
  return candidates;
}

// Loads NVRTC on first use; the outcome, failure included, is kept for the process's lifetime
// (so set_library_dirs must come first, which the Python package does at import).
const Nvrtc& load() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& c : nvrtc_candidates())
      if (n.open(c)) return;
    const char* only = std::getenv("PARIR_NVRTC_PATH");
    n.error = fmt::format(
        "parir: NVRTC (libnvrtc.so) was not found{}; install PyTorch's CUDA wheel or the CUDA "
        "toolkit, or set PARIR_NVRTC_PATH to the library (or its directory). Programs with "
        "binaries stored by parir.aot for the GPU run without it. Tried:\n  {}",
        only && *only ? fmt::format(" (PARIR_NVRTC_PATH={} is the only place looked at)", only)
                      : "",
        fmt::join(n.tried, "\n  "));
  });
  return n;
}

const Nvrtc& nvrtc() {
  const Nvrtc& n = load();
  if (!n.error.empty()) throw Error(n.error);
  return n;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The CUDA headers that belong with the NVRTC in use (cuda_fp16.h and cuda_bf16.h, for
// float16 and bfloat16 code): the include directory beside its library directory, as in the
// CUDA wheels (nvidia/cu13/{lib,include}) and the toolkit (lib64, include); else $CUDA_HOME's.
// Empty when none is found: then only programs without half types compile.
const std::string& cuda_include_dir(const Nvrtc& n) {
  static std::string dir;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::vector<std::string> candidates;
    std::string lib = n.path;
    if (lib.find('/') == std::string::npos) {  // opened by bare name: ask the loader where
      struct link_map* map = nullptr;
      if (dlinfo(n.handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) lib = map->l_name;
    }
    if (size_t slash = lib.rfind('/'); slash != std::string::npos)
      candidates.push_back(lib.substr(0, slash) + "/../include");
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(var); v && *v) candidates.push_back(std::string(v) + "/include");
    candidates.push_back("/usr/local/cuda/include");
    for (const auto& c : candidates)
      if (file_exists(c + "/cuda_fp16.h")) {
        dir = c;
        return;
      }
  });
  return dir;
}

// Destroys the NVRTC program on every path out of compile_cuda.
struct ProgramGuard {
  const Nvrtc& n;
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) n.DestroyProgram(&prog);
  }
};

std::vector<int> supported_archs(const Nvrtc& n) {
  int count = 0;
  n.check(n.GetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(count);
  if (count > 0) n.check(n.GetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

}  // namespace

void set_library_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(dirs_mutex);
  extra_dirs = std::move(dirs);
}

std::vector<std::string> library_dirs() {
  std::lock_guard<std::mutex> lock(dirs_mutex);
  return extra_dirs;
}

NvrtcOutput compile_cuda(const std::string& source, const std::string& name,
                         const NvrtcOptions& opts) {
  const Nvrtc& n = nvrtc();
  std::vector<const char*> header_sources, header_names;
  for (const auto& [hname, text] : opts.headers) {
    header_names.push_back(hname.c_str());
    header_sources.push_back(text.c_str());
  }
  ProgramGuard guard{n};
  n.check(n.CreateProgram(&guard.prog, source.c_str(), name.c_str(),
                          static_cast<int>(header_sources.size()), header_sources.data(),
                          header_names.data()),
          "nvrtcCreateProgram");

  std::vector<std::string> args = {"--gpu-architecture=" + opts.arch, "-std=c++17",
                                   "-default-device"};
  if (!opts.link_libraries.empty()) args.push_back("--relocatable-device-code=true");
  for (const auto& d : opts.include_dirs) args.push_back("-I" + d);
  if (const std::string& cuda = cuda_include_dir(n); !cuda.empty()) args.push_back("-I" + cuda);
  args.insert(args.end(), opts.extra_flags.begin(), opts.extra_flags.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  nvrtcResult compiled = n.CompileProgram(guard.prog, static_cast<int>(argv.size()), argv.data());
  NvrtcOutput out;
  size_t log_size = 0;
  n.check(n.GetProgramLogSize(guard.prog, &log_size), "nvrtcGetProgramLogSize");
  if (log_size > 1) {
    out.log.resize(log_size);
    n.check(n.GetProgramLog(guard.prog, out.log.data()), "nvrtcGetProgramLog");
    out.log.resize(log_size - 1);  // drop the terminating NUL
  }
  // Failures after this point also carry the log: it is what explains them.
  auto check = [&](nvrtcResult r, const char* what) {
    if (r != NVRTC_SUCCESS)
      fail("parir: {} failed for {} ({}, options: {}):\n{}", what, name, n.GetErrorString(r),
           fmt::join(args, " "), out.log);
  };
  check(compiled, "NVRTC compilation");

  out.is_cubin = opts.arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  if (out.is_cubin) {
    check(n.GetCUBINSize(guard.prog, &size), "nvrtcGetCUBINSize");
    out.binary.resize(size);
    check(n.GetCUBIN(guard.prog, out.binary.data()), "nvrtcGetCUBIN");
  } else {
    check(n.GetPTXSize(guard.prog, &size), "nvrtcGetPTXSize");
    out.binary.resize(size);  // keeps the NUL that cuModuleLoadData needs to see PTX's end
    check(n.GetPTX(guard.prog, out.binary.data()), "nvrtcGetPTX");
  }
  return out;
}

int nvrtc_version() {
  const Nvrtc& n = nvrtc();
  int major = 0, minor = 0;
  n.check(n.Version(&major, &minor), "nvrtcVersion");
  return major * 1000 + minor * 10;
}

std::vector<int> nvrtc_supported_archs() { return supported_archs(nvrtc()); }

std::string choose_arch(int major, int minor) {
  const Nvrtc& n = nvrtc();
  std::vector<int> archs = supported_archs(n);
  int want = major * 10 + minor;
  if (std::find(archs.begin(), archs.end(), want) != archs.end())
    return fmt::format("sm_{}", want);
  int best = 0;
  for (int a : archs)
    if (a < want) best = std::max(best, a);
  if (best == 0)
    fail("parir: the GPU (compute capability {}.{}) is older than every architecture this "
         "NVRTC ({}) supports: {}",
         major, minor, n.path, fmt::join(archs, ", "));
  // A device newer than this NVRTC knows: PTX for the newest architecture it does know, which
  // the driver JIT-compiles for the device at module load.
  return fmt::format("compute_{}", best);
}

std::string nvrtc_status() {
  const Nvrtc& n = load();
  if (!n.error.empty()) return n.error;
  std::string status;
  try {
    int v = nvrtc_version();
    std::vector<int> archs = supported_archs(n);
    status = fmt::format("NVRTC {}.{} loaded from {} (architectures: {})", v / 1000,
                         (v % 1000) / 10, n.path, fmt::join(archs, ", "));
  } catch (const Error& e) {
    status = fmt::format("NVRTC loaded from {} but unusable: {}", n.path, e.what());
  }
  if (!n.tried.empty())
    status += fmt::format("; tried first:\n  {}", fmt::join(n.tried, "\n  "));
  return status;
}

}  // namespace parir::runtime
