// Type promotion rules (README.md, "Types") and the conversion of constants.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/arith.h"
#include "ir/types.h"

namespace parir {
namespace {

Type strong(ScalarType t) { return {t, false}; }
Type weak(ScalarType t) { return {t, true}; }

TEST(Promote, WeakScalarYieldsToTensorType) {
  EXPECT_EQ(promote(strong(ScalarType::F32), weak(ScalarType::F64)), strong(ScalarType::F32));
  EXPECT_EQ(promote(weak(ScalarType::I64), strong(ScalarType::I32)), strong(ScalarType::I32));
}

TEST(Promote, HigherCategoryWins) {
  EXPECT_EQ(promote(strong(ScalarType::I32), weak(ScalarType::F64)), strong(ScalarType::F64));
  EXPECT_EQ(promote(strong(ScalarType::I64), strong(ScalarType::F32)), strong(ScalarType::F32));
  EXPECT_EQ(promote(strong(ScalarType::Bool), weak(ScalarType::I64)), strong(ScalarType::I64));
}

TEST(Promote, StrongTypesWiden) {
  EXPECT_EQ(promote(strong(ScalarType::F32), strong(ScalarType::F64)), strong(ScalarType::F64));
  EXPECT_EQ(promote(strong(ScalarType::U8), strong(ScalarType::I8)), strong(ScalarType::I16));
  EXPECT_EQ(promote(strong(ScalarType::F16), strong(ScalarType::BF16)), strong(ScalarType::F32));
  EXPECT_EQ(promote(weak(ScalarType::I64), weak(ScalarType::F64)), weak(ScalarType::F64));
}

TEST(ScalarTypes, NamesRoundTrip) {
  for (auto t : {ScalarType::Bool, ScalarType::I8, ScalarType::U64, ScalarType::BF16,
                 ScalarType::F64}) {
    EXPECT_EQ(scalar_type_from_name(python_name(t)), t);
  }
  EXPECT_EQ(size_in_bytes(ScalarType::F16), 2);
  EXPECT_STREQ(cuda_name(ScalarType::I64), "int64_t");
  EXPECT_FALSE(scalar_type_from_name("complex64").has_value());
}

TEST(Conversions, ConstantsConvertAsTheGpuConvertsThem) {
  EXPECT_EQ(convert_int(200, ScalarType::I8), -56);
  EXPECT_EQ(convert_int(-1, ScalarType::U8), 255);
  EXPECT_EQ(convert_int(70000, ScalarType::I16), 4464);
  EXPECT_EQ(convert_int(-1, ScalarType::U64), -1);  // the bits of UINT64_MAX
  EXPECT_EQ(convert_float(0.1, ScalarType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(convert_float(100000.0, ScalarType::F16), INFINITY);
  EXPECT_EQ(convert_float(65519.0, ScalarType::F16), 65504.0);
  EXPECT_EQ(convert_float(65520.0, ScalarType::F16), INFINITY);  // ties to even, past the top
  EXPECT_EQ(convert_float(2049.0, ScalarType::F16), 2048.0);      // a tie: to even
  EXPECT_EQ(convert_float(1e-8, ScalarType::F16), 0.0);           // below half the smallest
  EXPECT_EQ(convert_float(6e-8, ScalarType::F16), std::ldexp(1.0, -24));  // subnormal
  EXPECT_EQ(convert_float(1.00390625, ScalarType::BF16), 1.0);    // 1 + 2^-8: a tie, to even
  EXPECT_EQ(convert_float(-3.0, ScalarType::BF16), -3.0);
}

}  // namespace
}  // namespace parir
