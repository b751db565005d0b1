#!/usr/bin/env python3
"""length_mixes.py: builds workloads/*.csv, the shipped request-length mixes, from the published
per-request token lengths of public benchmark datasets and traces.

    python3 tools/length_mixes.py SOURCES_DIR [OUT_DIR]

SOURCES_DIR holds the source files named as below (each is one file of a public GitHub repository
at the commit given; download them from the URLs printed by `--list`). Each file's SHA-256 is
checked, so a regenerated mix is the shipped one byte for byte. OUT_DIR defaults to workloads/.

Every source publishes one (prompt tokens, output tokens) pair per request, so nothing is fitted:
a mix is the requests' joint distribution on a 16 x 16 weighted quantile grid, the same rule
rackplan's reader uses to bin raw requests (planner/lengths.h, with a 64 x 64 grid there): the
requests sorted by (isl, osl) fall into 16 groups of equal count (a request goes to the group
holding the midpoint of its place in the order), each group sorted by (osl, isl) into 16 cells the
same way; a cell is one class, its isl and osl the means of its requests rounded to whole tokens,
its weight the number of requests in it (the reader normalises). Each mean moves by at most half a
token; the comment lines give the exact statistics of the requests and of the mix.

Python 3 standard library only; deterministic.
"""
import csv
import hashlib
import math
import os
import sys

GRID = 16

PSAP = ("openshift-psap/performance-dashboard", "71007029fb5bced1d79808e7e64dc4c2af82ea55")
AZURE = ("Azure/AzurePublicDataset", "b469a113cedca53ddc3bdea71a143dc4b7d8700c")

# file written, its description, the source (repository, commit, path), its columns
DATASETS = [
    ("mlperf-llama2-70b.csv",
     "MLPerf Inference Llama 2 70B dataset (OpenOrca), 24,576 samples: input and reference output tokens",
     PSAP, "mlperf-data/summaries/llama2-70b-99.csv", "input_length", "output_length"),
    ("mlperf-llama3.1-405b.csv",
     "MLPerf Inference Llama 3.1 405B dataset, 8,313 samples: input and reference output tokens",
     PSAP, "mlperf-data/summaries/llama3-1-405b.csv", "input_length", "output_length"),
    ("mlperf-deepseek-r1.csv",
     "MLPerf Inference DeepSeek-R1 dataset, 4,388 samples: input and reference output tokens",
     PSAP, "mlperf-data/summaries/deepseek-r1.csv", "input_length", "output_length"),
    ("mlperf-llama3.1-8b.csv",
     "MLPerf Inference Llama 3.1 8B datacenter dataset (CNN/DailyMail), 13,368 samples: input and "
     "reference output tokens",
     PSAP, "mlperf-data/summaries/llama3-1-8b-datacenter.csv", "input_length", "output_length"),
    ("mlperf-mixtral-8x7b.csv",
     "MLPerf Inference Mixtral 8x7B dataset, 15,000 samples: input and reference output tokens",
     PSAP, "mlperf-data/summaries/mixtral-8x7b.csv", "input_length", "output_length"),
    ("azure-2023-code.csv",
     "Azure LLM inference trace 2023, coding service (Splitwise, ISCA 2024), 8,819 requests of "
     "2023-11-16: context and generated tokens",
     AZURE, "data/AzureLLMInferenceTrace_code.csv", "ContextTokens", "GeneratedTokens"),
    ("azure-2023-conversation.csv",
     "Azure LLM inference trace 2023, conversation service (Splitwise, ISCA 2024), 19,366 requests of "
     "2023-11-16: context and generated tokens",
     AZURE, "data/AzureLLMInferenceTrace_conv.csv", "ContextTokens", "GeneratedTokens"),
]
# The SHA-256 of each source file at the commit above (printed by --record), checked on every run.
SHA256 = {
    "llama2-70b-99.csv": "83b5ef2099a14a72e886f6c63c331137e2ce1e514ba59f131a3dee5ed84d6916",
    "llama3-1-405b.csv": "41572777b8ae4499a612016a570c99eaa32afc736e8e003c920efa7bbccb72aa",
    "deepseek-r1.csv": "bddc93e4bff296c930cb3c8eb31b9cd136bf5e208c469e779d5179daf900cf30",
    "llama3-1-8b-datacenter.csv": "f903317343c10ad208014d12443d73911cbacc6c9bd733bd15224b6994407f73",
    "mixtral-8x7b.csv": "7ffd735eb7b488aecbfbc19f1efb86accc1e1a9a7d5786cbeb8dd90860d2f0de",
    "AzureLLMInferenceTrace_code.csv": "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6",
    "AzureLLMInferenceTrace_conv.csv": "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8",
}


def url(repo, commit, path):
    return "https://github.com/%s/blob/%s/%s" % (repo, commit, path)


def raw_url(repo, commit, path):
    return "https://raw.githubusercontent.com/%s/%s/%s" % (repo, commit, path)


def quantile(sorted_values, p):
    """The smallest value whose share of the requests at or below it is >= p."""
    n = len(sorted_values)
    k = max(0, math.ceil(p * n - 1e-9) - 1)
    return sorted_values[min(k, n - 1)]


def bin_of(before, weight, total):
    g = math.floor((before + weight / 2) * GRID / total)
    return min(max(g, 0), GRID - 1)


def whole(x):
    return max(1, math.floor(x + 0.5))


def grid_mix(pairs):
    """The classes [(isl, osl, requests)] of the 16 x 16 grid, sorted by (isl, osl)."""
    counts = {}
    for p in pairs:
        counts[p] = counts.get(p, 0) + 1
    items = sorted(counts.items())  # ((isl, osl), count) by (isl, osl)
    total = len(pairs)
    groups = [[] for _ in range(GRID)]
    before = 0
    for (pair, count) in items:
        groups[bin_of(before, count, total)].append((pair, count))
        before += count
    classes = {}
    for group in groups:
        group.sort(key=lambda item: (item[0][1], item[0][0]))
        group_total = sum(count for _, count in group)
        cells = [[0, 0, 0] for _ in range(GRID)]
        inner = 0
        for (isl, osl), count in group:
            cell = cells[bin_of(inner, count, group_total)]
            inner += count
            cell[0] += count
            cell[1] += count * isl
            cell[2] += count * osl
        for count, isl_sum, osl_sum in cells:
            if count:
                key = (whole(isl_sum / count), whole(osl_sum / count))
                classes[key] = classes.get(key, 0) + count
    return sorted((isl, osl, count) for (isl, osl), count in classes.items())


def stats_line(name, values):
    s = sorted(values)
    mean = sum(s) / len(s)
    return ("# %s tokens: mean %.1f, median %d, p90 %d, p99 %d, min %d, max %d" %
            (name, mean, quantile(s, 0.5), quantile(s, 0.9), quantile(s, 0.99), s[0], s[-1]))


def build(sources, out_dir, record):
    os.makedirs(out_dir, exist_ok=True)
    for (name, what, (repo, commit), path, isl_col, osl_col) in DATASETS:
        source = os.path.join(sources, os.path.basename(path))
        with open(source, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if record:
            print('    "%s": "%s",' % (os.path.basename(path), digest))
        elif SHA256.get(os.path.basename(path)) not in (None, digest):
            sys.exit("length_mixes.py: %s: SHA-256 %s, not the %s recorded" %
                     (source, digest, SHA256[os.path.basename(path)]))
        rows = list(csv.DictReader(data.decode("utf-8").splitlines()))
        pairs = [(int(r[isl_col]), int(r[osl_col])) for r in rows]
        isl = [p[0] for p in pairs]
        osl = [p[1] for p in pairs]
        classes = grid_mix(pairs)
        n = len(pairs)
        mix_isl = sum(i * c for i, _, c in classes) / n
        mix_osl = sum(o * c for _, o, c in classes) / n
        lines = [
            "# description: %s; joint %d x %d quantile grid of the published per-request lengths" %
            (what, GRID, GRID),
            "# source: %s" % url(repo, commit, path),
            "#   (raw: %s, SHA-256 %s)" % (raw_url(repo, commit, path), digest),
            "# columns used: %s = isl (prompt tokens), %s = osl (output tokens); %d requests" %
            (isl_col, osl_col, n),
            stats_line("isl", isl),
            stats_line("osl", osl),
            "# dataset mean: isl %.1f osl %.1f" % (sum(isl) / n, sum(osl) / n),
            "# built by tools/length_mixes.py: nothing fitted; isl and osl kept jointly (one pair a",
            "# request is published): requests sorted by (isl, osl) into %d groups of equal count, each" % GRID,
            "# sorted by (osl, isl) into %d cells of equal count; a class = a cell's mean isl and osl" % GRID,
            "# rounded to whole tokens, its weight = its requests (rackplan normalises the weights).",
            "# mix mean: isl %.2f osl %.2f over %d classes" % (mix_isl, mix_osl, len(classes)),
            "isl,osl,weight",
        ]
        lines += ["%d,%d,%d" % c for c in classes]
        with open(os.path.join(out_dir, name), "w", newline="\n") as f:
            f.write("\n".join(lines) + "\n")


def main(argv):
    if len(argv) > 1 and argv[1] == "--list":
        for (_, _, (repo, commit), path, _, _) in DATASETS:
            print(raw_url(repo, commit, path))
        return 0
    record = len(argv) > 1 and argv[1] == "--record"
    if record:
        argv = argv[:1] + argv[2:]
    if len(argv) < 2 or len(argv) > 3:
        sys.stderr.write("usage: length_mixes.py [--list | [--record] SOURCES_DIR [OUT_DIR]]\n")
        return 2
    out_dir = argv[2] if len(argv) == 3 else os.path.join(os.path.dirname(__file__), "..", "workloads")
    build(argv[1], out_dir, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
