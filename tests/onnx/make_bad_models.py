"""Writes the malformed and unsupported ONNX files the importer must refuse cleanly, into OUT/.

Built with onnx.helper (Debian's python3-onnx) and by editing bytes, so that each file is wrong in
one known way. The test checks portc's message for each; the fuzz corpus starts from these too.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def raw_tensor(name, dims, data):
    """a float tensor whose raw bytes need not match its dims (make_tensor would refuse)"""
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, TensorProto.FLOAT, data
    t.dims.extend(dims)
    return t


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main(out):
    os.makedirs(out, exist_ok=True)
    x, y = f32("x", ["N", 4]), f32("y", None)
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    good = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="act")],
                 [x], [y], [w])
    files = {
        "good.onnx": good,
        # three unsupported operators, one of them in another domain: all must be listed
        "unsupported.onnx": model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                                   helper.make_node("DFT", ["h"], ["v"], name="dft_1"),
                                   helper.make_node("Det", ["v"], ["e"], name="det_2"),
                                   helper.make_node("FusedGelu", ["e"], ["y"], name="custom_3", domain="com.example")],
                                  [x], [y], [w]),
        "cycle.onnx": model([helper.make_node("Add", ["x", "b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second"),
                             helper.make_node("Identity", ["b"], ["y"], name="out")], [x], [y]),
        "missing_initializer.onnx": model([helper.make_node("MatMul", ["x", "w_missing"], ["y"], name="mm")], [x], [y]),
        "impossible_shape.onnx": model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape_bad")], [f32("x", [3, 4])], [y],
                                       [numpy_helper.from_array(np.array([5, 5], np.int64), "s")]),
        "negative_reshape.onnx": model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape_neg")], [f32("x", [3, 4])], [y],
                                       [numpy_helper.from_array(np.array([-5, 4], np.int64), "s")]),
        "huge_reshape.onnx": model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape_huge")], [f32("x", [3, 4])], [y],
                                   [numpy_helper.from_array(np.array([1 << 62, 4], np.int64), "s")]),
        "absurd_size.onnx": model([helper.make_node("Add", ["x", "big"], ["y"], name="add_big")], [x], [y],
                                  [raw_tensor("big", [1 << 40, 1 << 40], b"")]),
        "short_initializer.onnx": model([helper.make_node("Add", ["x", "b"], ["y"], name="add_b")], [x], [y],
                                        [raw_tensor("b", [4], np.ones(2, np.float32).tobytes())]),
        "old_opset.onnx": model(good.graph.node, [x], [y], [w], opset=9),
        # Resize in a mode portc lacks, and with a size only known at run time
        "resize_cubic.onnx": model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="resize_cubic", mode="cubic")],
                                   [f32("x", [1, 1, 4, 4])], [y], [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")]),
        "tile_dynamic.onnx": model([helper.make_node("Tile", ["x", "r"], ["y"], name="tile_dyn")],
                                   [f32("x", [2, 3]), helper.make_tensor_value_info("r", TensorProto.INT64, [2])], [y]),
        "resize_dynamic.onnx": model([helper.make_node("Resize", ["x", "", "", "z"], ["y"], name="resize_dyn")],
                                     [f32("x", [1, 1, 4, 4]), helper.make_tensor_value_info("z", TensorProto.INT64, [4])], [y]),
        "einsum_ellipsis.onnx": model([helper.make_node("Einsum", ["x", "x"], ["y"], name="einsum_dots", equation="...i,...i->...")], [x], [y]),
        # outputs whose size depends on the data: refused by name
        "topk_dynamic.onnx": model([helper.make_node("TopK", ["x", "k"], ["y", "i"], name="topk_dyn")],
                                   [x, helper.make_tensor_value_info("k", TensorProto.INT64, [1])], [y]),
        "nonzero.onnx": model([helper.make_node("NonZero", ["x"], ["y"], name="nonzero_1")], [x], [y]),
        # recurrent ops portc cannot unroll: a sequence length known only at run time, partial
        # sequences, an activation it lacks
        "lstm_dynamic_steps.onnx": model([helper.make_node("LSTM", ["x", "lw", "lr"], ["y"], name="lstm_dyn", hidden_size=2)],
                                         [f32("x", ["S", 1, 4])], [y], [numpy_helper.from_array(np.ones((1, 8, 4), np.float32), "lw"),
                                                                      numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "lr")]),
        "gru_sequence_lens.onnx": model([helper.make_node("GRU", ["x", "gw", "gr", "", "lens"], ["y"], name="gru_lens", hidden_size=2)],
                                        [f32("x", [3, 1, 4]), helper.make_tensor_value_info("lens", TensorProto.INT32, [1])], [y],
                                        [numpy_helper.from_array(np.ones((1, 6, 4), np.float32), "gw"),
                                         numpy_helper.from_array(np.ones((1, 6, 2), np.float32), "gr")]),
        "rnn_activation.onnx": model([helper.make_node("RNN", ["x", "rw", "rr"], ["y"], name="rnn_act", hidden_size=2, activations=["Softsign"])],
                                     [f32("x", [3, 1, 4])], [y], [numpy_helper.from_array(np.ones((1, 2, 4), np.float32), "rw"),
                                                                  numpy_helper.from_array(np.ones((1, 2, 2), np.float32), "rr")]),
        # small valid models that reach deeper into the importer (fuzzing seeds)
        "shape_arith.onnx": model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                                   helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
                                   helper.make_node("Mul", ["n", "two"], ["n2"], name="double"),
                                   helper.make_node("Unsqueeze", ["n2", "zero1"], ["n2u"], name="unsq"),
                                   helper.make_node("Concat", ["n2u", "two1"], ["shape"], name="cat", axis=0),
                                   helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
                                   helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)],
                                  [x], [y], [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                                             numpy_helper.from_array(np.array(2, np.int64), "two"),
                                             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
                                             numpy_helper.from_array(np.array([2], np.int64), "two1")]),
        "conv_bn_pool.onnx": model([helper.make_node("Conv", ["img", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
                                    helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="bn", epsilon=1e-5),
                                    helper.make_node("Relu", ["n"], ["r"], name="relu"),
                                    helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                                    helper.make_node("GlobalAveragePool", ["p"], ["y"], name="gap")],
                                   [f32("img", ["N", 2, 5, 5])], [y],
                                   [numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32) * 0.1, "cw"),
                                    numpy_helper.from_array(np.zeros(3, np.float32), "cb")] +
                                   [numpy_helper.from_array(np.full(3, v, np.float32), k) for k, v in (("g", 1.5), ("b", 0.1), ("m", 0.2), ("v", 0.9))]),
    }
    # Loops portc cannot unroll, a body with an operator portc lacks, a sequence as a graph output
    i64 = lambda n, shape=(): helper.make_tensor_value_info(n, TensorProto.INT64, list(shape))
    b1 = lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, [])
    def loop_body(nodes, cond_out):
        return helper.make_graph(nodes, "body", [i64("it"), b1("cin"), f32("h", None)], [b1(cond_out), f32("h2", None)])
    relu_body = loop_body([helper.make_node("Relu", ["h"], ["h2"]), helper.make_node("Identity", ["cin"], ["cout"])], "cout")
    true = numpy_helper.from_array(np.array(True), "true")
    files["loop_dynamic_trips.onnx"] = model([helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop_m", body=relu_body)],
                                             [x, i64("m")], [y])
    files["loop_data_condition.onnx"] = model(
        [helper.make_node("Loop", ["", "true", "x"], ["y"], name="loop_while", body=loop_body(
            [helper.make_node("Relu", ["h"], ["h2"]), helper.make_node("ReduceMax", ["h2"], ["mx"], keepdims=0),
             helper.make_node("Greater", ["mx", "zero_f"], ["more"])], "more"))],
        [x], [y], [true, numpy_helper.from_array(np.array(0, np.float32), "zero_f")])
    files["loop_unsupported_body.onnx"] = model(
        [helper.make_node("Loop", ["three", "", "x"], ["y"], name="loop_dft", body=loop_body(
            [helper.make_node("DFT", ["h"], ["h2"], name="dft_in_body"), helper.make_node("Identity", ["cin"], ["cout"])], "cout"))],
        [x], [y], [numpy_helper.from_array(np.array(3, np.int64), "three")])
    files["if_data_condition.onnx"] = model(
        [helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0), helper.make_node("Greater", ["mx", "zero_f"], ["pos"]),
         helper.make_node("If", ["pos"], ["y"], name="if_data",
                          then_branch=helper.make_graph([helper.make_node("Relu", ["x"], ["r"])], "then", [], [f32("r", None)]),
                          else_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["ng"])], "else", [], [f32("ng", None)]))],
        [x], [y], [numpy_helper.from_array(np.array(0, np.float32), "zero_f")])
    # a ScatterND over indices computed from the run-time batch that write each row's diagonal
    # element x[n, n]: not a slice assignment
    files["scatter_runtime_diagonal.onnx"] = model(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero_i"], ["n"], axis=0),
         helper.make_node("Range", ["zero_i", "n", "one_i"], ["r"]), helper.make_node("Unsqueeze", ["r", "one_ax"], ["r1"]),
         helper.make_node("Concat", ["r1", "r1"], ["idx"], axis=-1), helper.make_node("ReduceSum", ["x", "one_ax"], ["upd"], keepdims=0),
         helper.make_node("ScatterND", ["x", "idx", "upd"], ["y"], name="diagonal")],
        [x], [y], [numpy_helper.from_array(np.array(0, np.int64), "zero_i"), numpy_helper.from_array(np.array(1, np.int64), "one_i"),
                   numpy_helper.from_array(np.array([1], np.int64), "one_ax")])
    files["sequence_output.onnx"] = model([helper.make_node("SequenceConstruct", ["x", "x"], ["y"], name="seq")], [x],
                                          [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)])
    for name, m in files.items():
        onnx.save_model(m, os.path.join(out, name))
    raw = good.SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(raw[: len(raw) * 2 // 3])
    # field 7 (graph) with a varint wire type where a message is expected
    with open(os.path.join(out, "wrong_field_type.onnx"), "wb") as f:
        f.write(bytes([0x08, 0x08, 0x38, 0x05]))
    with open(os.path.join(out, "not_onnx.onnx"), "wb") as f:
        f.write(b"graph g\ninput x: f32[4]\n")
    # external data that points out of the model's folder
    ext = model([helper.make_node("Add", ["x", "b"], ["y"], name="add_b")], [x], [y],
                [helper.make_tensor("b", TensorProto.FLOAT, [4], [0, 0, 0, 0])])
    t = ext.graph.initializer[0]
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../etc/passwd"), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    onnx.save_model(ext, os.path.join(out, "external_escape.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
