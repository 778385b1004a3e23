#!/usr/bin/env python3
"""PyTorch baseline for the libtyc CUDA benchmark (run only where a GPU and PyTorch exist).

Same model and step as `tyc bench --model mlp --target cuda`: MLP 784-256-10 with ReLU, softmax
cross-entropy, Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8), fp32, synthetic deterministic data.
Prints median step time (CUDA-synchronised) for eager and torch.compile at each batch size.
Usage: torch_mlp.py [--batch 64,512] [--steps 200] [--warmup 20] [--hidden 256]
Not run on this project's CI (no GPU); written for a device session.
"""
import argparse
import statistics
import time

import torch


def bench(step, steps, warmup):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="64,512")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=256)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 like libtyc
    dev = torch.device("cuda")
    for b in [int(x) for x in a.batch.split(",")]:
        g = torch.Generator(device="cpu").manual_seed(12345)
        x = torch.rand(b, 784, generator=g).to(dev)
        y = (torch.arange(b) % 10).to(dev)
        row = [f"batch={b}"]
        for mode in ("eager", "compile"):
            torch.manual_seed(42)
            model = torch.nn.Sequential(torch.nn.Linear(784, a.hidden), torch.nn.ReLU(),
                                        torch.nn.Linear(a.hidden, 10)).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
            loss_fn = torch.nn.CrossEntropyLoss()

            def step():
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()

            fn = torch.compile(step) if mode == "compile" else step
            row.append(f"torch_{mode}_ms={bench(fn, a.steps, a.warmup):.3f}")
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main()
