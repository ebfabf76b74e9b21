// Small helpers to build untyped IR in tests, as the front end would from Python source.
#pragma once

#include <memory>

#include "ir/ir.h"
#include "ir/specialized_function.h"

namespace parir::test {

inline Loc at(int line) { return Loc{line, 4, line, 40}; }

inline ExprPtr v(const std::string& name, int line = 1) { return var(name, at(line)); }
inline ExprPtr i64(int64_t x) { return int_imm(x); }
inline ExprPtr f64(double x) { return float_imm(x); }

inline ExprPtr ld(const std::string& t, std::vector<ExprPtr> idx, int line = 1) {
  return std::make_shared<Load>(t, std::move(idx), Type{}, at(line));
}

inline ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b, int line = 1) {
  return binary(op, std::move(a), std::move(b), at(line));
}

inline StmtPtr assign(ExprPtr target, ExprPtr value, int line = 1) {
  return std::make_shared<Assign>(std::move(target), std::move(value), at(line));
}

inline StmtPtr loop(const std::string& var, ExprPtr lo, ExprPtr hi, Body body, int line = 1,
                    std::vector<std::string> labels = {}) {
  return std::make_shared<For>(var, std::move(lo), std::move(hi), i64(1), std::move(body),
                               at(line), std::move(labels));
}

inline StmtPtr gpu(Body body, int line = 1) { return std::make_shared<GpuBlock>(std::move(body), at(line)); }

// A function whose source lines are named "line <n>" so errors can be checked by line.
inline Function function(const std::string& name, std::vector<std::string> params, Body body) {
  auto src = std::make_shared<SourceInfo>();
  src->filename = "user.py";
  src->first_line = 1;
  for (int i = 1; i <= 20; ++i) src->lines.push_back(fmt::format("line {}", i));
  Function f;
  f.name = name;
  for (auto& p : params) f.params.push_back({p, at(1)});
  f.body = std::move(body);
  f.source = src;
  return f;
}

inline ArgValue tensor(ScalarType elem, std::vector<int64_t> shape) {
  ArgValue a;
  a.kind = ArgValue::Kind::Tensor;
  a.tensor.elem = elem;
  a.tensor.shape = shape;
  int64_t stride = 1;
  a.tensor.strides.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    a.tensor.strides[d] = stride;
    stride *= shape[d];
  }
  return a;
}

inline ArgValue integer(int64_t x) {
  ArgValue a;
  a.kind = ArgValue::Kind::Int;
  a.int_value = x;
  return a;
}

inline CompileOptions par(std::map<std::string, int64_t> threads) {
  CompileOptions o;
  for (auto& [label, n] : threads) o.parallelize[label] = LoopPar{n, false, 0};
  return o;
}

}  // namespace parir::test
