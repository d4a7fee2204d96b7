#!/usr/bin/env python3
# splice_program.py - an unmodified program's splice, tee, vmsplice and
# sendfile (os.splice, os.sendfile, and tee/vmsplice through ctypes) on
# pipes and socket pairs, their readiness in an epoll instance: run plainly
# and under uepoll-run by run.sh, the output must be the same.
import ctypes
import errno
import os
import select
import socket
import tempfile

libc = ctypes.CDLL(None, use_errno=True)
libc.tee.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
libc.tee.restype = ctypes.c_ssize_t
libc.vmsplice.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
libc.vmsplice.restype = ctypes.c_ssize_t


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def say(what, call):
    try:
        r = call()
    except OSError as e:
        print(f"{what} = -1 {errno.errorcode[e.errno]}")
    else:
        print(f"{what} = {r!r}")


def c_call(fn, *args):
    r = fn(*args)
    if r < 0:
        raise OSError(ctypes.get_errno(), "")
    return r


def vmsplice(fd, buf, flags=0):
    iov = Iovec(ctypes.cast(buf, ctypes.c_void_p), len(buf))
    return c_call(libc.vmsplice, fd, ctypes.byref(iov), 1, flags)


def ready(ep):
    return sorted((fd, ev) for fd, ev in ep.poll(0))


f = tempfile.TemporaryFile()
f.write(bytes(ord("a") + i % 26 for i in range(10000)))
f.flush()
fd = f.fileno()
r1, w1 = os.pipe()
r2, w2 = os.pipe()
a, b = socket.socketpair()
ep = select.epoll()
for x in (r1, r2, b.fileno()):
    ep.register(x, select.EPOLLIN)
say("splice file->pipe", lambda: os.splice(fd, w1, 3000, offset_src=100))
say("ready", lambda: ready(ep))
say("tee pipe->pipe", lambda: c_call(libc.tee, r1, w2, 500, 0))
say("read tee'd", lambda: os.read(r2, 8))
say("splice pipe->socket", lambda: os.splice(r1, a.fileno(), 1000))
say("recv", lambda: b.recv(6))
say("splice pipe->file", lambda: os.splice(r1, fd, 10, offset_dst=0))
say("file head", lambda: os.pread(fd, 12, 0))
say("splice pipe->pipe", lambda: os.splice(r1, w2, 100000))
say("ready", lambda: ready(ep))
say("drain", lambda: len(os.read(r2, 100000)))
say("sendfile file->pipe", lambda: os.sendfile(w1, fd, 20, 50))
say("sendfile file->socket", lambda: os.sendfile(a.fileno(), fd, 0, 26))
say("recv", lambda: b.recv(100))
say("vmsplice in", lambda: vmsplice(w1, ctypes.create_string_buffer(b"gift", 4), 8))
out = ctypes.create_string_buffer(100)
say("vmsplice out", lambda: vmsplice(r1, out))
say("got", lambda: out.raw[:54])
os.set_blocking(r1, False)
say("splice empty pipe", lambda: os.splice(r1, w2, 10))
say("splice offset on pipe", lambda: os.splice(r1, w2, 10, offset_src=0))
say("splice socket->socket", lambda: os.splice(a.fileno(), b.fileno(), 10))
say("tee pipe->socket", lambda: c_call(libc.tee, r1, a.fileno(), 10, 0))
b.send(b"back")
say("splice socket->pipe", lambda: os.splice(a.fileno(), w2, 10))
say("ready", lambda: ready(ep))
say("read", lambda: os.read(r2, 10))
