#!/usr/bin/env python3
"""The GPU benchmark graphs of bench/gpu/ (and the transformer example at B=16, S=512, in f32 and
under f16 autocast) built in
PyTorch, timed with CUDA events the same way portc bench times its runs (warm-up, then the
median of back-to-back runs), in torch eager and under torch.compile, next to portc's numbers
read from the JSON that `portc bench --json` wrote to JSON_DIR/TARGET/NAME.json.

usage: vs_torch.py JSON_DIR [--iters N] [--targets cuda,vulkan] [--only SUBSTRING[,SUBSTRING...]]
Prints one table, last: per graph and target, portc fused and eager, torch eager and
torch.compile medians, the bandwidth (memory-bound graphs, as a share of the measured copy
bandwidth) or FLOP rate (matmuls) portc reaches, and the ratios. TF32 is off everywhere.
"""
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

N64M = 64 * 1024 * 1024
ROWS, COLS = 32768, 4096


def median_ms(fn, iters, warmup=5, warm_s=2.0):
    """warm-up for `warmup` runs and at least warm_s seconds, as portc bench --warmup-s: a GPU
    left idle for seconds (torch.compile compiling, say) runs its next kernels slower"""
    t0, n = time.perf_counter(), 0
    while n < warmup or time.perf_counter() - t0 < warm_s:
        fn()
        n += 1
        if n % 16 == 0:
            torch.cuda.synchronize()
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


def rand(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, device="cuda") * (hi - lo) + lo).to(dtype)


def encoder(x, p):
    """examples/transformer.ptg: post-norm encoder layer, 4 heads of 64, gelu MLP of 1024"""
    B, S, D = x.shape
    heads = lambda t: t.view(B, S, 4, 64).transpose(1, 2)
    q, k, v = heads(x @ p["wq"] + p["bq"]), heads(x @ p["wk"] + p["bk"]), heads(x @ p["wv"] + p["bv"])
    att = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, S, D)
    h1 = F.layer_norm(x + att @ p["wo"] + p["bo"], (D,), p["g1"], p["c1"], 1e-5)
    m = F.gelu(h1 @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return F.layer_norm(h1 + m, (D,), p["g2"], p["c2"], 1e-5)


def autocast_f16(fn, *args):
    with torch.autocast("cuda", dtype=torch.float16):
        return fn(*args)


def graphs():
    """name -> (function, inputs, bytes moved once, FLOPs or 0)"""
    g = {}
    x = rand(N64M)
    g["copy_64M"] = (lambda x: x.clone(), (x,), 2 * 4 * N64M, 0)
    a, b = torch.tensor(1.1, device="cuda"), torch.tensor(0.2, device="cuda")
    g["gelu_affine_64M"] = (lambda x, a, b: F.gelu(x * a + b), (x, a, b), 2 * 4 * N64M, 0)
    for dt, size in (("f32", 4), ("f16", 2)):
        t = torch.float32 if dt == "f32" else torch.float16
        m, w, bias = rand(ROWS, COLS, dtype=t), rand(COLS, dtype=t, lo=0.5, hi=1.5), rand(COLS, dtype=t, lo=-0.5, hi=0.5)
        io = 2 * size * ROWS * COLS
        g[f"softmax_32768x4096_{dt}"] = (lambda m: torch.softmax(m, dim=-1), (m,), io, 0)
        g[f"layer_norm_32768x4096_{dt}"] = (lambda m, w, bias: F.layer_norm(m, (COLS,), w, bias, 1e-5), (m, w, bias), io, 0)
        g[f"rms_norm_32768x4096_{dt}"] = (lambda m, w: F.rms_norm(m, (COLS,), w, 1e-6), (m, w), io, 0)
    h = torch.float16
    A, B = rand(8192, 8192, dtype=h, lo=-0.5, hi=0.5), rand(8192, 8192, dtype=h, lo=-0.5, hi=0.5)
    g["matmul_8192_f16"] = (lambda A, B: A @ B, (A, B), 3 * 2 * 8192 ** 2, 2 * 8192 ** 3)
    bias = rand(8192, dtype=h, lo=-0.5, hi=0.5)
    g["matmul_bias_gelu_8192_f16"] = (lambda A, B, c: F.gelu(A @ B + c), (A, B, bias), 3 * 2 * 8192 ** 2, 2 * 8192 ** 3)
    A32, B32 = rand(4096, 4096), rand(4096, 4096)
    g["matmul_4096_f32"] = (lambda A, B: A @ B, (A32, B32), 3 * 4 * 4096 ** 2, 2 * 4096 ** 3)
    xm = rand(8192, 1024, dtype=h)
    w1, b1 = torch.randn(1024, 4096, device="cuda", dtype=h) * 0.02, rand(4096, dtype=h, lo=-0.1, hi=0.1)
    w2, b2 = torch.randn(4096, 1024, device="cuda", dtype=h) * 0.02, rand(1024, dtype=h, lo=-0.1, hi=0.1)
    g["mlp_8192_f16"] = (lambda x, w1, b1, w2, b2: F.gelu(x @ w1 + b1) @ w2 + b2, (xm, w1, b1, w2, b2),
                         2 * (8192 * 1024 * 2 + 1024 * 4096 * 2), 2 * 2 * 8192 * 1024 * 4096)
    for dt, b, s, causal in (("f32", 16, 512, False), ("f16", 16, 512, False), ("f16", 8, 1024, True)):
        t = torch.float32 if dt == "f32" else torch.float16
        q, k, v = (rand(b, 8, s, 64, dtype=t) for _ in range(3))
        name = f"attention_{'causal_' if causal else ''}{b}x8x{s}x64_{dt}"
        flops = 4 * b * 8 * s * s * 64 // (2 if causal else 1)
        g[name] = (lambda q, k, v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c), (q, k, v),
                   4 * b * 8 * s * 64 * (4 if dt == "f32" else 2), flops)
    p = {n: torch.randn(*s, device="cuda") * 0.05 for n, s in
         (("wq", (256, 256)), ("wk", (256, 256)), ("wv", (256, 256)), ("wo", (256, 256)), ("w1", (256, 1024)), ("w2", (1024, 256)))}
    p.update({n: torch.zeros(s, device="cuda") for n, s in
              (("bq", 256), ("bk", 256), ("bv", 256), ("bo", 256), ("b1", 1024), ("b2", 256), ("c1", 256), ("c2", 256))})
    p.update({"g1": torch.ones(256, device="cuda"), "g2": torch.ones(256, device="cuda")})
    xt = rand(16, 512, 256)
    tokens = 16 * 512
    tflops = 2 * tokens * 256 * (4 * 256 + 2 * 1024) + 2 * 2 * 16 * 4 * 512 * 512 * 64
    g["transformer"] = (lambda x: encoder(x, p), (xt,), 2 * 4 * tokens * 256, tflops)
    # the same layer in mixed precision: torch.autocast against `portc bench --autocast f16`
    g["transformer_autocast_f16"] = (lambda x: autocast_f16(encoder, x, p), (xt,), 2 * 4 * tokens * 256, tflops)
    return g


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    jdir = sys.argv[1]
    iters = int(sys.argv[sys.argv.index("--iters") + 1]) if "--iters" in sys.argv else 50
    targets = sys.argv[sys.argv.index("--targets") + 1].split(",") if "--targets" in sys.argv else ["cuda"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows, copy = [], {}
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else [""]
    for name, (fn, args, nbytes, flops) in graphs().items():
        if not any(o in name for o in only) and name != "copy_64M":  # copy: the bandwidth the table divides by
            continue
        with torch.no_grad():
            eager = median_ms(lambda: fn(*args), iters)
            compiled_fn = torch.compile(fn)
            comp = median_ms(lambda: compiled_fn(*args), iters)
        res = {}
        for t in targets:
            path = os.path.join(jdir, t, name + ".json")
            if os.path.exists(path):
                res[t] = json.load(open(path))
        rows.append((name, res, eager, comp, nbytes, flops))
        if name == "copy_64M":
            copy["torch"] = nbytes / (min(eager, comp) * 1e-3) / 1e9
            for t, r in res.items():
                copy[t] = r["fused"]["gbps"]
        del compiled_fn
        torch.cuda.empty_cache()
    best = max(copy.values())
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; copy bandwidth {best:.0f} GB/s ("
          + ", ".join(f"{k} {v:.0f}" for k, v in copy.items()) + f"); medians of {iters} runs, ms")
    print(f"{'graph':26} {'target':7} {'portc':>8} {'p.eager':>8} {'t.eager':>8} {'t.compile':>9} {'rate':>10} {'%copy':>6} "
          f"{'vs compile':>10} {'vs eager':>9}")
    for name, res, eager, comp, nbytes, flops in rows:
        if not res:
            print(f"{name:26} {'-':7} {'-':>8} {'-':>8} {eager:8.3f} {comp:9.3f}   (no portc result)")
        for t, p in res.items():
            ms = p["fused"]["median_s"] * 1e3
            pe = p["eager"]["median_s"] * 1e3 if "eager" in p else math.nan
            if flops:
                rate, pct = f"{flops / (ms * 1e-3) / 1e12:7.1f} TF", "     -"
            else:
                gbps = nbytes / (ms * 1e-3) / 1e9
                rate, pct = f"{gbps:7.0f} GB", f"{100 * gbps / best:5.0f}%"
            print(f"{name:26} {t:7} {ms:8.3f} {pe:8.3f} {eager:8.3f} {comp:9.3f} {rate:>10} {pct:>6} "
                  f"{comp / ms:9.2f}x {eager / ms:8.2f}x")
    print("ratios are torch time / portc time: above 1 means portc is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
