"""python_test.py: the Python package (python/portc) runs an ONNX model on the CPU and on Vulkan
and matches the float64 reference and numpy, and its f16 autocast copy within f16's error; errors
arrive as portc.Error with the library's message. The model is built here with the onnx package: an MLP with a dynamic batch.

usage: PORTC_LIBRARY=build/lib/libportc.so.0 PYTHONPATH=python /usr/bin/python3 tests/python_test.py SCRATCH_DIR
(Debian's python, which sees python3-numpy and python3-onnx)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import portc

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def mlp_model(path, rng):
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((32, 4)).astype(np.float32) * 0.3
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["z"], name="fc2"),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return w1, b1, w2


def numpy_mlp(x, w1, b1, w2):
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    scratch = sys.argv[1]
    os.makedirs(scratch, exist_ok=True)
    rng = np.random.default_rng(7)
    path = os.path.join(scratch, "mlp.onnx")
    w1, b1, w2 = mlp_model(path, rng)
    print("portc", portc.version(), "targets:", portc.targets())
    check(portc.version().count(".") == 2, "version() is MAJOR.MINOR.PATCH")
    check(portc.targets().get("cpu", "missing") is None, "the cpu target is available")
    check(portc.targets().get("vulkan", "missing") is None, "the vulkan target is available (lavapipe in CI)")

    g = portc.load(path)
    check(g.inputs == ["x"], "the model's input is x, got %s" % g.inputs)
    for target in ["cpu", "vulkan"]:
        m = g.compile(target=target, dynamic=True)
        for n in (1, 5, 64):
            x = rng.standard_normal((n, 16)).astype(np.float32)
            (y,) = m.run(x=x)
            (ref,) = g.reference(x=x)
            want = numpy_mlp(x, w1, b1, w2)
            check(y.shape == (n, 4) and y.dtype == np.float32, "%s N=%d: shape %s dtype %s" % (target, n, y.shape, y.dtype))
            check(ref.dtype == np.float64, "the reference computes in float64")
            err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
            check(err < 1e-5, "%s N=%d: relative error %.3g against the reference" % (target, n, err))
            check(np.abs(ref - want).max() < 1e-6, "%s N=%d: the reference agrees with numpy" % (target, n))
            print("%-6s N=%-3d relative error %.2e" % (target, n, err))
        check("kernel" in m.explain(symbols={"N": 8}), "%s: explain names its kernels" % target)

    half, converted = g.autocast("f16")
    check(converted == 2, "autocast converts the model's two matmuls, not %d" % converted)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    (y,) = half.compile("vulkan", dynamic=True).run(x=x)
    want = numpy_mlp(x, w1, b1, w2)
    err = np.linalg.norm(y - want) / np.linalg.norm(want)
    check(err < 1e-2, "the f16 autocast copy on vulkan: relative error %.3g against numpy" % err)
    print("autocast f16 on vulkan: relative error %.2e" % err)

    fixed = portc.parse("graph twice\ninput x: f32[3]\ny = add(x, x)\noutput y\n").compile("cpu")
    (y,) = fixed.run(x=np.array([1, 2, 3], np.float32))
    check(list(y) == [2, 4, 6], "a .ptg graph parsed from text runs: %s" % y)

    for what, call, needle in [
        ("a missing file", lambda: portc.load(os.path.join(scratch, "absent.onnx")), "absent.onnx"),
        ("an unknown target", lambda: g.compile("tpu"), "tpu"),
        ("a wrong input shape", lambda: g.compile("cpu", dynamic=True).run(x=np.zeros((2, 15), np.float32)), "x"),
        ("malformed text", lambda: portc.parse("graph g\ny = nope(x)\n"), "nope"),
        ("autocast to f64", lambda: g.autocast("f64"), "f64"),
    ]:
        try:
            call()
            check(False, "%s raises portc.Error" % what)
        except portc.Error as e:
            check(needle in str(e), "%s: the message names '%s': %s" % (what, needle, e))
            print("error for %s: %s" % (what, str(e).splitlines()[0]))
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("python test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
