"""Expressions of the generated programs: `ExpressionGenerator` draws arithmetic, math
functions, casts, conditional expressions, comparisons, tensor reads and calls of helper
functions, each with its type and value interval, keeping the guarantees generate.py lists.
"""

import dataclasses
import math
import random

from gen_base import GeneratorBase, Scope
from gen_values import (FLOATS, INT_RANGE, INTS, PRECISION, Expr, Ty, _dtype_kind, _fits,
                        _interval, _weak_fits, promote)


class ExpressionGenerator(GeneratorBase):
    """Draws the expressions of one program."""

    # -- expressions --------------------------------------------------------------------------

    def expr(self, scope, kind, depth):
        """An expression of kind 'i', 'f' or 'b' (its type may be any of that kind)."""
        for _ in range(8):
            e = self._expr(scope, kind, depth)
            if e is not None and _fits(e):
                return e
        return self.literal(kind)

    def _expr(self, scope, kind, depth):
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf(scope, kind)
        if kind == "b":
            return self.cond(scope, depth)
        r = self.rng.random()
        if r < 0.45:
            return self.binop(scope, kind, depth)
        if r < 0.6:
            return self.unary(scope, kind, depth)
        if r < 0.75:
            return self.cast(scope, kind, depth)
        if r < 0.85:
            return self.select(scope, kind, depth)
        if r < 0.95:
            return self.call_helper(scope, kind, depth)
        return self.leaf(scope, kind)

    def literal(self, kind):
        if kind == "f":
            v = self.rng.choice([0.5, 1.5, -2.0, 0.25, 3.0, -0.125])
            return Expr(repr(v), Ty("float64", True), v, v)
        if kind == "b":
            v = self.rng.random() < 0.5
            return Expr(repr(v), Ty("bool", True), int(v), int(v))
        v = self.rng.choice([1, 2, 3, 5, 7, -1, -3])
        return Expr(str(v) if v >= 0 else f"({v})", Ty("int64", True), v, v)

    def leaf(self, scope, kind):
        r = self.rng.random()
        if r < 0.5:
            e = self.tensor_read(scope, kind)
            if e is not None:
                return e
        if r < 0.65 and kind == "i" and scope.loops:
            lp = self.rng.choice(scope.loops)
            return Expr(lp.var, Ty("int64", True), lp.lo, lp.hi)
        if r < 0.8:
            cands = [e for e in scope.locals.values() if e.ty.kind == kind]
            if cands:
                return self.rng.choice(cands)
        if r < 0.9 and kind != "b":
            cands = [e for e in self.scalars.values() if e.ty.kind == kind and
                     not (self.no_bare1 and e.code in self.bare1)]
            if cands and self.rng.random() < 0.6:
                return self.rng.choice(cands)
            if len(self.params) < 14 and not self.in_helper:
                return self.scalar_leaf(kind)
        return self.literal(kind)

    def index_for(self, scope, shape):
        """Index codes for a read of a tensor of `shape`: a loop variable whose range lies in
        the dimension, counted from the start or the end, or a constant. None when some
        dimension cannot be indexed."""
        parts = []
        for d in shape:
            loops = [lp for lp in scope.loops if lp.indexable and lp.lo >= 0 and lp.hi < d]
            if loops and self.rng.random() < 0.9:
                lp = self.rng.choice(loops)
                parts.append(self.index_of(lp, d))
            elif d > 0:
                parts.append(self.rng.choice(["0", "-1", str(d - 1)]))
            else:
                return None
        return ", ".join(parts)

    def index_of(self, lp, d):
        r = self.rng.random()
        if r < 0.75:
            return lp.var
        self.feature("negative_or_reversed_index")
        if r < 0.88:
            return f"{lp.var} - {d}"            # Python negative index: counts from the end
        size = lp.size_code if lp.extent == d else str(d)
        return f"{size} - 1 - {lp.var}"

    def tensor_read(self, scope, kind, create=True):
        want = [t for t in self.tensors.values()
                if _dtype_kind(t.dtype) == kind and t.view not in ("zerod", "bare1")]
        self.rng.shuffle(want)
        for t in want[:4]:
            idx = self.index_for(scope, t.shape)
            if idx is None:
                continue
            key = (scope.body_id, idx)
            if not self.nest.can_read(t.name, key):
                continue
            self.nest.reads.setdefault(t.name, set()).add(key)
            return self._read_expr(t, idx)
        if not create or not scope.loops:
            return None
        dims = [lp for lp in scope.loops if lp.indexable]
        if not dims:
            return None
        k = min(len(dims), self.rng.choice([1, 1, 2]))
        chosen = self.rng.sample(dims, k)
        shape = tuple(lp.extent for lp in chosen)
        dtype = self.rng.choice({"f": FLOATS, "i": INTS, "b": ("bool",)}[kind])
        t = self.new_tensor(dtype, shape)
        if t is None:
            return None
        # A tensor only this method reads may be an optional input. Drawn from a generator of
        # its own, so that the programs of other seeds stay as they were.
        coin = random.Random(f"{self.seed} {t.name} optional")
        if self.tensor_code[t.name] == t.name and coin.random() < 0.12:
            t.optional, t.absent = True, coin.random() < 0.5
            self.feature("optional_tensor")
        idx = ", ".join(self.index_of(lp, lp.extent) for lp in chosen)
        self.nest.reads.setdefault(t.name, set()).add((scope.body_id, idx))
        return self._read_expr(t, idx)

    def _read_expr(self, t, idx):
        code = f"{self.tensor_code[t.name]}[{idx}]"
        if t.optional:
            # The value read where the argument is None: one of its own values, of its dtype.
            value = {"b": "True", "i": str(int(t.hi) or int(t.lo))}.get(_dtype_kind(t.dtype),
                                                                      repr(float(t.hi)))
            code = f"({code} if {t.name} is not None else parir.{t.dtype}({value}))"
        exact = t.prec == len(PRECISION) or not t.written
        return Expr(code, Ty(t.dtype), t.lo, t.hi, exact=exact,
                    prec=t.prec if t.dtype in FLOATS or t.written else len(PRECISION),
                    ops=t.ops)

    def binop(self, scope, kind, depth):
        a = self.expr(scope, kind, depth - 1)
        ops = ["+", "-", "*"] + (["/"] if kind == "f" else ["//", "%", "&", "|", "^", "<<", ">>"])
        op = self.rng.choice(ops + ["min", "max", "**"])
        if op in ("<<", ">>"):
            b = Expr(str(self.rng.randint(0, 3)), Ty("int64", True), 0, 0)
            b.lo = b.hi = int(b.code)
        elif op in ("/", "//", "%"):
            b = self.divisor(scope, kind, depth)
        elif op == "**":
            b = Expr("2", Ty("int64", True), 2, 2)
        else:
            b = self.expr(scope, kind, depth - 1)
        if self.rng.random() < 0.5 and op in ("+", "*", "min", "max", "&", "|", "^"):
            a, b = b, a
        ty = promote(a.ty, b.ty)
        if op == "/" and a.ty.kind == "i" and b.ty.kind == "i":
            ty = Ty("float64", a.ty.weak and b.ty.weak)
        if not _weak_fits(a, b):
            return None
        lo, hi = _interval(op, a, b)
        if lo is None:
            return None
        if op in ("&", "|", "^", "<<", ">>", "//", "%") and ty.kind != "i":
            return None
        if op == "<<" and a.lo < 0:
            return None   # a negative shifted left is undefined in C++
        if op in ("min", "max"):
            code = f"{self.builtin(op)}({a.code}, {b.code})"
        else:
            code = f"({a.code} {op} {b.code})"
        exact = a.exact and b.exact and ty.kind != "f"
        e = Expr(code, ty, lo, hi, exact, min(a.prec, b.prec), a.ops + b.ops + 1)
        if ty.kind == "f":
            e.exact = a.exact and b.exact and op in ("min", "max")
        return e

    def divisor(self, scope, kind, depth):
        """A divisor that is never zero: a non-zero literal, or |e| + 1."""
        if self.rng.random() < 0.5:
            v = self.rng.choice([2, 3, 5, -3, 7] if kind == "i" else [2.0, 4.0, -0.5, 3.0])
            code = str(v) if v > 0 else f"({v})"
            return Expr(code, Ty("int64" if kind == "i" else "float64", True), v, v)
        e = self.expr(scope, kind, depth - 1)
        if e.ty.name == "uint8" or e.ty.name == "bool":
            return Expr("3", Ty("int64", True), 3, 3)
        one = "1" if kind == "i" else "1.0"
        m = max(abs(e.lo), abs(e.hi))
        if kind == "i" and e.ty.name != "int64" and m + 1 > INT_RANGE[e.ty.name][1]:
            return Expr("3", Ty("int64", True), 3, 3)
        return Expr(f"({self.builtin('abs')}({e.code}) + {one})", e.ty, 1, m + 1, e.exact,
                    e.prec, e.ops + 2)

    def unary(self, scope, kind, depth):
        a = self.expr(scope, kind, depth - 1)
        if kind == "i":
            op = self.rng.choice(["-", "abs", "~"])
            if op == "-":
                e = Expr(f"(-{a.code})", a.ty, -a.hi, -a.lo, a.exact, a.prec, a.ops + 1)
            elif op == "~":
                e = Expr(f"(~{a.code})", a.ty, -a.hi - 1, -a.lo - 1, a.exact, a.prec, a.ops + 1)
            else:
                lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
                e = Expr(f"{self.builtin('abs')}({a.code})", a.ty, lo,
                         max(abs(a.lo), abs(a.hi)), a.exact, a.prec, a.ops + 1)
            return e
        fn = self.rng.choice(["exp", "log", "sqrt", "sin", "cos", "tanh", "abs", "atan2", "neg",
                              "erf", "sigmoid", "atan", "asinh", "expm1", "log1p", "hypot",
                              "clamp", "floor", "round"])
        self.feature(f"math_{fn}")
        m = max(abs(a.lo), abs(a.hi))
        if fn == "neg":
            return Expr(f"(-{a.code})", a.ty, -a.hi, -a.lo, a.exact, a.prec, a.ops + 1)
        # Math of an integer gives a float (float64); of a float, its own type.
        ty = a.ty if a.ty.kind == "f" else Ty("float64")
        prec = min(a.prec, PRECISION.index(ty.name))
        ops = a.ops + 1
        if fn == "exp":
            if a.hi > 4:
                return None
            return Expr(f"parir.exp({a.code})", ty, 0, math.exp(a.hi), False, prec, ops)
        if fn == "log":
            return Expr(f"parir.log(parir.abs({a.code}) + 1.0)", ty, 0, math.log(m + 1), False,
                        prec, ops + 2)
        if fn == "sqrt":
            return Expr(f"parir.sqrt(parir.abs({a.code}))", ty, 0, math.sqrt(m), False, prec,
                        ops + 1)
        if fn in ("sin", "cos", "tanh", "erf"):
            return Expr(f"parir.{fn}({a.code})", ty, -1, 1, False, prec, ops)
        if fn == "sigmoid":
            return Expr(f"parir.sigmoid({a.code})", ty, 0, 1, False, prec, ops)
        if fn in ("atan", "asinh"):
            f = getattr(math, fn)
            return Expr(f"parir.{fn}({a.code})", ty, f(a.lo), f(a.hi), False, prec, ops)
        if fn == "expm1":
            if a.hi > 4:
                return None
            return Expr(f"parir.expm1({a.code})", ty, -1, math.expm1(a.hi), False, prec, ops)
        if fn == "log1p":
            return Expr(f"parir.log1p(parir.abs({a.code}))", ty, 0, math.log1p(m), False, prec,
                        ops + 1)
        if fn == "clamp":
            if a.ty.kind != "f":
                return None
            lo, hi = (min(max(v, -1.0), 1.0) for v in (a.lo, a.hi))
            return Expr(f"parir.clamp({a.code}, -1.0, 1.0)", a.ty, lo, hi, a.exact, a.prec, ops)
        if fn in ("floor", "round"):
            # A rounding of an inexact value may land one apart in the two runs: exact only.
            if not a.exact:
                return None
            return Expr(f"parir.{fn}({a.code})", a.ty, math.floor(a.lo), math.ceil(a.hi), True,
                        a.prec, ops)
        if fn == "abs":
            return Expr(f"{self.builtin('abs')}({a.code})", a.ty, 0, m, a.exact, a.prec, ops)
        # atan2(y, |x| + 1): x stays positive, away from the branch cut.
        b = self.expr(scope, kind, depth - 1)
        t2 = promote(ty, b.ty)
        if t2.kind != "f":
            t2 = Ty("float64")
        if fn == "hypot":
            mb = max(abs(b.lo), abs(b.hi))
            return Expr(f"parir.hypot({a.code}, {b.code})", t2, 0, math.hypot(m, mb), False,
                        min(prec, b.prec), ops + b.ops)
        return Expr(f"parir.atan2({a.code}, parir.abs({b.code}) + 1.0)", t2, -1.6, 1.6, False,
                    min(prec, b.prec), ops + b.ops + 2)

    def cast(self, scope, kind, depth):
        """parir.<dtype>(e), or Python's int()/float()/bool(): converts between kinds. A float
        becomes an integer or bool only when it is exact, and only within range."""
        src_kind = self.rng.choice("ifb")
        a = self.expr(scope, src_kind, depth - 1)
        target = self.rng.choice({"f": FLOATS, "i": INTS, "b": ("bool",)}[kind])
        self.feature("cast")
        if a.ty.kind == "f" and kind != "f" and not a.exact:
            return None
        if kind == "i":
            lo, hi = INT_RANGE[target]
            tlo, thi = math.trunc(a.lo), math.trunc(a.hi)
            if tlo < lo or thi > hi:
                return None
            if a.ty.kind == "f" and target == "uint8" and a.lo <= -1:
                return None
            e = Expr(f"parir.{target}({a.code})", Ty(target), tlo, thi, True, len(PRECISION),
                     a.ops + 1)
            if self.rng.random() < 0.2 and not self.names.shadow:
                # Python's int() is parir.int64, in the kernel and in the plain run.
                e.code = f"int({a.code})"
                e.ty = Ty("int64")
            return e
        if kind == "b":
            fn = self.builtin("bool")
            zero_in = a.lo <= 0 <= a.hi
            return Expr(f"{fn}({a.code})", Ty("bool"), 0 if zero_in else 1,
                        1 if (a.hi != 0 or a.lo != 0) else 0, True, len(PRECISION), a.ops + 1)
        prec = min(a.prec, PRECISION.index(target))
        if self.rng.random() < 0.15 and not self.names.shadow:
            # Python's float() is parir.float64, in the kernel and in the plain run.
            return Expr(f"float({a.code})", Ty("float64"), a.lo, a.hi, a.exact and
                        a.ty.kind != "f", a.prec, a.ops + 1)
        exact = a.ty.kind != "f" and target in ("float32", "float64") and max(
            abs(a.lo), abs(a.hi)) < 2 ** 20
        return Expr(f"parir.{target}({a.code})", Ty(target), a.lo, a.hi, exact, prec, a.ops + 1)

    def select(self, scope, kind, depth):
        # A helper with statements cannot be called inside `a if c else b` (rejected, as its
        # statements would run whatever the condition): only one-expression helpers there.
        self.no_stmt_helper += 1
        try:
            c = self.cond(scope, depth - 1)
            a = self.expr(scope, kind, depth - 1)
            b = self.expr(scope, kind, depth - 1)
        finally:
            self.no_stmt_helper -= 1
        # Python's `a if c else b` converts neither operand: both of one type, so that the
        # value has the same type on both sides.
        if a.ty != b.ty:
            return None
        ty = promote(a.ty, b.ty)
        self.feature("conditional_expression")
        e = Expr(f"({a.code} if {c.code} else {b.code})", ty, min(a.lo, b.lo), max(a.hi, b.hi),
                 a.exact and b.exact, min(a.prec, b.prec), max(a.ops, b.ops) + 1)
        return e

    def cond(self, scope, depth):
        """A deterministic bool: comparisons of integers or of exact floats, bools read from
        memory, and/or/not of those."""
        r = self.rng.random()
        if r < 0.2 or depth <= 0:
            e = self.tensor_read(scope, "b", create=self.rng.random() < 0.5)
            if e is not None:
                return e
        if r < 0.35 and depth > 0:
            self.no_stmt_helper += 1
            try:
                a, b = self.cond(scope, depth - 1), self.cond(scope, depth - 1)
            finally:
                self.no_stmt_helper -= 1
            op = self.rng.choice(["and", "or"])
            return Expr(f"({a.code} {op} {b.code})", Ty("bool"), 0, 1)
        if r < 0.42 and depth > 0:
            a = self.cond(scope, depth - 1)
            if self.rng.random() < 0.5:
                return Expr(f"(not {a.code})", Ty("bool"), 0, 1)
            if a.ty.weak or not a.code.startswith("("):
                return Expr(f"(not {a.code})", Ty("bool"), 0, 1)
        k = self.rng.choice("iif")
        a = self.expr(scope, k, max(0, depth - 1))
        b = self.expr(scope, k, max(0, depth - 1)) if self.rng.random() < 0.6 else \
            self.literal(k)
        if k == "f" and not (a.exact and b.exact):
            a, b = self.leaf(scope, "i"), self.literal("i")
        if not _weak_fits(a, b):
            return Expr("True", Ty("bool", True), 1, 1)
        op = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        if self.rng.random() < 0.15 and scope.loops:
            lp = self.rng.choice(scope.loops)
            self.feature("chained_comparison")
            return Expr(f"(0 <= {lp.var} < {lp.size_code})", Ty("bool"), 1, 1)
        return Expr(f"({a.code} {op} {b.code})", Ty("bool"), 0, 1)

    def call_helper(self, scope, kind, depth):
        """A call of another jit function of the module whose body is `return e` (inlined as
        an expression), or of one with statements (inlined with renamed locals)."""
        nargs = self.rng.randint(1, 3)
        args = [self.expr(scope, self.rng.choice("if") if kind != "b" else "i", depth - 1)
                for _ in range(nargs)]
        name = self.names.fresh("helper", allow_shadowing=False)
        self._note_name(name, "helper")
        params = [self.names.fresh("p") for _ in args]
        for p in params:
            self._note_name(p)
        inner_locals = {}
        pscope = Scope()
        for p, a in zip(params, args):
            pscope.locals[p] = dataclasses.replace(a, code=p)
        # A helper's body refers only to its parameters and literals.
        saved = (self.tensors, self.scalars)
        self.tensors, self.scalars = {}, {}
        self.in_helper += 1
        try:
            body = self.expr(pscope, kind, min(depth, 2))
            lines = []
            if self.rng.random() < 0.5 and not self.no_stmt_helper:
                self.feature("helper_statements")
                tmp = self.names.fresh("t")
                self._note_name(tmp)
                inner_locals[tmp] = body
                lines.append(f"    {tmp} = {body.code}")
                if self.rng.random() < 0.5:
                    lines.append(f"    if {self.cond(pscope, 0).code}:")
                    lines.append(f"        {tmp} = {tmp}")
                lines.append(f"    return {tmp}")
            else:
                self.feature("helper_expression")
                lines.append(f"    return {body.code}")
        finally:
            self.tensors, self.scalars = saved
            self.in_helper -= 1
        deco = "@parir.jit\n" if self.rng.random() < 0.7 else ""
        self.helpers.append(f"{deco}def {name}({', '.join(params)}):\n" + "\n".join(lines))
        # The call's value: the body's interval; its type when its arguments are the callers'.
        return Expr(f"{name}({', '.join(a.code for a in args)})", body.ty, body.lo, body.hi,
                    body.exact, min([body.prec] + [a.prec for a in args]),
                    body.ops + max(a.ops for a in args))
