"""Matrix-free Jacobian chaining: time of the dynamic programmes, and what they save.

Random chains from the paper's generator (sec. 5, Table 1): m, n ~ U{1..q},
|E| ~ U{m + n .. (m + n)^2}, seeded. The paper's own instances were never
published, so the costs differ from its Table 1; the ratio column is the
paper's (best of homogeneous tangent, homogeneous adjoint and optimal
preaccumulation, over the optimum).

Run: .venv/bin/python benchmarks/chaining.py [--quick]
"""

import statistics
import sys
import time

from tensoradbook import chaining as jc


def seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def unlimited(lengths):
    print("Unlimited tape (eq. 3.7), median of 3 runs; costs in fma")
    print(f"{'q':>4} {'exact ms':>9} {'paper ms':>9} {'tangent':>15} {'adjoint':>15} {'preaccumulation':>16} "
          f"{'optimum':>13} {'best/opt':>9}")
    for q in lengths:
        chain = jc.Chain.random(q, seed=q)
        exact_s, plan = seconds(lambda: jc.optimize(chain), 3)
        paper_s, paper = seconds(lambda: jc.optimize(chain, rule="paper"), 3)
        assert paper.fma == plan.fma
        base = jc.baselines(chain)
        best = min(p.fma for p in base.values())
        print(f"{q:>4} {1e3 * exact_s:9.1f} {1e3 * paper_s:9.1f} {base['tangent'].fma:>15,} "
              f"{base['adjoint'].fma:>15,} {base['preaccumulation'].fma:>16,} {plan.fma:>13,} {best / plan.fma:9.1f}")


def bounded(lengths, fractions, unpruned_up_to):
    print()
    print("Tape bound Mbar = fraction of the tape M* of the unlimited optimum; one run each")
    print("exact: Pareto fronts, pruned (prune=True) for q > 10, unpruned also timed where q <= "
          f"{unpruned_up_to}; paper: single-value rule; entries: front entries kept in all cells")
    print(f"{'q':>4} {'Mbar/M*':>8} {'Mbar':>10} {'exact ms':>9} {'unpruned ms':>11} {'paper ms':>9} "
          f"{'exact fma':>13} {'paper/exact':>11} {'exact/unlimited':>15} {'entries':>8}")
    for q in lengths:
        chain = jc.Chain.random(q, seed=q)
        free = jc.optimize(chain)
        for fraction in fractions:
            bound = int(free.memory * fraction)
            exact_s, plan = seconds(lambda: jc.optimize(chain, bound, prune=q > 10), 1)
            if q <= unpruned_up_to:
                full_s, full = seconds(lambda: jc.optimize(chain, bound, prune=False), 1)
                assert (full.fma, full.memory) == (plan.fma, plan.memory)
                unpruned = f"{1e3 * full_s:11.1f}"
            else:
                unpruned = f"{'-':>11}"
            paper_s, paper = seconds(lambda: jc.optimize(chain, bound, "paper"), 1)
            print(f"{q:>4} {fraction:8.2f} {bound:>10,} {1e3 * exact_s:9.1f} {unpruned} {1e3 * paper_s:9.1f} "
                  f"{plan.fma:>13,} {paper.fma / plan.fma:11.3f} {plan.fma / free.fma:15.3f} {plan.kept_entries:>8,}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    unlimited((10, 50, 100) if quick else (10, 50, 100, 250, 500))
    bounded((10, 25) if quick else (10, 25, 50, 100, 150), (1.0, 0.5, 0.25, 0.1), unpruned_up_to=100)
