"""Small TensorFlow CPU profiles that each show one tf.data input pattern (issue #31).

usage: python scripts/make_tf_input_fixtures.py NAME OUT_LOGDIR     (one fixture; tensorflow-cpu needed)
       python scripts/make_tf_input_fixtures.py --all [--python PY] [--oracle PY]

  iterator_outside_step  the dataset's next() called before the step's Trace context opens (the Profiler
                         guide's anti-pattern): the Iterator::* events sit between the `train` steps, in no step
  from_generator         a Dataset.from_generator pipeline (a Python generator: FlatMap[0]::Generator in the
                         iterator names, PyFunc ops under it), next() inside the step
  py_function_map        a map whose function is a tf.py_function (EagerPyFunc ops under the Map iterator),
                         next() inside the step
  device_pipeline        tf.distribute.MirroredStrategy over two logical CPU devices and a distributed dataset:
                         the strategy's device-side pipelines (Iterator::Prefetch::Generator) beside the host one
  tfrecord_late_shard    four TFRecord files read one after the other (TFRecordDataset without num_parallel_reads),
                         parsed, then sharded (shard after the map: every worker parses every record); the step
                         compiled by XLA (tf.function(jit_compile=True))

Each: 8 steps of a small dense model, `tf.profiler.experimental.Trace("train", step_num=i, _r=1)` around each
step, the first step run before the profile. With --oracle, XProf's tf_data_bottleneck_analysis-free tools
(overview_page, input_pipeline_analyzer) go to <fixture>/oracle/ through ../shared/tools/oracle.py.
"""
from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "tf_input"
ORACLE = ROOT.parent / "shared" / "tools" / "oracle.py"
NAMES = ("iterator_outside_step", "from_generator", "py_function_map", "device_pipeline", "tfrecord_late_shard")
STEPS = 8
BATCH = 16
FEATURES = 32


def _slow(v):
    time.sleep(0.002)  # host-side Python work per element: the pipeline's visible cost
    return v


def dataset(name: str):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    xs = rng.normal(size=(512, FEATURES)).astype("float32")
    ys = rng.integers(0, 4, size=(512,)).astype("int64")
    if name == "from_generator":
        def gen():  # finite: an endless generator keeps the interpreter from exiting
            for i in range(3 * STEPS * BATCH):
                _slow(None)
                yield xs[i % len(xs)], ys[i % len(ys)]

        ds = tf.data.Dataset.from_generator(gen, output_signature=(
            tf.TensorSpec((FEATURES,), tf.float32), tf.TensorSpec((), tf.int64)))
        return ds.batch(BATCH).prefetch(1)
    if name == "tfrecord_late_shard":
        import tempfile

        folder = tempfile.mkdtemp()
        files = [os.path.join(folder, f"part-{k}.tfrecord") for k in range(4)]
        for k, path in enumerate(files):
            with tf.io.TFRecordWriter(path) as w:
                for i in range(k * 128, (k + 1) * 128):
                    w.write(tf.train.Example(features=tf.train.Features(feature={
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=xs[i])),
                        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[ys[i]]))})).SerializeToString())
        spec = {"x": tf.io.FixedLenFeature([FEATURES], tf.float32), "y": tf.io.FixedLenFeature([], tf.int64)}

        def parse(record):
            ex = tf.io.parse_single_example(record, spec)
            return ex["x"], ex["y"]

        return (tf.data.TFRecordDataset(files).repeat().map(parse).shard(2, 0)  # the shard comes too late
                .batch(BATCH).prefetch(1))
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).repeat()
    if name == "py_function_map":
        def pymap(x, y):
            x = tf.py_function(_slow, [x], tf.float32)
            x.set_shape([FEATURES])
            return x, y

        ds = ds.map(pymap)
    else:  # plain TensorFlow ops in the map: nothing Python in the pipeline
        ds = ds.map(lambda x, y: (x * 2.0 + 1.0, y))
    return ds.batch(BATCH).prefetch(1)


def run(name: str, logdir: str) -> None:
    import tensorflow as tf

    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    if name == "device_pipeline":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    else:
        strategy = tf.distribute.get_strategy()  # the default (no distribution)
    with strategy.scope():
        w1 = tf.Variable(tf.random.normal((FEATURES, 64), seed=1) * 0.1)
        w2 = tf.Variable(tf.random.normal((64, 4), seed=2) * 0.1)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.nn.relu(x @ w1) @ w2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, [w1, w2])
        for w, g in zip([w1, w2], grads):
            w.assign_sub(0.1 * g)
        return loss

    @tf.function(jit_compile=name == "tfrecord_late_shard")
    def train_step(x, y):
        return strategy.run(replica_step, args=(x, y))

    ds = dataset(name)
    if name == "device_pipeline":
        ds = strategy.experimental_distribute_dataset(ds)
    it = iter(ds)
    train_step(*next(it))  # trace before the profile
    tf.profiler.experimental.start(logdir)
    for i in range(STEPS):
        if name == "iterator_outside_step":
            x, y = next(it)  # the anti-pattern: the input is fetched outside the step's context
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                train_step(x, y)
        else:
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                x, y = next(it)
                train_step(x, y)
    tf.profiler.experimental.stop()
    for p in glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb")):
        os.rename(p, os.path.join(os.path.dirname(p), "host.xplane.pb"))  # no machine name in the fixture
        print(name, os.path.getsize(os.path.join(os.path.dirname(p), "host.xplane.pb")), "bytes")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("name", nargs="?", choices=NAMES)
    ap.add_argument("logdir", nargs="?")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="a Python with tensorflow-cpu")
    ap.add_argument("--only", nargs="*", choices=NAMES, help="with --all: these fixtures only")
    ap.add_argument("--oracle", help="a Python with xprof: XProf's outputs beside each fixture")
    a = ap.parse_args()
    if not a.all:
        run(a.name, a.logdir)
        sys.stdout.flush()
        os._exit(0)  # a py_function's threads can hang the interpreter's shutdown; the profile is written
    for name in a.only or NAMES:
        out = OUT / name
        subprocess.run([a.python, __file__, name, str(out)], check=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""})
        if a.oracle:
            (out / "oracle").mkdir(exist_ok=True)
            for tool in ("overview_page", "input_pipeline_analyzer"):
                with open(out / "oracle" / f"{tool}.json", "w") as f:
                    subprocess.run([a.oracle, str(ORACLE), str(out), tool], check=True, stdout=f)


if __name__ == "__main__":
    main()
