// SHA-256 (FIPS 180-4), for disk-cache keys and entry checksums.
//
// Written here rather than taken from PyTorch: c10/util/hash.h's SHA-1 shifts signed values past
// their width and leaves its state uninitialized for empty input, and crashed in testing; the
// other candidates (OpenSSL and friends) are not available in PyTorch's wheels.
#pragma once

#include <string>

namespace parir::runtime {

// The lowercase hex SHA-256 digest of `data`.
std::string sha256_hex(const std::string& data);

}  // namespace parir::runtime
