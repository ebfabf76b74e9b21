"""What parir compiles and why, through Python's `logging`: the logger "parir_torch".

    TORCH_LOGS="parir_torch" python train.py     recompilations and their cause (INFO)
    TORCH_LOGS="+parir_torch" python train.py    everything (DEBUG)
    PARIR_LOGS=info python train.py              the same without PyTorch's logging setup;
    PARIR_LOGS=debug python train.py             PARIR_LOGS=debug for everything

INFO: a new specialization of a function that has others, naming the argument that differs
from the nearest cached one; a specialization dropped from a full cache; a stored binary that
does not run on the GPU. DEBUG: each compilation and its time, NVRTC's time, disk cache hits
and misses, stored binaries loaded, programs and modules the runtime drops. The runtime's
messages (csrc/runtime/log.h) come here through a sink set at import.

"parir_torch" is registered with torch._logging, so TORCH_LOGS and torch._logging.set_logs(
modules={"parir_torch": logging.DEBUG}) set its level and give it PyTorch's handler and format.
"""

import logging
import os
import warnings

from . import _C
from .errors import ParirWarning

log = logging.getLogger("parir_torch")

_LEVELS = {"info": logging.INFO, "1": logging.INFO, "debug": logging.DEBUG}


def _register_with_torch():
    try:
        from torch._logging._internal import register_log
    except ImportError:  # a PyTorch without it: TORCH_LOGS names modules too
        return
    register_log("parir_torch", "parir_torch")


def _configure_from_environment():
    value = os.environ.get("PARIR_LOGS", "").strip()
    if not value:
        return
    level = _LEVELS.get(value.lower())
    if level is None:
        warnings.warn(f"PARIR_LOGS={value!r} is not one of 'info' and 'debug'; parir logs "
                      f"nothing", ParirWarning, stacklevel=3)
        return
    log.setLevel(level)
    if not log.handlers:  # TORCH_LOGS may have given it PyTorch's handler already
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("parir_torch: %(message)s"))
        log.addHandler(handler)


def _from_runtime(level, message):
    if log.isEnabledFor(level):
        log.log(level, message)


_register_with_torch()
_configure_from_environment()
_C.set_log_sink(_from_runtime)
