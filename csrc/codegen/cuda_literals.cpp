#include "codegen/cuda_literals.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace parir {

std::string int_literal(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::I64:
      return v == INT64_MIN ? "(-9223372036854775807L - 1)" : fmt::format("{}L", v);
    case ScalarType::I32:
      return v == INT32_MIN ? "(-2147483647 - 1)" : fmt::format("{}", v);
    case ScalarType::U64:
      return fmt::format("{}UL", static_cast<uint64_t>(v));
    case ScalarType::U32:
      return fmt::format("{}U", static_cast<uint32_t>(v));
    default:
      return fmt::format("(({}){})", cuda_name(t), v);
  }
}

std::string float_literal(double v, ScalarType t) {
  // Half types have no literals: convert the double constant, rounding once.
  if (t == ScalarType::F16) return fmt::format("__double2half({})", float_literal(v, ScalarType::F64));
  if (t == ScalarType::BF16)
    return fmt::format("__double2bfloat16({})", float_literal(v, ScalarType::F64));
  const char* ty = t == ScalarType::F32 ? "float" : "double";
  if (std::isinf(v)) return fmt::format("{}parir::inf<{}>()", v < 0 ? "-" : "", ty);
  if (std::isnan(v)) return fmt::format("parir::nan<{}>()", ty);
  std::string s = t == ScalarType::F32 ? fmt::format("{:.9g}", static_cast<float>(v))
                                       : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return t == ScalarType::F32 ? s + "f" : s;
}

const char* cuda_operator(BinaryOp op) {
  switch (op) {
    case BinaryOp::And:
      return "&&";
    case BinaryOp::Or:
      return "||";
    default:
      return python_symbol(op);
  }
}

}  // namespace parir
