// The specialization key of a cached call's arguments, built in C++ on the hot path.
#pragma once

#include <torch/extension.h>

#include <cstring>
#include <string>

namespace parir {

// Adds to the module:
//   call_key(args: tuple) -> bytes | None
//     The arguments of a call as one bytes value, equal for two calls exactly when their
//     arguments are alike for specialization: Python bools, ints (int64) and floats by type and
//     value (a float by its bits), tensors of the registered types by dtype, device, shape and
//     strides. None when some argument is anything else (a 0-d, sparse or unregistered
//     tensor, a dict, a NumPy scalar, an int beyond int64): those calls take the path that
//     converts arguments.
//   register_key_tensor_type(type) -> None
//     Makes tensors of exactly this type (torch.Tensor, nn.Parameter, ...) part of call_key.
void add_call_key(pybind11::module& m);

// Appends the bytes of a value of trivially copyable type (the keys' fixed-width fields).
template <typename T> void put_bytes(std::string& out, const T& v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

// call_key's encoding of the argument tuple `args`, appended to `out`; false when call_key
// would return None.
bool encode_arguments(PyObject* args, std::string& out);

}  // namespace parir
