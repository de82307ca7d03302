"""Small XSpace seeds cut from the fixtures, and a structure-aware mutator for them.

Shared by the differential test (tests/test_wire_semantics.py) and the fuzz target
(scripts/fuzz_wire.py). A seed is a real profile's planes with a few lines, events and
metadata entries each (a few KB). The mutator parses a seed into a tree of fields (message
fields as subtrees, by the XSpace schema), changes the tree where protobuf's rules are subtle
(unknown fields of every wire type and nested groups, duplicate map keys and values, map
entries with unknown fields, invalid UTF-8, oversized and overlong keys and lengths, wrong wire
types) and encodes it again; byte-level cuts and flips are mixed in. Deterministic per seed.
"""
from __future__ import annotations

import pathlib
import random

from tputui.data import pbwire
from tputui.proto import xplane_pb2

# message -> {field number: child message} for the message-typed fields; and the string fields.
SCHEMA = {
    "XSpace": {1: "XPlane"},
    "XPlane": {3: "XLine", 4: "EMEntry", 5: "SMEntry", 6: "XStat"},
    "XLine": {4: "XEvent"},
    "XEvent": {4: "XStat"},
    "EMEntry": {2: "XEventMetadata"},
    "SMEntry": {2: "XStatMetadata"},
    "XEventMetadata": {5: "XStat"},
    "XStatMetadata": {},
    "XStat": {},
}
STRINGS = {"XSpace": {2, 3, 4}, "XPlane": {2}, "XLine": {2, 11}, "XStat": {5}, "XEventMetadata": {2, 4},
           "XStatMetadata": {2, 3}}
BAD_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80", b"\xf8\x88\x80\x80\x80"]
GOOD_UTF8 = ["é", "€", "😀", "\u2028", "\x00"]


def varint(n: int, pad_to: int = 0) -> bytes:
    """n as a varint, padded with continuation bytes to `pad_to` bytes (overlong but the same value)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            break
    while len(out) < pad_to:
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


class Field:
    """One field: key parts, the value (int, bytes, or a list of Fields for a message), and how
    its key and length are written (normally minimal)."""

    __slots__ = ("number", "wire", "value", "kind", "key_pad", "len_pad", "raw_key")

    def __init__(self, number, wire, value, kind=None):
        self.number, self.wire, self.value, self.kind = number, wire, value, kind
        self.key_pad = self.len_pad = 0
        self.raw_key = None  # a key written as is (e.g. one over 32 bits)

    def copy(self):
        f = Field(self.number, self.wire, [c.copy() for c in self.value] if self.kind else self.value, self.kind)
        f.key_pad, f.len_pad, f.raw_key = self.key_pad, self.len_pad, self.raw_key
        return f


def parse(buf: bytes, kind: str = "XSpace") -> list[Field]:
    out = []
    for number, wire, value in pbwire.fields(buf):
        child = SCHEMA[kind].get(number) if wire == 2 else None
        if child:
            out.append(Field(number, wire, parse(bytes(value), child), child))
        else:
            out.append(Field(number, wire, value if wire == 0 else bytes(value)))
    return out


def encode(fields: list[Field]) -> bytes:
    out = bytearray()
    for f in fields:
        out += f.raw_key if f.raw_key is not None else varint(f.number << 3 | f.wire, f.key_pad)
        if f.wire == 0:
            out += varint(f.value)
        elif f.wire == 2:
            body = encode(f.value) if f.kind else f.value
            out += varint(len(body), f.len_pad) + body
        elif f.wire in (1, 5):
            out += f.value
        elif f.wire == 3:  # a group: its fields, then the end key (value = (fields, end number))
            inner, end = f.value
            out += encode(inner) + varint(end << 3 | 4)
        elif f.wire == 4:  # a stray end-group key
            pass
    return bytes(out)


# --- seeds ---------------------------------------------------------------------------------

def small_space(space, rng: random.Random, lines: int = 2, events: int = 3, metadata: int = 6) -> bytes:
    """A few lines, events and metadata entries of each plane of a parsed XSpace."""
    out = xplane_pb2.XSpace(hostnames=space.hostnames, errors=space.errors[:2], warnings=space.warnings[:2])
    for plane in space.planes:
        p = out.planes.add(id=plane.id, name=plane.name)
        p.stats.extend(plane.stats[:4])
        used_md, used_sm = set(), {s.metadata_id for s in plane.stats[:4]}
        for line in list(plane.lines)[:lines]:
            nl = p.lines.add(id=line.id, display_id=line.display_id, name=line.name, display_name=line.display_name,
                             timestamp_ns=line.timestamp_ns, duration_ps=line.duration_ps)
            for ev in list(line.events)[:events]:
                nl.events.add().CopyFrom(ev)
                used_md.add(ev.metadata_id)
                used_sm.update(s.metadata_id for s in ev.stats)
        keys = sorted(plane.event_metadata)
        for k in sorted(used_md & set(keys)) + rng.sample(keys, min(2, len(keys))):
            md = plane.event_metadata[k]
            p.event_metadata[k].CopyFrom(md)
            if len(md.metadata) > 512:  # HLO protos: keep a slice, they are bytes to us
                p.event_metadata[k].metadata = md.metadata[:512]
            used_sm.update(s.metadata_id for s in md.stats)
            if len(p.event_metadata) >= metadata + len(used_md):
                break
        for k in sorted(used_sm & set(plane.stat_metadata)):
            p.stat_metadata[k].CopyFrom(plane.stat_metadata[k])
    return out.SerializeToString()


def seeds(profiles: pathlib.Path, seed: int = 0) -> list[bytes]:
    """Seeds from every fixture profile: per file, one small space per plane and one of all planes."""
    rng = random.Random(seed)
    out = []
    for path in sorted(profiles.rglob("*.xplane.pb")):
        space = xplane_pb2.XSpace.FromString(path.read_bytes())
        out.append(small_space(space, rng))
        for plane in space.planes:
            one = xplane_pb2.XSpace(hostnames=space.hostnames)
            one.planes.add().CopyFrom(plane)
            out.append(small_space(one, rng, lines=3, events=4))
    return out


# --- mutations -----------------------------------------------------------------------------

def _messages(fields: list[Field], kind: str = "XSpace", out=None) -> list[tuple[list[Field], str]]:
    """Every message in the tree as (its field list, its type)."""
    out = [] if out is None else out
    out.append((fields, kind))
    for f in fields:
        if f.kind:
            _messages(f.value, f.kind, out)
    return out


def _unknown(rng: random.Random, kind: str) -> Field:
    known = set(SCHEMA[kind]) | STRINGS.get(kind, set()) | {1, 2, 3, 4, 5, 6, 7}
    number = rng.choice([rng.randrange(1, 40), rng.randrange(1, 1 << 29), rng.choice(sorted(known))])
    wire = rng.choice([0, 1, 2, 3, 5])
    if wire == 0:
        return Field(number, 0, rng.choice([0, 1, 300, (1 << 63) + 5, (1 << 64) - 1]))
    if wire == 1:
        return Field(number, 1, rng.randbytes(8))
    if wire == 5:
        return Field(number, 5, rng.randbytes(4))
    if wire == 2:
        return Field(number, 2, rng.choice([b"", rng.randbytes(rng.randrange(1, 12)), b"\xff\xfe"]))
    depth = rng.choice([1, 1, 2, 3, rng.randrange(90, 102)])  # near protobuf's limit of 100
    numbers = [number] + [rng.randrange(0, 30) for _ in range(depth - 1)]  # 0 passes inside a group
    inner: list[Field] = []
    for num in reversed(numbers):  # innermost first
        payload = [Field(rng.randrange(0, 30), 0, rng.randrange(1000))] if rng.random() < 0.5 else []
        inner = [Field(num, 3, (payload + inner, num))]
    outer = inner[0]
    if rng.random() < 0.1:  # an end key that does not match its group
        outer.value = (outer.value[0], outer.number + 1)
    return outer


def _strings(fields: list[Field], kind: str) -> list[Field]:
    return [f for f in fields if f.wire == 2 and not f.kind and f.number in STRINGS.get(kind, ())]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One mutant of `data` (a seed or an earlier mutant that still parses as a tree)."""
    try:
        tree = parse(data)
    except pbwire.WireError:
        tree = None
    if tree is None or rng.random() < 0.2:
        return _byte_mutation(data, rng)
    for _ in range(rng.choice([1, 1, 2, 3])):
        _tree_mutation(tree, rng)
    out = encode(tree)
    return _byte_mutation(out, rng) if rng.random() < 0.1 else out


def _tree_mutation(tree: list[Field], rng: random.Random) -> None:
    fields, kind = rng.choice(_messages(tree))
    op = rng.randrange(12)
    at = rng.randrange(len(fields) + 1)
    if op == 0:
        fields.insert(at, _unknown(rng, kind))
    elif op == 1 and fields:  # a field given twice (a repeated entry, or last-wins for scalars)
        fields.insert(at, rng.choice(fields).copy())
    elif op == 2 and fields:
        del fields[rng.randrange(len(fields))]
    elif op == 3:
        strings = _strings(fields, kind)
        if strings:
            f = rng.choice(strings)
            bad = rng.choice(BAD_UTF8) if rng.random() < 0.7 else rng.choice(GOOD_UTF8).encode()
            cut = rng.randrange(len(f.value) + 1)
            f.value = f.value[:cut] + bad + f.value[cut:]
    elif op == 4 and fields:  # overlong keys: 5 bytes is allowed, 6 is not
        rng.choice(fields).key_pad = rng.choice([5, 5, 6, 10])
    elif op == 5 and fields:  # a key over 32 bits (its low bits are a known field)
        f = rng.choice(fields)
        f.raw_key = varint((f.number + (rng.randrange(1, 4) << 29)) << 3 | f.wire)
    elif op == 6:
        ld = [f for f in fields if f.wire == 2]
        if ld:
            rng.choice(ld).len_pad = rng.choice([5, 5, 6])
    elif op == 7 and kind == "XPlane":  # a map entry again with the same key (or no key)
        entries = [f for f in fields if f.number in (4, 5) and f.kind]
        if entries:
            dup = rng.choice(entries).copy()
            if rng.random() < 0.3:
                dup.value = [f for f in dup.value if f.number != 1]
            elif dup.value and rng.random() < 0.5:
                dup.value = [f for f in dup.value if f.number != 2] + [Field(2, 2, [], SCHEMA[dup.kind][2])]
            fields.insert(at, dup)
    elif op == 8 and kind in ("EMEntry", "SMEntry"):  # an unknown field in an entry, or the value twice
        if rng.random() < 0.5:
            fields.insert(at, _unknown(rng, kind))
        else:
            values = [f for f in fields if f.number == 2 and f.kind]
            if values:
                fields.insert(at, values[0].copy())
    elif op == 9 and fields:  # a known field with another wire type
        f = rng.choice(fields)
        if not f.kind and f.wire in (0, 1, 2, 5):
            f.wire, f.value = (2, varint(f.value)) if f.wire == 0 else (0, len(f.value))
    elif op == 10:
        fields.insert(at, Field(rng.randrange(1, 20), 4, None))  # a stray end-group key
    elif op == 11 and len(fields) > 1:
        i, j = rng.sample(range(len(fields)), 2)
        fields[i], fields[j] = fields[j], fields[i]


def _byte_mutation(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    op = rng.randrange(5)
    i = rng.randrange(len(data))
    if op == 0:
        return data[:i]
    if op == 1:
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    if op == 2:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    if op == 3:
        j = min(len(data), i + rng.randrange(1, 16))
        return data[:i] + data[j:]
    return data[:i] + rng.randbytes(rng.randrange(1, 8)) + data[i:]


def corpus(profiles: pathlib.Path, n: int, seed: int = 0) -> list[bytes]:
    """`n` mutants, each from a seed or from an earlier mutant (so mutations pile up)."""
    rng = random.Random(seed)
    pool = seeds(profiles, seed)
    out = []
    for _ in range(n):
        parent = rng.choice(pool) if not out or rng.random() < 0.6 else rng.choice(out[-50:])
        out.append(mutate(parent, rng))
    return out
