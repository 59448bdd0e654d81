"""The differential harness itself, without servers: generators and comparison.

These always run (no reference needed): if the comparison could not see a
difference, or the generator produced queries outside their microversion, the
differential test would pass for the wrong reason.
"""

from __future__ import annotations

import re

from tests.differential.compare import Answer, check_limited, compare_full
from tools.queries import generate_query
from tools.worlds import capacity, generate_world

# Parameters each microversion may use (request group keys without their suffix).
SINCE = {"limit": 16, "required": 17, "member_of": 21, "group_policy": 25, "in_tree": 31,
         "root_required": 35, "same_subtree": 36}


def _body(ars: list[dict], sums: dict) -> dict:
    return {"allocation_requests": ars, "provider_summaries": sums}


def _ar(allocs: dict[str, dict[str, int]], mappings: dict | None = None) -> dict:
    out: dict = {"allocations": {rp: {"resources": r} for rp, r in allocs.items()}}
    if mappings is not None:
        out["mappings"] = mappings
    return out


def test_worlds_and_queries_repeat_from_their_seed() -> None:
    a, b = generate_world(7), generate_world(7)
    assert a.describe() == b.describe()
    assert generate_world(8).describe() != a.describe()
    assert [generate_query(a, 7, i).url() for i in range(20)] == \
           [generate_query(b, 7, i).url() for i in range(20)]


def test_world_usage_fits_capacity_and_units() -> None:
    for seed in range(30):
        world = generate_world(seed)
        invs = {(p.uuid, rc): inv for p in world.providers for rc, inv in p.inventories.items()}
        for (rp, rc), used in world.usage().items():
            assert used <= capacity(invs[(rp, rc)])
        for c in world.consumers:
            for rp, res in c.allocations.items():
                for rc, n in res.items():
                    inv = invs[(rp, rc)]
                    assert inv["min_unit"] <= n <= inv["max_unit"] and n % inv["step_size"] == 0


def test_unstretched_queries_only_use_what_their_version_allows() -> None:
    seen_versions = set()
    for seed in range(40):
        world = generate_world(seed)
        for i in range(25):
            q = generate_query(world, seed, i)
            seen_versions.add(q.minor)
            if q.stretch:
                continue
            for key, value in q.params:
                base = re.match(r"[a-z_]+?(?=\d|_[A-Z]|$)", key).group(0)  # type: ignore[union-attr]
                if base in SINCE:
                    assert q.minor >= SINCE[base], (q.version, key)
                if key != base:
                    assert q.minor >= 25, (q.version, key)
                    if not key[len(base):].isdigit():
                        assert q.minor >= 33, (q.version, key)
                if key.startswith(("required", "root_required")) and "!" in value:
                    assert q.minor >= 22
                if "in:" in value and key.startswith("required"):
                    assert q.minor >= 39
                if key.startswith("member_of") and value.startswith("!"):
                    assert q.minor >= 32
    assert seen_versions == set(range(10, 40))


def test_order_does_not_matter_but_every_candidate_does() -> None:
    world = generate_world(3)
    a, b = world.providers[0].uuid, world.providers[1].uuid
    sums = {a: {"resources": {}, "traits": ["X", "Y"]}, b: {"resources": {}, "traits": []}}
    one = _ar({a: {"VCPU": 1}}, {"": [a]})
    two = _ar({b: {"VCPU": 1}}, {"": [b]})
    ref = Answer(200, _body([one, two], sums))
    swapped = {a: {"resources": {}, "traits": ["Y", "X"]}, b: sums[b]}
    assert not compare_full(world, 39, ref, Answer(200, _body([two, one], swapped)))
    assert compare_full(world, 39, ref, Answer(200, _body([one], sums)))
    assert compare_full(world, 39, ref, Answer(200, _body([one, two, two], sums)))
    amount = _ar({b: {"VCPU": 2}}, {"": [b]})
    assert compare_full(world, 39, ref, Answer(200, _body([one, amount], sums)))
    mapped = _ar({b: {"VCPU": 1}}, {"1": [b]})
    assert compare_full(world, 39, ref, Answer(200, _body([one, mapped], sums)))
    assert compare_full(world, 39, ref, Answer(200, _body([one, two], {a: sums[a]})))


def test_errors_compare_status_then_code_from_1_23() -> None:
    world = generate_world(3)

    def err(code: str) -> Answer:
        return Answer(400, {"errors": [{"status": 400, "detail": "no", "code": code}]})

    assert compare_full(world, 30, err("placement.undefined_code"), Answer(200, _body([], {})))
    assert compare_full(world, 30, err("placement.undefined_code"), err("placement.query.bad"))
    assert not compare_full(world, 22, err("a"), err("b"))


def test_limited_answer_is_checked_against_the_full_one() -> None:
    world = generate_world(3)
    roots = [p for p in world.providers if p.parent is None][:3]
    sums = {p.uuid: {"resources": {}} for p in roots}
    ars = [_ar({p.uuid: {"VCPU": 1}}) for p in roots]
    full = Answer(200, _body(ars, sums))
    good = Answer(200, _body(ars[:2], {p.uuid: sums[p.uuid] for p in roots[:2]}))
    assert not check_limited(world, 30, 2, full, good, "Stratus")
    too_many = Answer(200, _body(ars, sums))
    assert check_limited(world, 30, 2, full, too_many, "Stratus")
    stray = Answer(200, _body(ars[:2], sums))
    assert check_limited(world, 30, 2, full, stray, "Stratus")
    invented = Answer(200, _body([_ar({roots[0].uuid: {"VCPU": 9}}), ars[1]], sums))
    assert check_limited(world, 30, 2, full, invented, "Stratus")
