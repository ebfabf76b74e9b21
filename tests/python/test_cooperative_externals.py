"""Cooperative externals: parir.external(..., parallelize=parir.threads(n)), a device function
that the n threads of a block call together with the same arguments, and tensor (pointer)
parameters; the code, NVRTC, the errors, seq=True, and on the GPU against torch."""

import pytest
import torch

import parir_torch as parir
from helpers import check_close, load_module

HEADER = r"""
// Cooperative device functions: every thread of the block calls them with the same arguments.
__device__ float block_row_sum(const float* x, int64_t row, int64_t n) {
  __shared__ float partial[32];
  __shared__ float total;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += x[row * n + j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += partial[w];
    total = t;
  }
  __syncthreads();
  return total;
}

__device__ void scale_row(float* y, const float* x, int64_t row, int64_t n, float by) {
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) y[row * n + j] = x[row * n + j] * by;
}
"""


@parir.external("block_row_sum", parir.CompileBackend.Cuda, parir.Target.Device,
                header="parir_test_coop.cuh", parallelize=parir.threads(256))
def block_row_sum(x: torch.Tensor, row: int, n: int) -> parir.float32:
    return x[row, :n].sum()


@parir.external("scale_row", parir.CompileBackend.Cuda, parir.Target.Device,
                header="parir_test_coop.cuh", parallelize=parir.threads(256))
def scale_row(y: torch.Tensor, x: torch.Tensor, row: int, n: int, by: parir.float32) -> None:
    y[row, :n] = x[row, :n] * by


@parir.jit
def normalize_rows(x, y, N, M):
    parir.label('N')
    for i in range(N):
        s = block_row_sum(x, i, M)
        scale_row(y, x, i, M, 1.0 / s)


@parir.jit
def sums_beside_a_loop(x, y, total, N, M):
    parir.label('N')
    for i in range(N):
        total[i] = block_row_sum(x, i, M)
        parir.label('M')
        for j in range(M):
            y[i, j] = x[i, j] * 2.0


@pytest.fixture
def opts(tmp_path):
    (tmp_path / "parir_test_coop.cuh").write_text(HEADER)

    def make(spec):
        o = parir.par(spec)
        o.includes = [str(tmp_path)]
        return o
    return make


def test_the_blocks_threads_call_a_cooperative_external_together(opts):
    x = torch.rand(5, 1000)
    src = parir.print_compiled(normalize_rows, [x, torch.empty_like(x), 5, 1000],
                               opts({'N': parir.threads(5)}))
    assert "grid(5) block(256)" in src
    assert src.count("the block's 256 threads call a cooperative external together") == 2
    assert "s = block_row_sum(x, i, 1000L);" in src
    assert "scale_row(y, x, i, 1000L, (1.0f / s));" in src
    fn = parir.compile_string("normalize_rows", src, opts({'N': parir.threads(5)}))
    fn.compile("sm_90")


def test_a_cooperative_call_beside_a_loop_of_the_same_threads(opts):
    x = torch.rand(3, 700)
    args = [x, torch.empty_like(x), torch.empty(3), 3, 700]
    src = parir.print_compiled(sums_beside_a_loop, args,
                               opts({'N': parir.threads(3), 'M': parir.threads(256)}))
    assert "block(256)" in src
    # A loop asking for more threads than the external's gives the block more than it wants.
    with pytest.raises(parir.ParirError, match=r"256 threads, which must be all of its block's"
                                               r".*give the block 1024"):
        parir.print_compiled(sums_beside_a_loop, args,
                             opts({'N': parir.threads(3), 'M': parir.threads(1024)}))


def test_seq_calls_the_python_function_once():
    x = torch.rand(4, 50)
    y = torch.full_like(x, float("nan"))
    normalize_rows(x, y, 4, 50, seq=True)
    torch.testing.assert_close(y, x / x.sum(1, keepdim=True))


def test_declaration_errors():
    ext = lambda p: parir.external("f", parir.CompileBackend.Cuda, parir.Target.Device,
                                   parallelize=p)
    with pytest.raises(parir.ParirError, match="multiple of 32"):
        ext(parir.threads(100))
    with pytest.raises(parir.ParirError, match="multiple of 32 from 32 to 128"):
        ext(parir.threads(256).tpb(128))
    with pytest.raises(parir.ParirError, match="do not reduce or scan"):
        ext(parir.threads(256).reduce())
    with pytest.raises(parir.ParirError, match=r"parallelize=parir.threads\(256\)"):
        ext(256)


def test_use_errors_name_the_line(tmp_path, opts):
    def error(body, name):
        m = load_module(tmp_path, "import torch\nimport parir_torch as parir\n"
                                  "from test_cooperative_externals import block_row_sum, "
                                  "scale_row\n"
                                  "def f(x, y, N, M):\n" + body, name)
        with pytest.raises(parir.ParirError) as info:
            parir.print_compiled(m.f, [torch.rand(4, 64), torch.rand(4, 64), 4, 64],
                                 opts({'N': parir.threads(4), 'M': parir.threads(64).reduce()}))
        return str(info.value)

    head = "    parir.label('N')\n    for i in range(N):\n"
    msg = error(head + "        if block_row_sum(x, i, M) > 0.0:\n"
                       "            y[i, 0] = 1.0\n", "cond")
    assert "in a condition" in msg and "cond.py:7" in msg
    msg = error(head + "        s = 0.0\n"
                       "        parir.label('M')\n"
                       "        for j in range(M):\n"
                       "            s += x[i, j] + block_row_sum(x, i, M)\n"
                       "        y[i, 0] = s\n", "inred")
    assert "inside the reduction loop" in msg and "inred.py:10" in msg
    msg = error(head + "        y[i, 0] = block_row_sum(x[i, 0], i, M)\n", "notname")
    assert "pass a tensor argument by its name" in msg and "notname.py:7" in msg
    msg = error(head + "        y[i, 0] = scale_row(y, x, i, M, 2.0)\n", "void")
    assert "returns nothing" in msg and "void.py:7" in msg


@pytest.mark.gpu
@pytest.mark.parametrize("n, m", [(1, 1), (33, 31), (1000, 1000), (7, 4097), (3, 1_000_003)])
def test_cooperative_externals_on_the_gpu(n, m, opts, rng):
    x = torch.rand(n, m, generator=rng).cuda() + 0.1
    y = torch.full_like(x, float("nan"))
    normalize_rows(x, y, n, m, opts=opts({'N': parir.threads(n)}))
    check_close(y, x.double() / x.double().sum(1, keepdim=True), "normalize_rows")
    total = torch.full((n,), float("nan"), device="cuda")
    sums_beside_a_loop(x, y, total, n, m,
                       opts=opts({'N': parir.threads(n), 'M': parir.threads(256)}))
    check_close(total, x.double().sum(1), "block_row_sum")
    check_close(y, 2 * x.double(), "beside")
