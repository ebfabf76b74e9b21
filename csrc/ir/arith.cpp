#include "ir/arith.h"

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

}  // namespace parir
