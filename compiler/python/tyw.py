"""tyw.py - read and write libtyc weights files (weights.tyw) and build the equivalent torch.nn
module from a tyc model spec (model.json), for the PyTorch parity tests and the benchmark.

weights.tyw: b"TYW1", u32 count, then per tensor: u32 name length, name, u32 ndim, u32 dims,
float32 data (little endian, row-major). Dense weights are [in, out] (torch.nn.Linear keeps
[out, in]); conv2d weights are [F, C, K, K] like torch. Supported layers: dense, conv2d,
maxpool2d, flatten with activations relu, gelu (tanh approximation), tanh, sigmoid, none.
Usage as a script: tyw.py MODEL_DIR  (loads model.json + weights.tyw into torch, prints the module)
"""
import json
import struct
import sys

import numpy as np


_MLP = lambda hidden: {"input": [28, 28], "classes": 10, "layers": (  # noqa: E731
    [{"type": "dense", "units": h, "activation": "relu"} for h in hidden] +
    [{"type": "dense", "units": 10}])}
# libtyc's built-in models (model.c), as specs
BUILTIN = {
    "mlp": _MLP([256]),
    "mlp-small": _MLP([64]),
    "mlp-large": _MLP([1024, 1024]),
    "cnn": {"input": [1, 28, 28], "classes": 10, "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same", "activation": "relu"},
        {"type": "maxpool2d", "size": 2},
        {"type": "conv2d", "filters": 16, "kernel": 3, "padding": "same", "activation": "relu"},
        {"type": "maxpool2d", "size": 2}, {"type": "flatten"}, {"type": "dense", "units": 10}]},
}


def input_shape(spec, batch):
    """The torch input shape of a batch: [N, C, H, W] for convolutional models, else [N, F]."""
    dims = spec["input"] if isinstance(spec["input"], list) else [spec["input"]]
    if spec["layers"][0]["type"] in ("conv2d", "maxpool2d"):
        return [batch] + [1] * (3 - len(dims)) + list(dims)
    return [batch, int(np.prod(dims))]


def read_tyw(path):
    """Returns an ordered list of (name, numpy float32 array)."""
    out = []
    with open(path, "rb") as f:
        if f.read(4) != b"TYW1":
            raise ValueError(f"{path}: not a TYW1 weights file")
        (n,) = struct.unpack("<I", f.read(4))
        for _ in range(n):
            (ln,) = struct.unpack("<I", f.read(4))
            name = f.read(ln).decode()
            (nd,) = struct.unpack("<I", f.read(4))
            dims = struct.unpack(f"<{nd}I", f.read(4 * nd))
            cnt = int(np.prod(dims)) if nd else 1
            data = np.frombuffer(f.read(4 * cnt), dtype="<f4").reshape(dims).copy()
            out.append((name, data))
    return out


def write_tyw(path, tensors):
    """tensors: list of (name, numpy array)."""
    with open(path, "wb") as f:
        f.write(b"TYW1" + struct.pack("<I", len(tensors)))
        for name, a in tensors:
            a = np.ascontiguousarray(a, dtype="<f4")
            nb = name.encode()
            f.write(struct.pack("<I", len(nb)) + nb + struct.pack("<I", a.ndim))
            f.write(struct.pack(f"<{a.ndim}I", *a.shape))
            f.write(a.tobytes())


def _act(torch, name):
    nn = torch.nn
    if name in (None, "none", "linear"):
        return None
    return {"relu": nn.ReLU(), "gelu": nn.GELU(approximate="tanh"), "tanh": nn.Tanh(),
            "sigmoid": nn.Sigmoid()}[name]


def build_module(spec):
    """torch.nn.Sequential equal to the tyc spec (dict). Parameter names map to tyc's through
    tyc_names(module). Input: [N, C, H, W] for convolutional models, else [N, features]."""
    import torch
    nn = torch.nn
    dims = spec["input"] if isinstance(spec["input"], list) else [spec["input"]]
    layers = spec["layers"]
    spatial = layers[0]["type"] in ("conv2d", "maxpool2d")
    if spatial:
        c, h, w = (dims if len(dims) == 3 else [1] + dims)
        flat = c * h * w
    else:
        flat = int(np.prod(dims))
    mods, names = [], []
    is4d = spatial
    for i, l in enumerate(layers):
        t = l["type"]
        if t in ("dense", "flatten") and is4d:
            mods.append(nn.Flatten())
            is4d = False
        if t == "dense":
            mods.append(nn.Linear(flat, l["units"]))
            names.append((len(mods) - 1, f"dense{i}"))
            flat = l["units"]
        elif t == "conv2d":
            k, s = l["kernel"], l.get("stride", 1)
            p = l.get("padding", "valid")
            pad = k // 2 if p == "same" else (0 if p == "valid" else int(p))
            mods.append(nn.Conv2d(c, l["filters"], k, stride=s, padding=pad))
            names.append((len(mods) - 1, f"conv{i}"))
            h = (h + 2 * pad - k) // s + 1
            w = (w + 2 * pad - k) // s + 1
            c = l["filters"]
            flat = c * h * w
        elif t == "maxpool2d":
            z = l.get("size", 2)
            mods.append(nn.MaxPool2d(z))
            h, w = h // z, w // z
            flat = c * h * w
        a = _act(torch, l.get("activation"))
        if a is not None:
            mods.append(a)
    m = nn.Sequential(*mods)
    m.tyc_names = names
    return m


def param_pairs(module):
    """[(tyc_name, torch parameter, transpose)] in tyc's parameter order."""
    out = []
    for idx, base in module.tyc_names:
        mod = module[idx]
        dense = base.startswith("dense")
        out.append((base + ".weight", mod.weight, dense))
        out.append((base + ".bias", mod.bias, False))
    return out


def load_into(module, tensors):
    """Copies tyc tensors (list or dict name -> array) into the module's parameters."""
    import torch
    d = dict(tensors)
    with torch.no_grad():
        for name, p, tr in param_pairs(module):
            a = d[name]
            a = a.T if tr else a
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError(f"{name}: shape {a.shape} does not match {tuple(p.shape)}")
            p.copy_(torch.from_numpy(np.ascontiguousarray(a)))
    return module


def to_tyc(module, grads=False):
    """[(tyc_name, numpy array in tyc layout)] of the parameters (or their .grad)."""
    out = []
    for name, p, tr in param_pairs(module):
        t = p.grad if grads else p
        a = t.detach().cpu().numpy().copy()
        out.append((name, a.T if tr else a))
    return out


def load_model_dir(d):
    """A saved tyc model directory (model.json + weights.tyw) as a torch module."""
    with open(f"{d}/model.json") as f:
        spec = json.load(f)
    return load_into(build_module(spec), read_tyw(f"{d}/weights.tyw"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: tyw.py MODEL_DIR", file=sys.stderr)
        sys.exit(2)
    print(load_model_dir(sys.argv[1]))
