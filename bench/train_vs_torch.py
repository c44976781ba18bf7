#!/usr/bin/env python3
"""Training steps, portc against PyTorch: forward, backward and an AdamW step of an MLP
(8192 x 1024 -> 4096 -> 1024, gelu, MSE) and of the transformer encoder layer of
examples/transformer.ptg (B=16, S=512, MSE against a random target), f32 with TF32 off.

usage: train_vs_torch.py --write DIR          writes DIR/train_mlp.ptg and DIR/train_transformer.ptg
       train_vs_torch.py JSON_DIR [--iters N] [--targets cuda,vulkan]
The second form reads what `portc bench --json JSON_DIR/TARGET/NAME.json` wrote for those graphs,
times the same steps in torch eager and under torch.compile (the whole step compiled: forward,
backward and the optimizer) with CUDA events (warm-up, then the median of back-to-back steps),
and prints the table last. portc's step uploads the parameters each run (not yet kept on the
device); its module time is what `portc bench` measures for the whole graph.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRANSFORMER_PARAMS = "wq, wk, wv, wo, bq, bk, bv, bo, ln1_g, ln1_b, w1, b1, w2, b2, ln2_g, ln2_b"

MLP = """# a training step of a 2-layer MLP: forward, MSE loss, gradients and AdamW (bench/train_vs_torch.py)
graph train_mlp
input x: f32[8192, 1024]
input t: f32[8192, 1024]
param w1: f32[1024, 4096] = normal(std=0.02, seed=1)
param b1: f32[4096] = zeros
param w2: f32[4096, 1024] = normal(std=0.02, seed=2)
param b2: f32[1024] = zeros
h = matmul(x, w1)
hb = add(h, b1)
a = gelu(hb)
o = matmul(a, w2)
y = add(o, b2)
loss = mse_loss(y, t)
step adamw(lr=0.001, weight_decay=0.01): w1, b1, w2, b2 by loss
output loss
"""


def write(d):
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "train_mlp.ptg"), "w").write(MLP)
    lines = [l for l in open(os.path.join(HERE, "..", "examples", "transformer.ptg")).read().splitlines() if not l.startswith("output")]
    lines = ["graph train_transformer" if l.startswith("graph ") else l for l in lines]
    lines += ["input t: f32[B, S, 256]", "loss = mse_loss(y, t)", f"step adamw(lr=0.001, weight_decay=0.01): {TRANSFORMER_PARAMS} by loss",
              "output loss", ""]
    open(os.path.join(d, "train_transformer.ptg"), "w").write("\n".join(lines))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--write":
        write(sys.argv[2])
        return 0
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    from vs_torch import encoder, median_ms

    jdir = sys.argv[1]
    iters = int(sys.argv[sys.argv.index("--iters") + 1]) if "--iters" in sys.argv else 20
    targets = sys.argv[sys.argv.index("--targets") + 1].split(",") if "--targets" in sys.argv else ["cuda"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"

    def mlp_case():
        p = {"w1": torch.randn(1024, 4096, device=dev) * 0.02, "b1": torch.zeros(4096, device=dev),
             "w2": torch.randn(4096, 1024, device=dev) * 0.02, "b2": torch.zeros(1024, device=dev)}
        x, t = torch.rand(8192, 1024, device=dev) * 2 - 1, torch.rand(8192, 1024, device=dev) * 2 - 1
        fwd = lambda p: F.gelu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return p, fwd, t, 3 * 2 * 2 * 8192 * 1024 * 4096

    def transformer_case():
        B, S = 16, 512
        shapes = {"wq": (256, 256), "wk": (256, 256), "wv": (256, 256), "wo": (256, 256), "w1": (256, 1024), "w2": (1024, 256)}
        p = {k: torch.randn(*s, device=dev) * 0.06 for k, s in shapes.items()}
        for k, n in (("bq", 256), ("bk", 256), ("bv", 256), ("bo", 256), ("b1", 1024), ("b2", 256), ("c1", 256), ("c2", 256)):
            p[k] = torch.zeros(n, device=dev)
        p["g1"], p["g2"] = torch.ones(256, device=dev), torch.ones(256, device=dev)
        x, t = torch.rand(B, S, 256, device=dev) * 2 - 1, torch.rand(B, S, 256, device=dev) * 2 - 1
        return p, lambda p: encoder(x, p), t, 0

    rows = []
    for name, case in (("train_mlp", mlp_case), ("train_transformer", transformer_case)):
        times = {}
        for mode in ("eager", "compile"):
            p, fwd, t, flops = case()
            params = [v.requires_grad_() for v in p.values()]
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

            def step():
                opt.zero_grad(set_to_none=True)
                loss = F.mse_loss(fwd(p), t)
                loss.backward()
                opt.step()
                return loss

            fn = torch.compile(step) if mode == "compile" else step
            times[mode] = median_ms(fn, iters, warmup=5)
            del opt, params, p
            torch.cuda.empty_cache()
        for tg in targets:
            path = os.path.join(jdir, tg, name + ".json")
            ms = json.load(open(path))["fused"]["median_s"] * 1e3 if os.path.exists(path) else float("nan")
            rows.append((name, tg, ms, times["eager"], times["compile"], flops))
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; f32, TF32 off; medians of {iters} steps, ms")
    print(f"{'step':20} {'target':7} {'portc':>8} {'t.eager':>8} {'t.compile':>9} {'vs compile':>10} {'vs eager':>9}")
    for name, tg, ms, e, c, flops in rows:
        print(f"{name:20} {tg:7} {ms:8.3f} {e:8.3f} {c:9.3f} {c / ms:9.2f}x {e / ms:8.2f}x")
    print("ratios are torch time / portc time: above 1 means portc is faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
