"""The tests' fork server (``tests/forked.py``) runs a ``-m`` command as a new interpreter does."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import forked

PROBE = '''
import atexit, os, sys, threading, time
import suite.run
atexit.register(lambda: print("atexit ran", flush=True))
threading.Thread(target=lambda: (time.sleep(0.2), print("thread joined", flush=True))).start()
print(__name__, sys.argv[1:], sys.path[0] == os.getcwd(), os.path.basename(os.getcwd()),
      "suite.run" in sys.modules, os.environ["WANDB_MODE"])
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
'''


def test_a_forked_command_sees_and_ends_as_in_a_new_interpreter(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    server = forked()
    env = server.env  # the environment cli() forks commands in
    assert server.forks(["-m", "probe", "3"], tmp_path, env)
    fork = server.run(["-m", "probe", "3", "x=1"], tmp_path)
    new = subprocess.run([sys.executable, "-m", "probe", "3", "x=1"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert (fork.returncode, fork.stdout, fork.stderr) == (new.returncode, new.stdout, new.stderr) == (
        3, f"__main__ ['3', 'x=1'] True {tmp_path.name} True disabled\nthread joined\natexit ran\n", "to stderr\n")
    crash = server.run(["-m", "probe", "not a number"], tmp_path)
    assert crash.returncode == 1 and crash.stderr.rstrip().endswith(
        "ValueError: invalid literal for int() with base 10: 'not a number'")


def test_a_command_the_fork_would_run_otherwise_gets_a_new_interpreter(tmp_path):
    server = forked()
    env = server.env
    assert server.forks(["-m", "suite.run"], tmp_path, env)
    assert not server.forks(["-m", "suite.run"], tmp_path, {**env, "OMP_NUM_THREADS": "7"})  # read at import
    # torch's compiler, once it has compiled in the tests' process, names its default cache there
    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir
    assert server.forks(["-m", "suite.run"], tmp_path, {**env, "TORCHINDUCTOR_CACHE_DIR": cache_dir()})
    assert not server.forks(["-m", "suite.run"], tmp_path, {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)})
    assert os.path.abspath(default_cache_dir()) == cache_dir()
    import gymnasium  # noqa: F401  (sets pygame's prompt variable in this process, as in any that imports it)
    prompt = os.environ["PYGAME_HIDE_SUPPORT_PROMPT"]
    assert server.forks(["-m", "suite.run"], tmp_path, {**env, "PYGAME_HIDE_SUPPORT_PROMPT": prompt})
    assert not server.forks(["scripts/verify.py"], tmp_path, env)
    (tmp_path / "suite").mkdir()  # another copy of the suite, which the server did not import
    assert not server.forks(["-m", "suite.run"], tmp_path, env)
