"""Run the `gridbed` command from Python and read what it wrote.

Each function runs the command the wheel installed (or `GRIDBED_BIN`, or
the first `gridbed` on PATH) in a subprocess, reads the files it wrote (the
run's JSON record, its control database, a sweep's CSV) and returns them as
Python objects. A run that fails or does not complete raises
`GridbedError` with gridbed's own message.

Keyword arguments beyond the named ones are the command's options:
`maxpre=20` is `--maxpre 20`, `always_run_post=True` is
`--always-run-post`, a list repeats the option once per value, and
`None` or `False` leaves it out.
"""

import csv
import json
import os
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import threading

from . import serving


class GridbedError(Exception):
    """gridbed exited non-zero: `message` is what it said (its `error:`
    lines), `returncode` its exit value (2: bad input, 1: the run failed or
    did not complete), `record` the run's record where it wrote one."""

    def __init__(self, message, returncode, command, record=None):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.command = command
        self.record = record


def binary():
    """The `gridbed` command this package runs."""
    given = os.environ.get("GRIDBED_BIN")
    if given:
        return given
    exe = "gridbed.exe" if os.name == "nt" else "gridbed"
    beside = os.path.join(sysconfig.get_path("scripts"), exe)
    if os.path.isfile(beside):
        return beside
    found = shutil.which("gridbed")
    if found:
        return found
    raise GridbedError(
        "no `gridbed` command: `pip install gridbed` installs it, or set GRIDBED_BIN "
        "to a built one (target/release/gridbed)",
        returncode=None,
        command=None,
    )


def testbed(name):
    """The path of a testbed shipped with this package (`quickstart`,
    `spcl-live-4`, `grid-100`, ...: the repository's `testbeds/`)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testbeds")
    path = os.path.join(here, name if name.endswith(".toml") else name + ".toml")
    if not os.path.isfile(path):
        names = sorted(f[:-5] for f in os.listdir(here) if f.endswith(".toml"))
        raise ValueError(f"no testbed `{name}` is shipped; expected one of {', '.join(names)}")
    return path


def _frame(tables, which):
    """`tables[which]` (a list of dicts) as a pandas DataFrame."""
    if which not in tables:
        expected = " or ".join(repr(t) for t in tables)
        raise ValueError(f"frame({which!r}): expected {expected}")
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"pandas is not installed; the {which} are a list of dicts here") from e
    return pandas.DataFrame(tables[which])


class Policy:
    """Python functions served as a policy for the runs they are passed to
    (`gridbed.policy(select=fn)`): while a run goes, a loopback socket in
    this process answers the program gridbed starts (`_relay.py`, which
    joins its stdin and stdout to the socket), one connection a run, with
    `serving.serve`."""

    def __init__(self, select=None, evict=None, notify=None, pick_up=None, batch=1024, timeout=None, name=None):
        if not any((select, evict, notify, pick_up)):
            raise ValueError("policy() needs at least one of select, evict, notify, pick_up")
        first = next(f for f in (select, evict, notify, pick_up) if f is not None)
        self.name = name or getattr(first, "__name__", "policy")
        self._handlers = dict(select=select, evict=evict, notify=notify, pick_up=pick_up)
        self._batch = batch
        self._timeout = timeout
        self._listener = None
        self._threads = []

    def __enter__(self):
        self._listener = socket.create_server(("127.0.0.1", 0))
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads = [accept]
        return self

    def __exit__(self, *exc):
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
            except OSError:
                pass
            listener.close()
        for t in self._threads:
            t.join(timeout=5)

    def _accept(self):
        listener = self._listener
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the runs are over
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn, conn.makefile("r", encoding="utf-8", newline="\n") as r, conn.makefile(
            "w", encoding="utf-8", newline="\n"
        ) as w:
            try:
                serving.serve(stdin=r, stdout=w, batch=self._batch, **self._handlers)
            except (OSError, ValueError):
                pass  # gridbed ended the run; it says why

    def spec(self):
        """The `external[...]` name gridbed runs this policy under (only
        while it is served: inside `with policy:` or a gridbed call)."""
        if self._listener is None:
            raise RuntimeError("the policy is served only during a gridbed call or inside `with policy:`")
        port = self._listener.getsockname()[1]
        relay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_relay.py")
        cmd = f"{shlex.quote(sys.executable)} {shlex.quote(relay)} {port}"
        cmd = cmd.replace("\\", "\\\\").replace('"', '\\"')
        timeout = f", timeout={self._timeout}" if self._timeout is not None else ""
        return f'external[cmd="{cmd}"{timeout}]'

    def __str__(self):
        return self.spec()


def policy(select=None, evict=None, notify=None, pick_up=None, batch=1024, timeout=None, name=None):
    """A Python function (or several) as a policy, to pass wherever a
    policy name goes: `run(..., strategy=policy(select=fn))`, or among
    `sweep(..., strategies=[...])`. The functions get the requests
    `serving.serve` hands them and answer as there. A `select` whose
    answers depend on its own earlier answers passes batch=1. `name`
    (default: the first function's name) stands for it in a sweep's rows."""
    return Policy(
        select=select, evict=evict, notify=notify, pick_up=pick_up, batch=batch, timeout=timeout, name=name
    )


class _Joined:
    """One option's value that lists several, comma-separated
    (`--strategies`), its policies served."""

    def __init__(self, items):
        self.items = list(items)

    def __str__(self):
        return ",".join(str(s) for s in self.items)


def _policies(values):
    found = []
    for v in values:
        if isinstance(v, Policy):
            found.append(v)
        elif isinstance(v, (list, tuple, _Joined)):
            found.extend(p for p in getattr(v, "items", v) if isinstance(p, Policy))
    return found


def _flags(options):
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args


def _call(args, options, cwd, after=None):
    """Runs `gridbed ARGS OPTIONS`, serving the policies among them
    (`after(policies)` is called while they still are); raises
    GridbedError when it exits non-zero."""
    served = _policies(options.values())
    for p in served:
        p.__enter__()
    try:
        command = [binary(), *map(str, args), *_flags(options)]
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        if after is not None:
            after(served)
    finally:
        for p in served:
            p.__exit__(None, None, None)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.startswith("error")]
        message = "\n".join(said) or done.stderr.strip() or f"exit {done.returncode}"
        raise GridbedError(message, done.returncode, command)
    return done


class Run(dict):
    """A run's JSON record (`gridbed run --json`), with its attempts
    (`jobs`) and transfers (`transfers`) from its control database, a list
    of dicts each; `frame("jobs")` or `frame("transfers")` as a pandas
    DataFrame where pandas is installed."""

    def __init__(self, record, jobs, transfers):
        super().__init__(record)
        self.jobs = jobs
        self.transfers = transfers

    def frame(self, which="jobs"):
        """`jobs` or `transfers` as a pandas DataFrame."""
        return _frame({"jobs": self.jobs, "transfers": self.transfers}, which)


_JOBS = """SELECT j.name AS job, a.attempt, s.name AS site, a.prescript, a.submitted,
    a.started, a.finished, a.ended, a.outcome, a.reason, a.exit, a.transfers
  FROM attempts a JOIN jobs j ON j.id = a.job JOIN sites s ON s.id = a.site
  ORDER BY a.job, a.attempt"""

_TRANSFERS = """SELECT t.id, j.name AS job, f.name AS file, t.bytes, src.name AS source,
    dst.name AS destination, t.start, t."end", t.failure, t.retry
  FROM transfers t JOIN jobs j ON j.id = t.job JOIN files f ON f.id = t.file
    JOIN sites src ON src.id = t.source JOIN sites dst ON dst.id = t.destination
  ORDER BY t.id"""


def _rows(db, query):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(query)]
    finally:
        con.close()


def run(testbed, engine="sim", strategy=None, seed=None, *, db=None, cwd=None, **options):
    """Runs `testbed` (`gridbed run`) and returns its record as a `Run`.

    `strategy` is a site selector's name or a `policy(...)`; `db` keeps the
    control database at that path (else it is read and removed); the other
    keywords are `gridbed run`'s options (`maxpre=20`, `workflow="x.dag"`).
    A run that does not complete raises GridbedError, its `record` set."""
    with tempfile.TemporaryDirectory(prefix="gridbed-") as tmp:
        record_path = os.path.join(tmp, "run.json")
        db_path = os.path.abspath(db) if db else os.path.join(tmp, "run.db")
        opts = dict(engine=engine, strategy=strategy, seed=seed, json=record_path, db=db_path, quiet=True)
        opts.update(options)
        try:
            _call(["run", testbed], opts, cwd)
        except GridbedError as e:
            if os.path.isfile(record_path):
                with open(record_path) as f:
                    e.record = json.load(f)
            raise
        with open(record_path) as f:
            record = json.load(f)
        return Run(record, _rows(db_path, _JOBS), _rows(db_path, _TRANSFERS))


def _number(text):
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _csv(path):
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


class Sweep:
    """A sweep's rows (`sweep.csv`, one a run) and summary
    (`summary.csv`, one a cell over its seeds), lists of dicts with numbers
    as numbers; `frame("rows")` or `frame("summary")` as DataFrames."""

    def __init__(self, rows, summary, out):
        self.rows = rows
        self.summary = summary
        self.out = out

    def frame(self, which="rows"):
        """`rows` or `summary` as a pandas DataFrame."""
        return _frame({"rows": self.rows, "summary": self.summary}, which)


def sweep(testbed, strategies=None, sites=None, maxpre=None, seeds=None, *, out=None, cwd=None, **options):
    """Runs a sweep (`gridbed sweep`) and returns its CSV as a `Sweep`.

    `strategies` is a list of names and `policy(...)`s; `sites`, `maxpre`
    and `seeds` lists of numbers; `out` keeps the folder of CSV and charts
    (else it is read and removed); the other keywords are `gridbed
    sweep`'s options (`engine="live"`, `repeat=3`, `parallel=2`)."""
    with tempfile.TemporaryDirectory(prefix="gridbed-sweep-") as tmp:
        folder = os.path.abspath(out) if out else os.path.join(tmp, "out")

        def joined(values):
            if values is None or isinstance(values, str):
                return values
            return _Joined(values)

        opts = dict(
            strategies=joined(strategies),
            sites=joined(sites),
            maxpre=joined(maxpre),
            seeds=joined(seeds),
            out=folder,
            quiet=True,
        )
        opts.update(options)
        names = {}

        def named(rows):
            for row in rows:
                row["strategy"] = names.get(row.get("strategy"), row.get("strategy"))
            return rows

        def after(served):
            names.update((p.spec(), p.name) for p in served)

        _call(["sweep", testbed], opts, cwd, after)
        return Sweep(
            named(_csv(os.path.join(folder, "sweep.csv"))),
            named(_csv(os.path.join(folder, "summary.csv"))),
            folder if out else None,
        )


def calibrate(traces, testbed, *, cwd=None, **options):
    """Fits a testbed to real runs (`gridbed calibrate`) and returns its
    JSON (the fit and every prediction) as Python objects; the keywords
    are its options (`fit=["job_start_delay"]`, `predict=[...]`)."""
    if isinstance(traces, (str, os.PathLike)):
        traces = [traces]
    with tempfile.TemporaryDirectory(prefix="gridbed-") as tmp:
        path = os.path.join(tmp, "calibration.json")
        opts = dict(testbed=testbed, json=path)
        opts.update(options)
        _call(["calibrate", *traces], opts, cwd)
        with open(path) as f:
            return json.load(f)
