# parir-torch with PyTorch on an NVIDIA CUDA image; runs the test suite by default.
#   docker build -t parir-torch .
#   docker run --rm --gpus all parir-torch
FROM nvidia/cuda:13.0.0-devel-ubuntu24.04

RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-pip python3-venv g++ cmake ninja-build libgtest-dev libfmt-dev \
    && rm -rf /var/lib/apt/lists/*

RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH CUDA_HOME=/usr/local/cuda

WORKDIR /parir-torch
RUN python3 -m pip install --no-cache-dir torch==2.11.0 pytest numpy setuptools wheel
COPY . .
RUN MAX_JOBS=$(nproc) python3 -m pip install --no-cache-dir --no-build-isolation --use-pep517 -e .

CMD ["bash", "tests/run_all.sh"]
