#include "passes/resolve_tensor_aliases.h"

#include <map>
#include <optional>
#include <set>

#include "ir/error.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Which tensor argument each alias names at a point of the program.
using Names = std::map<std::string, std::string>;

// The names that matter after a statement: without the front end's temporaries of tuple
// assignments ("p'0", read only by the assignments right after them), and, given `entry`, only
// those that already named a tensor there (one first assigned inside a loop starts over in each
// iteration).
Names visible(const Names& names, const Names* entry = nullptr) {
  Names out;
  for (const auto& [alias, tensor] : names)
    if (alias.find('\'') == std::string::npos && (!entry || entry->count(alias)))
      out.emplace(alias, tensor);
  return out;
}

// The longest period of a loop's renaming that is unrolled (a rotation of up to four buffers).
constexpr int kMaxPeriod = 4;

// The name as the user wrote it: the front end's temporaries of a tuple assignment are "p'0".
std::string written(const std::string& name) {
  return display_name(name.substr(0, name.find('\'')));
}

// Assignments `local = name` whose value is a plain name.
class NameAssignments : public IRVisitor {
 public:
  std::vector<const Assign*> assignments;

 protected:
  void visit_node(const Assign* n) override {
    if (n->target->as<Var>()) assignments.push_back(n);
    IRVisitor::visit_node(n);
  }
};

// The names indexed as tensors (x[i], x.shape).
class IndexedNames : public IRVisitor {
 public:
  std::set<std::string> names;

 protected:
  void visit_node(const Load* n) override {
    names.insert(n->tensor);
    IRVisitor::visit_node(n);
  }
  void visit_node(const TensorShape* n) override { names.insert(n->tensor); }
};

// The names assigned, directly or through others, from the names in `from`.
std::set<std::string> reached_from(const std::vector<const Assign*>& assignments,
                                   const std::set<std::string>& from,
                                   const std::set<std::string>& never) {
  std::set<std::string> out;
  for (bool grew = true; grew;) {
    grew = false;
    for (const Assign* a : assignments) {
      const std::string& target = a->target->as<Var>()->name;
      auto v = a->value->as<Var>();
      if (v && !never.count(target) && (from.count(v->name) || out.count(v->name)))
        grew = out.insert(target).second || grew;
    }
  }
  return out;
}

// The locals that only ever take tensor arguments or other such locals, and the tensor
// arguments assigned so (`u, u_new = u_new, u`: from there on u names the other tensor).
// `wide` are the tensors of more than one element: a local assigned a shape-(1,) tensor and also
// numbers (`acc = bias`, then `acc += x[i]`) holds its value instead, as before.
std::set<std::string> find_aliases(const Function& fn, const std::set<std::string>& tensors,
                                   const std::set<std::string>& wide) {
  NameAssignments all;
  all.visit(fn.body);
  std::set<std::string> params;  // the scalar and dict arguments
  for (const Param& p : fn.params)
    if (!tensors.count(p.name)) params.insert(p.name);
  std::set<std::string> aliases = reached_from(all.assignments, tensors, params);
  // Those also assigned anything else hold values; so do those assigned from them.
  std::map<std::string, const Assign*> holds_values;
  for (bool shrank = true; shrank;) {
    shrank = false;
    for (const Assign* a : all.assignments) {
      const std::string& target = a->target->as<Var>()->name;
      auto v = a->value->as<Var>();
      if (aliases.count(target) && !(v && (tensors.count(v->name) || aliases.count(v->name)))) {
        aliases.erase(target);
        holds_values.emplace(target, a);
        shrank = true;
      }
    }
  }
  const std::set<std::string> wide_names = reached_from(all.assignments, wide, params);
  for (const auto& [target, value_assignment] : holds_values)
    if (wide_names.count(target) && !tensors.count(target)) {
      const Assign& a = *value_assignment;
      throw_at(a.loc.src ? *a.loc.src : *fn.source, a.loc,
               fmt::format("'{}' names a tensor elsewhere and is assigned {} here; a local "
                           "either names tensor arguments (src = a, then src[i] reads a[i]) or "
                           "holds numbers, not both",
                           written(target), to_string(a.value)));
    }
  // Locals that only ever name shape-(1,) tensors stand for the element, as those tensors do
  // (`scale = s`, then `x[i] * scale`), unless one of them is indexed as a tensor.
  std::set<std::string> narrow;
  for (const auto& alias : aliases)
    if (!wide_names.count(alias)) narrow.insert(alias);
  IndexedNames indexed;
  indexed.visit(fn.body);
  bool any_indexed = false;
  for (const auto& alias : narrow) any_indexed = any_indexed || indexed.names.count(alias);
  if (!any_indexed)
    for (const auto& alias : narrow) aliases.erase(alias);
  return aliases;
}

// Whether a statement assigns an alias somewhere inside.
class AssignsAlias : public IRVisitor {
 public:
  explicit AssignsAlias(const std::set<std::string>& aliases) : aliases_(aliases) {}
  bool found = false;

 protected:
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) found = found || aliases_.count(v->name);
  }

 private:
  const std::set<std::string>& aliases_;
};

class Resolver {
 public:
  Resolver(const Function& fn, const std::set<std::string>& aliases,
           std::map<std::string, int64_t> ints)
      : fn_(fn), aliases_(aliases), ints_(std::move(ints)) {}

  // The statements with the tensors that `names` (updated as they run) gives each alias.
  Body rewrite(const Body& body, Names& names) {
    Body out;
    for (const auto& s : body) rewrite(s, names, out);
    return out;
  }

 private:
  const Function& fn_;
  const std::set<std::string>& aliases_;
  const std::map<std::string, int64_t> ints_;

  [[noreturn]] void error(const Loc& loc, const std::string& msg) const {
    throw_at(loc.src ? *loc.src : *fn_.source, loc, msg);
  }

  bool assigns_alias(const StmtPtr& s) const {
    AssignsAlias a(aliases_);
    a.visit(s);
    return a.found;
  }

  // The tensor the alias names, read at `loc`.
  const std::string& named(const std::string& alias, const Names& names, const Loc& loc) const {
    auto it = names.find(alias);
    if (it == names.end())
      error(loc, fmt::format("'{}' is read before it names a tensor argument", written(alias)));
    return it->second;
  }

  // Every read of an alias becomes the tensor it names.
  class Rename : public IRMutator {
   public:
    Rename(const Resolver& r, const Names& names) : r_(r), names_(names) {}

   protected:
    const std::string& tensor(const std::string& name, const Loc& loc) const {
      return r_.named(name, names_, loc);
    }
    ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
      if (!r_.aliases_.count(n->name)) return self;
      return std::make_shared<Var>(tensor(n->name, n->loc), n->type, n->loc);
    }
    ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
      ExprPtr rebuilt = IRMutator::mutate_node(n, self);
      if (!r_.aliases_.count(n->tensor)) return rebuilt;
      const Load* l = rebuilt->as<Load>();
      return std::make_shared<Load>(tensor(n->tensor, n->loc), l->indices, l->type, l->loc,
                                    l->in_bounds);
    }
    ExprPtr mutate_node(const TensorShape* n, const ExprPtr& self) override {
      if (!r_.aliases_.count(n->tensor)) return self;
      return std::make_shared<TensorShape>(tensor(n->tensor, n->loc), n->query, n->dim, n->skip,
                                           n->loc, n->unpacked_into);
    }

   private:
    const Resolver& r_;
    const Names& names_;
  };

  StmtPtr renamed(const StmtPtr& s, const Names& names) const {
    return Rename(*this, names).mutate(s);
  }

  void rewrite(const StmtPtr& s, Names& names, Body& out) {
    if (!assigns_alias(s)) {
      out.push_back(renamed(s, names));
      return;
    }
    auto parallel_code_error = [&](const Loc& loc) {
      error(loc, "a local that names a tensor argument is assigned here, inside a labelled loop "
                 "or `with parir.gpu:`; which tensor it names is the host's choice: assign it "
                 "outside the labelled loops and GPU blocks. A loop that must stay on the GPU "
                 "(a while loop on a residual the GPU computes) can run two steps an iteration "
                 "instead, the second with the tensors' roles exchanged, or copy one buffer "
                 "into the other after each step");
    };
    if (auto a = s->as<Assign>()) {  // outside labelled loops and GPU blocks, which stop below
      const std::string& target = a->target->as<Var>()->name;
      const std::string& value = a->value->as<Var>()->name;
      names[target] = aliases_.count(value) ? named(value, names, a->loc) : value;
      return;
    }
    if (auto g = s->as<GpuBlock>()) parallel_code_error(g->loc);
    if (auto f = s->as<For>()) {
      if (!f->labels.empty()) parallel_code_error(f->loc);
      return rewrite_for(*f, names, out);
    }
    if (auto w = s->as<While>()) {
      Names after = names;
      Body body = rewrite(w->body, after);
      if (visible(after, &names) != visible(names))
        changes_error(w->loc, names, after, "a while loop");
      out.push_back(std::make_shared<While>(renamed_expr(w->cond, names), std::move(body), w->loc,
                                            w->labels));
      return;
    }
    if (auto i = s->as<If>()) {
      if (auto c = integer_value(i->cond, ints_)) {  // `if steps % 2 == 1:` after the loop
        Body taken = rewrite(*c ? i->then_body : i->else_body, names);
        out.insert(out.end(), taken.begin(), taken.end());
        return;
      }
      Names then_names = names, else_names = names;
      Body then_body = rewrite(i->then_body, then_names);
      Body else_body = rewrite(i->else_body, else_names);
      if (visible(then_names) != visible(else_names))
        changes_error(i->loc, then_names, else_names, "the branches of an if");
      out.push_back(std::make_shared<If>(renamed_expr(i->cond, names), std::move(then_body),
                                         std::move(else_body), i->loc, i->labels));
      names = then_names;
      return;
    }
    internal_error("resolve_tensor_aliases: a statement of kind {} assigns a tensor alias",
                   static_cast<int>(s->kind));
  }

  ExprPtr renamed_expr(const ExprPtr& e, const Names& names) const {
    return Rename(*this, names).mutate(e);
  }

  [[noreturn]] void changes_error(const Loc& loc, const Names& a, const Names& b,
                                  const std::string& where) const {
    std::string which;
    for (const auto& [alias, tensor] : visible(b)) {
      auto it = a.find(alias);
      if (it == a.end() || it->second != tensor) {
        which = fmt::format("'{}' names '{}' or '{}'", written(alias),
                            it == a.end() ? std::string("nothing") : display_name(it->second),
                            display_name(tensor));
        break;
      }
    }
    error(loc, fmt::format("after {}, {} depending on what only the run decides; the tensors a "
                           "local names may change only in for loops over ranges of scalar "
                           "arguments and constants, which are unrolled by the period of the "
                           "change. Call a function with the tensors in each order instead "
                           "(`if t % 2 == 0: step(a, b)` / `else: step(b, a)`)",
                           where, which));
  }

  // A host for loop whose body assigns aliases.
  void rewrite_for(const For& f, Names& names, Body& out) {
    // The names at the start of each iteration, until they repeat.
    std::vector<Names> starts{names};
    for (int k = 1; k <= kMaxPeriod; ++k) {
      Names next = starts.back();
      rewrite(f.body, next);
      if (visible(next, &starts.front()) == visible(starts.front())) break;
      if (k == kMaxPeriod)
        error(f.loc, fmt::format("the tensors that this loop's locals name do not come back to "
                                 "those of its first iteration within {} iterations; rotate "
                                 "at most {} tensors through them",
                                 kMaxPeriod, kMaxPeriod));
      starts.push_back(next);
    }
    const int64_t period = static_cast<int64_t>(starts.size());
    if (period == 1) {
      Names body_names = names;
      out.push_back(std::make_shared<For>(f.var, renamed_expr(f.lo, names),
                                          renamed_expr(f.hi, names), renamed_expr(f.step, names),
                                          rewrite(f.body, body_names), f.loc, f.labels));
      return;
    }
    auto lo = integer_value(f.lo, ints_), hi = integer_value(f.hi, ints_),
         step = integer_value(f.step, ints_);
    if (!lo || !hi || !step || *step == 0)
      changes_error(f.loc, starts[0], starts[1],
                    "each iteration of a loop whose range is known only when the program runs");
    const int64_t trips = *step > 0 ? (*hi > *lo ? (*hi - *lo + *step - 1) / *step : 0)
                                    : (*lo > *hi ? (*lo - *hi - *step - 1) / -*step : 0);
    const int64_t full = trips - trips % period;
    // The copy of the body for iteration `offset` of each period, its names fixed.
    auto copy = [&](const ExprPtr& first, int64_t offset) {
      Names n = starts[offset];
      ExprPtr value = offset == 0 ? first
                                  : binary(BinaryOp::Add, first, int_imm(offset * *step, f.loc),
                                           f.loc);
      Body body = Substitute(f.var, value).mutate(f.body);
      return rewrite(body, n);
    };
    Body unrolled;  // kept when it runs no iteration, as the loop it replaces is
    for (int64_t k = 0; k < period; ++k) {
      Body c = copy(var(f.var, f.loc), k);
      unrolled.insert(unrolled.end(), c.begin(), c.end());
    }
    out.push_back(std::make_shared<For>(f.var, int_imm(*lo, f.loc),
                                        int_imm(*lo + full * *step, f.loc),
                                        int_imm(period * *step, f.loc), std::move(unrolled),
                                        f.loc, f.labels));
    for (int64_t k = 0; k < trips - full; ++k) {  // the last iterations, the variable known
      Body c = copy(int_imm(*lo + full * *step, f.loc), k);
      out.insert(out.end(), c.begin(), c.end());
    }
    names = starts[trips % period];
  }
};

}  // namespace

Function resolve_tensor_aliases(const Function& fn, const std::vector<ArgValue>& args) {
  std::set<std::string> tensors, wide;
  std::map<std::string, int64_t> ints;
  const std::set<std::string> assigned = assigned_locals(fn.body);
  for (size_t i = 0; i < fn.params.size() && i < args.size(); ++i) {
    const ArgValue& a = args[i];
    const std::string& name = fn.params[i].name;
    if (a.kind == ArgValue::Kind::Tensor) tensors.insert(name);
    if (a.kind == ArgValue::Kind::Tensor && a.tensor.shape != std::vector<int64_t>{1})
      wide.insert(name);
    if (a.kind == ArgValue::Kind::Int && !assigned.count(name)) ints[name] = a.int_value;
  }
  const std::set<std::string> aliases = find_aliases(fn, tensors, wide);
  if (aliases.empty()) return fn;
  Function out = fn;
  Names names;  // a tensor argument names itself until it is assigned
  for (const auto& alias : aliases)
    if (tensors.count(alias)) names[alias] = alias;
  out.body = Resolver(fn, aliases, ints).rewrite(fn.body, names);
  return out;
}

}  // namespace parir
