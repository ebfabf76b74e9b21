// Small questions passes ask of the IR.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace parir {

// Does the expression read one of these variables?
bool mentions(const ExprPtr& e, const std::set<std::string>& vars);

// Is the expression made of constants, the given variables, arithmetic and the math library
// alone (no other variable, no memory, no call of a user's or external function)? Then it
// gives the same value wherever those variables have the same values.
bool pure_of(const ExprPtr& e, const std::set<std::string>& variables);

// Does the body contain a parallel loop (or, with gpu_blocks, a `with parir.gpu:` block)?
bool contains_parallel_code(const Body& body, bool gpu_blocks);

// Does the statement hold a reduction loop (one that detect_reductions gave a Reduction; scan
// loops aside)?
bool contains_reduction(const StmtPtr& s);

// The tensors that some assignment, atomic update or wide store in the body stores to (x[i] =
// ..., x[i, :] += ..., parir.atomic_add(x[i], ...)), before or after flatten_indices.
std::set<std::string> stored_tensors(const Body& body);

// How many statements at the start of a scan loop's body compute its element: detect_scans puts
// them first, ending with the assignment to the Reduction's `value` (see Reduction in ir.h).
size_t scan_element_statements(const For& scan_loop);

// Whether the body holds an expression of this kind anywhere (passes check with it that an
// earlier pass has removed a kind of node).
bool contains(const Body& body, ExprKind kind);
bool contains(const ExprPtr& e, ExprKind kind);
bool contains(const Body& body, StmtKind kind);

// Whether the statement reads or writes memory (tensors, shared arrays, through externals),
// as the code generator's barriers must order.
bool touches_memory(const StmtPtr& s);

// How many iterations the loop runs, when its range(lo, hi, step) is made of constants (and
// none so large that the count could overflow).
std::optional<int64_t> constant_trip_count(const For& loop);

// How much an integer expression grows when `v` grows by one, when it is affine in v (sums,
// differences and products by constants of v and of expressions that do not mention it).
std::optional<int64_t> coefficient(const ExprPtr& e, const std::string& v);

// The largest power of two (at most 2^30) known to divide every value of an integer
// expression: 2^30 for zero, 1 when nothing is known.
int64_t known_power_of_two_divisor(const ExprPtr& e);

// The value of an integer expression of literals and of the names in `values`, computed as the
// IR computes it (ir/arith.h; a comparison gives 1 or 0); nothing for a null expression, other
// names and nodes, or an undefined result (division by zero).
std::optional<int64_t> integer_value(const ExprPtr& e,
                                     const std::map<std::string, int64_t>& values);

// The constant c with a == b + c whatever the variables' values, when the two integer
// expressions are sums and differences of the same terms and of constants, products by
// constants multiplied out (the offsets of x[i, j - 1] and x[i, j]: -1; of x[i - 1, j] and
// x[i, j] in a tensor of 16384 columns, (i - 1) * 16384 + j and i * 16384 + j: -16384);
// nullopt when that is not seen.
std::optional<int64_t> constant_difference(const ExprPtr& a, const ExprPtr& b);

// Why the host cannot compute `e`, an expression of the launch plan (its loops' ranges and
// conditions, its ifs' conditions, its assignments to host locals): the first node at fault, in
// the order a visitor meets them, and what it does. Nothing when `e` is integer arithmetic over
// `host_names` (host loop variables and host locals) with the plan's builtins (is_host_builtin).
struct NotOnHost {
  enum class Reason {
    GpuValue,    // a Var not in host_names
    TensorData,  // a Load
    Float,       // a floating-point value or operation
    Builtin,     // a Call the plan does not evaluate
    Extern,      // an ExternCall
  };
  Reason reason;
  const ExprNode* node;
};
std::optional<NotOnHost> why_not_on_host(const ExprPtr& e, const std::set<std::string>& host_names);

// The locals and loop variables that the body assigns (atomic updates' result locals too).
std::set<std::string> assigned_names(const Body& body);
// The same without the loop variables: the names of assignments and atomic updates' results.
std::set<std::string> assigned_locals(const Body& body);

// Every binding of each local in the body, nested ones too, in program order: its assignment,
// or nullptr where something else binds it (a loop variable, an atomic update's old value).
std::map<std::string, std::vector<const Assign*>> local_bindings(const Body& body);

// The body's own statements (not nested ones) that assign a local the body assigns nowhere
// else, and carry no label: `m, n = x.shape` or `half = n // 2` at a function's top, whose value
// the local holds wherever it is read.
std::vector<const Assign*> single_assignments_at_top(const Body& body);

// Every name the body binds or reads: locals, loop variables, reduction accumulators and the
// tensors it indexes.
std::set<std::string> names_in(const Body& body);

// An element access's identity within a statement (after flatten_indices): the tensor and the
// offset as written.
std::string access_key(const FlatLoad& l);

// The element reads (after flatten_indices) that every evaluation of `e` performs, in
// evaluation order: not those under a Select's branches or the right operand of `and` / `or`,
// which may be skipped (and may be out of bounds when they are).
void unconditional_loads(const ExprPtr& e, std::vector<const FlatLoad*>& out);

// The names of the Python functions the body calls ("helper", "module.helper").
std::set<std::string> called_names(const Body& body);

}  // namespace parir
