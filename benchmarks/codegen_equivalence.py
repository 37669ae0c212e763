"""The generated modules before and after a change to the code generator: record them, then compare.

``python benchmarks/codegen_equivalence.py --record FILE`` writes, for every subject below and every target, the
forward module (``function_source``) and the gradients' module (``gradients_source``) into FILE (JSON);
``--compare FILE`` regenerates them and reports each module that differs, with the first lines that do. A
refactoring of ``tensoradbook/codegen`` that leaves every module byte-identical changes no kernel's values.

The subjects: the reference patterns of tests/corpus.py, the differential tests' fixed and covering cases and
``--draws`` draws of every family of tests/differential.py (seeded, so a record and a comparison see the same
texts), the workloads of benchmarks/workloads.py at their smallest sizes, and the report's example.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import tensoradbook as tab  # noqa: E402
from tensoradbook.codegen.module import function_source, gradients_source  # noqa: E402
from tensoradbook.codegen.targets import GATHER_TARGETS, TARGETS  # noqa: E402

REPORT_EXAMPLE = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
                  {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (7,)})


def subjects(draws: int) -> dict[str, tuple[str, dict]]:
    """``label -> (text, shapes)``, the same for every run with the same ``draws``."""
    from corpus import PATTERNS
    from differential import FAMILIES, Generator
    from test_differential import COVERING, FOUND

    out = {"report example": REPORT_EXAMPLE}
    out.update({f"pattern {k}": (text, shapes) for k, (text, shapes, _) in enumerate(PATTERNS)})
    out.update({f"found {k}": (d.text, d.shapes) for k, d in enumerate(FOUND)})
    out.update({f"covering {k}": (d.text, d.shapes) for k, d in enumerate(COVERING)})
    generator = Generator(random.Random(20261127))
    for family in FAMILIES:
        for k in range(draws):
            draw = generator.draw(family)
            out[f"{family} {k}"] = (draw.text, draw.shapes)
    return out


def workload_subjects() -> dict[str, object]:
    """The workloads' subjects at both their sizes (the large ones cross the planning thresholds)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import workloads

    out = {}
    for workload in workloads.WORKLOADS:
        for size, value in workload.sizes.items():
            case = workload.make(value)
            out[f"workload {workload.key} {size}"] = (case.subject, workloads.derived(case))
    return out


def modules(draws: int) -> dict[str, str]:
    pairs = {}
    for label, (text, shapes) in subjects(draws).items():
        fn = tab.parse(text, shapes)
        pairs[label] = (fn, tab.derive(fn))
    pairs.update(workload_subjects())
    out = {}
    for label, (subject, grads) in pairs.items():
        for target in GATHER_TARGETS:
            out[f"{label} | forward | {target}"] = function_source(subject, target)
        for target in TARGETS:
            out[f"{label} | gradients | {target}"] = gradients_source(grads, target)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--draws", type=int, default=6, help="draws of each differential family")
    options = parser.parse_args()
    now = modules(options.draws)
    if options.record:
        options.record.write_text(json.dumps(now, indent=0, sort_keys=True))
        print(f"recorded {len(now)} modules in {options.record}")
        return 0
    before = json.loads(options.compare.read_text())
    changed = [key for key in before if now.get(key) != before[key]]
    missing = [key for key in now if key not in before]
    for key in changed[:10]:
        diff = difflib.unified_diff(before[key].splitlines(), now.get(key, "").splitlines(), lineterm="", n=1)
        print(f"--- {key}\n" + "\n".join(list(diff)[2:14]))
    print(f"{len(before)} modules compared: {len(changed)} differ, {len(missing)} new subjects")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
