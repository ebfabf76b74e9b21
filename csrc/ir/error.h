// Errors raised by the compiler and runtime.
//
// Every error a user can cause is a parir::Error. When it is about the user's code it carries a
// source location, and the message names the user's file and lines and quotes the offending
// source (see SourceInfo::describe). The Python bindings turn it into parir_torch.ParirError,
// a subclass of RuntimeError.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace parir {

struct SourceInfo;

// A span in the user's Python source, in the file's own line numbers (1-based lines, 0-based
// columns as Python's ast reports them). line == 0 means "unknown". `src` is the function the
// span is in (functions called by a jit function are inlined into it, so one program holds
// code from several functions and files); null means the program's own function.
struct Loc {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;
  const SourceInfo* src = nullptr;

  bool known() const { return line > 0; }
};

// The text of the user's function, kept so that errors can quote it.
struct SourceInfo {
  std::string filename;
  int first_line = 1;              // file line number of lines[0]
  int def_line = 0;                // file line number of the `def` (after any decorators)
  std::vector<std::string> lines;  // the function's source lines, as in the file

  // "file.py:12-13" followed by the quoted lines, or just the file name when loc is unknown.
  std::string describe(const Loc& loc) const;
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// "<file>:<lines>: <msg>" and the quoted source: how errors and warnings name the user's code.
std::string message_at(const SourceInfo& src, const Loc& loc, const std::string& msg);

// Throws an Error whose message is message_at(src, loc, msg).
[[noreturn]] void throw_at(const SourceInfo& src, const Loc& loc, const std::string& msg);

// fmt-style convenience: error(src, loc, "bad {}", x).
template <typename... Args>
[[noreturn]] void error_at(const SourceInfo& src, const Loc& loc, fmt::format_string<Args...> f,
                           Args&&... args) {
  throw_at(src, loc, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// A broken invariant of the compiler itself rather than a mistake in the user's program: a pass
// meets IR that an earlier pass should have removed or built. The message names that pass.
template <typename... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> f, Args&&... args) {
  throw Error("parir internal error: " + fmt::format(f, std::forward<Args>(args)...) +
              " (a bug in parir-torch, not in your program)");
}

// PARIR_CHECK(kernel.levels.size() > 0, "call map_parallelism before flatten_indices");
#define PARIR_CHECK(cond, ...)                              \
  do {                                                      \
    if (!(cond)) ::parir::internal_error(__VA_ARGS__);      \
  } while (0)

}  // namespace parir
