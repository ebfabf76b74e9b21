#include "passes/inline_functions.h"

#include <functional>
#include <set>

#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

[[noreturn]] void error_in(const Function& f, const Loc& loc, const std::string& msg) {
  throw_at(loc.src ? *loc.src : *f.source, loc, msg);
}

// What a called function does with its names.
class Usage : public IRVisitor {
 public:
  std::set<std::string> assigned;     // locals and parameters assigned to
  std::set<std::string> loop_vars;
  std::set<std::string> used_by_name;  // indexed as tensors, or dicts (x['k'])
  std::set<std::string> passed_on;     // passed as they are to a function the callee calls

 protected:
  void visit_node(const CallFunction* n) override {
    for (const auto& a : n->args)
      if (auto v = a->as<Var>()) passed_on.insert(v->name);
    for (const auto& t : n->unpacked_into)  // a, b = g(x)
      if (auto v = t->as<Var>()) assigned.insert(v->name);
    IRVisitor::visit_node(n);
  }
  static std::string base(const std::string& n) { return n.substr(0, n.find('.')); }
  void visit_node(const Var* n) override {
    if (n->name.find('.') != std::string::npos) used_by_name.insert(base(n->name));
  }
  void visit_node(const Load* n) override {
    used_by_name.insert(base(n->tensor));
    IRVisitor::visit_node(n);
  }
  void visit_node(const TensorShape* n) override { used_by_name.insert(base(n->tensor)); }
  void visit_node(const Assign* n) override {
    if (auto v = n->target->as<Var>()) assigned.insert(v->name);
    IRVisitor::visit_node(n);
  }
  void visit_node(const AtomicUpdate* n) override {
    if (n->result) assigned.insert(n->result->as<Var>()->name);
    IRVisitor::visit_node(n);
  }
  void visit_node(const For* n) override {
    loop_vars.insert(n->var);
    IRVisitor::visit_node(n);
  }
};

// Renames a called function's names: parameters to the arguments (expressions, or the names of
// tensors and dicts passed), locals and loop variables to fresh names.
class Renamer : public IRMutator {
 public:
  std::map<std::string, ExprPtr> values;       // a scalar name -> what replaces it
  std::map<std::string, std::string> by_name;  // a tensor or dict parameter -> the argument
  // A parameter bound to a view x[i, j] -> the indices that come first in its accesses.
  std::map<std::string, std::vector<ExprPtr>> prefix;

 protected:
  std::string rename(const std::string& name) const {
    size_t dot = name.find('.');
    auto it = by_name.find(name.substr(0, dot));
    if (it == by_name.end()) return name;
    return dot == std::string::npos ? it->second : it->second + name.substr(dot);
  }

  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    if (auto it = values.find(n->name); it != values.end()) {
      if (auto v = it->second->as<Var>()) return var(v->name, n->loc, n->type);
      return it->second;
    }
    std::string r = rename(n->name);
    return r == n->name ? self : var(r, n->loc, n->type);
  }

  ExprPtr mutate_node(const Load* n, const ExprPtr& self) override {
    std::vector<ExprPtr> idx;
    // The view's indices belong to the caller: they are not renamed.
    if (auto p = prefix.find(n->tensor); p != prefix.end()) idx = p->second;
    for (const auto& i : n->indices) idx.push_back(mutate(i));
    return std::make_shared<Load>(rename(n->tensor), std::move(idx), n->type, n->loc);
  }

  // p.shape[d] of a parameter bound to x, or to a view x[i, j]: x's shape after the view's
  // indices.
  ExprPtr mutate_node(const TensorShape* n, const ExprPtr&) override {
    int skip = n->skip;
    if (auto p = prefix.find(n->tensor); p != prefix.end()) skip += p->second.size();
    return std::make_shared<TensorShape>(rename(n->tensor), n->query, n->dim, skip, n->loc,
                                         n->unpacked_into);
  }

  // `p is None` of a parameter bound to a name asks it of that name (an argument of the caller,
  // or None itself); an expression is never None.
  ExprPtr mutate_node(const IsNone* n, const ExprPtr& self) override {
    if (auto it = values.find(n->name); it != values.end()) {
      if (auto v = it->second->as<Var>()) return std::make_shared<IsNone>(v->name, n->loc);
      return bool_imm(false, n->loc);
    }
    std::string r = rename(n->name);
    return r == n->name ? self : std::make_shared<IsNone>(r, n->loc);
  }

  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    ExprPtr lo = mutate(n->lo), hi = mutate(n->hi), step = mutate(n->step);
    std::string v = n->var;
    if (auto it = values.find(v); it != values.end()) v = it->second->as<Var>()->name;
    return std::make_shared<For>(v, lo, hi, step, mutate(n->body), n->loc, n->labels, n->par,
                                 n->reduction);
  }
};

// The argument x[i, j] or x[i, j, :] (integer indices in the leading dimensions, then only full
// slices, which are dropped) as the Load x[i, j]; nullptr for any other expression.
std::shared_ptr<const Load> leading_index_view(const ExprPtr& e) {
  auto l = e->as<Load>();
  if (!l || l->tensor.find('.') != std::string::npos) return nullptr;
  std::vector<ExprPtr> idx = l->indices;
  auto full = [](const ExprPtr& i) {
    auto s = i->as<Slice>();
    return s && !s->lo && !s->hi && !s->step;
  };
  while (!idx.empty() && full(idx.back())) idx.pop_back();
  for (const auto& i : idx)
    if (i->as<Slice>()) return nullptr;
  return std::make_shared<Load>(l->tensor, std::move(idx), l->type, l->loc);
}

// A literal such as 2, -0.5 or True.
bool is_literal(const ExprPtr& e) {
  if (e->as<IntImm>() || e->as<FloatImm>() || e->as<BoolImm>()) return true;
  auto u = e->as<Unary>();
  return u && u->op == UnaryOp::Neg && is_literal(u->a);
}

// `return` may only end a called function: as its last statement, or as the last statement of
// both branches of an if that ends it (the frontend made early returns from ifs such branches).
// A return from a loop would need control flow parir lacks.
void check_returns(const Function& g, const Body& body, bool at_end) {
  for (size_t i = 0; i < body.size(); ++i) {
    bool last = at_end && i + 1 == body.size();
    const StmtPtr& s = body[i];
    if (s->as<Return>() && !last)
      error_in(g, s->loc, fmt::format("`return` inside a loop (or `with parir.gpu:`) of {}() "
                                      "is not supported; assign the result to a variable and "
                                      "return it after the loop",
                                      g.name));
    if (auto i_ = s->as<If>()) {
      check_returns(g, i_->then_body, last);
      check_returns(g, i_->else_body, last);
    } else if (auto f = s->as<For>()) {
      check_returns(g, f->body, false);
    } else if (auto w = s->as<While>()) {
      check_returns(g, w->body, false);
    } else if (auto b = s->as<GpuBlock>()) {
      check_returns(g, b->body, false);
    }
  }
}

// How many values a call returns (for `return g(x)`, which returns what g returns).
using ValuesOfCall = std::function<size_t(const CallFunction&)>;

// How many values every path through the body returns at its end: 0 (none: a bare `return` or
// none at all), 1, or the size of a returned tuple. Paths that disagree are an error.
size_t returned_values(const Function& g, const Body& body, const ValuesOfCall& of_call) {
  if (body.empty()) return 0;
  const StmtPtr& s = body.back();
  if (auto r = s->as<Return>()) {
    if (!r->value) return r->elements.size();
    auto c = r->value->as<CallFunction>();
    return c ? of_call(*c) : 1;
  }
  if (auto i = s->as<If>()) {
    size_t a = returned_values(g, i->then_body, of_call),
           b = returned_values(g, i->else_body, of_call);
    if (a != b) {
      if (a == 0 || b == 0)
        error_in(g, s->loc, fmt::format("{}() returns a value on some paths but not on others; "
                                        "return a value on every path",
                                        g.name));
      error_in(g, s->loc, fmt::format("{}() returns {} values on some paths and {} on others; "
                                      "return as many on every path",
                                      g.name, std::max(a, b), std::min(a, b)));
    }
    return a;
  }
  return 0;
}

// The body with each final `return e` replaced by `results[0] = e`, `return a, b` by
// `results[0] = a; results[1] = b` and `return g(x)` of a g that returns a tuple by
// `results[0], results[1] = g(x)` (a bare `return` dropped, as are the values of a call made for
// its effects, which has no results).
Body assign_returns(const Body& body, const std::vector<std::string>& results) {
  Body out = body;
  if (out.empty()) return out;
  if (auto r = out.back()->as<Return>()) {
    auto c = r->value ? r->value->as<CallFunction>() : nullptr;
    if (c && results.size() > 1) {
      std::vector<ExprPtr> into;
      for (const auto& name : results) into.push_back(var(name, r->loc));
      out.back() = std::make_shared<ExprStmt>(
          std::make_shared<CallFunction>(c->name, c->args, c->loc, std::move(into)), r->loc,
          r->labels);
      return out;
    }
    std::vector<ExprPtr> values = r->elements;
    if (r->value) values = {r->value};
    out.pop_back();
    for (size_t k = 0; k < results.size() && k < values.size(); ++k)
      out.push_back(std::make_shared<Assign>(var(results[k], r->loc), values[k], r->loc,
                                             k == 0 ? r->labels : std::vector<std::string>{}));
  } else if (auto i = out.back()->as<If>()) {
    out.back() = std::make_shared<If>(i->cond, assign_returns(i->then_body, results),
                                      assign_returns(i->else_body, results), i->loc, i->labels);
  }
  return out;
}

class Inliner : public IRMutator {
 public:
  Inliner(const Function& top, const CalleeTable& table) : env_(&top), table_(table) {
    used_ = names_in(top.body);
    for (const auto& p : top.params) used_.insert(p.name);
    for (const auto& [fn, entries] : table)
      for (const auto& [name, callee] : entries)
        if (callee.function) {
          used_.merge(names_in(callee.function->body));
          for (const auto& p : callee.function->params) used_.insert(p.name);
        }
    stack_.push_back(&top);
  }

  Body mutate(const Body& body) override {
    Body out;
    for (const auto& s : body) {
      Body saved;
      saved.swap(pending_);
      StmtPtr m = IRMutator::mutate(s);
      out.insert(out.end(), pending_.begin(), pending_.end());
      pending_ = std::move(saved);
      if (m) out.push_back(std::move(m));
    }
    return out;
  }
  using IRMutator::mutate;

 protected:
  const Function* env_;  // the function whose code is being rewritten: names resolve in it
  const CalleeTable& table_;
  std::set<std::string> used_;
  std::vector<const Function*> stack_;  // the calls being inlined, outermost first
  Body pending_;  // statements that must run before the current statement

  [[noreturn]] void error(const Loc& loc, const std::string& msg) const {
    error_in(*env_, loc, msg);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int n = 2; used_.count(name); ++n) name = fmt::format("{}_{}", base, n);
    used_.insert(name);
    return name;
  }

  // What `name` calls from inside `caller`, or null where it names nothing parir can call.
  const Callee* callee_of(const Function* caller, const std::string& name) const {
    auto env = table_.find(caller);
    if (env == table_.end()) return nullptr;
    auto it = env->second.find(name);
    return it == env->second.end() ? nullptr : &it->second;
  }

  // The values g returns: its tuple's size, 1 for one value (an external's included), and
  // for `return h(x)` what h returns. A cycle of such returns counts as one value here; inlining
  // reports the recursion.
  size_t values_returned(const Function& g, std::set<const Function*>& seen) const {
    seen.insert(&g);
    return returned_values(g, g.body, [&](const CallFunction& c) -> size_t {
      const Callee* h = callee_of(&g, c.name);
      if (!h || !h->function || seen.count(h->function.get())) return 1;
      return values_returned(*h->function, seen);
    });
  }

  const Callee& resolve(const CallFunction& call) const {
    if (const Callee* c = callee_of(env_, call.name)) return *c;
    error(call.loc, fmt::format("'{}' is not a function parir can call: a jit function may call "
                                "parir's builtins, Python functions (decorated with @parir.jit "
                                "or not) and parir.external functions visible from {}()",
                                call.name, env_->name));
  }

  // ----- expressions ----------------------------------------------------------------------

  // A branch of `a if c else b` (or the right side of and/or) that calls a function with
  // statements runs them only when Python would evaluate it: the expression becomes an if
  // statement that assigns a fresh variable in each branch.
  ExprPtr mutate_node(const Select* n, const ExprPtr& self) override {
    ExprPtr c = mutate(n->cond);
    auto [a, a_stmts] = mutate_apart(n->a);
    auto [b, b_stmts] = mutate_apart(n->b);
    if (a_stmts.empty() && b_stmts.empty()) {
      if (c == n->cond && a == n->a && b == n->b) return self;
      return std::make_shared<Select>(c, a, b, n->type, n->loc);
    }
    ExprPtr result = var(fresh("select"), n->loc);
    a_stmts.push_back(std::make_shared<Assign>(result, a, n->loc));
    b_stmts.push_back(std::make_shared<Assign>(result, b, n->loc));
    pending_.push_back(std::make_shared<If>(c, std::move(a_stmts), std::move(b_stmts), n->loc));
    return result;
  }

  ExprPtr mutate_node(const Binary* n, const ExprPtr& self) override {
    if (!is_logical(n->op)) return IRMutator::mutate_node(n, self);
    ExprPtr a = mutate(n->a);
    auto [b, b_stmts] = mutate_apart(n->b);
    if (b_stmts.empty()) {
      if (a == n->a && b == n->b) return self;
      return binary(n->op, a, b, n->loc, n->type);
    }
    // a and b: the value of b only where a is true; a or b: where a is false.
    auto truth = [&](const ExprPtr& e) {
      return binary(BinaryOp::And, e, bool_imm(true, n->loc), n->loc, n->type);
    };
    ExprPtr result = var(fresh("logical"), n->loc);
    pending_.push_back(std::make_shared<Assign>(result, truth(a), n->loc));
    b_stmts.push_back(std::make_shared<Assign>(result, truth(b), n->loc));
    ExprPtr cond = n->op == BinaryOp::And ? result
                                          : std::make_shared<Unary>(UnaryOp::Not, result,
                                                                    n->type, n->loc);
    pending_.push_back(std::make_shared<If>(cond, std::move(b_stmts), Body{}, n->loc));
    return result;
  }

  // `e` rewritten, and the statements it needs (inlined calls) apart from pending_.
  std::pair<ExprPtr, Body> mutate_apart(const ExprPtr& e) {
    Body saved;
    saved.swap(pending_);
    ExprPtr m = mutate(e);
    Body stmts;
    stmts.swap(pending_);
    pending_ = std::move(saved);
    return {m, std::move(stmts)};
  }

  ExprPtr mutate_node(const CallFunction* n, const ExprPtr&) override {
    return call(*n, /*wanted=*/1).front();
  }

  // The values of a call: none for a call made for its effects (wanted 0), one for a call in
  // an expression, one per target of `a, b = f(x)`. An external stays a call, its one value.
  std::vector<ExprPtr> call(const CallFunction& n, size_t wanted) {
    std::vector<ExprPtr> args;
    for (const auto& a : n.args) args.push_back(mutate(a));
    const Callee& callee = resolve(n);
    if (const auto& ext = callee.external) {
      if (args.size() != ext->params.size())
        error(n.loc, fmt::format("the external {}() takes {} argument{}, got {}", n.name,
                                 ext->params.size(), ext->params.size() == 1 ? "" : "s",
                                 args.size()));
      if (wanted > 1)
        error(n.loc, fmt::format("the external {}() returns one value, which cannot be "
                                 "unpacked into {} targets",
                                 n.name, wanted));
      return {std::make_shared<ExternCall>(ext, std::move(args), n.loc)};
    }
    return inline_call(n, *callee.function, args, wanted);
  }

  std::vector<ExprPtr> inline_call(const CallFunction& n, const Function& g,
                                   const std::vector<ExprPtr>& given, size_t wanted) {
    for (const Function* f : stack_)
      if (f == &g)
        error(n.loc, fmt::format("{}() calls itself{}: recursion is not supported by parir "
                                 "(the called functions are inlined)",
                                 g.name, f == env_ ? "" : fmt::format(" through {}()", env_->name)));
    // Parameters the call leaves out take their defaults (`def norm_cdf(x, mu=0.0, sigma=1.0)`).
    std::vector<ExprPtr> args = given;
    while (args.size() < g.params.size() && g.params[args.size()].default_value)
      args.push_back(g.params[args.size()].default_value);
    if (args.size() != g.params.size()) {
      std::vector<std::string> names;
      for (const auto& p : g.params) names.push_back(p.name);
      error(n.loc, fmt::format("{}() takes {} argument{} ({}) but {} were given", g.name,
                               names.size(), names.size() == 1 ? "" : "s",
                               fmt::join(names, ", "), args.size()));
    }
    check_returns(g, g.body, true);
    std::set<const Function*> seen;
    const size_t returned = values_returned(g, seen);
    if (wanted > 0 && returned == 0)
      error(n.loc, fmt::format("{}() returns no value, but its result is used here", g.name));
    if (wanted == 1 && returned > 1)
      error(n.loc, fmt::format("{}() returns a tuple of {} values, which is used here as one "
                               "value; unpack it into names, as in a, b = {}(...)",
                               g.name, returned, g.name));
    if (wanted > 1 && returned != wanted)
      error(n.loc, fmt::format("{}() returns {} value{}, which cannot be unpacked into {} "
                               "targets",
                               g.name, returned, returned == 1 ? "" : "s", wanted));

    Usage usage;
    usage.visit(g.body);
    Renamer r;
    Body copies;
    bool one_expression = returned == 1 && g.body.size() == 1 && g.body[0]->as<Return>() &&
                          g.body[0]->as<Return>()->value && g.body[0]->labels.empty();
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& p = g.params[i].name;
      auto name = args[i]->as<Var>();
      // A parameter passed on as it is to another function (`rhs(t, y, params)` in a step
      // function that never indexes params itself) binds the argument the same way, so that a
      // view x[i] reaches the function that indexes it.
      const bool passed_on = usage.passed_on.count(p) && !usage.assigned.count(p) &&
                             (name || leading_index_view(args[i]));
      if (usage.used_by_name.count(p) || passed_on) {
        if (name) {
          r.by_name[p] = name->name;
        } else if (auto view = leading_index_view(args[i])) {
          // x[i] for a parameter the callee indexes: p[j] reads x[i, j].
          r.by_name[p] = view->tensor;
          r.prefix[p] = view->indices;
        } else {
          error(args[i]->loc, fmt::format("argument {} of {}() is indexed as a tensor (or a dict) "
                                          "in {}(): pass a tensor or dict argument by its name, "
                                          "or a tensor indexed by integers in its leading "
                                          "dimensions (x[i], x[i, j, :])",
                                          i + 1, g.name, g.name));
        }
        r.values[p] = args[i];
      } else if (one_expression ||
                 ((name || is_literal(args[i])) && !usage.assigned.count(p))) {
        // Expressions have no effects, and a name or literal the callee does not assign
        // reads the same everywhere: substitute the argument (literals stay weakly typed).
        r.values[p] = args[i];
      } else {
        std::string copy = fresh(fmt::format("{}_{}", p, g.name));
        copies.push_back(std::make_shared<Assign>(var(copy, args[i]->loc), args[i], n.loc));
        r.values[p] = var(copy, args[i]->loc);
      }
    }

    const Function* caller = env_;
    env_ = &g;
    stack_.push_back(&g);
    std::vector<ExprPtr> results;
    if (one_expression) {
      results.push_back(mutate(r.mutate(g.body[0]->as<Return>()->value)));
    } else {
      for (const auto& local : usage.assigned)
        if (!r.values.count(local)) r.values[local] = var(fresh(fmt::format("{}_{}", local, g.name)));
      for (const auto& v : usage.loop_vars)
        if (!r.values.count(v)) r.values[v] = var(fresh(fmt::format("{}_{}", v, g.name)));
      // A call made for its effects still computes what it returns (the value may call a
      // function that writes tensors); the results go unused.
      std::vector<std::string> result_names;
      for (size_t k = 0; k < (wanted == 0 ? returned : wanted); ++k)
        result_names.push_back(fresh(fmt::format("{}_result", g.name)));
      Body inlined = mutate(r.mutate(assign_returns(g.body, result_names)));
      pending_.insert(pending_.end(), copies.begin(), copies.end());
      pending_.insert(pending_.end(), inlined.begin(), inlined.end());
      if (wanted > 0)
        for (const auto& name : result_names) results.push_back(var(name, n.loc));
    }
    stack_.pop_back();
    env_ = caller;
    return results;
  }

  // ----- statements -----------------------------------------------------------------------

  StmtPtr mutate_node(const ExprStmt* n, const StmtPtr&) override {
    auto c = n->value->as<CallFunction>();
    if (!n->labels.empty())
      error(n->loc, "a label cannot be attached to a function call; label the loops inside the "
                    "called function instead");
    if (!c->unpacked_into.empty()) {
      // a, b = f(x): every value is computed before the targets are assigned, left to right.
      std::vector<ExprPtr> values = call(*c, c->unpacked_into.size());
      for (size_t k = 0; k < values.size(); ++k)
        pending_.push_back(
            std::make_shared<Assign>(mutate(c->unpacked_into[k]), values[k], n->loc));
      return nullptr;
    }
    std::vector<ExprPtr> r = call(*c, /*wanted=*/0);
    if (!r.empty() && r[0]->as<ExternCall>()) return std::make_shared<ExprStmt>(r[0], n->loc);
    return nullptr;  // the inlined body is in pending_
  }

  // A condition calling a function with statements is computed into a local before the loop
  // and again at the end of each iteration (the body has no `break` or `continue` to skip it),
  // each time from a copy of the function's statements of its own.
  StmtPtr mutate_node(const While* n, const StmtPtr&) override {
    auto [c, before_loop] = mutate_apart(n->cond);
    Body body = mutate(n->body);
    if (before_loop.empty()) return std::make_shared<While>(c, std::move(body), n->loc, n->labels);
    const Loc& at = n->cond->loc;
    ExprPtr flag = var(fresh("while_condition"), at);
    pending_.insert(pending_.end(), before_loop.begin(), before_loop.end());
    pending_.push_back(std::make_shared<Assign>(flag, c, at));
    auto [again, each_iteration] = mutate_apart(n->cond);
    body.insert(body.end(), each_iteration.begin(), each_iteration.end());
    body.push_back(std::make_shared<Assign>(flag, again, at));
    return std::make_shared<While>(flag, std::move(body), n->loc, n->labels);
  }

  StmtPtr mutate_node(const Return* n, const StmtPtr&) override {
    error(n->loc, "`return` is not supported in a jit function: it writes its results into "
                  "tensor arguments (the functions it calls may return values)");
  }
};

}  // namespace

Function inline_functions(const Function& fn, const CalleeTable& callees) {
  Function out = fn;
  out.body = Inliner(fn, callees).mutate(fn.body);
  return out;
}

}  // namespace parir
