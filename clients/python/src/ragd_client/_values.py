"""Typed metadata values between Python and ragd's wire format
(docs/api.md, "Metadata values"): one home for the encoding the client
sends in documents and filters, and the decoding of what it reads back."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, Callable, Mapping

TIME_KEY = "$time"
_FRACTION = re.compile(r"\.(\d+)")


def encode_time(t: dt.datetime | dt.date) -> dict[str, str]:
    """A date or datetime as ragd's time value. A naive datetime is taken
    as UTC; a date is its midnight in UTC."""
    if not isinstance(t, dt.datetime):
        t = dt.datetime(t.year, t.month, t.day, tzinfo=dt.timezone.utc)
    elif t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return {TIME_KEY: t.isoformat()}


def encode_value(v: Any, where: str, fail: Callable[[str, str], Exception]) -> Any:
    """One metadata value (or filter operand) as JSON: strings, integers,
    floats and booleans as they are, dates and datetimes as ``{"$time":
    ...}``. ``fail(where, why)`` builds the error for anything else."""
    if isinstance(v, (str, bool, int)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise fail(where, f"{v} is not a finite number")
        return v
    if isinstance(v, (dt.datetime, dt.date)):
        return encode_time(v)
    if isinstance(v, Mapping) and set(v) == {TIME_KEY} and isinstance(v[TIME_KEY], str):
        return dict(v)  # already in the wire form
    raise fail(where, f"a value of type {type(v).__name__} cannot be sent: use a string, number, boolean, "
                      "date or datetime (or a list of them)")


def encode_metadata(meta: Mapping[str, Any], where: str, fail: Callable[[str, str], Exception]) -> dict[str, Any]:
    """A document's metadata as JSON. ``None`` values are left out (ragd
    stores no nulls, and a missing key is what a null means); lists and
    tuples become lists of values."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if v is None:
            continue
        at = f"{where}.{k}"
        if isinstance(v, (list, tuple)):
            out[k] = [encode_value(x, f"{at}[{i}]", fail) for i, x in enumerate(v)]
        else:
            out[k] = encode_value(v, at, fail)
    return out


def parse_time(s: str) -> dt.datetime:
    """An RFC 3339 date-time as an aware datetime (Python 3.10's
    fromisoformat wants no ``Z`` and 3 or 6 fraction digits)."""
    s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s.replace("Z", "+00:00").replace("z", "+00:00"), count=1)
    return dt.datetime.fromisoformat(s)


def decode_value(v: Any) -> Any:
    """A value read back: ``{"$time": ...}`` becomes an aware datetime in
    UTC, lists are decoded item by item, everything else is as sent."""
    if isinstance(v, dict) and set(v) == {TIME_KEY} and isinstance(v[TIME_KEY], str):
        return parse_time(v[TIME_KEY])
    if isinstance(v, list):
        return [decode_value(x) for x in v]
    return v


def decode_metadata(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: decode_value(v) for k, v in (meta or {}).items()}
