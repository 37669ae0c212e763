"""Forward plus all gradients of the report's section 6 example on an NVIDIA GPU: our CUDA kernels (gather,
Algorithm 4, one thread per gradient element; and the scatter baseline of eq. 40 with atomics) against PyTorch
CUDA autograd, float64, all data already on the GPU.

The function and sizes are benchmarks/gradients.py's (``example``); PyTorch runs its broadcasting formula
(``torch_impl``'s, on CUDA tensors). Every result is checked against ours first (rtol 1e-9). Times are medians
of REPEATS calls after two warm-up calls, each call followed by a device synchronisation (CUDA events would
measure the same; the host's launch overhead is part of what a user pays). Printed per size: ours (gather),
ours (scatter), PyTorch, and ours / PyTorch. Needs a GPU with numba-cuda and PyTorch (the device tool's
machines have both); elsewhere it says so and exits.

Run: ``python benchmarks/cuda_gradients.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# numba-cuda releases before numpy 2.5 register an overload of np.row_stack, which numpy 2.5 removed: the alias
# lets them import on a machine that has both (the device tool's image).
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.gradients import GRADIENTS, example  # noqa: E402

SIZES = [(256, 256, 64), (1024, 1024, 64), (2048, 2048, 128)]
REPEATS = 20
RTOL = 1e-9


def _median_s(call, synchronize) -> float:
    for _ in range(2):
        call()
    synchronize()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(size) -> dict:
    import torch
    from numba import cuda

    fn, grads, args, df = example(size)
    row = {"size": {"I": size[0], "J": size[1], "K": size[2]}}
    # PyTorch CUDA autograd: the same formula as benchmarks/gradients.py's, on the GPU
    I, K = args["a"].shape
    device = torch.device("cuda")
    tensors = {name: torch.from_numpy(value).to(device) for name, value in args.items()}
    cotangent = torch.from_numpy(df).to(device)
    index = (torch.arange(I)[:, None] + torch.arange(K)[None, :]).to(device)

    def torch_full():
        leaves = [tensors[name].detach().requires_grad_() for name in GRADIENTS]
        terms = ((leaves[0][:, None, :] + leaves[1][None, :, :]) ** 2 * torch.diagonal(leaves[2])[:, None, None]
                 + leaves[3][index][:, None, :] ** 3)
        f = torch.exp(-terms.sum(dim=-1))
        return dict(zip(GRADIENTS, torch.autograd.grad(f, leaves, cotangent)))

    reference = {name: value.cpu().numpy() for name, value in torch_full().items()}
    torch.cuda.reset_peak_memory_stats()
    row["torch_s"] = _median_s(torch_full, torch.cuda.synchronize)
    row["torch_peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
    for target in ("cuda", "cuda-scatter"):
        compiled = grads.compile(target)
        inputs = compiled._inputs(args, (grads.adjoint_name, df))  # on the GPU once, as torch's tensors are

        def ours(compiled=compiled, inputs=inputs):
            return compiled.module.gradients(*inputs)

        out = {name: value.copy_to_host().reshape(fn.shapes[name]) for name, value in ours().items()}
        for name in GRADIENTS:
            scale = np.abs(reference[name]).max()
            if not np.allclose(out[name], reference[name], rtol=RTOL, atol=1e-12 * scale):
                raise SystemExit(f"{target}: d{name} differs from PyTorch's at size {size}")
        row[f"{target}_s"] = _median_s(ours, cuda.synchronize)
    row["gather_over_torch"] = row["cuda_s"] / row["torch_s"]
    row["gather_over_scatter"] = row["cuda_s"] / row["cuda-scatter_s"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH")
    options = parser.parse_args()
    try:
        import torch
        from numba import cuda
    except ImportError as error:
        raise SystemExit(f"needs PyTorch and numba-cuda: {error}") from None
    if not (torch.cuda.is_available() and cuda.is_available()):
        raise SystemExit("no CUDA GPU visible to PyTorch and numba: nothing to measure here")
    gpu = torch.cuda.get_device_name()
    print(f"GPU: {gpu}; PyTorch {torch.__version__}; float64; median of {REPEATS} calls, synchronised")
    print(f"{'I x J, K':>18} {'ours gather':>12} {'ours scatter':>13} {'PyTorch':>10} {'ours / PyTorch':>15}")
    rows = []
    for size in SIZES:
        row = measure(size)
        rows.append(row)
        print(f"{size[0]:>7} x {size[1]}, {size[2]:>3} {row['cuda_s'] * 1e3:10.3f}ms "
              f"{row['cuda-scatter_s'] * 1e3:11.3f}ms {row['torch_s'] * 1e3:8.3f}ms {row['gather_over_torch']:15.3f}")
    if options.json:
        Path(options.json).write_text(json.dumps({"gpu": gpu, "torch": torch.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
