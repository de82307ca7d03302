"""`tputui export ARGS` that stalls half-way through writing its output (after the first 100
bytes, flushed), for a test to kill it there: says "stalled" on stderr, then waits forever."""
import sys
import time

from tputui import cli, export

real_write = export.write_result


class Stall:
    def __init__(self, out):
        self.out, self.written = out, 0

    def write(self, text):
        self.out.write(text)
        self.written += len(text)
        if self.written >= 100:
            self.out.flush()
            print("stalled", file=sys.stderr, flush=True)
            while True:
                time.sleep(60)
        return len(text)


def stalling_write(result, fmt, out, table=None):
    return real_write(result, fmt, Stall(out), table)


export.write_result = stalling_write
sys.exit(cli.main(["export", *sys.argv[1:]]))
