from tfcost.units import human, iec, si


def test_si_and_iec():
    assert si(124_439_808) == "124.44 M"
    assert si(291_648_307_200, "FLOP") == "291.65 GFLOP"
    assert si(12) == "12"
    assert iec(37_748_736) == "36.00 MiB"
    assert iec(512) == "512 B"
    assert human(131_072, "bytes") == "128.00 KiB"
    assert human(56_623_104, "flops") == "56.62 MFLOP"


def test_absurd_sizes_stay_readable():
    assert si(10**40) == "1.000e+40"
    assert iec(2**100) == "1.268e+30 B"


def test_a_value_that_rounds_up_takes_the_next_prefix():
    # Found by test_properties: 999,995 printed as '1000.00 k'.
    assert si(999_995) == "1.00 M"
    assert si(999_994) == "999.99 k"
    assert si(999.999) == "1.00 k"
    assert iec(1_048_575) == "1.00 MiB"
    assert iec(1_048_570) == "1023.99 KiB"
    assert si(10**33 - 10**27) == "1.000e+33"  # 999.999 Q rounds past the last prefix
