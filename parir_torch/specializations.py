"""The in-memory cache of a jit function's compiled specializations."""

# Specializations kept per jit function. Each holds a program (its source) and, once launched,
# a CUDA module per device; a function called with ever new scalar values or shapes would
# otherwise grow without limit.
MAX_SPECIALIZATIONS = 256


class SpecializationCache(dict):
    """Compiled specializations by key, at most `limit` of them: adding one more drops the one
    launched least recently (its CUDA modules are unloaded later, see runtime/program.h).

    Lookups are plain dict lookups, so the cached call path pays nothing for the bound: recency
    comes from the C++ launcher, which stamps each launch (BoundLaunch.last_used)."""

    __slots__ = ("limit",)

    def __init__(self, limit=MAX_SPECIALIZATIONS):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, compiled):
        while key not in self and len(self) >= max(1, self.limit):
            del self[min(self, key=lambda k: self[k].launch.last_used)]
        super().__setitem__(key, compiled)
