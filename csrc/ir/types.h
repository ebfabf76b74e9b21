// Element types of values and tensors.
//
// Python ints are I64 and Python floats F64. Literals and Python scalar arguments are "weak"
// (see Type::weak): like Python numbers in PyTorch, they take the type of the typed operand they
// meet, so `x[i] * 2.0` stays float32 when x is a float32 tensor. README.md ("Types") gives the
// rules.
#pragma once

#include <utility>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parir {

// The list of element types, written once: (enumerator, Python name, CUDA C++ name, bytes).
#define PARIR_FOR_EACH_SCALAR_TYPE(X)         \
  X(Bool, "bool", "bool", 1)                  \
  X(I8, "int8", "int8_t", 1)                  \
  X(I16, "int16", "int16_t", 2)               \
  X(I32, "int32", "int32_t", 4)               \
  X(I64, "int64", "int64_t", 8)               \
  X(U8, "uint8", "uint8_t", 1)                \
  X(U16, "uint16", "uint16_t", 2)             \
  X(U32, "uint32", "uint32_t", 4)             \
  X(U64, "uint64", "uint64_t", 8)             \
  X(F16, "float16", "__half", 2)              \
  X(BF16, "bfloat16", "__nv_bfloat16", 2)     \
  X(F32, "float32", "float", 4)               \
  X(F64, "float64", "double", 8)

enum class ScalarType : uint8_t {
#define X(e, py, cu, sz) e,
  PARIR_FOR_EACH_SCALAR_TYPE(X)
#undef X
      Unknown,
};

const char* python_name(ScalarType t);  // "float32"
const char* cuda_name(ScalarType t);    // "float"
int size_in_bytes(ScalarType t);
std::optional<ScalarType> scalar_type_from_name(const std::string& python_name);

bool is_float(ScalarType t);
bool is_signed_int(ScalarType t);
bool is_unsigned_int(ScalarType t);
inline bool is_int(ScalarType t) { return is_signed_int(t) || is_unsigned_int(t); }
// The smallest and largest value of an integer type, as int64 (uint64's largest is cut to
// INT64_MAX, the largest value the compiler's integers hold).
std::pair<int64_t, int64_t> int_limits(ScalarType t);
inline bool is_half(ScalarType t) { return t == ScalarType::F16 || t == ScalarType::BF16; }  // float16, bfloat16
inline bool is_bool(ScalarType t) { return t == ScalarType::Bool; }

// The type of a scalar value in the IR. `weak` marks literals and Python scalar arguments,
// whose precision yields to the other operand of an arithmetic operation.
struct Type {
  ScalarType scalar = ScalarType::Unknown;
  bool weak = false;

  bool known() const { return scalar != ScalarType::Unknown; }
  bool operator==(const Type& o) const { return scalar == o.scalar && weak == o.weak; }
  bool operator!=(const Type& o) const { return !(*this == o); }
  std::string str() const;
};

// The result type of arithmetic between a and b, following PyTorch's promotion rules for a
// strong type meeting a weak one: the category (bool < int < float) is the higher one; within
// it a strong type wins over a weak one; two strong types promote to the wider one.
Type promote(Type a, Type b);

// A tensor argument as seen by the compiler after specialization.
struct TensorType {
  ScalarType elem = ScalarType::Unknown;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements

  int rank() const { return static_cast<int>(shape.size()); }
  std::string str() const;  // "float32[1000, 517]"
};

}  // namespace parir
