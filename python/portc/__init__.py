"""portc from Python: load a model (.onnx or .ptg), compile it for a target, run it on numpy arrays.

A thin layer over libportc's C API through ctypes; nothing to build. The library is found through
$PORTC_LIBRARY, else beside this package when installed (cmake --install puts the package in
<prefix>/lib/python3/dist-packages and the library in <prefix>/lib), else in a build tree next to
the source tree (build/lib), else wherever the dynamic loader finds libportc.so.0.

    import numpy as np, portc
    g = portc.load("model.onnx")
    m = g.compile(target="vulkan", dynamic=True)
    (y,) = m.run(input=np.random.rand(8, 3, 224, 224).astype(np.float32))

Errors from the library are raised as portc.Error, with the library's message.
"""
import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["Error", "Graph", "Module", "load", "parse", "version", "targets"]

_MAX_RANK = 8
_DTYPES = {0: np.float32, 1: np.float16, 3: np.int32, 4: np.int64, 5: np.bool_, 6: np.float64}
_BF16 = 2
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
_MODES = {"default": 0, "reduce-overhead": 1, "max-autotune": 2}


class Error(RuntimeError):
    """A libportc call failed; the message is the library's (portc_last_error)."""


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * _MAX_RANK), ("data", ctypes.c_void_p)]


class _CompileOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("target", ctypes.c_char_p), ("mode", ctypes.c_int), ("dynamic", ctypes.c_bool),
                ("fullgraph", ctypes.c_bool), ("eager", ctypes.c_bool), ("dump_dir", ctypes.c_char_p), ("dump_after", ctypes.c_char_p)]


def _candidates():
    env = os.environ.get("PORTC_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "..", "..", "..", "libportc.so.0")  # <prefix>/lib/python3/dist-packages/portc
    yield os.path.join(here, "..", "..", "build", "lib", "libportc.so.0")  # the source tree's build folder
    found = ctypes.util.find_library("portc")
    if found:
        yield found
    yield "libportc.so.0"


def _open():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("portc: libportc.so.0 not found; set PORTC_LIBRARY. Tried: " + "; ".join(tried))


_lib = _open()


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


_P = ctypes.c_void_p
_version = _fn("portc_version", ctypes.c_char_p)
_last_error = _fn("portc_last_error", ctypes.c_char_p)
_graph_load = _fn("portc_graph_load", ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_P))
_graph_parse = _fn("portc_graph_parse", ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_P))
_graph_free = _fn("portc_graph_free", None, _P)
_graph_autocast_copy = _fn("portc_graph_autocast_copy", ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_int))
_graph_name = _fn("portc_graph_name", ctypes.c_char_p, _P)
_graph_output_count = _fn("portc_graph_output_count", ctypes.c_int, _P)
_graph_input_count = _fn("portc_graph_input_count", ctypes.c_int, _P)
_graph_input = _fn("portc_graph_input", ctypes.c_int32, _P, ctypes.c_int)
_node_name = _fn("portc_node_name", ctypes.c_char_p, _P, ctypes.c_int32)
_tensor_new = _fn("portc_tensor_new", ctypes.POINTER(_Tensor), ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64))
_tensor_free = _fn("portc_tensor_free", None, ctypes.POINTER(_Tensor))
_bindings_new = _fn("portc_bindings_new", _P, _P)
_bindings_free = _fn("portc_bindings_free", None, _P)
_bindings_set = _fn("portc_bindings_set", ctypes.c_int, _P, ctypes.c_char_p, ctypes.POINTER(_Tensor))
_bindings_set_symbol = _fn("portc_bindings_set_symbol", ctypes.c_int, _P, ctypes.c_char_p, ctypes.c_int64)
_bindings_set_seed = _fn("portc_bindings_set_seed", None, _P, ctypes.c_uint64)
_reference_run = _fn("portc_reference_run", ctypes.c_int, _P, _P, ctypes.POINTER(ctypes.POINTER(_Tensor)))
_compile = _fn("portc_compile", ctypes.c_int, _P, ctypes.POINTER(_CompileOptions), _P, ctypes.POINTER(_P))
_module_free = _fn("portc_module_free", None, _P)
_module_run = _fn("portc_module_run", ctypes.c_int, _P, _P, ctypes.POINTER(ctypes.POINTER(_Tensor)))
_module_explain = _fn("portc_module_explain", ctypes.c_void_p, _P, _P)
_target_count = _fn("portc_target_count", ctypes.c_int)
_target_name = _fn("portc_target_name", ctypes.c_char_p, ctypes.c_int)
_target_available = _fn("portc_target_available", ctypes.c_bool, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
_libc_free = ctypes.CDLL(None).free
_libc_free.argtypes = [ctypes.c_void_p]


def _check(status):
    if status != 0:
        raise Error(_last_error().decode(errors="replace"))


def version():
    """The library's version, "0.2.0"."""
    return _version().decode()


def targets():
    """{name: None when the target can run here, else why not}"""
    out = {}
    for i in range(_target_count()):
        why = ctypes.create_string_buffer(512)
        ok = _target_available(i, why, len(why))
        out[_target_name(i).decode()] = None if ok else why.value.decode(errors="replace")
    return out


def _to_tensor(a):
    a = np.ascontiguousarray(a)
    if a.dtype not in _CODES:
        raise TypeError("portc: arrays of %s are not supported (float32, float16, int32, int64, bool)" % a.dtype)
    if a.ndim > _MAX_RANK:
        raise ValueError("portc: rank %d is more than %d" % (a.ndim, _MAX_RANK))
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    t = _tensor_new(_CODES[a.dtype], a.ndim, shape)
    if not t:
        raise Error(_last_error().decode(errors="replace"))
    ctypes.memmove(t.contents.data, a.ctypes.data, a.nbytes)
    return t


def _from_tensor(t):
    c = t.contents
    shape = tuple(c.shape[i] for i in range(c.rank))
    n = int(np.prod(shape)) if shape else 1
    dt = np.dtype(np.uint16 if c.dtype == _BF16 else _DTYPES[c.dtype])
    a = np.frombuffer(ctypes.string_at(c.data, n * dt.itemsize), dtype=dt).reshape(shape).copy()
    if c.dtype == _BF16:  # numpy has no bfloat16: the upper half of a float32
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


class _Bindings:
    def __init__(self, graph, inputs, symbols, seed):
        self.ptr = _bindings_new(graph._ptr)
        if not self.ptr:
            raise Error(_last_error().decode(errors="replace"))
        try:
            for name, value in (symbols or {}).items():
                _check(_bindings_set_symbol(self.ptr, name.encode(), int(value)))
            for name, value in inputs.items():
                t = _to_tensor(value)
                try:
                    _check(_bindings_set(self.ptr, name.encode(), t))
                finally:
                    _tensor_free(t)
            if seed is not None:
                _bindings_set_seed(self.ptr, seed)
        except Exception:
            _bindings_free(self.ptr)
            raise

    def free(self):
        _bindings_free(self.ptr)


def _outputs(n, run):
    outs = (ctypes.POINTER(_Tensor) * max(n, 1))()
    status = run(outs)
    try:
        _check(status)
        return [_from_tensor(outs[i]) for i in range(n)]
    finally:
        for i in range(n):
            if outs[i]:
                _tensor_free(outs[i])


class Graph:
    """A tensor graph: load(path) for .onnx or .ptg files, parse(text) for .ptg text."""

    def __init__(self, ptr):
        self._ptr = ptr

    def __del__(self):
        if getattr(self, "_ptr", None):
            _graph_free(self._ptr)
            self._ptr = None

    @property
    def name(self):
        return _graph_name(self._ptr).decode()

    @property
    def inputs(self):
        return [_node_name(self._ptr, _graph_input(self._ptr, i)).decode() for i in range(_graph_input_count(self._ptr))]

    def autocast(self, dtype="f16"):
        """A mixed-precision copy, as torch.autocast: matmuls, convolutions and attention of float32
        operands compute in dtype ("f16" or "bf16"), their sums in float32, their results cast back
        to float32 under their own names (compiled, an addition of two such results adds in dtype, as
        torch.autocast's). Returns (graph, number of nodes converted)."""
        codes = {"f16": 1, "bf16": _BF16}
        if dtype not in codes:
            raise Error("autocast takes 'f16' or 'bf16', not %r" % (dtype,))
        g, n = _P(), ctypes.c_int(0)
        _check(_graph_autocast_copy(self._ptr, codes[dtype], ctypes.byref(g), ctypes.byref(n)))
        return Graph(g), n.value

    def compile(self, target="cpu", dynamic=False, mode="default", eager=False, fullgraph=False, symbols=None):
        """A Module for target ("cpu", "vulkan", "cuda", "hip", "vulkan:1", ...). Without dynamic,
        every symbol needs a value in symbols ({"N": 8}) and the module runs for those values only."""
        o = _CompileOptions(size=ctypes.sizeof(_CompileOptions), target=target.encode(), mode=_MODES[mode], dynamic=dynamic,
                            fullgraph=fullgraph, eager=eager)
        b = _Bindings(self, {}, symbols, None) if symbols else None
        m = _P()
        try:
            _check(_compile(self._ptr, ctypes.byref(o), b.ptr if b else None, ctypes.byref(m)))
        finally:
            if b:
                b.free()
        return Module(m, self)

    def reference(self, symbols=None, seed=None, **inputs):
        """The outputs computed by the float64 reference evaluator (floats come back as float64)."""
        b = _Bindings(self, inputs, symbols, seed)
        try:
            return _outputs(_graph_output_count(self._ptr), lambda outs: _reference_run(self._ptr, b.ptr, outs))
        finally:
            b.free()


class Module:
    """A graph compiled for one target; run it with numpy arrays named like the graph's inputs."""

    def __init__(self, ptr, graph):
        self._ptr, self.graph = ptr, graph

    def __del__(self):
        if getattr(self, "_ptr", None):
            _module_free(self._ptr)
            self._ptr = None

    def run(self, symbols=None, seed=None, **inputs):
        """The graph's outputs as numpy arrays, in order. Symbols bind from the inputs' shapes;
        parameters without data take values from seed."""
        b = _Bindings(self.graph, inputs, symbols, seed)
        try:
            return _outputs(_graph_output_count(self.graph._ptr), lambda outs: _module_run(self._ptr, b.ptr, outs))
        finally:
            b.free()

    def explain(self, symbols=None):
        """What portc explain prints: the kernels, what each fuses, reads and costs, and why it ends."""
        b = _Bindings(self.graph, {}, symbols, None) if symbols else None
        try:
            p = _module_explain(self._ptr, b.ptr if b else None)
        finally:
            if b:
                b.free()
        if not p:
            raise Error(_last_error().decode(errors="replace"))
        text = ctypes.string_at(p).decode()
        _libc_free(p)
        return text


def load(path):
    """A graph from a file: ONNX (.onnx) or portc's text format (.ptg)."""
    g = _P()
    _check(_graph_load(os.fspath(path).encode(), ctypes.byref(g)))
    return Graph(g)


def parse(text, source_name="<text>"):
    """A graph from .ptg text."""
    g = _P()
    _check(_graph_parse(text.encode(), source_name.encode(), ctypes.byref(g)))
    return Graph(g)
