"""A pipe's round trip on this machine, with no policy in it: writes a
short JSON line to a program and reads its answer, 20,000 times.

    python3 benches/pipe_roundtrip.py sh -c 'exec stdbuf -oL cat'
    python3 benches/pipe_roundtrip.py python3 -u -c \
      'import sys
    for l in sys.stdin: sys.stdout.write(l); sys.stdout.flush()'

The ceiling of one decision a round trip (docs/benchmarks.md, "External
policies over a pipe").
"""

import subprocess
import sys
import time

p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
msg = b'{"type":"x","id":1}\n'
n = 20000
t = time.perf_counter()
for _ in range(n):
    p.stdin.write(msg)
    p.stdout.readline()
dt = time.perf_counter() - t
print(f"{n / dt:.0f} round trips/s ({dt / n * 1e6:.1f} us)")
p.stdin.close()
p.wait()
