# scm_python.py - descriptor passing from Python's socket module (send_fds,
# recv_fds, sendmsg with SCM_CREDENTIALS), run plainly and under uepoll-run
# by tests/preload/CMakeLists.txt: the same output, nothing on stderr.
import os
import socket
import struct

a, b = socket.socketpair()
f = os.open('/etc/hostname', os.O_RDONLY)
print("send_fds", socket.send_fds(a, [b'x'], [f]))
msg, fds, flags, addr = socket.recv_fds(b, 10, 4)
print("recv_fds", msg, fds, flags)
print("same file", os.pread(fds[0], 64, 0) == os.pread(f, 64, 0))
r, w = os.pipe()
socket.send_fds(a, [b'yz'], [w, r, f])
os.close(w)
msg, got, flags, addr = socket.recv_fds(b, 1, 1)
print("short buffers", msg, got, flags & socket.MSG_CTRUNC != 0)
os.write(got[0], b"through the passed pipe")
os.close(got[0])
print(os.read(r, 64), os.read(r, 64))
print("rest", b.recv(8))
b.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
creds = struct.pack('iII', os.getpid(), os.getuid(), os.getgid())
a.sendmsg([b'c'], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
data, anc, flags, addr = b.recvmsg(8, socket.CMSG_SPACE(12))
pid, uid, gid = struct.unpack('iII', anc[0][2])
print("credentials", data, pid == os.getpid(), uid, gid, flags)
pid, uid, gid = struct.unpack('iII', a.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
print("peercred", pid == os.getpid(), uid, gid)
