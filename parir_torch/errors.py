"""What parir raises and warns about.

Every error a user can cause is a ParirError: a RuntimeError subclass that the C++ extension
registers (parir_torch._C.ParirError), raised for errors in a jit function's code, its
arguments, its options and at launch. Where Python code would raise a TypeError or a ValueError
(a value of the wrong type, a value out of range), parir raises ParirTypeError or
ParirValueError, which are both: `except parir.ParirError` catches every parir error, and
`except TypeError` or `except ValueError` catches them as Python's conventions lead a caller to
expect.

ParirWarning is what the compiler warns about: code that is probably not what its author meant,
but is not an error.
"""

from ._C import ParirError


class ParirTypeError(ParirError, TypeError):
    """A ParirError for a value of the wrong type: opts that is not a CompileOptions, an
    argument of a kind parir functions do not take, an unknown keyword or option field."""


class ParirValueError(ParirError, ValueError):
    """A ParirError for a value of the right type that is out of range: a negative thread
    count, threads per block that are not a multiple of 32 in [32, 1024]."""


class ParirWarning(UserWarning):
    """Something in a parir function that is probably not what its author meant, but is not an
    error: a parallel specification none of whose labels the function uses, a write to a place
    that depends on data inside a parallel loop (a possible race)."""


def options_type_error(opts):
    """The error for opts= that is not a parir.CompileOptions."""
    if isinstance(opts, dict):
        return ParirTypeError(
            "opts must be a parir.CompileOptions, got a dict; build the options from the "
            "parallel specification with parir.par: opts=parir.par({'N': parir.threads(n)})")
    return ParirTypeError(f"opts must be a parir.CompileOptions (from parir.par({{...}})), got "
                          f"{type(opts).__name__}")
