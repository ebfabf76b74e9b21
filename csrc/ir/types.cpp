#include "ir/types.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace parir {

const char* python_name(ScalarType t) {
  switch (t) {
#define X(e, py, cu, sz) \
  case ScalarType::e:    \
    return py;
    PARIR_FOR_EACH_SCALAR_TYPE(X)
#undef X
    case ScalarType::Unknown:
      break;
  }
  return "unknown";
}

const char* cuda_name(ScalarType t) {
  switch (t) {
#define X(e, py, cu, sz) \
  case ScalarType::e:    \
    return cu;
    PARIR_FOR_EACH_SCALAR_TYPE(X)
#undef X
    case ScalarType::Unknown:
      break;
  }
  return "void";
}

int size_in_bytes(ScalarType t) {
  switch (t) {
#define X(e, py, cu, sz) \
  case ScalarType::e:    \
    return sz;
    PARIR_FOR_EACH_SCALAR_TYPE(X)
#undef X
    case ScalarType::Unknown:
      break;
  }
  return 0;
}

std::optional<ScalarType> scalar_type_from_name(const std::string& name) {
#define X(e, py, cu, sz) \
  if (name == py) return ScalarType::e;
  PARIR_FOR_EACH_SCALAR_TYPE(X)
#undef X
  return std::nullopt;
}

bool is_float(ScalarType t) {
  return t == ScalarType::F16 || t == ScalarType::BF16 || t == ScalarType::F32 ||
         t == ScalarType::F64;
}

bool is_signed_int(ScalarType t) {
  return t == ScalarType::I8 || t == ScalarType::I16 || t == ScalarType::I32 ||
         t == ScalarType::I64;
}

bool is_unsigned_int(ScalarType t) {
  return t == ScalarType::U8 || t == ScalarType::U16 || t == ScalarType::U32 ||
         t == ScalarType::U64;
}

std::string Type::str() const {
  return weak ? fmt::format("{}(weak)", python_name(scalar)) : std::string(python_name(scalar));
}

namespace {

int category(ScalarType t) { return is_bool(t) ? 0 : is_int(t) ? 1 : 2; }

// The wider of two strong types of one category, PyTorch style: signed and unsigned integers of
// one width promote to the next signed width (uint8 + int8 -> int16).
ScalarType wider(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (is_float(a)) {
    // float16 and bfloat16 meet in float32.
    if ((a == ScalarType::F16 && b == ScalarType::BF16) ||
        (a == ScalarType::BF16 && b == ScalarType::F16))
      return ScalarType::F32;
    return size_in_bytes(a) >= size_in_bytes(b) ? a : b;
  }
  if (is_signed_int(a) == is_signed_int(b)) return size_in_bytes(a) >= size_in_bytes(b) ? a : b;
  ScalarType s = is_signed_int(a) ? a : b;
  ScalarType u = is_signed_int(a) ? b : a;
  if (size_in_bytes(s) > size_in_bytes(u)) return s;
  switch (size_in_bytes(u)) {
    case 1:
      return ScalarType::I16;
    case 2:
      return ScalarType::I32;
    default:
      return ScalarType::I64;
  }
}

}  // namespace

Type promote(Type a, Type b) {
  if (!a.known() || !b.known()) return Type{};
  int ca = category(a.scalar), cb = category(b.scalar);
  if (ca != cb) {
    const Type& hi = ca > cb ? a : b;
    const Type& lo = ca > cb ? b : a;
    // A weak value of the higher category meeting a strong one of a lower category takes the
    // default type of its category (int * 2.5 is float64), as in PyTorch.
    if (hi.weak && !lo.weak) return Type{hi.scalar, false};
    return hi;
  }
  if (a.weak != b.weak) return a.weak ? b : a;
  return Type{wider(a.scalar, b.scalar), a.weak && b.weak};
}

std::string TensorType::str() const {
  return fmt::format("{}[{}]", python_name(elem), fmt::join(shape, ", "));
}

std::pair<int64_t, int64_t> int_limits(ScalarType t) {
  const int bits = 8 * size_in_bytes(t);
  if (is_unsigned_int(t)) return {0, bits >= 64 ? INT64_MAX : (int64_t{1} << bits) - 1};
  if (bits >= 64) return {INT64_MIN, INT64_MAX};
  return {-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1};
}

}  // namespace parir
