"""Exports the models the ONNX tests run, with PyTorch as the oracle.

For each model: random weights (seeded), ONNX export with a dynamic batch dimension, and for two
batch sizes an input and PyTorch's own output, all as .npy in OUT/NAME/. Nothing is downloaded:
torchvision builds its architectures with weights=None. Run with Debian's python3 (python3-torch,
python3-torchvision, python3-onnx).

usage: export_models.py OUT [NAME ...] [--opset N] [--batches 1,3]
"""
import argparse
import inspect
import os
import sys

import numpy as np
import onnx
import torch
import torchvision


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Dropout(0.1),
            torch.nn.Linear(256, 128), torch.nn.Tanh(), torch.nn.Linear(128, 10), torch.nn.LogSoftmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class Pools(torch.nn.Module):
    """The padding cases portc spells out: asymmetric pads, ceil_mode, count_include_pad both ways."""
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=2, dilation=2)
        self.pad = torch.nn.ZeroPad2d((1, 0, 2, 1))
        self.max = torch.nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.avg_excl = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.avg_incl = torch.nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=True)

    def forward(self, x):
        h = torch.nn.functional.leaky_relu(self.conv(x), 0.2)
        h = self.max(self.pad(h))
        return torch.cat([torch.flatten(torch.sigmoid(self.avg_excl(h)), 1), torch.flatten(self.avg_incl(h), 1)], 1)


class Upsampling(torch.nn.Module):
    """Resize as the exporter writes it: nearest by a scale and to a size, bilinear with and without
    align_corners, up and down."""
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        h = self.conv(x)
        f = torch.nn.functional.interpolate
        outs = [f(h, scale_factor=2, mode="nearest"), f(h, size=(13, 22), mode="nearest"),
                f(h, size=(13, 22), mode="bilinear", align_corners=False), f(h, size=(13, 22), mode="bilinear", align_corners=True),
                f(h, size=(5, 6), mode="bilinear", align_corners=False)]
        return torch.cat([torch.flatten(o, 1) for o in outs], 1)


class Norms(torch.nn.Module):
    """GroupNorm and InstanceNorm (InstanceNormalization), triu/tril (Trilu), repeat (Tile), fmod (Mod)."""
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.group = torch.nn.GroupNorm(2, 8)
        self.inst = torch.nn.InstanceNorm2d(8, affine=True)
        with torch.no_grad():
            for n in (self.group, self.inst):
                n.weight.uniform_(0.5, 1.5)
                n.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        h = self.conv(x)  # [N, 8, 6, 12]
        g, i = self.group(h), self.inst(torch.relu(h))
        tri = torch.triu(h, diagonal=1) + torch.tril(h, diagonal=-2)
        tiled = h[:, :2].repeat(1, 2, 1, 3)
        return torch.cat([torch.flatten(t, 1) for t in (g, i, tri, tiled, torch.fmod(h, 0.75))], 1)


class Audio(torch.nn.Module):
    """A 1-D convolutional audio classifier: strided, dilated and grouped Conv1d with GroupNorm,
    BatchNorm1d, max and average pooling over time, and a linear head."""
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(1, 16, 9, stride=4, padding=4)
        self.n1 = torch.nn.GroupNorm(4, 16)
        self.c2 = torch.nn.Conv1d(16, 32, 3, dilation=2, padding=2, groups=4)
        self.n2 = torch.nn.BatchNorm1d(32)
        self.pool = torch.nn.MaxPool1d(3, stride=2, padding=1)
        self.avg = torch.nn.AvgPool1d(4, stride=4, ceil_mode=True, count_include_pad=False)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, x):
        h = self.pool(torch.relu(self.n1(self.c1(x))))
        h = self.avg(torch.relu(self.n2(self.c2(h))))
        return torch.cat([self.head(h.mean(dim=2)), torch.flatten(h, 1)], 1)  # the features too: a stronger check


class DecoderOnly(torch.nn.Module):
    """A small decoder-only transformer: learned positions, two causally masked self-attention
    layers over [N, S, E] and a projection to a vocabulary of 50."""
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(32, 50)
        self.pos = torch.nn.Embedding(16, 32)  # learned positions, looked up by torch.arange (Range)

    def forward(self, x):
        s = x.shape[1]
        causal = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        return self.head(self.layers(x + self.pos(torch.arange(s)), mask=causal))


class UNet(torch.nn.Module):
    """A U-Net-style encoder-decoder: ConvTranspose upsampling (stride 2 with kernel 2, kernel 3
    with padding and output_padding, grouped and dilated with weights computed at run time), skip
    connections joined by Concat, a bilinear Resize, and a 1-D transposed convolution over the rows."""
    def __init__(self):
        super().__init__()
        c = torch.nn.Conv2d
        self.e1, self.e2, self.e3 = c(3, 8, 3, padding=1), c(8, 16, 3, padding=1), c(16, 32, 3, padding=1)
        self.up2 = torch.nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.d2 = c(32, 16, 3, padding=1)
        self.up1 = torch.nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.d1 = c(16, 8, 3, padding=1)
        self.grouped = torch.nn.ConvTranspose2d(8, 8, 3, stride=1, padding=2, dilation=2, groups=2, bias=False)
        self.head = c(8, 4, 1)
        self.rows = torch.nn.ConvTranspose1d(4, 3, 4, stride=3, padding=1)

    def forward(self, x):
        f = torch.nn.functional
        h1 = torch.relu(self.e1(x))
        h2 = torch.relu(self.e2(f.max_pool2d(h1, 2)))
        h3 = torch.relu(self.e3(f.max_pool2d(h2, 2)))
        u2 = torch.relu(self.d2(torch.cat([self.up2(h3), h2], 1)))
        u1 = torch.relu(self.d1(torch.cat([self.up1(u2), h1], 1)))
        w = self.grouped.weight * torch.sigmoid(u1.mean())  # not an initializer: flipped in the graph
        seg = self.head(f.conv_transpose2d(u1, w, stride=1, padding=2, dilation=2, groups=2) + u1)
        big = f.interpolate(seg, scale_factor=1.5, mode="bilinear", align_corners=False)
        rows = self.rows(seg.mean(dim=2))
        return torch.cat([torch.flatten(big, 1), torch.flatten(rows, 1)], 1)


class Lstm(torch.nn.Module):
    """A two-layer bidirectional LSTM over [N, S, 8] (batch first), from learned initial states, and
    a one-layer LSTM over its output (zero initial states); the outputs at every step and the last
    hidden and cell states."""
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.h0 = torch.nn.Parameter(torch.randn(4, 1, 12) * 0.5)
        self.c0 = torch.nn.Parameter(torch.randn(4, 1, 12) * 0.5)
        self.top = torch.nn.LSTM(24, 6)

    def forward(self, x):
        n = x.shape[0]
        y, (h, c) = self.lstm(x, (self.h0.expand(-1, n, -1).contiguous(), self.c0.expand(-1, n, -1).contiguous()))
        z, (h2, c2) = self.top(y.transpose(0, 1))
        return torch.cat([torch.flatten(z.transpose(0, 1), 1), torch.flatten(h.transpose(0, 1), 1),
                          torch.flatten(c.transpose(0, 1), 1), h2[0], c2[0]], 1)


class Gru(torch.nn.Module):
    """A bidirectional GRU (batch first), then RNNs with tanh and with relu over its output."""
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(8, 10, bidirectional=True, batch_first=True)
        self.rnn = torch.nn.RNN(20, 9, batch_first=True)
        self.relu_rnn = torch.nn.RNN(9, 7, nonlinearity="relu", batch_first=True)

    def forward(self, x):
        y, h = self.gru(x)
        r, _ = self.rnn(y)
        q, hq = self.relu_rnn(r)
        return torch.cat([torch.flatten(y, 1), torch.flatten(h.transpose(0, 1), 1), torch.flatten(q, 1), hq[0]], 1)


class Indexing(torch.nn.Module):
    """torch.cumsum (CumSum), argmax (ArgMax), torch.gather (GatherElements) and torch.topk (TopK,
    largest and smallest, values and indices) over [N, 5, 6]."""
    def forward(self, x):
        g = torch.gather(x, 2, x.argmin(dim=2, keepdim=True))
        top, at = torch.topk(x, 3, dim=2)
        low, lat = torch.topk(x, 2, dim=1, largest=False)
        return torch.cat([torch.flatten(torch.cumsum(x, dim=1), 1), torch.flatten(g, 1), x.argmax(dim=1).float(),
                          torch.flatten(top, 1), torch.flatten(at.float(), 1), torch.flatten(low, 1), torch.flatten(lat.float(), 1)], 1)


class Einsums(torch.nn.Module):
    """torch.einsum (Einsum): attention scores over batch and heads, a permute, a matmul by a
    weight (its equation spaced, as MaxViT writes them), a sum, an outer product and row-wise dot
    products, over x [N, 4, 6]."""
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 5))

    def forward(self, x):
        e = torch.einsum
        q = x.reshape(x.shape[0], 2, 2, 6)
        outs = [e("bhqd,bhkd->bhqk", q, q), e("bij->bji", x), e("b i j, j k -> b i k", x, self.w), e("bij->b", x).unsqueeze(1),
                e("bi,bj->bij", x[:, 0], x[:, 1]), e("bij,bij->bi", x, x)]
        return torch.cat([torch.flatten(o, 1) for o in outs], 1)


class Video3d(torch.nn.Module):
    """A small 3-D CNN over [N, 3, 6, 16, 16] clips: Conv3d strided, padded, dilated and grouped,
    BatchNorm3d, MaxPool3d with padding, AvgPool3d and AdaptiveAvgPool3d, as R3D and S3D use."""
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2))
        self.bn = torch.nn.BatchNorm3d(8)
        self.pool = torch.nn.MaxPool3d((2, 3, 3), stride=(2, 2, 2), padding=(0, 1, 1))
        self.c2 = torch.nn.Conv3d(8, 12, 3, padding=2, dilation=2, groups=4)
        self.avg = torch.nn.AvgPool3d((3, 2, 2), stride=1)
        self.head = torch.nn.Linear(12, 4)

    def forward(self, x):
        h = self.pool(torch.relu(self.bn(self.c1(x))))
        h = self.avg(torch.relu(self.c2(h)))
        return torch.cat([self.head(torch.nn.functional.adaptive_avg_pool3d(h, 1).flatten(1)), h.flatten(1)], 1)


class ClassToken(torch.nn.Module):
    """MViT's split of the class token from the patch tokens: torch.tensor_split with a list of
    indices, which the exporter writes as a Loop that fills a sequence (SequenceEmpty,
    SequenceInsert, SequenceAt)."""
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        cls, tokens = torch.tensor_split(self.proj(x), indices=(1,), dim=1)
        return tokens * torch.sigmoid(cls) + tokens.mean(dim=1, keepdim=True)


class SliceAssign(torch.nn.Module):
    """Writes to slices of a tensor with a run-time batch, as MViT V2 adds its relative-position term
    (attn[:, :, 1:, 1:] += rel): PyTorch exports each as a ScatterND whose indices are a grid built
    from a Range to the batch size. A box, an integer index, whole rows, and an integer index with a
    step, over x [N, 5, 6]."""
    def forward(self, x):
        y = x * 2
        y[:, 1:, 2:] += x[:, :4, :4]
        y[:, :, 0] = x[:, :, 5]
        y[:, 2:4] = -x[:, :2]
        y[:, 3, 1::2] = 0.5
        return y


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return {"out": ...}: the tensor alone."""
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def onnx_export(model, args, path, **kw):
    """torch.onnx.export with the TorchScript-based exporter, which Debian's PyTorch 1.13 has; where a
    newer PyTorch's TorchScript exporter cannot trace a model (2.11 on TransformerEncoderLayer:
    "is_causal must be bool"), with its torch.export-based one. Returns which exporter wrote it."""
    if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
        torch.onnx.export(model, args, path, **kw)
        return "TorchScript"
    try:
        torch.onnx.export(model, args, path, dynamo=False, **kw)
        return "TorchScript"
    except Exception as e:  # noqa: BLE001: then the torch.export-based exporter
        print(f"{path}: the TorchScript exporter failed ({type(e).__name__}: {str(e)[:160]}); using torch.export",
              file=sys.stderr)
        torch.onnx.export(model, args, path, dynamo=True, **kw)
        return "torch.export"


def randomize_norms(model):
    """Non-trivial running statistics, so that BatchNorm folding is tested with real numbers."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def models():
    """name -> (constructor, input shape without batch, export options)"""
    return {
        "mlp": (MLP, (64,), {}),
        "pools": (Pools, (3, 17, 19), {}),
        # BatchNormalization kept in the file (training=PRESERVE on an eval model): portc folds it
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), (3, 64, 64), {"keep_bn": True}),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (3, 64, 64), {}),
        "squeezenet": (lambda: torchvision.models.squeezenet1_1(weights=None), (3, 64, 64), {}),
        # HardSwish and HardSigmoid (its squeeze-and-excitation gates)
        "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), (3, 64, 64), {}),
        "upsampling": (Upsampling, (3, 9, 11), {}),
        "norms": (Norms, (4, 6, 12), {}),
        "decoder_only": (DecoderOnly, (10, 32), {}),
        "audio": (Audio, (1, 400), {}),
        "unet": (UNet, (3, 16, 20), {}),
        "lstm": (Lstm, (7, 8), {}),
        "gru": (Gru, (6, 8), {}),
        "indexing": (Indexing, (5, 6), {}),
        "einsum": (Einsums, (4, 6), {}),
        "video3d": (Video3d, (3, 6, 16, 16), {}),
        "class_token": (ClassToken, (5, 8), {}),
        "slice_assign": (SliceAssign, (5, 6), {}),
        # segmentation: HardSwish, HardSigmoid and a bilinear Resize back to the input's size
        "lraspp_mobilenet_v3": (lambda: SegmentationOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None)), (3, 64, 64), {}),
        "transformer": (lambda: torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1),
                        (16, 64), {"seq_first": True}),
    }


def export(name, out, opset, batches):
    make, shape, opts = models()[name]
    torch.manual_seed(0)
    model = make().eval()
    randomize_norms(model)
    os.makedirs(os.path.join(out, name), exist_ok=True)
    path = os.path.join(out, name, "model.onnx")
    seq_first = opts.get("seq_first", False)
    # the transformer layer takes [S, N, E]: the batch is dimension 1
    def sample(n):
        s = (shape[0], n) + shape[1:] if seq_first else (n,) + shape
        return torch.randn(*s, generator=torch.Generator().manual_seed(100 + n))
    axes = {"x": {1 if seq_first else 0: "N"}, "y": {1 if seq_first else 0: "N"}}
    training = torch.onnx.TrainingMode.PRESERVE if opts.get("keep_bn") else torch.onnx.TrainingMode.EVAL
    with torch.no_grad():
        # a newer PyTorch's transformer layers take a fused fast path that no exporter can write
        if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
            torch.backends.mha.set_fastpath_enabled(False)
        onnx_export(model, (sample(batches[0]),), path, input_names=["x"], output_names=["y"],
                    dynamic_axes=axes, opset_version=opset, training=training, do_constant_folding=True)
        onnx.checker.check_model(onnx.load(path))
        for n in batches:
            x = sample(n)
            y = model(x)
            np.save(os.path.join(out, name, f"x_{n}.npy"), x.numpy())
            np.save(os.path.join(out, name, f"y_{n}.npy"), y.numpy())
    ops = sorted({node.op_type for node in onnx.load(path).graph.node})
    print(f"{name}: opset {opset}, batches {batches}, ops {' '.join(ops)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--batches", default="1,3")
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    batches = [int(b) for b in a.batches.split(",")]
    for name in a.names or models():
        export(name, a.out, a.opset, batches)


if __name__ == "__main__":
    sys.exit(main())
