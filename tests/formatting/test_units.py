"""One formatter for times: readable units in prose, the compact form only in the table."""

from kinetoscope.formatting.units import (
    fmt_bytes,
    fmt_pct,
    fmt_share,
    fmt_us,
    table_percent,
    table_time,
)


def test_prose_times_pick_the_unit_and_keep_a_space():
    assert fmt_us(23.104) == "23.1 us"
    assert fmt_us(2314.0) == "2.31 ms"
    assert fmt_us(1.25e6) == "1.25 s"
    # 3 significant digits, never `393.000 us`; a unit change where rounding crosses 1000
    assert fmt_us(262.865, 1) == "263 us" and fmt_us(393.0) == "393 us"
    assert fmt_us(1180.0) == "1.18 ms" and fmt_us(999.6) == "1.00 ms" and fmt_us(0.5) == "0.500 us"
    assert fmt_us(None) == "-" and fmt_us(float("nan")) == "-"


def test_profiler_table_times_are_compact_like_key_averages_table():
    assert table_time(2314.0) == "2.314ms"
    assert table_time(23.104) == "23.104us"
    assert table_time(2.5e6) == "2.500s"
    assert table_percent(1.0, 8.0) == "12.50%" and table_percent(1.0, 0.0) == "0.00%"


def test_shares_and_sizes():
    assert fmt_pct(0.9854) == "98.5%"
    assert fmt_bytes(32 << 20) == "32.0 MB" and fmt_bytes(512) == "512 B"


def test_html_shares_keep_three_significant_digits():
    assert fmt_share(0.6634) == "66.3%" and fmt_share(0.0513) == "5.13%"
    assert fmt_share(0.000837) == "0.0837%" and fmt_share(0.0005) == "0.0500%"
    assert fmt_share(0.99996) == "100%" and fmt_share(1.234) == "123%"
    assert fmt_share(0.0) == "0%" and fmt_share(None) == "-" and fmt_share(float("nan")) == "-"
