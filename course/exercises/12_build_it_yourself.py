"""Chapter 12: build the engine yourself

The instructor's side of the exercises whose prompts and check calls are in notebooks/12_build_it_yourself.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from fractions import Fraction

import numpy as np

import tensoradbook as tab
from tensoradbook.ad import local_partials
from tensoradbook.exercises import (check_adjoints, check_algorithm4, check_box_solutions, check_index_solve,
                                    check_reads)
from tensoradbook.lang import ZERO, Affine, Atom, Element, If, Select, Sum, add, expr_text, if_, mul, select, substitute

# the section 6 example of the report
text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
f6 = tab.parse(text6, shapes6)


# %% note 1
# Define `read_geometry(fn, read, sums)` and `reads(fn)` in the answer cell (exercise 5 uses `read_geometry`); hidden
# tests walk more functions with the same features.


# %% answer 1
def read_geometry(fn, read, sums):
    alpha = list(fn.indices) + [s.index for s in sums]
    A = [[int(index.coefficient(name)) for name in alpha] for index in read.indices]
    a = [int(index.constant) for index in read.indices]
    R, r = [], []

    def at_least_zero(affine):  # the row of R alpha >= r that says affine >= 0
        R.append([int(affine.coefficient(name)) for name in alpha])
        r.append(-int(affine.constant))

    for name, size in zip(fn.indices, fn.shapes[fn.name]):  # eq. 42
        at_least_zero(Affine.index(name))
        at_least_zero(Affine.constant_value(size - 1) - Affine.index(name))
    for s in sums:  # eq. 52: d k >= numerator of each lower bound, d k <= of each upper
        k = Affine.index(s.index)
        for low in s.lower:
            at_least_zero(k.scale(low.denominator) - low.numerator)
        for high in s.upper:
            at_least_zero(high.numerator - k.scale(high.denominator))
    return alpha, A, a, R, r


def reads(fn):
    found = []

    def visit(node, sums):
        if isinstance(node, Element):
            found.append((expr_text(node), *read_geometry(fn, node, sums)))
        else:
            inner = sums + (node,) if isinstance(node, Sum) else sums
            for child in node.children():
                visit(child, inner)

    visit(fn.body, ())
    return found


# %% test 1 points=2
check_reads(reads)


# %% hidden 1
more = [
    ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
     {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
    ("g[] = cos (x[] + y[]) * y[]", {"g": (), "x": (), "y": ()}),
    ("g[i] = x[3 * i + 1] ** 2 * w[]", {"g": (3,), "x": (8,), "w": ()}),
    ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = sum{k}_(max [1; i - 1])^(min [4; floor((i + 1) / 2)]) (x[i + k] * x[k])",
     {"g": (6,), "x": (12,)}),
    ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
     "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
    ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
     {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)})]
result = check_reads(reads, functions=more)
assert result, f"reads on more functions: {result}"


# %% note 2
# Define `sweep(node, seed)` and `adjoints(fn)` as in section 2 of the chapter (exercise 5 uses `sweep`); hidden tests
# try more functions with the same features.


# %% answer 2
def sweep(node, seed):
    found = {}

    def visit(node, adjoint, sums):
        if isinstance(node, Element):  # eq. 2: the paths into one read add up
            found[node, sums] = add(found.get((node, sums), ZERO), adjoint)
        elif isinstance(node, If):  # a Kronecker delta: the branch taken gets it
            visit(node.then, if_(node.condition, adjoint, ZERO), sums)
            visit(node.otherwise, if_(node.condition, ZERO, adjoint), sums)
        elif isinstance(node, Select):  # the compared values get nothing
            compared = node.op, node.left, node.right
            visit(node.then, select(*compared, adjoint, ZERO), sums)
            visit(node.otherwise, select(*compared, ZERO, adjoint), sums)
        else:  # eq. 1; a sum is liberated: its index is free in its body's adjoint
            inner = sums + (node,) if isinstance(node, Sum) else sums
            for child, partial in local_partials(node):
                visit(child, mul(adjoint, partial), inner)

    visit(node, seed, ())
    return found


def adjoints(fn):
    seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
    return {expr_text(read): expr_text(adjoint)
            for (read, _), adjoint in sweep(fn.body, seed).items() if adjoint != ZERO}


# %% test 2 points=3
check_adjoints(adjoints)


# %% hidden 2
more = [
    ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
     {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
    ("g[] = cos (x[] + y[]) * y[]", {"g": (), "x": (), "y": ()}),
    ("g[i] = (x[i] - y[i]) / (5 + x[i] * y[i])", {"g": (3,), "x": (3,), "y": (3,)}),
    ("g[i; j] = sum{k}_0^2 (x[k; i] * y[j; k])", {"g": (4, 2), "x": (3, 4), "y": (2, 3)}),
    ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
     "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
    ("g[i] = if {i <= 1} then (y[i] * y[i]) else (x[i] / 2)",
     {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
     {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)})]
result = check_adjoints(adjoints, functions=more, seed=1)
assert result, f"adjoints on more functions: {result}"


# %% note 3
# Define `index_solve(A)` in the answer cell; hidden tests try more matrices of the same kinds.


# %% answer 3
def index_solve(A):
    smith = tab.smith_normal_form(A)  # S = U A V (eq. 12)
    S, U, V, R = smith.S.tolist(), smith.U.tolist(), smith.V.tolist(), smith.rank
    N, M = len(U), len(V)
    # S alpha' = U b: row r < R gives alpha'_r = (U b)_r / s_r, the rest of alpha' is free
    # (the last M - R columns of V), and rows R.. ask (U b)_r = 0 (eqs. 16-19)
    I = [[sum(V[m][r] * Fraction(1, S[r][r]) * U[r][n] for r in range(R)) for n in range(N)]
         for m in range(M)]
    return I, [row[R:] for row in V], U[R:]


# %% test 3 points=3
check_index_solve(index_solve)


# %% hidden 3
more = [[[3, 6, 9]], [[0, 0]], [[2, 1, 0], [4, 2, 0]], [[10, 6, 15]], [[1, 1], [1, -1]],
        [[4, 6], [6, 9]], [[0, 1, 0], [1, 0, 0]], [[1, -3]], [[2, 0, 0], [0, 4, 0]],
        np.zeros((0, 3), dtype=np.int64)]
result = check_index_solve(index_solve, matrices=more)
assert result, f"index_solve on more matrices: {result}"


# %% note 4
# Define `eliminate(M)` in the answer cell; hidden tests try more systems of the same kinds, with other right sides.


# %% answer 4
def eliminate(M):
    N = len(M)
    kappa = len(M[0]) if N else 0
    # each row (m, w) says m . z >= w . b; at the start w is the row's own unit row
    rows = [([Fraction(v) for v in M[n]], [Fraction(int(j == n)) for j in range(N)])
            for n in range(N)]
    bounds = []
    for k in range(kappa):
        lower, upper, rest = [], [], []
        for m, w in rows:
            if m[k] == 0:
                rest.append((m, w))
            else:  # z_k >= (w . b - m_(k+1..) . z_(k+1..)) / m_k, or <= where m_k < 0
                bound = ([v / m[k] for v in w] + [Fraction(0)] * (k + 1)
                         + [-v / m[k] for v in m[k + 1:]])
                (lower if m[k] > 0 else upper).append((bound, m, w))
        bounds.append(([b for b, _, _ in lower], [b for b, _, _ in upper]))
        for _, ml, wl in lower:  # every lower bound <= every upper bound (eqs. 22-26)
            for _, mu, wu in upper:
                rest.append(([-mu[k] * x + ml[k] * y for x, y in zip(ml, mu)],
                             [-mu[k] * x + ml[k] * y for x, y in zip(wl, wu)]))
        seen, rows = set(), []
        for m, w in rest:  # one of the rows that are equal up to a positive factor
            scale = max((abs(v) for v in m + w), default=0) or 1
            key = tuple(v / scale for v in m + w)
            if key not in seen:
                seen.add(key)
                rows.append((m, w))
    return bounds, [w for _, w in rows]  # no z is left: 0 >= w . b (eq. 34)


# %% test 4 points=3
check_box_solutions(eliminate)


# %% hidden 4
more = [[[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1]],
        [[0, 0], [1, 0], [0, 0], [-1, 0], [0, 1], [0, -1]],
        [[1, 2], [-1, -2], [0, 1], [0, -1], [1, 0], [-1, 0]],
        [[3], [-3], [1], [-1]],
        [[], [], []],
        [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [0, 0, 0],
         [1, 1, 1], [-1, -1, -1]],
        [[2, 1], [-1, 0], [0, -1], [1, 3]]]
result = check_box_solutions(eliminate, systems=more, seed=1)
assert result, f"eliminate on more systems: {result}"


# %% note 5
# Define `read_term` and `gradient(fn, argument)` as in section 5 of the chapter (they call your `sweep`,
# `read_geometry`, `index_solve` and `eliminate`); hidden tests derive more functions with the same features.


# %% answer 5
def combine(row, affines):  # row . affines, an Affine
    out = Affine.constant_value(0)
    for c, v in zip(row, affines):
        out = out + v.scale(c)
    return out


def read_term(fn, read, sums, adjoint, beta, name):
    alpha, A, a, R, r = read_geometry(fn, read, sums)  # line 4
    matrix = np.array(A, dtype=np.int64).reshape(len(A), len(alpha))
    I, K, C = index_solve(matrix)  # lines 5-7
    target = [Affine.index(b) - o for b, o in zip(beta, a)]  # beta - a
    conditions = [Atom(combine(row, target)) for row in C]  # C (beta - a) = 0 (eq. 16)
    p = [combine(row, target) for row in I]  # I (beta - a)
    # I (beta - a) integral (eq. 41; the report's eq. 46 drops it)
    conditions += [Atom(v.numerator, v.denominator) for v in p if not v.is_integral]
    kappa = len(K[0]) if K else 0
    zs = [Affine.index(f"{name}_z{n}") for n in range(kappa)]
    # line 8: R K z >= r - R I (beta - a)
    RK = [[sum(R[i][j] * K[j][c] for j in range(len(alpha))) for c in range(kappa)]
          for i in range(len(R))]
    rhs = [Affine.constant_value(r_i) - combine(row, p) for row, r_i in zip(R, r)]
    bounds, F = eliminate(RK)  # line 9
    conditions += [Atom(-combine(row, rhs), 0, inequality=True) for row in F]  # eq. 34
    body = substitute(adjoint, {n: p[j] + combine(K[j], zs) for j, n in enumerate(alpha)})
    N = len(rhs)

    def bound(w):  # the row w of eliminate, on the right side and z
        return combine(w[:N], rhs) + combine(w[N:], zs)

    for k, (lower, upper) in enumerate(bounds):  # line 10: z_0 innermost (eq. 45)
        body = Sum(f"{name}_z{k}", tuple(map(bound, lower)), tuple(map(bound, upper)), body)
    return if_(tuple(conditions), body, ZERO)


def gradient(fn, argument):
    name = "d" + argument
    beta = [f"{name}_{n}" for n in range(len(fn.shapes[argument]))]
    seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
    total = ZERO
    for (read, sums), adjoint in sweep(fn.body, seed).items():  # line 3
        if read.name == argument:
            total = add(total, read_term(fn, read, sums, adjoint, beta, name))
    return f"{name}[{'; '.join(beta)}] = {expr_text(total)}"


# %% test 5 points=4
check_algorithm4(gradient)


# %% hidden 5
more = [
    ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
     {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
    ("g[i] = (x[i] - y[i]) / (5 + x[i] * y[i])", {"g": (3,), "x": (3,), "y": (3,)}),
    ("g[i] = x[i + 2] * x[i]", {"g": (4,), "x": (6,)}),
    ("g[i] = x[3 * i + 1] ** 2 * w[]", {"g": (3,), "x": (8,), "w": ()}),
    ("g[i] = sum{k}_0^2 (x[3 * i + k])", {"g": (3,), "x": (9,)}),
    ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = sum{k}_(max [1; i - 1])^(min [4; floor((i + 1) / 2)]) (x[i + k] * x[k])",
     {"g": (6,), "x": (12,)}),
    ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
     "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
    ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
     {"g": (4,), "x": (4,), "y": (4,)}),
    ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)}),
    ("g[i; j] = x[j] * y[i]", {"g": (35, 30), "x": (30,), "y": (35,)})]
result = check_algorithm4(gradient, functions=more, seed=1)
assert result, f"gradient on more functions: {result}"


# %% note 6
# Define `backprop(program, values)` in the answer cell (it calls your `gradient`); hidden tests run it on chapter
# 11's changed networks (average pooling with a leaky ReLU, a second convolution).


# %% given 6
# chapter 11's network, small (2 images, 2 filters): its program, as
# tensoradbook.exercises.ch11_capstone.network(batch=2, filters=2) writes it
net = tab.parse(
    "h[n; c; i; j] = sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and j + q >= 1 and "
    "j + q <= 8} then (W[c; p; q] * X[n; i + p - 1; j + q - 1]) else (0))) + b[c]\n"
    "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) else (0)\n"
    "m[n; c; u; v] = max{r}_0^1 (max{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s]))\n"
    "z[n; k] = sum{c}_0^1 (sum{u}_0^3 (sum{v}_0^3 (V[k; c; u; v] * m[n; c; u; v]))) + d[k]\n"
    "zmax[n] = max{k}_0^9 (z[n; k])\n"
    "lse[n] = zmax[n] + log (sum{k}_0^9 (exp (z[n; k] - zmax[n])))\n"
    "L[] = -sum{n}_0^1 (sum{k}_0^9 (T[n; k] * (z[n; k] - lse[n]))) / 2",
    {"X": (2, 8, 8), "W": (2, 3, 3), "b": (2,), "h": (2, 2, 8, 8), "a": (2, 2, 8, 8),
     "m": (2, 2, 4, 4), "V": (10, 2, 4, 4), "d": (10,), "z": (2, 10), "zmax": (2,), "lse": (2,),
     "T": (2, 10), "L": ()})
print(net)


# %% answer 6
def backprop(program, values):
    known = dict(values)
    for definition in program.definitions:  # the forward values
        known[definition.name] = definition.evaluate(known)
    adjoint = {program.name: np.ones(program.shapes[program.name])}  # the seed (eq. 1)
    for definition in reversed(program.definitions):  # each adjoint complete (eq. 2)
        if definition.name in adjoint:  # (else the output does not depend on it)
            known["d" + definition.name] = adjoint[definition.name]
            for argument in definition.arguments:
                shapes = {**definition.shapes, "d" + argument: definition.shapes[argument],
                          "d" + definition.name: definition.shapes[definition.name]}
                dx = tab.parse(gradient(definition, argument), shapes).evaluate(known)
                adjoint[argument] = adjoint.get(argument, 0) + dx
    return {name: adjoint.get(name, np.zeros(program.shapes[name]))
            for name in program.arguments}


# %% test 6 points=3
check_algorithm4(backprop, net)


# %% hidden 6
# chapter 11's exercises on net: average pooling with a leaky ReLU; a second convolution
h, a, m, z, *rest = [str(definition) for definition in net.definitions]
leaky = ("a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) "
         "else (0.01 * h[n; c; i; j])")
average = "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s])) / 4"
second = [
    "g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and "
    "j + q >= 1 and j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; j + q - 1]) "
    "else (0)))) + b2[e]",
    "a2[n; e; i; j] = if {g[n; e; i; j] > 0} then (g[n; e; i; j]) else (0)",
    "m[n; c; u; v] = max{r}_0^1 (max{s}_0^1 (a2[n; c; 2 * u + r; 2 * v + s]))",
    "z[n; k] = sum{c}_0^2 (sum{u}_0^3 (sum{v}_0^3 (V[k; c; u; v] * m[n; c; u; v]))) + d[k]"]
wider = {"W2": (3, 2, 3, 3), "b2": (3,), "g": (2, 3, 8, 8), "a2": (2, 3, 8, 8),
         "m": (2, 3, 4, 4), "V": (10, 3, 4, 4)}
changed = [tab.parse("\n".join([h, leaky, average, z, *rest]), net.shapes),
           tab.parse("\n".join([h, a, *second, *rest]), {**net.shapes, **wider})]
result = check_algorithm4(backprop, changed, seed=1)
assert result, f"backprop on chapter 11's changed networks: {result}"
