#include "passes/tile_time_loops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "ir/fresh_names.h"
#include "ir/queries.h"
#include "ir/visitor.h"

namespace parir {
namespace {

// Each block's share of the elements: one tile's core. With the halo below, 384 elements per
// tile for jacobi (radius 2 per time step, 32 steps per launch), one block on each SM of an
// H100 for its 34,000 elements, two thirds of the work in the core.
constexpr int64_t kTileCore = 256;
// The halo on each side (time steps per launch times the radius per step) at most: a launch
// runs the most time steps that keep it within this, up to kMaxStepsPerLaunch.
constexpr int64_t kMaxHalo = 64;
constexpr int64_t kMaxStepsPerLaunch = 32;
// Fewer time steps per launch would not pay for the halo; so the radius per step is at most
// kMaxHalo / kMinStepsPerLaunch.
constexpr int64_t kMinStepsPerLaunch = 4;
constexpr int64_t kMinSteps = kMinStepsPerLaunch;  // host loop iterations, at least
constexpr int64_t kMaxTileBytes = 32 * 1024;       // shared memory of a block's tiles
// Up to this many elements one block takes them all, and so needs no halo and runs every time
// step in one launch: four elements per thread per kernel at most.
constexpr int64_t kMaxSingleTile = 4096;

const Type kIndex{ScalarType::I64, false};
const Type kBool{ScalarType::Bool, false};

ExprPtr imm(int64_t v) { return int_imm(v, {}, kIndex); }
ExprPtr add(ExprPtr a, ExprPtr b) {
  return binary(BinaryOp::Add, std::move(a), std::move(b), {}, kIndex);
}
ExprPtr mul(ExprPtr a, ExprPtr b) {
  return binary(BinaryOp::Mul, std::move(a), std::move(b), {}, kIndex);
}
ExprPtr both(ExprPtr a, ExprPtr b) {
  return binary(BinaryOp::And, std::move(a), std::move(b), {}, kBool);
}
ExprPtr comparison(BinaryOp op, ExprPtr a, ExprPtr b) {
  return binary(op, std::move(a), std::move(b), {}, kBool);
}
ExprPtr plus_constant(ExprPtr a, int64_t c) { return c == 0 ? a : add(std::move(a), imm(c)); }

// An access of a tensor that the loop writes: at the iteration's variable plus `offset`.
struct Access {
  std::string tensor;
  int64_t offset = 0;
  bool write = false;
};

// The accesses of a kernel's loop body to the tensors the loop writes, and whether the body is
// one that a tile can run: assignments and ifs only, with every access to those tensors at the
// loop variable plus a constant.
class StencilScan : public AssignmentsOnly {
 public:
  StencilScan(std::string var, const std::set<std::string>& written)
      : var_(std::move(var)), written_(written) {}
  std::vector<Access> accesses;

 protected:
  void visit_node(const Assign* n) override {
    if (auto t = n->target->as<FlatLoad>()) {
      record(*t, true);
      visit(t->offset);
    }
    visit(n->value);
  }
  void visit_node(const FlatLoad* n) override {
    record(*n, false);
    IRVisitor::visit_node(n);
  }

 private:
  std::string var_;
  const std::set<std::string>& written_;

  void record(const FlatLoad& l, bool write) {
    if (!written_.count(l.tensor)) return;
    std::optional<int64_t> c = coefficient(l.offset, var_);
    std::optional<int64_t> d = constant_difference(l.offset, var(var_, {}, kIndex));
    if (c != 1 || !d || !l.checks.empty()) {
      ok = false;
      return;
    }
    accesses.push_back({l.tensor, *d, write});
  }
};

// A kernel of the loop as a tile runs it.
struct StencilKernel {
  const Kernel* kernel = nullptr;
  const For* loop = nullptr;
  int64_t lo = 0, hi = 0;                  // its iterations
  int64_t min_offset = 0, max_offset = 0;  // of its accesses to the written tensors
  int64_t radius = 0;  // the farthest an element it writes reads from, in elements
};

std::optional<StencilKernel> stencil_kernel(const Kernel& k, const std::string& host_var,
                                            const std::set<std::string>& written) {
  auto f = k.root->as<For>();
  if (!f || k.levels.size() != 1 || !k.levels[0].threads || k.bounds_checked || k.cluster != 1 ||
      k.lanes != 1 || k.warps != 1 || !f->par || f->reduction || f->par->cooperative)
    return std::nullopt;
  for (const auto& v : k.host_vars)
    if (v != host_var) return std::nullopt;
  auto lo = f->lo->as<IntImm>(), hi = f->hi->as<IntImm>(), step = f->step->as<IntImm>();
  if (!lo || !hi || !step || step->value != 1) return std::nullopt;
  StencilScan scan(f->var, written);
  scan.visit(f->body);
  if (!scan.ok || scan.accesses.empty()) return std::nullopt;
  StencilKernel s{&k, f, lo->value, hi->value, scan.accesses[0].offset, scan.accesses[0].offset, 0};
  for (const auto& a : scan.accesses) {
    s.min_offset = std::min(s.min_offset, a.offset);
    s.max_offset = std::max(s.max_offset, a.offset);
  }
  // Every element a thread writes is one that no other thread of the kernel reads or writes.
  for (const auto& w : scan.accesses) {
    if (!w.write) continue;
    for (const auto& a : scan.accesses) {
      if (a.tensor == w.tensor && a.offset != w.offset) return std::nullopt;
      s.radius = std::max(s.radius, std::abs(a.offset - w.offset));
    }
  }
  return s;
}

bool contiguous(const TensorType& t) {
  int64_t stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

int64_t numel(const TensorType& t) {
  int64_t n = 1;
  for (int64_t s : t.shape) n *= s;
  return n;
}

// How a loop is tiled.
struct Tiling {
  const PlanStep* loop = nullptr;
  std::vector<StencilKernel> kernels;  // in launch order
  std::vector<std::string> tensors;    // the parameters the kernels use, in parameter order
  std::vector<std::string> written;    // those they write, in parameter order
  int64_t steps = 0;                   // time steps per launch
  int64_t core = 0;                    // elements a block computes and writes back
  int64_t halo = 0;                    // elements on each side of the core
  int64_t extent = 0;                  // elements of a tile: the core and both halos
  int64_t tiles = 0;                   // blocks
  int64_t threads = 0;                 // per block
};

std::optional<Tiling> plan_tiling(const SpecializedFunction& prog, const Lowered& l,
                                  const PlanStep& s) {
  if (s.kind != PlanStep::Kind::For || s.body.empty()) return std::nullopt;
  auto lo = s.lo->as<IntImm>(), hi = s.hi->as<IntImm>(), step = s.step->as<IntImm>();
  if (!lo || !hi || !step || step->value <= 0) return std::nullopt;
  const int64_t trip =
      hi->value > lo->value ? (hi->value - lo->value + step->value - 1) / step->value : 0;
  if (trip < kMinSteps || trip > (int64_t{1} << 40)) return std::nullopt;
  std::set<std::string> written, used;
  std::vector<const Kernel*> kernels;
  for (const auto& launch : s.body) {
    const Kernel* k =
        launch.kind == PlanStep::Kind::Launch ? l.kernel(launch.kernel) : nullptr;
    if (!k) return std::nullopt;
    kernels.push_back(k);
    written.insert(k->written.begin(), k->written.end());
    used.insert(k->tensors.begin(), k->tensors.end());
  }
  Tiling t;
  t.loop = &s;
  int64_t radius = 0, longest = 0;
  for (const Kernel* k : kernels) {
    std::optional<StencilKernel> sk = stencil_kernel(*k, s.var, written);
    if (!sk) return std::nullopt;
    radius += sk->radius;
    t.kernels.push_back(*sk);
  }
  for (const auto& name : prog.tensor_params) {
    if (!used.count(name)) continue;
    t.tensors.push_back(name);
    if (!written.count(name)) continue;
    const TensorType& type = prog.tensors.at(name);
    if (!contiguous(type)) return std::nullopt;
    t.written.push_back(name);
    longest = std::max(longest, numel(type));
  }
  if (t.written.size() != written.size()) return std::nullopt;  // a temporary is written
  int64_t element_bytes = 0;  // of one element of each written tensor
  for (const auto& name : t.written) element_bytes += size_in_bytes(prog.tensors.at(name).elem);
  if (longest <= kMaxSingleTile && longest * element_bytes <= kMaxTileBytes) {
    // One block holds every element: no halo, and every time step in one launch.
    t.steps = trip;
    t.core = longest;
  } else {
    t.steps = radius == 0 ? kMaxStepsPerLaunch : std::min(kMaxStepsPerLaunch, kMaxHalo / radius);
    if (t.steps < kMinStepsPerLaunch) return std::nullopt;
    t.steps = std::min(t.steps, trip);
    t.core = kTileCore;
    t.halo = t.steps * radius;
  }
  t.extent = t.core + 2 * t.halo;
  if (t.extent * element_bytes > kMaxTileBytes) return std::nullopt;
  t.tiles = (longest + t.core - 1) / t.core;
  t.threads = std::min<int64_t>(1024, (t.extent + 31) / 32 * 32);
  return t;
}

// A kernel body with the accesses to the loop's written tensors moved to their tiles: the
// element at `var + c` is the tile's at `index + c`. The host loop's variable becomes `time`.
class ToTiles : public IRMutator {
 public:
  ToTiles(const std::map<std::string, std::string>& tiles, std::string var, ExprPtr index,
          std::string host_var, ExprPtr time)
      : tiles_(tiles),
        var_(std::move(var)),
        index_(std::move(index)),
        host_var_(std::move(host_var)),
        time_(std::move(time)) {}

 protected:
  ExprPtr mutate_node(const FlatLoad* n, const ExprPtr& self) override {
    auto tile = tiles_.find(n->tensor);
    if (tile == tiles_.end()) return IRMutator::mutate_node(n, self);
    int64_t c = *constant_difference(n->offset, var(var_, {}, kIndex));
    return std::make_shared<FlatLoad>(tile->second, plus_constant(index_, c), n->type, n->loc);
  }
  ExprPtr mutate_node(const Var* n, const ExprPtr& self) override {
    return n->name == host_var_ ? time_ : self;
  }

 private:
  const std::map<std::string, std::string>& tiles_;
  std::string var_;
  ExprPtr index_;
  std::string host_var_;
  ExprPtr time_;
};

class TileBuilder {
 public:
  TileBuilder(SpecializedFunction& prog, FreshNames& names, const Tiling& t,
              std::map<std::string, std::string> temporaries)
      : prog_(prog), names_(names), t_(t), temporaries_(std::move(temporaries)) {
    for (const auto& w : t.written) tile_names_[w] = names_.make(w + "_tile");
  }

  // The kernel that runs the time steps from the loop variable plus `first` steps: from the
  // tensors into the temporaries, or (`back`) from the temporaries into the tensors.
  Kernel build(const std::string& name, int64_t first, bool back) {
    Kernel k;
    k.name = name;
    k.tpb = t_.threads;
    k.levels = {ParLevel{t_.tiles, false}, ParLevel{t_.threads, true}};
    for (const auto& w : t_.written)
      k.shared_arrays.push_back({tile_names_.at(w), prog_.tensors.at(w).elem, t_.extent});
    k.tensors = t_.tensors;
    for (const auto& w : t_.written) k.tensors.push_back(temporaries_.at(w));
    for (const auto& w : t_.written) k.written.push_back(back ? w : temporaries_.at(w));
    k.host_vars = {t_.loop->var};
    for (const auto& sk : t_.kernels)
      k.locals.insert(sk.kernel->locals.begin(), sk.kernel->locals.end());

    const std::string block = names_.make("tile");
    const std::string start = names_.make("tile_start");
    local(k, start);
    const ExprPtr start_var = var(start, {}, kIndex);
    Body body;
    // The tile's first element: its core's less the halo.
    body.push_back(
        assign(start_var, add(mul(var(block, {}, kIndex), imm(t_.core)), imm(-t_.halo))));
    body.push_back(copy_loop(k, start_var, 0, t_.extent, back, /*into_tile=*/true));
    body.push_back(time_loop(k, start_var, first));
    body.push_back(copy_loop(k, start_var, t_.halo, t_.halo + t_.core, back, /*into_tile=*/false));
    LoopPar blocks;
    blocks.threads = t_.tiles;
    blocks.tpb = t_.threads;
    k.root = std::make_shared<For>(block, imm(0), imm(t_.tiles), imm(1), std::move(body),
                                   t_.kernels.front().loop->loc,
                                   std::vector<std::string>{"time tiles"}, blocks);
    return k;
  }

 private:
  SpecializedFunction& prog_;
  FreshNames& names_;
  const Tiling& t_;
  std::map<std::string, std::string> temporaries_;
  std::map<std::string, std::string> tile_names_;

  Type loop_var_type() const { return Type{prog_.int_type, false}; }

  void local(Kernel& k, const std::string& name) { add_kernel_local(prog_, k, name, kIndex); }

  static StmtPtr assign(ExprPtr target, ExprPtr value) {
    return std::make_shared<Assign>(std::move(target), std::move(value), Loc{});
  }

  StmtPtr thread_loop(const std::string& v, int64_t lo, int64_t hi, Body body,
                      std::vector<std::string> labels = {}) {
    LoopPar threads;
    threads.threads = t_.threads;
    threads.tpb = t_.threads;
    return std::make_shared<For>(v, imm(lo), imm(hi), imm(1), std::move(body), Loc{},
                                 std::move(labels), threads);
  }

  // Tile elements [lo, hi) from the tensors' elements (into_tile) or back to them, where the
  // tensors have them; from or to the temporaries when `back` says so.
  StmtPtr copy_loop(Kernel& k, const ExprPtr& start, int64_t lo, int64_t hi, bool back,
                    bool into_tile) {
    const std::string e = names_.make("e");
    const std::string at = names_.make("element");
    local(k, at);
    const ExprPtr e_var = var(e, {}, loop_var_type()), at_var = var(at, {}, kIndex);
    // The copies of the tensors of each length, under one test that the element exists.
    std::map<int64_t, Body> copies;
    for (const auto& w : t_.written) {
      const TensorType& type = prog_.tensors.at(w);
      const Type elem{type.elem, false};
      const bool from_temporary = into_tile == back;  // loads from the temporary when back
      const std::string tensor = from_temporary ? temporaries_.at(w) : w;
      ExprPtr global = std::make_shared<FlatLoad>(tensor, at_var, elem, Loc{});
      ExprPtr tile = std::make_shared<FlatLoad>(tile_names_.at(w), e_var, elem, Loc{});
      copies[numel(type)].push_back(into_tile ? assign(tile, global) : assign(global, tile));
    }
    Body body{assign(at_var, add(start, e_var))};
    for (auto& [length, copy] : copies) {
      ExprPtr inside = both(comparison(BinaryOp::Ge, at_var, imm(0)),
                            comparison(BinaryOp::Lt, at_var, imm(length)));
      body.push_back(std::make_shared<If>(inside, std::move(copy), Body{}, Loc{}));
    }
    return thread_loop(e, lo, hi, std::move(body),
                       {into_tile ? "tile from memory" : "tile core to memory"});
  }

  // The time steps [t + first, t + first + steps) that remain of the loop, each running every
  // kernel on the tile: the iterations whose accesses fall in the tile and in the kernel's range.
  StmtPtr time_loop(Kernel& k, const ExprPtr& start, int64_t first) {
    const PlanStep& loop = *t_.loop;
    const int64_t step = loop.step->as<IntImm>()->value;
    const std::string time = names_.make(loop.var + "_step");
    const ExprPtr time_var = var(time, {}, loop_var_type());
    const ExprPtr t = var(loop.var, {}, kIndex);
    Body steps;
    for (const auto& sk : t_.kernels) {
      const std::string e = names_.make("e");
      const ExprPtr e_var = var(e, {}, loop_var_type());
      const std::string& v = sk.loop->var;
      add_kernel_local(prog_, k, v, loop_var_type());
      ToTiles to_tiles(tile_names_, v, e_var, loop.var, time_var);
      Body run = to_tiles.mutate(sk.loop->body);
      ExprPtr v_var = var(v, {}, loop_var_type());
      ExprPtr in_range =
          both(comparison(BinaryOp::Ge, v_var, imm(sk.lo)), comparison(BinaryOp::Lt, v_var, imm(sk.hi)));
      Body body{assign(v_var, add(start, e_var)),
                std::make_shared<If>(in_range, std::move(run), Body{}, sk.loop->loc)};
      steps.push_back(thread_loop(e, std::max<int64_t>(0, -sk.min_offset),
                                  t_.extent - std::max<int64_t>(0, sk.max_offset), std::move(body),
                                  sk.loop->labels));
    }
    ExprPtr lo = add(t, imm(first * step));
    ExprPtr hi = std::make_shared<Call>(
        Builtin::Min, std::vector<ExprPtr>{loop.hi, add(t, imm((first + t_.steps) * step))}, kIndex,
        Loc{});
    return std::make_shared<For>(time, lo, hi, loop.step, std::move(steps), Loc{});
  }
};

}  // namespace

void tile_time_loops(SpecializedFunction& prog, Lowered& lowered) {
  FreshNames names(prog, lowered);
  bool changed = false;
  // Kernels are named after the function and numbered (split_host_device); these come last.
  size_t next_kernel = lowered.kernels.size();
  for (auto& s : lowered.plan.steps) {
    std::optional<Tiling> t = plan_tiling(prog, lowered, s);
    if (!t) continue;
    std::map<std::string, std::string> temporaries;
    for (const auto& w : t->written) {
      const std::string temp = names.make(w + "_alt");
      TensorType type = prog.tensors.at(w);
      prog.tensors[temp] = type;
      prog.temporaries.push_back(temp);
      lowered.plan.temporaries.push_back({temp, type, true});
      temporaries[w] = temp;
    }
    TileBuilder builder(prog, names, *t, temporaries);
    std::vector<Kernel> tiled;
    for (int half = 0; half < 2; ++half)
      tiled.push_back(builder.build(fmt::format("{}_{}", lowered.plan.function, next_kernel++),
                                    half * t->steps, half == 1));
    std::vector<PlanStep> body;
    for (auto& k : tiled) {
      PlanStep launch;
      launch.kind = PlanStep::Kind::Launch;
      launch.kernel = k.name;
      launch.grid = k.grid();
      launch.block = k.tpb;
      launch.args = k.tensors;
      launch.args.insert(launch.args.end(), k.host_vars.begin(), k.host_vars.end());
      body.push_back(std::move(launch));
      lowered.kernels.push_back(std::move(k));
    }
    // The tiles read every tensor for several time steps while the written ones change.
    for (const auto& w : t->written) {
      ApartTensors apart{w, {}};
      for (const auto& name : t->tensors)
        if (name != w) apart.others.push_back(name);
      if (!apart.others.empty()) lowered.plan.apart.push_back(std::move(apart));
    }
    s.body = std::move(body);
    s.step = int_imm(s.step->as<IntImm>()->value * 2 * t->steps, s.step->loc, s.step->type);
    changed = true;
  }
  if (!changed) return;
  // The kernels that the tiled loops replaced are launched nowhere else.
  std::set<std::string> launched;
  for_each_launch(lowered.plan.steps, [&](const PlanStep& s) { launched.insert(s.kernel); });
  lowered.kernels.erase(std::remove_if(lowered.kernels.begin(), lowered.kernels.end(),
                                       [&](const Kernel& k) { return !launched.count(k.name); }),
                        lowered.kernels.end());
  resolve_launch_args(lowered.plan);
}

}  // namespace parir
