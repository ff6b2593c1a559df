"""The shared number validators: every message names the argument, the range and the value."""
import argparse
import math

import numpy as np
import pytest

from gaplab.core import validate


@pytest.mark.parametrize("check, args, bad, pattern", [
    (validate.positive, {}, -1, r"eps must be a finite number > 0, got -1"),
    (validate.positive, {}, math.inf, r"eps must be a finite number > 0, got inf"),
    (validate.positive, {"allow_inf": True}, 0.0, r"eps must be a number > 0 \(or inf\), got 0.0"),
    (validate.nonnegative, {}, -0.5, r"eps must be a finite number >= 0, got -0.5"),
    (validate.finite, {}, math.nan, r"eps must be a finite number, got nan"),
])
def test_out_of_range_names_argument_range_and_value(check, args, bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        check("eps", bad, **args)


@pytest.mark.parametrize("bad", ["1", None, True, np.bool_(True), [1.0]])
def test_non_numbers_raise_type_and_value_error(bad):
    with pytest.raises(validate.NotANumberError, match="lam must be a number, got"):
        validate.positive("lam", bad)
    assert issubclass(validate.NotANumberError, TypeError) and issubclass(validate.NotANumberError, ValueError)


def test_accepted_values_come_back_as_float_or_int():
    assert validate.positive("x", np.int64(3)) == 3.0 and type(validate.positive("x", np.float32(2))) is float
    assert validate.positive("x", math.inf, allow_inf=True) == math.inf
    assert validate.int_at_least("n", 4.0, 1) == 4 and type(validate.int_at_least("n", 4.0, 1)) is int
    with pytest.raises(ValueError, match=r"n must be a whole number >= 1, got 2.5"):
        validate.int_at_least("n", 2.5, 1)
    assert validate.number("k", 0.5, lo=0.0, hi=1.0, hi_open=True) == 0.5
    with pytest.raises(ValueError, match=r"k must be a number in \(0, 1\), got 1"):
        validate.number("k", 1, lo=0.0, hi=1.0, hi_open=True)


def test_arg_type_turns_errors_into_argparse_errors():
    t = validate.arg_type(validate.int_at_least, "--every", 1, parse=int)
    assert t("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match=r"--every must be a whole number >= 1, got 0"):
        t("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"--every must be a whole number, got 'x'"):
        t("x")
