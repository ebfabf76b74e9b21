"""The operations of a parir function run as plain Python (seq=True), with the compiled code's
semantics where Python's or torch's differ.

plain_python_rewrite.py rewrites the function so that its element reads, stores through slices
with steps, augmented assignments and arithmetic call the functions here:

* Reading one element gives a value, not a view: `s = x[i]; s += 1` leaves `x` alone, and
  `a = x[i]; x[i] = 5` leaves `a` as it was, as in the compiled code. The value is a 0-d tensor
  of the tensor's dtype, so that arithmetic on it is typed as the compiler types it.
* Arithmetic follows README.md's typing rules (csrc/passes/infer_types.cpp). PyTorch's type
  promotion is the same for 0-d tensors and Python numbers except where PyTorch uses its
  default dtype, float32: an integer tensor value times a Python float, and true division of
  integers, give float64 in parir. Bools in arithmetic compute as int64 (True + True is 2).
* Slices with negative steps, which torch's indexing does not take, are read and written
  through the equivalent positive-step view, flipped.
* An atomic update's element (`parir.atomic_add(x[i], v)`) is the one place an element is
  passed as a view, so that the update writes the tensor.
"""

import operator

import torch

_Tensor = torch.Tensor

# ----- types ---------------------------------------------------------------------------------

_BOOL, _INT, _FLOAT = 0, 1, 2
_INT64_MAX = (1 << 63) - 1
_UNSIGNED = (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
# Unsigned types torch has few kernels for: their arithmetic computes in int64 and wraps back.
_WIDE_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def _number(x):
    """A NumPy scalar (a module-level `PRIME = np.uint32(0x9E3779B1)`) as the compiler reads it
    (capture.compiler_constants): an integer as a 0-d tensor of its dtype, any other as its
    Python value; anything else as it is."""
    if type(x).__module__ != "numpy" or getattr(x, "ndim", None) != 0:
        return x
    if x.dtype.kind in "iu":
        return torch.tensor(x.item(), dtype=getattr(torch, str(x.dtype)))
    return x.item()


def _kind(dtype):
    if dtype == torch.bool:
        return _BOOL
    return _FLOAT if dtype.is_floating_point else _INT


def _type_of(x):
    """(dtype, weak) of an operand: a tensor is typed; a Python number is weak, with the type
    the compiler gives its literals."""
    if isinstance(x, _Tensor):
        return x.dtype, False
    if isinstance(x, bool):
        return torch.bool, True
    if isinstance(x, int):
        # A literal of 2^63 or more is a uint64, as the compiler (and C) types it.
        return (torch.uint64, False) if x > _INT64_MAX else (torch.int64, True)
    return torch.float64, True


def _wider(a, b):
    """The type two typed values of one kind promote to (types.cpp: wider)."""
    if a == b:
        return a
    if a.is_floating_point:
        if {a, b} == {torch.float16, torch.bfloat16}:
            return torch.float32
        return a if a.itemsize >= b.itemsize else b
    a_unsigned, b_unsigned = a in _UNSIGNED, b in _UNSIGNED
    if a_unsigned == b_unsigned:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (b, a) if a_unsigned else (a, b)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return {1: torch.int16, 2: torch.int32}.get(unsigned.itemsize, torch.int64)


def promote(a, b):
    """(dtype, weak): the type of an operation on operands a and b, by README.md's rules 1-3
    (types.cpp: promote). A weak float meeting a typed integer gives float64, where torch would
    give its default dtype."""
    (ta, wa), (tb, wb) = _type_of(a), _type_of(b)
    ka, kb = _kind(ta), _kind(tb)
    if ka != kb:
        (hi, whi), (lo, wlo) = ((ta, wa), (tb, wb)) if ka > kb else ((tb, wb), (ta, wa))
        if whi and not wlo:
            return hi, False
        return hi, whi
    if wa != wb:
        return (tb, False) if wa else (ta, False)
    return _wider(ta, tb), wa and wb


def _as_type(x, dtype):
    """x as an operand of an operation computed in `dtype`: a tensor converted, a Python number
    as it is (weak, it takes the tensor's type); a uint64 literal as its bits in int64."""
    if type(x) is int and x > _INT64_MAX and dtype == torch.int64:
        return x - (1 << 64)
    return x.to(dtype) if isinstance(x, _Tensor) and x.dtype != dtype else x


# ----- arithmetic ----------------------------------------------------------------------------

_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))
_NARROW_INTS = frozenset((torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8))


def _named(apply, name):
    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"a {name} b, typed as the compiled code types it."
    return apply


def _arithmetic(op, name):
    # Integers keep their type under this operation (not so for / and for ** -1).
    ints_closed = op is not operator.truediv and op is not operator.pow

    def apply(a, b):
        a, b = _number(a), _number(b)
        if isinstance(a, _Tensor):
            dtype, other = a.dtype, b
        elif isinstance(b, _Tensor):
            dtype, other = b.dtype, a
        else:
            return op(a, b)  # Python numbers: weak, and Python's arithmetic is the compiler's
        # The common cases, where torch's promotion is the compiler's: a float tensor with a
        # Python number or a tensor of its dtype, an integer with an integer of its type.
        if isinstance(other, _Tensor):
            if other.dtype == dtype and (dtype in _FLOATS or ints_closed
                                         and dtype in _NARROW_INTS):
                return op(a, b)
        elif type(other) is float or type(other) is int:
            if dtype in _FLOATS or (ints_closed and type(other) is int
                                    and other <= _INT64_MAX and dtype in _NARROW_INTS):
                return op(a, b)
        return _promoted(op, a, b)

    return _named(apply, name)


def _promoted(op, a, b):
    """op(a, b) for a tensor operand, computed in the type the compiler gives it."""
    dtype, _ = promote(a, b)
    kind = _kind(dtype)
    if op is operator.truediv and kind != _FLOAT:
        dtype = torch.float64  # true division of integers gives a float
    elif kind == _BOOL:
        dtype = torch.int64  # bool arithmetic computes in int64, as True + True == 2
    elif op is operator.pow and kind == _INT and type(b) is int and b < 0:
        dtype = torch.float64  # 2 ** -1 == 0.5
    if dtype == torch.uint64 and op in (operator.floordiv, operator.mod):
        return _unsigned_division(op, a, b)
    if dtype in _WIDE_UNSIGNED:
        return op(_as_type(a, torch.int64), _as_type(b, torch.int64)).to(dtype)
    return op(_as_type(a, dtype), _as_type(b, dtype))


def _unsigned_division(op, a, b):
    """a // b or a % b in uint64, whose values of 2^63 and more int64 would read as negative:
    computed by NumPy, which has uint64 division (an integer operand wraps to uint64, as the
    compiled code converts it)."""
    import numpy as np

    device = next(x.device for x in (a, b) if isinstance(x, _Tensor))

    def bits(x):
        if isinstance(x, _Tensor):
            return x.to(torch.uint64).cpu().numpy()
        return np.uint64(int(x) & ((1 << 64) - 1))

    with np.errstate(divide="ignore"):
        result = np.asarray(op(bits(a), bits(b)), dtype=np.uint64)
    return torch.from_numpy(result).to(device)


def _wide_unsigned_operand(a, b):
    """Whether an operand is a uint16-uint64 tensor: torch promotes none of those with a signed
    type (a uint32 with an int32 is an int64 in the compiled code, an error in torch)."""
    return any(isinstance(x, _Tensor) and x.dtype in _WIDE_UNSIGNED for x in (a, b))


def in_unsigned_order(fn, *tensors):
    """fn (torch.minimum, torch.amax, ...) of tensors of one dtype, which may be uint16-uint64:
    torch has no min or max kernels for those on the CPU, so fn runs on int64 values in the same
    order (uint64's with the top bit flipped) and its result goes back to the dtype."""
    dtype = tensors[0].dtype
    if dtype not in _WIDE_UNSIGNED:
        return fn(*tensors)
    if dtype != torch.uint64:
        return fn(*(t.to(torch.int64) for t in tensors)).to(dtype)
    top = -1 << 63
    return (fn(*(t.view(torch.int64) ^ top for t in tensors)) ^ top).view(torch.uint64)


def _bitwise(op, name):
    def apply(a, b):
        a, b = _number(a), _number(b)
        if not isinstance(a, _Tensor) and not isinstance(b, _Tensor):
            return op(a, b)
        dtype, _ = promote(a, b)
        if dtype not in _WIDE_UNSIGNED and not _wide_unsigned_operand(a, b):
            return op(a, b)  # torch's promotion is the compiler's here
        # torch has no shifts (nor, on the CPU, bitwise kernels) for uint16-uint64: _promoted
        # computes on the same bits in int64, except uint64's right shift, which must not copy
        # the top bit that its values above 2^63 have set.
        if op is not operator.rshift or dtype != torch.uint64:
            return _promoted(op, a, b)
        s = torch.as_tensor(_as_type(b, torch.int64), dtype=torch.int64)
        keep = torch.where(s > 0, (1 << (64 - s.clamp(1, 63))) - 1, -1)
        return ((_as_type(a, torch.int64) >> s) & keep).to(dtype)

    return _named(apply, name)


lshift = _bitwise(operator.lshift, "lshift")
rshift = _bitwise(operator.rshift, "rshift")
or_ = _bitwise(operator.or_, "or_")
xor = _bitwise(operator.xor, "xor")
and_ = _bitwise(operator.and_, "and_")


def _comparison(op, name):
    def apply(a, b):
        a, b = _number(a), _number(b)
        if not isinstance(a, _Tensor) and not isinstance(b, _Tensor):
            return op(a, b)
        dtype, _ = promote(a, b)
        if dtype not in _WIDE_UNSIGNED and not _wide_unsigned_operand(a, b):
            return op(a, b)
        # torch has no comparison kernels for uint16-uint64 on the CPU: compare the values in
        # int64, uint64's with the top bit flipped so that its order is the unsigned one.
        x, y = _as_type(a, torch.int64), _as_type(b, torch.int64)
        if dtype == torch.uint64:
            x, y = x ^ (-1 << 63), y ^ (-1 << 63)
        return op(x, y)

    return _named(apply, name)


COMPARISONS = {name: _comparison(op, name) for name, op in [
    ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
    ("eq", operator.eq), ("ne", operator.ne)]}


def index(i):
    """An index of one element: an element of an integer or bool tensor as an int (the compiled
    code indexes by its value, where torch takes a uint8 or bool tensor for a mask)."""
    if isinstance(i, _Tensor) and i.dim() == 0 and not i.dtype.is_floating_point:
        return int(i)
    return i


add = _arithmetic(operator.add, "add")
sub = _arithmetic(operator.sub, "sub")
mul = _arithmetic(operator.mul, "mul")
truediv = _arithmetic(operator.truediv, "truediv")
floordiv = _arithmetic(operator.floordiv, "floordiv")
mod = _arithmetic(operator.mod, "mod")
pow = _arithmetic(operator.pow, "pow")  # noqa: A001 - operator's name

def neg(a):
    """-a, typed as the compiled code types it: a bool negates as an int64 (-True == -1), and
    uint16-uint64, which torch cannot negate, wrap (-(g & 1) is 0 or all ones)."""
    a = _number(a)
    if not isinstance(a, _Tensor):
        return -a
    if a.dtype == torch.bool:
        return -a.to(torch.int64)
    if a.dtype in _WIDE_UNSIGNED:
        return (-a.to(torch.int64)).to(a.dtype)
    return -a


def invert(a):
    """~a, typed as the compiled code types it (uint16-uint64 have no torch kernel)."""
    a = _number(a)
    if isinstance(a, _Tensor) and a.dtype in _WIDE_UNSIGNED:
        return (~a.to(torch.int64)).to(a.dtype)
    return ~a


# ----- reads and writes ----------------------------------------------------------------------


def read(x, index):
    """x[index]: one element as a value (a 0-d tensor of its own), anything else as indexing
    gives it (a slice stays a view, for the slice statements and calls that write through it)."""
    return _value(x[index])


def _value(r):
    if isinstance(r, _Tensor) and r.dim() == 0:
        return r.clone()
    return r


def call_on_element(f, element, /, *args, **kwargs):
    """f(x[i], *args, **kwargs), where `element` is the view x[i]: an atomic update
    (parir.atomic_add, ...) updates the element through it; any other function gets the
    element's value, as read() gives it."""
    if getattr(f, "__parir_atomic__", False):
        return f(element, *args, **kwargs)
    return f(_value(element), *args, **kwargs)


def read_stepped(x, index):
    """read(x, index) for an index with slices that have steps, negative ones too."""
    view, flips = _positive_view(x, index)
    if flips:
        return view.flip(flips)
    return read(x, index)


def stored(value):
    """The value of `x[i] = value`: a NumPy scalar as the compiler reads it (torch cannot store
    an np.uint64 of 2^63 or more, which it reads as a Python int)."""
    return _number(value)


def write_stepped(x, index, value):
    """x[index] = value, for an index with slices that have steps, negative ones too."""
    view, flips = _positive_view(x, index)
    if not flips:
        x[index] = value
    elif isinstance(value, _Tensor) and value.dim() > 0:
        # Flip what lands in the view; a copy, so the value may overlap x.
        view[...] = value.expand(view.shape).flip(flips)
    else:
        view[...] = value  # one value everywhere: nothing to flip


def update(x, index, op, value):
    """x[index] op= value, as x[index] = x[index] op value: the result is converted to x's
    dtype when it is stored, where torch's in-place operators refuse (an integer tensor += 0.5)."""
    x[index] = op(x[index], value)  # op makes a new value: the view needs no copy


def update_stepped(x, index, op, value):
    """update(x, index, op, value) for an index with slices that have steps."""
    write_stepped(x, index, op(read_stepped(x, index), value))


def _positive_view(x, index):
    """(view, dims): x[index] as a view, each slice with a negative step replaced by the
    positive-step slice over the same elements; `dims` are the view's dimensions to flip to get
    the elements in the order the negative step gives them (Python's slice semantics)."""
    if not isinstance(x, _Tensor):
        return None, []
    parts = index if isinstance(index, tuple) else (index,)
    positive, flips, dim = [], [], 0  # dim counts the view's dimensions so far
    for axis, part in enumerate(parts):
        if not isinstance(part, slice):
            positive.append(part)  # an integer index removes its dimension
            continue
        start, stop, step = part.indices(x.shape[axis])
        if step < 0:
            count = len(range(start, stop, step))
            if count == 0:
                part = slice(0, 0)
            else:
                part = slice(start + (count - 1) * step, start + 1, -step)
                flips.append(dim)
        positive.append(part)
        dim += 1
    if not flips:
        return None, []
    return x[tuple(positive)], flips
