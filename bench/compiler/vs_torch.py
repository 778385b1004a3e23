#!/usr/bin/python3
"""vs_torch.py - libtyc's CPU back end against PyTorch eager, measured in the same run.

usage: vs_torch.py [BUILD_DIR] [--steps 40] [--warmup 5] [--threads 1,N] [--rows mlp:64,...]
                   [--rounds 3]

For every row (model, batch) and thread count (1 and all cores by default): `tyc bench --modes
compiled` (median wall time of --steps training steps, Adam lr 1e-3, fp32, synthetic data) and
PyTorch eager running the same model and step (torch.nn built from the same spec by
compiler/python/tyw.py, CrossEntropyLoss, torch.optim.Adam, zero_grad(set_to_none=True)) in a
child process started with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=T and torch.set_num_threads(T)
(without the OpenBLAS variable its pthread pool uses every core whatever torch's setting).
The whole comparison runs --rounds times, tyc and torch alternating, and each figure is the
lowest median of the rounds (the machine may be shared: the load average is printed).
Prints the BLAS PyTorch loaded, then one row per (model, batch, threads): both medians, the
ratio torch/tyc (> 1: tyc faster), and peak memory: tyc's planned bytes (parameters, Adam
state, the arena, kernel scratch) against torch's peak RSS growth from model creation to the
end of the timed steps (VmHWM after /proc/self/clear_refs). At 1 thread both also report the median CPU time of
the stepping thread (tyc bench's cpu_ms, torch: time.thread_time(); torch and OpenBLAS then run
in the calling thread): on a shared machine that figure moves less with the load than wall
time. The transformer row (gpt-tiny,
token ids and per-position labels) uses the PyTorch model of bench/compiler/torch_gpt.py (same
shapes, randomly initialised).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "compiler", "python"))

DEFAULT_ROWS = "mlp:64,mlp:512,mlp-large:128,cnn:32,cnn:128,gpt-tiny:8"


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def blas_name():
    """The BLAS shared object this process mapped, and OpenBLAS's own config string."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if re.search(r"lib(open)?blas|libmkl|libblis", os.path.basename(p)):
                libs.add(os.path.realpath(p))
    cfg = ""
    for p in sorted(libs):
        if "openblas" in p:
            try:
                import ctypes
                lib = ctypes.CDLL(p)
                lib.openblas_get_config.restype = ctypes.c_char_p
                cfg = lib.openblas_get_config().decode()
                lib.openblas_get_num_threads.restype = ctypes.c_int
                cfg += f" threads={lib.openblas_get_num_threads()}"
            except (OSError, AttributeError):
                pass
    return ", ".join(sorted(libs)) or "none found in /proc/self/maps", cfg


def gpt_model(torch):
    """bench/compiler/torch_gpt.py's GPT with gpt-tiny's shapes, randomly initialised."""
    sys.path.insert(0, HERE)
    import torch_gpt as tg
    V, T, D, L, M = tg.V, tg.T, tg.D, tg.L, tg.M
    shapes = {"wte.weight": [V, D], "wpe.weight": [T, D], "lnf.weight": [D], "lnf.bias": [D],
              "head.weight": [D, V], "head.bias": [V]}
    for i in range(L):
        for k, v in {"ln1.weight": [D], "ln1.bias": [D], "ln2.weight": [D], "ln2.bias": [D],
                     "attn.qkv.weight": [D, 3 * D], "attn.qkv.bias": [3 * D],
                     "attn.proj.weight": [D, D], "attn.proj.bias": [D],
                     "mlp.fc.weight": [D, M], "mlp.fc.bias": [M],
                     "mlp.proj.weight": [M, D], "mlp.proj.bias": [D]}.items():
            shapes[f"h{i}.{k}"] = v
    w = {k: (torch.ones(v) if ".ln" in k or k.startswith("ln") and k.endswith("weight")
             else torch.randn(v) * 0.02) for k, v in shapes.items()}
    return tg.GPT(w), V, T


def torch_worker(a):
    import torch
    import tyw
    torch.set_num_threads(a.threads)
    out = []
    for row in a.rows.split(","):
        name, batch = row.split(":")
        batch = int(batch)
        g = torch.Generator().manual_seed(12345)
        if name == "gpt-tiny":
            base = rss_kib("VmRSS")
            model, V, T = gpt_model(torch)
            x = torch.randint(0, V, (batch, T), generator=g)
            y = torch.randint(0, V, (batch, T), generator=g)

            def lossf(logits, yy):
                return torch.nn.functional.cross_entropy(logits.reshape(-1, V), yy.reshape(-1))
        else:
            spec = tyw.BUILTIN[name]
            x = torch.rand(tyw.input_shape(spec, batch), generator=g)
            y = torch.arange(batch) % spec["classes"]
            lossf = torch.nn.CrossEntropyLoss()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        if name != "gpt-tiny":
            base = rss_kib("VmRSS")
            torch.manual_seed(42)
            model = tyw.build_module(spec)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()

        for _ in range(a.warmup):
            step()
        ts, cs = [], []
        for _ in range(a.steps):
            t0, c0 = time.perf_counter(), time.thread_time()
            step()
            ts.append(time.perf_counter() - t0)
            cs.append(time.thread_time() - c0)
        peak = (rss_kib("VmHWM") - base) * 1024
        out.append({"model": name, "batch": batch, "ms": statistics.median(ts) * 1e3,
                    "cpu_ms": statistics.median(cs) * 1e3, "peak_bytes": peak})
        del model, opt
    libs, cfg = blas_name()
    print(json.dumps({"rows": out, "torch": torch.__version__, "blas": libs, "blas_config": cfg,
                      "torch_threads": torch.get_num_threads()}))


def tyc_row(tyc, name, batch, threads, a):
    r = subprocess.run([tyc, "bench", "--model", name, "--batch", str(batch), "--threads",
                        str(threads), "--modes", "compiled", "--steps", str(a.steps), "--warmup",
                        str(a.warmup)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return None
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 9 and f[2] == "compiled":
            return {"ms": float(f[3]), "cpu_ms": float(f[4]), "peak_bytes": int(f[8]),
                    "threads": int(f[1])}
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}")
    ap.add_argument("--rows", default=DEFAULT_ROWS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        a.threads = int(a.threads)
        return torch_worker(a)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("vs_torch: python3-torch is not installed: skipped")
        return 77
    tyc = os.path.join(a.build, "bin", "tyc")
    if not os.access(tyc, os.X_OK):
        print(f"vs_torch: {tyc} not built (cmake --build BUILD --target tyc-cli)", file=sys.stderr)
        return 1
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    isa = subprocess.run([tyc, "bench", "--model", "mlp-small", "--batch", "1", "--steps", "1",
                          "--warmup", "0", "--modes", "compiled"], capture_output=True, text=True,
                         env=dict(os.environ, TYC_LOG="2")).stderr
    m = re.search(r"gemm=(\w+)", isa)
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} nproc={os.cpu_count()} "
          f"load={load} tyc_gemm={m.group(1) if m else '?'} steps={a.steps} warmup={a.warmup}")
    best = {}
    header = None
    for _ in range(a.rounds):
        for t, row in [(int(v), r) for v in a.threads.split(",") for r in a.rows.split(",")]:
            # one process per row: its peak RSS growth is that row's alone
            env = dict(os.environ, OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t),
                       MKL_NUM_THREADS=str(t))
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                                "--threads", str(t), "--rows", row, "--steps", str(a.steps),
                                "--warmup", str(a.warmup)], capture_output=True, text=True,
                               env=env, timeout=900)
            if r.returncode != 0:
                print(r.stderr, file=sys.stderr)
                return 1
            w = json.loads(r.stdout.strip().splitlines()[-1])
            if header is None:
                header = w
                print(f"# torch {w['torch']} eager; BLAS: {w['blas']}; {w['blas_config']}")
            for tr in w["rows"]:
                key = (tr["model"], tr["batch"], t)
                ty = tyc_row(tyc, tr["model"], tr["batch"], t, a)
                old = best.get(key)
                if old is None:
                    best[key] = [tr, ty]
                    continue
                if tr["ms"] < old[0]["ms"]:
                    old[0] = dict(tr, cpu_ms=min(tr["cpu_ms"], old[0]["cpu_ms"]))
                else:
                    old[0]["cpu_ms"] = min(tr["cpu_ms"], old[0]["cpu_ms"])
                if ty is not None and (old[1] is None or ty["ms"] < old[1]["ms"]):
                    old[1] = dict(ty, cpu_ms=min(ty["cpu_ms"], old[1]["cpu_ms"])) if old[1] else ty
                elif ty is not None:
                    old[1]["cpu_ms"] = min(ty["cpu_ms"], old[1]["cpu_ms"])
    rows = [(v[0], v[1], k[2]) for k, v in best.items()]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"# load at the end: {load}; figures: the lowest median of {a.rounds} rounds")
    print(f"{'model':10} {'batch':>5} {'threads':>7} {'tyc_ms':>9} {'torch_ms':>9} "
          f"{'speedup':>8} {'tyc_peak_MiB':>12} {'torch_peak_MiB':>14} {'mem_ratio':>9} "
          f"{'tyc_cpu':>8} {'torch_cpu':>9} {'cpu_speedup':>11}")
    for tr, ty, t in rows:
        if ty is None:
            print(f"{tr['model']:10} {tr['batch']:5d} {t:7d}  tyc bench failed")
            continue
        cpu = (f"{ty['cpu_ms']:8.3f} {tr['cpu_ms']:9.3f} {tr['cpu_ms'] / ty['cpu_ms']:10.2f}x"
               if t == 1 else f"{'-':>8} {'-':>9} {'-':>11}")
        print(f"{tr['model']:10} {tr['batch']:5d} {t:7d} {ty['ms']:9.3f} {tr['ms']:9.3f} "
              f"{tr['ms'] / ty['ms']:7.2f}x {ty['peak_bytes'] / 2**20:12.2f} "
              f"{tr['peak_bytes'] / 2**20:14.2f} {ty['peak_bytes'] / max(tr['peak_bytes'], 1):8.2f}x "
              f"{cpu}")
    print("speedup = torch_ms / tyc_ms (target >= 1.5); mem_ratio = tyc planned peak / torch "
          "peak RSS growth (target <= 0.6); at 1 thread also the median thread CPU time per step "
          "(less sensitive to a loaded machine than wall time; both run in one thread there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
