#!/usr/bin/python3
"""PyTorch's side of the training benchmark: the same model (scripts/mhascope_model.py), the same
initial parameters (a checkpoint from `mhascope train --steps 0 --save init.safetensors`), the same
induction batches (mhascope's SplitMix64 generator re-implemented below) and the same AdamW.

    mhascope train --steps 0 --save /tmp/init.safetensors [sizes...]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        /usr/bin/python3 scripts/bench_train_torch.py /tmp/init.safetensors --steps 300

Prints the loss of the first batch (to compare with mhascope's), the median and mean time per step
(forward + backward + AdamW; the batches are generated before timing) and steps per second.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mhascope_model  # noqa: E402

M = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)


def induction_batch(seed, step, batch, vocab, seq, kmin, kmax):
    """core/train/tasks.cpp's Task::batch for the induction task."""
    rng = SplitMix64(SplitMix64(((seed * 0x9E3779B97F4A7C15) & M) ^ ((step + 0x5461736B5374) & M)).next())
    tokens, targets = [], []
    for _ in range(batch):
        k = kmin + rng.next() % (kmax - kmin + 1)
        pool = list(range(vocab))
        for i in range(k):
            j = i + rng.next() % (vocab - i)
            pool[i], pool[j] = pool[j], pool[i]
        s = [pool[t % k] for t in range(seq)]
        tokens.append(s)
        # scored where the position's own token occurred before (t >= k), as the C++ task
        targets.append([s[t + 1] if k <= t <= seq - 2 else -1 for t in range(seq)])
    return torch.tensor(tokens), torch.tensor(targets)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("init")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, meta = mhascope_model.load(args.init, torch.float32)
    vocab, seq, seed = int(meta["vocab"]), int(meta["seq"]), int(meta["seed"])
    kmin, kmax = int(meta["period_min"]), int(meta["period_max"])
    batches = [induction_batch(seed, n, args.batch, vocab, seq, kmin, kmax) for n in range(args.steps)]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    times, first = [], None
    for tokens, targets in batches:
        t0 = time.perf_counter()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if first is None:
            first = loss.item()
    times.sort()
    med = times[len(times) // 2]
    mean = sum(times) / len(times)
    print("torch %s: first-batch loss %.6f, last loss %.4f, median %.3f ms/step, mean %.3f ms/step, %.1f steps/s"
          % (torch.__version__, first, loss.item(), med * 1e3, mean * 1e3, 1.0 / med))


if __name__ == "__main__":
    main()
