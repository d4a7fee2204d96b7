# ports.sh - free_port: a TCP port of 127.0.0.1 that nothing is bound to
# now (the kernel's pick for a bind to port 0), for the tests that start a
# server on 127.0.0.1 (tests/realprograms, tests/provider, tests/vclock).
# Sourced by POSIX sh and bash scripts, not run; needs python3.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
