#include "passes/split_variable_webs.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/fresh_names.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// The assignments that can reach a point, by the name they assign (ids into Webs::defs).
using Reaching = std::map<std::string, std::set<int>>;

Reaching merge(Reaching a, const Reaching& b) {
  for (const auto& [name, defs] : b) a[name].insert(defs.begin(), defs.end());
  return a;
}

struct Def {
  std::string name;
  bool loop_var;  // the variable of a for loop (not an assignment)
};

// Walks the function in order, tracking reaching definitions; in the first walk every read
// joins the assignments that reach it, in the second each name is rewritten to its web's.
class Webs : public IRMutator {
 public:
  explicit Webs(const SpecializedFunction& prog) : fresh_(prog) {}

  void analyze(const Body& body) {
    Reaching r = entry(body);
    walk(body, r);
  }

  // Chooses the names. One web keeps the name: the one that can see the name's value on entry
  // (a parameter, or a read that may come before any assignment), or else the first. The others
  // get fresh names, recorded in `renamed` so that messages can use the user's name, unless
  // every web of the name is a loop variable's (loops reusing `i` stay readable).
  void name_webs(std::map<std::string, std::string>& renamed) {
    std::map<std::string, std::vector<int>> webs;  // name -> its webs, in program order
    std::set<std::string> assigned;                 // names with an assignment (not a loop)
    for (int d = 0; d < static_cast<int>(defs_.size()); ++d) {
      if (d == entry_.at(defs_[d].name)) continue;
      if (!defs_[d].loop_var) assigned.insert(defs_[d].name);
      auto& list = webs[defs_[d].name];
      int root = find(d);
      if (std::find(list.begin(), list.end(), root) == list.end()) list.push_back(root);
    }
    for (const auto& [name, roots] : webs) {
      bool only_loops = !assigned.count(name);
      int entry_root = find(entry_.at(name));
      bool entry_seen = std::find(roots.begin(), roots.end(), entry_root) != roots.end();
      int keeper = entry_seen ? entry_root : roots.front();
      web_name_[entry_root] = name;
      for (int root : roots) {
        if (only_loops || root == keeper) {
          web_name_[root] = name;
        } else {
          web_name_[root] = fresh_.make(name + "_");
          renamed[web_name_[root]] = name;
        }
      }
    }
    renaming_ = true;
  }

  Body rewrite(const Body& body) {
    Reaching r = entry(body);
    return walk(body, r);
  }

 private:
  FreshNames fresh_;
  std::vector<Def> defs_;
  std::vector<int> parent_;
  std::map<std::string, int> entry_;                 // name -> its value on entry
  std::map<std::pair<const void*, std::string>, int> def_at_;
  std::map<int, std::string> web_name_;              // web root -> name
  bool renaming_ = false;
  const Reaching* reaching_ = nullptr;               // at the expression being rewritten

  int find(int d) {
    while (parent_[d] != d) d = parent_[d] = parent_[parent_[d]];
    return d;
  }
  void unite(int a, int b) { parent_[find(a)] = find(b); }

  int def(const void* site, const std::string& name, bool loop_var) {
    auto [it, added] = def_at_.try_emplace({site, name}, static_cast<int>(defs_.size()));
    if (added) {
      defs_.push_back(Def{name, loop_var});
      parent_.push_back(it->second);
    }
    return it->second;
  }

  // The names assigned anywhere (locals and loop variables), each reaching from its entry def.
  Reaching entry(const Body& body) {
    Reaching r;
    collect(body, r);
    return r;
  }
  void collect(const Body& body, Reaching& r) {
    for (const auto& s : body) {
      if (auto a = s->as<Assign>()) {
        if (auto v = a->target->as<Var>()) add_entry(v->name, r);
      } else if (auto u = s->as<AtomicUpdate>()) {
        if (u->result) add_entry(u->result->as<Var>()->name, r);
      } else if (auto f = s->as<For>()) {
        add_entry(f->var, r);
        collect(f->body, r);
      } else if (auto w = s->as<While>()) {
        collect(w->body, r);
      } else if (auto i = s->as<If>()) {
        collect(i->then_body, r);
        collect(i->else_body, r);
      } else if (auto g = s->as<GpuBlock>()) {
        collect(g->body, r);
      }
    }
  }
  void add_entry(const std::string& name, Reaching& r) {
    if (!entry_.count(name)) entry_[name] = def(nullptr, name, false);
    r[name] = {entry_[name]};
  }

  // The name a definition writes, or a read with these reaching definitions sees.
  std::string name_of(const std::string& name, const std::set<int>& defs) {
    if (defs.empty()) return name;
    return web_name_.at(find(*defs.begin()));
  }

  ExprPtr read(const ExprPtr& e, const Reaching& r) {
    if (!renaming_) {
      join_reads(e, r);
      return e;
    }
    reaching_ = &r;
    return mutate(e);
  }
  void join_reads(const ExprPtr& e, const Reaching& r) {
    struct Reads : IRVisitor {
      Webs& w;
      const Reaching& r;
      Reads(Webs& w_, const Reaching& r_) : w(w_), r(r_) {}
      void visit_node(const Var* v) override {
        auto it = r.find(v->name);
        if (it == r.end() || it->second.empty()) return;
        for (int d : it->second) w.unite(d, *it->second.begin());
      }
    } reads(*this, r);
    reads.visit(e);
  }

  ExprPtr mutate_node(const Var* v, const ExprPtr& self) override {
    auto it = reaching_->find(v->name);
    if (it == reaching_->end()) return self;
    std::string n = name_of(v->name, it->second);
    return n == v->name ? self : var(n, v->loc, v->type);
  }

  Body walk(const Body& body, Reaching& r) {
    Body out;
    for (const auto& s : body) out.push_back(walk(s, r));
    return out;
  }

  StmtPtr walk(const StmtPtr& s, Reaching& r) {
    if (auto a = s->as<Assign>()) {
      ExprPtr value = read(a->value, r);
      if (auto v = a->target->as<Var>()) {
        int d = def(s.get(), v->name, false);
        r[v->name] = {d};
        if (!renaming_) return s;
        return std::make_shared<Assign>(var(name_of(v->name, {d}), v->loc, v->type), value,
                                        a->loc, a->labels);
      }
      ExprPtr target = read(a->target, r);
      return renaming_ ? std::make_shared<Assign>(target, value, a->loc, a->labels) : s;
    }
    if (auto u = s->as<AtomicUpdate>()) {
      ExprPtr target = read(u->target, r);
      ExprPtr compare = u->compare ? read(u->compare, r) : nullptr;
      ExprPtr value = read(u->value, r);
      ExprPtr result = u->result;
      if (auto v = result ? result->as<Var>() : nullptr) {
        int d = def(s.get(), v->name, false);
        r[v->name] = {d};
        if (renaming_) result = var(name_of(v->name, {d}), v->loc, v->type);
      }
      if (!renaming_) return s;
      return std::make_shared<AtomicUpdate>(u->op, target, value, compare, result, u->loc,
                                            u->labels);
    }
    if (auto f = s->as<For>()) {
      ExprPtr lo = read(f->lo, r), hi = read(f->hi, r), step = read(f->step, r);
      int d = def(s.get(), f->var, true);
      Reaching head = r;
      head[f->var] = {d};
      // After the loop the name holds its value from before (no iterations) or from the end
      // of the last iteration.
      Reaching out = settle(f->body, head, [&](Reaching& next) { next[f->var] = {d}; });
      Body body = walk(f->body, out);
      r = merge(r, out);
      if (!renaming_) return s;
      return std::make_shared<For>(name_of(f->var, {d}), lo, hi, step, std::move(body), f->loc,
                                   f->labels, f->par, f->reduction);
    }
    if (auto w = s->as<While>()) {
      Reaching head = settle(w->body, r, [](Reaching&) {}, w->cond);
      ExprPtr cond = read(w->cond, head);
      Reaching out = head;
      Body body = walk(w->body, out);
      r = head;
      return renaming_ ? std::make_shared<While>(cond, std::move(body), w->loc, w->labels) : s;
    }
    if (auto i = s->as<If>()) {
      ExprPtr cond = read(i->cond, r);
      Reaching then_r = r, else_r = r;
      Body then_body = walk(i->then_body, then_r);
      Body else_body = walk(i->else_body, else_r);
      r = merge(then_r, else_r);
      return renaming_ ? std::make_shared<If>(cond, std::move(then_body), std::move(else_body),
                                              i->loc, i->labels)
                       : s;
    }
    if (auto g = s->as<GpuBlock>()) {
      Body body = walk(g->body, r);
      return renaming_ ? std::make_shared<GpuBlock>(std::move(body), g->loc, g->labels) : s;
    }
    if (auto ret = s->as<Return>()) {
      if (ret->value) read(ret->value, r);
      for (const auto& e : ret->elements) read(e, r);
      return s;
    }
    if (auto e = s->as<ExprStmt>()) {
      ExprPtr value = read(e->value, r);
      return renaming_ ? std::make_shared<ExprStmt>(value, e->loc, e->labels) : s;
    }
    return s;
  }

  // The reaching definitions at the head of a loop: those on entry merged with those at the end
  // of the body, until nothing changes (`reset` re-establishes the loop variable). The body is
  // walked without renaming; a while condition is read at every head.
  template <typename Reset>
  Reaching settle(const Body& body, Reaching head, Reset reset, const ExprPtr& cond = nullptr) {
    bool was_renaming = renaming_;
    renaming_ = false;
    for (;;) {
      if (cond && !was_renaming) join_reads(cond, head);
      Reaching out = head;
      walk(body, out);
      Reaching next = merge(head, out);
      reset(next);
      if (next == head) break;
      head = std::move(next);
    }
    renaming_ = was_renaming;
    return head;
  }
};

}  // namespace

void split_variable_webs(SpecializedFunction& prog) {
  Webs webs(prog);
  webs.analyze(prog.body);
  webs.name_webs(prog.renamed_locals);
  prog.body = webs.rewrite(prog.body);
}

}  // namespace parir
