"""Writes ONNX nodes with the attributes PyTorch never exports, each with inputs and the outputs of
a numpy implementation of the operator's definition, into OUT/NAME/ as export_models.py does
(model.onnx, x_1.npy, y_1.npy, x_3.npy, y_3.npy): LSTM and GRU with peepholes, clip, other
activations, layout=1, reverse, linear_before_reset=0 and initial states; CumSum exclusive and
reversed; ScatterND (with negative indices, and with no update at all) and GatherElements with
negative indices; ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp; Loop (carried tensors and sequences, scan
outputs, one Loop within another) and the sequence operators; If on shapes, nested, with a
sequence among its outputs; Split of a shape vector; Tile past 64 repeats.

usage: spec_models.py OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

S, I, H = 5, 3, 4
sigmoid = lambda v: 1 / (1 + np.exp(-v))
ACTS = {"Sigmoid": sigmoid, "Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0),
        "HardSigmoid": lambda v: np.clip(0.2 * v + 0.5, 0, 1)}


def lstm_ref(x, W, R, B, P, h, c, acts, clip, reverse):
    f, g, hh = (ACTS[a] for a in acts)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Wi, Wo, Wf, Wc = np.split(W, 4)
    Ri, Ro, Rf, Rc = np.split(R, 4)
    b = B[:4 * H] + B[4 * H:]
    bi, bo, bf, bc = np.split(b, 4)
    pi, po, pf = np.split(P, 3)
    ys = [None] * S
    for t in (reversed(range(S)) if reverse else range(S)):
        xt = x[t]
        i = f(cl(xt @ Wi.T + h @ Ri.T + bi + pi * c))
        fg = f(cl(xt @ Wf.T + h @ Rf.T + bf + pf * c))
        cc = g(cl(xt @ Wc.T + h @ Rc.T + bc))
        c = fg * c + i * cc
        o = f(cl(xt @ Wo.T + h @ Ro.T + bo + po * c))
        h = o * hh(c)
        ys[t] = h
    return np.stack(ys), h, c


def gru_ref(x, W, R, B, h, acts, lbr):
    f, g = (ACTS[a] for a in acts)
    Wz, Wr, Wh = np.split(W, 3)
    Rz, Rr, Rh = np.split(R, 3)
    wbz, wbr, wbh = np.split(B[:3 * H], 3)
    rbz, rbr, rbh = np.split(B[3 * H:], 3)
    ys = []
    for t in range(S):
        xt = x[t]
        z = f(xt @ Wz.T + h @ Rz.T + wbz + rbz)
        r = f(xt @ Wr.T + h @ Rr.T + wbr + rbr)
        n = g(xt @ Wh.T + (r * (h @ Rh.T + rbh) if lbr else (r * h) @ Rh.T + rbh) + wbh)
        h = (1 - z) * n + z * h
        ys.append(h)
    return np.stack(ys), h


def save(out, name, nodes, inputs, inits, run):
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    os.makedirs(os.path.join(out, name), exist_ok=True)
    onnx.save_model(m, os.path.join(out, name, "model.onnx"))
    for n in (1, 3):
        x = np.random.default_rng(100 + n).standard_normal((S, n, I)).astype(np.float32)
        np.save(os.path.join(out, name, f"x_{n}.npy"), x)
        np.save(os.path.join(out, name, f"y_{n}.npy"), run(x.astype(np.float64)).astype(np.float32))


def main(out):
    rng = np.random.default_rng(7)
    r = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
    W, R, B, P = r(1, 4 * H, I), r(1, 4 * H, H), r(1, 8 * H), r(1, 3 * H)
    h0, c0 = r(1, 1, H), r(1, 1, H)
    acts = ["HardSigmoid", "Tanh", "Relu"]
    inits = [numpy_helper.from_array(a, k) for a, k in ((W, "W"), (R, "R"), (B, "B"), (P, "P"), (h0, "h0"), (c0, "c0"))]
    # LSTM in reverse with peepholes, clip and other activations, batch first: x [N, S, I]
    node = helper.make_node("LSTM", ["xt", "W", "R", "B", "", "h0b", "c0b", "P"], ["Y", "Y_h", "Y_c"], name="lstm_peep", hidden_size=H,
                            direction="reverse", clip=1.5, activations=acts, layout=1)
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Slice", ["xs", "one", "two"], ["nb"]),
             helper.make_node("Concat", ["nb", "one", "hsz"], ["hshape"], axis=0),
             helper.make_node("Transpose", ["h0"], ["h0t"], perm=[1, 0, 2]), helper.make_node("Transpose", ["c0"], ["c0t"], perm=[1, 0, 2]),
             helper.make_node("Expand", ["h0t", "hshape"], ["h0b"]), helper.make_node("Expand", ["c0t", "hshape"], ["c0b"]),
             node,
             helper.make_node("Flatten", ["Y"], ["yf"], axis=1), helper.make_node("Flatten", ["Y_h"], ["hf"], axis=1),
             helper.make_node("Flatten", ["Y_c"], ["cf"], axis=1), helper.make_node("Concat", ["yf", "hf", "cf"], ["y"], axis=1)]
    ints = [numpy_helper.from_array(np.array([v], np.int64), k) for k, v in (("one", 1), ("two", 2), ("hsz", H))]

    def run_lstm(x):
        n = x.shape[1]
        y, h, c = lstm_ref(x, W[0], R[0], B[0], P[0], np.broadcast_to(h0[0], (n, H)), np.broadcast_to(c0[0], (n, H)), acts, 1.5, True)
        # Y [N, S, 1, H], Y_h and Y_c [N, 1, H] (layout 1)
        return np.concatenate([y.transpose(1, 0, 2).reshape(n, -1), h, c], 1)
    save(out, "lstm_peephole", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits + ints, run_lstm)

    # GRU with linear_before_reset=0 (PyTorch exports 1) and a sigmoid/relu pair
    Wg, Rg, Bg = r(1, 3 * H, I), r(1, 3 * H, H), r(1, 6 * H)
    node = helper.make_node("GRU", ["x", "Wg", "Rg", "Bg"], ["Y", "Y_h"], name="gru_lbr0", hidden_size=H, activations=["Sigmoid", "Relu"])
    nodes = [node, helper.make_node("Transpose", ["Y"], ["Yt"], perm=[2, 0, 1, 3]), helper.make_node("Transpose", ["Y_h"], ["Yht"], perm=[1, 0, 2]),
             helper.make_node("Flatten", ["Yt"], ["yf"], axis=1), helper.make_node("Flatten", ["Yht"], ["hf"], axis=1),
             helper.make_node("Concat", ["yf", "hf"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(a, k) for a, k in ((Wg, "Wg"), (Rg, "Rg"), (Bg, "Bg"))]

    def run_gru(x):
        y, h = gru_ref(x, Wg[0], Rg[0], Bg[0], np.zeros((x.shape[1], H)), ["Sigmoid", "Relu"], False)
        return np.concatenate([y.transpose(1, 0, 2).reshape(x.shape[1], -1), h], 1)
    save(out, "gru_lbr0", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits, run_gru)

    # CumSum exclusive and reversed over axis 0, and plain over axis -1; ScatterND of x's channel
    # means into a constant grid with a negative index, then GatherElements from it with negative
    # indices (constant shapes: one gather); ArgMax and GatherElements along x's last axis
    # (symbolic batch: gathered by comparison)
    sidx = np.array([[1, -1], [0, 0]], np.int64)  # grid[1, 3] and grid[0, 0]
    gidx = rng.integers(-4, 4, size=(2, 3, I)).astype(np.int64)
    grid = r(2, 4, I)
    nodes = [helper.make_node("CumSum", ["x", "ax0"], ["c1"], exclusive=1, reverse=1),
             helper.make_node("CumSum", ["x", "axm1"], ["c2"]),
             helper.make_node("ReduceMean", ["x"], ["colmean"], axes=[0, 1], keepdims=0),
             helper.make_node("Unsqueeze", ["colmean", "zero"], ["upd1"]),
             helper.make_node("Concat", ["upd1", "upd1"], ["upd"], axis=0),
             helper.make_node("ScatterND", ["grid", "sidx", "upd"], ["sc0"]),
             # no element written: empty updates, as Swin3D's masks of windows that shift by nothing
             helper.make_node("Slice", ["upd", "zero", "zero"], ["upd_none"]),
             helper.make_node("ScatterND", ["sc0", "sidx_none", "upd_none"], ["sc"]),
             helper.make_node("GatherElements", ["sc", "gidx"], ["ge"], axis=1),
             helper.make_node("ArgMax", ["x"], ["am"], axis=2, keepdims=1),
             helper.make_node("GatherElements", ["x", "am"], ["gmax"], axis=-1)]
    for k in ("c1", "c2", "gmax"):
        nodes += [helper.make_node("Transpose", [k], [k + "t"], perm=[1, 0, 2]), helper.make_node("Flatten", [k + "t"], [k + "f"], axis=1)]
    nodes += [helper.make_node("Flatten", ["sc"], ["scf"], axis=0), helper.make_node("Flatten", ["ge"], ["gef"], axis=0),
              helper.make_node("Concat", ["scf", "gef"], ["fixed"], axis=1),
              helper.make_node("Shape", ["c1f"], ["rows"]), helper.make_node("Slice", ["rows", "zero", "one"], ["nrows"]),
              helper.make_node("Concat", ["nrows", "one"], ["eshape"], axis=0),
              helper.make_node("Expand", ["fixed", "eshape"], ["fixed_n"]),
              helper.make_node("Concat", ["c1f", "c2f", "gmaxf", "fixed_n"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("ax0", 0), ("axm1", -1))]
    inits += [numpy_helper.from_array(np.array([v], np.int64), k) for k, v in (("zero", 0), ("one", 1))]
    inits += [numpy_helper.from_array(a, k) for a, k in ((sidx, "sidx"), (gidx, "gidx"), (grid, "grid"), (np.zeros((0, 2), np.int64), "sidx_none"))]

    def run_index(x):
        n = x.shape[1]
        c1 = np.flip(np.cumsum(np.flip(x, 0), 0), 0) - x  # y[j] = sum of x[k] over k > j
        c2 = np.cumsum(x, 2)
        sc = grid.astype(np.float64)
        sc[1, 3] = sc[0, 0] = x.mean((0, 1))
        ge = np.take_along_axis(sc, gidx % 4, 1)
        gmax = x.max(2, keepdims=True)
        rows = [np.transpose(v, (1, 0, 2)).reshape(n, -1) for v in (c1, c2, gmax)]
        fixed = np.broadcast_to(np.concatenate([sc.ravel(), ge.ravel()]), (n, sc.size + ge.size))
        return np.concatenate(rows + [fixed], 1)
    save(out, "indexing", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits, run_index)

    # the reductions with an expression around them: L2, L1, sum of squares, log-sum, log-sum-exp
    nodes = [helper.make_node("ReduceL2", ["x"], ["l2"], axes=[0, 2], keepdims=0),
             helper.make_node("Unsqueeze", ["l2", "one"], ["l2u"]),
             helper.make_node("ReduceL1", ["x"], ["l1"], axes=[0], keepdims=0),
             helper.make_node("ReduceSumSquare", ["x"], ["ss"], axes=[2], keepdims=1),
             helper.make_node("Transpose", ["ss"], ["sst"], perm=[1, 0, 2]), helper.make_node("Flatten", ["sst"], ["ssf"], axis=1),
             helper.make_node("Exp", ["x"], ["ex"]), helper.make_node("ReduceLogSum", ["ex"], ["ls"], axes=[0], keepdims=0),
             helper.make_node("ReduceLogSumExp", ["x"], ["lse"], axes=[0, 2], keepdims=1),
             helper.make_node("Squeeze", ["lse", "zero"], ["lses"]),
             helper.make_node("Concat", ["l2u", "l1", "ssf", "ls", "lses"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(np.array([v], np.int64), k) for k, v in (("zero", 0), ("one", 1))]

    def run_reduce(x):
        lse = np.log(np.exp(x).sum((0, 2)))
        return np.concatenate([np.sqrt((x * x).sum((0, 2)))[:, None], np.abs(x).sum(0), (x * x).sum(2).T, np.log(np.exp(x).sum(0)),
                               lse[:, None]], 1)
    save(out, "reductions", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits, run_reduce)

    # Loop (unrolled at import) with a carried tensor, a carried sequence and a scan output; the
    # sequence read back by ConcatFromSequence, SequenceAt and SequenceLength; SplitToSequence;
    # and a Loop within a Loop whose inner body reads a value of the outer body
    Wl = r(I, I)
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
    i64, b1 = (lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [])), (lambda n: helper.make_tensor_value_info(n, TensorProto.BOOL, []))
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "it"], ["xt"], axis=0), helper.make_node("MatMul", ["h", "Wl"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["hs"]), helper.make_node("Tanh", ["hs"], ["h2"]),
         helper.make_node("SequenceInsert", ["sq", "h2"], ["sq2"]), helper.make_node("Mul", ["h2", "two"], ["scan"]),
         helper.make_node("Identity", ["cin"], ["cout"])],
        "body", [i64("it"), b1("cin"), f("h"), helper.make_tensor_sequence_value_info("sq", TensorProto.FLOAT, None)],
        [b1("cout"), f("h2"), helper.make_tensor_sequence_value_info("sq2", TensorProto.FLOAT, None), f("scan")])
    inner = helper.make_graph(
        [helper.make_node("Mul", ["xo", "half"], ["step"]), helper.make_node("Add", ["a2", "step"], ["a3"]),
         helper.make_node("Identity", ["ci"], ["co"])],
        "inner", [i64("j"), b1("ci"), f("a2")], [b1("co"), f("a3")])
    outer = helper.make_graph(
        [helper.make_node("Gather", ["x", "io"], ["xo"], axis=0),
         helper.make_node("Loop", ["two_i", "", "a"], ["a_in"], body=inner), helper.make_node("Identity", ["co2"], ["co3"])],
        "outer", [i64("io"), b1("co2"), f("a")], [b1("co3"), f("a_in")])
    nodes = [helper.make_node("Gather", ["x", "zero_s"], ["h0"], axis=0), helper.make_node("SequenceEmpty", [], ["s0"]),
             helper.make_node("Loop", ["three", "true", "h0", "s0"], ["hN", "sN", "scans"], body=body),
             helper.make_node("Transpose", ["scans"], ["scant"], perm=[1, 0, 2]), helper.make_node("Flatten", ["scant"], ["scanf"], axis=1),
             helper.make_node("ConcatFromSequence", ["sN"], ["cfs"], axis=1),
             helper.make_node("SequenceLength", ["sN"], ["len"]), helper.make_node("Sub", ["len", "one_s"], ["lastpos"]),
             helper.make_node("SequenceAt", ["sN", "lastpos"], ["last"]),
             helper.make_node("SplitToSequence", ["hN"], ["cols"], axis=1, keepdims=0),
             helper.make_node("SequenceAt", ["cols", "one_s"], ["col1"]), helper.make_node("Unsqueeze", ["col1", "one"], ["col1u"]),
             helper.make_node("Gather", ["x", "four_s"], ["a0"], axis=0),
             helper.make_node("Loop", ["two_i", "", "a0"], ["aN"], body=outer),
             helper.make_node("Concat", ["scanf", "hN", "cfs", "last", "col1u", "aN"], ["y"], axis=1)]
    inits = [numpy_helper.from_array(Wl, "Wl"), numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"), numpy_helper.from_array(np.array(True), "true"),
             numpy_helper.from_array(np.array([1], np.int64), "one")]
    inits += [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("three", 3), ("two_i", 2), ("zero_s", 0), ("one_s", 1), ("four_s", 4))]

    def run_loop(x):
        h, seq, scans = x[0], [], []
        for t in range(3):
            h = np.tanh(h @ Wl + x[t])
            seq.append(h)
            scans.append(2 * h)
        acc = x[4]
        for i in range(2):
            for _ in range(2):
                acc = acc + 0.5 * x[i]
        scanf = np.stack(scans).transpose(1, 0, 2).reshape(x.shape[1], -1)
        return np.concatenate([scanf, h, np.concatenate(seq, 1), seq[-1], h[:, 1:2], acc], 1)
    save(out, "loop", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits, run_loop)

    # If on shapes, as PyTorch writes a Python branch on x.shape: the condition is known at import.
    # The outer If (I == 3) takes its then-branch, which holds an initializer and an If of its own
    # whose condition (S < 2) takes the else-branch; the second If gives two outputs, one a sequence.
    inner = helper.make_node("If", ["s_small"], ["inner_out"], name="if_inner",
                             then_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["t_neg"])], "inner_then", [], [f("t_neg")]),
                             else_branch=helper.make_graph([helper.make_node("Sub", ["x", "xr"], ["e_sub"])], "inner_else", [], [f("e_sub")]))
    then_b = helper.make_graph([helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("Mul", ["xr", "three_f"], ["t3"]), inner,
                                helper.make_node("Add", ["t3", "inner_out"], ["t_out"])],
                               "outer_then", [], [f("t_out")], initializer=[numpy_helper.from_array(np.array(3, np.float32), "three_f")])
    else_b = helper.make_graph([helper.make_node("Tanh", ["x"], ["e_out"])], "outer_else", [], [f("e_out")])
    seq_then = helper.make_graph([helper.make_node("Exp", ["x"], ["sx"]), helper.make_node("SequenceConstruct", ["x", "sx"], ["sq"])],
                                 "seq_then", [], [f("sx"), helper.make_tensor_sequence_value_info("sq", TensorProto.FLOAT, None)])
    seq_else = helper.make_graph([helper.make_node("Abs", ["x"], ["ax"]), helper.make_node("SequenceConstruct", ["ax"], ["sq"])],
                                 "seq_else", [], [f("ax"), helper.make_tensor_sequence_value_info("sq", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "two_s"], ["isz"]), helper.make_node("Equal", ["isz", "three_s"], ["i_is_3"]),
             helper.make_node("Gather", ["xs", "zero_s"], ["ssz"]), helper.make_node("Less", ["ssz", "two_s"], ["s_small"]),
             helper.make_node("If", ["i_is_3"], ["branch"], name="if_outer", then_branch=then_b, else_branch=else_b),
             helper.make_node("If", ["s_small"], ["other", "sq"], name="if_seq", then_branch=seq_then, else_branch=seq_else),
             helper.make_node("ConcatFromSequence", ["sq"], ["sqc"], axis=2),
             # a shape vector split and put together again (PyTorch's repeat_interleave, MViT)
             helper.make_node("Split", ["xs", "ones3"], ["d0", "d1", "d2"], axis=0), helper.make_node("Concat", ["d0", "d1", "d2"], ["xs2"], axis=0),
             helper.make_node("ReduceMean", ["x"], ["colmean"], axes=[0, 1], keepdims=1), helper.make_node("Expand", ["colmean", "xs2"], ["cm0"]),
             # a known size read as a tensor first (a graph node holds it), then as shape arithmetic (MViT V2)
             helper.make_node("Cast", ["isz"], ["iszf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["cm0", "iszf"], ["cm1"]),
             helper.make_node("Unsqueeze", ["isz", "zero_1"], ["isz1"]), helper.make_node("Concat", ["d0", "d1", "isz1"], ["xs3"], axis=0),
             helper.make_node("Reshape", ["cm1", "xs3"], ["cm"]),
             # Tile past 64 repeats (PyTorch 2's repeat_interleave in MViT): the last and first of colmean, in that order
             helper.make_node("Tile", ["colmean", "reps100"], ["tiled"]), helper.make_node("Slice", ["tiled", "i_m1", "i_p1", "two_1"], ["seam"]),
             helper.make_node("Concat", ["d0", "d1", "two_1"], ["xs_n2"], axis=0), helper.make_node("Expand", ["seam", "xs_n2"], ["seam_n"]),
             helper.make_node("Concat", ["branch", "other", "sqc", "cm", "seam_n"], ["y3"], axis=2), helper.make_node("Flatten", ["y3"], ["y"], axis=2)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("two_s", 2), ("three_s", 3), ("zero_s", 0), ("ones3", [1, 1, 1]), ("zero_1", [0]), ("reps100", [1, 1, 100]),
                                                                             ("i_m1", [I - 1]), ("i_p1", [I + 1]), ("two_1", [2]))]

    def run_if(x):
        xr = np.maximum(x, 0)
        y3 = np.concatenate([3 * xr + (x - xr), np.abs(x), np.abs(x), np.broadcast_to(3 * x.mean((0, 1), keepdims=True), x.shape),
                             np.broadcast_to(x.mean((0, 1))[[I - 1, 0]], x.shape[:2] + (2,))], 2)
        return y3.reshape(S * x.shape[1], -1)
    save(out, "if_branches", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, "N", I])], inits, run_if)
    print("spec_models.py: lstm_peephole gru_lbr0 indexing reductions loop if_branches")


if __name__ == "__main__":
    main(sys.argv[1])
