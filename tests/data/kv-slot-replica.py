#!/usr/bin/env python3
"""A replica, in a few lines, of what `serve --simulate` does at the KV cap of one aggregated
instance, to study the wait for a slot when lengths vary (serve.h, "the wait for a slot"; README,
"Tail latency"): requests arrive at random at the rate a batch of B serves, each reserves its
prompt and output (rounded up to 16-token pages) and is admitted first come first served while
that fits in K tokens; every sequence in flight gains a token a step of T(n) = a + b n seconds.
Prefill is left out (a step's prompts are a few percent of it there).

Usage: kv-slot-replica.py B REQUESTS CAP A B_PER_SEQUENCE [SEED] [MIX]
  K = CAP x E[osl (isl + osl)] / E[osl] (the count the KV holds at the mean reservation),
  MIX a length mix CSV (default workloads/mlperf-deepseek-r1.csv).
Prints the share of measured requests (after a fifth of warm-up) that waited more than 50 ms and
their mean wait, the mean wait and its percentiles, and, over the steps where requests waited,
the completions against X(n) = n / (T E[osl]) and the mean reservation in flight.

The case in the README: DeepSeek-V3 on an H200 node, DP 8 x EP 8, the MLPerf DeepSeek-R1 mix:
  kv-slot-replica.py 262 2000000 312 0.0198 0.0000122
(312 the count the KV holds at the mean reservation; T(n) fitted through serve's TPOT at 231 and
262 sequences, 22.66 and 23.04 ms.)
"""
import bisect
import collections
import heapq
import math
import os
import random
import sys


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    batch, requests, cap = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    a, b = float(sys.argv[4]), float(sys.argv[5])
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[7] if len(sys.argv) > 7 else os.path.join(here, "../../workloads/mlperf-deepseek-r1.csv")
    classes = []
    for line in open(path):
        fields = line.strip().split(",")
        if line.startswith("#") or len(fields) < 2 or not fields[0].isdigit():
            continue
        classes.append((int(fields[0]), int(fields[1]), float(fields[2]) if len(fields) > 2 else 1.0))
    total = sum(c[2] for c in classes)
    cumulative, running = [], 0.0
    for c in classes:
        running += c[2] / total
        cumulative.append(running)
    mean_osl = sum(c[2] / total * c[1] for c in classes)
    held = sum(c[2] / total * c[1] * (c[0] + c[1]) for c in classes) / mean_osl
    capacity = cap * held
    step = lambda n: a + b * n
    rate = batch / (mean_osl * step(batch))
    random.seed(seed)
    queue, in_flight, waits = collections.deque(), [], []
    used, k, now, issued = 0, 0, 0.0, 0
    next_arrival = random.expovariate(rate)
    blocked_steps = blocked_done = blocked_expected = blocked_reserved = 0.0
    while issued < requests or queue:
        while issued < requests and next_arrival <= now:
            isl, osl, _ = classes[bisect.bisect_left(cumulative, random.random())]
            queue.append((next_arrival, (isl + osl + 15) // 16 * 16, osl))
            issued += 1
            next_arrival += random.expovariate(rate)
        while queue and used + queue[0][1] <= capacity:
            arrived, reserved, osl = queue.popleft()
            used += reserved
            heapq.heappush(in_flight, (k + osl, reserved))
            waits.append(now - arrived)
        n = len(in_flight)
        if n == 0:
            now = next_arrival
            continue
        now += step(n)
        k += 1
        done = 0
        while in_flight and in_flight[0][0] <= k:
            used -= heapq.heappop(in_flight)[1]
            done += 1
        if queue:
            blocked_steps += 1
            blocked_done += done
            blocked_expected += n / mean_osl
            blocked_reserved += used / max(len(in_flight), 1)
    measured = sorted(waits[len(waits) // 5:])
    long_waits = [w for w in measured if w > 0.05]
    at = lambda p: measured[min(len(measured) - 1, int(p * len(measured)))]
    print("rate %.4f/s, K %.0f tokens (%d x %.1f)" % (rate, capacity, cap, held))
    print("waited > 50 ms: %.4f of requests, %.2f s on average" %
          (len(long_waits) / len(measured), sum(long_waits) / max(len(long_waits), 1)))
    print("wait: mean %.4f s, p90 %.3f, p99 %.3f, p99.9 %.3f" %
          (sum(measured) / len(measured), at(0.9), at(0.99), at(0.999)))
    if blocked_steps:
        print("while requests waited: completions %.4f of X(n), mean reservation in flight %.0f tokens (%.0f at the mean)"
              % (blocked_done / blocked_expected, blocked_reserved / blocked_steps, held))


main()
