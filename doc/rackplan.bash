# bash completion for rackplan(1). Source it, or install it as
# /usr/share/bash-completion/completions/rackplan.
#
# It needs nothing from the bash-completion package, so that it also works where that is not
# installed (and tests/doc_test.sh can run it in a bare bash).

_rackplan_commands="calibrate compare fit model plan price roofline serve topo merge"

# What each command takes, as its --help lists it; tests/doc_test.sh checks these against
# `rackplan CMD --help`.
_rackplan_options() {
    local shared="-o --output -h --help"
    # the workload; targets where a batch is chosen (plan, compare, serve; compare has its own
    # --tpot-ms), a mode where one is (compare, serve)
    local workload="--isl --osl --isl-dist --osl-dist --lengths --osl-mean --arrivals --prefix-hit --mtp --mtp-accept --chunk --max-tokens"
    case $1 in
    model) echo "--weights --kv --context --format $shared" ;;
    topo) echo "--racks --format $shared" ;;
    fit) echo "--racks --weights --kv --context --batch --reserve --tp --pp --mtp --format $shared" ;;
    roofline)
        echo "--racks --weights --kv --context --batch --reserve --tp --pp --format $shared" \
            "--sweep --phase --plot --eta-compute --eta-memory --eta-network --estimate --shard" \
            "$workload"
        ;;
    plan)
        echo "--racks --weights --kv --context --batch --reserve --tp --pp --format $shared" \
            "--loads --trace --overlap --redundant --ep --time-limit --expert-map --report --estimate --timings --emit" \
            "$workload --ttft-ms --tpot-ms --percentile"
        ;;
    compare)
        echo "--racks --weights --kv --context --format $shared" \
            "--tpot-ms --price --domain-sizes --devices --plot --report --shard --estimate $workload" \
            "--ttft-ms --mode --percentile"
        ;;
    serve)
        echo "--racks --devices --weights --kv --reserve --tp --pp --format $shared $workload --ttft-ms --tpot-ms" \
            "--percentile --mode --rate --prefill-topology --price --plot --report --estimate --simulate --seed --reuse --reuse-interval --size-tiers --tier-price --emit"
        ;;
    price)
        echo "--racks --devices --weights --kv --reserve --tp --pp --format $shared $workload --ttft-ms --tpot-ms" \
            "--percentile --mode --price --estimate --from-prices --model"
        ;;
    merge) echo "--format $shared" ;;
    calibrate) echo "--check --format $shared" ;;
    esac
}

_rackplan_formats() {
    case $1 in
    topo) echo "text json yaml dot" ;;
    roofline) echo "text json yaml csv" ;;
    compare) echo "text json yaml csv md" ;;
    merge) echo "csv json" ;;
    *) echo "text json yaml" ;;
    esac
}

# Adds to COMPREPLY the files under $cur whose names end in one of the arguments (every file
# without arguments), and directories, to walk into.
_rackplan_files() {
    local candidates name ext
    mapfile -t candidates < <(compgen -f -- "$cur")
    for name in "${candidates[@]}"; do
        # hidden files only when asked for, as readline's own completion does
        if [[ ${name##*/} == .* && ${cur##*/} != .* ]]; then
            continue
        fi
        if [[ -d $name || $# -eq 0 ]]; then
            COMPREPLY+=("$name")
            continue
        fi
        for ext in "$@"; do
            if [[ $name == *"$ext" ]]; then
                COMPREPLY+=("$name")
                break
            fi
        done
    done
    # Outside a completion (as in a test) compopt fails; the candidates are the same.
    compopt -o filenames 2>/dev/null
}

_rackplan() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()

    # With '=' in COMP_WORDBREAKS (bash's default), "--format=js" arrives as "--format" "=" "js".
    if [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        cur=${cur#*=}
    fi

    if ((COMP_CWORD <= 1)); then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$_rackplan_commands help" -- "$cur")
        fi
        return 0
    fi

    local command=${COMP_WORDS[1]}
    if [[ $command == help ]]; then
        ((COMP_CWORD == 2)) && mapfile -t COMPREPLY < <(compgen -W "$_rackplan_commands" -- "$cur")
        return 0
    fi
    local options
    options=$(_rackplan_options "$command")
    [[ -n $options ]] || return 0

    case $prev in
    --format)
        mapfile -t COMPREPLY < <(compgen -W "$(_rackplan_formats "$command")" -- "$cur")
        return 0
        ;;
    --phase)
        mapfile -t COMPREPLY < <(compgen -W "decode prefill" -- "$cur")
        return 0
        ;;
    --mode)
        mapfile -t COMPREPLY < <(compgen -W "aggregated disaggregated best" -- "$cur")
        return 0
        ;;
    --arrivals)
        mapfile -t COMPREPLY < <(compgen -W "poisson constant closed" -- "$cur")
        return 0
        ;;
    --lengths)
        _rackplan_files .csv
        return 0
        ;;
    --overlap)
        mapfile -t COMPREPLY < <(compgen -W "on off" -- "$cur")
        return 0
        ;;
    --weights | --kv)
        mapfile -t COMPREPLY < <(compgen -W "fp4 fp8 bf16 fp16 fp32" -- "$cur")
        return 0
        ;;
    --redundant)
        mapfile -t COMPREPLY < <(compgen -W "auto" -- "$cur")
        return 0
        ;;
    --loads)
        _rackplan_files .csv
        return 0
        ;;
    --trace)
        _rackplan_files .csv .csv.gz .gz
        return 0
        ;;
    --prefill-topology)
        _rackplan_files .xml
        return 0
        ;;
    --from-prices)
        _rackplan_files .yaml .yml
        return 0
        ;;
    --model)
        _rackplan_files .yaml .yml .json
        return 0
        ;;
    --emit)
        mapfile -t COMPREPLY < <(compgen -W "sglang vllm trtllm dynamo dynamo-sglang dynamo-vllm dynamo-trtllm" -- "$cur")
        return 0
        ;;
    -o | --output | --report | --plot | --expert-map | --reuse-interval)
        _rackplan_files
        return 0
        ;;
    --price) ;; # DEVICE= from the topologies named so far, below
    --racks | --context | --batch | --reserve | --tp | --pp | --sweep | --eta-compute | \
        --eta-memory | --eta-network | --ep | --time-limit | --tpot-ms | \
        --domain-sizes | --devices | --shard | --isl | --osl | --ttft-ms | --prefix-hit | --mtp | \
        --mtp-accept | --chunk | --max-tokens | --osl-mean | --rate | --percentile | --simulate | --seed | --isl-dist | --osl-dist | \
        --reuse | --tier-price)
        return 0 # a number: nothing to offer
        ;;
    esac

    # Which positional this word is: skip the options and the values they take, as getopt_long
    # does (it lets options and operands mix, and "--" ends the options).
    local i word positionals=0 ended=0 topologies=() inverse=0
    for ((i = 2; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if ((ended)); then
            ((positionals++))
            ((positionals > 1)) && topologies+=("$word")
        elif [[ $word == -- ]]; then
            ended=1
        elif [[ $word == -h || $word == --help || $word == --estimate || $word == --timings ]]; then
            : # takes no value
        elif [[ $word == -o || ($word == --* && $word != *=*) ]]; then
            # its value is the next word, or the two after a split "="
            if [[ ${COMP_WORDS[i + 1]:-} == = ]]; then
                ((i += 2))
            else
                ((i++))
            fi
            # serve's prefill topology is a topology --price may name
            [[ $word == --prefill-topology ]] && topologies+=("${COMP_WORDS[i]:-}")
            # price --from-prices takes TOPOLOGY alone
            [[ $word == --from-prices ]] && inverse=1
        elif [[ $word == --prefill-topology=* ]]; then
            topologies+=("${word#*=}")
        elif [[ $word == --from-prices=* ]]; then
            inverse=1
        elif [[ $word == -* || $word == = ]]; then
            :
        else
            ((positionals++))
            ((positionals > 1)) && topologies+=("$word")
        fi
    done

    if [[ $prev == --price ]]; then
        local stems=() path stem
        for path in "${topologies[@]}"; do
            stem=${path##*/}
            stems+=("${stem%.xml}=")
        done
        mapfile -t COMPREPLY < <(compgen -W "${stems[*]}" -- "$cur")
        compopt -o nospace 2>/dev/null
        return 0
    fi

    if [[ $cur == -* ]] && ((!ended)); then
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
        return 0
    fi

    case $command in
    model) ((positionals == 0)) && _rackplan_files .yaml .yml .json ;;
    topo) ((positionals == 0)) && _rackplan_files .xml ;;
    fit | roofline | plan | serve)
        if ((positionals == 0)); then
            _rackplan_files .yaml .yml .json
        elif ((positionals == 1)); then
            _rackplan_files .xml
        fi
        ;;
    compare)
        if ((positionals == 0)); then
            _rackplan_files .yaml .yml .json
        else
            _rackplan_files .xml
        fi
        ;;
    price)
        if ((inverse)); then
            ((positionals == 0)) && _rackplan_files .xml
        elif ((positionals == 0)); then
            _rackplan_files .yaml .yml .json
        elif ((positionals == 1)); then
            _rackplan_files .xml
        fi
        ;;
    merge) _rackplan_files .csv .json ;;
    calibrate) ((positionals == 0)) && _rackplan_files .yaml .yml ;;
    esac
    # Every operand given: the options are all that is left.
    if ((${#COMPREPLY[@]} == 0)) && ((!ended)); then
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
    fi
    return 0
}

complete -F _rackplan rackplan
