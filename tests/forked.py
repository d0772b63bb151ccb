"""``python -m <module> <args>`` without paying for torch's import each time: a process that has
imported the suite once forks a child per command, which runs the module as ``python -m`` would:
a fresh ``__main__``, ``sys.path[0]`` and the working directory set to the command's folder, the
server's environment (equal to the command's, or ``cli`` would not send it here), and a normal
interpreter exit (threads joined, ``atexit`` run, the module's exit status). A new interpreter
costs seconds of torch and Hydra imports; a fork, milliseconds. ``cli`` sends every ``-m`` command
here that the fork runs as a new interpreter would, and the rest to one: a command whose
environment differs from the server's (read at import time), or run in another copy of the suite
(its own ``suite/``, which the server did not import)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = r'''
import json, os, runpy, sys
import suite.run, suite.evidence, suite.tables  # noqa: F401  (torch, Hydra, pandas and the suite, once, before any fork)
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.chdir(job["cwd"])
        sys.path[0] = job["cwd"]  # as python -m puts it
        for fd, path in ((1, job["out"]), (2, job["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # not the server's job pipe, here or in what it starts
        sys.stdin = open(0, closefd=False)
        sys.argv = [job["module"], *job["args"]]
        if not hasattr(sys.modules.get(job["module"]), "__path__"):  # a module, not a package's __main__
            sys.modules.pop(job["module"], None)  # run afresh as __main__, as python -m does (its imports stay)
        try:
            runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
        except SystemExit:
            raise
        except BaseException:
            import traceback
            traceback.print_exc()
            raise SystemExit(1)
        raise SystemExit(0)  # out of the job loop: the interpreter exits as python -m's would
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
'''


def same(env: dict[str, str], other: dict[str, str]) -> bool:
    return comparable(env) == comparable(other)


# set by pytest for the test under way, or by an import into its own process's environment
# whatever it held before (gymnasium's, for pygame): a command does not read them as given
UNREAD = {"PYTEST_CURRENT_TEST", "PYGAME_HIDE_SUPPORT_PROMPT"}


def comparable(env: dict[str, str]) -> dict[str, str]:
    """``env`` as a command reads it: without the variables it does not read as given
    (``UNREAD``), and with the cache folder torch's compiler writes into its own process's
    environment at its first compile (its default, which a new interpreter would take too)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    env = {k: v for k, v in env.items() if k not in UNREAD}
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.abspath(default_cache_dir()))
    return env


class Forked:
    """``run(args, cwd, timeout)``: like ``subprocess.run([python, *args], capture_output=True,
    text=True)`` for ``args`` of the form ``["-m", module, ...]``, where ``forks(args, cwd, env)``."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.root, self.env = root.resolve(), env
        self.server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=root, env=env, start_new_session=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def forks(self, args: list[str], cwd: Path, env: dict[str, str]) -> bool:
        """Whether the fork runs this command as a new interpreter would (pytest's own note of the
        test under way aside)."""
        own_suite = Path(cwd).resolve() != self.root and (Path(cwd) / "suite").exists()
        return (len(args) >= 2 and args[0] == "-m" and same(env, self.env) and not own_suite
                and self.server.poll() is None)

    def run(self, args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        out, err = (Path(tempfile.mkstemp(prefix="forked-")[1]) for _ in range(2))
        job = {"module": args[1], "args": args[2:], "cwd": str(cwd), "out": str(out), "err": str(err)}
        try:
            self.server.stdin.write(json.dumps(job) + "\n")
            self.server.stdin.flush()
            if not select.select([self.server.stdout], [], [], timeout)[0]:
                os.killpg(self.server.pid, signal.SIGKILL)  # the server and the child it waits for
                raise subprocess.TimeoutExpired([sys.executable, *args], timeout)
            code = int(self.server.stdout.readline())
            return subprocess.CompletedProcess([sys.executable, *args], code, out.read_text(), err.read_text())
        finally:
            out.unlink()
            err.unlink()

    def close(self) -> None:
        if self.server.poll() is None:
            self.server.stdin.close()
            self.server.wait(timeout=60)
