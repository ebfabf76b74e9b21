// The CUDA driver API, loaded lazily from libcuda.so.1.
//
// Only the entry points parir needs are looked up. Every call's result is checked; a failure
// throws parir::Error naming the call and the driver's error string.
#pragma once

#include <cuda.h>

#include <string>

namespace parir::runtime {

struct Driver {
  // The loaded driver; throws parir::Error (saying why) when libcuda cannot be loaded.
  static const Driver& get();
  // True when libcuda can be loaded and reports at least one device; never throws.
  static bool available(std::string* why = nullptr);

  CUresult (*cuInit)(unsigned int);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
  // CUDA graphs (CompileOptions.use_cuda_graphs). Named as the library exports them: cuda.h
  // maps cuStreamBeginCapture and cuGraphInstantiate to these.
  CUresult (*cuStreamCreate)(CUstream*, unsigned int);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuStreamBeginCapture_v2)(CUstream, CUstreamCaptureMode);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  // The error buffer of bounds-checked programs (CompileOptions.bounds_check).
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  // Launches with a thread block cluster size.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  // Whether a persistent loop's cluster fits on the device.
  CUresult (*cuOccupancyMaxActiveClusters)(int*, CUfunction, const CUlaunchConfig*);
  // The JIT linker, for programs that link device libraries (CompileOptions.libs).
  CUresult (*cuLinkCreate_v2)(unsigned int, CUjit_option*, void**, CUlinkState*);
  CUresult (*cuLinkAddData_v2)(CUlinkState, CUjitInputType, void*, size_t, const char*,
                               unsigned int, CUjit_option*, void**);
  CUresult (*cuLinkAddFile_v2)(CUlinkState, CUjitInputType, const char*, unsigned int,
                               CUjit_option*, void**);
  CUresult (*cuLinkComplete)(CUlinkState, void**, size_t*);
  CUresult (*cuLinkDestroy)(CUlinkState);

  // Throws parir::Error("<what>: <driver error name>: <description>") unless r == CUDA_SUCCESS.
  void check(CUresult r, const char* what) const;
};

// Makes device `ordinal`'s primary context current on this thread (retaining it once).
void make_context_current(int ordinal);

// The compute capability of device `ordinal` as (major, minor).
std::pair<int, int> compute_capability(int ordinal);

}  // namespace parir::runtime
