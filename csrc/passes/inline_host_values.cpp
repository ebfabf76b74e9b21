#include "passes/inline_host_values.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// How many times each name occurs in the IR, as a target or read.
class CountNames : public IRVisitor {
 public:
  std::map<std::string, int> count;

 protected:
  void visit_node(const Var* n) override { ++count[n->name]; }
};

int occurrences(const Body& body, const std::string& name) {
  CountNames c;
  for (const auto& s : body) c.visit(s);
  auto it = c.count.find(name);
  return it == c.count.end() ? 0 : it->second;
}

// The names that the host evaluates itself or that decide how kernels launch: host loops'
// ranges, the conditions of ifs and whiles outside parallel code, parallel loops' ranges, and
// returned values.
class ReadByHost : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_node(const For* n) override {
    for (const ExprPtr& e : {n->lo, n->hi, n->step}) read(e);
    parallel_depth_ += n->par ? 1 : 0;
    IRVisitor::visit_node(n);
    parallel_depth_ -= n->par ? 1 : 0;
  }
  void visit_node(const If* n) override {
    if (parallel_depth_ == 0) read(n->cond);
    IRVisitor::visit_node(n);
  }
  void visit_node(const While* n) override {
    if (parallel_depth_ == 0) read(n->cond);
    IRVisitor::visit_node(n);
  }
  void visit_node(const GpuBlock* n) override {
    ++parallel_depth_;
    IRVisitor::visit_node(n);
    --parallel_depth_;
  }
  void visit_node(const Return* n) override {
    read(n->value);
    for (const auto& e : n->elements) read(e);
  }

 private:
  void read(const ExprPtr& e) {
    if (!e) return;
    CountNames c;
    c.visit(e);
    for (const auto& [name, count] : c.count) names.insert(name);
  }
  int parallel_depth_ = 0;
};

class InlineHostValues {
 public:
  explicit InlineHostValues(SpecializedFunction& prog) : prog_(prog) {
    bindings_ = local_bindings(prog.body);
    ReadByHost host;
    host.visit(prog.body);
    read_by_host_ = std::move(host.names);
    CountNames all;
    for (const auto& s : prog.body) all.visit(s);
    occurrences_ = std::move(all.count);
  }

  // The host code of `body`, inside host loops over `loop_variables`, with the locals that
  // qualify replaced by their values.
  Body rewrite(const Body& body, std::set<std::string>& loop_variables) {
    Body out(body.begin(), body.end());
    for (size_t k = 0; k < out.size();) {
      const StmtPtr& s = out[k];
      if (auto a = s->as<Assign>()) {
        if (auto name = inlinable(*a, loop_variables, out, k)) {
          ExprPtr value = a->value;
          const Type type = prog_.locals.at(*name);
          if (!(value->type == type)) value = std::make_shared<Cast>(value, type, a->loc);
          Substitute substitute(*name, value);
          for (size_t j = k + 1; j < out.size(); ++j) out[j] = substitute.mutate(out[j]);
          out.erase(out.begin() + static_cast<std::ptrdiff_t>(k));
          prog_.locals.erase(*name);
          continue;
        }
      } else if (auto f = s->as<For>(); f && !f->par) {
        const bool added = loop_variables.insert(f->var).second;
        StmtPtr loop = with_body(*f, rewrite(f->body, loop_variables));
        if (added) loop_variables.erase(f->var);
        out[k] = std::move(loop);
      } else if (auto i = s->as<If>()) {
        out[k] = std::make_shared<If>(i->cond, rewrite(i->then_body, loop_variables),
                                      rewrite(i->else_body, loop_variables), i->loc, i->labels);
      } else if (auto w = s->as<While>()) {
        out[k] = std::make_shared<While>(w->cond, rewrite(w->body, loop_variables), w->loc,
                                         w->labels);
      }
      ++k;
    }
    return out;
  }

 private:
  // The local that `a` (out[k]) assigns, if it qualifies: its one binding, a type the host
  // does not compute itself, not read by the host, a value of the loop variables around it
  // (which nothing else assigns), and read only after it in `out`.
  std::optional<std::string> inlinable(const Assign& a, const std::set<std::string>& loops,
                                       const Body& out, size_t k) const {
    auto v = a.target->as<Var>();
    if (!v || !a.labels.empty() || prog_.is_tensor(v->name)) return std::nullopt;
    auto type = prog_.locals.find(v->name);
    if (type == prog_.locals.end() || type->second.scalar == ScalarType::I64 ||
        type->second.scalar == ScalarType::Bool || read_by_host_.count(v->name))
      return std::nullopt;
    auto binding = bindings_.find(v->name);
    // (Its one binding is `a`, or the copy of it that an earlier substitution made.)
    if (binding == bindings_.end() || binding->second.size() != 1 || !binding->second.front() ||
        !pure_of(a.value, loops))
      return std::nullopt;
    for (const auto& loop_variable : loops) {
      auto b = bindings_.find(loop_variable);
      if (b == bindings_.end()) continue;
      for (const Assign* other : b->second)
        if (other) return std::nullopt;  // the loop's variable assigned in its body
    }
    const Body after(out.begin() + static_cast<std::ptrdiff_t>(k) + 1, out.end());
    auto total = occurrences_.find(v->name);
    if (total == occurrences_.end() || occurrences(after, v->name) != total->second - 1)
      return std::nullopt;
    return v->name;
  }

  SpecializedFunction& prog_;
  std::map<std::string, std::vector<const Assign*>> bindings_;
  std::set<std::string> read_by_host_;
  std::map<std::string, int> occurrences_;
};

}  // namespace

void inline_host_values(SpecializedFunction& prog) {
  std::set<std::string> loop_variables;
  prog.body = InlineHostValues(prog).rewrite(prog.body, loop_variables);
}

}  // namespace parir
