"""The capstone network of chapter 11 trained with derived kernels against the same network in PyTorch.

The network (:func:`tensoradbook.exercises.ch11_capstone.network`, batch 32, 16 filters): a padded 3 x 3
convolution, ReLU, 2 x 2 max pooling, a dense layer, a log-softmax and the mean negative log-likelihood, on
scikit-learn's bundled digits (1437 training and 360 held-out images, stratified). Plain SGD, rate 0.2 halved
every four epochs, the same initial weights and the same batches for both sides, float64. Measured, in one run:

* start: deriving and compiling the network's kernels and taking one step on a batch of random images in a fresh
  process with an empty kernel cache (``cold``, numba compiles every kernel) and again in a second process on
  that cache (``warm``); each reports the whole process and the part after ``import tensoradbook``. Loading the
  digits is not a part of it: scikit-learn's import alone takes about 0.7 s here;
* training: held-out accuracy after every epoch (both sides; the goals: at least 95%, within one point
  of PyTorch) and the loss at every step (the two runs do the same arithmetic in another order);
* time per epoch (median over the epochs after the first), ours against PyTorch, on one thread and on every
  CPU, once on the machine as it is and once with every CPU busy in another CPU-bound process: how the small
  parallel kernels of a training step behave on a shared machine.

Before anything is timed the derived gradients at the initial weights are checked against PyTorch's
autograd (relative 1e-12). Other processes inflate the times: the machine and its load are recorded.

Run: ``.venv/bin/python benchmarks/capstone.py [--json benchmarks/results/capstone.json] [--epochs 12]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks.* beside this file

BATCH, FILTERS, RATE = 32, 16, 0.2
WEIGHTS = ("W", "b", "V", "d")
COLD_GOAL_S = 20.0  # the capstone network derived and compiled cold in under 20 s
TIMED_EPOCHS = 4    # epochs per timing run (the first is not counted)


def digits():
    """``(X_train, y_train, X_test, y_test)``: the pixels scaled to [0, 1], a stratified fifth held out."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    X_train, X_test, y_train, y_test = train_test_split(data.images / 16.0, data.target, test_size=0.2,
                                                        random_state=0, stratify=data.target)
    return X_train, y_train, X_test, y_test


def initial_weights(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"W": rng.standard_normal((FILTERS, 3, 3)) * np.sqrt(2 / 9), "b": np.zeros(FILTERS),
            "V": rng.standard_normal((10, FILTERS, 4, 4)) * np.sqrt(1 / (FILTERS * 16)), "d": np.zeros(10)}


def network_gradients():
    """The network's program and its gradients with respect to the weights."""
    import tensoradbook as tab
    from tensoradbook.exercises.ch11_capstone import network

    program = tab.parse(*network(batch=BATCH, filters=FILTERS))
    return program, tab.derive(program, wrt=list(WEIGHTS))


def start_worker() -> None:
    """One start in this process: derive, compile and take one step (benchmarks.programs.start_worker)."""
    from benchmarks.programs import start_worker as timed_worker

    def one_step():
        _, grads = network_gradients()
        step = grads.compile("numba")
        rng = np.random.default_rng(0)  # a batch of the digits' shapes: loading them is not part of the start
        args = {**initial_weights(), "X": rng.uniform(0, 1, (BATCH, 8, 8)),
                "T": np.eye(10)[rng.integers(0, 10, BATCH)]}
        step(args, 1.0, step.values(args))

    timed_worker(one_step)


class Ours:
    """SGD steps with the derived kernels: the forward kernels keep every intermediate for the backward ones."""

    def __init__(self, data):
        _, grads = network_gradients()
        self.step = grads.compile("numba")
        self.X_train, self.y_train, self.X_test, self.y_test = data

    def gradients(self, weights, rows) -> tuple[float, dict]:
        args = {**weights, "X": self.X_train[rows], "T": np.eye(10)[self.y_train[rows]]}
        values = self.step.values(args)
        return float(values["L"]), self.step(args, 1.0, values)

    def train_epoch(self, weights, order, rate) -> list[float]:
        losses = []
        for rows in _batches(order):
            loss, gradient = self.gradients(weights, rows)
            losses.append(loss)
            for name in WEIGHTS:
                weights[name] -= rate * gradient[name]
        return losses

    def accuracy(self, weights) -> float:
        # the forward kernels have the batch size compiled in: the last batch is padded and its padding dropped
        right, n = 0, len(self.y_test)
        for first in range(0, n, BATCH):
            rows = np.resize(np.arange(first, min(first + BATCH, n)), BATCH)
            logits = self.step.values({**weights, "X": self.X_test[rows], "T": np.zeros((BATCH, 10))})["z"]
            kept = min(BATCH, n - first)
            right += int(np.sum(logits[:kept].argmax(axis=1) == self.y_test[first:first + kept]))
        return right / n


class Peer:
    """The same network and steps in PyTorch autograd (conv2d, relu, max_pool2d, linear, log_softmax, nll)."""

    def __init__(self, data):
        import torch

        self.torch = torch
        X_train, y_train, X_test, y_test = data
        self.X_train, self.y_train = torch.tensor(X_train), torch.tensor(y_train)
        self.X_test, self.y_test = torch.tensor(X_test), y_test

    def loss(self, weights, X, y):
        functional = self.torch.nn.functional
        h = functional.conv2d(X[:, None], weights["W"][:, None], weights["b"], padding=1)
        z = functional.max_pool2d(self.torch.relu(h), 2).flatten(1) @ weights["V"].flatten(1).T + weights["d"]
        return functional.nll_loss(self.torch.log_softmax(z, dim=1), y), z

    def tensors(self, weights) -> dict:
        return {name: self.torch.tensor(value, requires_grad=True) for name, value in weights.items()}

    def gradients(self, weights, rows) -> tuple[float, dict]:
        for tensor in weights.values():
            tensor.grad = None
        loss, _ = self.loss(weights, self.X_train[rows], self.y_train[rows])
        loss.backward()
        return loss.item(), {name: tensor.grad for name, tensor in weights.items()}

    def train_epoch(self, weights, order, rate) -> list[float]:
        losses = []
        for rows in _batches(order):
            loss, gradient = self.gradients(weights, rows)
            losses.append(loss)
            with self.torch.no_grad():
                for name in WEIGHTS:
                    weights[name] -= rate * gradient[name]
        return losses

    def accuracy(self, weights) -> float:
        with self.torch.no_grad():
            _, logits = self.loss(weights, self.X_test, self.torch.zeros(len(self.y_test), dtype=self.torch.long))
        return float(np.mean(logits.argmax(dim=1).numpy() == self.y_test))


def _batches(order):
    for first in range(0, len(order) - BATCH + 1, BATCH):
        yield order[first:first + BATCH]


def orders(epochs: int, n: int) -> list[np.ndarray]:
    return [np.random.default_rng(100 + epoch).permutation(n) for epoch in range(epochs)]


def rate(epoch: int) -> float:
    return RATE * 0.5 ** (epoch // 4)


def train(side, weights, epochs: int, n: int) -> dict:
    """Epochs of SGD: the loss at every step, the held-out accuracy and the seconds of each epoch."""
    losses, accuracies, seconds = [], [], []
    for epoch, order in enumerate(orders(epochs, n)):
        started = time.perf_counter()
        losses += side.train_epoch(weights, order, rate(epoch))
        seconds.append(time.perf_counter() - started)
        accuracies.append(side.accuracy(weights))
    return {"losses": losses, "accuracy": accuracies, "epoch_s": seconds}


def check_gradients(ours: Ours, peer: Peer) -> float:
    """Largest difference of the first batch's gradients at the initial weights, relative to each's largest."""
    rows = np.arange(BATCH)
    _, mine = ours.gradients(initial_weights(), rows)
    _, theirs = peer.gradients(peer.tensors(initial_weights()), rows)
    return max(float(np.abs(mine[name] - theirs[name].numpy()).max() / np.abs(mine[name]).max()) for name in WEIGHTS)


def timings(ours: Ours, peer: Peer, n: int) -> dict:
    """Median seconds per epoch (the first not counted) of both sides on one thread and on every CPU."""
    import numba

    result = {}
    for threads in dict.fromkeys((1, os.cpu_count() or 1)):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        peer.torch.set_num_threads(threads)
        for name, side, weights in (("ours", ours, initial_weights()), ("pytorch", peer, None)):
            run = train(side, weights if weights is not None else peer.tensors(initial_weights()), TIMED_EPOCHS, n)
            result[f"{name}, {threads} thread{'s' if threads > 1 else ''}"] = statistics.median(run["epoch_s"][1:])
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--epochs", type=int, default=12, help="epochs of the accuracy run (default 12)")
    parser.add_argument("--start-worker", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.start_worker:
        start_worker()
        return

    from benchmarks.demo_kernels import busy_cpus
    from benchmarks.gradients import machine
    from benchmarks.programs import timed_start

    print(__doc__.splitlines()[0])
    load_before = os.getloadavg()
    print(f"batch {BATCH}, {FILTERS} filters; numba target, {os.cpu_count()} CPUs; load average before "
          f"{load_before[0]:.2f} (other processes inflate the times)")
    with tempfile.TemporaryDirectory() as cache:
        cold, warm = timed_start(__file__, cache), timed_start(__file__, cache)
        os.environ["TENSORADBOOK_CACHE"] = cache  # this process loads the kernels the starts compiled
        for label, record in (("cold start", cold), ("warm start", warm)):
            print(f"{label:<12} whole process {record['process_s']:.2f} s, after importing tensoradbook "
                  f"{record['after_imports_s']:.2f} s")
        data = digits()
        peer = Peer(data)  # PyTorch loaded before Numba starts its OpenMP threads (see benchmarks/gradients.py)
        ours = Ours(data)
        difference = check_gradients(ours, peer)
        if difference > 1e-12:
            raise SystemExit(f"the derived gradients differ from PyTorch's: {difference:.1e}")
        print(f"gradients at the initial weights equal PyTorch's: largest relative difference {difference:.1e}")
        n = len(data[1])
        import numba

        numba.set_num_threads(1)
        peer.torch.set_num_threads(1)
        accuracy = {"ours": train(ours, initial_weights(), options.epochs, n),
                    "pytorch": train(peer, peer.tensors(initial_weights()), options.epochs, n)}
        loss_gap = float(np.max(np.abs(np.subtract(accuracy["ours"]["losses"], accuracy["pytorch"]["losses"]))))
        final = {name: run["accuracy"][-1] for name, run in accuracy.items()}
        print(f"after {options.epochs} epochs: held-out accuracy ours {final['ours']:.1%}, PyTorch "
              f"{final['pytorch']:.1%}; the losses differ by at most {loss_gap:.1e} over "
              f"{len(accuracy['ours']['losses'])} steps")
        loads = {}
        for load in ("quiet", "busy"):
            spinners = busy_cpus() if load == "busy" else []
            try:
                loads[load] = timings(ours, peer, n)
            finally:
                for spinner in spinners:
                    spinner.terminate()
            print(f"time per epoch, {load} ({len(spinners)} CPU-bound processes beside): "
                  + ", ".join(f"{label} {seconds * 1e3:.0f} ms" for label, seconds in loads[load].items()))
    load_after = os.getloadavg()
    goals = {"accuracy at least 95% (ours)": final["ours"] >= 0.95,
             "within one point of PyTorch": abs(final["ours"] - final["pytorch"]) <= 0.01,
             f"cold start under {COLD_GOAL_S:g} s": cold["process_s"] < COLD_GOAL_S}
    for goal, met in goals.items():
        print(f"goal {goal}: {'met' if met else 'NOT met'}")
    print(f"load average after: {load_after[0]:.2f}")
    if options.json:
        record = {"machine": machine(), "load_average": {"before": load_before[0], "after": load_after[0]},
                  "batch": BATCH, "filters": FILTERS, "epochs": options.epochs, "rate": RATE,
                  "start": {"cold": cold, "warm": warm}, "gradient_difference": difference,
                  "final_accuracy": final, "max_loss_difference": loss_gap,
                  "accuracy_per_epoch": {name: run["accuracy"] for name, run in accuracy.items()},
                  "epoch_s": loads, "goals": goals}
        with open(options.json, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
