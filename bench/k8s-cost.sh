#!/usr/bin/env bash
# k8s-cost.sh - what Kubernetes attribution costs the daemon: `gpumon serve --poll-interval 100`
# (10 samples/s) over the fake NVML with GPUS GPUs of PROCS processes each, their /proc in a
# procfs root; its CPU (schedstat, % of one core) over WINDOW seconds without attribution (no
# cgroup files, --pod-resources none) and with it (a real pod's cgroup file per process, the
# fake kubelet allocating every GPU to a pod), alternated ROUNDS times.
# Usage: bench/k8s-cost.sh   (env: WINDOW=20 ROUNDS=2 GPUS=8 PROCS=4; FAKE_NVML=path)
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
WINDOW=${WINDOW:-20}
ROUNDS=${ROUNDS:-2}
GPUS=${GPUS:-8}
PROCS=${PROCS:-4}
FAKE_NVML=${FAKE_NVML:-$(dirname "$GPUMON")/tests/fakes/nvml-current/libnvidia-ml.so.1}
[ -f "$FAKE_NVML" ] || { echo "bench: no fake NVML at $FAKE_NVML (build the tests)" >&2; exit 1; }

# The scenario, the allocations and two procfs roots (with and without cgroup files).
"$PY" - "$WORK" "$GPUS" "$PROCS" "$ROOT" <<'EOF'
import json, os, shutil, sys
work, gpus, procs, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
scen, pods = {"gpus": []}, []
for with_cg in (0, 1):
    shutil.copytree(os.path.join(root, "tests/fixtures/proc/x86"), os.path.join(work, "proc%d" % with_cg),
                    symlinks=True)
for g in range(gpus):
    uuid = "GPU-7a1c0000-0000-4000-8000-%012d" % g
    uid = "0e886e9a-3879-45f9-b44d-%012d" % g
    scen["gpus"].append({"name": "NVIDIA H100 80GB HBM3", "uuid": uuid, "util_gpu": 50, "util_mem": 10,
                         "temp": 40, "processes": [{"pid": 10000 + g * 100 + p, "used_mem": 1 << 30}
                                                   for p in range(procs)]})
    pods.append({"name": "trainer-%d" % g, "namespace": "ml", "containers": [
        {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": [uuid]}]}]})
    for p in range(procs):
        for with_cg in (0, 1):
            d = os.path.join(work, "proc%d" % with_cg, str(10000 + g * 100 + p))
            os.makedirs(d)
            open(os.path.join(d, "status"), "w").write("Name:\tpython3\nUid:\t0\t0\t0\t0\n")
            open(os.path.join(d, "cmdline"), "w").write("python3\0train.py\0")
            if with_cg:
                open(os.path.join(d, "cgroup"), "w").write(
                    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
                    "cri-containerd-%064x.scope\n" % (uid.replace("-", "_"), g + 1))
json.dump(scen, open(os.path.join(work, "scenario.json"), "w"))
json.dump({"pods": pods}, open(os.path.join(work, "alloc.json"), "w"))
EOF
"$PY" "$ROOT/tests/fakes/fake_kubelet.py" --socket "$WORK/kubelet.sock" \
    --allocations "$WORK/alloc.json" --ready-file "$WORK/kubelet.ready" &
KUBELET_PID=$!
trap 'kill $KUBELET_PID 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 200); do [ -e "$WORK/kubelet.ready" ] && break; sleep 0.05; done
export GPU_MONITOR_NVML_LIB=$FAKE_NVML GM_FAKE_NVML_SCENARIO=$WORK/scenario.json

pct() { awk -v a="$1" -v b="$2" -v w="$WINDOW" 'BEGIN { printf "%.2f", 100 * (b - a) / 1e9 / w }'; }
measure() { # ARGS... : the daemon's CPU % over WINDOW
    start_daemon --poll-interval 100 "$@"
    sleep 3
    local n0 n1
    n0=$(sched_ns "$DAEMON_PID")
    sleep "$WINDOW"
    n1=$(sched_ns "$DAEMON_PID")
    pct "$n0" "$n1"
    stop_daemon
}
echo "# k8s-cost: $(machine) gpus=$GPUS procs_per_gpu=$PROCS window=${WINDOW}s"
off=() on=()
for _ in $(seq 1 "$ROUNDS"); do
    off+=("$(measure --procfs "$WORK/proc0" --pod-resources none)")
    on+=("$(measure --procfs "$WORK/proc1" --pod-resources "$WORK/kubelet.sock")")
done
# Check that the attribution was on: one process's labels.
start_daemon --poll-interval 100 --procfs "$WORK/proc1" --pod-resources "$WORK/kubelet.sock"
sleep 1
labelled=$(curl -s "$BASE/metrics" | grep -c 'gpumon_process_gpu_memory_bytes{.*pod="trainer-')
stop_daemon
echo "result off_pct=\"${off[*]}\" on_pct=\"${on[*]}\" off_median=$(median "${off[@]}")" \
    "on_median=$(median "${on[@]}") labelled_process_series=$labelled"
