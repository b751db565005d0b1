#!/usr/bin/env bash
# Hostile input files: external entities (file and http), DTDs, schema-location hints, XInclude,
# entity expansion, 10,000-deep nesting and 100 MB files, in XML, YAML and JSON. Each must end
# in exit 3 with a `path:line:col: error:` (or `path: error:` for the file as a whole), in
# bounded time and memory, and, watched by strace, without opening any file but the ones named
# on the command line or connecting anywhere. TAP output.
set -u
. "$(dirname "$0")/tap.sh" "$@"
model=models/qwen3-30b-a3b.yaml
node=topologies/hgx-h100.xml

# bounded CODE SECONDS MEGABYTES COMMAND...: COMMAND exits CODE within SECONDS of wall time and
# MEGABYTES of peak resident memory (of the process and its children).
bounded() {
    python3 - "$@" <<'EOF'
import resource, subprocess, sys, time
code, seconds, megabytes = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
start = time.monotonic()
try:
    run = subprocess.run(sys.argv[4:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         timeout=seconds)
except subprocess.TimeoutExpired:
    print(f"# still running after {seconds} s", file=sys.stderr)
    sys.exit(1)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"# exit {run.returncode}, {time.monotonic() - start:.2f} s, {peak:.0f} MB", file=sys.stderr)
sys.exit(0 if run.returncode == code and peak <= megabytes else 1)
EOF
}

# untouched FILE COMMAND...: under strace, COMMAND opens no file but FILE, the model, the
# topologies and what the C library and the loader need, and opens no socket.
have_strace=$(command -v strace)
untouched() {
    local file=$1
    shift
    strace -f -qq -o "$work/strace" -e trace=open,openat,socket,connect "$@" >/dev/null 2>&1
    local foreign
    foreign=$(grep -E 'socket\(|connect\(|open(at)?\(' "$work/strace" |
        grep -vF -e "\"$file\"" -e "\"$model\"" -e "\"$node\"" |
        grep -vE '"/(etc/ld\.so|lib|usr/lib|usr/share/locale|sys/devices/system/cpu|proc/self)' |
        grep -vE '= -1 ENOENT' || true)
    [ -z "$foreign" ] || { echo "# opened: $foreign"; return 1; }
}
watch() {
    local what=$1 file=$2
    shift 2
    if [ -n "$have_strace" ]; then
        check "$what: nothing read from disk or network" untouched "$file" "$@"
    else
        n=$((n + 1))
        echo "ok $n - $what: nothing read from disk or network # SKIP strace not installed"
    fi
}

# refused NAME FILE COMMAND...: exit 3 within 10 s and 512 MB (ASan included), an error naming
# FILE, and nothing else read.
refused() {
    local name=$1 file=$2
    shift 2
    check "$name: exit 3 in bounded time and memory" bounded 3 10 512 "$rackplan" "$@"
    "$rackplan" "$@" >/dev/null 2>"$work/err"
    check "$name: says where" grep -qE "^$file(:[0-9]+:[0-9]+)?: error: " "$work/err"
    watch "$name" "$file" "$rackplan" "$@"
}

# A valid topology with one line changed.
topology_with() {
    sed "$1" "$node" >"$work/$2"
}

refused "XML external entity (file)" tests/bad/xml-external-entity.xml fit "$model" tests/bad/xml-external-entity.xml
topology_with 's|^<topology |<!DOCTYPE topology [ <!ENTITY remote SYSTEM "http://127.0.0.1:9/x"> ]>\n<topology |; s|<cluster domains="1"/>|<cluster domains="1"/>\&remote;|' http-entity.xml
refused "XML external entity (http)" "$work/http-entity.xml" fit "$model" "$work/http-entity.xml"
topology_with 's|^<topology |<!DOCTYPE topology SYSTEM "http://127.0.0.1:9/topology.dtd">\n<topology |' external-dtd.xml
refused "an external DTD (http)" "$work/external-dtd.xml" fit "$model" "$work/external-dtd.xml"
topology_with 's|^<topology |<!DOCTYPE topology [ <!ENTITY % p SYSTEM "file:///etc/passwd"> %p; ]>\n<topology |' parameter-entity.xml
refused "an external parameter entity" "$work/parameter-entity.xml" fit "$model" "$work/parameter-entity.xml"
# A DOCTYPE in UTF-16 hides from a byte scan for "<!DOCTYPE"; libxml2 must still not load it.
sed 's|^<?xml version="1.0" encoding="UTF-8"?>|<?xml version="1.0" encoding="UTF-16"?>|; s|^<topology |<!DOCTYPE topology SYSTEM "file:///etc/passwd">\n<topology |' \
    "$node" | iconv -f UTF-8 -t UTF-16 >"$work/utf16-dtd.xml"
refused "an external DTD in UTF-16" "$work/utf16-dtd.xml" fit "$model" "$work/utf16-dtd.xml"
refused "XInclude of /etc/passwd" tests/bad/xml-xinclude.xml fit "$model" tests/bad/xml-xinclude.xml
refused "billion laughs (XML)" tests/bad/xml-billion-laughs.xml fit "$model" tests/bad/xml-billion-laughs.xml

# Schema-location hints are only hints: rackplan validates against its own schema and fetches
# nothing, so the topology is read as if they were absent.
topology_with 's|^<topology |<topology xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://127.0.0.1:9/evil.xsd" |' schema-hint.xml
check "an xsi:noNamespaceSchemaLocation hint is ignored: exit 0" bounded 0 10 512 "$rackplan" fit "$model" "$work/schema-hint.xml"
watch "an xsi:noNamespaceSchemaLocation hint" "$work/schema-hint.xml" "$rackplan" fit "$model" "$work/schema-hint.xml"

python3 -c "print('<topology name=\"x\" status=\"shipping\">' + '<a>' * 10000 + '</a>' * 10000 + '</topology>')" \
    >"$work/deep.xml"
refused "10,000-deep XML" "$work/deep.xml" fit "$model" "$work/deep.xml"
check "... names the depth" grep -q "nested more than 256 deep" "$work/err"

# 100 MB files: refused by size after reading at most the limit (the peak memory shows it).
big() {
    python3 - "$1" "$2" <<'EOF'
import sys
path, kind = sys.argv[1], sys.argv[2]
with open(path, "w") as f:
    if kind == "xml":
        f.write('<?xml version="1.0"?>\n<!--')
        filler = "x"
    elif kind == "json":
        f.write('{"model_type": "llama", "padding": "')
        filler = "x"
    else:
        f.write("# padding\n")
        filler = "#" * 79 + "\n"
    chunk = filler * (1 << 20 // len(filler))
    for _ in range(100 * (1 << 20) // len(chunk)):
        f.write(chunk)
    f.write({"xml": "-->\n<topology/>\n", "json": '"}\n', "yaml": "layers: 1\n"}[kind])
EOF
}
big "$work/big.xml" xml
refused "a 100 MB topology" "$work/big.xml" fit "$model" "$work/big.xml"
check "... says it is too large" grep -q "larger than" "$work/err"
check "... within 256 MB (the file is never read whole)" bounded 3 10 256 "$rackplan" fit "$model" "$work/big.xml"
big "$work/big.yaml" yaml
refused "a 100 MB model YAML" "$work/big.yaml" model "$work/big.yaml"
big "$work/big.json" json
refused "a 100 MB config.json" "$work/big.json" model "$work/big.json"

# YAML and JSON: aliases (the YAML billion laughs) and deep nesting.
refused "YAML anchors and aliases" tests/bad/anchor-alias.yaml model tests/bad/anchor-alias.yaml
python3 -c "print('name: x\nlayers: ' + '[' * 10000 + ']' * 10000)" >"$work/deep.yaml"
refused "10,000-deep YAML" "$work/deep.yaml" model "$work/deep.yaml"
python3 -c "print('{\"model_type\": \"llama\", \"x\": ' + '[' * 10000 + ']' * 10000 + '}')" >"$work/deep.json"
refused "10,000-deep JSON" "$work/deep.json" model "$work/deep.json"
python3 -c "
laughs = '&a ' + '[lol, lol, lol, lol, lol, lol, lol, lol, lol]'
print('a: ' + laughs)
for level in 'bcdefghi':
    print(level + ': &' + level + ' [' + ', '.join(['*' + chr(ord(level) - 1)] * 9) + ']')
" >"$work/laughs.yaml"
refused "billion laughs (YAML)" "$work/laughs.yaml" model "$work/laughs.yaml"
tap_finish
