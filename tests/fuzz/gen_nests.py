"""The top-level statements of a generated program: `NestGenerator` draws parallel loop
nests, reductions, slice statements, `with parir.gpu:` blocks, host loops, softmax, time
stencils and matrix products.
"""

import math

from gen_base import LONG_SIZES, MANY_ROWS, SIZES, Loop, Scope
from gen_statements import StatementGenerator
from gen_values import (DTYPES, FLOATS, INT_BITS, INT_RANGE, INTS, PRECISION, Expr, Ty,
                        _dtype_kind, _fits, _fits_type, _interval, promote)


class NestGenerator(StatementGenerator):
    """Draws the nests of one program."""

    # -- nests --------------------------------------------------------------------------------

    def new_body_id(self):
        self.body_counter += 1
        return self.body_counter

    def loop_header(self, var, n, parallel_label=None):
        """`for var in range(...)` over [0, n) in one of the forms README.md allows; returns
        the Loop (its variable's range) and the size's code."""
        size = self.size_code(n)
        r = self.rng.random()
        if r < 0.6 or n < 2:
            header, lo, hi = f"range({size})", 0, n - 1
        elif r < 0.75:
            header, lo, hi = f"range(1, {size})", 1, n - 1
        elif r < 0.88:
            header, lo, hi = f"range({size} - 1, -1, -1)", 0, n - 1
            self.feature("negative_step")
        else:
            header, lo, hi = f"range(0, {size}, 2)", 0, n - 1
            self.feature("range_step")
        if parallel_label:
            self.code.emit(f"parir.label({parallel_label!r})")
        self.code.emit(f"for {var} in {header}:")
        return Loop(var, lo, hi, n, size, parallel_label is not None)

    def sizes(self, k):
        pool = SIZES if self.gpu_sized else SIZES + (1000,)
        out = [self.rng.choice(pool) for _ in range(k)]
        if k >= 2 and self.gpu_sized and self.rare_rng.random() < 0.04:
            # Many short rows: the outermost loop over thousands of rows, the innermost short,
            # any loops between them of one iteration.
            self.feature("many_rows")
            rows, row = self.rare_rng.choice(MANY_ROWS), self.rare_rng.choice((31, 32, 33, 64))
            self.many_rows = rows
            return [rows] + [1] * (k - 2) + [row]
        # Keep the plain Python run short: it runs element by element.
        limit, keep = 4000, None
        if self.gpu_sized and self.rng.random() < 0.3:
            # Sometimes an innermost loop long enough for 16-byte accesses (a kernel of at
            # least 4,096 iterations), off the 16-byte grid or on it.
            keep = k - 1
            out[keep] = self.rng.choice(LONG_SIZES)
            limit = 2 * out[keep]
            self.feature("long_loop")
        while math.prod(out) > limit:
            others = [i for i in range(k) if i != keep]
            i = max(others, key=lambda i: out[i])
            out[i] = 1 if out[i] <= 2 else self.rng.choice((1, 2))
        return out

    def host_loop_value(self, scope, hv, hn):
        """`h = <value> * t` (or + t, perhaps under a sine) at the top of a host loop's body, a
        local of the step number that the nest may read, as a time step computes its
        forcing: the host computes an integer one, the kernels a float one."""
        kind = self.rng.choice("fi")
        e = self.expr(scope, kind, self.rng.randint(1, 2))
        t = Expr(hv, Ty("int64", True), 0, hn - 1)
        op = self.rng.choice(["+", "*"])
        lo, hi = _interval(op, e, t)
        if lo is None:
            return
        ty = promote(e.ty, t.ty)
        v = Expr(f"({e.code} {op} {hv})", ty, lo, hi, e.exact and ty.kind != "f", e.prec,
                 e.ops + 1)
        if kind == "f" and self.rng.random() < 0.5:
            ty = v.ty if v.ty.kind == "f" else Ty("float64")
            v = Expr(f"parir.sin({v.code})", ty, -1, 1, False,
                     min(v.prec, PRECISION.index(ty.name)), v.ops + 1)
        if not _fits(v):
            return
        self.feature("host_loop_value")
        name = self.local_name("h")
        self.code.emit(f"{name} = {v.code}")
        scope.locals[name] = Expr(name, v.ty, v.lo, v.hi, v.exact, v.prec, v.ops)

    def nest_map(self):
        """A parallel loop nest of depth 1-3 writing elements: outer loops parallel, inner
        ones parallel (threads of blocks) or sequential; statements between levels run once
        per block. An outer sequential loop with only the parallel loop in it runs on the
        host, launching a kernel per iteration."""
        depth = self.rng.choice([1, 1, 2, 2, 3])
        sizes = self.sizes(depth)
        kinds = ["par"] + [self.rng.choice(["par", "seq", "seq_label"]) for _ in sizes[1:]]
        host = self.rng.random() < 0.15
        scope = Scope(body_id=self.new_body_id())
        if host:
            self.feature("host_loop")
            hv = self.local_name("t")
            hn = self.rng.randint(1, 3)
            self.code.emit(f"for {hv} in range({hn}):")
            self.code.depth += 1
            scope = scope.child(Loop(hv, 0, hn - 1, hn, str(hn), False, indexable=False))
            if self.rng.random() < 0.5:
                self.host_loop_value(scope, hv, hn)
        opened = 0
        # Statements between parallel levels write once per block: the loops inside must fit
        # one block, or the other blocks would not see the writes (rejected).
        block_stmts = self.rng.random() < 0.3
        for lvl, (n, kind) in enumerate(zip(sizes, kinds)):
            var = self.local_name("i")
            label = None
            if kind == "par":
                label = self.label("par", fits_block=block_stmts and lvl > 0)
            elif kind == "seq_label":
                label = self.label("seq")
                self.feature("unlisted_label")
            lp = self.loop_header(var, n, label)
            lp.parallel = kind == "par"
            self.code.depth += 1
            opened += 1
            scope = scope.child(lp, body_id=self.new_body_id())
            if lvl + 1 < depth and lp.parallel and any(k == "par" for k in kinds[lvl + 1:]):
                # Between parallel levels: runs once per block.
                if block_stmts:
                    self.feature("block_level_statement")
                    self.body(scope, 0, allow_locals=True)
        self.body(scope, 2, must_write=True)
        self.code.depth -= opened + (1 if host else 0)

    def nest_reduce(self):
        """A reduction over a reduce-labelled loop, into a local (fits one block, then used)
        or into a tensor element (any number of threads; atomics across blocks)."""
        outer = self.rng.random() < 0.75
        (n_out, n_red) = self.sizes(2)
        op = self.rng.choice(["+=", "-=", "+", "*=", "min", "max"])
        self.feature(f"reduce_{op}")
        scope = Scope(body_id=self.new_body_id())
        opened = 0
        gpu_block = False
        to_local = self.rng.random() < 0.5
        if outer:
            i = self.local_name("i")
            lp = self.loop_header(i, n_out, self.label("par"))
            self.code.depth += 1
            opened += 1
            scope = scope.child(lp, body_id=self.new_body_id())
        elif to_local:
            gpu_block = True
            self.feature("gpu_block")
            self.code.emit("with parir.gpu:")
            self.code.depth += 1
            opened += 1
        kind = self.rng.choice("iff")
        dtype = self.rng.choice(FLOATS if kind == "f" else INTS)
        # The element each iteration contributes, bounded so products stay small.
        acc_dtype = dtype
        block_init = outer and not to_local and self.rng.random() < 0.3
        # Any number of threads: a reduction into a local, or one after a block-level
        # statement, over several blocks is cut into kernels.
        red_label = self.label("reduce")
        if to_local or block_init:
            self.feature("reduce_block_statements_any_size")
        j = self.local_name("j")
        if to_local:
            acc = self.local_name("s")
            init = {"+=": "0", "-=": "0", "+": "0", "*=": "1"}.get(op)
            if kind == "f" and init is not None:
                init += ".0"
            if init is None:
                first = self.tensor_read(scope, kind) or self.literal(kind)
                init = first.code
            self.code.emit(f"{acc} = {init}")
            self.feature("reduce_into_local")
        else:
            target = self.new_tensor(acc_dtype, (n_out,) if outer else (1,), written=True)
            tidx = self.index_of(scope.loops[0], n_out) if outer else "0"
            acc = f"{self.tensor_code[target.name]}[{tidx}]"
            self.nest.reduced.add(target.name)
            self.feature("reduce_into_tensor")
            if block_init:
                # Set the target once per block before the reduction.
                self.code.emit(f"{acc} = {'1' if op == '*=' else '0'}")
                self.feature("block_level_statement")
        lp = self.loop_header(j, n_red, red_label)
        self.code.depth += 1
        inner = scope.child(lp, body_id=self.new_body_id())
        inner.loops[-1].parallel = False  # a reduction's iterations share the target
        # A shape-(1,) tensor would make the Python run's `t += e` an in-place broadcast
        # of shape (1,) into a 0-d tensor, which PyTorch refuses.
        self.no_bare1 += 1
        try:
            e = self.expr(inner, kind, self.rng.randint(0, 2))
        finally:
            self.no_bare1 -= 1
        if kind == "i" and not e.exact:
            e = self.tensor_read(inner, "i") or self.literal("i")
        if e.lo == e.hi:
            # The same value each iteration, known once the scalars are specialized.
            self.feature("reduce_constant_term")
            if op == "-=" and e.lo < 0:
                self.feature("reduce_subtract_negative_constant")
        if op == "*=" and (e.lo == e.hi or "&" in e.code):
            self.feature("reduce_multiply_constant")
        if op == "*=":
            # Factors near 1 (floats) or +-1 (integers): products stay in range.
            if kind == "f":
                e = Expr(f"(1.0 + 0.01 * parir.tanh({e.code}))", e.ty, 0.99, 1.01, False,
                         e.prec, e.ops + 3)
            elif e.ty.name == "uint8" and not e.ty.weak:
                # Unsigned: factors 1 and 2, whose products wrap alike on both sides.
                e = Expr(f"(({e.code} & 1) + 1)", e.ty, 1, 2, e.exact, e.prec, e.ops + 2)
            else:
                e = Expr(f"(1 - 2 * ({e.code} & 1))", e.ty, -1, 1, e.exact, e.prec, e.ops + 3)
        if kind == "i" and (abs(e.lo) > 100 or abs(e.hi) > 100):
            e = Expr(f"({e.code} % 7)", e.ty, 0, 6, True, e.prec, e.ops + 1)
        if op in ("min", "max") and not to_local and not _fits_type(e, target.dtype):
            # A min or max compares in the wider type and converts once (README, Reductions);
            # the plain loop converts at each step, which differs only for values the target
            # cannot hold.
            e = Expr(f"({e.code} % 7)", e.ty, 0, 6, e.exact, e.prec, e.ops + 1)
        if self.rng.random() < 0.3 and outer and self.rng.random() < 0.5:
            # The loop may compute other things too: an element per (i, j).
            self.feature("reduce_loop_other_work")
            value = self.expr(inner, "f", 1)
            z = self.new_tensor(self.rng.choice(FLOATS), (n_out, n_red), written=True)
            zidx = f"{self.index_of(scope.loops[0], n_out)}, {j}"
            if self.rng.random() < 0.3:
                # An elementwise update shaped like an accumulation, `z = max(e, z)`, of an
                # element that changes with the loop: not the loop's reduction.
                self.feature("reduce_loop_update_shaped_like_accumulation")
                value = Expr(f"parir.max({value.code}, {z.name}[{zidx}])", value.ty,
                             min(value.lo, -2), max(value.hi, 2), False, value.prec,
                             value.ops + 1)
            self.store(inner, z, zidx, value)
        if op in ("+=", "-=", "*="):
            self.code.emit(f"{acc} {op} {e.code}")
        elif op == "+":
            self.code.emit(f"{acc} = {acc} + {e.code}")
        else:
            fn = self.builtin(op)
            args = [acc, e.code]
            if self.rng.random() < 0.5:
                args.reverse()
            self.code.emit(f"{acc} = {fn}({', '.join(args)})")
        self.code.depth -= 1
        n_terms = n_red
        mag = max(abs(e.lo), abs(e.hi))
        if op in ("min", "max"):
            res = Expr(acc, e.ty, min(e.lo, -2), max(e.hi, 2), e.exact, e.prec, e.ops)
        elif op == "*=":
            res = Expr(acc, e.ty, -2, 2, e.exact, e.prec, e.ops + n_terms)
        else:
            res = Expr(acc, e.ty, -mag * n_terms - 2, mag * n_terms + 2, e.exact, e.prec,
                       e.ops + 1)
        if res.ty.kind == "i" and not _fits(res):
            # Sums and products wrap alike on both sides; the value is anywhere in the type.
            res.lo, res.hi = INT_RANGE[res.ty.name] if not res.ty.weak else (-2**31, 2**31)
        if to_local:
            # Use the result after the loop: every thread holds it.
            scope.locals[acc] = res
            if outer or gpu_block:
                kindw = _dtype_kind(dtype)
                if res.ty.weak and not _fits_type(res, dtype):
                    # A Python int out of the tensor's range: PyTorch refuses to store it.
                    dtype = "int64" if res.ty.kind == "i" else "float64"
                t = self.new_tensor(dtype, (n_out,) if outer else (1,), written=True)
                idx = self.index_of(scope.loops[0], n_out) if outer else "0"
                v = Expr(acc, res.ty, res.lo, res.hi, res.exact, res.prec, res.ops)
                if kindw == "f" and self.rng.random() < 0.5:
                    v = Expr(f"({acc} * 0.5)", res.ty, res.lo, res.hi, False, res.prec,
                             res.ops + 1)
                self.store(scope, t, idx, v)
                t.reduced = max(t.reduced, n_terms)
                if not _fits_type(res, t.dtype) and t.dtype in INTS:
                    t.lo, t.hi = INT_RANGE[t.dtype]
        else:
            self.nest.reduced.add(target.name)
            self.record_write(target, scope, "r", res, reduced=n_terms)
            if target.dtype in INTS:
                target.lo, target.hi = INT_RANGE[target.dtype]
        self.code.depth -= opened

    def nest_slices(self):
        """Slice statements: elementwise (`y[:] = x[:] * 2`), a row of a 2-d tensor inside a
        parallel loop, and slice reductions (`y[i] = parir.sum(x[i, :])`, `axis=k`)."""
        n, m = self.sizes(2)
        form = self.rng.choice(["elementwise", "row", "reduce_row", "reduce_axis", "reduce_all",
                                "arg_row", "scan_row"])
        self.feature(f"slice_{form}")
        kind = self.rng.choice("iff")
        dt_in = self.rng.choice(FLOATS if kind == "f" else INTS)
        dt_out = self.rng.choice(FLOATS if kind == "f" else INTS)
        fn = self.rng.choice(["sum", "prod", "min", "max"])
        if fn == "prod" and kind == "i":
            fn = "max"
        x = self.new_tensor(dt_in, (n, m), positive=(0.995, 1.005) if fn == "prod" else None)
        if x is None:
            return
        if kind == "i" and fn == "sum":
            x.lo, x.hi = (-4, 4) if dt_in != "uint8" else (1, 4)
            x.init = (x.lo, x.hi)
        xc = self.tensor_code[x.name]
        self.nest.reads.setdefault(x.name, set()).add((0, "slice"))
        if (fn == "sum" and dt_in in INTS and form.startswith("reduce") and
                (dt_out not in INTS or INT_BITS[dt_out] > INT_BITS[dt_in])):
            # The Python run sums in int64 (torch.sum), as README.md says reductions of
            # small integers do; only then does the result reach the wider target.
            self.feature("slice_sum_narrow_int_elements")
        if form == "elementwise":
            y = self.new_tensor(dt_out, (n, m), written=True)
            la, lb = self.label("par"), self.label("par")
            self.code.emit(f"parir.label({la!r})")
            self.code.emit(f"parir.label({lb!r})")
            c = self.literal(kind)
            if dt_in == "uint8" and c.lo < 0:
                c = Expr("3", Ty("int64", True), 3, 3)
            op = self.rng.choice(["+", "*", "-"])
            rhs = f"{xc}[:, :] {op} {c.code}"
            if kind == "f" and self.rng.random() < 0.5:
                rhs = f"parir.exp({xc}[:, :] * 0.5) {op} {c.code}"
            elif self.rng.random() < 0.3:
                # Shifted extents: rows 1.. of y from rows ..-1 of x.
                self.code.emit(f"{y.name}[1:, :] = {xc}[:-1, :] {op} {c.code}")
                self.feature("slice_bounds")
                self._slice_written(y, x, c, 2 if op == "*" else 1)
                return
            self.code.emit(f"{y.name}[:, :] = {rhs}")
            self._slice_written(y, x, c, 2)
            return
        if form == "reduce_axis":
            axis = self.rng.choice([0, 1])
            y = self.new_tensor(dt_out, ((m,) if axis == 0 else (n,)), written=True)
            # The first label names the target's dimension, the second the reduced one
            # (a reduction whatever its label says).
            la, lb = self.label("par"), self.label(self.rng.choice(["reduce", "par"]))
            self.code.emit(f"parir.label({la!r})")
            self.code.emit(f"parir.label({lb!r})")
            self.code.emit(f"{y.name}[:] = parir.{fn}({xc}[:, :], axis={axis})")
            self._reduced(y, x, fn, m if axis == 1 else n)
            return
        if form == "reduce_all":
            y = self.new_tensor(dt_out, (1,), written=True)
            self.code.emit("with parir.gpu:")
            with self.code.indent():
                label = self.label("reduce")
                n_threads, _, tpb = self.spec[label]
                if n_threads > (tpb or 1024):
                    self.feature("gpu_block_slice_reduction_multi_block")
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"{y.name}[0] = parir.{fn}({xc}[0, :])")
            self.feature("gpu_block")
            self._reduced(y, x, fn, m)
            return
        if form == "arg_row":
            return self._arg_row(x, n, m, kind)
        if form == "scan_row":
            return self._scan_row(x, n, m, kind, dt_out, fn)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            if form == "row":
                y = self.new_tensor(dt_out, (n, m), written=True)
                self.code.emit(f"parir.label({self.label('par', fits_block=True)!r})")
                idx = self.index_of(lp, n)
                self.code.emit(f"{y.name}[{idx}, :] = parir.max({xc}[{idx}, :], "
                               f"{xc}[{idx}, :] * 2)")
                self._slice_written(y, x, self.literal(kind), 2)
            else:
                y = self.new_tensor(dt_out, (n,), written=True)
                if self.rng.random() < 0.7:
                    self.code.emit(f"parir.label({self.label('reduce', fits_block=True)!r})")
                idx = self.index_of(lp, n)
                self.code.emit(f"{y.name}[{idx}] = parir.{fn}({xc}[{idx}, :])")
                self._reduced(y, x, fn, m)

    def _arg_row(self, x, n, m, kind):
        """`k[i] = parir.argmax(x[i, :])` (or argmin) per row, the row sequential in its thread
        or a parallel reduction of (value, index) pairs when its label is in the spec; the
        index is exact, so the runs must agree on every element."""
        fn = self.rng.choice(["argmax", "argmin"])
        y = self.new_tensor(self.rng.choice(("int64", "int32")), (n,), written=True)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            if self.rng.random() < 0.6:
                self.code.emit(f"parir.label({self.label('reduce', fits_block=True)!r})")
                self.feature("slice_arg_parallel")
            idx = self.index_of(lp, n)
            self.code.emit(f"{y.name}[{idx}] = parir.{fn}({self.tensor_code[x.name]}[{idx}, :])")
        y.written = True
        y.lo, y.hi = 0, m - 1

    def _scan_row(self, x, n, m, kind, dt_out, fn):
        """`out[i, :] = parir.cumsum(x[i, :])` (cumprod, cummin, cummax) per row, sequential in
        its thread or a block-wide parallel scan when its label maps to .scan()."""
        scan = {"sum": "cumsum", "prod": "cumprod", "min": "cummin", "max": "cummax"}[fn]
        if kind == "i" and fn == "sum":
            # Running sums of small integers in int64, stored to a type that holds them.
            dt_out = self.rng.choice(("int32", "int64"))
        y = self.new_tensor(dt_out, (n, m), written=True)
        i = self.local_name("i")
        lp = self.loop_header(i, n, self.label("par"))
        with self.code.indent():
            label = None
            if self.rng.random() < 0.6:
                # Half the time the scan may span several blocks (a chunk per block).
                label = self.label('scan', fits_block=self.rng.random() < 0.5)
                self.code.emit(f"parir.label({label!r})")
                self.feature("slice_scan_parallel")
            idx = self.index_of(lp, n)
            self.code.emit(f"{y.name}[{idx}, :] = parir.{scan}({self.tensor_code[x.name]}[{idx}, :])")
            if label and fn in ("min", "max") and self.rng.random() < 0.5:
                # A reduction of the row just scanned, under the scan's label: it reduces.
                z = self.new_tensor(dt_out, (n,), written=True)
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"{z.name}[{idx}] = parir.{fn}({y.name}[{idx}, :])")
                self.feature("slice_reduce_under_scan_label")
                self._reduced(z, x, fn, m)
        self._reduced(y, x, fn, m)

    def _slice_written(self, y, x, c, factor):
        y.written = True
        y.lo = min(y.lo, x.lo * factor - 8, -8)
        y.hi = max(y.hi, x.hi * factor + 8, 8)
        if y.dtype in INTS:
            y.lo, y.hi = INT_RANGE[y.dtype]
        y.prec = min(y.prec, x.prec)
        y.ops = max(y.ops, 3)

    def _reduced(self, y, x, fn, n):
        self._slice_written(y, x, None, n)
        y.reduced = max(y.reduced, n)
        self.nest.reduced.add(y.name)

    def nest_gpu_block(self):
        """`with parir.gpu:` sequential code on one thread: a running sum (each element
        depends on the previous one), a bounded while loop, an if."""
        self.feature("gpu_block")
        (n,) = self.sizes(1)
        x = self.new_tensor(self.rng.choice(DTYPES), (n,))
        if x is None:
            return
        # A float running sum goes to a float tensor: truncating it to an integer would turn
        # rounding differences into different integers.
        y = self.new_tensor(self.rng.choice(FLOATS + (() if x.dtype in FLOATS else
                                                     ("int32", "int64"))), (n,), written=True)
        self.code.emit("with parir.gpu:")
        with self.code.indent():
            scope = Scope(body_id=self.new_body_id())
            acc = self.local_name("run")
            self.code.emit(f"{acc} = 0")
            i = self.local_name("i")
            lp = self.loop_header(i, n)
            with self.code.indent():
                inner = scope.child(lp, body_id=self.new_body_id())
                xi = f"{self.tensor_code[x.name]}[{i}]"
                if x.dtype in FLOATS:
                    term = xi
                    self.code.emit(f"{acc} = {acc} + {term}")
                else:
                    self.code.emit(f"{acc} = {acc} + ({xi} % 3)" if x.dtype != "bool"
                                   else f"{acc} = {acc} + parir.int32({xi})")
                self.code.emit(f"{self.tensor_code[y.name]}[{i}] = {acc}")
                self.nest.reads.setdefault(x.name, set()).add((inner.body_id, i))
        y.written = True
        if y.dtype in INTS:
            y.lo, y.hi = -3 * n - 8, 3 * n + 8
            if x.dtype in FLOATS:
                y.lo, y.hi = INT_RANGE[y.dtype]
        else:
            y.lo, y.hi = -2 * n - 2, 2 * n + 2
            y.prec = min(y.prec, x.prec if x.dtype in FLOATS else len(PRECISION))
            y.reduced = max(y.reduced, n)

    def nest_softmax(self):
        """README.md's softmax: slice reductions into locals, then slice statements reading
        what the previous ones wrote in the same row."""
        self.feature("softmax")
        n, m = self.sizes(2)
        dt = self.rng.choice(("float32", "float64"))
        x = self.new_tensor(dt, (n, m))
        if x is None:
            return
        out = self.new_tensor(dt, (n, m), written=True)
        i = self.local_name("i")
        lj = self.label("par", fits_block=True)
        self.loop_header(i, n, self.label("par"))
        xc = self.tensor_code[x.name]
        with self.code.indent():
            mx, s = self.local_name("m"), self.local_name("s")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{mx} = parir.max({xc}[{i}, :])")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{out.name}[{i}, :] = parir.exp({xc}[{i}, :] - {mx})")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{s} = parir.sum({out.name}[{i}, :])")
            self.code.emit(f"parir.label({lj!r})")
            self.code.emit(f"{out.name}[{i}, :] /= {s}")
        out.written = True
        out.lo, out.hi = -2, 2
        out.prec = min(out.prec, PRECISION.index(dt))
        out.reduced = max(out.reduced, m)
        out.ops = 4
        self.nest.reduced.add(out.name)

    def nest_host_repeat(self):
        """A host loop around a parallel loop whose iterations update their own element:
        one kernel launch per host iteration, the host loop variable passed in."""
        self.feature("host_loop")
        (n,) = self.sizes(1)
        t = self.local_name("t")
        reps = self.rng.randint(1, 4)
        y = self.new_tensor(self.rng.choice(("float32", "float64", "int32", "int64")), (n,),
                            written=True)
        x = self.new_tensor(y.dtype, (n,))
        if x is None:
            return
        # The repetitions as a for loop, or as a CUDA port's host loop over an integer the host
        # keeps (`t = 0; while t < reps: ...; t += 1`, or doubling `t = 2 * t + 1` from 0,
        # whose values 0, 1, 3 stay within those of the for loop's t), or a window whose width
        # the host shrinks and the parallel loop's range reads.
        form = self.rng.choice(("for", "for", "count", "double", "window"))
        if form == "window":
            self._host_window(t, n, x, y)
            return
        if form != "for":
            self.feature("host_while")
            self.code.emit(f"{t} = 0")
            if form == "double":
                reps = min(reps, 3)
            limit = reps if form == "count" else (0, 1, 2, 4)[reps]
            self.code.emit(f"while {t} < {limit}:")
        else:
            self.code.emit(f"for {t} in range({reps}):")
        with self.code.indent():
            i = self.local_name("i")
            self.loop_header(i, n, self.label("par"))
            with self.code.indent():
                yc, xc = self.tensor_code[y.name], self.tensor_code[x.name]
                if y.dtype in FLOATS:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] * 0.5 + {xc}[{i}] + {t}")
                else:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] // 2 + {xc}[{i}] * {t}")
            if form == "count":
                self.code.emit(f"{t} += 1")
            elif form == "double":
                self.code.emit(f"{t} = 2 * {t} + 1")
        y.written = True
        y.lo, y.hi = y.lo - 40, y.hi + 40
        y.ops = max(y.ops, 3 * reps)

    def _host_window(self, t, n, x, y):
        """`w = n; while w > 0: for i in range(w): ...; w //= 2`: a parallel loop whose range
        reads a local the host updates (the tree reductions' and Blelloch scans' pattern), in
        one of the forms a range takes: its end, its start, or its end with a step."""
        self.feature("host_while")
        self.feature("host_range")
        w = self.local_name("w")
        size = self.size_code(n)
        self.code.emit(f"{w} = {size}")
        self.code.emit(f"{t} = 0")
        self.code.emit(f"while {w} > 0:")
        with self.code.indent():
            i = self.local_name("i")
            header = self.rng.choice((f"range({w})", f"range({size} - {w}, {size})",
                                      f"range(0, {w}, {self.rng.randint(2, 3)})"))
            self.code.emit(f"parir.label({self.label('par')!r})")
            self.code.emit(f"for {i} in {header}:")
            with self.code.indent():
                yc, xc = self.tensor_code[y.name], self.tensor_code[x.name]
                if y.dtype in FLOATS:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] * 0.5 + {xc}[{i}] + {t}")
                else:
                    self.code.emit(f"{yc}[{i}] = {yc}[{i}] // 2 + {xc}[{i}] + {t}")
            shrink = self.rng.choice((f"{w} //= 2", f"{w} = {w} >> 1",
                                      f"{w} -= {max(1, n // 3)}"))
            self.code.emit(shrink)
            self.code.emit(f"{t} += 1")
        y.written = True
        y.lo, y.hi = min(y.lo, 2 * x.lo) - 40, max(y.hi, 2 * x.hi) + 40
        y.ops = max(y.ops, 40)

    def nest_time_stencil(self):
        """A host loop over time steps around one to three one-dimensional stencil kernels
        (jacobi's pattern), which the compiler runs in tiles of time steps when there are
        four or more: each kernel writes its own tensor at i from the loop's other tensors at
        i plus offsets up to 3 (and a read-only tensor anywhere near i), so that no kernel
        reads an element another of its threads writes. Floats average their neighbours
        (values stay in range), integers XOR them."""
        self.feature("time_stencil")
        (n,) = self.sizes(1)
        dtype = self.rng.choice(("float32", "float64", "int32", "int64"))
        if self.rng.random() < 0.3:
            self._swapped_stencil(n, dtype)
            return
        kernels = self.rng.randint(1, 3)
        written = [self.new_tensor(dtype, (n,), written=True) for _ in range(kernels)]
        coefficient = self.new_tensor(dtype, (n,)) if self.rng.random() < 0.4 else None
        steps = self.rng.choice((2, 4, 5, 9, 33, 40))
        t = self.local_name("t")
        label = None
        self.code.emit(f"for {t} in range({steps}):")
        with self.code.indent():
            for j, target in enumerate(written):
                sources = [w for w in written if w is not target] or [target]
                radius = self.rng.randint(0, 3) if sources[0] is not target else 0
                if 2 * radius >= n:
                    radius = 0
                i = self.local_name("i")
                # Kernels of one step may share a label (one parallel spec for all).
                label = self.label("par", share=label)
                self.code.emit(f"parir.label({label!r})")
                self.code.emit(f"for {i} in range({radius}, {self.size_code(n)} - {radius}):")
                terms = []
                for _ in range(self.rng.randint(1, 3)):
                    src = self.rng.choice(sources)
                    d = self.rng.randint(-radius, radius)
                    terms.append(f"{self.tensor_code[src.name]}[{i} + {d}]" if d
                                 else f"{self.tensor_code[src.name]}[{i}]")
                if coefficient is not None and self.rng.random() < 0.7:
                    terms.append(f"{self.tensor_code[coefficient.name]}[{i}]")
                tc = self.tensor_code[target.name]
                with self.code.indent():
                    if dtype in FLOATS:
                        source = " + ".join(terms)
                        time = f" + 0.01 * {t}" if self.rng.random() < 0.3 else ""
                        self.code.emit(f"{tc}[{i}] = ({source}) / {len(terms)}{time}")
                    else:
                        time = f" ^ {t}" if self.rng.random() < 0.3 else ""
                        self.code.emit(f"{tc}[{i}] = {' ^ '.join(terms)}{time}")
        for w in written:
            w.written = True
            if dtype in FLOATS:
                w.lo, w.hi = w.lo - 0.5, w.hi + 0.5
                w.ops = max(w.ops, 4 * steps * kernels)
            else:
                w.lo, w.hi = -64, 64  # XORs of values in [-8, 8] and of steps below 64

    def _swapped_stencil(self, n, dtype):
        """The time loop as a CUDA port writes it with two buffers: the kernel reads src and
        writes dst, then `src, dst = dst, src` (or the arguments themselves swapped)."""
        self.feature("tensor_swap")
        a = self.new_tensor(dtype, (n,), written=True)
        b = self.new_tensor(dtype, (n,), written=True)
        steps = self.rng.choice((1, 2, 3, 4, 5, 9))
        if self.rng.random() < 0.5:
            src, dst = self.local_name("src"), self.local_name("dst")
            self.code.emit(f"{src}, {dst} = {self.tensor_code[a.name]}, {self.tensor_code[b.name]}")
        else:
            src, dst = self.tensor_code[a.name], self.tensor_code[b.name]
        radius = min(self.rng.randint(0, 2), (n - 1) // 2)
        t = self.local_name("t")
        self.code.emit(f"for {t} in range({steps}):")
        with self.code.indent():
            i = self.local_name("i")
            self.code.emit(f"parir.label({self.label('par')!r})")
            self.code.emit(f"for {i} in range({radius}, {self.size_code(n)} - {radius}):")
            offsets = sorted({self.rng.randint(-radius, radius) for _ in range(3)})
            terms = [f"{src}[{i} + {d}]" if d else f"{src}[{i}]" for d in offsets]
            with self.code.indent():
                if dtype in FLOATS:
                    self.code.emit(f"{dst}[{i}] = ({' + '.join(terms)}) / {len(terms)} + 0.01 * {t}")
                else:
                    self.code.emit(f"{dst}[{i}] = {' ^ '.join(terms)} ^ {t}")
            self.code.emit(f"{src}, {dst} = {dst}, {src}")
        for w in (a, b):
            w.written = True
            if dtype in FLOATS:
                w.lo, w.hi = min(a.lo, b.lo) - 0.5, max(a.hi, b.hi) + 0.5
                w.ops = max(w.ops, 4 * steps)
            else:
                w.lo, w.hi = -64, 64  # XORs of values in [-8, 8] and of steps below 64

    def nest_matrix_product(self):
        """A matrix product's loop nest: rows i over blocks, columns j over threads, and per
        pair an accumulation over k of loads of row i (A[i, k]) and of column j (B[k, j] or a
        transposed B[j, k]), then statements that store the result; the compiler runs it in
        register tiles from 32 rows and columns. Columns over all of them or a triangle (j
        from i, or up to i), k ranges that are not a multiple of the tiles' chunks, products,
        differences and maxima; one or two stores of t, or t added to the target."""
        self.feature("matrix_product")
        dtype = self.rng.choice(("float32", "float64", "int32", "int64"))
        m = self.rng.choice((31, 32, 33, 48, 70))
        triangle = self.rng.choice((None, None, "upper", "lower"))
        n = m if triangle else self.rng.choice((32, 40, 65))
        depth = self.rng.choice((5, 8, 13, 33))
        # trmm's and symm's k ranges follow the row: range(i + 1, m) or range(i) over a square A.
        k_range = None
        if not triangle and self.rng.random() < 0.3:
            depth = m
            k_range = self.rng.choice(("range({i} + 1, {n})", "range({i})"))
        a = self.new_tensor(dtype, (m, depth))
        transposed = self.rng.random() < 0.4
        b = self.new_tensor(dtype, (n, depth) if transposed else (depth, n))
        if a is None or b is None:
            return self.nest_map()
        c = self.new_tensor(dtype, (m, n), written=True)
        i, j, k, t = (self.local_name(v) for v in ("i", "j", "k", "t"))
        ac, bc, cc = (self.tensor_code[x.name] for x in (a, b, c))
        row = f"{ac}[{i}, {k}]"
        col = f"{bc}[{j}, {k}]" if transposed else f"{bc}[{k}, {j}]"
        floats = dtype in FLOATS
        updates = [f"{t} += {row} * {col}", f"{t} = {t} + ({row} - {col}) * {row}"]
        if floats:
            updates.append(f"{t} = {self.builtin('max')}({t}, {row} * {col})")
        else:
            updates.append(f"{t} = {t} ^ ({row} + {col})")
        update = self.rng.choice(updates)
        columns = {None: f"range({self.size_code(n)})", "upper": f"range({i}, {self.size_code(m)})",
                   "lower": f"range({i} + 1)"}[triangle]
        self.code.emit(f"parir.label({self.label('par')!r})")
        self.code.emit(f"for {i} in range({self.size_code(m)}):")
        with self.code.indent():
            self.code.emit(f"parir.label({self.label('par')!r})")
            self.code.emit(f"for {j} in {columns}:")
            with self.code.indent():
                init = self.rng.choice(('0', '1', '-2')) if not floats else self.rng.choice(
                    ('0.0', '0.5'))
                if self.rng.random() < 0.25:
                    init = f"{cc}[{i}, {j}]"  # as trmm starts from B[i, j]
                self.code.emit(f"{t} = {init}")
                ks = (k_range.format(i=i, n=self.size_code(depth)) if k_range
                      else f"range({self.size_code(depth)})")
                self.code.emit(f"for {k} in {ks}:")
                with self.code.indent():
                    self.code.emit(update)
                store = self.rng.random()
                if store < 0.5:
                    self.code.emit(f"{cc}[{i}, {j}] = {t}")
                elif store < 0.75 and triangle:
                    self.code.emit(f"{cc}[{i}, {j}] = {t}")
                    self.code.emit(f"{cc}[{j}, {i}] = {t}")
                else:
                    self.code.emit(f"{cc}[{i}, {j}] += {t}")
        c.written = True
        bound = 4.0 * 6 * depth + 2 if floats else 64 * depth + 64
        c.lo, c.hi = (-bound, bound) if floats else (-(1 << 16), 1 << 16)
        c.ops = max(c.ops, 3 * depth + 2)
