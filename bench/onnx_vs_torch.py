#!/usr/bin/env python3
"""ONNX models on the GPU machine: exported there with its PyTorch, run by portc on each target
against PyTorch's outputs, and timed against torch eager and torch.compile in the same run.

For each model: random weights (seeded), torch.onnx.export with a dynamic batch (opset 17), and
PyTorch's outputs for batches 1 and 4 (float32, TF32 off). `onnx_compare` compiles the model once
per target and checks both batches (the bounds of conformance/TOLERANCES.md); `portc bench --set
N=B` times it at the bench batch (its kernels, each at its median, as a Chrome trace in
OUT/onnx/MODEL/trace_TARGET.json), and torch eager and torch.compile are timed with CUDA events the
same way (warm-up, then the median of back-to-back runs).

With --tune SECONDS, each model is then tuned on each target (`portc tune --budget SECONDS`, into
OUT/onnx/MODEL/tune_TARGET.txt, not the user's table), checked against PyTorch again with that
table (PORTC_TUNE_PATH) and timed again: the table gets the tuned time, the tuning time, and the
ratio of torch.compile to both.

With --autocast f16|bf16, mixed precision on both sides: portc runs each model's autocast copy
(`onnx_compare --autocast`, `portc bench --autocast`: matmuls, convolutions and attention in that
type, sums in f32), checked against PyTorch's float32 outputs under TOLERANCES.md's autocast
bounds, and torch eager and torch.compile are timed under torch.autocast with that type.

usage: onnx_vs_torch.py OUT [--targets cuda,vulkan] [--iters 30] [--models a,b] [--tune SECONDS] [--autocast f16|bf16]
Prints one table last. Everything lands in OUT/onnx/.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

from vs_torch import median_ms  # the same timing protocol as the graph benchmarks

try:
    import torchvision
except ImportError:
    torchvision = None

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024))

    def forward(self, x):
        return self.net(x)


class DecoderOnly(torch.nn.Module):
    """A GPT-style decoder: learned positions, 4 causally masked layers of width 512 over [N, S, E],
    and a projection to a vocabulary of 1000."""
    def __init__(self, seq=128):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.pos = torch.nn.Parameter(torch.randn(seq, 512) * 0.02)
        self.head = torch.nn.Linear(512, 1000)
        self.register_buffer("causal", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.head(self.layers(x + self.pos, mask=self.causal))


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return {"out": ...}: the tensor alone."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def models():
    """name -> (constructor, input shape without batch, batch dimension, bench batch)"""
    m = {
        "mlp": (MLP, (1024,), 0, 256),
        "transformer": (lambda: torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.1), (128, 512), 1, 32),
        "decoder_only": (DecoderOnly, (128, 512), 0, 16),  # causal self-attention, as language models export
    }
    if torchvision:
        tv = torchvision.models
        m["resnet18"] = (lambda: tv.resnet18(weights=None), (3, 224, 224), 0, 32)
        m["mobilenet_v2"] = (lambda: tv.mobilenet_v2(weights=None), (3, 224, 224), 0, 32)
        m["squeezenet"] = (lambda: tv.squeezenet1_1(weights=None), (3, 224, 224), 0, 32)
        m["resnet50"] = (lambda: tv.resnet50(weights=None), (3, 224, 224), 0, 32)  # the larger model
        m["lraspp"] = (lambda: SegmentationOut(tv.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)),
                       (3, 224, 224), 0, 32)  # segmentation
    else:  # the larger model without torchvision: a BERT-base-sized encoder
        m["encoder12"] = (lambda: torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1), 12,
                                                              enable_nested_tensor=False), (128, 768), 1, 16)
    return m


def sample(shape, bdim, n, seed):
    s = list(shape)
    s.insert(bdim, n)
    return torch.randn(*s, generator=torch.Generator().manual_seed(seed))


def export(name, make, shape, bdim, d):
    torch.manual_seed(0)
    model = make().eval()
    path = os.path.join(d, "model.onnx")
    axes = {"x": {bdim: "N"}, "y": {bdim: "N"}}
    # the fused encoder-layer kernel of eager inference has no ONNX form: off while exporting, back
    # on for the timings
    mha = getattr(torch.backends, "mha", None)
    fast = mha.get_fastpath_enabled() if mha and hasattr(mha, "get_fastpath_enabled") else None
    if fast is not None:
        mha.set_fastpath_enabled(False)
    with torch.no_grad():
        kw = dict(input_names=["x"], output_names=["y"], dynamic_axes=axes, opset_version=17, do_constant_folding=True)
        try:  # the TorchScript-based exporter, as the CI's PyTorch 1.13 has it
            torch.onnx.export(model, (sample(shape, bdim, 2, 0),), path, dynamo=False, **kw)
            how = "TorchScript exporter"
        except Exception as e:  # noqa: BLE001: then the torch.export-based one
            print(f"{name}: the TorchScript exporter failed ({type(e).__name__}: {str(e)[:200]}); using torch.export")
            torch.onnx.export(model, (sample(shape, bdim, 2, 0),), path, dynamo=True, **kw)
            how = "torch.export exporter"
        print(f"{name}: exported with the {how}")
        if fast is not None:
            mha.set_fastpath_enabled(fast)
        gpu = model.cuda()
        for n in (1, 4):
            x = sample(shape, bdim, n, 100 + n)
            np.save(os.path.join(d, f"x_{n}.npy"), x.numpy())
            np.save(os.path.join(d, f"y_{n}.npy"), gpu(x.cuda()).float().cpu().numpy())
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--targets", default="cuda,vulkan")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--models", default="")
    ap.add_argument("--tune", type=float, default=0)
    ap.add_argument("--autocast", choices=["f16", "bf16"], default=None)
    a = ap.parse_args()
    amp = ["--autocast", a.autocast] if a.autocast else []
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    portc, compare = os.path.join(root, "build/bin/portc"), os.path.join(root, "build/bin/onnx_compare")
    targets = a.targets.split(",")
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__ if torchvision else 'absent'}, {torch.cuda.get_device_name()}")
    rows = []
    for name, (make, shape, bdim, batch) in models().items():
        if a.models and name not in a.models.split(","):
            continue
        d = os.path.join(a.out, "onnx", name)
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        try:
            model = export(name, make, shape, bdim, d)
        except Exception as e:  # noqa: BLE001: report and go on with the next model
            print(f"{name}: export failed: {e}")
            rows.append((name, batch, {}, {}, None, None, {}, {}))
            continue
        print(f"{name}: exported in {time.time() - t0:.1f} s")
        match, ms, tuned, tune_s = {}, {}, {}, {}
        model_path = os.path.join(d, "model.onnx")

        def check_and_time(t, tag, env):
            r = subprocess.run([compare, model_path, t] + amp + [os.path.join(d, f"{k}_{n}.npy") for n in (1, 4) for k in ("x", "y")],
                               capture_output=True, text=True, timeout=900, env=env)
            log = r.stdout + r.stderr
            open(os.path.join(d, f"compare_{t}{tag}.txt"), "w").write(log)
            print(log.strip())
            ok = "pass" if r.returncode == 0 else "FAIL"
            tiny = max(float(np.abs(np.load(os.path.join(d, f"y_{n}.npy"))).max()) for n in (1, 4))
            if ok == "FAIL" and a.autocast == "f16" and tiny < 6.104e-5:  # f16's smallest normal: a model of random weights whose outputs underflow
                ok = f"n/a (outputs {tiny:.0e}, below f16's range)"
            j = os.path.join(d, f"bench_{t}{tag}.json")
            r = subprocess.run([portc, "bench", model_path, "-t", t, "--set", f"N={batch}", "--iters", str(a.iters)] + amp + [
                                "--warmup", "3", "--no-eager", "--json", j, "--trace", os.path.join(d, f"trace_{t}{tag}.json")], capture_output=True, text=True, timeout=900, env=env)
            open(os.path.join(d, f"bench_{t}{tag}.txt"), "w").write(r.stdout + r.stderr)
            if r.returncode:
                print(f"{name} bench on {t}{tag} failed: {(r.stdout + r.stderr).strip()[-400:]}")
            return ok, json.load(open(j))["fused"]["median_s"] * 1e3 if r.returncode == 0 else None

        for t in targets:
            match[t], ms[t] = check_and_time(t, "", dict(os.environ))
            if a.tune:
                table = os.path.join(d, f"tune_{t}.txt")
                if os.path.exists(table):
                    os.remove(table)
                t0 = time.time()
                r = subprocess.run([portc, "tune", model_path, "-t", t, "--set", f"N={batch}", "--budget", str(a.tune), "--table", table] + amp,
                                   capture_output=True, text=True, timeout=a.tune + 900)
                tune_s[t] = time.time() - t0
                open(os.path.join(d, f"tune_{t}.log"), "w").write(r.stdout + r.stderr)
                print(f"{name}: tuned on {t} in {tune_s[t]:.0f} s (rc {r.returncode})\n{r.stdout[-3000:]}{r.stderr[-1000:]}")
                env = dict(os.environ, PORTC_TUNE_PATH=table)
                ok, tuned[t] = check_and_time(t, "_tuned", env) if r.returncode == 0 else ("FAIL", None)
                if ok != "pass":
                    match[t] = f"{match[t]}/tuned {ok}"
        x = sample(shape, bdim, batch, 7).cuda()
        gpu = model.cuda()
        amp_dtype = {"f16": torch.float16, "bf16": torch.bfloat16}.get(a.autocast)
        with torch.no_grad(), torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
            eager = median_ms(lambda: gpu(x), a.iters)
            compiled = torch.compile(gpu)
            comp = median_ms(lambda: compiled(x), a.iters)
        rows.append((name, batch, match, ms, eager, comp, tuned, tune_s))
    print()
    if a.autocast:
        print(f"under autocast {a.autocast}: portc's autocast copies, torch under torch.autocast")
    tcols = lambda t: f"{t} match | portc {t} ms" + (f" | tuned {t} ms | tuning {t} s" if a.tune else "")
    head = "| model | batch | " + " | ".join(tcols(t) for t in targets) + " | torch eager ms | torch.compile ms | " + \
        " | ".join(f"compile/{t}" + (f" | compile/tuned {t}" if a.tune else "") for t in targets) + " |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    fmt = lambda v, f: f.format(v) if v else "-"
    for name, batch, match, ms, eager, comp, tuned, tune_s in rows:
        cells = [name, str(batch)]
        for t in targets:
            cells += [match.get(t, "-"), fmt(ms.get(t), "{:.3f}")]
            if a.tune:
                cells += [fmt(tuned.get(t), "{:.3f}"), fmt(tune_s.get(t), "{:.0f}")]
        cells += [fmt(eager, "{:.3f}"), fmt(comp, "{:.3f}")]
        for t in targets:
            cells += [f"{comp / ms[t]:.2f}x" if comp and ms.get(t) else "-"]
            if a.tune:
                cells += [f"{comp / tuned[t]:.2f}x" if comp and tuned.get(t) else "-"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
