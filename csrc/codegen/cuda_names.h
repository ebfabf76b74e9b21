// The C++ identifier of each name of a program: one mapping, used for kernel parameters, locals,
// loop variables, kernel names and the launch plan's kernel references alike.
//
// The mapping is injective, and its results never meet a name the generated code or the headers
// it includes already use. A name that is an ordinary identifier (ASCII letters, digits and
// single underscores, starting with a letter) and not reserved prints as itself, so generated
// code reads like the user's program. Every other name (a C++ keyword or alternative token such
// as `xor`, a CUDA built-in such as `threadIdx`, a macro such as `NULL`, a name with `__` or a
// leading `_`, a non-ASCII name such as `π`) becomes "parir_u_" followed by its bytes: letters
// and digits as they are, `_` as `__`, any other byte as `_` and two upper-case hex digits. That
// encoding reads back unambiguously, so two names never share an identifier, and no ordinary
// name starts with "parir", so none meets an escaped one or a name the compiler makes (parir_t,
// parir_block...). A dict entry d['k'] ("d.k" in the IR) is "d__k" when both parts are ordinary
// and no underscore touches the "__" (no ordinary name holds "__"); otherwise it is escaped.
#pragma once

#include <set>
#include <string>

namespace parir {

class CudaNames {
 public:
  // `also_reserved`: the C names of the external functions the program calls, which a local of
  // the same name would hide.
  explicit CudaNames(std::set<std::string> also_reserved = {});

  std::string operator()(const std::string& name) const;

 private:
  // Whether `name` prints as itself.
  bool is_ordinary(const std::string& name) const;

  std::set<std::string> also_reserved_;
};

// The program's name that CudaNames maps to `identifier`: the inverse of the mapping (a name
// that is not an escaped one is returned as it is).
std::string program_name(const std::string& identifier);

// `text` made safe inside a one-line // comment or a "..." literal: newlines, quotes,
// backslashes and other control characters as C escapes.
std::string escape_for_comment(const std::string& text);

}  // namespace parir
