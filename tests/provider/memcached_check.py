#!/usr/bin/env python3
"""memcached_check.py HOST PORT - memcached's text protocol, command by
command, printing each answer as it came (a large value as its length and
digest): storage commands (set, add, replace, append, prepend, cas),
retrieval (get, gets, multi-get), incr/decr, touch, delete, a 512 KiB
value, a value sent in pieces and pipelined commands.  Run against the
kernel-TCP server and the lwIP one: the outputs must be equal.  Bounded:
every receive waits at most 10 s."""
import hashlib
import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((host, port), timeout=10)
buf = b""


def line():
    global buf
    while b"\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            raise SystemExit("connection closed")
        buf += d
    out, buf = buf.split(b"\r\n", 1)
    return out


def exactly(n):
    global buf
    while len(buf) < n:
        d = s.recv(65536)
        if not d:
            raise SystemExit("connection closed")
        buf += d
    out, buf = buf[:n], buf[n:]
    return out


def show(v):
    if len(v) > 64:
        return "<%d bytes sha1 %s>" % (len(v), hashlib.sha1(v).hexdigest()[:16])
    return v.decode()


def answer(cmd):
    """One command's whole answer: VALUE blocks up to END, else a line."""
    out = []
    while True:
        l = line()
        if l.startswith(b"VALUE "):
            parts = l.split()
            data = exactly(int(parts[3]) + 2)[:-2]
            # the cas unique of gets is the server's counter: shown as "cas"
            head = " ".join(p.decode() for p in parts[:4]) + (" cas" if len(parts) > 4 else "")
            out.append("%s = %s" % (head, show(data)))
            continue
        out.append(l.decode())  # END, STORED, an error...: the last line
        break
    print("%-40s -> %s" % (show(cmd)[:40], " | ".join(out)))


def cmd(c, data=None, label=None):
    s.sendall(c + b"\r\n" + (data + b"\r\n" if data is not None else b""))
    answer(label or c)


big = bytes((i * 7 + 3) & 0xFF for i in range(512 * 1024))
cmd(b"set a 0 0 1", b"1")
cmd(b"get a")
cmd(b"add a 0 0 1", b"2")
cmd(b"add b 5 0 3", b"bbb")
cmd(b"replace a 0 0 2", b"10")
cmd(b"replace nosuch 0 0 1", b"x")
cmd(b"append b 0 0 2", b"++")
cmd(b"prepend b 0 0 2", b"--")
cmd(b"get a b nosuch")
cmd(b"incr a 32")
cmd(b"decr a 2")
cmd(b"incr b 1")
cmd(b"incr nosuch 1")
s.sendall(b"gets a\r\n")
l = line()
unique = l.split()[4]
exactly(int(l.split()[3]) + 2)
line()
print("gets a -> unique read")
cmd(b"cas a 0 0 2 " + unique, b"99", b"cas a 0 0 2 (unique)")
cmd(b"cas a 0 0 2 " + unique, b"77", b"cas a 0 0 2 (unique)")
cmd(b"get a")
cmd(b"touch a 100")
cmd(b"set big 0 0 %d" % len(big), big)
cmd(b"get big")
# a value sent in pieces, 50 ms apart
s.sendall(b"set pieces 0 0 20000\r\n")
piece = bytes(range(200)) * 100
for i in range(0, 20000, 5000):
    s.sendall(piece[i:i + 5000])
    time.sleep(0.05)
s.sendall(b"\r\n")
answer(b"set pieces (in pieces)")
cmd(b"get pieces")
# pipelined: 50 sets and 50 gets in one send
s.sendall(b"".join(b"set p%d 0 0 %d\r\n%s\r\n" % (i, len(str(i)), str(i).encode()) for i in range(50)))
stored = [line().decode() for _ in range(50)]
print("50 pipelined sets ->", stored.count("STORED"), "STORED")
s.sendall(b"".join(b"get p%d\r\n" % i for i in range(50)))
got = []
for i in range(50):
    v = line().split()
    got.append(exactly(int(v[3]) + 2)[:-2].decode())
    line()
print("50 pipelined gets ->", "all equal" if got == [str(i) for i in range(50)] else got)
cmd(b"delete a")
cmd(b"delete a")
cmd(b"get a")
cmd(b"bogus command")
s.sendall(b"quit\r\n")
print("closed" if s.recv(1) == b"" else "not closed")
