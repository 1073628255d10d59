"""The part of HTCondor's ornithology test kit the DAGMan drivers use, as
stand-ins: fixtures are declared with `action`/`standup` (collected by
`runner.py`), and a personal pool (`Condor`) submits a DAG by running
`gridbed run` on it (engine, binary and site catalogue from the
environment: GRIDBED_ENGINE, GRIDBED_BIN, GRIDBED_SITES)."""

import contextlib
import enum
import os
import re
import subprocess
from pathlib import Path

__all__ = [
    "action",
    "standup",
    "Condor",
    "Handle",
    "ClusterState",
    "JobStatus",
    "ChangeDir",
    "write_file",
    "DaemonLog",
]


def _fixture(fn=None, *, params=None):
    def mark(f):
        f._fixture = {"params": params}
        return f

    return mark(fn) if fn is not None else mark


action = _fixture
standup = _fixture


class ClusterState:
    """What a handle's wait waits for; gridbed's submission runs the DAG
    to its end, so every condition holds when it returns."""

    all_complete = "all_complete"
    all_terminal = "all_terminal"
    any_held = "any_held"


class JobStatus(enum.IntEnum):
    IDLE = 1
    RUNNING = 2
    REMOVED = 3
    COMPLETED = 4
    HELD = 5


@contextlib.contextmanager
def ChangeDir(path):
    before = os.getcwd()
    os.chdir(str(path))
    try:
        yield
    finally:
        os.chdir(before)


def write_file(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# Pool settings that do not change what DAGMan runs or how its nodes end
# (its logging, its scanning of logs, its strictness about warnings).
QUIET = {
    "DAGMAN_USER_LOG_SCAN_INTERVAL",
    "DAGMAN_VERBOSITY",
    "DAGMAN_USE_STRICT",
    "DAGMAN_DEBUG",
    "DAGMAN_MAX_SUBMIT_ATTEMPTS",
    "DAGMAN_USE_DIRECT_SUBMIT",
    "DAGMAN_USE_CONDOR_SUBMIT",
}

# condor_submit_dag options and the `gridbed run` flags that do the same.
def _option_flags(options):
    flags = []
    for key, value in options.items():
        k = key.lower()
        if k in ("force", "verbose", "suppress_notification", "notification"):
            continue
        if k == "dorescuefrom":
            flags += ["--rescue-from", str(value)]
        elif k == "autorescue":
            if str(value).lower() in ("0", "false"):
                flags.append("--no-rescue")
        elif k in ("maxjobs", "maxidle", "maxpost"):
            flags += ["--" + k, str(value)]
        elif k == "load_save":
            flags += ["--load-save", str(value)]
        elif k == "rescuefile":
            flags += ["--rescue-file", str(value)]
        elif k == "alwaysrunpost" and str(value).lower() in ("1", "true"):
            flags.append("--always-run-post")
        else:
            raise NotImplementedError(f"condor_submit_dag option {key} is not modelled")
    return flags


class Handle:
    """A submitted DAG: its DAGMan ran to its end as it was submitted."""

    def __init__(self, clusterid, returncode):
        self.clusterid = clusterid
        self.returncode = returncode

    def wait(self, condition=None, timeout=None, **_):
        return True


class Condor:
    """A personal pool: `config` is its configuration."""

    _next_cluster = 1

    def __init__(self, local_dir=None, config=None, **_):
        self.config = dict(config or {})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @contextlib.contextmanager
    def use_config(self):
        yield

    def submit(self, description, count=None, itemdata=None):
        dag = getattr(description, "dag", None)
        if dag is None:
            raise NotImplementedError("only DAGs are submitted here")
        flags = _option_flags(getattr(description, "options", {}))
        for key, value in self.config.items():
            if key == "DAGMAN_ALWAYS_RUN_POST":
                if str(value).lower() in ("1", "true"):
                    flags.append("--always-run-post")
            elif key not in QUIET:
                raise NotImplementedError(f"pool setting {key} is not modelled")
        folder = Path(dag).parent
        testbed = folder / "gridbed-testbed.toml"
        testbed.write_text(
            'strategy = "round-robin"\norigin = "submit-host"\n'
            "[emulation]\ntime_scale = 20\nbyte_scale = 1\n"
            "[manager]\nprescript_interval = 0\n"
            '[[site]]\nname = "submit-host"\n'
            '[[site]]\nname = "grid3-01"\ncpus = 64\n'
            f"[workflow]\nfile = {Path(dag).name!r}\ndefault_runtime = 1\n"
            'scripts = "run"\njobs = "run"\n'
        )
        run = subprocess.run(
            [
                os.environ["GRIDBED_BIN"],
                "run",
                str(testbed),
                "--sites",
                os.environ["GRIDBED_SITES"],
                "--engine",
                os.environ.get("GRIDBED_ENGINE", "sim"),
                "-q",
            ]
            + flags,
            cwd=str(folder),
            capture_output=True,
            text=True,
        )
        if run.returncode not in (0, 1):
            raise RuntimeError(f"gridbed refused {dag}: {run.stderr.strip()}")
        cluster = Condor._next_cluster
        Condor._next_cluster += 1
        return Handle(cluster, run.returncode)


class DaemonLog:
    """A daemon's log (here the DAGMan log gridbed writes,
    `<dag>.dagman.out`), read as messages: each line's header
    (`MM/DD/YY HH:MM:SS`, then tags such as `(D_TEST)`) parsed off."""

    _LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? ((?:\([^()]+\) +)*)(.*)$")

    def __init__(self, path):
        self.path = Path(path)

    def open(self):
        return _DaemonLogStream(self.path)


class _DaemonLogStream:
    def __init__(self, path):
        self.path = path

    def read(self):
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                m = DaemonLog._LINE.match(line)
                if m:
                    yield _LogMessage(line, re.findall(r"\(([^()]+)\)", m.group(1)), m.group(2))


class _LogMessage:
    def __init__(self, line, tags, message):
        self.line, self.tags, self.message = line, tags, message

    def __str__(self):
        return self.line

    def __contains__(self, item):
        return item in self.message
