// Binaries stored in a program's text (parir.aot): base64, the lines, and which one a GPU
// loads.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/stored_binaries.h"

namespace parir::runtime {
namespace {

TEST(Base64, StandardVectorsAndBinaryData) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes += static_cast<char>((i * 37) & 255);
  for (size_t n : {0, 1, 2, 3, 998, 999, 1000}) {
    std::string part = bytes.substr(0, n);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << n;
  }
  EXPECT_THROW(base64_decode("Zm9"), Error);
  EXPECT_THROW(base64_decode("Zm9*"), Error);
  EXPECT_THROW(base64_decode("Zg==Zm9v"), Error);
}

const char kSource[] = "extern \"C\" __global__ void f() {}\n\n//@ parir.plan f\n";

TEST(StoredBinaries, AppendedLinesSplitBackIntoTheSourceAndTheBinaries) {
  std::vector<StoredBinary> binaries = {{"sm_80", std::string("\x7f" "ELF\0\1", 6)},
                                        {"sm_90", "cubin 90"},
                                        {"compute_80", std::string("ptx\0", 4)}};
  std::string text = append_stored_binaries(kSource, binaries);
  EXPECT_NE(text.find("//% binary sm_90 cubin 8 "), std::string::npos) << text;
  SplitProgram split = split_stored_binaries(text);
  EXPECT_EQ(split.source, kSource);  // what NVRTC compiles, and the disk cache keys
  ASSERT_EQ(split.binaries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(split.binaries[i].arch, binaries[i].arch);
    EXPECT_EQ(split.binaries[i].binary, binaries[i].binary);
  }
  EXPECT_EQ(describe_archs(split.binaries), "sm_80, sm_90, compute_80");
  // A text without binaries is itself.
  EXPECT_EQ(split_stored_binaries(kSource).source, kSource);
  EXPECT_TRUE(split_stored_binaries(kSource).binaries.empty());
}

TEST(StoredBinaries, ACutOrEditedLineIsAnErrorNamingIt) {
  std::string text = append_stored_binaries(kSource, {{"sm_90", "0123456789"}});
  std::string cut = text.substr(0, text.size() - 5) + "\n";
  try {
    split_stored_binaries(cut);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stored binary on line"), std::string::npos) << e.what();
  }
  std::string wrong_size = text;
  wrong_size.replace(wrong_size.find("cubin 10"), 8, "cubin 11");
  EXPECT_THROW(split_stored_binaries(wrong_size), Error);
  EXPECT_THROW(split_stored_binaries(std::string(kSource) + "//% binary sm_9x cubin 0 \n"), Error);
  EXPECT_THROW(split_stored_binaries(std::string(kSource) + "//% binary sm_90 ptx 0 \n"), Error);
}

TEST(StoredBinaries, AGpuLoadsCompatibleCubinElsePtxNotNewerThanIt) {
  std::vector<StoredBinary> b = {{"sm_80", "a"}, {"sm_86", "b"}, {"sm_90", "c"},
                                 {"compute_80", "p"}};
  EXPECT_EQ(binary_for_device(b, 8, 0)->arch, "sm_80");
  EXPECT_EQ(binary_for_device(b, 8, 6)->arch, "sm_86");
  EXPECT_EQ(binary_for_device(b, 8, 9)->arch, "sm_86");  // SASS of 8.6 runs on 8.9
  EXPECT_EQ(binary_for_device(b, 9, 0)->arch, "sm_90");
  EXPECT_EQ(binary_for_device(b, 10, 0)->arch, "compute_80");  // another major: the PTX
  EXPECT_EQ(binary_for_device(b, 7, 5), nullptr);  // older than everything stored: NVRTC
  std::vector<StoredBinary> no_ptx = {{"sm_90", "c"}};
  EXPECT_EQ(binary_for_device(no_ptx, 12, 0), nullptr);
}

}  // namespace
}  // namespace parir::runtime
