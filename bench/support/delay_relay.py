# A TCP relay on 127.0.0.1 that delays the client-to-server direction by DELAY seconds (a far
# server's round trip for each request), and passes the server-to-client direction straight on.
import asyncio, sys, time
listen_port, target_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

async def pipe(reader, writer, lag):
    queue = asyncio.Queue()
    async def feed():
        while True:
            data = await reader.read(65536)
            await queue.put((time.monotonic() + lag, data))
            if not data:
                return
    async def drain():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                try:
                    writer.write_eof()
                except Exception:
                    pass
                return
            writer.write(data)
            await writer.drain()
    try:
        await asyncio.gather(feed(), drain())
    except Exception:
        pass
    finally:
        writer.close()

async def handle(client_reader, client_writer):
    server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    await asyncio.gather(pipe(client_reader, server_writer, delay), pipe(server_reader, client_writer, 0))

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()

asyncio.run(main())
