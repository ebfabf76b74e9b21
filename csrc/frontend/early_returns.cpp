#include "frontend/early_returns.h"

namespace parir::frontend {
namespace {

// Whether every path through the body (already rewritten) ends in a return.
bool always_returns(const Body& body) {
  if (body.empty()) return false;
  if (body.back()->as<Return>()) return true;
  auto i = body.back()->as<If>();
  return i && always_returns(i->then_body) && always_returns(i->else_body);
}

Body concat(Body a, const Body& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

Body early_returns_as_branches(const Body& body) {
  Body out;
  for (size_t k = 0; k < body.size(); ++k) {
    const StmtPtr& s = body[k];
    if (s->as<Return>()) {
      out.push_back(s);
      return out;  // what follows never runs
    }
    auto i = s->as<If>();
    if (!i) {
      out.push_back(s);
      continue;
    }
    Body then_body = early_returns_as_branches(i->then_body);
    Body else_body = early_returns_as_branches(i->else_body);
    const Body rest(body.begin() + k + 1, body.end());
    const bool then_returns = always_returns(then_body), else_returns = always_returns(else_body);
    if (!rest.empty() && then_returns != else_returns) {
      // The statements after the if run only on the branch that does not return.
      Body& open = then_returns ? else_body : then_body;
      open = early_returns_as_branches(concat(open, rest));
      out.push_back(std::make_shared<If>(i->cond, std::move(then_body), std::move(else_body),
                                         i->loc, i->labels));
      return out;
    }
    out.push_back(std::make_shared<If>(i->cond, std::move(then_body), std::move(else_body),
                                       i->loc, i->labels));
    if (then_returns && else_returns) return out;  // what follows never runs
  }
  return out;
}

}  // namespace parir::frontend
