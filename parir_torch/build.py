"""From a call to code: the CUDA source of a function specialized to its arguments and options,
and the runtime program that compiles and launches it."""

import functools
import os
import sys
import tempfile
import warnings

import torch

from . import _C, arguments, callees
from ._C import ParirError
from .errors import ParirTypeError, ParirWarning
from .options import include_dirs, link_libraries, nvrtc_flags, to_cpp


def with_defaults(fn, names, args):
    """args with the trailing parameters they leave out given their defaults (`def axpy(x, y,
    N, a=2.0)` called as axpy(x, y, N)), as Python calls it; as they are otherwise."""
    args = list(args)
    defaults = getattr(fn, "__defaults__", None) or ()
    missing = len(names) - len(args)
    if 0 < missing <= len(defaults):
        args += defaults[len(defaults) - missing:]
    return args


def compile_source(fn, fn_ir, args, opts, debug=False, require_cuda=True):
    """Generates the CUDA source (with launch plan) of the Python function `fn`, whose IR is
    `fn_ir`, specialized to `args`. Only the launch needs CUDA tensors: with require_cuda=False
    tensors anywhere (CPU, meta) give their dtype, shape and strides."""
    names = fn_ir.params
    args = with_defaults(fn, names, args)
    if len(args) != len(names):
        raise ParirTypeError(f"{fn_ir.name}() takes {len(names)} argument"
                             f"{'' if len(names) == 1 else 's'} ({', '.join(names)}) but "
                             f"{len(args)} were given")
    args = [arguments.convert(n, a) for n, a in zip(names, args)]
    described = [arguments.describe(n, a, require_cuda) for n, a in zip(names, args)]
    cpp_opts = to_cpp(opts, debug)
    cpp_opts.memory_bandwidth_gbps = memory_bandwidth_gbps(target_device(args))
    source, log, _, notes = _C.compile(fn_ir, described, cpp_opts, callees.resolve(fn, fn_ir))
    if log:
        print(log, file=sys.stdout)
    for note in notes:  # once per specialization: the compiled code is cached
        warnings.warn(note, ParirWarning, stacklevel=caller_level())
    return source


def target_device(args):
    """The index of the GPU the call runs on: its first CUDA tensor's, else the current device's
    (None without CUDA, where the code is only printed)."""
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return a.device.index
    return torch.cuda.current_device() if torch.cuda.is_available() else None


@functools.lru_cache(maxsize=None)
def memory_bandwidth_gbps(device):
    """The peak DRAM bandwidth of GPU `device` in GB/s (double data rate: two transfers of the
    bus's width per memory clock), which the compiler tunes streaming kernels for; 0 when
    unknown (no GPU here, as where torch.compile traces fake CUDA tensors on a machine without
    one)."""
    if device is None or not torch.cuda.is_available():
        return 0
    props = torch.cuda.get_device_properties(device)
    clock_khz = getattr(props, "memory_clock_rate", 0)
    bus_bits = getattr(props, "memory_bus_width", 0)
    return int(2 * clock_khz * 1e3 * bus_bits / 8 / 1e9)


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
