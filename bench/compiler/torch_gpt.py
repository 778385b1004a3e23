#!/usr/bin/python3
"""torch_gpt.py - gpt-tiny's loss curve in tyc against PyTorch: the same shape, the same initial
weights (read from tyc's weights.tyw), the same data order, the same Adam steps.

usage: torch_gpt.py LM_CURVE_BIN TEXT [--steps N] [--batch B] [--lr LR] [--tol 0.02]
                    [--device cpu|cuda] [--tyc-target cpu|cuda] [--precision fp32|bf16|fp16]

Runs LM_CURVE_BIN (tyc-lm-curve) for the tyc losses and the initial weights, then PyTorch eager
(fp32, torch.set_num_threads(1) on the CPU) over the same batches. Prints both curves and the
relative gap of the mean loss over the last 5 steps; exits 1 when the gap exceeds --tol,
77 when torch is missing. Model: pre-LN GPT (token + positional embedding, 2 blocks of 4-head
causal self-attention and a tanh-GELU MLP, final layer norm, linear LM head), vocab 128,
context 64, width 128.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_gpt: python3-torch is not installed: skipped")
    sys.exit(77)

V, T, D, H, L, M = 128, 64, 128, 4, 2, 512


def read_tyw(path):
    out = {}
    with open(path, "rb") as f:
        assert f.read(4) == b"TYW1"
        (n,) = struct.unpack("<I", f.read(4))
        for _ in range(n):
            (ln,) = struct.unpack("<I", f.read(4))
            name = f.read(ln).decode()
            (nd,) = struct.unpack("<I", f.read(4))
            dims = struct.unpack("<%dI" % nd, f.read(4 * nd))
            cnt = 1
            for d in dims:
                cnt *= d
            data = struct.unpack("<%df" % cnt, f.read(4 * cnt))
            out[name] = torch.tensor(data, dtype=torch.float32).reshape(dims)
    return out


def windows(text_path):
    with open(text_path, "rb") as f:
        buf = bytearray(f.read())
    for i, b in enumerate(buf):
        if b >= 128:
            buf[i] = ord("?")
    n = (len(buf) - 1) // T
    data = torch.tensor(list(buf[: n * T + 1]), dtype=torch.long)
    x = torch.stack([data[i * T:(i + 1) * T] for i in range(n)])
    y = torch.stack([data[i * T + 1:(i + 1) * T + 1] for i in range(n)])
    return x, y


class GPT(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        # tyc stores dense weights [in, out]; torch.nn.Linear keeps [out, in]
        self.p = torch.nn.ParameterDict()
        for k, v in w.items():
            self.p[k.replace(".", "_")] = torch.nn.Parameter(v.clone())

    def g(self, name):
        return self.p[name.replace(".", "_")]

    def forward(self, idx):
        B = idx.shape[0]
        pos = torch.arange(T, device=idx.device)
        x = self.g("wte.weight")[idx] + self.g("wpe.weight")[pos][None]
        mask = torch.ones(T, T, device=idx.device).tril() == 0
        for l in range(L):
            h = F.layer_norm(x, (D,), self.g("h%d.ln1.weight" % l), self.g("h%d.ln1.bias" % l), 1e-5)
            qkv = h @ self.g("h%d.attn.qkv.weight" % l) + self.g("h%d.attn.qkv.bias" % l)
            q, k, v = qkv.split(D, dim=2)
            q = q.view(B, T, H, D // H).transpose(1, 2)
            k = k.view(B, T, H, D // H).transpose(1, 2)
            v = v.view(B, T, H, D // H).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (D // H) ** 0.5)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            a = (att @ v).transpose(1, 2).reshape(B, T, D)
            a = a @ self.g("h%d.attn.proj.weight" % l) + self.g("h%d.attn.proj.bias" % l)
            x = x + a
            h = F.layer_norm(x, (D,), self.g("h%d.ln2.weight" % l), self.g("h%d.ln2.bias" % l), 1e-5)
            h = F.gelu(h @ self.g("h%d.mlp.fc.weight" % l) + self.g("h%d.mlp.fc.bias" % l),
                       approximate="tanh")
            x = x + h @ self.g("h%d.mlp.proj.weight" % l) + self.g("h%d.mlp.proj.bias" % l)
        x = F.layer_norm(x, (D,), self.g("lnf.weight"), self.g("lnf.bias"), 1e-5)
        return x @ self.g("head.weight") + self.g("head.bias")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lm_curve")
    ap.add_argument("text")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tol", type=float, default=0.02)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tyc-target", default="cpu")
    ap.add_argument("--precision", default="fp32")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_gpt: torch has no CUDA here: skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        run = subprocess.run([a.lm_curve, "gpt-tiny", a.text, str(a.steps), str(a.batch),
                              repr(a.lr), "--init", tmp, "--target", a.tyc_target,
                              "--precision", a.precision],
                             check=True, capture_output=True, text=True)
        out = run.stdout
        tyc_line = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
        t_tyc = time.time() - t0
        tyc = [float(s) for s in out.split()]
        w = read_tyw(os.path.join(tmp, "weights.tyw"))
    torch.manual_seed(0)
    if a.device == "cpu":
        torch.set_num_threads(1)
    dev = torch.device(a.device)
    model = GPT(w).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    xs, ys = windows(a.text)
    n = xs.shape[0]
    ref = []
    times = []
    t0 = time.time()
    for k in range(a.steps):
        ts = time.perf_counter()
        rows = [(k * a.batch + r) % n for r in range(a.batch)]
        x, y = xs[rows].to(dev), ys[rows].to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref.append(loss.item())  # .item() synchronises
        times.append((time.perf_counter() - ts) * 1e3)
    t_torch = time.time() - t0
    med = sorted(times[3:])[(len(times) - 3) // 2] if len(times) > 4 else 0.0
    peak = torch.cuda.max_memory_allocated() if a.device == "cuda" else 0
    print("torch: device=%s threads=%d median_step_ms=%.3f peak_device_bytes=%d"
          % (a.device, torch.get_num_threads(), med, peak))
    if tyc_line:
        print(tyc_line)
    print("step  tyc       torch")
    for k in range(a.steps):
        if k < 3 or k % 10 == 9 or k == a.steps - 1:
            print("%4d  %.5f  %.5f" % (k + 1, tyc[k], ref[k]))
    last_t = sum(tyc[-5:]) / 5
    last_r = sum(ref[-5:]) / 5
    gap = abs(last_t - last_r) / last_r
    print("gpt-tiny %d steps batch %d lr %g: mean loss of the last 5 steps tyc %.4f torch %.4f "
          "gap %.2f%% (tolerance %.0f%%); first step %.5f vs %.5f; wall tyc %.1f s torch %.1f s"
          % (a.steps, a.batch, a.lr, last_t, last_r, 100 * gap, 100 * a.tol, tyc[0], ref[0],
             t_tyc, t_torch))
    first_tol = 1e-3 if a.precision == "fp32" else 2e-2
    if len(tyc) != a.steps or gap > a.tol or abs(tyc[0] - ref[0]) > first_tol * ref[0]:
        print("torch_gpt: FAIL")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
