#!/usr/bin/env python3
"""train_test.py: examples/train_mlp.c (its MLP and its CNN) against PyTorch, on the handwritten
digits of scikit-learn.

  train_test.py TRAIN_MLP WORKDIR TARGET...

Exports the digits (features scaled to [0, 1], shuffled once, 1437 to train and 360 to test) and
the initial weights of PyTorch's layers (seed 0) into WORKDIR as .npy files; then, on each TARGET
and for each model (the MLP; the CNN: conv 3x3 x8, relu, 2x2 max pool, linear):
  - trains 400 steps with AdamW and expects a test accuracy of at least 95%;
  - trains 20 steps with SGD (momentum 0.9) and with AdamW, and expects each step's loss within
    1e-4 (relative) of PyTorch's, on the CPU in float32, from the same weights and the same batches.
A target that cannot run here fails the test: the caller names only the targets it has.
"""
import os
import re
import subprocess
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits

BATCH, HIDDEN, STEPS_CMP, STEPS_FIT = 64, 64, 20, 400


def export(work, model="mlp"):
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.RandomState(0).permutation(len(y))
    x, y = x[order], y[order]
    ntr = 1437
    np.save(os.path.join(work, "x_train.npy"), x[:ntr])
    np.save(os.path.join(work, "y_train.npy"), y[:ntr])
    np.save(os.path.join(work, "x_test.npy"), x[ntr:])
    np.save(os.path.join(work, "y_test.npy"), y[ntr:])
    torch.manual_seed(0)
    if model == "mlp":
        l1, l2 = torch.nn.Linear(64, HIDDEN), torch.nn.Linear(HIDDEN, 10)
        net = torch.nn.Sequential(l1, torch.nn.ReLU(), l2)
        saved = (("w1", l1.weight.T), ("b1", l1.bias), ("w2", l2.weight.T), ("b2", l2.bias))
    else:
        c, l = torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.Linear(128, 10)
        net = torch.nn.Sequential(torch.nn.Unflatten(1, (1, 8, 8)), c, torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), l)
        saved = (("cw", c.weight), ("cb", c.bias), ("fw", l.weight.T), ("fb", l.bias))
    for name, t in saved:
        np.save(os.path.join(work, name + ".npy"), np.ascontiguousarray(t.detach().numpy()))
    return x[:ntr], y[:ntr], net


def torch_losses(x, y, model, opt, steps):
    params = list(model.parameters())
    o = (torch.optim.SGD(params, lr=0.1, momentum=0.9) if opt == "sgd" else
         torch.optim.AdamW(params, lr=0.01, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8))
    losses = []
    for s in range(steps):
        rows = [(s * BATCH + r) % len(y) for r in range(BATCH)]
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x[rows])), torch.from_numpy(y[rows]))
        o.zero_grad()
        loss.backward()
        o.step()
        losses.append(loss.item())
    return losses


def run(binary, work, target, *args):
    p = subprocess.run([binary, work, "-t", target, *args], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"FAIL {target}: train_mlp {' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, work, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    failures = 0
    for target in targets:
        for model in ("mlp", "cnn"):
            x, y, _ = export(work, model)
            out = run(binary, work, target, "--model", model, "--opt", "adamw", "--steps", str(STEPS_FIT))
            acc = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
            ok = acc >= 0.95
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {target} {model}: AdamW, {STEPS_FIT} steps: test accuracy {acc:.4f} (>= 0.95 wanted)")
            for opt in ("sgd", "adamw"):
                x, y, net = export(work, model)  # the same initial weights for both
                want = torch_losses(x, y, net, opt, STEPS_CMP)
                path = os.path.join(work, f"losses-{target}-{model}-{opt}.txt")
                run(binary, work, target, "--model", model, "--opt", opt, "--steps", str(STEPS_CMP), "--losses", path)
                got = [float(v) for v in open(path).read().split()]
                rel = max(abs(g - w) / abs(w) for g, w in zip(got, want))
                ok = len(got) == STEPS_CMP and rel <= 1e-4
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {target} {model}: {opt}, first {STEPS_CMP} losses against PyTorch: largest relative difference {rel:.2e}"
                      f" (<= 1e-4 wanted); losses {got[0]:.6f} -> {got[-1]:.6f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
