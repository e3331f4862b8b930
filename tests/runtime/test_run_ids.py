"""A run's id: 10 characters of the alphabet, every one equally likely at every place (one draw per id)."""

from __future__ import annotations

from collections import Counter

from engine.models import ID_ALPHABET, RUN_ID_LENGTH, new_run_id


def test_run_ids_are_ten_characters_of_the_alphabet_drawn_uniformly_at_every_place() -> None:
    draws = 20_000
    ids = [new_run_id() for _ in range(draws)]
    assert all(len(i) == RUN_ID_LENGTH == 10 and set(i) <= set(ID_ALPHABET) for i in ids)
    assert len(set(ids)) == draws
    expected = draws / len(ID_ALPHABET)  # about 606; its standard deviation about 24
    for place in range(RUN_ID_LENGTH):
        seen = Counter(i[place] for i in ids)
        assert set(seen) == set(ID_ALPHABET), f"place {place} never drew {set(ID_ALPHABET) - set(seen)}"
        assert all(0.75 * expected < n < 1.25 * expected for n in seen.values()), (place, seen.most_common())
