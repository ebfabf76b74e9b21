"""A corpus of programs written the way Parir's users write them.

Each module groups programs by theme and exports a ``CASES`` dict: program name -> a builder
``(rng, device) -> case``. A case is a dict with

* ``fn``: the jit function, ``args``: its arguments, ``spec``: the parallel specification;
* ``check``: a list of ``(output, reference)`` pairs, the references computed independently
  (NumPy or torch, float64 where it matters) before the program runs;
* optionally ``opts``: a function of the spec returning the ``CompileOptions`` to use instead
  of ``parir.par(spec)``; ``run``: a function of the case doing the compiled run when a plain
  call is not how the program is used; ``tol``: ``(rtol, atol)`` for float outputs.

tests/python/test_corpus.py runs every program as plain Python against its reference and
through the compiler and NVRTC on the CPU, and on a GPU against both.
"""

from . import (bits_and_bytes, dynamic_programming, finance_and_statistics, hashes_and_checksums,
               host_loops, images, integers_and_graphs, linear_algebra, long_rows_and_blocks,
               math_and_atomics, nbody, nn_layers, numerical_methods, numerics_and_data,
               optional_arguments, parboil_and_shoc, polybench_more, ported_kernels,
               readme_examples, reductions, rodinia_and_samples, scans_and_argmax, seed_examples,
               signals_and_geometry, simulations, sparse, stencils, taichi_warp_numba,
               training_utils, transformer_ops, vision_layers, vision_resampling)

ALL_CASES = {}
for _module in (seed_examples, readme_examples, stencils, dynamic_programming, linear_algebra,
                nbody, sparse, images, nn_layers, reductions, math_and_atomics, scans_and_argmax,
                long_rows_and_blocks, transformer_ops, integers_and_graphs, simulations,
                signals_and_geometry, training_utils, numerics_and_data,
                finance_and_statistics, host_loops, ported_kernels, rodinia_and_samples,
                parboil_and_shoc, taichi_warp_numba, polybench_more, bits_and_bytes,
                hashes_and_checksums, vision_layers, vision_resampling, numerical_methods,
                optional_arguments):
    for _name, _builder in _module.CASES.items():
        assert _name not in ALL_CASES, _name
        ALL_CASES[_name] = _builder
