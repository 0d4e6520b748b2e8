#!/usr/bin/python3
"""py_client.py - the reference Python client for bench/client-accuracy.sh: a streaming OpenAI
client written the way vLLM's benchmark writes it (benchmarks/backend_request_func.py,
async_request_openai_completions, and benchmark_serving.py's driver), so gpumon bench can be
compared with what the Python tools measure.

asyncio + aiohttp (Debian's python3-aiohttp: `apt-get install python3-aiohttp`); one shared
ClientSession with a keep-alive connector, as current vLLM does; --concurrency N is vLLM's
--max-concurrency N with every request launched at once (request rate inf), i.e. a closed loop
of N. Times are time.perf_counter(), which is CLOCK_MONOTONIC on Linux, the clock of the fake
server's log; the per-request trace uses perf_counter_ns() at the same points vLLM reads
perf_counter(), so nothing is lost to float rounding.

Usage: py_client.py --url URL --concurrency N --requests N [--output-tokens N]
                    [--input-tokens N] [--trace FILE]
Prints one JSON line: requests, completed, duration_s, requests_per_s, output_tokens."""
import argparse
import asyncio
import json
import random
import sys
import time

import aiohttp

AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)
WORDS = ("the of and to in is that for it as was with be by on not he this are or his from at "
         "which but have an had they you were their one all we can her has there been if more "
         "when will would who so no time").split()


class Output:
    __slots__ = ("success", "ttft", "itl", "latency", "output_tokens", "error", "id", "st_ns",
                 "first_ns", "last_ns")

    def __init__(self):
        self.success = False
        self.ttft = 0.0
        self.itl = []
        self.latency = 0.0
        self.output_tokens = 0
        self.error = ""
        self.id = ""
        self.st_ns = self.first_ns = self.last_ns = 0


async def request_openai_completions(session, api_url, model, prompt, output_len):
    """vLLM's async_request_openai_completions, with the per-request times kept in ns."""
    payload = {
        "model": model,
        "prompt": prompt,
        "temperature": 0.0,
        "max_tokens": output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    headers = {"Authorization": "Bearer none"}
    output = Output()
    generated_text = ""
    st = time.perf_counter()
    output.st_ns = int(st * 1e9)
    most_recent_timestamp = st
    try:
        async with session.post(url=api_url, json=payload, headers=headers) as response:
            if response.status == 200:
                first_chunk_received = False
                async for chunk_bytes in response.content:
                    chunk_bytes = chunk_bytes.strip()
                    if not chunk_bytes:
                        continue
                    chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                    if chunk != "[DONE]":
                        data = json.loads(chunk)
                        if choices := data.get("choices"):
                            text = choices[0].get("text")
                            timestamp = time.perf_counter()
                            if not first_chunk_received:
                                first_chunk_received = True
                                ttft = time.perf_counter() - st
                                output.ttft = ttft
                                output.first_ns = int(timestamp * 1e9)
                                output.id = data.get("id", "")
                            else:
                                output.itl.append(timestamp - most_recent_timestamp)
                            most_recent_timestamp = timestamp
                            generated_text += text or ""
                        elif usage := data.get("usage"):
                            output.output_tokens = usage.get("completion_tokens")
                if first_chunk_received:
                    output.success = True
                else:
                    output.error = "never received a valid chunk"
                output.latency = most_recent_timestamp - st
                output.last_ns = int(most_recent_timestamp * 1e9)
            else:
                output.error = response.reason or ""
    except Exception as e:  # as vLLM: any failure is a failed request
        output.error = repr(e)
    return output


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", default="fake-model")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--input-tokens", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=16)
    ap.add_argument("--trace")
    a = ap.parse_args()
    api_url = a.url.rstrip("/") + "/v1/completions"
    rnd = random.Random(0)
    prompts = [" ".join(rnd.choice(WORDS) for _ in range(a.input_tokens)) for _ in range(256)]
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60,
                                     enable_cleanup_closed=True)
    async with aiohttp.ClientSession(connector=connector, trust_env=True,
                                     timeout=AIOHTTP_TIMEOUT) as session:
        semaphore = asyncio.Semaphore(a.concurrency)

        async def limited(i):
            async with semaphore:
                return await request_openai_completions(session, api_url, a.model,
                                                        prompts[i % len(prompts)],
                                                        a.output_tokens)

        t0 = time.perf_counter()
        outputs = await asyncio.gather(*(limited(i) for i in range(a.requests)))
        duration = time.perf_counter() - t0
    ok = [o for o in outputs if o.success]
    if a.trace:
        with open(a.trace, "w") as f:
            for o in outputs:
                f.write(json.dumps({"id": o.id, "sent_ns": o.st_ns, "first_ns": o.first_ns,
                                    "last_ns": o.last_ns, "output_tokens": o.output_tokens,
                                    "ok": o.success, "error": o.error}) + "\n")
    print(json.dumps({"requests": a.requests, "completed": len(ok), "duration_s": duration,
                      "requests_per_s": len(ok) / duration,
                      "output_tokens": sum(o.output_tokens or 0 for o in ok)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
