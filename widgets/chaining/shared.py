"""What the chaining widgets share: colours, presets, the reading of sizes, chains and tape bounds, and
the HTML of a step's cost (from the core's :func:`tensoradbook.chaining.own_cost_factors`).
"""

from __future__ import annotations

import re
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from tensoradbook import chaining as jc


# Light to dark: a small tape pale yellow, a tape at the bound dark orange-red.
TAPE_RAMP = ListedColormap(colormaps["YlOrRd"](np.linspace(0.08, 0.8, 256)))

BAR_FIGSIZE = (7.0, 3.9)  # inches, at the house DPI
# Sec. 3: n1, m1 = n2, m2 and |E1| = |E2| = 100; the optimum of case k is configuration k of Theorem 3.1's proof.
TWO_FACTOR_PRESETS = {
    "sec. 3 case 1: n₁=2, m₁=4, m₂=8": (2, 4, 8, 100, 100),
    "sec. 3 case 2: n₁=4, m₁=2, m₂=32": (4, 2, 32, 100, 100),
    "sec. 3 case 3: n₁=8, m₁=4, m₂=2": (8, 4, 2, 100, 100),
    "sec. 3 case 4: n₁=32, m₁=2, m₂=4": (32, 2, 4, 100, 100),
    "sec. 3 case 5: n₁=4, m₁=2, m₂=4": (4, 2, 4, 100, 100),
}
SIZE_NAMES = ("n1", "m1", "m2", "e1", "e2")
SIZE_LABELS = {"n1": "n₁", "m1": "m₁ = n₂", "m2": "m₂", "e1": "|E₁|", "e2": "|E₂|"}
SLIDER_MAX = {"n1": 64, "m1": 64, "m2": 64, "e1": 1000, "e2": 1000}
# Sizes and edge counts the views take: sliders (JavaScript numbers) then hold every size and every tape
# bound (sum |E| <= 10 * 10**9) exactly. The core takes any size; costs, which can exceed int64, are drawn
# as floats.
MAX_NUMBER = 10**9

SECTION_4, SECTION_5, SECTION_6, NOT_MONOTONE = ("sec. 4: R⁸ → R", "sec. 5 example", "sec. 6 OpenFOAM",
                                                 "paper's rule not monotone")
# name -> (chain file, the tape bound to start with: the paper's, or where the paper's rule turns)
CHAIN_PRESETS = {
    SECTION_4: ("3\n4 8 32\n2 4 16\n1 2 8\n", 55),
    SECTION_5: ("3\n3 3 29\n1 3 14\n2 1 7\n", 50),
    SECTION_6: ("6\n1531 1531 78172\n967 1531 24346\n1011 967 21090\n751 1011 75280\n1151 751 75980\n"
                "1531 1151 10020\n", 284888),
    NOT_MONOTONE: ("3\n4 6 13\n3 4 43\n5 3 64\n", 42),
}
RULE_NAMES = {"exact": "exact (Pareto fronts)", "paper": "paper (one value per cell)",
              "local": "local (eq. 3.8 as printed)"}
UNLIMITED = "unlimited"


def _number(value: int) -> str:
    return f"{value:,}"


def _compact(value: float, _=None) -> str:
    """An axis label: 436M, 120k or 56 (the full numbers are in the text beside the plot)."""
    for threshold, unit, suffix in ((10**9, 10**9, "G"), (10**6, 10**6, "M"), (10**4, 10**3, "k")):
        if abs(value) >= threshold:
            return f"{value / unit:g}{suffix}"
    return f"{value:g}"


def check_size(value: int, what: str) -> int:
    if value > MAX_NUMBER:
        raise ValueError(f"{what} is {value:,}; these views take sizes and edge counts up to {MAX_NUMBER:,}")
    return value


def read_chain(value, max_q: int) -> jc.Chain:
    """A :class:`~tensoradbook.chaining.Chain` from a chain, its file text or ``(m, n, |E|)`` triples."""
    if isinstance(value, jc.Chain):
        chain = value
    elif isinstance(value, str):
        chain = jc.Chain.parse(value)
    else:
        chain = jc.Chain(value)
    if chain.q > max_q:
        raise ValueError(f"the chain has q = {chain.q} factors; this view shows at most {max_q}")
    for index, f in enumerate(chain, start=1):
        for value, name in ((f.m, "m"), (f.n, "n"), (f.edges, "|E|")):
            check_size(value, f"{name} of F_{index}")
    return chain


def read_memory(value) -> int | None:
    """The tape bound: None, empty text or "unlimited" for none, else a non-negative integer."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if text.lower() in ("", UNLIMITED):
            return None
        if not re.fullmatch(r"[0-9]+", text):  # ASCII: int() would also read '١٢'
            raise ValueError(f"tape bound Mbar: {value.strip()!r} is not an integer in digits 0-9 "
                             f"(leave it empty for unlimited tape)")
        value = int(text)
    return jc.memory_bound(value)


def _sub(text) -> str:
    return f"<sub>{text}</sub>"


def _symbol(letter: str, subscripts: tuple[int, ...]) -> str:
    if letter != "E":
        return f"{letter}{_sub(subscripts[0])}"
    first, last = subscripts
    return f"|E{_sub(first)}|" if first == last else f"(|E{_sub(first)}|+…+|E{_sub(last)}|)"


def own_cost(chain: jc.Chain, op: str, j: int, i: int, k: int) -> tuple[str, str]:
    """HTML: the fma of the step ``op`` on ``F'_{j,i}`` (split ``k``) itself, in the paper's symbols and in
    numbers (the core's :func:`~tensoradbook.chaining.own_cost_factors`):
    ``("m<sub>3</sub>·m<sub>2</sub>·n<sub>1</sub>", "2·1·3")``."""
    factors = jc.own_cost_factors(chain, op, j, i, k)
    return "·".join(_symbol(s, sub) for s, sub, _ in factors), "·".join(str(v) for *_, v in factors)


def step_formula(chain: jc.Chain, op: str, j: int, i: int, k: int) -> str:
    """HTML: a candidate's fma in eq. 3.7's terms: its operands' cells plus its own step."""
    operands = {jc.MXM: [(j, k + 1), (k, i)], jc.GXM: [(k, i)], jc.MXG: [(j, k + 1)]}.get(op, [])
    return " + ".join([f"fma{_sub(f'{a},{b}')}" for a, b in operands] + [own_cost(chain, op, j, i, k)[0]])
