"""What generate.py returns: a `Program` (the module's source, the parallel specification and
the other compile options, the features it uses) and its parameters (`TensorArg`,
`ScalarArg`, `DictArg`), from which `Program.make_args` makes the same argument values for
the same program.
"""

import dataclasses

import torch

from gen_values import FLOATS, PRECISION


@dataclasses.dataclass
class TensorArg:
    """A tensor argument: logical shape, dtype, how the view is made, initial value range."""
    name: str
    dtype: str
    shape: tuple
    view: str = "contiguous"      # contiguous | transpose | strided | offset | bare1 | zerod
    lo: float = -2.0
    hi: float = 2.0
    written: bool = False
    prec: int = len(PRECISION)    # least precision of any value written into it
    ops: int = 0                  # most operations behind a value written into it
    reduced: int = 1              # longest reduction behind a value written into it
    positive: bool = False        # initial values in [lo, hi] (else +-[0.5, 2] for floats)
    init: tuple = None            # (lo, hi) of the initial values, set at creation
    # An optional input: every read is `x[i] if x is not None else <literal>`, and the call
    # passes None for it where `absent`.
    optional: bool = False
    absent: bool = False


@dataclasses.dataclass
class ScalarArg:
    name: str
    value: object


@dataclasses.dataclass
class DictArg:
    name: str
    entries: dict                 # key -> TensorArg | ScalarArg


@dataclasses.dataclass
class Program:
    seed: int
    names: str
    source: str
    fn_name: str
    params: list                  # TensorArg | ScalarArg | DictArg, in parameter order
    spec: dict                    # label -> (threads, True/False/"scan", tpb or None)
    features: set
    gpu_sized: bool = False       # sizes small enough for the plain Python run
    options: dict = dataclasses.field(default_factory=dict)  # CompileOptions fields besides it

    def spec_source(self):
        """The parallel specification as Python source, for a reproducer."""
        items = []
        for label, (n, red, tpb) in self.spec.items():
            s = f"parir.threads({n})" + {True: ".reduce()", "scan": ".scan()"}.get(red, "")
            s += f".tpb({tpb})" if tpb else ""
            items.append(f"{label!r}: {s}")
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return "{" + ", ".join(items) + "}" + extra

    def make_opts(self):
        """The CompileOptions of the call: the specification and the other options."""
        import parir_torch as parir
        return parir.CompileOptions(parallelize=self.make_spec(), **self.options)

    def make_spec(self):
        import parir_torch as parir
        out = {}
        for label, (n, red, tpb) in self.spec.items():
            p = parir.threads(n)
            p = p.scan() if red == "scan" else p.reduce() if red else p
            out[label] = p.tpb(tpb) if tpb else p
        return out

    def make_args(self, device="cpu"):
        """The arguments, the same values for the same program (seeded by the program's
        seed). Tensors of written arguments start with random values too, so both runs
        start alike and an element a kernel should leave alone is checked as well."""
        gen = torch.Generator().manual_seed(self.seed)
        return [_make_arg(p, gen, device) for p in self.params]

    def tensor_params(self):
        """(display name, TensorArg) of every tensor argument, dict entries as d['k']."""
        out = []
        for p in self.params:
            if isinstance(p, TensorArg):
                out.append((p.name, p))
            elif isinstance(p, DictArg):
                out += [(f"{p.name}[{k!r}]", v) for k, v in p.entries.items()
                        if isinstance(v, TensorArg)]
        return out


def _make_arg(p, gen, device):
    if isinstance(p, ScalarArg):
        return p.value
    if isinstance(p, TensorArg) and p.absent:
        return None
    if isinstance(p, DictArg):
        return {k: _make_arg(v, gen, device) for k, v in p.entries.items()}
    return _make_tensor(p, gen, device)


def _make_tensor(p, gen, device):
    shape = p.shape
    if p.view == "transpose":
        base_shape = tuple(reversed(shape))
    elif p.view == "strided":
        base_shape = (shape[0] * 2,) + shape[1:]
    elif p.view == "offset":
        base_shape = shape[:-1] + (shape[-1] + 3,)
    else:
        base_shape = shape
    dt = getattr(torch, p.dtype)
    init_lo, init_hi = p.init
    if p.dtype == "bool":
        base = torch.rand(base_shape, generator=gen) < 0.5
    elif p.dtype in FLOATS:
        if p.positive:
            base = (torch.rand(base_shape, generator=gen, dtype=torch.float64) *
                    (init_hi - init_lo) + init_lo)
        else:
            mag = torch.rand(base_shape, generator=gen, dtype=torch.float64) * 1.5 + 0.5
            sign = torch.where(torch.rand(base_shape, generator=gen) < 0.5, -1.0, 1.0)
            base = mag * sign
        base = base.to(dt)
    else:
        lo, hi = int(init_lo), int(init_hi)
        base = torch.randint(lo, hi + 1, base_shape, generator=gen, dtype=torch.int64)
        if lo < 0 < hi:   # non-zero inputs: a zero hides wrong reads of untouched memory
            base = torch.where(base == 0, torch.ones_like(base), base)
        base = base.to(dt)
    if p.view == "transpose":
        t = base.permute(*reversed(range(len(shape))))
    elif p.view == "strided":
        t = base[::2]
    elif p.view == "offset":
        t = base[..., 3:]
    elif p.view == "zerod":
        t = base.reshape(())
    else:
        t = base
    assert tuple(t.shape) == tuple(shape if p.view != "zerod" else ()), (p, t.shape)
    return t.to(device)
