#!/usr/bin/env python3
"""A delaying TCP relay: latency for the emulated hosts where the kernel
has no netem (tests/net/hosts.py, Hosts.delay, which starts it in the hub
namespace and sends the hosts' connections to it with DNAT rules).

Usage: delayrelay.py DELAY_MS JITTER_MS LIMIT_S LISTEN_ADDR PORT=HOST:HPORT...

Each PORT on LISTEN_ADDR stands for one HOST:HPORT: every connection
accepted there is relayed to it over a connection of its own, and every
chunk read on either side is written to the other DELAY_MS +- JITTER_MS
(uniform) after it arrived, in order: a chunk leaves at the latest of the
previous chunk's departure and its own arrival + delay. An end of stream
is passed on the same way; an error closes both. The relay exits after
LIMIT_S, or when the process that started it is gone.
"""
import asyncio
import os
import random
import sys
import time

CHUNK = 65536


async def pump(reader, writer, delay_s, jitter_s):
    """One direction: reads, and writes each chunk when its time comes."""
    queue = asyncio.Queue()

    async def read():
        last = 0.0
        try:
            while True:
                data = await reader.read(CHUNK)
                last = max(last, time.monotonic() + delay_s + random.uniform(-jitter_s, jitter_s))
                await queue.put((last, data))
                if not data:
                    return
        except OSError:
            await queue.put((0.0, None))

    reading = asyncio.ensure_future(read())
    try:
        while True:
            when, data = await queue.get()
            if data is None:
                break
            await asyncio.sleep(max(0.0, when - time.monotonic()))
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return True
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        reading.cancel()
    return False


async def relay(reader, writer, target, delay_s, jitter_s):
    try:
        up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*target), 10)
    except (OSError, asyncio.TimeoutError):
        writer.close()
        return
    ways = [asyncio.ensure_future(pump(reader, up_writer, delay_s, jitter_s)),
            asyncio.ensure_future(pump(up_reader, writer, delay_s, jitter_s))]
    done, _ = await asyncio.wait(ways, return_when=asyncio.FIRST_COMPLETED)
    clean = all(w.result() for w in done)
    if clean:   # one way ended with an end of stream: the other may go on
        clean = await ways[0 if ways[1] in done else 1]
    # a clean end of stream both ways closes quietly; an error resets both
    for w in ways:
        w.cancel()
    for w in (writer, up_writer):
        if clean:
            w.close()
        else:
            w.transport.abort()


async def main(argv):
    delay_s, jitter_s, limit_s = float(argv[0]) / 1000, float(argv[1]) / 1000, float(argv[2])
    listen = argv[3]
    parent = os.getppid()
    for spec in argv[4:]:
        port, target = spec.split("=")
        host, hport = target.rsplit(":", 1)
        await asyncio.start_server(
            lambda r, w, t=(host, int(hport)): relay(r, w, t, delay_s, jitter_s), listen, int(port))
    print("relaying %d ports, %.0f +- %.0f ms" % (len(argv) - 4, delay_s * 1000, jitter_s * 1000), flush=True)
    end = time.monotonic() + limit_s
    while time.monotonic() < end and os.getppid() == parent:
        await asyncio.sleep(0.5)


if __name__ == "__main__":
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1:]))
