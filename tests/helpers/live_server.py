"""Copied from /work/shared/tools/live_server.py (the team's shared tool, 2026-11-22) so the live
tests do not depend on /work/shared; one addition: --idle (server up, no training loop), for
captures that come back empty.

A real profiler peer: jax.profiler.start_server(PORT) + a JAX training loop that runs
for N seconds (each step in a StepTraceAnnotation), so captures have something to see.

usage: python live_server.py [--port 9012] [--seconds 60] [--idle]
Prints "READY port=PORT" once the server is up and the step function is compiled.
"""
import argparse
import time

import jax
import jax.numpy as jnp


@jax.jit
def step(w, x):
    def loss(w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)
    l, g = jax.value_and_grad(loss)(w)
    return w - 0.1 * g, l


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=9012)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--idle", action="store_true", help="serve, but run no steps")
    a = ap.parse_args()
    jax.profiler.start_server(a.port)
    w = jnp.ones((256, 256)) * 0.01
    x = jnp.ones((64, 256))
    w, l = step(w, x)
    l.block_until_ready()
    print(f"READY port={a.port}", flush=True)
    end, i = time.time() + a.seconds, 0
    if a.idle:
        time.sleep(a.seconds)
        end = 0
    while time.time() < end:
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            w, l = step(w, x)
            l.block_until_ready()
        i += 1
        time.sleep(0.002)
    print(f"DONE steps={i}", flush=True)


if __name__ == "__main__":
    main()
