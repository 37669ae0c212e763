"""Chapter 09: matrix-free Jacobian chaining (Naumann, secs. 3-5).

:func:`check_two_factor_optimum` (sec. 3, the eight schedules of F_2 o F_1),
:func:`check_homogeneous_costs` (sec. 5's baselines), :func:`check_cell_fma`
(a cell of eq. 3.7), :func:`check_bounded_optimum` (sec. 4, a tape bound) and
:func:`check_tape_threshold` (the least bound that keeps the optimum).

The oracle is brute force: every schedule of the (sub)chain enumerated by
:func:`tensoradbook.chaining.schedules`, its fma and tape added up step by
step (secs. 2-4), never the dynamic programme; the homogeneous modes are
summed factor by factor. Chains are given as a Chain, its file text
("q" then "m n |E|" lines) or (m, n, |E|) triples, F_1 first.
"""

from __future__ import annotations

import numpy as np

from ..chaining import Chain, optimize, schedules, two_factor_schedules
from .checking import Wrong, pending
from .feedback import CheckResult

__all__ = [
    "check_two_factor_optimum",
    "check_homogeneous_costs",
    "check_cell_fma",
    "check_bounded_optimum",
    "check_tape_threshold",
]


_CHAIN_EXERCISE_MAX_Q = 6  # brute force enumerates 29,948 schedules at q = 6


def _exercise_chain(chain):
    """The exercise's chain (Chain, file text or triples), small enough for brute force."""
    if not isinstance(chain, Chain):
        chain = Chain.parse(chain) if isinstance(chain, str) else Chain(chain)
    if chain.q > _CHAIN_EXERCISE_MAX_Q:
        raise ValueError(f"exercise chains have at most {_CHAIN_EXERCISE_MAX_Q} factors for brute force, "
                         f"got q = {chain.q}")
    return chain


def _count_answer(answer, what: str) -> int:
    """A non-negative whole number given as an int, a whole float or text like "1,234"; else a Wrong."""
    if isinstance(answer, bool):
        raise Wrong(f"{what} must be a whole number, got {answer!r}")
    if isinstance(answer, (int, np.integer)) or (isinstance(answer, (float, np.floating))
                                                   and float(answer).is_integer()):
        value = int(answer)
    elif isinstance(answer, str) and answer.strip().replace(",", "").replace("_", "").isdigit():
        value = int(answer.strip().replace(",", "").replace("_", ""))
    else:
        raise Wrong(f"{what} must be a whole number, got {answer!r}")
    if value < 0:
        raise Wrong(f"{what} cannot be negative, got {value}")
    return value


def _read_count(name: str, answer, what: str, hint: str) -> int | CheckResult:
    """The student's whole number, or the verdict to give at once: no answer yet (with ``hint``), or not
    a whole number."""
    if answer is None:
        return pending(name, hint)
    try:
        return _count_answer(answer, what)
    except Wrong as err:
        return err.result(name)


def _compact_notation(text: str) -> str:
    return "".join(text.split())


def _letter_of(item, eight: dict, chain: Chain) -> str:
    """The letter of the schedule ``item`` names: by its letter or in the notation of the chain."""
    text = str(item).strip()
    if text.strip("()").lower() in eight:
        return text.strip("()").lower()
    by_notation = {_compact_notation(s.notation(chain)): letter for letter, s in eight.items()}
    if _compact_notation(text) in by_notation:
        return by_notation[_compact_notation(text)]
    raise Wrong(f"{text!r} is neither a letter a..h nor one of the eight schedules "
                 f"(written like {eight['e'].notation(chain)!r})")


def _letters_or_cost(answer, eight: dict, chain: Chain) -> tuple[list[str] | None, int | None]:
    """The letters of the schedules the answer names, or None and the cost in fma it gives instead."""
    if isinstance(answer, (list, tuple, set, frozenset)):
        letters = [_letter_of(item, eight, chain) for item in answer]
        if not letters:
            raise Wrong("the list of schedules is empty")
        return letters, None
    if isinstance(answer, str) and not answer.strip().replace(",", "").isdigit():
        return [_letter_of(answer, eight, chain)], None
    return None, _count_answer(answer, "the cost")


def check_two_factor_optimum(sizes, answer) -> CheckResult:
    """Exercise (sec. 3): a cheapest of the eight schedules of ``F' = F'_2 F'_1``.

    ``sizes`` is ``(n1, m1, m2, |E1|, |E2|)`` (``m1 = n2``). The answer is the
    letter a..h of a cheapest schedule in the paper's order, several letters
    (each must be cheapest), the schedule in the notation of
    :mod:`tensoradbook.chaining` (``"(F2dot I4)(I4 F1bar)"``) or its cost in
    fma. Brute force over every schedule of the two-factor chain decides.
    """
    try:
        n1, m1, m2, e1, e2 = (int(v) for v in sizes)
    except (TypeError, ValueError):
        raise ValueError(f"sizes must be (n1, m1, m2, |E1|, |E2|), got {sizes!r}") from None
    chain = Chain([(m1, n1, e1), (m2, m1, e2)])
    eight = two_factor_schedules(n1, m1, m2, e1, e2)
    name = f"cheapest schedule of F2 o F1 with n1={n1}, m1=n2={m1}, m2={m2}, |E1|={e1}, |E2|={e2}"
    if answer is None:
        return pending(name, "Your answer is a letter a..h (the paper's order), the schedule written like "
                              "'(F2dot I4)(I4 F1bar)', or its cost in fma.")
    best = min(s.fma for s in schedules(chain))
    cheapest = [letter for letter, s in eight.items() if s.fma == best]
    summary = f"{best} fma: " + ", ".join(f"{letter} = {eight[letter].notation(chain)}" for letter in cheapest) + "."
    try:
        letters, cost = _letters_or_cost(answer, eight, chain)
    except Wrong as err:
        return err.result(name)
    # Only right or wrong, with a hint in terms of the submitted schedule alone: the cost of a wrong schedule, or
    # how far a wrong cost is from the least, would let eight tries rank the schedules without costing one.
    how = ("cost each of the eight with the fma column of sec. 3's table (a tangent of c columns costs c |E_i|, an "
           "adjoint of r rows r |E_i|, eqs. 2.5-2.6; a dense product m2 n2 n1) and take the least")
    if letters is None:
        if cost == best:
            return CheckResult(name, True, note=summary)
        return CheckResult(name, False, [f"{cost} fma is not the least cost of the eight schedules: {how}"])
    wrong = [letter for letter in dict.fromkeys(letters) if eight[letter].fma != best]
    if not wrong:
        return CheckResult(name, True, note=summary)
    if len(letters) > 1:
        return CheckResult(name, False, [f"not every schedule you list is a cheapest one: {how}"])
    letter = wrong[0]
    # f, g and h lose by Theorem 3.1 whatever the sizes: saying so tells nothing about this exercise's data
    why = (": it preaccumulates both factors and multiplies them, and by the proof of Theorem 3.1 that never beats "
           "the best of a-e" if letter in "fgh" else "")
    return CheckResult(name, False, [f"schedule {letter} = {eight[letter].notation(chain)} is not a cheapest "
                                     f"one{why}", f"hint: {how}"])


def check_homogeneous_costs(chain, answer) -> CheckResult:
    """Exercise (sec. 5): the fma of homogeneous tangent and homogeneous adjoint mode, as a pair.

    The homogeneous modes of sec. 5 (every factor by tangents, every factor by
    adjoints), their costs by the model of sec. 2 (eqs. 2.5-2.6) summed here
    factor by factor.
    """
    chain = _exercise_chain(chain)
    name = f"homogeneous tangent and adjoint fma of the chain {[(f.m, f.n, f.edges) for f in chain]}"
    if answer is None:
        return pending(name, "Your answer is a pair (tangent fma, adjoint fma).")
    columns, rows = chain.factor(1).n, chain.factor(chain.q).m
    tangent = sum(columns * f.edges for f in chain)
    adjoint = sum(rows * f.edges for f in chain)
    try:
        if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__") or len(answer) != 2:
            raise Wrong(f"the answer must be a pair (tangent, adjoint), got {answer!r}")
        pair = list(answer)
        mine_tangent, mine_adjoint = (_count_answer(v, what) for v, what in zip(pair, ("tangent", "adjoint")))
    except Wrong as err:
        return err.result(name)
    if (mine_tangent, mine_adjoint) == (tangent, adjoint):
        return CheckResult(name, True, note=f"n1 * sum |E| = {columns} * {tangent // columns} and "
                                            f"m{chain.q} * sum |E| = {rows} * {adjoint // rows}.")
    if (mine_tangent, mine_adjoint) == (adjoint, tangent):
        return CheckResult(name, False, ["the two are swapped: tangent mode carries the n1 columns of the "
                                         "identity, adjoint mode the m_q rows"])
    problems = []
    for mine, right, mode, size, own in ((mine_tangent, tangent, "tangent", f"n1 = {columns} columns", "n"),
                                         (mine_adjoint, adjoint, "adjoint", f"m{chain.q} = {rows} rows", "m")):
        if mine == right:
            continue
        if mine == sum(getattr(f, own) * f.edges for f in chain):
            problems.append(f"{mode}: {mine} uses each factor's own {own}_i; homogeneous {mode} mode carries "
                            f"the same {size} through every factor")
        else:
            problems.append(f"{mode}: {mine} is not it; homogeneous {mode} mode carries {size} through every "
                            f"factor, |E_i| fma each")
    return CheckResult(name, False, problems)


def _best_by_last_step(chain) -> dict[tuple[str, int], int]:
    """Brute force: per last step (op, k) of a schedule of the whole chain, the least fma."""
    best: dict[tuple[str, int], int] = {}
    for s in schedules(chain):
        key = (s.op, s.k)
        best[key] = min(best.get(key, s.fma), s.fma)
    return best


def check_cell_fma(chain, j: int, i: int, answer) -> CheckResult:
    """Exercise (eq. 3.7): the fma that cell ``(j, i)`` of the table holds, unlimited tape.

    That is the least fma of any schedule for ``F'_{j,i} = F'_j ... F'_i``:
    here every schedule of the subchain ``F_i .. F_j`` is enumerated.
    """
    chain = _exercise_chain(chain)
    if not 1 <= i <= j <= chain.q:
        raise ValueError(f"cell ({j}, {i}) is not in the table of a chain of {chain.q} factors")
    name = f"fma of cell F'_{{{j},{i}}} (unlimited tape)"
    mine = _read_count(name, answer, "the fma", "Your answer is a whole number of fma.")
    if isinstance(mine, CheckResult):
        return mine
    sub = Chain(chain.factors[i - 1:j])
    options = _best_by_last_step(sub)
    best = min(options.values())
    if mine == best:
        winners = sorted(f"{op}({k + i - 1})" if j > i else op for (op, k), fma in options.items() if fma == best)
        return CheckResult(name, True, note=f"Reached by: {', '.join(winners)}.")
    # One message for every wrong number: "too low", or the best cost of the last step a number happens to match,
    # would let repeated tries find the minimum without working out eq. 3.7.
    return CheckResult(name, False, [f"{mine} fma is not the least cost of F'_{{{j},{i}}}: eq. 3.7 takes the minimum "
                                     f"over every split k and every last step (MxM, GxM, MxG), each candidate's "
                                     f"fma added up from its cells and its step; a single factor costs |E_j| "
                                     f"min(n_j, m_j)"])


def check_bounded_optimum(chain, memory: int, answer) -> CheckResult:
    """Exercise (sec. 4): the least fma of a schedule whose tape is at most ``memory``.

    Tape is counted as in the paper's tables (:mod:`tensoradbook.chaining`:
    an adjoint sweep adds its edges to the tape of the matrix it is seeded
    with). Every schedule is enumerated; the paper's single-value rule is
    consulted only to explain a typical wrong answer.
    """
    chain = _exercise_chain(chain)
    name = f"least fma with tape at most {memory}"
    mine = _read_count(name, answer, "the fma", "Your answer is a whole number of fma.")
    if isinstance(mine, CheckResult):
        return mine
    every = schedules(chain)
    fitting = [s for s in every if s.memory <= memory]
    best = min(s.fma for s in fitting)
    if mine == best:
        witness = min((s for s in fitting if s.fma == best), key=lambda s: s.memory)
        paper = optimize(chain, memory, rule="paper").fma
        return CheckResult(name, True, note=f"For example {witness.notation(chain)} (tape {witness.memory})"
                                            + (f"; the paper's single-value rule settles for {paper}" if paper != best
                                               else "") + ".")
    paper = optimize(chain, memory, rule="paper")
    # The paper's rule never does better than the exact optimum, so naming it tells nothing about the answer; any
    # other hint about a wrong number (its tape, "too low") would let repeated tries find the answer.
    if mine == paper.fma:
        return CheckResult(name, False, [f"{mine} fma is what the paper's single-value rule finds "
                                         f"({paper.notation}); keeping only the cheapest solution per cell loses "
                                         f"a cheaper schedule that fits the bound"])
    return CheckResult(name, False, [f"{mine} fma is not the least cost of a schedule with tape at most {memory}: "
                                     f"count each schedule's tape as the paper's tables do (sec. 4) and keep, per "
                                     f"cell, every (fma, tape) pair that no other beats in both (the Pareto "
                                     f"front), not only the cheapest"])


def check_tape_threshold(chain, answer) -> CheckResult:
    """Exercise (sec. 4): the least tape bound ``Mbar`` under which the unlimited optimum is still reached.

    Brute force: the least tape of a schedule of minimal fma.
    """
    chain = _exercise_chain(chain)
    name = "least tape bound that keeps the unlimited optimum"
    mine = _read_count(name, answer, "the bound", "Your answer is a whole number (edges of tape).")
    if isinstance(mine, CheckResult):
        return mine
    every = schedules(chain)
    best = min(s.fma for s in every)
    threshold = min(s.memory for s in every if s.fma == best)
    if mine == threshold:
        return CheckResult(name, True, note=f"With less tape the best costs "
                                            f"{min(s.fma for s in every if s.memory < threshold)} fma instead of "
                                            f"{best}." if threshold else "No tape at all is needed.")
    # One message for every wrong bound: what a smaller bound costs, or "below yours already works", would let
    # repeated tries find the threshold.
    return CheckResult(name, False, [f"{mine} is not the least tape bound that keeps the unlimited optimum of {best} "
                                     f"fma: find every schedule that reaches {best} fma and take the least tape "
                                     f"among them (counted as in the paper's tables, sec. 4)"])
