"""PyTorch as the oracle for libtyc (pytest, run by ctest `tyc_parity`, label `parity`).

For every layer type (dense with each activation, conv2d with 'same'/'valid'/numeric padding and
strides, maxpool2d, flatten) and the softmax cross-entropy loss, tyc-oracle runs a libtyc session
from tyc's seeded initial weights; the same weights (init/weights.tyw through compiler/python/
tyw.py) go into the equivalent torch.nn module, which runs the same batches. Compared, each
within 1e-5 relative (max |tyc - torch| / max |torch| per tensor, fp32): the forward logits, the
loss of every step, the first step's gradients (eager mode), the weights after N Adam and N SGD
(momentum) steps in eager and compiled mode, and the logits of the trained model loaded back
from its saved weights.tyw into torch. Needs TYC_ORACLE (the tyc-oracle binary) in the
environment; the ctest wrapper skips (77) when torch is missing.
"""
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import tyw  # noqa: E402

torch = pytest.importorskip("torch")
ORACLE = os.environ.get("TYC_ORACLE", "")
TOL = 1e-5

CASES = {
    "dense-relu": ('{"input": 20, "classes": 5, "layers": ['
                   '{"type": "dense", "units": 16, "activation": "relu"},'
                   '{"type": "dense", "units": 5}]}', 20, 8),
    "dense-acts": ('{"input": 20, "classes": 5, "layers": ['
                   '{"type": "dense", "units": 12, "activation": "gelu"},'
                   '{"type": "dense", "units": 11, "activation": "tanh"},'
                   '{"type": "dense", "units": 10, "activation": "sigmoid"},'
                   '{"type": "dense", "units": 9, "activation": "none"},'
                   '{"type": "dense", "units": 5}]}', 20, 8),
    "conv-pool": ('{"input": [2, 8, 8], "classes": 4, "layers": ['
                  '{"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same", '
                  '"activation": "relu"},'
                  '{"type": "maxpool2d", "size": 2},'
                  '{"type": "conv2d", "filters": 4, "kernel": 3, "stride": 2, "padding": 1, '
                  '"activation": "tanh"},'
                  '{"type": "flatten"}, {"type": "dense", "units": 4}]}', 128, 6),
    "conv-valid": ('{"input": [9, 9], "classes": 3, "layers": ['
                   '{"type": "conv2d", "filters": 5, "kernel": 2, "activation": "sigmoid"},'
                   '{"type": "maxpool2d", "size": 3},'
                   '{"type": "conv2d", "filters": 2, "kernel": 1, "activation": "gelu"},'
                   '{"type": "dense", "units": 3}]}', 81, 5),
    "mlp": ("mlp", 784, 16),
    "cnn": ("cnn", 784, 4),
}


def spec_of(name):
    import json
    src = CASES[name][0]
    return tyw.BUILTIN[src] if src in tyw.BUILTIN else json.loads(src)


def relerr(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = np.max(np.abs(b))
    return float(np.max(np.abs(a - b)) / (scale if scale > 0 else 1.0))


def close(what, a, b):
    e = relerr(a, b)
    assert e <= TOL, f"{what}: relative error {e:.3g} > {TOL}"


STEPS = 5
EPS = float(os.environ.get("TYC_PARITY_EPS", "1e-8"))
NB = 2  # distinct batches, used in turn


def run_oracle(tmp, name, opt, mode, eps=None):
    src, inp, batch = CASES[name]
    classes = spec_of(name)["classes"]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = rng.uniform(-1, 1, size=(NB * batch, inp)).astype("<f4")
    y = rng.integers(0, classes, size=NB * batch).astype("<i4")
    d = os.path.join(tmp, f"{name}-{opt}-{mode}")
    model = src
    if not src.startswith(("mlp", "cnn")):
        model = os.path.join(tmp, f"{name}.json")
        with open(model, "w") as f:
            f.write(src)
    x.tofile(os.path.join(tmp, f"{name}.x"))
    y.tofile(os.path.join(tmp, f"{name}.y"))
    lr = "0.001" if opt == "adam" else "0.05"
    subprocess.run([ORACLE, model, d, "--x", os.path.join(tmp, f"{name}.x"),
                    "--y", os.path.join(tmp, f"{name}.y"), "--batch", str(batch), "--steps",
                    str(STEPS), "--optimizer", opt, "--lr", lr, "--momentum", "0.9", "--mode",
                    mode, "--eps", str(eps or EPS)], check=True, timeout=60)
    return d, x, y, batch, float(lr)


def torch_run(name, d, x, y, batch, opt, lr, eps=None):
    spec = spec_of(name)
    m = tyw.load_into(tyw.build_module(spec), tyw.read_tyw(os.path.join(d, "init", "weights.tyw")))
    shape = tyw.input_shape(spec, batch)
    xs = [torch.from_numpy(x[i * batch:(i + 1) * batch]).reshape(shape) for i in range(NB)]
    ys = [torch.from_numpy(y[i * batch:(i + 1) * batch]).long() for i in range(NB)]
    with torch.no_grad():
        logits0 = m(xs[0]).numpy()
    o = (torch.optim.Adam(m.parameters(), lr=lr, betas=(0.9, 0.999), eps=eps or EPS) if opt == "adam"
         else torch.optim.SGD(m.parameters(), lr=lr, momentum=0.9))
    lossf = torch.nn.CrossEntropyLoss()
    losses, grads = [], None
    for k in range(STEPS):
        o.zero_grad()
        loss = lossf(m(xs[k % NB]), ys[k % NB])
        loss.backward()
        if k == 0:
            grads = tyw.to_tyc(m, grads=True)
        o.step()
        losses.append(loss.item())
    with torch.no_grad():
        logits1 = m(xs[0]).numpy()
    return m, logits0, logits1, losses, grads, xs


@pytest.fixture(scope="module")
def tmp():
    if not ORACLE or not os.access(ORACLE, os.X_OK):
        pytest.skip("TYC_ORACLE is not set to the tyc-oracle binary")
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as t:
        yield t


@pytest.mark.parametrize("opt", ["adam", "sgd"])
@pytest.mark.parametrize("name", list(CASES))
def test_parity(tmp, name, opt):
    ref = None
    for mode in ("eager", "compiled"):
        d, x, y, batch, lr = run_oracle(tmp, name, opt, mode)
        if ref is None:
            ref = torch_run(name, d, x, y, batch, opt, lr)
        m, logits0, logits1, losses, grads, xs = ref
        classes = logits0.shape[1]
        close(f"{mode} forward logits", np.fromfile(os.path.join(d, "logits0.bin"), "<f4")
              .reshape(batch, classes), logits0)
        tl = np.fromfile(os.path.join(d, "loss.bin"), "<f4")
        for k in range(STEPS):
            close(f"{mode} loss of step {k + 1}", tl[k], losses[k])
        if mode == "eager":
            got = dict(tyw.read_tyw(os.path.join(d, "grads.tyw")))
            for gname, g in grads:
                close(f"gradient {gname}", got[gname], g)
        final = dict(tyw.read_tyw(os.path.join(d, "final", "weights.tyw")))
        for pname, p in tyw.to_tyc(m):
            close(f"{mode} {pname} after {STEPS} {opt} steps", final[pname], p)
        close(f"{mode} logits after training", np.fromfile(os.path.join(d, "logits1.bin"), "<f4")
              .reshape(batch, classes), logits1)
        # the saved model loads into the equivalent torch.nn module and predicts the same
        loaded = tyw.load_model_dir(os.path.join(d, "final"))
        with torch.no_grad():
            close(f"{mode} saved model in torch", loaded(xs[0]).numpy(), logits1)


def test_weights_roundtrip(tmp):
    """tyw.write_tyw writes what libtyc reads (--init) and tyc writes it back unchanged."""
    name = "dense-relu"
    d, x, y, batch, lr = run_oracle(tmp, name, "sgd", "compiled")
    t = tyw.read_tyw(os.path.join(d, "init", "weights.tyw"))
    t2 = [(n, (a * 0.5 + 0.01).astype("<f4")) for n, a in t]
    w = os.path.join(tmp, "mine.tyw")
    tyw.write_tyw(w, t2)
    d2 = os.path.join(tmp, "roundtrip")
    model = os.path.join(tmp, f"{name}.json")
    subprocess.run([ORACLE, model, d2, "--x", os.path.join(tmp, f"{name}.x"), "--y",
                    os.path.join(tmp, f"{name}.y"), "--batch", str(batch), "--steps", "1",
                    "--init", w], check=True, timeout=60)
    back = dict(tyw.read_tyw(os.path.join(d2, "init", "weights.tyw")))
    for n, a in t2:
        assert np.array_equal(back[n], a), n
