from plugin.learn.tier import MIN_ITEMS, Tier, auto_tier, wilson_lower


def test_the_lowest_threshold_whose_set_reaches_the_precision_by_the_wilson_bound():
    # 100 at 0.9 all right, 60 at 0.6 with 1 wrong, 40 at 0.3 half wrong
    conf = [0.9] * 100 + [0.6] * 60 + [0.3] * 40
    right = [1] * 100 + [1] * 59 + [0] + [1, 0] * 20
    tier = auto_tier(conf, right)
    assert (tier.threshold, tier.items, tier.reason) == (0.6, 160, None)
    assert tier.precision == round(159 / 160, 4) and tier.coverage == 0.8


def test_an_observed_95_percent_on_a_small_set_is_not_enough():
    conf = [0.8] * 40 + [0.5] * 40
    right = [1] * 38 + [0, 0] + [0] * 40  # 38 of 40 = 95 %, but the bound is about 85 %
    tier = auto_tier(conf, right)
    assert tier.threshold is None and "95%" in tier.reason and "Wilson" in tier.reason


def test_wilson_lower():
    assert wilson_lower(0, 0) == 0.0
    assert 0.85 < wilson_lower(38, 40) < 0.87
    assert wilson_lower(55, 55) >= 0.95 > wilson_lower(50, 50)
    assert wilson_lower(950, 1000) < 0.95 < wilson_lower(970, 1000)


def test_ties_are_taken_whole():
    conf = [0.8] * 60 + [0.5] * 40
    right = [1] * 59 + [0] + [1] * 40  # the 0.8s alone: bound below 95 %; with the 0.5s: 99 of 100
    assert wilson_lower(59, 60) < 0.95 <= wilson_lower(99, 100)
    tier = auto_tier(conf, right)
    assert tier.threshold == 0.5 and tier.items == 100


def test_none_when_the_precision_is_not_reached_and_why():
    tier = auto_tier([0.9] * 50, [1, 0] * 25)
    assert tier.threshold is None and tier.coverage == 0.0
    assert "95%" in tier.reason and "50%" in tier.reason


def test_none_when_too_few_items_even_if_all_right():
    tier = auto_tier([0.99] * (MIN_ITEMS - 1), [1] * (MIN_ITEMS - 1))
    assert tier.threshold is None and f"at least {MIN_ITEMS}" in tier.reason


def test_round_trip():
    t = Tier(0.7, 0.96, 0.4, 50)
    assert Tier.from_dict(t.to_dict()) == t
