// Warns where a loop variable (or an expression of loop variables) meets a typed integer
// narrower than itself and takes values that the narrow type cannot hold: `img[y, x - bpp]`
// with `bpp` a NumPy uint8 and x running to 548. Loop variables are weak ints, as Python's ints
// are in PyTorch, so `x - bpp` is a uint8 and wraps at 256, as the same code does in PyTorch
// (and seq=True); rarely what an index means. A warning naming the statement and the remedy
// (parir.int64(bpp)), not an error: the typing is PyTorch's. Needs constant loop bounds
// (simplify) and typed IR with its conversions explicit (infer_types).
#pragma once

#include "ir/specialized_function.h"

namespace parir {

void warn_narrowed_loop_variables(SpecializedFunction& prog);

}  // namespace parir
