# bash completion for gpumon. Installed as share/bash-completion/completions/gpumon.
# Written by hand from `gpumon CMD --help`; tests/cli/test_manpage.py checks that every option
# the help texts list is here.

_gpumon_opts_query='-i --id -l --loop --interval --format --query-gpu --list-fields --no-processes --profile
    --color --provider --simulate --seed -h --help'
_gpumon_opts_serve='--listen --port-file --provider --simulate --seed --token --history
    --interval --poll-interval --ws-max-rate --max-connections --max-connections-per-ip --hostname --cors-origin --log-level
    --no-system-metrics --process-metrics
    --db --retention --web-root --prometheus --prometheus-job --pod-resources --procfs -h --help'
_gpumon_opts_record='-i --gpus --interval -o --output --label --snapshot
    --snapshot-window-ms --db --no-db -q --quiet --provider --simulate --seed -h --help'
_gpumon_opts_select='-n --count -m --min-free-mb -u --max-util -i --id --format --ignore-leases
    --lease-dir --all-devices -v --verbose --provider --simulate --seed -h --help'
_gpumon_opts_wait='-n --count -m --min-free-mb -u --max-util -i --id -t --timeout --interval
    -q --quiet --format --ignore-leases --lease-dir --all-devices -v --verbose --provider --simulate --seed
    -h --help'
_gpumon_opts_estimate='-f --task --tp --pp --dp --method --dtype --kv-dtype --seq-len --context
    --batch --overhead-mib --list-models --format -h --help'
_gpumon_opts_run='--task -n --count -m --min-free-mb -u --max-util -w --wait --check-interval
    --interval -o --output --label --snapshot --snapshot-window-ms --db --no-db
    --lease-dir --all-devices -q --quiet --provider --simulate --seed --image --container-port
    --env --volume --shm-size --keep-container --pull -h --help'
_gpumon_opts_snapshot='-o --output --power-window --interval --power-interval --no-processes --provider
    --simulate --seed -h --help'
_gpumon_opts_diff='--mem-tolerance-mb --power-tolerance-w --strict --format -h --help'
_gpumon_opts_bench='--url --model --api --concurrency --request-rate --burstiness --requests
    --duration --warmup --input-tokens --output-tokens --prompts --slo --header --api-key-env
    --timeout -i --gpus --interval --idle-seconds -o --output --label --trace --db --no-db
    -q --quiet --provider --simulate --seed --image --container-port --env --volume --shm-size
    --ready-path --ready-timeout --keep-container --pull --task -n --count -m --min-free-mb -u --max-util
    -w --wait --check-interval --lease-dir --all-devices -h --help'
_gpumon_opts_containers='--format --all --dry-run --stop-timeout -h --help'
_gpumon_opts_history='--db --format --limit -o --output --older-than --point -h --help'
_gpumon_opts_smi='-h --help --version -L --list-gpus -q --query -x --xml-format --dtd -d --display
    -i --id -f --filename -l --loop -lms --loop-ms --query-gpu --query-compute-apps
    --query-retired-pages --query-remapped-rows --format --help-query-gpu --help-query-compute-apps
    --help-query-retired-pages --help-query-remapped-rows --provider --simulate --seed'
_gpumon_opts_cluster='--prometheus --job -n --count --gpus -u --max-util --max-mem-percent --format
    --timeout -h --help'
_gpumon_opts_top='--connect --token --interval --sort --color --provider --simulate --seed -h
    --help'

_gpumon() {
    local cur prev words cword
    local split
    _init_completion -s || return

    local commands='query serve record select wait estimate run snapshot diff bench containers
        history smi cluster top'
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands help --help --version -v" -- "$cur"))
        return
    fi
    local cmd=${words[1]} i
    if [[ $cmd == help ]]; then
        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi

    # After `--`, record and run take a command line of their own (not with --image, where
    # the words go to the container).
    if [[ $cmd == record || ($cmd == run && " ${words[*]} " != *" --image "*) ]]; then
        for ((i = 2; i < cword; i++)); do
            if [[ ${words[i]} == -- ]]; then
                _command_offset $((i + 1))
                return
            fi
        done
    fi

    # Values of the options that take one (--opt VALUE, or --opt=VALUE split by -s).
    case $prev in
    --format)
        case $cmd in
        query) COMPREPLY=($(compgen -W 'table json csv csv,noheader csv,nounits csv,noheader,nounits' -- "$cur")) ;;
        smi) COMPREPLY=($(compgen -W 'csv csv,noheader csv,nounits csv,noheader,nounits' -- "$cur")) ;;
        select | wait) COMPREPLY=($(compgen -W 'list uuid json' -- "$cur")) ;;
        history) COMPREPLY=($(compgen -W 'table json csv vllm html' -- "$cur")) ;;
        containers) COMPREPLY=($(compgen -W 'table json' -- "$cur")) ;;
        cluster)
            if [[ ${words[2]} == status ]]; then
                COMPREPLY=($(compgen -W 'table json' -- "$cur"))
            else
                COMPREPLY=($(compgen -W 'text json' -- "$cur"))
            fi
            ;;
        *) COMPREPLY=($(compgen -W 'text json' -- "$cur")) ;;
        esac
        return
        ;;
    --provider)
        COMPREPLY=($(compgen -W 'auto nvml nvidia-smi sim' -- "$cur"))
        return
        ;;
    --color)
        COMPREPLY=($(compgen -W 'auto always never' -- "$cur"))
        return
        ;;
    --sort)
        COMPREPLY=($(compgen -W 'mem cpu pid sm' -- "$cur"))
        return
        ;;
    --api)
        COMPREPLY=($(compgen -W 'completions chat' -- "$cur"))
        return
        ;;
    --method)
        COMPREPLY=($(compgen -W 'model seed' -- "$cur"))
        return
        ;;
    --dtype | --kv-dtype)
        COMPREPLY=($(compgen -W 'fp32 fp16 bf16 fp8 int8 int4 awq gptq' -- "$cur"))
        return
        ;;
    --env)
        # NAME alone passes gpumon's own value: offer the variables set here.
        COMPREPLY=($(compgen -v -- "$cur"))
        return
        ;;
    --volume)
        _filedir -d
        return
        ;;
    --api-key-env)
        COMPREPLY=($(compgen -v -- "$cur"))
        return
        ;;
    --prompts | --trace)
        _filedir
        return
        ;;
    --log-level)
        COMPREPLY=($(compgen -W 'debug info warn error' -- "$cur"))
        return
        ;;
    -d | --display)
        [[ $cmd == smi ]] && COMPREPLY=($(compgen -W 'MEMORY UTILIZATION ECC TEMPERATURE POWER
            CLOCK COMPUTE PIDS PERFORMANCE PAGE_RETIREMENT ENCODER_STATS ROW_REMAPPER' -- "$cur"))
        return
        ;;
    -o | --output | --port-file | --db | -f | --task | --filename)
        _filedir
        return
        ;;
    --lease-dir | --web-root)
        _filedir -d
        return
        ;;
    --pod-resources) # the kubelet's socket, or none
        _filedir
        return
        ;;
    --procfs)
        _filedir -d
        return
        ;;
    --query-gpu)
        # The field list is the program's own (--list-fields prints one per line, first column).
        local fields
        fields=$("${words[0]}" query --list-fields 2>/dev/null | awk 'NR > 1 && $1 ~ /^[a-z]/ { print $1 }')
        local prefix=""
        [[ $cur == *,* ]] && prefix=${cur%,*},
        COMPREPLY=($(compgen -P "$prefix" -W "$fields" -- "${cur##*,}"))
        compopt -o nospace
        return
        ;;
    --query-compute-apps | --query-retired-pages | --query-remapped-rows | -lms | --loop-ms)
        return
        ;;
    -i | --id | --gpus | -l | --loop | --simulate | --seed | --listen | --token | --history | \
        --poll-interval | --ws-max-rate | --max-connections | --max-connections-per-ip | --hostname | --cors-origin | -n | \
        --interval | --label | \
        --snapshot-window-ms | -m | --min-free-mb | -u | --max-util | -t | --timeout | -c | \
        --count | -w | --wait | --check-interval | --power-window | --power-interval | \
        --mem-tolerance-mb | --power-tolerance-w | --limit | --url | --model | --concurrency | \
        --request-rate | --burstiness | --requests | --duration | --warmup | --input-tokens | \
        --output-tokens | --slo | --header | --timeout | --idle-seconds | --image | \
        --container-port | --shm-size | --ready-path | --ready-timeout | --context | --batch | \
        --overhead-mib | --stop-timeout | --prometheus | --prometheus-job | --job | \
        --max-mem-percent | --retention | --older-than | --connect)
        return
        ;;
    esac

    local opts_var="_gpumon_opts_$cmd"
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${!opts_var}" -- "$cur"))
    elif [[ $cmd == history ]]; then
        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'list show export import compare delete prune' -- "$cur"))
    elif [[ $cmd == containers ]]; then
        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'list cleanup follow' -- "$cur"))
    elif [[ $cmd == cluster ]]; then
        [[ $cword -eq 2 ]] && COMPREPLY=($(compgen -W 'status select' -- "$cur"))
    elif [[ $cmd == diff ]]; then
        _filedir json
    fi
}
complete -F _gpumon gpumon
