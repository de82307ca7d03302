"""tputui.format: one way to write bytes, times and percentages (screens, export, monitor)."""
import math
import subprocess
import sys

from tputui import format as fmt


def test_bytes_binary_and_decimal_are_named_apart():
    assert fmt.bytes_binary(3 * (1 << 20) + (1 << 19)) == "3.50 MiB"
    assert fmt.bytes_binary(1536) == "1.50 KiB"
    assert fmt.bytes_binary(512) == "512 B"
    assert fmt.bytes_binary(5 * (1 << 30), decimals=1) == "5.0 GiB"
    assert fmt.bytes_binary(2048 * (1 << 30)) == "2,048.00 GiB"
    assert fmt.bytes_decimal(12_345_678) == "12.3 MB"
    assert fmt.bytes_decimal(1_500) == "1.5 kB"
    assert fmt.bytes_decimal(999) == "999 B"
    assert fmt.bytes_binary(None) == "" and fmt.bytes_decimal(None, missing="-") == "-"


def test_bytes_binary_short_fits_nine_cells():
    for n in (0, 999, 3.19 * 1024, 640 * 1024, 27.61 * (1 << 20), 1023 * (1 << 20), 999.9 * (1 << 30)):
        assert len(fmt.bytes_binary_short(n)) <= 9, n
    assert fmt.bytes_binary_short(640 * 1024) == "640.0 KiB"
    assert fmt.bytes_binary_short(1023.4 * (1 << 20)) == "1023 MiB"


def test_times():
    assert fmt.duration_ps(1_234_500_000_000) == "1.234 s"
    assert fmt.duration_ps(2_500_000) == "2.500 us"
    assert fmt.duration_ps(2_500_000, micro="µs") == "2.500 µs"
    assert fmt.duration_ps(12) == "12 ps"
    assert fmt.duration_ps(None, missing="-") == "-"
    assert fmt.duration_us(0.5) == "0.500 µs"
    assert fmt.duration_us(1_500) == "1.500 ms"
    assert fmt.duration_us(2_000_000) == "2.000 s"
    assert fmt.time_ps(1_234_567) == "1.23 us"
    assert fmt.time_ps(0) == "0"
    assert fmt.time_ps(5) == "5 ps"
    assert fmt.time_ps(123_456_789_000, 6) == "123.457 ms"
    assert fmt.duration_ms(12.3456) == "12.346 ms"
    assert fmt.duration_ms(1234.5, 1) == "1,234.5 ms"
    assert fmt.duration_ms(1234.5, plain=True) == "1234.500ms"
    assert fmt.duration_ms(None) == "n/a"
    assert fmt.duration_ms_or_s(950) == "950.000 ms" and fmt.duration_ms_or_s(1250) == "1.250 s"


def test_percentages_and_counts():
    assert fmt.percent(12.345) == "12.3%"
    assert fmt.percent(12.3456, 3) == "12.346%"
    assert fmt.percent(math.nan, missing="n/a") == "n/a"
    assert fmt.fraction_percent(0.12345) == "12.35%"
    assert fmt.share_percent(1, 4) == "25.0%" and fmt.share_percent(1, 0) == ""
    assert fmt.number(1234.5) == "1,234.500"
    assert fmt.count(12345.0) == "12,345"
    assert fmt.count(None) == ""


def test_format_imports_no_textual():
    code = "import sys, tputui.format; assert not any(m.startswith('textual') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)
