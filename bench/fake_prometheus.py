#!/usr/bin/env python3
"""A stand-in for Prometheus's instant-query API holding a synthetic fleet, for bench/fleet.sh:
answers the queries of src/core/fleet.c (up, timestamp(up), the names of nodes, the GPUs with
their utilization, their other readings) for NODES nodes of GPUS GPUs each (one node in ten down), with answers built once at
start so the server's own cost stays out of the measurement.

Usage: fake_prometheus.py --nodes 1000 --gpus 8 --port-file FILE
"""
import argparse
import http.server
import json
import random
import time
import urllib.parse

NAMES = ["GPU_UTIL", "FB_USED", "FB_FREE", "POWER_USAGE", "GPU_TEMP", "XID_ERRORS",
         "ECC_DBE_VOL_TOTAL", "ROW_REMAP_FAILURE"]


def build(nodes, gpus, now):
    rnd = random.Random(1)
    up, ts, names, ids, series = [], [], [], [], []
    for n in range(nodes):
        inst = "10.%d.%d.%d:9400" % (n >> 16, (n >> 8) & 255, n & 255)
        host = "gpu-node-%05d" % n
        alive = n % 10 != 9
        up.append({"metric": {"__name__": "up", "instance": inst, "job": "gpumon"},
                   "value": [now, "1" if alive else "0"]})
        ts.append({"metric": {"instance": inst, "job": "gpumon"}, "value": [now, str(now - 3)]})
        names.append({"metric": {"instance": inst, "Hostname": host}, "value": [now, str(gpus)]})
        if not alive:
            continue
        for g in range(gpus):
            used = rnd.choice([1, 40000, 78000])
            v = {"GPU_UTIL": rnd.choice([0, 5, 60, 99]), "FB_USED": used, "FB_FREE": 81000 - used,
                 "POWER_USAGE": 70 + rnd.random() * 600, "GPU_TEMP": 30 + rnd.randrange(50),
                 "XID_ERRORS": 0, "ECC_DBE_VOL_TOTAL": 0, "ROW_REMAP_FAILURE": 0}
            ids.append({"metric": {"instance": inst, "gpu": str(g), "UUID": "GPU-%08x-%04d" % (n, g),
                                   "modelName": "NVIDIA H100 80GB HBM3", "Hostname": host},
                        "value": [now, repr(float(v["GPU_UTIL"]))]})
            for name in NAMES[1:]:
                series.append({"metric": {"__name__": "DCGM_FI_DEV_" + name, "instance": inst,
                                          "gpu": str(g), "Hostname": host},
                               "value": [now, repr(float(v[name]))]})

    def doc(result):
        return json.dumps({"status": "success",
                           "data": {"resultType": "vector", "result": result}}).encode()
    return {"up{": doc(up), "timestamp(": doc(ts), "count by": doc(names),
            "max by (instance": doc(ids), "max by (__name__": doc(series)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    answers = build(a.nodes, a.gpus, time.time())

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("query", [""])[0]
            body = next((v for k, v in answers.items() if q.startswith(k)), None)
            status = 200 if body else 400
            body = body or b'{"status":"error","errorType":"bad_data","error":"unknown query"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.replace(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
