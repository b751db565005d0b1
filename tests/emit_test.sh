#!/usr/bin/env bash
# --emit (issue 28): every flag and YAML key written is in the option list recorded for that
# engine version (tests/data/engine-options), the sizes equal serve's JSON (batch, parallel sizes,
# chunk, replicas), the YAML parses with libyaml (PyYAML's CLoader), and an impossible
# combination is refused with its reason and nothing written. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
opts=tests/data/engine-options
# two TensorRT-LLM lists: trtllm-serve's (--emit trtllm, the 1.0.0 release) and the one Dynamo's
# TRT-LLM workers read (the 1.3.0rc25 that Dynamo 1.5.0's tensorrtllm-runtime image carries)
trtllm_list=$opts/trtllm-1.0.0.txt
dynamo_trtllm_list=$opts/trtllm-1.3.0rc25.txt

# flags_in FILE LIST...: every --flag (and -c) on the file's command lines, every key of its YAML,
# is in the lists. A Dynamo deployment (a YAML with `spec`) is checked in two parts: its keys
# against Dynamo's list (dynamo-*.txt) alone (v1beta1: spec.components is a list, each component's
# containers a list, so every key is a field name); its workers' args against the engine's list and
# Dynamo's worker flags.
flags_in() {
    python3 - "$@" <<'PY'
import os, re, sys, yaml
path, lists = sys.argv[1], sys.argv[2:]
def read(l):
    return {line.strip() for line in open(l) if line.strip() and not line.startswith("#")}
known, dynamo = set(), set()
for l in lists:
    (dynamo if os.path.basename(l).startswith("dynamo-") else known).update(read(l))
text = open(path).read()
used, args = set(), set()
if path.endswith(".sh"):
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"\s*(--?[A-Za-z][A-Za-z0-9_-]*)", line)
        if m:
            used.add(m.group(1))
else:
    doc = yaml.load(text, Loader=yaml.CLoader)
    def keys(node, into):
        if isinstance(node, dict):
            for k, v in node.items():
                into.add(k); keys(v, into)
        elif isinstance(node, list):
            for v in node: keys(v, into)
    if "spec" in doc:
        crd = set()
        keys(doc, crd)
        for c in doc["spec"]["components"]:
            for container in c["podTemplate"]["spec"]["containers"]:
                for a in container.get("args", []):
                    if a.startswith("--"):
                        args.add(a)
        missing = sorted((crd - dynamo) | (args - known - dynamo))
        if missing:
            print("# not in the lists:", " ".join(missing)); sys.exit(1)
        sys.exit(0)
    keys(doc, used)
missing = sorted(used - known)
if missing:
    print("# not in the list:", " ".join(missing)); sys.exit(1)
PY
}

# flag FILE NAME: the value of --NAME in a script
flag() { grep -A0 -- "  $2 " "$1" | head -n 1 | sed "s/.*$2 '\\{0,1\\}\\([^']*\\)'\\{0,1\\}.*/\\1/"; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# y FILE EXPR: EXPR over the YAML file as d
y() { python3 -c "import yaml,sys; d=yaml.load(open(sys.argv[1]), Loader=yaml.CLoader); print(eval(sys.argv[2]))" "$@"; }
# dyn FILE TYPE EXPR: EXPR over a Dynamo deployment's one component of v1beta1 type TYPE (frontend,
# worker, prefill, decode) as c, its main container as m; fails unless exactly one has that type
dyn() {
    python3 - "$@" <<'PY'
import sys, yaml
d = yaml.load(open(sys.argv[1]), Loader=yaml.CLoader)
cs = [c for c in d["spec"]["components"] if c["type"] == sys.argv[2]]
if len(cs) != 1:
    sys.exit(1)
c = cs[0]
m = [x for x in c["podTemplate"]["spec"]["containers"] if x["name"] == "main"][0]
print(eval(sys.argv[3]))
PY
}

dsv3="serve models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 4096 --osl 1024 --mtp 1 --mtp-accept 0.8 --mode disaggregated --ttft-ms 2000 --tpot-ms 20"
llama="serve models/llama-3.1-70b.yaml topologies/hgx-h200.xml --isl 2048 --osl 512 --mode aggregated --tpot-ms 50"
for case in dsv3 llama; do
    args=${!case}
    $rackplan $args --format json -o "$work/$case.json" 2>/dev/null
    for engine in sglang vllm trtllm dynamo dynamo-vllm dynamo-trtllm; do
        dir=$work/$case-$engine
        $rackplan $args --emit $engine "$dir" >/dev/null 2>"$work/err"
        check "$case --emit $engine writes its files" test $? -eq 0 -a -n "$(ls "$dir" 2>/dev/null)"
        for f in "$dir"/*; do
            # the list a file is checked against: its program's (the router's for the SGLang
            # router; for a Dynamo deployment Dynamo's and the engine its workers run)
            case $engine-$(basename "$f") in
                *-sglang-router.sh) list=$(ls $opts/router-sglang-*.txt) ;;
                dynamo-trtllm-dynamo-trtllm.yaml) list="$(ls $opts/dynamo-*.txt) $dynamo_trtllm_list" ;;
                *-dynamo-*.yaml) base=$(basename "$f" .yaml); list="$(ls $opts/dynamo-*.txt) $(ls $opts/${base#dynamo-}-*.txt)" ;;
                dynamo-trtllm-trtllm-*) list=$dynamo_trtllm_list ;;
                *-trtllm-*) list=$trtllm_list ;;
                *) list=$(ls $opts/$(basename "$f" | cut -d- -f1)-*.txt) ;;
            esac
            check "$case $engine $(basename "$f"): every flag and key is in $(echo $list | xargs -n1 basename | tr '\n' ' ')" flags_in "$f" $list
        done
    done
done

# sizes against serve's JSON
d=$work/dsv3.json s=$work/dsv3-sglang
check "dsv3 sglang decode --max-running-requests = decode batch" \
    test "$(flag $s/sglang-decode.sh --max-running-requests)" = "$(json $d "d['layout']['decode']['batch']")"
check "dsv3 sglang decode --dp-size = decode DP" \
    test "$(flag $s/sglang-decode.sh --dp-size)" = "$(json $d "d['layout']['decode']['layout']['dp']")"
check "dsv3 sglang decode --ep-size = decode EP" \
    test "$(flag $s/sglang-decode.sh --ep-size)" = "$(json $d "d['layout']['decode']['layout']['ep']")"
check "dsv3 sglang prefill --tp-size = prefill devices (DP attention)" \
    test "$(flag $s/sglang-prefill.sh --tp-size)" = "$(json $d "d['layout']['prefill']['instance_devices']")"
# the prefill server's token budget is the plan's batch on a rank (emit.h): ceil(batch / DP)
# prompts of ISL tokens (no prefix cache here), times DP for SGLang's global flag
check "dsv3 sglang prefill --chunked-prefill-size = ceil(prefill batch / DP) x ISL x DP" \
    test "$(flag $s/sglang-prefill.sh --chunked-prefill-size)" = \
    "$(json $d "-(-d['layout']['prefill']['batch'] // d['layout']['prefill']['layout']['dp']) * d['workload']['isl'] * d['layout']['prefill']['layout']['dp']")"
check "dsv3 vllm prefill --max-num-batched-tokens = ceil(prefill batch / DP) x ISL" \
    test "$(flag $work/dsv3-vllm/vllm-prefill.sh --max-num-batched-tokens)" = \
    "$(json $d "-(-d['layout']['prefill']['batch'] // d['layout']['prefill']['layout']['dp']) * d['workload']['isl']")"
check "dsv3 sglang router: one --prefill an instance" \
    test "$(grep -c -- '  --prefill ' $s/sglang-router.sh)" = "$(json $d "d['layout']['prefill']['instances']")"
check "dsv3 trtllm generation: max_batch_size = ceil(batch / DP)" \
    test "$(python3 -c "import yaml; print(yaml.load(open('$work/dsv3-trtllm/trtllm-decode.yaml'), Loader=yaml.CLoader)['max_batch_size'])")" = \
    "$(json $d "-(-d['layout']['decode']['batch'] // d['layout']['decode']['layout']['dp'])")"
# TensorRT-LLM 1.0.0 (trtllm-1.0.0.txt): CUDA graphs through cuda_graph_config (the flat
# use_cuda_graph / cuda_graph_max_batch_size keys of older mains fail 1.0.0's extra "forbid"), the
# KV dtype inside kv_cache_config, the transfer buffer as cache_transceiver_config.max_tokens_in_buffer
check "dsv3 trtllm decode: cuda_graph_config.max_batch_size = ceil(batch / DP)" \
    test "$(python3 -c "import yaml; print(yaml.load(open('$work/dsv3-trtllm/trtllm-decode.yaml'), Loader=yaml.CLoader)['cuda_graph_config']['max_batch_size'])")" = \
    "$(json $d "-(-d['layout']['decode']['batch'] // d['layout']['decode']['layout']['dp'])")"
check "dsv3 trtllm prefill: kv_cache_config.dtype, and max_tokens_in_buffer = max(ISL, max_num_tokens)" \
    test "$(python3 -c "import yaml; d=yaml.load(open('$work/dsv3-trtllm/trtllm-prefill.yaml'), Loader=yaml.CLoader); print(d['kv_cache_config']['dtype'], d['cache_transceiver_config']['max_tokens_in_buffer'] == max($(json $d "d['workload']['isl']"), d['max_num_tokens']))")" = \
    "auto True"
# MoE backend (issue 28): TensorRT-LLM's DeepSeek-R1 guide (1.2.0rc2.post2) lists WIDEEP as the only
# MoE backend on GB200 NVL72 with EP > 8, so a role wider than 8 there writes moe_config.backend
# WIDEEP; a role of EP <= 8 keeps the default (no moe_config); a dense model on H200 none either
check "dsv3 trtllm decode (GB200 NVL72, EP $(json $d "d['layout']['decode']['layout']['ep']") > 8): moe_config.backend WIDEEP" \
    test "$(y $work/dsv3-trtllm/trtllm-decode.yaml "(d['moe_expert_parallel_size'] > 8, d.get('moe_config'))")" = \
    "(True, {'backend': 'WIDEEP'})"
check "dsv3 trtllm prefill (EP $(json $d "d['layout']['prefill']['layout']['ep']") <= 8): no moe_config" \
    test "$(y $work/dsv3-trtllm/trtllm-prefill.yaml "(d['moe_expert_parallel_size'] <= 8, 'moe_config' in d)")" = "(True, False)"
# ... and Dynamo's workers run TensorRT-LLM 1.3.0rc25, whose DeepSeek-R1 deployment guide ("MoE
# Backend Support Matrix", trtllm-1.3.0rc25.txt) lists no WIDEEP: "GB200 NVL72 EP>8 | FP8 | DEEPGEMM"
# for DeepSeek-V3's own FP8 experts (models/deepseek-v3.yaml: weights fp8), "| NVFP4 | CUTEDSL" for
# fp4 ones; EP <= 8 keeps the default there too
check "dsv3 dynamo-trtllm decode YAML (FP8 experts, EP > 8): moe_config.backend DEEPGEMM" \
    test "$(y $work/dsv3-dynamo-trtllm/trtllm-decode.yaml "d.get('moe_config')")" = "{'backend': 'DEEPGEMM'}"
# ... and at EP <= 8 on B200/GB200 its row "B200/GB200 EP<=8 | FP8 | DEEPGEMM" (CUTLASS, the default,
# does not run FP8 experts there: "one must set the moe_config.backend explicitly to run the model")
check "dsv3 dynamo-trtllm prefill YAML (FP8 experts, EP <= 8 on GB200): moe_config.backend DEEPGEMM" \
    test "$(y $work/dsv3-dynamo-trtllm/trtllm-prefill.yaml "(d['moe_expert_parallel_size'] <= 8, d.get('moe_config'))")" = "(True, {'backend': 'DEEPGEMM'})"
$rackplan $dsv3 --weights fp4 --format json -o "$work/dsv3-fp4.json" --emit dynamo-trtllm "$work/dsv3-fp4-dynamo-trtllm" >/dev/null 2>&1
check "dsv3 --weights fp4 dynamo-trtllm decode YAML (EP $(json $work/dsv3-fp4.json "d['layout']['decode']['layout']['ep']") > 8): moe_config.backend CUTEDSL" \
    test "$(y $work/dsv3-fp4-dynamo-trtllm/trtllm-decode.yaml "d.get('moe_config')")" = "{'backend': 'CUTEDSL'}"
check "... every key in $(basename $dynamo_trtllm_list)" flags_in "$work/dsv3-fp4-dynamo-trtllm/trtllm-decode.yaml" $dynamo_trtllm_list
# MXFP4 experts (gpt-oss: precision.fp4_format mxfp4) take 1.3.0rc25's gpt-oss guide's matrix under
# Dynamo: "B200/GB200/B300/GB300 | MXFP8 | MXFP4 | TRTLLM", "H200 | BF16 | MXFP4 | TRITON"; the
# standalone 1.0.0 YAML keeps the default
for topo in hgx-b200:TRTLLM hgx-h200:TRITON; do
    t=${topo%%:*} backend=${topo##*:}
    $rackplan serve models/gpt-oss-120b.yaml topologies/$t.xml --isl 1024 --osl 1024 --tpot-ms 20 \
        --emit dynamo-trtllm "$work/oss-$t" >/dev/null 2>&1
    check "gpt-oss on $t dynamo-trtllm: moe_config.backend $backend (MXFP4 experts)" \
        test "$(y $work/oss-$t/trtllm-aggregated.yaml "d.get('moe_config')")" = "{'backend': '$backend'}"
done
# each role on its own hardware: decode on B200, prefill on H200 (--prefill-topology)
$rackplan serve models/gpt-oss-120b.yaml topologies/hgx-b200.xml --prefill-topology topologies/hgx-h200.xml \
    --isl 1024 --osl 1024 --tpot-ms 20 --mode disaggregated --emit dynamo-trtllm "$work/oss-cross" >/dev/null 2>&1
check "gpt-oss decode on B200, prefill on H200: TRTLLM and TRITON, each its role's hardware's" \
    test "$(y $work/oss-cross/trtllm-decode.yaml "d['moe_config']['backend']"),$(y $work/oss-cross/trtllm-prefill.yaml "d['moe_config']['backend']")" = TRTLLM,TRITON
# ... and a prefill pool on AMD is refused for TensorRT-LLM though decode runs on H200
$rackplan serve models/llama-3.1-70b.yaml topologies/hgx-h200.xml --prefill-topology topologies/mi300x.xml \
    --isl 2048 --osl 512 --tpot-ms 50 --mode disaggregated --emit trtllm "$work/amd-prefill" >/dev/null 2>"$work/err"
check "prefill on MI300X, decode on H200, --emit trtllm: refused for the prefill's AMD, nothing written" \
    test $? -eq 2 -a ! -e "$work/amd-prefill" -a -n "$(grep 'NVIDIA GPUs only, not CDNA3' "$work/err")"
$rackplan serve models/gpt-oss-120b.yaml topologies/hgx-b200.xml --isl 1024 --osl 1024 --tpot-ms 20 \
    --emit trtllm "$work/oss-standalone" >/dev/null 2>&1
check "gpt-oss on hgx-b200 trtllm (1.0.0): no moe_config" \
    test "$(y $work/oss-standalone/trtllm-aggregated.yaml "'moe_config' in d")" = False
# a wide-EP role of MXFP4 experts (gpt-oss disaggregated on GB200 NVL72, decode EP > 8): WideEPMoE
# raises "unsupported quantization mode" for MXFP4 (fused_moe_wide_ep.py's _check_configs takes
# NVFP4, FP8, INT4 per group or none), so the 1.0.0 YAML keeps CUTLASS, the default, which the
# gpt-oss quick-start recipe lists for MXFP4 on B200/GB200; Dynamo's 1.3.0rc25 writes TRTLLM
$rackplan serve models/gpt-oss-120b.yaml topologies/gb200-nvl72.xml --racks 1 --isl 1024 --osl 1024 --tpot-ms 20 \
    --mode disaggregated --format json -o "$work/oss-wide.json" --emit trtllm "$work/oss-wide" >/dev/null 2>&1
$rackplan serve models/gpt-oss-120b.yaml topologies/gb200-nvl72.xml --racks 1 --isl 1024 --osl 1024 --tpot-ms 20 \
    --mode disaggregated --emit dynamo-trtllm "$work/oss-wide-dynamo" >/dev/null 2>&1
check "gpt-oss decode on GB200 NVL72 (EP $(json $work/oss-wide.json "d['layout']['decode']['layout']['ep']") > 8) trtllm (1.0.0): no moe_config, not WIDEEP" \
    test "$(y $work/oss-wide/trtllm-decode.yaml "(d['moe_expert_parallel_size'] > 8, 'moe_config' in d)")" = "(True, False)"
check "... and dynamo-trtllm (1.3.0rc25): TRTLLM" \
    test "$(y $work/oss-wide-dynamo/trtllm-decode.yaml "d.get('moe_config')")" = "{'backend': 'TRTLLM'}"
# the plan admits each request by its own length: trtllm-serve 1.0.0's default scheduler,
# GUARANTEED_NO_EVICT, reserves prompt + max_tokens for each, so the aggregated and decode roles get
# MAX_UTILIZATION (trtllm-1.0.0.txt); a context server holds only prompts and keeps the default
check "dsv3 trtllm decode: capacity_scheduler_policy MAX_UTILIZATION; prefill: the default" \
    test "$(y $work/dsv3-trtllm/trtllm-decode.yaml "d['scheduler_config']"),$(y $work/dsv3-trtllm/trtllm-prefill.yaml "'scheduler_config' in d")" = \
    "{'capacity_scheduler_policy': 'MAX_UTILIZATION'},False"
$rackplan serve models/llama-3.1-70b.yaml topologies/hgx-h200.xml --racks 1 --isl 2048 --osl 1024 --tpot-ms 30 \
    --max-tokens 4096 --mode aggregated --emit trtllm "$work/llama-max-tokens" >/dev/null 2>&1
check "llama trtllm --max-tokens 4096: the default scheduler (no scheduler_config), the header says max_tokens" \
    test "$(y $work/llama-max-tokens/trtllm-aggregated.yaml "'scheduler_config' in d"),$(grep -c "max_tokens 4096: send max_tokens <= 4096" $work/llama-max-tokens/trtllm-aggregated.yaml)" = False,1
check "dsv3 dynamo-trtllm (1.3.0rc25) decode YAML: MAX_UTILIZATION; prefill: the default" \
    test "$(y $work/dsv3-dynamo-trtllm/trtllm-decode.yaml "d['scheduler_config']['capacity_scheduler_policy']"),$(y $work/dsv3-dynamo-trtllm/trtllm-prefill.yaml "'scheduler_config' in d")" = MAX_UTILIZATION,False
check "llama trtllm aggregated (no --max-tokens): MAX_UTILIZATION" \
    test "$(y $work/llama-trtllm/trtllm-aggregated.yaml "d['scheduler_config']['capacity_scheduler_policy']")" = MAX_UTILIZATION
check "llama trtllm (dense, H200): no moe_config" \
    test "$(y $work/llama-trtllm/trtllm-aggregated.yaml "'moe_config' in d")" = False
check "dsv3 trtllm: the files name the version of the list they are checked against ($(basename $trtllm_list .txt))" \
    grep -q "flags checked against: TensorRT-LLM $(basename $trtllm_list .txt | sed 's/^trtllm-//') " "$work/dsv3-trtllm/trtllm-decode.yaml"
check "dsv3 trtllm disagg.yaml: context servers = prefill instances" \
    test "$(python3 -c "import yaml; print(yaml.load(open('$work/dsv3-trtllm/trtllm-disagg.yaml'), Loader=yaml.CLoader)['context_servers']['num_instances'])")" = \
    "$(json $d "d['layout']['prefill']['instances']")"
check "dsv3 dynamo: decode replicas = decode instances" \
    test "$(dyn $work/dsv3-dynamo/dynamo-sglang.yaml decode "c['replicas']")" = "$(json $d "d['layout']['decode']['instances']")"
# a pod takes a host's GPUs (4 on GB200 NVL72), and a role wider than a host is multinode with the
# hosts it spans: nodeCount (1 without multinode) x the main container's nvidia.com/gpu = the
# instance's devices, and multinode only where the instance is wider than a host
for role in prefill decode; do
    check "dsv3 dynamo $role: multinode.nodeCount x nvidia.com/gpu = $role devices, multinode past 4" \
        test "$(dyn $work/dsv3-dynamo/dynamo-sglang.yaml $role "(c.get('multinode', {}).get('nodeCount', 1) * int(m['resources']['limits']['nvidia.com/gpu']), 'multinode' in c)")" = \
        "$(json $d "(d['layout']['$role']['instance_devices'], d['layout']['$role']['instance_devices'] > 4)")"
done
# Dynamo's workers name their role with --disaggregation-mode (Dynamo's vLLM backend_args.py at
# d195d280 deprecates --is-prefill-worker); SGLang's router gets each prefill's bootstrap port
# (SGLang's default 8998, server_args.py)
v=$work/dsv3-dynamo-vllm/dynamo-vllm.yaml
check "dsv3 dynamo-vllm: the prefill worker passes --disaggregation-mode prefill" \
    test "$(dyn $v prefill "' '.join(m['args'])" | grep -o -- '--disaggregation-mode prefill')" = "--disaggregation-mode prefill"
check "dsv3 dynamo-vllm: no worker passes the deprecated --is-prefill-worker" \
    test -z "$(grep -- '--is-prefill-worker' $v)"
# Dynamo 1.5.0 (dynamo-1.5.0.txt): nvidia.com/v1beta1, each component's type its role, every
# image the release's runtime for the framework (the frontend's too), and the header naming the
# engine the image carries beside the version its flags were checked against
check "dsv3 dynamo-vllm: apiVersion nvidia.com/v1beta1; component types frontend, prefill, decode" \
    test "$(y $v "(d['apiVersion'], sorted(c['type'] for c in d['spec']['components']))")" = \
    "('nvidia.com/v1beta1', ['decode', 'frontend', 'prefill'])"
check "llama dynamo (aggregated): one worker of type worker, one frontend" \
    test "$(y $work/llama-dynamo/dynamo-sglang.yaml "sorted(c['type'] for c in d['spec']['components'])")" = "['frontend', 'worker']"
for f in dsv3-dynamo/dynamo-sglang dsv3-dynamo-vllm/dynamo-vllm dsv3-dynamo-trtllm/dynamo-trtllm; do
    fw=${f##*-}; img=$([ $fw = trtllm ] && echo tensorrtllm || echo $fw)
    check "$f: every container runs nvcr.io/nvidia/ai-dynamo/$img-runtime:1.5.0" \
        test "$(y $work/$f.yaml "sorted({x['image'] for c in d['spec']['components'] for x in c['podTemplate']['spec']['containers']})")" = \
        "['nvcr.io/nvidia/ai-dynamo/$img-runtime:1.5.0']"
done
check "dsv3 dynamo-vllm: the header names the image's vLLM (0.28.0) and the commit the flags were checked at" \
    grep -q "^# the image nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0 carries vLLM 0.28.0" $v
check "... and the flags' vLLM commit" grep -q "^# workers run .python3 -m dynamo.vllm. with the engine flags checked against vLLM main at 99d7eb5d" $v
# the operator launches a multinode DP worker itself (backend_vllm.go, injectDataParallelLaunchFlags:
# it appends --data-parallel-size-local, -start-rank, -address, -rpc-port, -hybrid-lb, and keeps a
# --data-parallel-size already there) and a multinode SGLang worker likewise (backend_sglang.go:
# --dist-init-addr, --nnodes, --node-rank): a worker passing its own would run with two
for f in dsv3-dynamo-vllm/dynamo-vllm dsv3-dynamo/dynamo-sglang; do
    check "$f: no worker passes a flag the operator injects" \
        test "$(y $work/$f.yaml "sorted({a for c in d['spec']['components'] for x in c['podTemplate']['spec']['containers'] for a in x.get('args', []) if a in ('--data-parallel-size-local', '--data-parallel-start-rank', '--data-parallel-address', '--data-parallel-rpc-port', '--data-parallel-hybrid-lb', '--dist-init-addr', '--nnodes', '--node-rank')})")" = "[]"
done
check "dsv3 dynamo-vllm decode: --data-parallel-size = decode DP (the operator keeps it and reads the DP size from it)" \
    test "$(dyn $v decode "m['args'][m['args'].index('--data-parallel-size') + 1]")" = "$(json $d "d['layout']['decode']['layout']['dp']")"
# ... while the standalone vLLM scripts, which nothing launches for them, still pass the local size
check "dsv3 vllm decode script (no operator): --data-parallel-size-local = a host's GPUs" \
    test "$(flag $work/dsv3-vllm/vllm-decode.sh --data-parallel-size-local)" = 4
check "dsv3 sglang router: every --prefill carries bootstrap port 8998" \
    test "$(grep -c -- "  --prefill .* '8998'" $s/sglang-router.sh)" = "$(json $d "d['layout']['prefill']['instances']")"
# Dynamo over TensorRT-LLM: the role YAMLs the workers read are written beside the deployment, each
# --extra-engine-args names one of them under the ConfigMap's mount, and their keys are TensorRT-LLM's
t=$work/dsv3-dynamo-trtllm
check "dsv3 dynamo-trtllm: trtllm-prefill.yaml and trtllm-decode.yaml written beside the deployment" \
    test -f $t/trtllm-prefill.yaml -a -f $t/trtllm-decode.yaml
for role in prefill decode; do
    f=$(dyn $t/dynamo-trtllm.yaml $role "m['args'][m['args'].index('--extra-engine-args') + 1]")
    m=$(dyn $t/dynamo-trtllm.yaml $role "m['volumeMounts'][0]['mountPath']")
    check "dsv3 dynamo-trtllm $role: --extra-engine-args $f is a file written, under the mount $m" \
        test -n "$f" -a -f "$t/$(basename "$f")" -a "$(dirname "$f")" = "$m"
    check "dsv3 dynamo-trtllm $role: the mount's volume is the ConfigMap the header names" \
        test "$(dyn $t/dynamo-trtllm.yaml $role "[v['configMap']['name'] for v in c['podTemplate']['spec']['volumes'] if v['name'] == m['volumeMounts'][0]['name']]")" = \
        "['$(sed -n 's/^#   kubectl create configmap \([^ ]*\) .*/\1/p' $t/dynamo-trtllm.yaml)']"
    check "dsv3 dynamo-trtllm $role: --model-path, as Dynamo 1.5.0-era templates pass it" \
        test "$(dyn $t/dynamo-trtllm.yaml $role "m['args'][:2]")" = "['--model-path', 'deepseek-ai/DeepSeek-V3']"
done
# the role YAMLs are written for the image's TensorRT-LLM (1.3.0rc25), and the files say so: the
# deployment's header names the engine the image carries as the one its YAMLs target (no note that
# they differ from it), each YAML's header the version and pages its keys were read in
check "dsv3 dynamo-trtllm: the header says the YAMLs are written for the image's TensorRT-LLM 1.3.0rc25" \
    test "$(grep -c -e '^# which carries TensorRT-LLM 1.3.0rc25 (Dynamo 1.5.0.s release artifacts); their engine YAMLs$' \
        -e '^# are written for that version, each key as its documentation writes it' $t/dynamo-trtllm.yaml)" = 2
for f in dsv3-dynamo-trtllm/dynamo-trtllm llama-dynamo-trtllm/dynamo-trtllm; do
    check "$f: no note that the YAMLs differ from the image's TensorRT-LLM, nor 1.0.0 named" \
        test -z "$(grep -e 'differs' -e '1\.0\.0' $work/$f.yaml)"
done
for f in $t/trtllm-prefill.yaml $t/trtllm-decode.yaml $work/llama-dynamo-trtllm/trtllm-aggregated.yaml; do
    check "$(basename $f) of dynamo-trtllm: flags checked against TensorRT-LLM $(basename $dynamo_trtllm_list .txt | sed 's/^trtllm-//'), its DeepSeek-R1 guide named" \
        grep -q "^# flags checked against: TensorRT-LLM 1.3.0rc25, .*deployment-guide-for-deepseek-r1-on-trtllm.html" $f
done
# MTP's draft length: speculative_config {decoding_type: MTP, max_draft_len: K} as 1.3.0rc25's
# DeepSeek-R1 guide writes it ("decoding_type: MTP / max_draft_len: 1"), K = --mtp 1; standalone
# trtllm-serve keeps 1.0.0's MTPDecodingConfig.num_nextn_predict_layers (trtllm-1.0.0.txt)
for role in prefill decode; do
    check "dsv3 dynamo-trtllm $role YAML: speculative_config MTP with max_draft_len = --mtp" \
        test "$(y $t/trtllm-$role.yaml "d['speculative_config']")" = "{'decoding_type': 'MTP', 'max_draft_len': 1}"
done
check "dsv3 trtllm (standalone) decode YAML: speculative_config MTP with num_nextn_predict_layers, 1.0.0's" \
    test "$(y $work/dsv3-trtllm/trtllm-decode.yaml "d['speculative_config']")" = "{'decoding_type': 'MTP', 'num_nextn_predict_layers': 1}"
# P/D: no 1.3.0rc25 page writes max_tokens_in_buffer or the transceiver's backend key; the backend
# is what Dynamo's 1.5.0-era TRT-LLM templates write for these workers (disagg-multinode.yaml's
# prefill.yaml and decode.yaml: "cache_transceiver_config: backend: DEFAULT"), the prefill worker
# without the overlap scheduler as there (and 1.3.0rc25's overlap_scheduler page's key); PP 1 is
# the default and not written (1.3.0rc25's YAMLs never write pipeline_parallel_size)
for role in prefill decode; do
    check "dsv3 dynamo-trtllm $role YAML: cache_transceiver_config {backend: DEFAULT}, no pipeline_parallel_size" \
        test "$(y $t/trtllm-$role.yaml "(d['cache_transceiver_config'], 'pipeline_parallel_size' in d)")" = "({'backend': 'DEFAULT'}, False)"
done
check "dsv3 dynamo-trtllm prefill YAML: disable_overlap_scheduler true" \
    test "$(y $t/trtllm-prefill.yaml "d['disable_overlap_scheduler']")" = True
# ... and PP > 1 is written: 1.3.0rc25's examples/llm_inference_distributed.html passes
# "pipeline_parallel_size=2" to LLM(), whose arguments are LlmArgs fields (api-change.html), which the
# YAML configures (trtllm-serve.html) (trtllm-1.3.0rc25.txt)
$rackplan plan models/llama-3.1-70b.yaml topologies/hgx-h200.xml --isl 2048 --osl 512 --pp 2 \
    --emit dynamo-trtllm "$work/pp2-dynamo-trtllm" >/dev/null 2>&1
check "plan --pp 2 dynamo-trtllm: pipeline_parallel_size 2, every key in $(basename $dynamo_trtllm_list)" \
    test "$(y $work/pp2-dynamo-trtllm/trtllm-aggregated.yaml "d['pipeline_parallel_size']")" = 2 -a \
    -n "$(flags_in $work/pp2-dynamo-trtllm/trtllm-aggregated.yaml $dynamo_trtllm_list && echo in)"
# plan passes the routed experts' precision too: DeepSeek-V3 (FP8 experts) at EP 72 on GB200 NVL72
# takes DEEPGEMM, 1.3.0rc25's DeepSeek-R1 guide's "GB200 NVL72 EP>8 | FP8" row
$rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 1024 --osl 1024 \
    --emit dynamo-trtllm "$work/plan-wide-dynamo-trtllm" >/dev/null 2>&1
check "plan dsv3 on GB200 NVL72 dynamo-trtllm: EP > 8 with moe_config.backend DEEPGEMM" \
    test "$(y $work/plan-wide-dynamo-trtllm/trtllm-aggregated.yaml "d['moe_expert_parallel_size'] > 8 and d['moe_config']['backend']")" = DEEPGEMM
check "dsv3 dynamo-trtllm decode YAML: max_batch_size = ceil(decode batch / DP)" \
    test "$(y $t/trtllm-decode.yaml "d['max_batch_size']")" = "$(json $d "-(-d['layout']['decode']['batch'] // d['layout']['decode']['layout']['dp'])")"

d=$work/llama.json s=$work/llama-sglang
check "llama sglang --max-running-requests = batch" \
    test "$(flag $s/sglang-aggregated.sh --max-running-requests)" = "$(json $d "d['batch']")"
check "llama sglang --tp-size = TP" \
    test "$(flag $s/sglang-aggregated.sh --tp-size)" = "$(json $d "d['layout']['tp']")"
check "llama sglang --chunked-prefill-size = the chunk x DP" \
    test "$(flag $s/sglang-aggregated.sh --chunked-prefill-size)" = "$(json $d "d['workload']['chunk_tokens'] * d['layout']['dp']")"
check "llama vllm --max-num-seqs = batch / DP" \
    test "$(flag $work/llama-vllm/vllm-aggregated.sh --max-num-seqs)" = "$(json $d "-(-d['batch'] // d['layout']['dp'])")"

check "llama (closed loop): max_running_requests = batch" \
    test "$(json $d "d['max_running_requests'] == d['batch']")" = True

# under random arrivals the analysis admits what the KV holds (its occupancy law's cap), and the
# engines are told the same: the running-request cap is serve's max_running_requests, above the
# batch, and the memory share holds the KV of all of them
poisson="$llama --arrivals poisson --percentile 99"
$rackplan $poisson --format json -o "$work/poisson.json" 2>/dev/null
d=$work/poisson.json
for engine in sglang vllm trtllm; do
    $rackplan $poisson --emit $engine "$work/poisson-$engine" >/dev/null 2>&1
done
check "llama Poisson: max_running_requests $(json $d "d['max_running_requests']") > batch $(json $d "d['batch']")" \
    test "$(json $d "d['max_running_requests'] > d['batch']")" = True
check "llama Poisson sglang --max-running-requests = max_running_requests" \
    test "$(flag $work/poisson-sglang/sglang-aggregated.sh --max-running-requests)" = "$(json $d "d['max_running_requests']")"
check "llama Poisson sglang --cuda-graph-max-bs = ceil(batch / DP)" \
    test "$(flag $work/poisson-sglang/sglang-aggregated.sh --cuda-graph-max-bs)" = "$(json $d "-(-d['batch'] // d['layout']['dp'])")"
check "llama Poisson vllm --max-num-seqs = ceil(max_running_requests / DP)" \
    test "$(flag $work/poisson-vllm/vllm-aggregated.sh --max-num-seqs)" = "$(json $d "-(-d['max_running_requests'] // d['layout']['dp'])")"
check "llama Poisson trtllm max_batch_size = ceil(max_running_requests / DP)" \
    test "$(y $work/poisson-trtllm/trtllm-aggregated.yaml "d['max_batch_size']")" = "$(json $d "-(-d['max_running_requests'] // d['layout']['dp'])")"
check "llama Poisson sglang --mem-fraction-static above the closed loop's and at most 1" \
    python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b < a <= 1 else 1)" \
    "$(flag $work/poisson-sglang/sglang-aggregated.sh --mem-fraction-static)" "$(flag $work/llama-sglang/sglang-aggregated.sh --mem-fraction-static)"

# plan with measured loads: the expert map beside the launch script, and the flags that go with it
# (issue 28, item 3): --ep-num-redundant-experts is the map's slots less the experts, every row of
# the map (a layer) places every one of DeepSeek-V3's 256 routed experts at least once, and
# --init-expert-location names the map written
$rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv --isl 4096 --osl 1024 \
    --emit sglang "$work/plan-sglang" >/dev/null 2>"$work/err"
check "plan --loads --emit sglang writes the script and the map" \
    test $? -eq 0 -a -f "$work/plan-sglang/sglang-aggregated.sh" -a -f "$work/plan-sglang/expert-map.json"
check "plan: it says which files it wrote and the redundant-slot count with the map" \
    grep -q "expert-map.json (SGLang's --init-expert-location, with --ep-num-redundant-experts" "$work/err"
check "plan: every flag is an option of $(basename "$(ls $opts/sglang-*.txt)" .txt)" \
    flags_in "$work/plan-sglang/sglang-aggregated.sh" $(ls $opts/sglang-*.txt)
m=$work/plan-sglang/expert-map.json
check "plan: --ep-num-redundant-experts = the map's slots less the experts" \
    test "$(flag $work/plan-sglang/sglang-aggregated.sh --ep-num-redundant-experts)" = \
    "$(python3 -c "import json; r=json.load(open('$m'))['physical_to_logical_map'][0]; print(len(r) - len(set(r)))")"
check "plan: every layer of the map places all 256 routed experts" \
    test "$(python3 -c "import json; d=json.load(open('$m'))['physical_to_logical_map']; print(all(sorted(set(r)) == list(range(256)) for r in d))")" = True
check "plan: --init-expert-location names the map" \
    test "$(flag $work/plan-sglang/sglang-aggregated.sh --init-expert-location)" = "$m"

# plan --emit for an engine with no verified way to load the map: it says the placement is not in
# its files (issue 28, item 3), and writes no map
$rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv --isl 4096 --osl 1024 \
    --emit vllm "$work/plan-vllm" --format json >"$work/plan-vllm.json" 2>"$work/err"
check "plan --loads --emit vllm: the placement is said not to be in vLLM's files" \
    grep -q "expert placement (288 slots over 256 experts) is not in these files: no vllm option" "$work/err"
check "... and no expert map written" test ! -e "$work/plan-vllm/expert-map.json"
# --format json lists the files written (key emitted: path, engine, role), the map included
check "plan --emit sglang --format json: emitted lists the script and the map" \
    test "$($rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv --isl 4096 \
        --osl 1024 --emit sglang "$work/plan-json" --format json 2>/dev/null |
        python3 -c "import json,sys; print(' '.join(f['role'] + ':' + f['engine'] for f in json.load(sys.stdin)['emitted']))")" = \
        "aggregated:sglang expert-map:sglang"
check "plan --emit vllm --format json: emitted lists vllm-aggregated.sh at its path" \
    test "$(json $work/plan-vllm.json "[f['path'] for f in d['emitted']]")" = "['$work/plan-vllm/vllm-aggregated.sh']"
$rackplan $dsv3 --emit dynamo-trtllm "$work/serve-json" --format json >"$work/serve-emit.json" 2>/dev/null
check "serve --emit dynamo-trtllm --format json: emitted lists the deployment and the two role YAMLs" \
    test "$(json $work/serve-emit.json "' '.join(f['engine'] + ':' + f['role'] for f in d['emitted'])")" = \
    "dynamo:deployment trtllm:prefill trtllm:decode"
check "serve without --emit: no emitted key" test "$(json $work/dsv3.json "'emitted' in d")" = False

# refusals: nothing written, the reason said, exit 2
$rackplan serve models/llama-3.1-70b.yaml topologies/hgx-h200.xml --isl 2048 --osl 512 --mtp 1 --mtp-accept 0.7 \
    --emit sglang "$work/refused" >/dev/null 2>"$work/err"
check "MTP on a model with no MTP layers is refused (exit 2)" test $? -eq 2
check "... with the reason" grep -q "ships no MTP layers" "$work/err"
check "... and nothing written" test ! -e "$work/refused"
$rackplan serve models/llama-3.1-70b.yaml topologies/tpu-v6e-256.xml --isl 2048 --osl 512 \
    --emit trtllm "$work/refused" >/dev/null 2>"$work/err"
check "TensorRT-LLM on TPUs is refused (exit 2)" test $? -eq 2
check "... and nothing written" test ! -e "$work/refused"
$rackplan serve models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 4096 --osl 1024 --kv fp4 \
    --emit trtllm "$work/refused" >/dev/null 2>"$work/err"
check "an FP4 KV cache is refused for TensorRT-LLM (exit 2)" test $? -eq 2
check "... citing the version checked against" grep -q "TensorRT-LLM 1.0.0's kv_cache_config.dtype" "$work/err"
check "... and nothing written" test ! -e "$work/refused"
$rackplan serve models/deepseek-v3.yaml topologies/gb200-nvl72.xml --isl 4096 --osl 1024 --kv fp4 \
    --emit dynamo-trtllm "$work/refused" >/dev/null 2>"$work/err"
check "an FP4 KV cache is refused for Dynamo's TensorRT-LLM too (exit 2)" test $? -eq 2
check "... citing 1.3.0rc25 (its pages write kv_cache_config.dtype auto and fp8 only)" \
    grep -q "dynamo over trtllm: TensorRT-LLM 1.3.0rc25's documentation writes kv_cache_config.dtype auto and fp8 only" "$work/err"
check "... and nothing written" test ! -e "$work/refused"
# a wide-EP role (EP > 8 on GB200 NVL72) of bf16 experts: 1.3.0rc25's DeepSeek-R1 guide lists a MoE
# backend there for NVFP4 (CUTEDSL) and FP8 (DEEPGEMM) checkpoints only, and CUTLASS, the default,
# is not among them, so Dynamo's TensorRT-LLM is refused; standalone trtllm-serve (1.0.0, WIDEEP
# from the 1.2.0rc2.post2 guide) still writes its files
$rackplan $dsv3 --weights bf16 --format json -o "$work/dsv3-bf16.json" 2>/dev/null
$rackplan $dsv3 --weights bf16 --emit dynamo-trtllm "$work/refused" >/dev/null 2>"$work/err"
rc=$?
check "dsv3 --weights bf16 (decode EP $(json $work/dsv3-bf16.json "d['layout']['decode']['layout']['ep']") on GB200 NVL72): --emit dynamo-trtllm refused (exit 2)" \
    test $rc -eq 2
check "... with the reason" grep -q "needs a moe_config.backend, and TensorRT-LLM 1.3.0rc25's DeepSeek-R1 guide lists one there for NVFP4 (CUTEDSL) and FP8 (DEEPGEMM) experts only, not bf16" "$work/err"
check "... and nothing written" test ! -e "$work/refused"
$rackplan $dsv3 --weights bf16 --emit trtllm "$work/bf16-trtllm" >/dev/null 2>&1
check "... while --emit trtllm (1.0.0) writes WIDEEP for it" \
    test "$(y $work/bf16-trtllm/trtllm-decode.yaml "d.get('moe_config')")" = "{'backend': 'WIDEEP'}"
tap_finish
