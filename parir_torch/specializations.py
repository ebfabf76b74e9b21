"""The in-memory cache of a jit function's compiled specializations."""

from .logs import log

# Specializations kept per jit function. Each holds a program (its source) and, once launched,
# a CUDA module per device; a function called with ever new scalar values or shapes would
# otherwise grow without limit.
MAX_SPECIALIZATIONS = 256


class SpecializationCache(dict):
    """Compiled specializations by key, at most `limit` of them: adding one more drops the one
    launched least recently (its CUDA modules are unloaded later, see runtime/program.h).

    Lookups are plain dict lookups, so the cached call path pays nothing for the bound: recency
    comes from the C++ launcher, which stamps each launch (BoundLaunch.last_used)."""

    __slots__ = ("limit", "name")

    def __init__(self, limit=MAX_SPECIALIZATIONS, name="function"):
        super().__init__()
        self.limit = limit
        self.name = name  # the function's, for the log

    def __setitem__(self, key, compiled):
        while key not in self and len(self) >= max(1, self.limit):
            del self[min(self, key=lambda k: self[k].launch.last_used)]
            log.info("%s: dropped the specialization launched least recently (%d are kept); "
                     "a call that needs it compiles it again", self.name, self.limit)
        super().__setitem__(key, compiled)

    def nearest(self, key):
        """The cached key that differs from `key` in the fewest positions, among those of the
        same length and kind (its first position); None when there is none."""
        best, best_count = None, None
        for k in self:
            if len(k) != len(key) or _kind(k) != _kind(key):
                continue
            count = sum(a != b for a, b in zip(k, key))
            if best is None or count < best_count:
                best, best_count = k, count
        return best


def _kind(key):
    """A key's kind: "traced" for the keys of traced calls (torch_ops.py), None for others."""
    return key[0] if key and isinstance(key[0], str) else None
