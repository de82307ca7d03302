"""How numbers read: bytes, times and percentages, the same way on every screen, in export
and in the live monitor's plain lines. No Textual here (the headless layers use it too).

Every function takes None (and NaN) and returns `missing` for it, so a screen never shows "nan".
"""
from __future__ import annotations

import math

# Largest first; a value takes the first unit it reaches.
BINARY_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))
DECIMAL_UNITS = (("GB", 10**9), ("MB", 10**6), ("kB", 10**3))
TIME_UNITS_PS = (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3))


def _absent(v: float | None) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _scaled(v: float, units, decimals: int, base: str) -> str:
    """`v` in the first of `units` (largest first) it reaches, else in `base` without decimals."""
    for unit, scale in units:
        if abs(v) >= scale:
            return f"{v / scale:,.{decimals}f} {unit}"
    return f"{v:,.0f} {base}"


# --- bytes -------------------------------------------------------------------------------------
def bytes_binary(n: float | None, decimals: int = 2, missing: str = "") -> str:
    """Bytes in powers of 1024 (XProf's memory tools count in MiB / GiB): "27.61 MiB", "512 B"."""
    return missing if n is None or math.isnan(n) else _scaled(n, BINARY_UNITS, decimals, "B")


def bytes_binary_short(n: float | None, missing: str = "") -> str:
    """Binary bytes in at most 9 cells (a chart axis): "3.19 KiB", "640.0 KiB", "1023 MiB"."""
    if n is None or math.isnan(n):
        return missing
    for unit, scale in BINARY_UNITS:
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.2f} {unit}" if abs(v) < 100 else f"{v:.1f} {unit}" if abs(v) < 1000 else f"{v:.0f} {unit}"
    return f"{n:.0f} B"


def bytes_decimal(n: float | None, decimals: int = 1, missing: str = "") -> str:
    """Bytes in powers of 1000 (file and download sizes): "12.3 MB", "512 B"."""
    return missing if n is None or math.isnan(n) else _scaled(n, DECIMAL_UNITS, decimals, "B")


# --- times -------------------------------------------------------------------------------------
def duration_ps(ps: float | None, decimals: int = 3, missing: str = "", micro: str = "us") -> str:
    """Picoseconds in the largest unit they reach, fixed decimals: "1,234.500 ms", "12 ps".
    `micro` spells the microsecond ("us" where people type it back, "µs" in prose)."""
    if ps is None or math.isnan(ps):
        return missing
    return _scaled(ps, [(micro if unit == "us" else unit, scale) for unit, scale in TIME_UNITS_PS], decimals, "ps")


def duration_us(us: float | None, decimals: int = 3, missing: str = "", micro: str = "µs") -> str:
    """Microseconds (XProf's op tables' unit) the way `duration_ps` writes them, never below µs."""
    if us is None or math.isnan(us):
        return missing
    if abs(us) < 1:
        return f"{us:,.{decimals}f} {micro}"
    return duration_ps(us * 1e6, decimals, missing, micro)


def human_us(us: float | None, missing: str = "") -> str:
    """Microseconds in the unit that reads best, three significant digits (tables: numbers a
    person compares at a glance): "77.8 s", "1.23 ms", "412 us", "35.0 ns". Exports keep µs."""
    if us is None or _absent(us):
        return missing
    if us == 0:
        return "0"
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("us", 1.0), ("ns", 1e-3)):
        if abs(us) >= scale or unit == "ns":
            x = us / scale
            return f"{x:.{0 if abs(x) >= 100 else 1 if abs(x) >= 10 else 2}f} {unit}"
    return missing  # pragma: no cover - the loop always returns


def time_ps(ps: float, digits: int = 3) -> str:
    """A time in ps to `digits` significant digits (timeline labels): 1234567 -> "1.23 us"."""
    a = abs(ps)
    if a == 0:
        return "0"
    for unit, size in (*TIME_UNITS_PS, ("ps", 1)):
        if a >= size or size == 1:
            v = ps / size
            text = f"{v:.{digits}g}" if abs(v) < 10**digits else f"{v:.0f}"
            return f"{text} {unit}"
    return f"{ps} ps"


def duration_ms(ms: float | None, decimals: int = 3, missing: str = "n/a", plain: bool = False) -> str:
    """Milliseconds with fixed decimals: "1,234.500 ms"; `plain` writes capture_tpu_profile's "1234.500ms"."""
    if ms is None or math.isnan(ms):
        return missing
    return f"{ms:.{decimals}f}ms" if plain else f"{ms:,.{decimals}f} ms"


def duration_ms_or_s(ms: float | None, decimals: int = 3, missing: str = "n/a") -> str:
    """Milliseconds, switching to seconds from 1000 ms on: "950.000 ms", "1.250 s"."""
    if ms is None or math.isnan(ms):
        return missing
    return f"{ms / 1000:.{decimals}f} s" if ms >= 1000 else f"{ms:.{decimals}f} ms"


# --- percentages and counts --------------------------------------------------------------------
def percent(v: float | None, decimals: int = 1, missing: str = "") -> str:
    """A value already in percent: 12.345 -> "12.3%"."""
    return missing if v is None or math.isnan(v) else f"{v:.{decimals}f}%"


def fraction_percent(v: float | None, decimals: int = 2, missing: str = "") -> str:
    """A fraction (0..1) as a percentage: 0.12345 -> "12.35%"."""
    return missing if v is None or math.isnan(v) else f"{v * 100:.{decimals}f}%"


def share_percent(part: float, total: float, decimals: int = 1, missing: str = "") -> str:
    """`part` as a percentage of `total` ("" when there is no total)."""
    return percent(100 * part / total, decimals) if total else missing


def figure(v: object) -> float | None:
    """A Polars aggregate of a numeric column (`Series.max()`, `.min()`), unchanged, as the number
    it is (Polars types it as any Python literal); None for an empty column."""
    if v is None or isinstance(v, (int, float)):
        return v
    raise TypeError(f"not a number: {v!r}")


def number(v: float | None, decimals: int = 3, missing: str = "") -> str:
    """A plain figure with thousands separators: 1234.5 -> "1,234.500"."""
    return missing if v is None or math.isnan(v) else f"{v:,.{decimals}f}"


def count(v: float | None, missing: str = "") -> str:
    """A whole number with thousands separators: 12345 -> "12,345"."""
    return missing if v is None or math.isnan(v) else f"{int(v):,}"
