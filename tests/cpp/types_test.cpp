// Type promotion rules (README.md, "Types").
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace parir
