"""Every operation of the table has a spelling in every kernel target and in the reference evaluator.

The operations table (tensoradbook.lang.ops) keeps the math; how code computes each operation is the evaluator's
(lang.evaluate) and each target's (codegen.spellings). A row added to the table without its spellings fails here,
with the names missing, rather than as a KeyError deep in a kernel printer.
"""

from __future__ import annotations

import pytest

from tensoradbook.codegen import spellings
from tensoradbook.codegen.printer import CudaPrinter, KernelPrinter, ScalarPrinter, VectorPrinter
from tensoradbook.lang import evaluate
from tensoradbook.lang.ops import COMPARISONS, OPERATIONS, REDUCTIONS


@pytest.mark.parametrize("style", spellings.STYLES)
def test_every_operation_has_a_spelling_in_every_target(style):
    missing = sorted(set(OPERATIONS) - set(spellings.STYLES[style]))
    assert not missing, f"no {style} spelling of {missing}: add one in tensoradbook/codegen/spellings.py"
    assert not set(spellings.STYLES[style]) - set(OPERATIONS), "a spelling of no operation of the table"


@pytest.mark.parametrize("style", spellings.STYLES)
def test_every_spelling_takes_its_operands(style):
    for name, spelling in spellings.STYLES[style].items():
        operands = [f"<{k}>" for k in range(OPERATIONS[name].arity)]
        text = spelling.format(*operands)
        assert all(operand in text for operand in operands), (style, name, text)


@pytest.mark.parametrize("accumulate", [spellings.ACCUMULATE, spellings.NUMPY_ACCUMULATE])
def test_every_reduction_has_an_accumulation(accumulate):
    assert set(accumulate) == set(REDUCTIONS)


def test_the_evaluator_spells_every_operation_comparison_and_reduction():
    assert set(evaluate._NUMPY) == {*OPERATIONS, *COMPARISONS, *REDUCTIONS}
    assert all(callable(function) for function in evaluate._NUMPY.values())


def test_the_table_keeps_no_target_spelling():
    for row in OPERATIONS.values():
        assert not {"numpy", "scalar", "cuda"} & set(vars(row)), row.name


@pytest.mark.parametrize("printer, style", [(ScalarPrinter, spellings.SCALAR), (CudaPrinter, spellings.CUDA),
                                            (VectorPrinter, spellings.NUMPY)])
def test_each_printer_is_given_its_targets_spellings(printer, style):
    assert printer({}, set(), 0).spellings is style
    own = {"exp": "my_exp({0})"}
    assert KernelPrinter({}, set(), spellings=own).template("exp") == "my_exp({0})"


def test_a_missing_spelling_says_where_to_add_it():
    with pytest.raises(KeyError, match="codegen/spellings.py"):
        KernelPrinter({}, set(), spellings={}).template("exp")
