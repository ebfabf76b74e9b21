"""Why a jit function compiles again: each new specialization of a function that has others
is logged (INFO, logs.py) with what differs from the nearest cached one, and a function that
passes WARN_AFTER specializations gets one ParirWarning, as Dynamo's recompile limit does.

Specialization keys are (options key, *argument keys) for eager calls and ("traced", debug,
options key, *argument keys) for calls traced by torch.compile: the arguments are the last
len(params) positions and the options the one before them.
"""

import warnings

from . import arguments
from .build import caller_level
from .errors import ParirWarning
from .logs import log
from .options import describe_options_change

# Specializations of one function at which a ParirWarning says so (once per function, until
# its clear_cache()).
WARN_AFTER = 8


def differences(names, old, new):
    """What differs between two keys of one function's specializations, as phrases."""
    n = len(names)
    out = [arguments.describe_change(name, a, b)
           for name, a, b in zip(names, old[len(old) - n:], new[len(new) - n:]) if a != b]
    if old[len(old) - n - 1] != new[len(new) - n - 1]:
        out.append(describe_options_change(old[len(old) - n - 1], new[len(new) - n - 1]))
    if old[:len(old) - n - 1] != new[:len(new) - n - 1]:
        out.append("debug= changed")
    return out


def note_new_specialization(fn, key):
    """Called before `fn` (a JitFunction) compiles a specialization it will cache under `key`:
    logs why, and warns once when the function has been compiled WARN_AFTER times."""
    name = fn.fn.__name__
    fn._compile_count += 1
    nearest = fn._cache.nearest(key)
    reason = None
    if nearest is not None:
        reason = "; ".join(differences(fn.ir.params, nearest, key))
        log.info("recompiling %s (specialization %d): %s", name, fn._compile_count, reason)
    if fn._compile_count >= WARN_AFTER and not fn._warned_recompiles:
        fn._warned_recompiles = True
        warnings.warn(
            f"{name}() has been compiled for {fn._compile_count} specializations"
            f"{f', the latest because {reason}' if reason else ''}. Each new scalar value, "
            f"tensor shape, stride or dtype, or new options compile it again; TORCH_LOGS="
            f"\"parir_torch\" or PARIR_LOGS=info logs each recompilation and its cause",
            ParirWarning, stacklevel=caller_level())
