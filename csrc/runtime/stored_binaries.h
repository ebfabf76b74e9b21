// Compiled binaries stored in a program's text, so that a deployed program starts without
// NVRTC and without a compile pause (parir.aot).
//
// They follow the launch plan, one line each:
//
//   //% binary sm_90 cubin 10432 <base64 of the 10432 bytes>
//   //% binary compute_80 ptx 30211 <base64>
//
// The runtime loads the CUBIN that runs on the GPU (the same major architecture, the newest
// minor one not newer than the device's: CUDA's SASS compatibility), else the PTX when it is
// for an architecture not newer than the device's (the driver compiles it), else compiles the
// source with NVRTC as for any program. These lines are not part of the plan (`//@`), and the
// source compiled by NVRTC, and keyed in the disk cache, is the text without them.
//
// Torch- and CUDA-free.
#pragma once

#include <string>
#include <vector>

namespace parir::runtime {

struct StoredBinary {
  std::string arch;    // "sm_90" (CUBIN) or "compute_80" (PTX)
  std::string binary;  // the bytes: CUBIN, or PTX text with its terminating NUL
  bool is_cubin() const { return arch.rfind("sm_", 0) == 0; }
  // The architecture's number: sm_90 -> 90.
  int number() const;
};

struct SplitProgram {
  std::string source;                 // the text without the binary lines
  std::vector<StoredBinary> binaries;  // in the order of the text
};

// Separates the binary lines from the rest of the text; throws parir::Error naming the line
// when one is malformed (a corrupt copy of the text).
SplitProgram split_stored_binaries(const std::string& text);

// `source` (without binary lines) followed by the lines of `binaries`.
std::string append_stored_binaries(const std::string& source,
                                   const std::vector<StoredBinary>& binaries);

// The binary to load on a device of compute capability major.minor, or null (see above).
const StoredBinary* binary_for_device(const std::vector<StoredBinary>& binaries, int major,
                                      int minor);

// "sm_80, sm_90, compute_80", for messages.
std::string describe_archs(const std::vector<StoredBinary>& binaries);

std::string base64_encode(const std::string& bytes);
// Throws parir::Error on a character outside the alphabet or a bad length.
std::string base64_decode(const std::string& text);

}  // namespace parir::runtime
