#!/usr/bin/env python3
"""Training steps, portc against PyTorch: forward, backward and an AdamW step of an MLP
(8192 x 1024 -> 4096 -> 1024, gelu, MSE), of the transformer encoder layer of
examples/transformer.ptg (B=16, S=512, MSE against a random target) and of ResNet-18 (batch 32,
224 x 224, batch norm with batch statistics, cross-entropy over 1000 classes), in f32 with TF32
off, and each again under bf16 autocast (the "_bf16" graphs: `autocast bf16` in portc,
torch.autocast(dtype=bfloat16) in PyTorch; f32 master weights on both sides).

usage: train_vs_torch.py --write DIR          writes DIR/NAME.ptg for every step below
       train_vs_torch.py JSON_DIR [--iters N] [--targets cuda,vulkan] [--only NAME,...]
The second form reads what `portc bench --json JSON_DIR/TARGET/NAME.json` wrote for those graphs,
times the same steps in torch eager and under torch.compile (the whole step compiled: forward,
backward and the optimizer) with CUDA events (warm-up, then the median of back-to-back steps),
and prints the table last. portc's time is what `portc bench` measures for the whole graph with
its device timer, parameters on the device (as portc_module_step keeps them).
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


def resnet18(n=32, hw=224, classes=1000):
    """ResNet-18's training step as .ptg: torchvision's layout (7x7 stem, 4 stages of two basic
    blocks, 1x1 downsampling convolutions), batch norm from the batch's mean and biased variance
    as torch computes it in training mode, global average pooling, a linear classifier"""
    L = ["# ResNet-18, one training step: forward, cross-entropy, gradients and AdamW (bench/train_vs_torch.py)",
         "graph train_resnet18", f"input x: f32[{n}, 3, {hw}, {hw}]", f"input y: i64[{n}]", "const eps: f32[1] = 1e-05"]
    params = []

    def conv(x, cin, cout, k, s, p, name):
        L.append(f"param {name}_w: f32[{cout}, {cin}, {k}, {k}] = normal(std={(2 / (cin * k * k)) ** 0.5:.5f}, seed={len(params) + 1})")
        params.append(f"{name}_w")
        L.append(f"{name} = conv2d({x}, {name}_w, stride=[{s}, {s}], padding=[{p}, {p}])")
        return name

    def bn(x, c, name, relu=True):
        L.extend([f"param {name}_g: f32[{c}, 1, 1] = ones", f"param {name}_b: f32[{c}, 1, 1] = zeros",
                  f"{name}_m = mean({x}, axes=[0, 2, 3], keepdim=true)", f"{name}_d = sub({x}, {name}_m)",
                  f"{name}_q = mul({name}_d, {name}_d)", f"{name}_v = mean({name}_q, axes=[0, 2, 3], keepdim=true)",
                  f"{name}_e = add({name}_v, eps)", f"{name}_r = rsqrt({name}_e)", f"{name}_n = mul({name}_d, {name}_r)",
                  f"{name}_s = mul({name}_n, {name}_g)", f"{name} = add({name}_s, {name}_b)"])
        params.extend([f"{name}_g", f"{name}_b"])
        if relu:
            L.append(f"{name}_a = relu({name})")
            return f"{name}_a"
        return name

    h = bn(conv("x", 3, 64, 7, 2, 3, "stem"), 64, "stem_bn")
    L.append(f"pool = max_pool2d({h}, kernel=[3, 3], stride=[2, 2], padding=[1, 1])")
    h, cin = "pool", 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            s = 2 if stage and not block else 1
            nm = f"l{stage + 1}_{block}"
            a = bn(conv(h, cin, cout, 3, s, 1, nm + "_c1"), cout, nm + "_bn1")
            b = bn(conv(a, cout, cout, 3, 1, 1, nm + "_c2"), cout, nm + "_bn2", relu=False)
            sc = bn(conv(h, cin, cout, 1, s, 0, nm + "_down"), cout, nm + "_bnd", relu=False) if s != 1 or cin != cout else h
            L.extend([f"{nm}_sum = add({b}, {sc})", f"{nm} = relu({nm}_sum)"])
            h, cin = nm, cout
    L.extend([f"feat = mean({h}, axes=[2, 3])", f"param fc_w: f32[512, {classes}] = normal(std=0.02, seed=99)",
              f"param fc_b: f32[{classes}] = zeros", "fc = matmul(feat, fc_w)", "logits = add(fc, fc_b)",
              "loss = cross_entropy(logits, y)", f"step adamw(lr=0.001, weight_decay=0.01): {', '.join(params + ['fc_w', 'fc_b'])} by loss",
              "output loss", ""])
    return "\n".join(L)


def with_autocast(text, name):
    """the same step under bf16 autocast: the statement before the first op"""
    lines = text.splitlines()
    lines = [f"graph {name}" if l.startswith("graph ") else l for l in lines]
    first = next(i for i, l in enumerate(lines) if l.startswith(("input", "param", "const")))
    return "\n".join(lines[:first] + ["autocast bf16"] + lines[first:]) + "\n"


def write(d):
    os.makedirs(d, exist_ok=True)
    lines = [l for l in open(os.path.join(HERE, "..", "examples", "transformer.ptg")).read().splitlines() if not l.startswith("output")]
    lines = ["graph train_transformer" if l.startswith("graph ") else l for l in lines]
    lines += ["input t: f32[B, S, 256]", "loss = mse_loss(y, t)", f"step adamw(lr=0.001, weight_decay=0.01): {TRANSFORMER_PARAMS} by loss",
              "output loss", ""]
    steps = {"train_mlp": MLP, "train_transformer": "\n".join(lines), "train_resnet18": resnet18()}
    for name, text in steps.items():
        open(os.path.join(d, name + ".ptg"), "w").write(text)
        open(os.path.join(d, name + "_bf16.ptg"), "w").write(with_autocast(text, name + "_bf16"))


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

    def resnet_case():
        import torch.nn as nn

        def block(cin, cout, s):
            body = nn.Sequential(nn.Conv2d(cin, cout, 3, s, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            down = nn.Sequential(nn.Conv2d(cin, cout, 1, s, 0, bias=False), nn.BatchNorm2d(cout)) if s != 1 or cin != cout else nn.Identity()
            return body, down

        class ResNet18(nn.Module):  # torchvision's resnet18, written out (no torchvision needed)
            def __init__(self):
                super().__init__()
                self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
                self.blocks, cin = nn.ModuleList(), 64
                for stage, cout in enumerate((64, 128, 256, 512)):
                    for b in range(2):
                        self.blocks.append(nn.ModuleList(block(cin, cout, 2 if stage and not b else 1)))
                        cin = cout
                self.fc = nn.Linear(512, 1000)

            def forward(self, x):
                h = self.stem(x)
                for body, down in self.blocks:
                    h = F.relu(body(h) + down(h))
                return self.fc(h.mean((2, 3)))

        net = ResNet18().to(dev).train()
        x, y = torch.rand(32, 3, 224, 224, device=dev) * 2 - 1, torch.randint(0, 1000, (32,), device=dev)
        return dict(net.named_parameters()), lambda p: net(x), y, 0

    rows = []
    cases = (("train_mlp", mlp_case, F.mse_loss), ("train_transformer", transformer_case, F.mse_loss),
             ("train_resnet18", resnet_case, F.cross_entropy))
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    variants = (("", None), ("_bf16", torch.bfloat16))
    for (base, case, loss_fn), (suffix, amp) in ((c, v) for c in cases for v in variants):
        name = base + suffix
        if only and name not in only:
            continue
        times = {}
        for mode in ("eager", "compile"):
            p, fwd, t, flops = case()
            params = [v.requires_grad_() for v in p.values()]
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

            def step():
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cuda", dtype=amp or torch.float32, enabled=amp is not None):
                    loss = loss_fn(fwd(p), t)
                loss.backward()
                opt.step()
                return loss

            fn = torch.compile(step) if mode == "compile" else step
            times[mode] = median_ms(fn, iters, warmup=5)
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()  # parameters, optimizer state, inputs
            torch.cuda.reset_peak_memory_stats()
            fn()
            torch.cuda.synchronize()
            times[mode + "_mb"] = (torch.cuda.max_memory_allocated() - held) / 2**20
            del opt, params, p
            torch.cuda.empty_cache()
        for tg in targets:
            path = os.path.join(jdir, tg, name + ".json")
            fused = json.load(open(path))["fused"] if os.path.exists(path) else {}
            ms = fused.get("median_s", float("nan")) * 1e3
            walls = (fused.get("step_wall_s", float("nan")) * 1e3, fused.get("run_wall_s", float("nan")) * 1e3)
            mem = (fused.get("arena_bytes", float("nan")) / 2**20, times["compile_mb"])
            rows.append((name, tg, ms, times["eager"], times["compile"], walls, mem))
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; f32 with TF32 off, _bf16 under autocast; medians of {iters} steps, ms")
    print(f"{'step':22} {'target':7} {'portc':>8} {'t.eager':>8} {'t.compile':>9} {'vs compile':>10} {'vs eager':>9} {'p.step':>8} {'p.run':>8} {'p.MiB':>7} {'t.MiB':>7}")
    for name, tg, ms, e, c, (sw, rw), (pm, tm) in rows:
        print(f"{name:22} {tg:7} {ms:8.3f} {e:8.3f} {c:9.3f} {c / ms:9.2f}x {e / ms:8.2f}x {sw:8.3f} {rw:8.3f} {pm:7.0f} {tm:7.0f}")
    print("ratios are torch time / portc time (the module on the device timer): above 1 means portc is faster;")
    print("p.step and p.run: a whole portc_module_step call (parameters on the device) and portc_module_run (every output read back), host clock")
    print("p.MiB: portc's planned arena (every intermediate: activations, gradients, temporaries); t.MiB: what one compiled torch step")
    print("allocates beyond what it holds between steps (parameters, optimizer state, the batch), at its peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
