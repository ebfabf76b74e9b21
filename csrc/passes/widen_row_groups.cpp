#include "passes/widen_row_groups.h"

#include <algorithm>
#include <map>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Reads replaced by the registers a wide load filled (access_key -> local).
class UseLoaded : public IRMutator {
 public:
  explicit UseLoaded(const std::map<std::string, std::string>& loaded) : loaded_(loaded) {}

 protected:
  ExprPtr mutate_node(const FlatLoad* n, const ExprPtr& self) override {
    auto it = loaded_.find(access_key(*n));
    return it == loaded_.end() ? IRMutator::mutate_node(n, self)
                               : var(it->second, n->loc, n->type);
  }

 private:
  const std::map<std::string, std::string>& loaded_;
};

class RowGroupWidener : public IRMutator {
 public:
  RowGroupWidener(SpecializedFunction& prog, Kernel& k, FreshNames& names)
      : prog_(prog), k_(k), names_(names) {}

 protected:
  StmtPtr mutate_node(const For* n, const StmtPtr& self) override {
    auto it = k_.row_groups.find(n->var);
    if (!n->par || it == k_.row_groups.end()) return IRMutator::mutate_node(n, self);
    width_ = it->second;
    aligned_.clear();
    widened_ = false;
    bytes_ = 0;
    Body wide = widen(n->body);
    if (!widened_) return self;
    // Rows kept in shared memory are aligned to 16 bytes: only tensors need the test.
    Body body = wide;
    if (!aligned_.empty()) {
      ExprPtr when = std::make_shared<PointersAligned>(
          std::vector<std::string>(aligned_.begin(), aligned_.end()), bytes_, n->loc);
      body = {std::make_shared<If>(when, std::move(wide), n->body, n->loc)};
    }
    return std::make_shared<For>(n->var, n->lo, n->hi, n->step, std::move(body), n->loc,
                                 n->labels, n->par, n->reduction);
  }

 private:
  SpecializedFunction& prog_;
  Kernel& k_;
  FreshNames& names_;
  int64_t width_ = 1;             // W of the loop being widened
  std::set<std::string> aligned_;  // the tensors it accesses W elements at a time
  int64_t bytes_ = 0;              // the most bytes of those accesses
  bool widened_ = false;           // some accesses (of tensors or shared memory) were widened

  // A body with each set of W accesses that the W statements starting somewhere make at
  // consecutive offsets moved at once; the bodies of branches (a thread's last group) alike.
  Body widen(const Body& body) {
    Body out;
    const size_t w = static_cast<size_t>(width_);
    size_t i = 0;
    while (i < body.size()) {
      if (auto b = body[i]->as<If>()) {
        out.push_back(std::make_shared<If>(b->cond, widen(b->then_body), widen(b->else_body),
                                           b->loc, b->labels));
        ++i;
      } else if (i + w <= body.size() && widen_statements(body, i, out)) {
        i += w;
      } else {
        out.push_back(body[i++]);
      }
    }
    return out;
  }

  // The W statements from body[i], with their accesses at consecutive offsets moved at once,
  // appended to `out`; false (and nothing appended) when they are not W copies of a statement
  // for consecutive elements or none of their accesses can be moved so.
  bool widen_statements(const Body& body, size_t i, Body& out) {
    std::vector<const Assign*> copies;
    std::set<std::string> assigned;
    std::vector<const FlatLoad*> stores;
    for (int64_t c = 0; c < width_; ++c) {
      auto a = body[i + static_cast<size_t>(c)]->as<Assign>();
      if (!a) return false;
      copies.push_back(a);
      if (auto v = a->target->as<Var>()) assigned.insert(v->name);
      if (auto t = a->target->as<FlatLoad>()) stores.push_back(t);
    }
    if (!stores.empty() && (stores.size() != copies.size() || !consecutive(stores, assigned)))
      return false;
    std::vector<const FlatLoad*> moved;  // the first of each set of W accesses moved at once
    if (!stores.empty()) moved.push_back(stores[0]);

    // The copies' reads, position by position: the same reads of consecutive elements.
    std::vector<std::vector<const FlatLoad*>> reads(copies.size());
    for (size_t c = 0; c < copies.size(); ++c) {
      unconditional_loads(copies[c]->value, reads[c]);
      if (reads[c].size() != reads[0].size()) return false;
    }
    bool only_loads = stores.empty() && assigned.size() == copies.size();
    for (size_t c = 0; c < copies.size(); ++c)
      only_loads = only_loads && reads[c].size() == 1 && copies[c]->value.get() == reads[c][0];
    Body loads;
    std::vector<std::map<std::string, std::string>> loaded(copies.size());
    for (size_t p = 0; p < reads[0].size(); ++p) {
      std::vector<const FlatLoad*> at;
      for (const auto& r : reads) at.push_back(r[p]);
      if (loaded[0].count(access_key(*at[0])) || !consecutive(at, assigned)) continue;
      moved.push_back(at[0]);
      std::vector<std::string> regs;
      for (size_t c = 0; c < copies.size(); ++c) {
        // Copies that only load (a kept row's registers) load into their own targets.
        if (only_loads) {
          regs.push_back(copies[c]->target->as<Var>()->name);
          continue;
        }
        regs.push_back(names_.make(at[0]->tensor + "_g"));
        add_kernel_local(prog_, k_, regs.back(), at[0]->type);
        loaded[c][access_key(*at[c])] = regs.back();
      }
      loads.push_back(std::make_shared<WideLoad>(at[0]->tensor, at[0]->offset, std::move(regs),
                                                 copies[0]->loc));
    }
    if (moved.empty()) return false;
    widened_ = true;
    for (const FlatLoad* m : moved) {
      if (in_shared_memory(m->tensor)) continue;
      aligned_.insert(m->tensor);
      bytes_ = std::max(bytes_, width_ * size_in_bytes(m->type.scalar));
    }

    out.insert(out.end(), loads.begin(), loads.end());
    if (only_loads) return true;
    std::vector<ExprPtr> values;
    for (size_t c = 0; c < copies.size(); ++c) {
      ExprPtr value = UseLoaded(loaded[c]).mutate(copies[c]->value);
      if (stores.empty())
        out.push_back(std::make_shared<Assign>(copies[c]->target, std::move(value),
                                               copies[c]->loc, copies[c]->labels));
      else
        values.push_back(std::move(value));
    }
    if (!stores.empty())
      out.push_back(std::make_shared<WideStore>(stores[0]->tensor, stores[0]->offset,
                                                std::move(values), copies[0]->loc));
    return true;
  }

  bool in_shared_memory(const std::string& name) const {
    for (const auto& a : k_.shared_arrays)
      if (a.name == name) return true;
    return false;
  }

  // Whether W accesses are of one tensor at offsets o, o + 1, ..., o + W - 1, with o on a
  // W-element boundary and the group 8 or 16 bytes, unchecked, their offsets reading no element
  // and nothing the W statements assign.
  bool consecutive(const std::vector<const FlatLoad*>& accesses,
                   const std::set<std::string>& assigned) const {
    const FlatLoad& first = *accesses[0];
    const int64_t bytes = width_ * size_in_bytes(first.type.scalar);
    if ((bytes != 8 && bytes != 16) || known_power_of_two_divisor(first.offset) % width_ != 0)
      return false;
    for (size_t c = 0; c < accesses.size(); ++c) {
      const FlatLoad& a = *accesses[c];
      if (a.tensor != first.tensor || a.type != first.type || !a.checks.empty() ||
          mentions(a.offset, assigned) || contains(a.offset, ExprKind::FlatLoad) ||
          constant_difference(a.offset, first.offset) != std::optional<int64_t>(c))
        return false;
    }
    return true;
  }
};

}  // namespace

void widen_row_groups(SpecializedFunction& prog, Lowered& lowered) {
  FreshNames names(prog, lowered);
  for (auto& k : lowered.kernels) {
    if (k.row_groups.empty()) continue;
    RowGroupWidener widener(prog, k, names);
    k.root = widener.mutate(k.root);
  }
}

}  // namespace parir
