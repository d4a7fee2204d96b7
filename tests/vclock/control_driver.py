#!/usr/bin/env python3
"""control_driver.py UEPOLL_RUN MANUAL_PROGRAM - a test driver on the
virtual clock's control channel (uepoll-run --virtual-time manual --control).

1. Drives manual_program.c, unmodified, step by step: wait-idle, advance,
   set-realtime; its output (a poll timeout on a kernel socket, interval
   timer counts, a TFD_TIMER_CANCEL_ON_SET timer's ECANCELED after the clock
   is set, then its expiry) must be exactly the expected lines.
2. Meanwhile feeds the channel hostile input (garbage, NUL bytes, over-long
   lines, huge and negative numbers, partial lines then a disconnect, more
   clients than it serves, a client that never reads its replies): each gets
   an error reply or is closed, the clock does not move, the program keeps
   its descriptors count and goes on.
3. The other ways in: fd:N (an inherited socket) drives `sleep 1000`; a
   directory others may enter is refused with a warning.
Every wait is bounded; exit 0, or 1 with FAIL lines."""
import os
import socket
import subprocess
import sys
import tempfile
import time

run, prog = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def connect(path, deadline_s=20):
    end = time.monotonic() + deadline_s
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(20)
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > end:
                raise
            time.sleep(0.02)


def reply(s):
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return data.decode(errors="replace") + "<closed>"
        data += chunk
    return data.decode(errors="replace").rstrip("\n")


def cmd(s, line):
    s.sendall(line.encode() + b"\n")
    return reply(s)


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def hostile(path, ctl, pid):
    before = cmd(ctl, "now")
    fds = fd_count(pid)
    s = connect(path)
    cases = [
        (b"hello\n", "error unknown command"),
        (b"now\x00\n", "error unknown command"),
        (b"\r\n", "error unknown command"),
        (b"advance -5\n", "error bad number"),
        (b"advance +5\n", "error bad number"),
        (b"advance 0x10\n", "error bad number"),
        (b"advance 99999999999999999999\n", "error bad number"),
        (b"advance 9223372036854775807\n", "error out of range"),
        (b"advance-to 0\n", "error out of range"),
        (b"set-realtime 1 2\n", "error wrong number of arguments"),
        (b"now now now now\n", "error too many arguments"),
        (b"wait-idle 999999999\n", "error bad timeout"),
        (b"x" * 10000 + b"\n", "error line too long"),
        (bytes(range(1, 256)).replace(b"\n", b"") + b"\n", "error line too long"),
        (b"mode\n", "ok manual"),
    ]
    for data, want in cases:
        s.sendall(data)
        got = reply(s)
        check(got.startswith(want), "%r -> %r, not %r" % (data[:40], got, want))
    s.sendall(b"adv")  # a partial line, then a disconnect
    s.close()
    # More clients than are served: the extra ones are told and closed.
    many = [connect(path) for _ in range(20)]
    answers = []
    for c in many:
        try:
            c.sendall(b"now\n")
        except OSError:
            pass  # a refused one: told, then closed
        try:
            answers.append(reply(c))
        except OSError as e:
            answers.append(str(e))
    served = sum(a.startswith("ok ") for a in answers)
    refused = sum(a.startswith("error too many clients") for a in answers)
    check(served >= 1 and served + refused == 20 and served <= 8, "20 clients: %d served, %d refused" % (served, refused))
    for c in many:
        c.close()
    # A client that never reads: the server drops it rather than block.
    greedy = connect(path)
    greedy.settimeout(10)
    try:
        for _ in range(400):
            greedy.sendall(b"now\n" * 1000)
    except OSError:
        pass  # dropped: EPIPE, ECONNRESET or a timeout
    greedy.close()
    check(cmd(ctl, "now") == before, "hostile input moved the clock: %s, then %s" % (before, cmd(ctl, "now")))
    time.sleep(0.2)  # the server closes dropped clients at once; give it a moment on a loaded machine
    check(fd_count(pid) == fds, "the program had %d descriptors, now %d" % (fds, fd_count(pid)))


def drive_program(tmp):
    path = os.path.join(tmp, "ctl")
    p = subprocess.Popen([run, "--virtual-time", "manual", "--control", path, prog], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        ctl = connect(path)
        check(cmd(ctl, "mode") == "ok manual", "mode")
        rt0 = int(cmd(ctl, "now").split()[2])
        check(cmd(ctl, "wait-idle") == "ok idle", "idle in its poll")
        hostile(path, ctl, p.pid)
        steps = ["advance 5000000000", "advance 10000000000", "advance 25000000000",
                 "set-realtime %d" % (rt0 + (40 + 7200) * 10**9), "advance 60000000000"]
        for i, line in enumerate(steps):
            got = cmd(ctl, line)
            # The last step ends the program, which may exit before the reply.
            last_ok = i + 1 == len(steps) and got == "<closed>"
            check(got.startswith("ok ") or last_ok, "%s -> %s" % (line, got))
            if line.startswith("set-realtime"):
                check(int(got.split()[2]) == rt0 + (40 + 7200) * 10**9, "realtime after set: %s" % got)
            if i + 1 < len(steps):  # (after the last one the program exits)
                got = cmd(ctl, "wait-idle 20000")
                check(got == "ok idle", "wait-idle after %s: %s" % (line, got))
        out, err = p.communicate(timeout=20)
    except Exception:
        if p.poll() is None:
            p.kill()
        out, err = p.communicate(timeout=20)
        print("program exit %s, output:\n%s\nstderr:\n%s" % (p.returncode, out.decode(), err.decode()))
        raise
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    want = """poll(udp, 5000) = 0 at 5.000
realtime timer armed 3600 s ahead: 0 at 5.000
monotonic timer: 1 at 15.000
monotonic timer: 2 at 40.000
realtime timer: read -1 ECANCELED at 40.000
realtime timer armed 60 s ahead: 0 at 40.000
monotonic timer: 6 at 100.000
realtime timer: 1 at 100.000
"""
    check(out.decode() == want, "program output:\n%s\nwanted:\n%s" % (out.decode(), want))
    check(err == b"", "stderr: %r" % err)
    check(p.returncode == 0, "program exit %s" % p.returncode)
    print("manual program: %d lines as wanted, hostile input answered" % len(out.splitlines()), flush=True)


def inherited_fd():
    mine, theirs = socket.socketpair()
    p = subprocess.Popen([run, "--virtual-time", "manual", "--control", "fd:%d" % theirs.fileno(), "sleep", "1000"],
                         pass_fds=[theirs.fileno()], stderr=subprocess.PIPE)
    theirs.close()
    mine.settimeout(20)
    try:
        check(cmd(mine, "wait-idle 20000") == "ok idle", "fd: idle in sleep")
        check(cmd(mine, "advance 999999999999").startswith("ok "), "fd: advance")
        time.sleep(0.05)
        check(p.poll() is None, "sleep 1000 ended a nanosecond early")
        got = cmd(mine, "advance 1")  # ends the program, which may exit before the reply
        check(got.startswith("ok ") or got == "<closed>", "fd: advance 1 -> %s" % got)
        p.wait(timeout=20)
        check(p.returncode == 0, "sleep exit %s" % p.returncode)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    print("fd:N: sleep 1000 ended at the 1000th virtual second", flush=True)


def open_directory(tmp):
    d = os.path.join(tmp, "open")
    os.mkdir(d, 0o755)
    os.chmod(d, 0o755)
    r = subprocess.run([run, "--virtual-time", "manual", "--control", os.path.join(d, "ctl"), "true"],
                       stderr=subprocess.PIPE, timeout=20)
    check(b"no control channel" in r.stderr and not os.path.exists(os.path.join(d, "ctl")),
          "a 0755 directory: %r" % r.stderr)
    print("open directory: refused", flush=True)


t0 = time.monotonic()
with tempfile.TemporaryDirectory() as tmp:  # mode 0700
    drive_program(tmp)
    inherited_fd()
    open_directory(tmp)
print("%.0f ms real" % ((time.monotonic() - t0) * 1000))
sys.exit(1 if failures else 0)
