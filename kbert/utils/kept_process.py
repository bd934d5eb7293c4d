"""A child process kept for job after job: started on first use, ended when idle.

A process that imports TensorFlow spends seconds on it before its first job;
kept, it pays that once. The parent writes each job as a line (the path of a
job file) to the child's stdin; the child runs it and answers one line
(`child_process.serve_jobs`), `done` followed by JSON `{"ok": true}` or
`{"ok": false, "error": "..."}`.
The child ends after `idle_seconds` without a job (a new one starts on the
next), with this process (`child_process`), or at its exit, and is never
shared with a forked child. A child started in another working directory or
with other environment variables than a job asks for is replaced
(`PYTEST_CURRENT_TEST` aside: pytest changes it for every test).

Example:
>>> answer_every_job = (  # run as `python -c CODE 60`
...     "import json, sys; "
...     "[print('done', json.dumps({'ok': 1}), flush=True) for job in sys.stdin]"
... )
>>> kept = KeptProcess(["-c", answer_every_job], done="done ", idle_seconds=60)
>>> kept.run("job.json")
{'ok': 1}
>>> kept.pid() not in (None, os.getpid())
True
>>> kept.close()
"""

import atexit
import json
import os
import subprocess
import tempfile
import threading
import time

from kbert.utils.child_process import start_child

# The parent stops using a child this much before it would end by itself.
IDLE_MARGIN = 20
# Environment variables that neither reach a child nor make it replaced.
VOLATILE = ("PYTEST_CURRENT_TEST",)


class KeptProcessError(RuntimeError):
    """The kept process ran a job and reported its traceback, or died."""


class _Died(KeptProcessError):
    pass


class KeptProcess:
    """One kept child process per Python process, running `python *arguments`.

    Args:
        arguments: the child's command line after `python` (it serves jobs);
            `idle_seconds` is appended as its last argument.
        done: the prefix of the child's answer lines.
        idle_seconds: how long the child waits for a job before it ends.
        error: the exception class `run` raises for a failed job.
    """

    def __init__(self, arguments, done, idle_seconds, error=KeptProcessError):
        self.arguments = [*arguments, str(idle_seconds)]
        self.done = done
        self.idle_seconds = idle_seconds
        self.error = error
        self._lock = threading.Lock()
        self._child = None
        atexit.register(self.close)

    def pid(self):
        """The pid of the kept child, or None."""
        with self._lock:
            usable = self._child is not None and self._child.usable(self._child.env)
            return self._child.process.pid if usable else None

    def run(self, job_path, env=None):
        """Runs the job file at `job_path` in the kept child started with `env`
        (default: this process's environment); returns the answer's dict.
        Raises `error` with the child's traceback (or, if it died, the end of
        its error output)."""
        env = dict(os.environ if env is None else env)
        for name in VOLATILE:
            env.pop(name, None)
        with self._lock:
            while True:
                fresh = self._child is None or not self._child.usable(env)
                if fresh:
                    self._close_child()
                    self._child = _Child(self.arguments, env, self.idle_seconds)
                try:
                    answer = self._child.run(job_path, self.done)
                except _Died as died:
                    self._close_child()
                    if fresh:
                        raise self.error(str(died)) from None
                    # It ended as it was given the job (its idle end, or the
                    # end of the thread that started it): once more, anew.
                    continue
                if not answer["ok"]:
                    raise self.error(answer["error"])
                return answer

    def close(self):
        """Ends the kept child (a new one starts on the next `run`)."""
        with self._lock:
            self._close_child()

    def _close_child(self):
        if self._child is not None:
            self._child.close()
            self._child = None


class _Child:
    def __init__(self, arguments, env, idle_seconds):
        self.env = env
        self.cwd = os.getcwd()
        self.idle_seconds = idle_seconds
        self.pid = os.getpid()
        self.errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        self.process = start_child(
            arguments,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            encoding="utf-8",
        )
        self.last_used = time.monotonic()

    def usable(self, env):
        return (
            self.pid == os.getpid()
            and self.env == env
            and self.cwd == os.getcwd()
            and self.process.poll() is None
            and time.monotonic() - self.last_used < self.idle_seconds - IDLE_MARGIN
        )

    def run(self, job_path, done):
        try:
            self.process.stdin.write(os.path.abspath(job_path) + "\n")
            self.process.stdin.flush()
            for line in self.process.stdout:
                if line.startswith(done):
                    return json.loads(line[len(done) :])
            raise _Died(self._error_output())
        except OSError:  # a broken pipe: it had ended
            raise _Died(self._error_output()) from None
        finally:
            self.last_used = time.monotonic()

    def _error_output(self):
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # its output closed, yet it runs on
            self.process.kill()
            self.process.wait()
        self.errors.seek(0)
        return (
            f"the kept process ended (exit status {self.process.returncode}):\n"
            + self.errors.read()[-3000:]
        )

    def close(self):
        if self.pid == os.getpid() and self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.errors.close()
