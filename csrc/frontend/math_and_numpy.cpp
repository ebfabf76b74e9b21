#include "frontend/math_and_numpy.h"

#include <limits>
#include <map>

namespace parir::frontend {

ExprPtr math_constant(const std::string& name, const SourceInfo& src, const Loc& loc) {
  if (name == "pi") return float_imm(3.141592653589793, loc);
  if (name == "e") return float_imm(2.718281828459045, loc);
  if (name == "tau") return float_imm(6.283185307179586, loc);
  if (name == "inf") return float_imm(std::numeric_limits<double>::infinity(), loc);
  if (name == "nan") return float_imm(std::numeric_limits<double>::quiet_NaN(), loc);
  throw_at(src, loc, fmt::format("math.{} cannot be used as a value in a parir function", name));
}

ExprPtr math_call(const std::string& name, std::vector<ExprPtr> args, bool has_keywords,
                  const SourceInfo& src, const Loc& loc) {
  if (has_keywords)
    throw_at(src, loc, fmt::format("math.{} takes no keyword arguments here", name));
  if (name == "pow") {
    if (args.size() != 2) throw_at(src, loc, "math.pow takes 2 arguments");
    return binary(BinaryOp::Pow, args[0], args[1], loc);
  }
  auto b = builtin_from_name(name == "fabs" ? "abs" : name);
  if (!b || *b == Builtin::Min || *b == Builtin::Max || *b == Builtin::Round ||
      *b == Builtin::Sign || *b == Builtin::Sigmoid || *b == Builtin::Rsqrt)
    throw_at(src, loc, fmt::format("math.{} is not supported in parir functions; the functions "
                                   "parir has are listed in its README (parir.exp, ...)",
                                   name));
  if (static_cast<int>(args.size()) != arity(*b))
    throw_at(src, loc, fmt::format("math.{} takes {} argument{}, got {}", name, arity(*b),
                                   arity(*b) == 1 ? "" : "s", args.size()));
  ExprPtr call = std::make_shared<Call>(*b, std::move(args), Type{}, loc);
  if (name == "floor" || name == "ceil" || name == "trunc")
    return std::make_shared<Cast>(call, Type{ScalarType::I64, false}, loc);
  return call;
}

std::string numpy_name(const std::string& alias, const std::string& attr, const SourceInfo& src,
                       const Loc& loc) {
  if (attr == "pi" || attr == "e" || attr == "inf" || attr == "nan") return "math." + attr;
  static const std::map<std::string, std::string> spelled_differently = {
      {"absolute", "abs"}, {"arcsin", "asin"},   {"arccos", "acos"},   {"arctan", "atan"},
      {"arcsinh", "asinh"}, {"arccosh", "acosh"}, {"arctanh", "atanh"}, {"arctan2", "atan2"},
      {"rint", "round"}};
  auto alias_of = spelled_differently.find(attr);
  const std::string name = alias_of == spelled_differently.end() ? attr : alias_of->second;
  auto b = builtin_from_name(name);
  if ((b && *b != Builtin::Min && *b != Builtin::Max) || scalar_type_from_name(name) ||
      name == "where" || name == "remainder")
    return name;
  throw_at(src, loc, fmt::format("{}.{} cannot be used in a parir function; NumPy's constants "
                                 "(pi, e, inf, nan), dtypes ({}.float32(x), ...) and the math "
                                 "functions parir has (exp, sqrt, ...) can, and parir.min, "
                                 "parir.max, parir.sum, ... are NumPy's minimum, maximum, sum",
                                 alias, attr, alias));
}

}  // namespace parir::frontend
