#!/usr/bin/env python3
"""The GPU benchmark graphs of bench/gpu/ built in PyTorch, timed with CUDA events the same way
portc bench times its runs (warm-up, then the median of back-to-back runs), in torch eager and
under torch.compile, next to portc's numbers read from the JSON that `portc bench --json` wrote.

usage: vs_torch.py JSON_DIR [--iters N] [--target NAME]
Prints one table, last: per graph portc fused and eager, torch eager and torch.compile medians,
the bandwidth portc reaches as a share of the measured copy bandwidth, and the ratios.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

N64M = 64 * 1024 * 1024
ROWS, COLS = 32768, 4096


def median_ms(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def graphs():
    """name -> (function, inputs, bytes moved once)"""
    dev = "cuda"
    g = {}
    x = torch.rand(N64M, device=dev) * 2 - 1
    g["copy_64M"] = (lambda x: x.clone(), (x,), 2 * 4 * N64M)
    a = torch.tensor(1.1, device=dev)
    b = torch.tensor(0.2, device=dev)
    g["gelu_affine_64M"] = (lambda x, a, b: F.gelu(x * a + b), (x, a, b), 2 * 4 * N64M)
    for dt, size in (("f32", 4), ("f16", 2)):
        t = torch.float32 if dt == "f32" else torch.float16
        m = (torch.rand(ROWS, COLS, device=dev) * 2 - 1).to(t)
        w = (torch.rand(COLS, device=dev) + 0.5).to(t)
        bias = (torch.rand(COLS, device=dev) - 0.5).to(t)
        io = 2 * size * ROWS * COLS
        g[f"softmax_32768x4096_{dt}"] = (lambda m: torch.softmax(m, dim=-1), (m,), io)
        g[f"layer_norm_32768x4096_{dt}"] = (lambda m, w, bias: F.layer_norm(m, (COLS,), w, bias, 1e-5), (m, w, bias), io)
        g[f"rms_norm_32768x4096_{dt}"] = (lambda m, w: F.rms_norm(m, (COLS,), w, 1e-6), (m, w), io)
    A = (torch.rand(8192, 8192, device=dev) - 0.5).to(torch.float16)
    B = (torch.rand(8192, 8192, device=dev) - 0.5).to(torch.float16)
    g["matmul_8192_f16"] = (lambda A, B: torch.matmul(A, B), (A, B), 3 * 2 * 8192 * 8192)
    return g


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    jdir = sys.argv[1]
    iters = int(sys.argv[sys.argv.index("--iters") + 1]) if "--iters" in sys.argv else 50
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    copy_gbps = {}
    for name, (fn, args, nbytes) in graphs().items():
        eager = median_ms(lambda: fn(*args), iters)
        compiled_fn = torch.compile(fn)
        comp = median_ms(lambda: compiled_fn(*args), iters)
        path = os.path.join(jdir, name + ".json")
        p = json.load(open(path)) if os.path.exists(path) else None
        rows.append((name, p, eager, comp, nbytes))
        if name == "copy_64M":
            copy_gbps["torch"] = nbytes / (min(eager, comp) * 1e-3) / 1e9
            if p:
                copy_gbps["portc"] = p["fused"]["gbps"]
        del compiled_fn
    copy = max(copy_gbps.values())
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; copy bandwidth {copy:.0f} GB/s "
          f"(torch {copy_gbps.get('torch', 0):.0f}, portc {copy_gbps.get('portc', 0):.0f}); medians of {iters} runs, ms")
    print(f"{'graph':28} {'portc':>9} {'p.eager':>9} {'t.eager':>9} {'t.compile':>9} {'GB/s':>7} {'%copy':>6} "
          f"{'vs compile':>10} {'vs eager':>9}")
    for name, p, eager, comp, nbytes in rows:
        if not p:
            print(f"{name:28} {'-':>9} {'-':>9} {eager:9.3f} {comp:9.3f}   (no portc result)")
            continue
        ms = p["fused"]["median_s"] * 1e3
        pe = p["eager"]["median_s"] * 1e3 if "eager" in p else float("nan")
        gbps = nbytes / (ms * 1e-3) / 1e9
        if name.startswith("matmul"):
            tflops = 2 * 8192 ** 3 / (ms * 1e-3) / 1e12
            extra = f"{tflops:6.1f}TF"
            pct = "     -"
        else:
            extra = f"{gbps:7.0f}"
            pct = f"{100 * gbps / copy:5.0f}%"
        print(f"{name:28} {ms:9.3f} {pe:9.3f} {eager:9.3f} {comp:9.3f} {extra:>7} {pct:>6} "
              f"{comp / ms:9.2f}x {eager / ms:8.2f}x")
    print("ratios are torch time / portc time: above 1 means portc is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
