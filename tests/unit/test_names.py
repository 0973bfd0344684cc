"""Dataset names: what is refused (with the value in the message) and what is accepted."""

from __future__ import annotations

import pytest

from strata.errors import InvalidArgument, InvalidName
from strata.lake.names import MAX_NAME_BYTES, validate_dataset_name


@pytest.mark.parametrize(
    "name",
    [
        "..",
        "raw/../secret",
        "a..b",
        "/raw/clicks",
        "raw/clicks/",
        "/",
        "raw//clicks",
        "",
        "   ",
        " raw/clicks",
        "raw/clicks\n",
        "raw\x00clicks",
        "raw\x1bclicks",
        "raw\tclicks",
        "raw\x7fclicks",  # DEL: the last ASCII control character
        "raw\u200bclicks",  # zero-width space (format character)
        "raw\u2028clicks",  # line separator
        "x" * (MAX_NAME_BYTES + 1),
        "é" * (MAX_NAME_BYTES // 2 + 1),  # short in characters, too long in bytes
    ],
)
def test_invalid_names_are_refused_with_the_value(name: str) -> None:
    with pytest.raises(InvalidName) as info:
        validate_dataset_name(name)
    assert repr(name[:200]) in info.value.message
    assert info.value.details["name"] == name[:200]
    assert isinstance(info.value, InvalidArgument)  # answered as a 400


@pytest.mark.parametrize("value", [None, 42, b"raw/clicks", ["raw/clicks"]])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(InvalidName) as info:
        validate_dataset_name(value)
    assert repr(value) in info.value.message
    assert type(value).__name__ in info.value.message


@pytest.mark.parametrize(
    "name",
    [
        "clicks",
        "raw/clicks",
        "données/café",
        "数据/表格",
        "metrics/hourly 🚀",
        "a.b-c_d/e f",
        "x" * MAX_NAME_BYTES,
    ],
)
def test_valid_names_are_accepted(name: str) -> None:
    assert validate_dataset_name(name) == name
