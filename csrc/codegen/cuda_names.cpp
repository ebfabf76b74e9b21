#include "codegen/cuda_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

namespace parir {

namespace {

// C++20's keywords and alternative tokens: never identifiers.
constexpr std::array<std::string_view, 92> kKeywords = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char16_t", "char32_t", "char8_t", "class", "co_await", "co_return",
    "co_yield", "compl", "concept", "const", "const_cast", "consteval", "constexpr", "constinit",
    "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum",
    "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline",
    "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef",
    "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
    "while", "xor", "xor_eq"};

// Names NVRTC's headers and the prelude declare at global scope, which a kernel of the same name
// would clash with (an extern "C" function cannot share its name; `main` cannot be a kernel),
// or which the generated code uses inside kernels, where a local of the same name would hide
// them. Found by compiling, with NVRTC and the prelude, a kernel and a local named by every
// identifier of the CUDA headers; names starting with cuda, CUDA, CU_, NV_, parir or PARIR, or
// holding "__", are covered by prefix instead.
constexpr std::string_view kGlobalNames[] = {
    // CUDA built-ins, types and macros
    "NULL", "WARP_SZ", "assert", "blockDim", "blockIdx", "clock64", "clock_t", "dim3", "free",
    "gridDim", "half", "half2", "int16_t", "int32_t", "int64_t", "int8_t", "intptr_t", "main",
    "malloc", "nv_bfloat16", "nv_bfloat162", "nv_half", "nv_half2", "printf", "ptrdiff_t", "size_t", "std",
    "threadIdx", "uint16_t", "uint32_t", "uint64_t", "uint8_t", "uintptr_t", "va_arg", "va_copy",
    "va_end", "va_list", "va_start", "warpSize", "classes", "structure", "unique",
    // The math library and the vector constructors
    "abs", "acos", "acosf", "acosh", "acoshf", "asin", "asinf", "asinh", "asinhf", "atan",
    "atan2", "atan2f", "atanf", "atanh", "atanhf", "cbrt", "cbrtf", "ceil", "ceilf", "copysign",
    "copysignf", "cos", "cosf", "cosh", "coshf", "cospi", "cospif", "cyl_bessel_i0",
    "cyl_bessel_i0f", "cyl_bessel_i1", "cyl_bessel_i1f", "erf", "erfc", "erfcf", "erfcinv",
    "erfcinvf", "erfcx", "erfcxf", "erff", "erfinv", "erfinvf", "exp", "exp10", "exp10f", "exp2",
    "exp2f", "expf", "expm1", "expm1f", "fabs", "fabsf", "fdim", "fdimf", "fdivide", "fdividef",
    "floor", "floorf", "fma", "fmaf", "fmax", "fmaxf", "fmin", "fminf", "fmod", "fmodf", "frexp",
    "frexpf", "hypot", "hypotf", "ilogb", "ilogbf", "isfinite", "isinf", "isnan", "j0", "j0f",
    "j1", "j1f", "jn", "jnf", "labs", "ldexp", "ldexpf", "lgamma", "lgammaf", "llabs", "llmax",
    "llmin", "llrint", "llrintf", "llround", "llroundf", "log", "log10", "log10f", "log1p",
    "log1pf", "log2", "log2f", "logb", "logbf", "logf", "lrint", "lrintf", "lround", "lroundf",
    "make_char1", "make_char2", "make_char3", "make_char4", "make_double1", "make_double2",
    "make_double3", "make_double4", "make_double4_16a", "make_double4_32a", "make_float1",
    "make_float2", "make_float3", "make_float4", "make_int1", "make_int2", "make_int3",
    "make_int4", "make_long1", "make_long2", "make_long3", "make_long4", "make_longlong1",
    "make_longlong2", "make_longlong3", "make_longlong4", "make_longlong4_16a",
    "make_longlong4_32a", "max", "min", "modf", "modff", "nan", "nanf", "nearbyint",
    "nearbyintf", "nextafter", "nextafterf", "norm", "norm3d", "norm3df", "norm4d", "norm4df",
    "normcdf", "normcdff", "normcdfinv", "normcdfinvf", "normf", "pow", "powf", "rcbrt",
    "rcbrtf", "remainder", "remainderf", "remquo", "remquof", "rhypot", "rhypotf", "rint",
    "rintf", "rnorm", "rnorm3d", "rnorm3df", "rnorm4d", "rnorm4df", "rnormf", "round", "roundf",
    "rsqrt", "rsqrtf", "scalbln", "scalblnf", "scalbn", "scalbnf", "signbit", "sin", "sincos",
    "sincosf", "sincospi", "sincospif", "sinf", "sinh", "sinhf", "sinpi", "sinpif", "sqrt",
    "sqrtf", "tan", "tanf", "tanh", "tanhf", "tgamma", "tgammaf", "trunc", "truncf", "ullmax",
    "ullmin", "umax", "umin", "y0", "y0f", "y1", "y1f", "yn", "ynf"};

constexpr std::string_view kReservedPrefixes[] = {"parir", "PARIR", "cuda", "CUDA", "CU_", "NV_"};

constexpr std::string_view kEscapePrefix = "parir_u_";

bool is_ascii_alnum(char c) {
  auto u = static_cast<unsigned char>(c);
  return u < 0x80 && std::isalnum(u);
}

// Letters, digits and underscores only, the first a letter.
bool is_ascii_identifier(const std::string& s) {
  return !s.empty() && is_ascii_alnum(s[0]) && !std::isdigit(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char c) { return is_ascii_alnum(c) || c == '_'; });
}

template <typename Range>
bool contains(const Range& names, std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// A dict key that can follow "__" in a dict entry's identifier: letters, digits and single
// underscores, neither first nor last.
bool is_simple_key(const std::string& key) {
  return !key.empty() && key.front() != '_' && key.back() != '_' &&
         key.find("__") == std::string::npos &&
         std::all_of(key.begin(), key.end(), [](char c) { return is_ascii_alnum(c) || c == '_'; });
}

}  // namespace

CudaNames::CudaNames(std::set<std::string> also_reserved)
    : also_reserved_(std::move(also_reserved)) {}

bool CudaNames::is_ordinary(const std::string& name) const {
  if (!is_ascii_identifier(name) || name.find("__") != std::string::npos) return false;
  for (auto prefix : kReservedPrefixes)
    if (std::string_view(name).substr(0, prefix.size()) == prefix) return false;
  return !contains(kKeywords, name) && !contains(kGlobalNames, name) &&
         !also_reserved_.count(name);
}

std::string CudaNames::operator()(const std::string& name) const {
  if (is_ordinary(name)) return name;
  // A dict entry d['k'] ("d.k" in the IR) reads "d__k" when that splits back uniquely: no
  // ordinary name holds "__", and neither part has an underscore next to it.
  if (size_t dot = name.find('.'); dot != std::string::npos) {
    std::string dict = name.substr(0, dot), key = name.substr(dot + 1);
    if (is_ordinary(dict) && dict.back() != '_' && is_simple_key(key)) return dict + "__" + key;
  }
  std::string out(kEscapePrefix);
  for (char c : name) {
    if (is_ascii_alnum(c))
      out += c;
    else if (c == '_')
      out += "__";
    else
      out += fmt::format("_{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

std::string program_name(const std::string& identifier) {
  if (identifier.compare(0, kEscapePrefix.size(), kEscapePrefix) != 0) {
    size_t sep = identifier.find("__");
    if (sep == std::string::npos) return identifier;
    return identifier.substr(0, sep) + "." + identifier.substr(sep + 2);
  }
  std::string out;
  for (size_t i = kEscapePrefix.size(); i < identifier.size(); ++i) {
    if (identifier[i] != '_') {
      out += identifier[i];
    } else if (i + 1 < identifier.size() && identifier[i + 1] == '_') {
      out += '_';
      ++i;
    } else if (i + 2 < identifier.size() &&
               std::isxdigit(static_cast<unsigned char>(identifier[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(identifier[i + 2]))) {
      out += static_cast<char>(std::stoi(identifier.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      return identifier;  // not an escaped name after all
    }
  }
  return out;
}

std::string escape_for_comment(const std::string& text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\' || c == '\'' || c == '"')
      out += std::string("\\") + c;
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out;
}

}  // namespace parir
