// The disk cache and its hash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "runtime/disk_cache.h"
#include "runtime/sha256.h"

namespace parir::runtime {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, StandardTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

class DiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("parir_cache_test_{}", ::getpid());
    fs::remove_all(root_);
    setenv("PARIR_CACHE_DIR", root_.c_str(), 1);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(DiskCache, StoresLoadsAndClears) {
  std::string key = cache_key("source + options + arch");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_FALSE(cache_load(key).has_value());
  std::string payload("binary\0with\nnul", 15);
  cache_store(key, payload);
  EXPECT_EQ(cache_load(key), payload);
  std::ofstream(root_ / "user_file.bin") << "not ours";
  EXPECT_EQ(cache_clear(), 1);
  EXPECT_FALSE(cache_load(key).has_value());
  EXPECT_TRUE(fs::exists(root_ / "user_file.bin"));  // only cache entries are removed
}

TEST_F(DiskCache, TruncatedOrCorruptEntriesAreMisses) {
  std::string key = cache_key("k");
  cache_store(key, std::string(4096, 'x'));
  fs::path entry;
  for (const auto& e : fs::directory_iterator(root_)) entry = e.path();
  fs::resize_file(entry, fs::file_size(entry) - 10);
  EXPECT_FALSE(cache_load(key).has_value());
  cache_store(key, std::string(4096, 'x'));
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('y');
  }
  EXPECT_FALSE(cache_load(key).has_value());
  cache_store(key, "fresh");
  EXPECT_EQ(cache_load(key), "fresh");
}

}  // namespace
}  // namespace parir::runtime
