"""Real programs derived from npbench, one module each; PROGRAMS lists them in report order."""

from . import (azimint_naive, covariance, fdtd_2d, floyd_warshall, gemver, gesummv, go_fast,
               gramschmidt, hdiff, heat_3d, jacobi_1d, jacobi_2d, softmax, spmv, symm, syr2k,
               syrk, trmm, vadv)

PROGRAMS = [m.PROGRAM for m in (
    gemver, gesummv, syrk, syr2k, symm, trmm, gramschmidt, covariance,  # linear algebra
    jacobi_1d, jacobi_2d, heat_3d, fdtd_2d, hdiff, vadv,                 # stencils
    floyd_warshall, softmax, spmv, azimint_naive, go_fast)]              # other
