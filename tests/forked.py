"""``python -m suite.run <args>`` without paying for torch's import each time: a process that has
imported the runner once forks a child per command, which runs the module as ``python -m`` would
(fresh ``__main__``, its own working directory, environment and exit status). For the many
refused-input checks, each of which ends before any training: a fork costs milliseconds, a new
interpreter seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = r'''
import json, os, runpy, sys
sys.path[0] = os.getcwd()  # the tree, wherever a child then runs
import suite.run  # noqa: F401  (torch, Hydra and the suite imported once, before any fork)
for line in sys.stdin:
    job = json.loads(line)
    out, err = job["out"], job["err"]
    pid = os.fork()
    if pid == 0:
        os.chdir(job["cwd"])
        os.environ.update(job["env"])
        fd_out, fd_err = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        sys.argv = ["suite.run", *job["args"]]
        del sys.modules["suite.run"]  # run afresh as __main__, as python -m does (its imports stay)
        code = 0
        try:
            runpy.run_module("suite.run", run_name="__main__", alter_sys=True)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
'''


class Forked:
    """``run(args, cwd)``: like ``subprocess.run([python, "-m", "suite.run", *args])``."""

    def __init__(self, root: Path, env: dict[str, str]):
        self.env = env
        self.server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=root, env={**os.environ, **env},
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
        out, err = (Path(tempfile.mkstemp(prefix="forked-")[1]) for _ in range(2))
        job = {"args": args, "cwd": str(cwd), "env": self.env, "out": str(out), "err": str(err)}
        self.server.stdin.write(json.dumps(job) + "\n")
        self.server.stdin.flush()
        code = int(self.server.stdout.readline())
        p = subprocess.CompletedProcess(["suite.run", *args], code, out.read_text(), err.read_text())
        out.unlink()
        err.unlink()
        return p

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=60)
