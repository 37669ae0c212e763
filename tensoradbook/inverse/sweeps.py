"""The four sweeps (eqs. 2.3 and 2.4): ``J xdot`` (:func:`jvp`), ``J^T ybar`` (:func:`vjp`), ``J^-T xbar``
(:func:`forward_inverse`) and ``J^-1 ydot`` (:func:`reverse_inverse`), lump by lump, in Python or
compiled (:mod:`.engine`); the tape of partials, the layers of Fig. 3, ``log det J`` and the Jacobian.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
import numpy as np
from . import engine as _kernels
from ..integer.matrix import as_int, shown

from .program import Program, _AUTO_NODES
from .lumps import _lump_python


ENGINES = ("auto", "python", "numba")

MODES = ("jvp", "vjp", "forward_inverse", "reverse_inverse")


@dataclass(frozen=True)
class Tape:
    """The partials of every lump at one point: what the reverse sweeps replay (Python engine).

    ``A[j]`` and ``B[j]`` are lump ``j``'s blocks (eq. 2.6g); for a
    constant-width program ``a`` holds the diagonal partials ``a_t`` and
    ``b[t]`` the off-diagonal ones, for registers ``program.lumps[t].read``.
    ``values[j]`` are the registers before lump ``j`` (``values[-1]`` after
    the last), ``nbytes`` what the partials take.
    """

    program: Program
    values: np.ndarray
    A: tuple[np.ndarray, ...]
    B: tuple[np.ndarray, ...]

    @property
    def a(self) -> np.ndarray:
        return np.array([block[0, 0] for block in self._scalar(self.A)])

    @property
    def b(self) -> tuple[np.ndarray, ...]:
        return tuple(block[0] for block in self._scalar(self.B))

    def _scalar(self, blocks):
        if any(block.shape[0] != 1 for block in self.A):
            raise ValueError("the program has lumps of several outputs: read their blocks A and B instead")
        return blocks

    @property
    def nbytes(self) -> int:
        return sum(block.nbytes for block in self.A + self.B)

    @property
    def logdet(self) -> float:
        """``log |det J| = sum_t log |det A_t|`` (``sum_t log |a_t|`` for scalar steps)."""
        return float(sum(np.linalg.slogdet(block)[1] for block in self.A))

    def layers(self) -> list[np.ndarray]:
        """The lumps' Jacobians ``J_j`` as ``n x n`` matrices, ``J = J_T ... J_1`` (Fig. 3(b), the layered
        primal graph): the rows a lump writes hold its blocks ``A`` and ``B``; every other register is
        copied, an edge of weight 1."""
        n, out = self.program.n, []
        for lump, A, B in zip(self.program.lumps, self.A, self.B):
            J = np.eye(n)
            J[np.ix_(lump.written, lump.written)] = A
            J[np.ix_(lump.written, lump.read)] = B
            out.append(J)
        return out

    def inverse_layers(self) -> list[np.ndarray]:
        """Each layer inverted as the reverse inverse sweep does (Fig. 1(e), Fig. 3(c), eq. 2.6h): the
        written rows become ``A^-1`` and ``-A^-1 B``, so ``J_j^-1`` has the sparsity of ``J_j``. Raises
        ValueError, naming the step, where a block ``A`` is singular at the point."""
        out = []
        for j, (lump, layer) in enumerate(zip(self.program.lumps, self.layers())):
            A, B = self.A[j], self.B[j]
            inverse = layer.copy()
            inverse[np.ix_(lump.written, lump.written)] = _solve(self.program, j, A, np.eye(lump.size))
            inverse[np.ix_(lump.written, lump.read)] = -_solve(self.program, j, A, B)
            out.append(inverse)
        return out


@dataclass(frozen=True)
class Sweep:
    """One sweep recorded step by step (Python engine), for stepping through it.

    ``lumps`` is the order the sweep visits the lumps (forward sweeps go
    0, 1, ..., reverse sweeps back from the last); ``states[0]`` is the seed
    in the registers and ``states[i]`` the derivative registers after visiting
    ``lumps[i - 1]`` (by slot: see :attr:`Program.output_slots`). ``tape``
    holds the primal values and partials; ``result`` is the answer, in
    register order.
    """

    mode: str
    lumps: tuple[int, ...]
    states: np.ndarray
    tape: Tape
    result: np.ndarray

    @property
    def tape_bytes(self) -> int:
        """Bytes of partials the sweep had to keep: none for the forward sweeps."""
        return self.tape.nbytes if self.mode in ("vjp", "reverse_inverse") else 0


def _vector(value, n: int, what: str) -> np.ndarray:
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a vector of {n} numbers, got {shown(value)}") from None
    if vector.shape != (n,):
        raise ValueError(f"{what} must be a vector of {n} numbers (one per register), got shape {vector.shape}")
    return vector


def _program(program) -> Program:
    if not isinstance(program, Program):
        raise ValueError(f"program must be a Program (from ia.trace), got {shown(program)}")
    return program


def _real(value, what: str, low: float, high: float) -> float:
    """A real number (not bool) with ``low < value < high``; ValueError naming ``what`` otherwise."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not low < float(value) < high):
        raise ValueError(f"{what} must be a number between {low:g} and {high:g} (exclusive), got {shown(value)}")
    return float(value)


def _newton_settings(tol, max_iter) -> tuple[float, int]:
    return _real(tol, "tol", 0, math.inf), as_int(max_iter, "max_iter", minimum=0)


def _engine(program: Program, engine: str) -> str:
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"unknown engine {shown(engine)}: choose one of {', '.join(map(repr, ENGINES))}")
    if engine == "auto":
        return "numba" if len(program.code.ops) >= _AUTO_NODES else "python"
    return engine


def _singular(program: Program, j: int, A) -> ValueError:
    """The error for lump ``j`` whose block ``A`` (flat or square) is singular at the point."""
    lump = program.lump(j)
    if lump.size == 1 and len(lump.steps) == 1:
        index = lump.steps[0]
        r = int(program._assigned_register[index - 1])
        return ValueError(f"step {index} (x[{r}] = {program._text_of(index - 1)}): the diagonal partial "
                          f"d x[{r}]'/d x[{r}] is {float(np.ravel(A)[0]):g} at this point, so the Jacobian is singular")
    return ValueError(f"{lump.describe()}: its block A (d new/d old values of the registers it writes) is "
                      f"singular at this point, so the Jacobian is singular")


def _solve(program: Program, j: int, A: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if A.shape == (1, 1):
        if A[0, 0] == 0 or not np.isfinite(A[0, 0]):
            raise _singular(program, j, A)
        return rhs / A[0, 0]
    try:
        solution = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        raise _singular(program, j, A) from None
    if not np.all(np.isfinite(solution)) and np.all(np.isfinite(rhs)):
        raise _singular(program, j, A)
    return solution


def _apply(mode: str, program: Program, j: int, A, B, v: np.ndarray) -> None:
    """One lump of one sweep on the derivative registers ``v`` (the table in the module docstring)."""
    code = program.code
    written = code.out_slot[code.out_start[j]:code.out_start[j + 1]]
    read = code.read_slot[code.read_start[j]:code.read_start[j + 1]]
    if mode == "jvp":
        v[written] = A @ v[written] + B @ v[read]
    elif mode == "vjp":
        v[read] += B.T @ v[written]
        v[written] = A.T @ v[written]
    elif mode == "forward_inverse":
        u = _solve(program, j, A.T, v[written])
        v[written] = u
        v[read] -= B.T @ u
    else:
        v[written] = _solve(program, j, A, v[written] - B @ v[read])


def sweep(program: Program, x, seed, mode: str) -> Sweep:
    """One sweep (``"jvp"``, ``"vjp"``, ``"forward_inverse"``, ``"reverse_inverse"``) in Python, every state kept.

    ``seed`` is ``xdot``, ``ybar``, ``xbar`` or ``ydot`` as for the function of that name.
    """
    program = _program(program)
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"unknown mode {shown(mode)}: choose one of {', '.join(MODES)}")
    n, code = program.n, program.code
    x = _vector(x, n, "x")
    seed = _vector(seed, n, "the seed")
    with np.errstate(all="ignore"):
        tape = partials(program, x)
        v = np.zeros(n)
        if mode in ("jvp", "forward_inverse"):
            v[:] = seed
            order = range(len(program))
        else:
            v[code.output_slots] = seed
            order = range(len(program) - 1, -1, -1)
        states = [v.copy()]
        for j in order:
            _apply(mode, program, j, tape.A[j], tape.B[j], v)
            states.append(v.copy())
    result = v[code.output_slots] if mode in ("jvp", "forward_inverse") else v.copy()
    return Sweep(mode, tuple(order), np.array(states), tape, result)


def partials(program: Program, x) -> Tape:
    """The register values before each lump and the blocks ``A``, ``B`` of every lump at ``x`` (in Python)."""
    x = _vector(x, _program(program).n, "x")
    registers = x.copy()
    values, As, Bs = [registers.copy()], [], []
    code = program.code
    with np.errstate(all="ignore"):
        for j in range(len(program)):
            outputs, A, B = _lump_python(code, j, registers, want_blocks=True)
            registers[code.out_slot[code.out_start[j]:code.out_start[j + 1]]] = outputs
            values.append(registers.copy())
            As.append(A)
            Bs.append(B)
    return Tape(program, np.array(values), tuple(As), tuple(Bs))


def unlayer(inverse_layers, inputs, written) -> tuple[list[tuple[str, str, float]], list[str]]:
    """The reverse inverse flow graph of Fig. 3(d, e): the layered inverse graph with every copied
    vertex merged into the vertex it copies, so only the operations' edges are left.

    ``inverse_layers`` are the layers from the bottom (``x*``) up, e.g.
    ``Tape.inverse_layers()`` (Fig. 3(d)'s time shift drops the copy layer
    that would end them); ``inputs`` names the registers' values at the
    bottom and ``written[k]`` maps each register layer ``k`` writes to the
    name of its new value. Returns the edges ``(source, target, weight)``,
    the tangent of ``target`` taking ``weight`` times that of ``source``,
    layer by layer, and the value whose tangent each register holds at the
    top (where ``y*`` enters).
    """
    n = len(inputs)
    holder, edges = list(inputs), []
    for k, (inverse, names) in enumerate(zip(inverse_layers, written)):
        inverse = np.asarray(inverse, dtype=float)
        if inverse.shape != (n, n) or not set(names) <= set(range(n)):
            raise ValueError(f"unlayer: layer {k} is {inverse.shape} with registers {sorted(names)} written, "
                             f"for {n} inputs")
        below = holder
        holder = [names.get(r, name) for r, name in enumerate(below)]
        edges += [(holder[s], below[r], float(inverse[r, s]))
                  for r in sorted(names) for s in np.flatnonzero(inverse[r])]
    return edges, holder


def run(program: Program, x, engine: str = "auto") -> np.ndarray:
    """The program's result ``f(x)``, in register order."""
    x = _vector(x, _program(program).n, "x")
    code = program.code
    if _engine(program, engine) == "numba":
        return _kernels.run(code, x)[code.output_slots]
    registers = x.copy()
    with np.errstate(all="ignore"):
        for j in range(len(program)):
            outputs, _, _ = _lump_python(code, j, registers, want_blocks=False)
            registers[code.out_slot[code.out_start[j]:code.out_start[j + 1]]] = outputs
    return registers[code.output_slots]


def _compiled(program: Program, x: np.ndarray, seed: np.ndarray, mode: str) -> np.ndarray:
    code = program.code
    v = np.zeros(program.n)
    offsets = code.tape_offsets()
    tape = None
    if mode in ("jvp", "forward_inverse"):
        v[:] = seed
        status = _kernels.forward(code, x, v, mode == "forward_inverse")
    else:
        v[code.output_slots] = seed
        tape = np.empty(offsets[-1])
        _kernels.record(code, x, tape, offsets)
        status = _kernels.backward(code, tape, offsets, v, mode == "reverse_inverse")
    if status >= 0:
        if tape is None:   # the forward sweeps keep no tape: record one to show the singular block
            tape = np.empty(offsets[-1])
            _kernels.record(code, x, tape, offsets)
        raise _singular(program, int(status), tape[offsets[status]:offsets[status + 1]])
    return v[code.output_slots] if mode in ("jvp", "forward_inverse") else v


def _derivative(program: Program, x, seed, mode: str, engine: str) -> np.ndarray:
    x = _vector(x, _program(program).n, "x")
    seed = _vector(seed, program.n, {"jvp": "xdot", "vjp": "ybar", "forward_inverse": "xbar",
                                     "reverse_inverse": "ydot"}[mode])
    if _engine(program, engine) == "numba":
        return _compiled(program, x, seed, mode)
    return sweep(program, x, seed, mode).result


def jvp(program: Program, x, xdot, engine: str = "auto") -> np.ndarray:
    """``J xdot`` by a forward sweep (eq. 2.3a)."""
    return _derivative(program, x, xdot, "jvp", engine)


def vjp(program: Program, x, ybar, engine: str = "auto") -> np.ndarray:
    """``J^T ybar`` by a reverse sweep over the tape of partials (eq. 2.3b)."""
    return _derivative(program, x, ybar, "vjp", engine)


def forward_inverse(program: Program, x, xbar, engine: str = "auto") -> np.ndarray:
    """``J^-T xbar`` by a forward sweep with no tape (eq. 2.4a)."""
    return _derivative(program, x, xbar, "forward_inverse", engine)


def reverse_inverse(program: Program, x, ydot, engine: str = "auto") -> np.ndarray:
    """``J^-1 ydot`` by a reverse sweep over the tape of partials (eq. 2.4b)."""
    return _derivative(program, x, ydot, "reverse_inverse", engine)


def logdet(program: Program, x, engine: str = "auto") -> float:
    """``log |det J| = sum_t log |a_t|`` (``log |det A_t|`` for lumps): no Jacobian needed."""
    x = _vector(x, _program(program).n, "x")
    if _engine(program, engine) == "numba":
        code = program.code
        offsets = code.tape_offsets()
        tape = np.empty(offsets[-1])
        _kernels.record(code, x, tape, offsets)
        return float(_kernels.logdet(code, tape, offsets))
    return partials(program, x).logdet


def jacobian(program: Program, x, engine: str = "auto") -> np.ndarray:
    """The dense Jacobian from ``n`` forward sweeps (for checks and small programs)."""
    eye = np.eye(_program(program).n)
    return np.column_stack([jvp(program, x, eye[i], engine) for i in range(program.n)])
