"""The command line ``python -m tensoradbook derive`` on good and bad command lines: bad input is one
line ``error: ...`` (a parser message adds its caret lines) and exit code 2, never a traceback."""

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensoradbook.__main__ import main, parse_shapes
from tensoradbook.lang.limits import MAX_SOURCE_CHARS


def run(capsys, *argv):
    code = main(["derive", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("scalar", ["s=", "s=()", "s=( )", " s = () "])
def test_a_scalar_shape_is_written_empty_or_as_parentheses(capsys, scalar):
    code, out, err = run(capsys, "f[i] = s[] * x[i]", "--shape", "f=3", "--shape", "x=3", f"--shape={scalar}",
                         "--check")
    assert code == 0 and err == ""
    assert out.startswith("ds[] = sum{")
    assert float(out.splitlines()[-1].split()[2]) < 1e-6  # the dot-product test passes


def test_shapes_of_every_rank(capsys):
    assert parse_shapes(["f=3x4", "x=8", "s=", "t=()", "u = 2 X 3"]) == {
        "f": (3, 4), "x": (8,), "s": (), "t": (), "u": (2, 3)}
    code, out, _ = run(capsys, "f[i; j] = a[i; j] * b[j]", "--shape", "f=2x3", "--shape", "a=2x3", "--shape", "b=3")
    assert code == 0 and out.startswith("da[")


@pytest.mark.parametrize("shape, message", [
    ("x=١٢", "sizes in digits 0-9"),           # Unicode digits read as 12 by int()
    ("x=3y4", "write NAME=3x4"),
    ("x", "write NAME=3x4"),
    ("=3", "write NAME=3x4"),
    ("x=3x", "write NAME=3x4"),
    ("x=-3", "write NAME=3x4"),
    ("x=0", "sizes must be positive"),
    ("x=3x0", "sizes must be positive"),
    ("f=3", "f is given twice"),
])
def test_bad_shapes_are_one_line_and_exit_2(capsys, shape, message):
    code, out, err = run(capsys, "f[i] = x[i]", "--shape", "f=3", f"--shape={shape}")
    assert code == 2 and out == ""
    assert err.startswith("error: --shape") and message in err and err.count("\n") == 1


def test_bad_functions_show_the_parser_caret(capsys):
    code, _, err = run(capsys, "f[i] = x[i * i]", "--shape", "f=3", "--shape", "x=9")
    assert code == 2 and err.startswith("error:") and "^" in err


@pytest.mark.parametrize("argv", [
    ["f[i] = x[i]", "--shape", "f=3"],                                                # x has no shape
    ["f[i] = x[i]", "--shape", "f=4", "--shape", "x=3"],                            # reads outside x
    ["f[i] = x[i]", "--shape", "f=100000000000000000000", "--shape", "x=100000000000000000000", "--check"],
    ["", "--shape", "f="],
    ["f[] = " + " + ".join(["x[]"] * 600), "--shape", "f=", "--shape", "x="],       # a very long sum
    ["f[] = " + "-" * 600 + "x[]", "--shape", "f=", "--shape", "x="],             # deep unary minus
])
def test_bad_input_never_shows_a_traceback(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code in (0, 2)
    if code == 2:
        assert err.startswith("error:") and err.strip()


@given(st.text(max_size=12))
def test_any_shape_text_is_read_or_refused(text):
    try:
        shapes = parse_shapes([text])
    except ValueError as error:
        assert str(error).startswith("--shape ")
    else:
        ((name, shape),) = shapes.items()
        assert name.isidentifier() and all(isinstance(n, int) and n >= 1 for n in shape)


def test_the_installed_command_exits_2_without_a_traceback():
    process = subprocess.run([sys.executable, "-m", "tensoradbook", "derive", "f[i] = x[i]", "--shape", "f=3",
                              "--shape", "x=3x"], capture_output=True, text=True, timeout=120)
    assert process.returncode == 2 and process.stdout == ""
    assert process.stderr.startswith("error: --shape 'x=3x'") and "Traceback" not in process.stderr
    process = subprocess.run([sys.executable, "-m", "tensoradbook", "derive", "f[] = 2 * s[]", "--shape", "f=",
                              "--shape", "s=()"], capture_output=True, text=True, timeout=120)
    assert process.returncode == 0 and process.stdout == "ds[] = 2 * df[]\n" and process.stderr == ""


# --- what --file reads ----------------------------------------------------------------------------------------

def test_a_file_past_the_source_limit_is_refused_with_the_limit_and_its_size(capsys, tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("f[i] = x[i]" + " " * MAX_SOURCE_CHARS)
    code, out, err = run(capsys, "--file", str(path), "--shape", "f=3", "--shape", "x=3")
    assert code == 2 and out == ""
    assert err == (f"error: --file {str(path)!r} has {MAX_SOURCE_CHARS + 11:,} bytes: a function or program is at "
                   f"most MAX_SOURCE_CHARS = {MAX_SOURCE_CHARS:,} characters (tensoradbook.lang.limits)\n")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_file_that_never_ends_is_refused_at_the_limit():
    """`--file /dev/zero` grew to gigabytes: it reads one character past the limit and stops."""
    process = subprocess.run([sys.executable, "-m", "tensoradbook", "derive", "--file", "/dev/zero", "--shape", "f=3"],
                             capture_output=True, text=True, timeout=300)
    assert process.returncode == 2 and process.stdout == ""
    assert process.stderr == (f"error: --file '/dev/zero' has more than {MAX_SOURCE_CHARS:,} characters: a function "
                              f"or program is at most MAX_SOURCE_CHARS = {MAX_SOURCE_CHARS:,} characters "
                              "(tensoradbook.lang.limits)\n")


def test_a_file_with_a_byte_order_mark_is_read(capsys, tmp_path):
    """Notepad starts UTF-8 files with a byte order mark, which was an unexpected character."""
    path = tmp_path / "notepad.txt"
    path.write_bytes(b"\xef\xbb\xbff[] = 2 * s[]\r\n")
    code, out, err = run(capsys, "--file", str(path), "--shape", "f=", "--shape", "s=")
    assert (code, out, err) == (0, "ds[] = 2 * df[]\n", "")


def test_an_invisible_character_in_a_file_is_named(capsys, tmp_path):
    path = tmp_path / "pasted.txt"
    path.write_text("f[] = 2 *\u200b s[]", encoding="utf-8")
    code, _, err = run(capsys, "--file", str(path), "--shape", "f=", "--shape", "s=")
    assert code == 2 and err.startswith("error: unexpected character '\\u200b' (U+200B ZERO WIDTH SPACE)\n")
