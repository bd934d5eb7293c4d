"""Python child processes that die with their parent, even one killed by SIGKILL.

`run_child(arguments)` is `subprocess.run([sys.executable, *arguments])`
(`start_child`: `subprocess.Popen`) where the child first runs this file as
a launcher: on Linux it asks the
kernel to SIGKILL it when its parent dies (`prctl(PR_SET_PDEATHSIG)`),
elsewhere a thread watches the parent; then it runs the script (`path.py
args...`) or module (`-m module args...`) as `python` would. Run as a
script, this file imports only the standard library, so a child that must
not load kbert (the SavedModel serving process) still does not.

Example:
    run_child(["-m", "kbert.export.on_tensorflow", "job.json"], capture_output=True)
"""

import ctypes
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
import traceback

PR_SET_PDEATHSIG = 1


def run_child(arguments, **kwargs):
    """`subprocess.run` of `python *arguments` in a child that dies with this process.

    Example:
    >>> run_child(["-c", "print('hi')"], capture_output=True, text=True).stdout
    'hi\\n'
    """
    return subprocess.run(_command(arguments), **kwargs)


def start_child(arguments, **kwargs):
    """`subprocess.Popen` of `python *arguments` in a child that dies with this
    process (or with the thread that started it: Linux ties the signal to it).

    Example:
    >>> child = start_child(["-c", "print('hi')"], stdout=subprocess.PIPE, text=True)
    >>> child.communicate()[0]
    'hi\\n'
    """
    return subprocess.Popen(_command(arguments), **kwargs)


def _command(arguments):
    return [sys.executable, os.path.abspath(__file__), str(os.getpid()), *arguments]


def die_with_parent(parent):
    """Ends this process as soon as process `parent` (its parent) is gone.

    Example:
    >>> die_with_parent(os.getppid())  # doctest: +SKIP
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _watch(parent):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def serve_jobs(run_job, done, idle_seconds):
    """The child's side of `kbert.utils.kept_process`: `run_job(path)` for each
    job path read from stdin, answered by one line `done` + JSON (a failed
    job's traceback goes back, and the process goes on); returns at the end
    of stdin or after `idle_seconds` without a job.

    Example:
    >>> serve_jobs(run_job, "kbert-export-done ", 300)  # doctest: +SKIP
    """
    while True:
        if os.name == "posix":  # elsewhere select() takes sockets only: no idle end
            ready, _, _ = select.select([sys.stdin], [], [], idle_seconds)
            if not ready:
                return
        line = sys.stdin.readline()
        if not line:
            return
        try:
            run_job(line.strip())
            answer = {"ok": True}
        except Exception:  # the job's error goes back to the parent; the process goes on
            answer = {"ok": False, "error": traceback.format_exc()}
        sys.stdout.write(done + json.dumps(answer) + "\n")
        sys.stdout.flush()


def _launch(argv):
    sys.path.pop(0)  # this file's directory must not shadow the child's imports
    die_with_parent(int(argv[0]))
    if argv[1] == "-c":
        sys.argv = ["-c", *argv[3:]]
        sys.path.insert(0, "")
        exec(compile(argv[2], "<string>", "exec"), {"__name__": "__main__"})
    elif argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[1])))
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    _launch(sys.argv[1:])
