import asyncio, sys, websockets
async def main(url, secs):
    n = 0
    async with websockets.connect(url, max_size=None) as ws:
        loop = asyncio.get_running_loop(); end = loop.time() + secs
        while loop.time() < end:
            try:
                await asyncio.wait_for(ws.recv(), timeout=max(0.01, end - loop.time())); n += 1
            except asyncio.TimeoutError:
                break
    print(n)
asyncio.run(main(sys.argv[1], float(sys.argv[2])))
