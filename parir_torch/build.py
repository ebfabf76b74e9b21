"""From a call to code: the CUDA source of a function specialized to its arguments and options,
and the runtime program that compiles and launches it."""

import os
import sys
import tempfile
import warnings

from . import _C, arguments, callees
from ._C import ParirError
from .errors import ParirTypeError, ParirWarning
from .options import include_dirs, link_libraries, nvrtc_flags, to_cpp


def compile_source(fn, fn_ir, args, opts, debug=False, require_cuda=True):
    """Generates the CUDA source (with launch plan) of the Python function `fn`, whose IR is
    `fn_ir`, specialized to `args`. Only the launch needs CUDA tensors: with require_cuda=False
    tensors anywhere (CPU, meta) give their dtype, shape and strides."""
    names = fn_ir.params
    if len(args) != len(names):
        raise ParirTypeError(f"{fn_ir.name}() takes {len(names)} argument"
                             f"{'' if len(names) == 1 else 's'} ({', '.join(names)}) but "
                             f"{len(args)} were given")
    args = [arguments.convert(n, a) for n, a in zip(names, args)]
    described = [arguments.describe(n, a, require_cuda) for n, a in zip(names, args)]
    source, log, _, notes = _C.compile(fn_ir, described, to_cpp(opts, debug),
                                       callees.resolve(fn, fn_ir))
    if log:
        print(log, file=sys.stdout)
    for note in notes:  # once per specialization: the compiled code is cached
        warnings.warn(note, ParirWarning, stacklevel=caller_level())
    return source


def caller_level():
    """The stacklevel of the first frame outside this package: the user's call."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    return level


def load_program(source, opts, name, add_options=False):
    """Wraps CUDA source in a runtime Program (NVRTC compiles it at its first launch). The launch
    plan in the source names the include directories, NVRTC flags and link libraries it needs;
    add_options adds those of `opts`, for code written by hand whose plan may lack them."""
    try:
        if add_options:
            return _C.Program(source, include_dirs(opts), nvrtc_flags(opts), link_libraries(opts))
        return _C.Program(source)
    except ParirError as e:
        raise with_saved_source(e, source, opts, name) from None


def with_saved_source(err, source, opts, name):
    """`err`, naming a file holding `source` when opts.write_output asks for one."""
    if not opts.write_output:
        return err
    fd, path = tempfile.mkstemp(prefix=f"parir_{name}_", suffix=".cu")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    return ParirError(f"{err}\n(the CUDA source was saved to {path})")


def backend_status():
    """Why the CUDA backend can or cannot run here: NVRTC and the driver."""
    ok, why = _C.driver_status()
    lines = ["parir CUDA backend:",
             f"  NVRTC: {_C.nvrtc_status()}",
             f"  driver: {'available' if ok else 'unavailable'} ({why})"]
    return "\n".join(lines)
