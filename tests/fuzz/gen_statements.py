"""Statements inside loops: `StatementGenerator` draws writes of tensor elements, locals,
if/else and bounded while loops, recording every write so that a nest stays race-free.
"""

import dataclasses
import math

from gen_expressions import ExpressionGenerator
from gen_values import (DTYPES, FLOATS, INT_RANGE, INTS, Expr, Ty, _dtype_kind, _fits, _fits_type,
                        _weak_fits, promote)


class StatementGenerator(ExpressionGenerator):
    """Draws the statements of one program."""

    # -- statements ---------------------------------------------------------------------------

    def store(self, scope, t, idx, e):
        """`t[idx] = e`, converting to t's dtype as README.md's rule 6 says; e must be exact
        when t holds integers or bools."""
        code = self.tensor_code[t.name]
        self.code.emit(f"{code}[{idx}] = {e.code}")
        self.record_write(t, scope, idx, e)

    def record_write(self, t, scope, idx, e, reduced=1):
        self.nest.writes.setdefault(t.name, set()).add((scope.body_id, idx))
        t.written = True
        if t.dtype in INTS or t.dtype == "bool":
            lo, hi = INT_RANGE[t.dtype]
            elo, ehi = (math.trunc(e.lo), math.trunc(e.hi)) if e.ty.kind == "f" else (e.lo, e.hi)
            if elo < lo or ehi > hi:
                t.lo, t.hi = lo, hi
            else:
                t.lo, t.hi = min(t.lo, elo), max(t.hi, ehi)
            if t.dtype == "bool":
                t.lo, t.hi = 0, 1
        else:
            t.lo, t.hi = min(t.lo, e.lo), max(t.hi, e.hi)
            t.prec = min(t.prec, e.prec)
            t.ops = max(t.ops, e.ops)
            t.reduced = max(t.reduced, reduced)

    def value_for(self, scope, t):
        """An expression to store into tensor t: exact for integer and bool tensors."""
        kind = _dtype_kind(t.dtype)
        if kind == "f" and self.rng.random() < 0.2:
            kind = "i"
            self.feature("mixed_promotion")
        if kind == "b" and self.rng.random() < 0.5:
            return self.cond(scope, 2)
        depth = self.rng.randint(1, 3)
        for _ in range(6):
            e = self.expr(scope, kind, depth)
            if kind == "f" or e.exact:
                if kind == "i" and t.dtype in INTS and not _fits_type(e, t.dtype):
                    continue
                return e
        return self.literal(kind)

    def assign_stmt(self, scope, allow_new=True):
        """A write of an element chosen by all parallel loop variables."""
        par = [lp for lp in scope.loops if lp.parallel]
        seq = [lp for lp in scope.loops if not lp.parallel and lp.indexable]
        # The target's dimensions: every parallel loop, maybe a sequential one too.
        dims = list(par)
        if seq and self.rng.random() < 0.5:
            dims.insert(self.rng.randint(0, len(dims)), self.rng.choice(seq))
        if not dims and not scope.loops:
            dims = []
        shape = tuple(lp.extent for lp in dims) or (1,)
        # Reuse a tensor of this shape that the nest may write, else a new output.
        cands = [t for t in self.tensors.values()
                 if t.shape == shape and t.view not in ("zerod", "bare1") and
                 self.tensor_code[t.name] == t.name]
        self.rng.shuffle(cands)
        idx = ", ".join(self.index_of(lp, lp.extent) for lp in dims) or "0"
        key = (scope.body_id, idx)
        target = None
        for t in cands[:3]:
            if self.nest.can_write(t.name, key) and t.written:
                target = t
                break
        if target is None:
            target = self.new_tensor(self.rng.choice(DTYPES), shape, written=True)
        e = self.value_for(scope, target)
        if not self.nest.can_write(target.name, key):
            # The value read the target elsewhere: write a fresh tensor instead.
            dtype = self.rng.choice(FLOATS if e.ty.kind == "f" or not e.exact else
                                    INTS if e.ty.kind == "i" else ("bool",))
            target = self.new_tensor(dtype, shape, written=True)
            if dtype in INTS and not _fits_type(e, dtype):
                e = self.literal("i")
        self.store(scope, target, idx, e)

    def local_stmt(self, scope):
        kind = self.rng.choice("iiff")
        e = self.expr(scope, kind, self.rng.randint(1, 3))
        name = self.local_name("v")
        self.code.emit(f"{name} = {e.code}")
        scope.locals[name] = dataclasses.replace(e, code=name)
        return name

    def if_stmt(self, scope, depth):
        c = self.cond(scope, 2)
        self.feature("if_else")
        self.code.emit(f"if {c.code}:")
        with self.code.indent():
            self.body(scope.child(), depth - 1, allow_locals=False)
        if self.rng.random() < 0.6:
            kw = "else:"
            if self.rng.random() < 0.3:
                kw = f"elif {self.cond(scope, 1).code}:"
                self.feature("elif")
            self.code.emit(kw)
            with self.code.indent():
                self.body(scope.child(), depth - 1, allow_locals=False)

    def while_stmt(self, scope):
        """A bounded while loop: a counter that rises by one each iteration, up to a small
        bound; the body updates a local accumulator."""
        self.feature("while_loop")
        w = self.local_name("w")
        acc = self.local_name("acc")
        kind = self.rng.choice("if")
        init = self.expr(scope, kind, 1)
        self.code.emit(f"{w} = 0")
        self.code.emit(f"{acc} = {init.code}")
        bound = self.rng.randint(1, 4)
        extra = ""
        if self.rng.random() < 0.4:
            extra = f" and {self.cond(scope, 1).code}"
        self.code.emit(f"while {w} < {bound}{extra}:")
        inner = scope.child()
        inner.locals[w] = Expr(w, Ty("int64", True), 0, bound)
        with self.code.indent():
            if kind == "f":
                step = self.expr(inner, "f", 1)
                self.code.emit(f"{acc} = {acc} * 0.5 + {step.code}")
                lo = min(init.lo, 0) + 2 * min(step.lo, 0)
                hi = max(init.hi, 0) + 2 * max(step.hi, 0)
                res = Expr(acc, promote(init.ty, step.ty), lo, hi, False,
                           min(init.prec, step.prec), init.ops + 2 * step.ops + 4)
            else:
                step = Expr("1", Ty("int64", True), 1, 1)
                if self.rng.random() < 0.5:
                    step = self.leaf(inner, "i")
                if not _weak_fits(init, step) or step.ty.kind != "i":
                    step = Expr("1", Ty("int64", True), 1, 1)
                lo = init.lo + bound * min(step.lo, 0)
                hi = init.hi + bound * max(step.hi, 0)
                res = Expr(acc, promote(init.ty, step.ty), lo, hi, init.exact and step.exact)
                if not _fits(res):
                    step = Expr("1", Ty("int64", True), 1, 1)
                    res = Expr(acc, promote(init.ty, step.ty), init.lo, init.hi + bound)
                self.code.emit(f"{acc} = {acc} + {step.code}")
            self.code.emit(f"{w} += 1")
        if res.ty.kind == "i" and not _fits(res):
            res.lo, res.hi = INT_RANGE.get(res.ty.name, (res.lo, res.hi))
        scope.locals[acc] = res

    def body(self, scope, depth, allow_locals=True, must_write=False):
        """Statements inside loops: locals, writes, if/else, while loops."""
        n = self.rng.randint(1, 3)
        wrote = False
        for k in range(n):
            r = self.rng.random()
            if allow_locals and r < 0.3:
                self.local_stmt(scope)
            elif allow_locals and r < 0.4:
                self.while_stmt(scope)
            elif r < 0.55 and depth > 0:
                self.if_stmt(scope, depth)
            else:
                self.assign_stmt(scope)
                wrote = True
        if must_write and not wrote:
            self.assign_stmt(scope)
