#!/bin/bash
# ws-client-cost.sh GPUMON FAKE INTERVAL SECS [ws]: daemon CPU (all threads, schedstat) per sample,
# with one /ws/gpu client (wsclient.py, Debian's python3-websockets) when the 5th argument is given.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); HERE=$(cd "$(dirname "$0")" && pwd)
G=$1; F=$2; I=$3; S=$4; WS=${5:-}
export GPU_MONITOR_NVML_LIB=$F GM_FAKE_NVML_COSTS=$ROOT/tests/fixtures/nvml/costs-h200-580.json GM_FAKE_NVML_SCENARIO=$ROOT/tests/fixtures/nvml/h100-590.json
D=$(mktemp -d); $G serve --listen 127.0.0.1:0 --port-file $D/port --log-level warn --interval $I --db none --pod-resources none --provider nvml 2>$D/log & P=$!
for i in $(seq 100); do [ -s $D/port ] && break; sleep 0.05; done
PORT=$(cat $D/port)
if [ -n "$WS" ]; then /usr/bin/python3 $HERE/wsclient.py ws://127.0.0.1:$PORT/ws/gpu $((S+4)) > $D/frames & C=$!; fi
sleep 2
cpu() { cat /proc/$P/task/*/schedstat | awk '{s+=$1} END {printf "%.0f", s}'; }
smp() { curl -s http://127.0.0.1:$PORT/metrics | awk '$1=="gpumon_sampler_samples_total"{print $2}'; }
c0=$(cpu); s0=$(smp); sleep $S; c1=$(cpu); s1=$(smp)
[ -n "$WS" ] && wait $C
kill $P; wait $P 2>/dev/null
awk -v a=$c0 -v b=$c1 -v x=$s0 -v y=$s1 -v s=$S 'BEGIN{printf "%.3f ms/sample  %.2f%% of a core  (%d samples)\n", (b-a)/1e6/(y-x), (b-a)/1e7/s, y-x}'
[ -n "$WS" ] && echo "frames $(cat $D/frames)"
rm -rf $D
