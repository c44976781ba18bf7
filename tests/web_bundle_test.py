#!/usr/bin/env python3
"""web_bundle_test.py: `portc export -t webgpu` bundles run in a real browser.

Each bundle is served from a loopback HTTP server and opened in headless chromium (Debian's, with
WebGPU on its SwiftShader Vulkan driver); the page runs the model and POSTs its result back. The
outputs the browser computed are then checked here, apart from the page's own check:
  - examples/mlp.ptg against the float64 reference's outputs the bundle carries;
  - ResNet-18 (torchvision, random weights, exported to ONNX by tests/onnx/export_models.py)
    against PyTorch's own output for the same input, within conformance/TOLERANCES.md's bound;
  - a bundle whose weights were altered must be reported as differing, and one that asks for more
    bindings than any adapter has must fail with an error naming the limit;
  - the command's errors: no target, a target that is not webgpu, a graph a browser cannot run
    whole, a symbol without a value.
The bundles are compiled on Mesa 25's lavapipe (scripts/deps.sh unpacks it), as the WebGPU
target's other tests are.
usage: web_bundle_test.py PORTC SOURCE_DIR
"""
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

PORTC, SRC = sys.argv[1], sys.argv[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ENV = dict(os.environ, VK_DRIVER_FILES=os.environ.get("VK_DRIVER_FILES", "/usr/local/lib/portc-webgpu/mesa25/lvp_icd.json"),
           XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"), NODEVICE_SELECT="1")
fails = []


def fail(what):
    print("FAIL:", what, flush=True)
    fails.append(what)


def portc(*args):
    r = subprocess.run([PORTC, *args], env=ENV, capture_output=True, text=True, timeout=1200)
    return r.returncode, r.stdout + r.stderr


def in_browser(bundle, seconds=600):
    """Opens the bundle's page in headless chromium; the JSON it POSTs, or None when it posts none."""
    result = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_POST(self):
            result["json"] = json.loads(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(204)
            self.end_headers()
            done.set()

        def log_message(self, *args):
            pass

    done = threading.Event()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=bundle))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tempfile.mkdtemp()
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html?runs=1&report=/report"
    browser = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--no-first-run",
                                "--disable-extensions", "--disable-background-networking", f"--user-data-dir={profile}", url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done.wait(seconds)
    browser.kill()
    log = browser.communicate()[1]
    server.shutdown()
    shutil.rmtree(profile, ignore_errors=True)
    if "json" not in result:
        print("\n".join(line for line in log.splitlines() if "dbus" not in line.lower())[-3000:])
    return result.get("json")


def manifest(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)


def expected(bundle, output):
    """The float64 reference's values of an output, as the bundle carries them."""
    with open(os.path.join(bundle, output["expected"]["file"]), "rb") as f:
        f.seek(output["expected"]["offset"])
        return np.frombuffer(f.read(8 * int(np.prod(output["shape"]))), dtype=np.float64)


def export(name, graph, out, *args):
    rc, text = portc("export", graph, "-t", "webgpu", "-o", out, *args)
    print(text.strip())
    if rc != 0:
        fail(f"{name}: portc export exited {rc}")
        return False
    return True


def browser_outputs(name, bundle):
    """The page's outputs, after checking it ran and says they match the reference."""
    r = in_browser(bundle)
    if r is None:
        fail(f"{name}: the page reported nothing")
        return None
    if not r.get("ok"):
        fail(f"{name}: the page reports {r.get('error') or json.dumps(r.get('check'))}")
        return None
    print(f"ok: {name} ran in chromium on {r['device']}: {r['ms']:.1f} ms a run, setup {r['setupMs']:.0f} ms")
    return {o["name"]: np.array(o["values"], dtype=np.float64) for o in r["outputs"]}


def within(name, got, ref, rtol):
    """|got - ref| <= rtol * (|ref| + max |ref|), elementwise"""
    bound = rtol * (np.abs(ref) + np.abs(ref).max())
    err = np.abs(got - ref)
    if got.shape != ref.shape or not np.all(err <= bound):
        worst = int(np.argmax(err - bound)) if got.shape == ref.shape else -1
        fail(f"{name}: {got.shape} values against {ref.shape}; worst at {worst}")
        return False
    print(f"ok: {name}: largest error {err.max():.3g} (bound {rtol:g} x (|ref| + {np.abs(ref).max():.3g}))")
    return True


work = tempfile.mkdtemp()
try:
    if not os.path.exists(CHROMIUM):
        fail("no chromium: scripts/deps.sh installs Debian's")
        sys.exit(1)

    # the MLP example: the browser's outputs against the reference the bundle carries
    mlp = os.path.join(work, "mlp")
    if export("mlp", os.path.join(SRC, "examples", "mlp.ptg"), mlp, "--set", "N=2", "--seed", "7"):
        outs = browser_outputs("mlp", mlp)
        if outs is not None:
            for o in manifest(mlp)["outputs"]:
                within(f"mlp output {o['name']}", outs[o["name"]], expected(mlp, o), o["rtol"])

        # weights altered: the page must see the difference
        bad = os.path.join(work, "mlp_altered")
        shutil.copytree(mlp, bad)
        w = np.fromfile(os.path.join(bad, "weights.bin"), dtype=np.float32)
        w[: w.size // 2] *= 1.01
        w.tofile(os.path.join(bad, "weights.bin"))
        r = in_browser(bad)
        if r is None or r.get("ok") or "check" not in r or r["check"]["outputs"][0]["ok"]:
            fail(f"mlp with altered weights: the page should report a difference, and reports {json.dumps(r)[:300]}")
        else:
            print(f"ok: mlp with altered weights: the page reports y differing (relative {r['check']['outputs'][0]['worst']:.3g})")

        # more bindings than an adapter has: an error naming the limit
        greedy = os.path.join(work, "mlp_greedy")
        shutil.copytree(mlp, greedy)
        m = manifest(greedy)
        m["limits"]["maxStorageBuffersPerShaderStage"] = 100000
        with open(os.path.join(greedy, "manifest.json"), "w") as f:
            json.dump(m, f)
        r = in_browser(greedy)
        if r is None or r.get("ok") or "maxStorageBuffersPerShaderStage of at least 100000" not in r.get("error", ""):
            fail(f"a bundle asking for 100000 bindings: expected an error naming the limit, got {json.dumps(r)[:300]}")
        else:
            print(f"ok: a bundle asking for 100000 bindings: {r['error']}")

    # ResNet-18 from PyTorch: the browser's output against PyTorch's
    models = os.path.join(work, "onnx")
    r = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "onnx", "export_models.py"), models, "resnet18", "--batches", "1"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"exporting resnet18 from PyTorch: {r.stderr[-2000:]}")
    else:
        resnet = os.path.join(work, "resnet18")
        model = os.path.join(models, "resnet18")
        if export("resnet18", os.path.join(model, "model.onnx"), resnet, "--set", "N=1", "--input", f"x={model}/x_1.npy"):
            outs = browser_outputs("resnet18", resnet)
            if outs is not None:
                (name, got), = outs.items()
                ref = np.load(os.path.join(model, "y_1.npy")).astype(np.float64).ravel()
                # conformance/TOLERANCES.md, imported models against PyTorch: a relative norm of
                # 1e-4, and each element within 1e-4 x max |ref| + 1e-3 x |ref|
                norm = np.linalg.norm(got - ref) / np.linalg.norm(ref) if got.shape == ref.shape else np.inf
                each = got.shape == ref.shape and np.all(np.abs(got - ref) <= 1e-4 * np.abs(ref).max() + 1e-3 * np.abs(ref))
                if norm <= 1e-4 and each:
                    print(f"ok: resnet18 in chromium against PyTorch: relative norm {norm:.3g}")
                else:
                    fail(f"resnet18 in chromium against PyTorch: relative norm {norm:.3g}, each element within its bound: {each}")

    # the command's errors
    cases = [
        (["export", os.path.join(SRC, "examples", "mlp.ptg"), "-o", os.path.join(work, "x"), "--set", "N=2"], 2, "needs -t webgpu"),
        (["export", os.path.join(SRC, "examples", "mlp.ptg"), "-t", "cpu", "-o", os.path.join(work, "x"), "--set", "N=2"], 1,
         "does not run in a browser"),
        (["export", os.path.join(SRC, "examples", "mlp.ptg"), "-t", "webgpu", "-o", os.path.join(work, "x")], 1, "symbol N has no value"),
    ]
    argmax = os.path.join(work, "argmax.ptg")
    with open(argmax, "w") as f:
        f.write("graph am\ninput x: f32[4, 8]\ni = argmax(x, axis=1)\noutput i\n")
    cases.append((["export", argmax, "-t", "webgpu", "-o", os.path.join(work, "x")], 1, "argmax"))
    for args, code, words in cases:
        rc, text = portc(*args)
        if rc != code or words not in text:
            fail(f"portc {' '.join(os.path.basename(a) for a in args)}: expected exit {code} and '{words}', got {rc}: {text.strip()}")
        else:
            print(f"ok: exit {rc}: {text.strip().splitlines()[-1]}")
finally:
    shutil.rmtree(work, ignore_errors=True)

print(f"{len(fails)} failed" if fails else "all passed")
sys.exit(1 if fails else 0)
