"""export.indented_json: json.dumps(obj, indent=1, default=str), byte for byte, faster."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PROFILES

from tputui.analysis import memory_profile as mp
from tputui.data.logdir import open_logdir
from tputui.data.run_data import RunData
from tputui.export import _clean, indented_json


class Named:
    def __str__(self) -> str:
        return "named"


SHAPES = [
    {}, [], (), 5, "text", None, True, 1.5e-7, float("nan"),
    {"a": 1}, [1, "line\nbreak", None, True, -0.0, 1e300],
    {"nested": {"empty list": [], "empty dict": {}, "deep": [1, [2, {}], ()]}},
    {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},  # keys as the encoder writes them
    {"text": "é \u2028 \" \\ \t"}, [[[]]], {"tuple": (1, (2, 3))}, {"inf": float("inf")},
    {"default": Named(), "numpy int": np.int64(5), "numpy float": np.float64(0.1), "bool_": np.bool_(True)},
    {"rows": [{"a": 1, "b": "x"}, {"a": 2.0, "b": None}], "mixed": [{"a": [1]}, 3, "s"]},
]


@pytest.mark.parametrize("obj", SHAPES, ids=range(len(SHAPES)))
def test_equals_the_indenting_encoder(obj):
    assert indented_json(obj) == json.dumps(obj, indent=1, default=str)


def test_a_memory_profile_document():
    """Its shape (thousands of flat timeline rows under a few levels) is what the C rows are for."""
    run = RunData(open_logdir(str(PROFILES / "tpu_v6e_inference")).runs[0], use_cache=False)
    doc = _clean(mp.analyze(run).to_json())
    assert indented_json(doc) == json.dumps(doc, indent=1, default=str)
