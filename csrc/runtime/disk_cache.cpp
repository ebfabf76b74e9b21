#include "runtime/disk_cache.h"

#include <pwd.h>
#include <unistd.h>

#include "runtime/sha256.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <iterator>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace parir::runtime {
namespace {

// Entry layout: the magic line, the payload's length in decimal and its SHA-256 in hex (a line
// each), then the payload's bytes.
constexpr char kMagic[] = "PARIRC2\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr char kSuffix[] = ".bin";
constexpr size_t kDigestSize = 64;  // hex SHA-256

fs::path entry_path(const std::string& key) { return fs::path(cache_root()) / (key + kSuffix); }

// "<64 hex digits>.bin", or a temporary file of one: cache_clear removes only these, so a root
// pointed at a directory that holds other files loses none of them.
bool is_entry_name(const std::string& name) {
  if (name.size() < kDigestSize + 4) return false;
  for (size_t i = 0; i < kDigestSize; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  std::string rest = name.substr(kDigestSize);
  return rest == kSuffix || rest.rfind(std::string(kSuffix) + ".tmp.", 0) == 0;
}

std::optional<std::string> parse_entry(const std::string& data) {
  if (data.compare(0, kMagicSize, kMagic) != 0) return std::nullopt;
  size_t length_end = data.find('\n', kMagicSize);
  if (length_end == std::string::npos) return std::nullopt;
  size_t digest_end = data.find('\n', length_end + 1);
  if (digest_end == std::string::npos) return std::nullopt;
  std::string length = data.substr(kMagicSize, length_end - kMagicSize);
  std::string digest = data.substr(length_end + 1, digest_end - length_end - 1);
  std::string payload = data.substr(digest_end + 1);
  // Comparing the length's text rather than parsing it leaves nothing to overflow.
  if (length != std::to_string(payload.size()) || digest != sha256_hex(payload))
    return std::nullopt;
  return payload;
}

}  // namespace

std::string cache_root() {
  if (const char* p = std::getenv("PARIR_CACHE_DIR"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "parir_torch").string();
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : nullptr;
  }
  if (home && *home) return (fs::path(home) / ".cache" / "parir_torch").string();
  // Per user: another user's entries would be code this process runs on its GPU.
  return (fs::temp_directory_path() / fmt::format("parir_torch-{}", getuid())).string();
}

std::string cache_key(const std::string& key_text) { return sha256_hex(key_text); }

namespace {

// C stdio rather than iostreams: the extension may be linked against a private static
// libstdc++ (some toolchains do that), whose iostream locale facets then clash with the
// process's shared libstdc++; plain byte I/O has no such state.
std::optional<std::string> read_file(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  if (!ok) return std::nullopt;
  return data;
}

bool write_file(const fs::path& path, const std::string& data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

std::optional<std::string> cache_load(const std::string& key) {
  try {
    std::optional<std::string> data = read_file(entry_path(key));
    if (!data) return std::nullopt;
    return parse_entry(*data);
  } catch (const std::exception&) {
    return std::nullopt;  // an unreadable entry is a miss, like a missing one
  }
}

void cache_store(const std::string& key, const std::string& payload) {
  try {
    std::error_code ec;
    fs::path path = entry_path(key);
    fs::create_directories(path.parent_path(), ec);
    if (ec) return;
    // A name no other writer, in this process or another (pids repeat across containers that
    // share a cache), will use; the rename makes the entry appear whole or not at all.
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    fs::path tmp = path;
    tmp += fmt::format(".tmp.{}.{:016x}", getpid(), rng());
    std::string entry = fmt::format("{}{}\n{}\n", kMagic, payload.size(), sha256_hex(payload));
    entry += payload;
    bool written = write_file(tmp, entry);
    if (written) fs::rename(tmp, path, ec);
    if (!written || ec) fs::remove(tmp, ec);
  } catch (const std::exception&) {
    // Best effort, as documented: the caller has the binary either way.
  }
}

int cache_clear() {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(cache_root(), ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (is_entry_name(it->path().filename().string()) && it->is_regular_file(type_ec))
      entries.push_back(it->path());
  }
  int removed = 0;
  for (const auto& p : entries)
    if (fs::remove(p, ec)) ++removed;
  return removed;
}

}  // namespace parir::runtime
