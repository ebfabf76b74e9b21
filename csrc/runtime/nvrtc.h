// NVRTC, loaded lazily: CUDA C++ source in, CUBIN (or PTX) out, in-process.
//
// libnvrtc is opened with dlopen on first use, so importing the package, generating code and
// running programs with stored binaries (stored_binaries.h) never need it, and compiling needs
// no GPU and no driver. $PARIR_NVRTC_PATH (the library or its directory), when set, is the only
// place looked at: pointing it at nothing makes NVRTC unavailable. Otherwise, in order: the
// directories given to set_library_dirs (the Python package passes the ones of the CUDA wheels
// that PyTorch depends on), an NVRTC already loaded in the process, the NVIDIA wheels next to
// the loaded LibTorch (so a C++ program linked against the pip wheel needs no setup),
// $CUDA_HOME/lib64 and $CUDA_PATH/lib64, the dynamic loader's default path, and
// /usr/local/cuda/lib64.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace parir::runtime {

// Extra directories searched for libnvrtc / libcuda before the loader's default path.
void set_library_dirs(std::vector<std::string> dirs);
std::vector<std::string> library_dirs();

struct NvrtcOptions {
  // "sm_90" compiles to CUBIN for that architecture; "compute_90" to PTX.
  std::string arch = "sm_90";
  std::vector<std::string> include_dirs;
  std::vector<std::string> extra_flags;
  // Device libraries (lib*.a, or any file the driver's linker takes) linked into the module
  // when it is loaded; the source is then compiled as relocatable device code.
  std::vector<std::string> link_libraries;
  // In-memory headers the source may #include, as (name, contents).
  std::vector<std::pair<std::string, std::string>> headers;
};

struct NvrtcOutput {
  std::string binary;  // CUBIN bytes, or PTX text (NUL-terminated) when is_cubin is false
  bool is_cubin = true;
  std::string log;     // the compiler's log (warnings), possibly empty
};

// Compiles `source` (named `name` in diagnostics). Throws parir::Error carrying NVRTC's log on
// any failure, including a missing libnvrtc.
NvrtcOutput compile_cuda(const std::string& source, const std::string& name,
                         const NvrtcOptions& opts);

// NVRTC's version as major * 1000 + minor * 10 (13.0 -> 13000). Throws if NVRTC is missing.
int nvrtc_version();

// The real architectures this NVRTC compiles for, as numbers (90 for sm_90).
std::vector<int> nvrtc_supported_archs();

// The target for a device of compute capability major.minor: "sm_XY" when this NVRTC can emit
// SASS for it, else "compute_ZW" for the newest virtual architecture it knows that is not
// newer than the device (the driver JIT-compiles that PTX).
std::string choose_arch(int major, int minor);

// Why NVRTC can or cannot be used (where it was looked for, what failed); for diagnostics.
std::string nvrtc_status();

}  // namespace parir::runtime
