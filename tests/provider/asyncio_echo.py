# asyncio_echo.py - a Python asyncio echo server and client in one process
# over 127.0.0.1 (no uepoll in it), run plainly and under
# `uepoll-run --provider lwip` by tests/provider/run.sh, which compares the
# outputs.  Streams (start_server / open_connection: TCP_NODELAY, non-blocking
# connect, SO_ERROR, accept, epoll through the selector), several clients at
# once, messages of growing size, EOF both ways, a refused connect, and a UDP
# echo (datagram endpoints).
# Prints what it saw, never addresses or ports.  Bounded: 20 s in all.
import asyncio
import socket


async def handle(reader, writer):
    n = 0
    while True:
        line = await reader.readline()
        if not line:
            break
        n += len(line)
        writer.write(line)
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def client(port, k):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sock = writer.get_extra_info("socket")
    nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    total = 0
    for size in (1, 10, 100, 1000, 10000, 100000):
        msg = (str(k) * size)[:size].encode() + b"\n"
        writer.write(msg)
        await writer.drain()
        back = await reader.readexactly(len(msg))
        assert back == msg, (k, size)
        total += len(back)
    writer.write_eof()
    rest = await reader.read()
    writer.close()
    await writer.wait_closed()
    return f"client {k}: nodelay {nodelay != 0}, echoed {total} bytes, eof rest {len(rest)}"


class UdpEcho(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data.upper(), addr)


class UdpClient(asyncio.DatagramProtocol):
    def __init__(self):
        self.got = asyncio.get_running_loop().create_future()
        self.replies = []

    def datagram_received(self, data, addr):
        self.replies.append(data)
        if len(self.replies) == 3:
            self.got.set_result(self.replies)


async def udp():
    loop = asyncio.get_running_loop()
    srv, _ = await loop.create_datagram_endpoint(UdpEcho, local_addr=("127.0.0.1", 0))
    port = srv.get_extra_info("sockname")[1]
    cli, proto = await loop.create_datagram_endpoint(UdpClient, remote_addr=("127.0.0.1", port))
    for m in (b"one", b"two", b"x" * 1000):
        cli.sendto(m)
    replies = await proto.got
    print(f"udp: {len(replies)} replies, {sum(map(len, replies))} bytes, first {replies[0]!r}")
    cli.close()
    srv.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    fam = server.sockets[0].family
    print(f"server family {fam.name}")
    results = await asyncio.gather(*(client(port, k) for k in range(4)))
    for r in results:
        print(r)
    server.close()
    await server.wait_closed()
    try:
        await asyncio.open_connection("127.0.0.1", port)
        print("refused: no")
    except ConnectionRefusedError as e:
        print(f"refused: {type(e).__name__}")
    await udp()


asyncio.run(asyncio.wait_for(main(), 20))
print("done")
