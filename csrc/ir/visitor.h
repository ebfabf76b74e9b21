// Traversals over the IR. Both recurse into every child by default, so a pass overrides only the
// nodes it cares about.
//
// * IRVisitor reads the tree.
// * IRMutator rebuilds it bottom-up; a node is copied only when one of its children changed, so
//   an untouched subtree is shared with the input (passes can detect "unchanged" by pointer).
//   A statement mutator may return nullptr to delete the statement.
#pragma once

#include "ir/ir.h"

namespace parir {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  void visit(const ExprPtr& e);
  void visit(const StmtPtr& s);
  void visit(const Body& body);

 protected:
#define X(n) virtual void visit_node(const n* node);
  PARIR_FOR_EACH_EXPR(X)
  PARIR_FOR_EACH_STMT(X)
#undef X
};

// A visitor of a body that may hold only assignments (and ifs, unless told otherwise): any
// other statement (a loop, a block, a return, an expression statement, an atomic update, a wide
// access) and any extern call clears `ok`. The passes that copy, reorder or tile such bodies
// (widen_accesses, tile_time_loops, tile_matrix_products) build their scans on it.
class AssignmentsOnly : public IRVisitor {
 public:
  explicit AssignmentsOnly(bool allow_ifs = true) : allow_ifs_(allow_ifs) {}
  bool ok = true;

 protected:
  void visit_node(const For*) override;
  void visit_node(const While*) override;
  void visit_node(const If* node) override;
  void visit_node(const GpuBlock*) override;
  void visit_node(const Return*) override;
  void visit_node(const ExprStmt*) override;
  void visit_node(const AtomicUpdate*) override;
  void visit_node(const WideLoad*) override;
  void visit_node(const WideStore*) override;
  void visit_node(const ExternCall*) override;

 private:
  bool allow_ifs_;
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  ExprPtr mutate(const ExprPtr& e);
  StmtPtr mutate(const StmtPtr& s);
  virtual Body mutate(const Body& body);

 protected:
  // `self` is the node being visited, returned as-is when nothing changed.
#define X(n) virtual ExprPtr mutate_node(const n* node, const ExprPtr& self);
  PARIR_FOR_EACH_EXPR(X)
#undef X
#define X(n) virtual StmtPtr mutate_node(const n* node, const StmtPtr& self);
  PARIR_FOR_EACH_STMT(X)
#undef X
};

// Replaces reads of one variable with an expression.
class Substitute : public IRMutator {
 public:
  Substitute(std::string name, ExprPtr with) : name_(std::move(name)), with_(std::move(with)) {}

 protected:
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    return n->name == name_ ? with_ : self;
  }

 private:
  std::string name_;
  ExprPtr with_;
};

}  // namespace parir
