#!/usr/bin/env python3
"""An exact LRU replay of the SGLang HiCache multi-turn benchmark's rounds on host memory only (L2),
for the README's table and test_kvcache.c ("published_hicache_multiturn"): what a cache that keeps
the most recently touched tokens holds round by round, with eviction from a conversation's tail
(a radix tree's leaves first: the partly evicted conversation keeps its head) or of whole
conversations, to weigh partial hits against what rackplan's stationary model leaves out.

Usage: hicache-rounds-lru.py [--seeds N]

The benchmark (Mooncake docs/source/performance/sglang/sglang-hicache-benchmark-results-v1.md):
80 clients, 10 rounds, each round's prompt the previous round's prompt and output plus 2,048 new
tokens, 1 output token, a round barrier, the clients' order drawn anew each round. One device's
view: Qwen3-235B-A22B at TP 8 keeps 48,128 B of a token's KV a GPU, so the 30 GB of host memory a
rank holds 30e9 / 48,128 = 623,338 tokens. A client's turn hits the head of its prefix still held,
then touches its whole context (prefix, 2,048 new prompt tokens and the output), evicting the
least recently touched conversations' tokens to make room. Requests are taken one at a time;
the hit a round is the tokens hit over the prompt tokens, averaged over N orders (seeds 0..N-1).
"""
import random
import sys

CLIENTS, ROUNDS, ADDED, CAPACITY = 80, 10, 2048, 30e9 / 48128


def replay(seed, tail_first):
    rng = random.Random(seed)
    held = [0.0] * CLIENTS  # the head of each conversation still cached, tokens
    touched = [-1] * CLIENTS
    used, clock, hits = 0.0, 0, []
    for r in range(1, ROUNDS + 1):
        order = list(range(CLIENTS))
        rng.shuffle(order)
        hit = prompt = 0.0
        for c in order:
            clock += 1
            prefix, context = (r - 1) * (ADDED + 1), r * (ADDED + 1)
            hit += min(held[c], prefix)
            prompt += r * ADDED + (r - 1)
            need = context - held[c]
            touched[c] = clock
            while used + need > CAPACITY:
                victim = min((v for v in range(CLIENTS) if v != c and held[v] > 0), key=lambda v: touched[v])
                take = min(held[victim], used + need - CAPACITY) if tail_first else held[victim]
                held[victim] -= take
                used -= take
            held[c] = context
            used += need
        hits.append(hit / prompt)
    return hits


def main():
    seeds = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 40
    for tail_first, name in ((True, "tail first (partial hits)"), (False, "whole conversations")):
        mean = [0.0] * ROUNDS
        for seed in range(seeds):
            for i, h in enumerate(replay(seed, tail_first)):
                mean[i] += h / seeds
        print(f"# {name}, rounds 2-10, % hit:", " ".join(f"{100 * h:.1f}" for h in mean[1:]))


main()
