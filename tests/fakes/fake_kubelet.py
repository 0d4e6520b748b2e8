#!/usr/bin/python3
"""A stand-in for the kubelet's pod-resources gRPC service (v1.PodResourcesLister/List) on a
unix socket, for gpumon's Kubernetes attribution tests (tests/fakes/README.md).

The answer is read from a JSON file at every call, so a test changes the allocations by
rewriting it:

    {"pods": [{"name": "trainer-0", "namespace": "ml",
               "containers": [{"name": "main",
                               "devices": [{"resource_name": "nvidia.com/gpu",
                                            "device_ids": ["GPU-..."]}],
                               "cpu_ids": [2, 3]}]}],
     "grpc_status": 14, "grpc_message": "...", "delay_s": 0.5}

`grpc_status` (optional) makes the call fail with that code; `delay_s` answers late. The
messages are encoded by Google's protobuf library from descriptors written here with the field
numbers of k8s.io/kubelet/pkg/apis/podresources/v1/api.proto, including fields gpumon does not
read (cpu_ids, memory, topology), so its decoder is tested on what a kubelet really sends.

Usage: fake_kubelet.py --socket PATH --allocations FILE [--ready-file PATH]
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _message(fd, name, fields):
    m = fd.message_type.add(name=name)
    for fname, number, ftype, label, type_name in fields:
        f = m.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            f.type_name = type_name


def _classes():
    fd = descriptor_pb2.FileDescriptorProto(name="fake_podresources.proto", package="v1",
                                            syntax="proto3")
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    _message(fd, "ListPodResourcesRequest", [])
    _message(fd, "NUMANode", [("ID", 1, F.TYPE_INT64, opt, None)])
    _message(fd, "TopologyInfo", [("nodes", 1, F.TYPE_MESSAGE, rep, ".v1.NUMANode")])
    _message(fd, "ContainerDevices", [
        ("resource_name", 1, F.TYPE_STRING, opt, None),
        ("device_ids", 2, F.TYPE_STRING, rep, None),
        ("topology", 3, F.TYPE_MESSAGE, opt, ".v1.TopologyInfo"),
    ])
    _message(fd, "ContainerMemory", [
        ("memory_type", 1, F.TYPE_STRING, opt, None),
        ("size", 2, F.TYPE_UINT64, opt, None),
        ("topology", 3, F.TYPE_MESSAGE, opt, ".v1.TopologyInfo"),
    ])
    _message(fd, "ContainerResources", [
        ("name", 1, F.TYPE_STRING, opt, None),
        ("devices", 2, F.TYPE_MESSAGE, rep, ".v1.ContainerDevices"),
        ("cpu_ids", 3, F.TYPE_INT64, rep, None),
        ("memory", 4, F.TYPE_MESSAGE, rep, ".v1.ContainerMemory"),
    ])
    _message(fd, "PodResources", [
        ("name", 1, F.TYPE_STRING, opt, None),
        ("namespace", 2, F.TYPE_STRING, opt, None),
        ("containers", 3, F.TYPE_MESSAGE, rep, ".v1.ContainerResources"),
    ])
    _message(fd, "ListPodResourcesResponse", [
        ("pod_resources", 1, F.TYPE_MESSAGE, rep, ".v1.PodResources"),
    ])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    factory = message_factory.MessageFactory(pool)
    return {n: factory.GetPrototype(pool.FindMessageTypeByName("v1." + n))
            for n in ("ListPodResourcesRequest", "ListPodResourcesResponse")}


MSG = _classes()


def build_response(doc):
    resp = MSG["ListPodResourcesResponse"]()
    for p in doc.get("pods", []):
        pod = resp.pod_resources.add(name=p.get("name", ""), namespace=p.get("namespace", ""))
        for c in p.get("containers", []):
            cont = pod.containers.add(name=c.get("name", ""))
            for d in c.get("devices", []):
                dev = cont.devices.add(resource_name=d.get("resource_name", ""))
                dev.device_ids.extend(d.get("device_ids", []))
                for n in d.get("numa", [0]):
                    dev.topology.nodes.add(ID=n)
            cont.cpu_ids.extend(c.get("cpu_ids", []))
            if "memory" in c:
                mem = cont.memory.add(memory_type="memory", size=c["memory"])
                mem.topology.nodes.add(ID=0)
    return resp


class Lister:
    def __init__(self, path):
        self.path = path
        self.calls = 0
        self.lock = threading.Lock()

    def list(self, request, context):
        with self.lock:
            self.calls += 1
        with open(self.path) as f:
            doc = json.load(f)
        if doc.get("delay_s"):
            time.sleep(doc["delay_s"])
        if doc.get("grpc_status"):
            context.abort(grpc.StatusCode(_code(doc["grpc_status"])),
                          doc.get("grpc_message", "fake kubelet error"))
        return build_response(doc)


def _code(n):
    for c in grpc.StatusCode:
        if c.value[0] == n:
            return c.value
    raise ValueError("unknown gRPC status %r" % n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--allocations", required=True)
    ap.add_argument("--ready-file")
    args = ap.parse_args()

    lister = Lister(args.allocations)
    handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": grpc.unary_unary_rpc_method_handler(
            lister.list,
            request_deserializer=MSG["ListPodResourcesRequest"].FromString,
            response_serializer=lambda m: m.SerializeToString()),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server.add_insecure_port("unix:" + args.socket)
    server.start()
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(args.ready_file + ".tmp", args.ready_file)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(0)
    # Not sys.exit: that would wait for a handler still sleeping out its delay_s.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
