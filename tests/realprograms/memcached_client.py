"""tests/realprograms/memcached_client.py - exact answers of a memcached.

Talks memcached's text protocol to 127.0.0.1:PORT over several connections
at once (so that more than one of the server's worker threads serves them)
and prints every reply line; run.sh compares the output of a plain and a
uepoll-run server line for line.  Usage: memcached_client.py PORT
"""
import hashlib
import socket
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def data(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("server closed the connection")
            self.buf += chunk
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d

    def get(self, keys):
        """get/gets KEYS: the VALUE lines, each value's md5, and END."""
        self.send(("%s\r\n" % keys).encode())
        out = []
        while True:
            line = self.line()
            if not line.startswith("VALUE"):
                out.append(line)
                return out
            f = line.split()
            v = self.data(int(f[3]))
            cas = " cas" if len(f) > 4 else ""  # the cas unique itself is the server's to choose
            out.append("VALUE %s %s %s%s md5=%s" % (f[1], f[2], f[3], cas, hashlib.md5(v).hexdigest()))


def store(c, cmd, key, value, flags=0, extra=""):
    c.send(b"%s %s %d 0 %d%s\r\n%s\r\n" % (cmd.encode(), key.encode(), flags, len(value), extra.encode(), value))
    return c.line()


def main():
    port = int(sys.argv[1])
    conns = [Conn(port) for _ in range(8)]
    out = []
    for i, c in enumerate(conns):  # each connection writes its own keys
        out.append(store(c, "set", "k%d" % i, b"value-%d" % i, flags=i))
    for i, c in enumerate(conns):  # and reads the others'
        out += conns[(i + 1) % 8].get("get k%d" % i)
    c = conns[0]
    out.append(store(c, "add", "k0", b"x"))
    out.append(store(c, "add", "fresh", b"x"))
    out.append(store(c, "replace", "nokey", b"x"))
    out.append(store(c, "append", "k1", b"-tail"))
    out.append(store(c, "prepend", "k1", b"head-"))
    out += c.get("get k1 k2 nokey k3")
    big = bytes((i * 7 + 3) % 251 for i in range(512 * 1024))  # several reads and writes per request
    out.append(store(conns[3], "set", "big", big))
    out += conns[5].get("get big")
    out.append(store(c, "set", "n", b"10"))
    for cmd in ("incr n 5", "decr n 3", "incr n 18446744073709551610", "incr k0 1", "incr nokey 1"):
        c.send(cmd.encode() + b"\r\n")
        out.append(c.line())
    g = c.get("gets k2")
    c.send(b"gets k2\r\n")
    f = c.line().split()
    c.data(int(f[3]))
    c.line()
    cas = f[4]
    out += g
    out.append(store(c, "cas", "k2", b"swapped", extra=" " + cas))
    out.append(store(c, "cas", "k2", b"again", extra=" " + cas))
    out += c.get("get k2")
    for cmd in ("delete k3", "delete k3", "touch k4 100", "bogus command"):
        c.send(cmd.encode() + b"\r\n")
        out.append(c.line())
    for c in conns:
        c.send(b"quit\r\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
