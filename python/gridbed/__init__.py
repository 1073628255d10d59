"""gridbed from Python: run the emulator, and write its policies.

    import gridbed

    quickstart = gridbed.testbed("quickstart")      # a testbed shipped with it
    record = gridbed.run(quickstart, strategy="data-present")
    print(record["summary"]["makespan_s"])

    def least_loaded(request):
        free = {s["id"]: s["free"] for s in request["sites"]}
        return max(request["eligible"], key=lambda s: free[s])

    mine = gridbed.run(quickstart, strategy=gridbed.policy(select=least_loaded))

`run`, `sweep` and `calibrate` run the `gridbed` command (installed with
this package) and return what it wrote as Python objects; `policy` passes
Python functions as a policy without a command line; `serve` and `pick`
write a policy program of your own that gridbed starts with
`external[cmd="python3 my_policy.py"]` (docs/write-a-policy.md).
"""

from .runner import GridbedError, Policy, Run, Sweep, binary, calibrate, policy, run, sweep, testbed
from .serving import PROTOCOL, pick, serve

__all__ = [
    "GridbedError",
    "PROTOCOL",
    "Policy",
    "Run",
    "Sweep",
    "binary",
    "calibrate",
    "pick",
    "policy",
    "run",
    "serve",
    "sweep",
    "testbed",
]
