#include "ir/arith.h"

#include <algorithm>
#include <cmath>

namespace parir {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinaryOp::Add:
      return wrap(ua + ub);
    case BinaryOp::Sub:
      return wrap(ua - ub);
    case BinaryOp::Mul:
      return wrap(ua * ub);
    case BinaryOp::FloorDiv:
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      return floor_div(a, b);
    case BinaryOp::Mod:
      if (b == 0 || b == -1) return b == -1 ? std::optional<int64_t>(0) : std::nullopt;
      return floor_mod(a, b);
    case BinaryOp::BitAnd:
      return a & b;
    case BinaryOp::BitOr:
      return a | b;
    case BinaryOp::BitXor:
      return a ^ b;
    case BinaryOp::Shl:
      if (b < 0 || b > 63) return std::nullopt;
      return wrap(ua << b);
    case BinaryOp::Shr:
      if (b < 0 || b > 63) return std::nullopt;
      return a >> b;
    case BinaryOp::Pow: {
      if (b < 0) return std::nullopt;
      uint64_t r = 1, base = ua;
      for (int64_t e = b; e > 0; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return wrap(r);
    }
    default:
      return std::nullopt;
  }
}

int64_t convert_int(int64_t v, ScalarType t) {
  const int bits = 8 * size_in_bytes(t);
  if (bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (is_signed_int(t) && (u >> (bits - 1)) != 0) u |= ~mask;  // sign-extend
  return wrap(u);
}

double convert_float(double v, ScalarType t) {
  if (t == ScalarType::F64 || v == 0 || !std::isfinite(v)) return v;
  if (t == ScalarType::F32) return static_cast<double>(static_cast<float>(v));
  // float16: 11 significant bits, normal exponents from -14, largest 65504; bfloat16: 8 bits,
  // float32's exponents.
  const bool half = t == ScalarType::F16;
  const int digits = half ? 11 : 8;
  const int min_exp = half ? -14 : -126;
  const double largest = half ? 65504.0 : 3.3895313892515355e38;
  int e = std::max(std::ilogb(v), min_exp);  // below min_exp: the subnormals' fixed spacing
  double ulp = std::ldexp(1.0, e - (digits - 1));
  double r = std::nearbyint(v / ulp) * ulp;  // the default rounding mode: ties to even
  if (std::fabs(r) > largest) return std::copysign(INFINITY, v);
  return r;
}

}  // namespace parir
