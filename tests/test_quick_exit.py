"""Quitting mid-decode does not wait for the decode: the app's worker pool shuts down without
joining its threads, and the CLI then ends the process (after stopping worker processes)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from conftest import make_app, settle

from tputui.quick_exit import NoWaitExecutor


def test_the_worker_pool_shutdown_does_not_wait_for_running_work():
    release, started = threading.Event(), threading.Event()
    pool = NoWaitExecutor(max_workers=1)
    future = pool.submit(lambda: (started.set(), release.wait(60)))
    started.wait(10)
    pool.shutdown(wait=True)  # returns although the work is still running
    assert not future.done()
    release.set()
    assert future.result(10)


async def test_the_app_runs_its_thread_workers_on_that_pool():
    import asyncio

    app = make_app("tf_loop", "summary")
    async with app.run_test() as pilot:
        await settle(pilot)
        executor = asyncio.get_running_loop()._default_executor
        assert isinstance(executor, NoWaitExecutor)


def test_leave_ends_the_process_without_joining_a_busy_thread():
    """A process whose non-daemon thread would run for a minute exits at once through leave()
    with the code given, and its worker processes are stopped."""
    code = textwrap.dedent("""
        import multiprocessing, threading, time
        from tputui.quick_exit import leave
        if __name__ == "__main__":
            threading.Thread(target=time.sleep, args=(60,)).start()
            child = multiprocessing.Process(target=time.sleep, args=(60,))
            child.start()
            print(child.pid, flush=True)
            raise SystemExit(leave(3))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 3
    pid = int(done.stdout.split()[0])
    import os
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        threading.Event().wait(0.1)
    else:
        raise AssertionError("the worker process was left running")


def test_leave_waits_for_must_finish_work_first():
    """A capture ending its window on the server runs in must_finish: leave() waits for it."""
    code = textwrap.dedent("""
        import threading, time
        from tputui.quick_exit import leave, must_finish
        inside = threading.Event()
        def capture():
            with must_finish():
                inside.set()
                time.sleep(1.0)
                print("window ended", flush=True)
        if __name__ == "__main__":
            threading.Thread(target=capture).start()
            inside.wait(10)
            raise SystemExit(leave(0))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "window ended" in done.stdout
