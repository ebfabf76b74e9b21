import gc
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))

HAS_GPU = torch.cuda.is_available()


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped without one)")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Each test session compiles into its own disk cache, so tests never see stale entries."""
    root = tmp_path_factory.getbasetemp() / "parir_cache"
    monkeypatch.setenv("PARIR_CACHE_DIR", str(root))
    yield


@pytest.fixture
def rng():
    return torch.Generator().manual_seed(1234)


@pytest.fixture
def no_garbage():
    """Collects the garbage of earlier tests before a CUDA graph capture. torch.cuda.graph does
    not always collect it first, and an earlier test's CUDAGraph freed by the collector during
    the capture invalidates it (its reset is not allowed while a stream captures)."""
    gc.collect()
    yield
