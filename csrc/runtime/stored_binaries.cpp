#include "runtime/stored_binaries.h"

#include <algorithm>
#include <cstdint>

#include "ir/error.h"

namespace parir::runtime {
namespace {

constexpr char kPrefix[] = "//%";
constexpr char kBinary[] = "//% binary ";
constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "//% binary ARCH KIND SIZE BASE64"
StoredBinary parse_line(const std::string& line, int number) {
  auto bad = [&](const std::string& why) -> StoredBinary {
    fail("stored binary on line {} of the program: {} (the text may have been cut or edited; "
         "store the binaries again with parir.aot)",
         number, why);
  };
  std::vector<std::string> words;
  size_t pos = sizeof(kBinary) - 1;
  while (words.size() < 4 && pos < line.size()) {
    size_t end = line.find(' ', pos);
    if (end == std::string::npos) end = line.size();
    words.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  if (words.size() != 4) return bad("expected '//% binary ARCH KIND SIZE DATA'");
  StoredBinary b;
  b.arch = words[0];
  bool sm = starts_with(b.arch, "sm_"), compute = starts_with(b.arch, "compute_");
  if ((!sm && !compute) || !all_digits(b.arch.substr(sm ? 3 : 8)))
    return bad("unknown architecture '" + b.arch + "'");
  if (words[1] != (sm ? "cubin" : "ptx"))
    return bad("an " + b.arch + " binary must be " + (sm ? "cubin" : "ptx"));
  if (!all_digits(words[2]) || words[2].size() > 12) return bad("bad size '" + words[2] + "'");
  try {
    b.binary = base64_decode(words[3]);
  } catch (const Error& e) {
    return bad(e.what());
  }
  if (std::to_string(b.binary.size()) != words[2])
    return bad(fmt::format("{} bytes where the line says {}", b.binary.size(), words[2]));
  return b;
}

}  // namespace

int StoredBinary::number() const { return std::stoi(arch.substr(is_cubin() ? 3 : 8)); }

SplitProgram split_stored_binaries(const std::string& text) {
  SplitProgram out;
  if (text.find(kPrefix) == std::string::npos) {
    out.source = text;
    return out;
  }
  out.source.reserve(text.size());
  size_t start = 0;
  int number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    size_t next = end == std::string::npos ? text.size() : end + 1;
    std::string line = text.substr(start, (end == std::string::npos ? text.size() : end) - start);
    ++number;
    if (starts_with(line, kBinary))
      out.binaries.push_back(parse_line(line, number));
    else if (!starts_with(line, kPrefix))  // other "//%" lines are comments of this section
      out.source.append(text, start, next - start);
    start = next;
  }
  return out;
}

std::string append_stored_binaries(const std::string& source,
                                   const std::vector<StoredBinary>& binaries) {
  std::string out = source;
  if (binaries.empty()) return out;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += fmt::format(
      "//% Binaries stored by parir.aot ({}): the runtime loads the one that runs on the GPU, "
      "without NVRTC\n",
      describe_archs(binaries));
  for (const auto& b : binaries)
    out += fmt::format("{}{} {} {} {}\n", kBinary, b.arch, b.is_cubin() ? "cubin" : "ptx",
                       b.binary.size(), base64_encode(b.binary));
  return out;
}

const StoredBinary* binary_for_device(const std::vector<StoredBinary>& binaries, int major,
                                      int minor) {
  const int device = major * 10 + minor;
  const StoredBinary* best = nullptr;
  // SASS for X.y runs on X.z for z >= y.
  for (const auto& b : binaries)
    if (b.is_cubin() && b.number() / 10 == major && b.number() <= device &&
        (!best || b.number() > best->number()))
      best = &b;
  if (best) return best;
  // PTX for an architecture not newer than the device's; the newest such.
  for (const auto& b : binaries)
    if (!b.is_cubin() && b.number() <= device && (!best || b.number() > best->number()))
      best = &b;
  return best;
}

std::string describe_archs(const std::vector<StoredBinary>& binaries) {
  std::string out;
  for (const auto& b : binaries) out += (out.empty() ? "" : ", ") + b.arch;
  return out;
}

std::string base64_encode(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string& text) {
  if (text.size() % 4 != 0) fail("base64 text of {} characters (not a multiple of 4)", text.size());
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=');
    if (pad && i + 4 != text.size()) fail("base64 padding before the end of the text");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int d = k >= 4 - pad ? 0 : value(text[i + k]);
      if (d < 0) fail("'{}' is not a base64 character", text[i + k]);
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out += static_cast<char>((v >> 16) & 255);
    if (pad < 2) out += static_cast<char>((v >> 8) & 255);
    if (pad < 1) out += static_cast<char>(v & 255);
  }
  return out;
}

}  // namespace parir::runtime
