"""Builds parir_torch and its one C++ extension, parir_torch._C.

The extension holds the compiler core (csrc/ir, passes, codegen, compiler), the Python front end
(csrc/frontend), the runtime (csrc/runtime: NVRTC, driver, disk cache, the parir::launch op) and
the bindings (csrc/python). It is compiled with the host C++ compiler only: kernels are compiled
at run time by NVRTC, so no nvcc is needed. The CUDA headers are needed for the driver API's
types; they come from $CUDA_HOME or from the nvidia-cuda-runtime wheel that PyTorch depends on.

`pip wheel --no-build-isolation --no-deps -w dist .` builds a wheel for the installed PyTorch
(README.md, Quick start).
"""

import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))

# The extension is compiled against this PyTorch's C++ API, which changes between versions: a
# wheel says which PyTorch it was built for in its local version label (0.1.0+torch2.11.0.cu130)
# and requires that version.
TORCH_RELEASE = torch.__version__.split("+")[0]
WHEEL_VERSION = f"{VERSION}+torch{torch.__version__.replace('+', '.')}"


def cuda_include_dirs():
    candidates = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(os.path.join(os.environ[var], "include"))
    candidates.append("/usr/local/cuda/include")
    try:
        import nvidia

        for root in nvidia.__path__:
            candidates += sorted(glob.glob(os.path.join(root, "cu*", "include")), reverse=True)
            candidates.append(os.path.join(root, "cuda_runtime", "include"))
    except ImportError:
        pass
    for d in candidates:
        if os.path.exists(os.path.join(d, "cuda.h")):
            return [d]
    raise RuntimeError(
        "parir-torch: cuda.h not found; set CUDA_HOME or install PyTorch's CUDA wheel")


sources = sorted(
    glob.glob(os.path.join("csrc", sub, "*.cpp"))
    for sub in ("ir", "frontend", "passes", "codegen", "compiler", "runtime", "python")
)
sources = [s for group in sources for s in group]

setup(
    name="parir-torch",
    version=WHEEL_VERSION,
    description="Custom GPU kernels for PyTorch, written as plain Python loops",
    packages=["parir_torch"],
    python_requires=">=3.10",
    install_requires=[f"torch=={TORCH_RELEASE}"],
    ext_modules=[
        CppExtension(
            "parir_torch._C",
            sources,
            include_dirs=[os.path.join(HERE, "csrc")] + cuda_include_dirs(),
            define_macros=[("FMT_HEADER_ONLY", "1"), ("PARIR_VERSION", f'"{VERSION}"')],
            libraries=["c10_cuda", "dl"],
            extra_compile_args=["-std=c++17", "-O2", "-Wall", "-Wno-unused-parameter"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
