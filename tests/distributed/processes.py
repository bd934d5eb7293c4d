"""Starting the processes of a local multi-process job, and cleaning up after it.

`run_job(script, args, num_processes)` starts `python script PROCESS_ID
*args` once per process with a free loopback port in `KBERT_TEST_PORT`,
waits for all of them up to `timeout` seconds, kills the rest as soon as one
fails, and returns each process's last JSON line of output.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_job(script, args, num_processes=2, timeout=240, env=None):
    port = free_port()
    environment = dict(os.environ, PYTHONPATH=ROOT, KBERT_TEST_PORT=str(port))
    environment.pop("XLA_FLAGS", None)
    environment.update(env or {})
    logs = [tempfile.TemporaryFile(mode="w+") for _ in range(num_processes)]
    processes = [
        subprocess.Popen(
            [sys.executable, script, str(index), *map(str, args)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            text=True,
        )
        for index, log in enumerate(logs)
    ]
    deadline = time.monotonic() + timeout
    failed = None
    try:
        while any(p.poll() is None for p in processes):
            failed = next((p for p in processes if p.returncode not in (None, 0)), None)
            if failed is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        failed = next((p for p in processes if p.returncode not in (None, 0)), None)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    texts = []
    for log in logs:
        log.seek(0)
        texts.append(log.read())
        log.close()
    if any(p.returncode != 0 for p in processes):
        # The first process to fail explains; the others were killed after it.
        index = processes.index(failed) if failed is not None else None
        reason = "timed out" if index is None else f"process {index} failed"
        shown = [index] if index is not None else range(num_processes)
        details = "\n".join(f"--- process {i}:\n{texts[i][-4000:]}" for i in shown)
        raise AssertionError(f"{os.path.basename(script)}: {reason}\n{details}")
    # The last JSON line: the engines may log after the script's output.
    return [
        json.loads([line for line in text.splitlines() if line.startswith("{")][-1])
        for text in texts
    ]
