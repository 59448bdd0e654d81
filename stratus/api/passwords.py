"""Admin passwords as Nova makes them (``nova.utils.generate_password``): at least one
character of each group, none that is easily misread (0, 1, I, O, l)."""

from __future__ import annotations

import secrets

GROUPS = ("23456789", "ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz")


def generate(length: int = 12) -> str:
    rng = secrets.SystemRandom()
    chosen = [rng.choice(group) for group in GROUPS]
    rng.shuffle(chosen)
    chosen = chosen[:length]
    every = "".join(GROUPS)
    chosen += [rng.choice(every) for _ in range(length - len(chosen))]
    rng.shuffle(chosen)
    return "".join(chosen)
