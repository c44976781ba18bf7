"""torchvision's classification, segmentation and video zoos against portc: every architecture the
local torchvision lists, built with random weights (nothing is downloaded), exported to ONNX with a
dynamic batch at a reduced input size, run by PyTorch for batches 1 and 2, then compiled once per
target by onnx_compare and run for both batches within the bounds of TOLERANCES.md.

Each model's folder is removed after its runs, so that the disk holds only the models in flight
(one, or --jobs of them). What runs, on every target given:
  - by default (the test command): one member of every architecture family (FAMILY below),
    whatever its size; together they hold every operator and pattern of the zoo;
  - with --wide, also every other model under 30 M parameters (the family's other depths and
    widths: about 1.6 times the time);
  - with --long, every model (VGG-19, ViT-H, the large RegNets, ConvNeXts and EfficientNets, ...:
    hours on two cores; its models' weights reach 2.5 GB).
A model the test cannot run is named in SKIP with the reason; an export failure of PyTorch's own
is reported as such, not as a portc result. --jobs N runs N models at once (the GPU machine's
16 cores), each with its share of PyTorch's threads.

usage: zoo.py ONNX_COMPARE OUT [--targets cpu,vulkan] [--wide | --long] [--only NAME,...] [--jobs N]
Exit 0 when every model ran and matched on every target it was given.
"""
import argparse
import concurrent.futures
import inspect
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torchvision
from torchvision import models as tvm

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import SegmentationOut, onnx_export, randomize_norms  # noqa: E402

WIDE_PARAMS = 30e6  # with --wide, the models outside FAMILY up to this many parameters run too

# one member of each architecture family: what runs by default
FAMILY = {"alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s", "googlenet", "inception_v3", "maxvit_t",
          "mnasnet0_5", "mobilenet_v3_large", "regnet_x_400mf", "regnet_y_400mf", "resnext50_32x4d", "shufflenet_v2_x0_5",
          "squeezenet1_0", "swin_t", "swin_v2_t", "vgg11_bn", "vit_b_32", "wide_resnet50_2", "deeplabv3_mobilenet_v3_large",
          "deeplabv3_resnet50", "fcn_resnet50", "lraspp_mobilenet_v3_large", "r3d_18"}
# the input side each architecture needs at least (its fixed pooling or its windows); others: 64
SIDE = {
    "alexnet": 224, "maxvit_t": 224, "inception_v3": 75,
    # VGG's classifier averages its features to 7x7: at 224 that is the identity
    "vgg11": 224, "vgg11_bn": 224, "vgg13": 224, "vgg13_bn": 224, "vgg16": 224, "vgg16_bn": 224, "vgg19": 224, "vgg19_bn": 224,
}
# constructor arguments for a reduced size: ViTs take their image size
KWARGS = {"vit_b_16": {"image_size": 32}, "vit_b_32": {"image_size": 64}, "vit_l_16": {"image_size": 32},
          "vit_l_32": {"image_size": 64}, "vit_h_14": {"image_size": 28}}
# models the test does not run, with why
SKIP = {}  # name -> why the test cannot run it


def exportable_swin_v2():
    """Swin V2 zeroes the key bias with an in-place write to a slice, which PyTorch 1.13's exporter
    cannot write (aten::zero_): the same function, with the bias rebuilt by concatenation."""
    import torchvision.models.swin_transformer as st
    src = inspect.getsource(st.shifted_window_attention)
    old = "qkv_bias[length : 2 * length].zero_()"
    if old not in src:
        return
    new = "qkv_bias = torch.cat([qkv_bias[:length], torch.zeros_like(qkv_bias[length : 2 * length]), qkv_bias[2 * length :]])"
    exec(compile(src.replace(old, new), st.__file__, "exec"), st.__dict__)  # redefines st.shifted_window_attention

# run only with --long, whatever their size: S3D needs 16-frame 224x224 clips (a minute on 2 cores)
LONG_ONLY = {"s3d"}
# video models take [N, 3, frames, side, side]; S3D and MViT need 224 (and MViT 16 frames)
VIDEO = {"s3d": (16, 224), "mvit_v1_b": (16, 224), "mvit_v2_s": (16, 224)}


def zoo():
    """name -> kind: classification, segmentation or video"""
    names = {n: "classification" for n in tvm.list_models(module=tvm)}
    names.update({n: "segmentation" for n in tvm.list_models(module=tvm.segmentation)})
    names.update({n: "video" for n in tvm.list_models(module=tvm.video)})
    return names


def build(name, kind):
    kw = dict(KWARGS.get(name, {}))
    if kind == "segmentation":
        kw["weights_backbone"] = None
    if name in ("googlenet", "inception_v3"):
        kw["aux_logits"], kw["init_weights"] = False, True
    m = tvm.get_model(name, weights=None, **kw)
    return SegmentationOut(m) if kind == "segmentation" else m


def export(name, kind, folder):
    torch.manual_seed(0)
    model = build(name, kind).eval()
    randomize_norms(model)
    side = SIDE.get(name, KWARGS.get(name, {}).get("image_size", 64))
    shape = (3, side, side)
    if kind == "video":
        frames, side = VIDEO.get(name, (4, 32))
        shape = (3, frames, side, side)
    sample = lambda n: torch.randn(n, *shape, generator=torch.Generator().manual_seed(100 + n))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    # exported with gradients on: under no_grad, PyTorch 1.13's nn.MultiheadAttention (ViT) takes a
    # fused fast path that its exporter cannot write
    onnx_export(model, (sample(1),), path, input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                opset_version=17, do_constant_folding=True)
    with torch.no_grad():
        pairs = []
        for n in (1, 2):
            x = sample(n)
            np.save(os.path.join(folder, f"x_{n}.npy"), x.numpy())
            np.save(os.path.join(folder, f"y_{n}.npy"), model(x).numpy())
            pairs += [os.path.join(folder, f"x_{n}.npy"), os.path.join(folder, f"y_{n}.npy")]
    params = sum(p.numel() for p in model.parameters())
    ops = sorted({node.op_type for node in onnx.load(path, load_external_data=False).graph.node})
    return path, pairs, side, params, ops


def run_model(name, kind, targets, compare, out, threads):
    """exports one model and compares it on each target: (lines to print, failures, runs)"""
    torch.set_num_threads(threads)
    exportable_swin_v2()
    folder = os.path.join(out, name)
    t0 = time.time()
    try:
        path, pairs, side, params, ops = export(name, kind, folder)
    except Exception as e:  # PyTorch's exporter, not portc
        shutil.rmtree(folder, ignore_errors=True)
        return [f"FAIL {name}: PyTorch could not export it: {e}"], 1, 0
    lines, failed = [], 0
    line = [f"{name} ({kind}, {params / 1e6:.1f} M, {side}x{side}, export {time.time() - t0:.0f} s)"]
    for t in targets:
        t1 = time.time()
        r = subprocess.run([compare, path, t] + pairs, capture_output=True, text=True)
        failed += r.returncode != 0
        line.append(f"{t} {'PASS' if r.returncode == 0 else 'FAIL'} {time.time() - t1:.0f} s")
        if r.returncode != 0:
            how = f"killed by signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
            lines.append(f"FAIL {name} on {t} ({how}):\n{r.stdout}{r.stderr}")
    lines.append(": ".join(line[:1]) + ": " + ", ".join(line[1:]))
    shutil.rmtree(folder, ignore_errors=True)
    return lines, failed, len(targets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("compare")
    ap.add_argument("out")
    ap.add_argument("--targets", default="cpu,vulkan")
    ap.add_argument("--wide", action="store_true")
    ap.add_argument("--long", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    jobs = max(1, a.jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    targets = a.targets.split(",")
    names = zoo()
    if a.only:
        names = {n: names[n] for n in a.only.split(",")}
    todo, skipped = [], 0
    for name, kind in sorted(names.items()):
        if name in SKIP:
            print(f"{name}: not run: {SKIP[name]}", flush=True)
            skipped += 1
        elif not a.long and name in LONG_ONLY:
            print(f"{name}: in the long suite (--long)", flush=True)
        elif not a.long and name not in FAMILY and not a.wide:
            print(f"{name}: another member of its family, in the wide suite (--wide)", flush=True)
        elif not a.long and name not in FAMILY and (params := sum(p.numel() for p in build(name, kind).parameters())) > WIDE_PARAMS:
            print(f"{name}: {params / 1e6:.1f} M parameters, in the long suite (--long)", flush=True)
        else:
            todo.append((name, kind))
    failed = runs = 0
    # spawned, not forked: a forked PyTorch with its threads started can hang
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_model, name, kind, targets, a.compare, a.out, threads) for name, kind in todo]
        for f in concurrent.futures.as_completed(futures):
            lines, bad, n = f.result()
            print("\n".join(lines), flush=True)
            failed, runs = failed + bad, runs + n
    print(f"zoo: {len(todo)} models, {runs} model-target runs, {failed} failure(s), {skipped} not run (named above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
