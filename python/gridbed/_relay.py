"""The program gridbed starts for a `gridbed.policy(...)`: it joins its
stdin and stdout to the Python process that holds the policy's functions,
over a loopback socket (argv[1] is the port). Pure standard library, run as
a file, so it needs no `gridbed` on the path of the interpreter that runs
it."""

import os
import socket
import sys
import threading


def _pump_stdin(sock):
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        sock.sendall(chunk)
    sock.shutdown(socket.SHUT_WR)


def main():
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=_pump_stdin, args=(sock,), daemon=True).start()
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            view = view[os.write(1, view) :]


if __name__ == "__main__":
    main()
