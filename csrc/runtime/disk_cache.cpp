#include "runtime/disk_cache.h"

#include <pwd.h>
#include <unistd.h>

#include <c10/util/hash.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace parir::runtime {
namespace {

// Entry layout: the magic line, the payload's length in decimal and its SHA-1 in hex (a line
// each), then the payload's bytes.
constexpr char kMagic[] = "PARIRC1\n";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;
constexpr char kSuffix[] = ".bin";
constexpr size_t kDigestSize = 40;  // hex SHA-1

std::string sha1_hex(const std::string& s) { return c10::sha1(s).str(); }

fs::path entry_path(const std::string& key) { return fs::path(cache_root()) / (key + kSuffix); }

// "<40 hex digits>.bin", or a temporary file of one: cache_clear removes only these, so a root
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
  if (length != std::to_string(payload.size()) || digest != sha1_hex(payload))
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

std::string cache_key(const std::string& key_text) { return sha1_hex(key_text); }

std::optional<std::string> cache_load(const std::string& key) {
  try {
    std::ifstream in(entry_path(key), std::ios::binary);
    if (!in) return std::nullopt;
    std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) return std::nullopt;
    return parse_entry(data);
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
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kMagic << payload.size() << '\n' << sha1_hex(payload) << '\n';
    out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
    out.close();  // before the rename, and so that a failed flush shows in fail()
    if (!out.fail()) fs::rename(tmp, path, ec);
    if (out.fail() || ec) fs::remove(tmp, ec);
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
