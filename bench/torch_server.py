#!/usr/bin/env python3
"""torch_server.py - a minimal OpenAI-compatible server over a small model on the GPU, for
bench/gpu-bench-check.sh: `gpumon bench` against real GPU work, energy per token included.

No weights can be downloaded on the GPU machines, so the model is built from a config with random
weights (transformers' LlamaForCausalLM, about 0.4 B parameters by default, bf16): its text is
noise, its GPU work is real. Requests are served by one decode loop that batches every stream in
flight (continuous batching without a KV cache: each step runs the whole sequences again, which
keeps the GPU busy and the code short). There is no tokenizer either: a word is one token (its
hash modulo the vocabulary), and each generated token is the word "tokN".

POST /v1/completions and /v1/chat/completions (stream: true only, with stream_options.
include_usage, max_tokens; ignore_eos is implied: random weights have no end), GET /v1/models.

Usage: torch_server.py [--port 8000] [--port-file PATH] [--layers 8] [--hidden 2048]
Needs torch, transformers, aiohttp (the GPU image has them)."""
import argparse
import asyncio
import json
import time

import torch
from aiohttp import web
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 32000
MODEL_ID = "random-llama"


class Engine:
    def __init__(self, layers, hidden, max_batch):
        cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=hidden * 4,
                          num_hidden_layers=layers, num_attention_heads=hidden // 128,
                          num_key_value_heads=hidden // 128, max_position_embeddings=4096)
        torch.manual_seed(0)
        self.model = LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()
        self.max_batch = max_batch
        self.queue = asyncio.Queue()
        self.active = []  # [tokens list, remaining, asyncio.Queue for its output]

    @torch.inference_mode()
    def step(self, seqs):
        """One decode step for every sequence (left-padded to the longest): the next token each."""
        n = max(len(s) for s in seqs)
        ids = torch.zeros((len(seqs), n), dtype=torch.long)
        mask = torch.zeros((len(seqs), n), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, n - len(s):] = torch.tensor(s)
            mask[i, n - len(s):] = 1
        out = self.model(input_ids=ids.cuda(), attention_mask=mask.cuda()).logits[:, -1, :]
        return out.argmax(dim=-1).tolist()

    async def run(self):
        loop = asyncio.get_running_loop()
        while True:
            if not self.active:
                self.active.append(await self.queue.get())
            while not self.queue.empty() and len(self.active) < self.max_batch:
                self.active.append(self.queue.get_nowait())
            toks = await loop.run_in_executor(None, self.step, [a[0] for a in self.active])
            now = time.perf_counter()
            still = []
            for a, t in zip(self.active, toks):
                a[0].append(t)
                a[1] -= 1
                a[2].put_nowait((t, now))
                if a[1] > 0:
                    still.append(a)
                else:
                    a[2].put_nowait(None)
            self.active = still


def tokens(text):
    return [hash(w) % VOCAB for w in text.split()] or [1]


async def completions(request):
    body = await request.json()
    chat = request.path.endswith("/chat/completions")
    if chat:
        text = " ".join(m.get("content") or "" for m in body.get("messages", []))
    else:
        text = body.get("prompt", "")
    prompt = tokens(text)
    n = int(body.get("max_tokens") or 16)
    usage = bool((body.get("stream_options") or {}).get("include_usage"))
    out = asyncio.Queue()
    await request.app["engine"].queue.put([list(prompt), n, out])
    rid = ("chatcmpl-" if chat else "cmpl-") + str(id(out))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    sent = 0
    while (item := await out.get()) is not None:
        tok, _ = item
        sent += 1
        choice = ({"index": 0, "delta": {"content": "tok%d " % tok}, "finish_reason": None}
                  if chat else {"index": 0, "text": "tok%d " % tok, "finish_reason": None})
        await resp.write(b"data: " + json.dumps({"id": rid, "choices": [choice]}).encode() + b"\n\n")
    if usage:
        u = {"prompt_tokens": len(prompt), "completion_tokens": sent,
             "total_tokens": len(prompt) + sent}
        await resp.write(b"data: " + json.dumps({"id": rid, "choices": [], "usage": u}).encode()
                         + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


async def models(request):
    return web.json_response({"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--port-file")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--max-batch", type=int, default=64)
    a = ap.parse_args()
    app = web.Application()
    app["engine"] = Engine(a.layers, a.hidden, a.max_batch)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", a.port)
    await site.start()
    engine_task = asyncio.create_task(app["engine"].run())
    if a.port_file:
        with open(a.port_file, "w") as f:
            f.write("%d\n" % a.port)
    print("torch_server: listening on 127.0.0.1:%d (%s)" % (a.port, torch.cuda.get_device_name()),
          flush=True)
    await engine_task


if __name__ == "__main__":
    asyncio.run(main())
