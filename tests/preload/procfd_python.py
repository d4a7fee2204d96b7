# procfd_python.py - a descriptor-leak count as Python's test support makes
# it (len(os.listdir('/proc/self/fd')) before and after), around the first
# blocking wait, which makes uepoll's own descriptors; then readlink and
# stat through /proc/self/fd and /dev/fd.  Run plainly and under uepoll-run:
# the same output.
import os
import select
import threading
import time


def count():
    return len(os.listdir('/proc/self/fd'))


before = count()
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
threading.Timer(0.05, lambda: os.write(w, b'x')).start()
print('poll', [(fd == r, ev) for fd, ev in ep.poll(5)])
os.close(r)
os.close(w)
ep.close()
time.sleep(0.1)
print('descriptors left', count() - before)
r, w = os.pipe()
link = os.readlink(f'/proc/self/fd/{r}')
print('readlink', link.split('[')[0], link.endswith(f'[{os.fstat(r).st_ino}]'))
print('stat /dev/fd', os.stat(f'/dev/fd/{w}').st_ino == os.fstat(w).st_ino)
