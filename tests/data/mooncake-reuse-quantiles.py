#!/usr/bin/env python3
"""The reuse-interval quantiles and reuse share of a Mooncake FAST'25 trace, for rackplan's
--reuse-interval CSV (tests/data/mooncake-*-reuse.csv; test_kvcache.c, "published").

Usage: mooncake-reuse-quantiles.py TRACE.jsonl [--lru TOKENS...] [--che TOKENS...]

A trace (github.com/kvcache-ai/Mooncake, FAST25-release/traces/*_trace.jsonl) has a request a
line: timestamp (ms), input_length, output_length and hash_ids, the prompt's 512-token blocks as
prefix hashes (a block id seen before is a reusable prefix block). Each block of a prompt that was
seen before is a reuse: its interval is the time since that block was last used (its writing or
its last hit), weighted by its tokens (512, the last block of a prompt input_length - 512 (n - 1)).
Printed: the share F of prompt tokens whose block was seen before (the hit of an infinite cache),
the prompt tokens a second over the trace, the quantiles of the interval, and with --lru the hit
of an exact LRU cache of that many tokens (Figure 9 of the paper replayed), as a check; with --che
the hit rackplan's model gives a cache of that many tokens with the trace's own intervals instead of
the quantiles (kvcache.h: the residency R where the distinct tokens touched in R seconds, the new
tokens a second times R plus each reuse's min(interval, R) over the trace's span, fill it), to
tell the model's error from the quantiles' interpolation.
"""
import json
import sys
from collections import OrderedDict

BLOCK = 512


def blocks(request):
    n = len(request["hash_ids"])
    for i, h in enumerate(request["hash_ids"]):
        yield h, BLOCK if i < n - 1 else request["input_length"] - BLOCK * (n - 1)


def numbers_after(flag):
    """The numbers after `flag` on the command line, up to the next option."""
    rest = sys.argv[sys.argv.index(flag) + 1:]
    end = next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))
    return [float(a) for a in rest[:end]]


def main():
    requests = [json.loads(line) for line in open(sys.argv[1])]
    last, intervals, total = {}, [], 0
    for r in requests:
        t = r["timestamp"] / 1000.0
        for h, tokens in blocks(r):
            total += tokens
            if h in last:
                intervals.append((t - last[h], tokens))
            last[h] = t
    seconds = requests[-1]["timestamp"] / 1000.0
    reused = sum(k for _, k in intervals)
    print(f"# {len(requests)} requests over {seconds:.0f} s: {total} prompt tokens, {total / seconds:.1f} a second")
    print(f"# reuse share F = {reused} / {total} = {reused / total:.4f}")
    intervals.sort()
    quantiles = [q / 20 for q in range(1, 20)] + [0.99, 1.0]
    print("quantile,seconds")
    seen, j = 0, 0
    for s, k in intervals:
        seen += k
        while j < len(quantiles) and seen >= quantiles[j] * reused - 1e-6:
            print(f"{quantiles[j]:g},{s:.3f}")
            j += 1
    if "--lru" in sys.argv:
        for capacity in numbers_after("--lru"):
            cache, used, hit = OrderedDict(), 0, 0
            for r in requests:
                for h, tokens in blocks(r):
                    if h in cache:
                        hit += tokens
                        cache.move_to_end(h)
                    else:
                        cache[h] = tokens
                        used += tokens
                        while used > capacity:
                            used -= cache.popitem(last=False)[1]
            print(f"# exact LRU of {capacity:.0f} tokens: hit {hit / total:.4f}")
    if "--che" in sys.argv:
        fresh = (total - reused) / seconds
        for capacity in numbers_after("--che"):
            def touched(window):
                return fresh * window + sum(k * min(s, window) for s, k in intervals) / seconds

            lo, hi = 0.0, 1.0
            while touched(hi) < capacity:
                lo, hi = hi, 2 * hi
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if touched(mid) < capacity else (lo, mid)
            hit = sum(k for s, k in intervals if s < hi)
            print(f"# characteristic time of {capacity:.0f} tokens: {hi:.1f} s, hit {hit / total:.4f}")


main()
