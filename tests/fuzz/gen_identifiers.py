"""Identifiers of the generated programs: the awkward names (C++ keywords and alternative
tokens, CUDA builtins, C library names, names like those the compiler generates), the
classes they fall in, and `Names`, which hands out the names of one program.
"""

# Identifiers that are legal Python but mean something in C++ or CUDA, or look like what the
# compiler itself generates. Names of Python builtins the generated code calls are listed in
# SHADOWING: a function using one of them as a local calls parir's version instead.
CPP_NAMES = [
    "int", "auto", "register", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
    "xor", "bitand", "bitor", "compl", "not_eq", "and_eq", "or_eq", "xor_eq", "static_cast",
    "reinterpret_cast", "const_cast", "NULL", "nullptr", "fabs", "size_t", "__half",
    "__nv_bfloat16", "half", "double", "char", "short", "long", "unsigned", "signed", "void",
    "const", "volatile", "extern", "inline", "static", "template", "typename", "namespace",
    "using", "new", "delete", "this", "operator", "union", "struct", "enum", "typedef",
    "sizeof", "goto", "switch", "case", "default", "do", "true", "false", "int8_t",
    "int64_t", "uint8_t", "printf", "expf", "sqrtf", "exp", "log", "sqrt", "sin", "cos",
    "tanh", "pow", "floor", "fmod", "atan2", "main", "std", "INFINITY", "NAN", "__global__",
    "__device__", "__shared__", "__syncthreads", "atomicAdd", "float", "bool", "min", "max",
    "abs", "alignas", "decltype", "noexcept", "thread_local", "concept", "requires",
    "d__k", "blockIdx_", "u03c0",
]
GENERATED_NAMES = ["parir_t", "parir_block", "parir_b0", "parir_result", "parir_x", "acc0",
                   "acc1", "red0", "red1", "r0", "s0", "i_", "int_", "π", "λ", "x__y"]
SHADOWING = {"int", "float", "bool", "min", "max", "abs"}
# C library functions and types (not C++ keywords): a kernel named like one is declared
# `extern "C"` next to the library's declaration.
C_FUNCTIONS = {"fabs", "size_t", "printf", "expf", "sqrtf", "std", "NULL"}
# Classes of awkward identifiers, each a feature of the programs using one (`name_<class>`).
NAME_CLASSES = {
    "cpp_alternative_token": {"xor", "bitand", "bitor", "compl", "not_eq", "and_eq", "or_eq",
                              "xor_eq"},
    "cpp_keyword": {"int", "auto", "register", "double", "char", "short", "long", "unsigned",
                    "signed", "void", "const", "volatile", "extern", "inline", "static",
                    "template", "typename", "namespace", "using", "new", "delete", "this",
                    "operator", "union", "struct", "enum", "typedef", "sizeof", "goto",
                    "switch", "case", "default", "do", "true", "false", "nullptr", "float",
                    "bool", "alignas", "decltype", "noexcept", "concept", "requires"},
    "cpp_cast_keyword": {"static_cast", "reinterpret_cast", "const_cast"},
    "thread_local": {"thread_local"},
    "null_macro": {"NULL"},
    "c_macro": {"INFINITY", "NAN"},
    "cuda_builtin": {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__global__",
                     "__device__", "__shared__", "__syncthreads", "atomicAdd", "__half",
                     "__nv_bfloat16", "half"},
    "c_library": {"fabs", "size_t", "printf", "expf", "sqrtf", "exp", "log", "sqrt", "sin",
                  "cos", "tanh", "pow", "floor", "fmod", "atan2", "main", "std", "int8_t",
                  "int64_t", "uint8_t", "min", "max", "abs"},
    "generated_like": {"parir_t", "parir_block", "parir_b0", "parir_result", "parir_x",
                       "acc0", "acc1", "red0", "red1", "r0", "s0", "i_", "x__y", "d__k",
                       "blockIdx_", "u03c0"},
}
LONG_NAME = "a_rather_long_identifier_" * 9
AWKWARD = CPP_NAMES + GENERATED_NAMES


# ----------------------------------------------------------------------------------------------
# Names


class Names:
    """Identifier choice. Awkward names are drawn with probability `rate`; every name handed
    out is unique in the module, except the deliberate pairs (`int` with `int_`, a local named
    like its function)."""

    def __init__(self, rng, mode):
        self.rng = rng
        self.rate = {"ordinary": 0.0, "awkward": 0.8, "mixed": 0.3}[mode]
        self.used = {"parir", "range"}
        self.counter = 0
        # Whether names may shadow Python's min/max/abs/int/float/bool: then the program
        # calls parir's versions only (a local shadows a builtin in its whole function).
        self.shadow = rng.random() < 0.5

    def fresh(self, prefix, allow_shadowing=True):
        if self.rng.random() < self.rate:
            pool = [n for n in AWKWARD + [LONG_NAME + prefix, "parir_" + prefix]
                    if n not in self.used and
                    ((allow_shadowing and self.shadow) or n not in SHADOWING)]
            if pool:
                name = self.rng.choice(pool)
                self.used.add(name)
                return name
        while True:
            self.counter += 1
            name = f"{prefix}{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def claim(self, name):
        """Takes a specific name if free (for collision pairs); None when taken."""
        if name in self.used:
            return None
        self.used.add(name)
        return name
