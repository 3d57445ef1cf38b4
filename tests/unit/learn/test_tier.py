from plugin.learn.tier import MIN_ITEMS, Tier, auto_tier


def test_the_lowest_threshold_whose_set_reaches_the_precision():
    # 40 at 0.9 all right, 20 at 0.6 with 1 wrong, 40 at 0.3 half wrong
    conf = [0.9] * 40 + [0.6] * 20 + [0.3] * 40
    right = [1] * 40 + [1] * 19 + [0] + [1, 0] * 20
    tier = auto_tier(conf, right)
    assert (tier.threshold, tier.items, tier.reason) == (0.6, 60, None)
    assert tier.precision == round(59 / 60, 4) and tier.coverage == 0.6


def test_ties_are_taken_whole():
    conf = [0.8] * 31 + [0.5] * 10
    right = [1] * 29 + [0, 0] + [1] * 10  # 29/31 at 0.8: below 95 %; with the 0.5s 39/41 = 95.1 %
    tier = auto_tier(conf, right)
    assert tier.threshold == 0.5 and tier.items == 41


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
