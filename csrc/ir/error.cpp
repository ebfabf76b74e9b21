#include "ir/error.h"

#include <algorithm>

namespace parir {

std::string SourceInfo::describe(const Loc& loc) const {
  if (!loc.known()) return filename;
  int end = std::max(loc.line, loc.end_line);
  std::string where = end > loc.line ? fmt::format("{}:{}-{}", filename, loc.line, end)
                                     : fmt::format("{}:{}", filename, loc.line);
  std::string quoted;
  for (int line = loc.line; line <= end; ++line) {
    int i = line - first_line;
    if (i < 0 || i >= static_cast<int>(lines.size())) continue;
    quoted += fmt::format("\n  {:>4} | {}", line, lines[i]);
  }
  return where + quoted;
}

std::string message_at(const SourceInfo& src, const Loc& loc, const std::string& msg) {
  if (!loc.known()) return fmt::format("{}: {}", src.filename, msg);
  std::string desc = src.describe(loc);
  // "file.py:12: message" then the quoted lines.
  size_t nl = desc.find('\n');
  std::string head = nl == std::string::npos ? desc : desc.substr(0, nl);
  std::string quote = nl == std::string::npos ? "" : desc.substr(nl);
  return fmt::format("{}: {}{}", head, msg, quote);
}

void throw_at(const SourceInfo& src, const Loc& loc, const std::string& msg) {
  throw Error(message_at(src, loc, msg));
}

}  // namespace parir
