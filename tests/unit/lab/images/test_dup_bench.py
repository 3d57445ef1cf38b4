import numpy as np

from plugin.lab.images.dup_bench import candidate_query, distances, false_matches, hex_matrix, random_hashes

ZERO = "0" * 64


def flip_bits(hex_hash, n):
    """The hash with its lowest ``n`` bits flipped."""
    return f"{int(hex_hash, 16) ^ ((1 << n) - 1):064x}"


def test_hashes_pack_to_bytes_and_distances_are_popcounts():
    a = hex_matrix([ZERO, "f" * 64])
    assert a.shape == (2, 32) and a.dtype == np.uint8
    b = hex_matrix([flip_bits(ZERO, 5), flip_bits(ZERO, 200)])
    assert distances(a, b).tolist() == [[5, 200], [251, 56]]
    assert hex_matrix([]).shape == (0, 32)


def test_false_matches_count_each_pair_once_with_own_hashes():
    hashes = [ZERO, flip_bits(ZERO, 20), flip_bits(ZERO, 100), "f" * 64]
    m = hex_matrix(hashes)
    plain = false_matches(m, [m[i:i + 1] for i in range(4)], 31)
    assert plain["pairs"] == 6
    assert plain["within_threshold"] == 1  # 0 vs 20 bits
    assert plain["min_distance"] == 20


def test_false_matches_with_query_hashes_count_ordered_pairs_by_the_closest_hash():
    stored = hex_matrix([ZERO, "f" * 64, flip_bits(ZERO, 128)])
    queries = [hex_matrix([ZERO, flip_bits("f" * 64, 10)]),  # its second orientation is near image 1
               hex_matrix(["f" * 64]), hex_matrix([])]  # image 2 below quality: no queries
    out = false_matches(stored, queries, 31)
    assert out["pairs"] == 4
    assert out["within_threshold"] == 1
    assert out["min_distance"] == 10


def test_random_hashes_are_seeded_hex():
    a = random_hashes(3, 7)
    assert a == random_hashes(3, 7) and a != random_hashes(3, 8)
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in a)


def test_the_candidate_part_of_a_script_score_body():
    inner = {"bool": {"should": []}}
    assert candidate_query({"query": {"script_score": {"query": inner, "script": {}}}}) == inner
    assert candidate_query({"query": {"bool": {}}}) is None
