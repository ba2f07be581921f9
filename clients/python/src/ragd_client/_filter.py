"""Filters in ragd's filter language (docs/api.md, "Filters"): one home
for checking a filter and writing it in the form ragd reads.

A filter is a dict in the operator form of MongoDB, Chroma, Pinecone and
LangChain's PGVector::

    {"dept": "billing",                       # $eq
     "page": {"$gte": 3, "$lt": 10},          # ranges on numbers and times
     "$or": [{"lang": {"$in": ["en", "de"]}}, {"public": True}]}

``to_wire`` checks it (operators known, operands of the right shape,
values of a type ragd stores) and writes it so that the simple cases stay
in the form every ragd release reads: a string ``$eq`` is sent as a
one-item list and a ``$in`` of strings as a plain list (``{"dept":
["billing"]}``), and an ``$and`` of such conditions on distinct keys is
flattened into one object. Everything else goes in the operator form.
A bare string is a one-item list, never a list of its characters.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from ._errors import RagdFilterError
from ._values import encode_value, parse_time

LOGICAL = ("$and", "$or", "$not")
VALUE_OPS = ("$eq", "$ne")
LIST_OPS = ("$in", "$nin")
RANGE_OPS = ("$gt", "$gte", "$lt", "$lte")
FIELD_OPS = VALUE_OPS + LIST_OPS + RANGE_OPS + ("$exists", "$not", "$between")


def _value(v: Any, where: str) -> Any:
    if v is None:
        raise RagdFilterError(where, "null matches nothing in ragd: use {\"$exists\": false} for a missing key")
    if isinstance(v, (list, tuple, set, frozenset, dict)):
        raise RagdFilterError(where, f"a {type(v).__name__} is not a value")
    return encode_value(v, where, RagdFilterError)


def _values(vs: Any, where: str) -> list[Any]:
    if isinstance(vs, (str, bytes)) or not isinstance(vs, (list, tuple, set, frozenset)):
        raise RagdFilterError(where, "wants a list of values")
    if not vs:
        raise RagdFilterError(where, "wants at least one value")
    items = sorted(vs, key=repr) if isinstance(vs, (set, frozenset)) else vs
    return [_value(v, f"{where}[{i}]") for i, v in enumerate(items)]


def _range_operand(v: Any, where: str) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float, str, dt.date)):
        raise RagdFilterError(where, "a range wants a number or a time (a datetime, a date, or an RFC 3339 string)")
    if isinstance(v, str):
        try:
            t = parse_time(v)
        except ValueError:
            t = None
        if t is None or t.tzinfo is None or "T" not in v.upper():
            raise RagdFilterError(where, f"{v!r} is not an RFC 3339 date-time with an offset: ranges order numbers "
                                         "and times, not strings")
    return _value(v, where)


def _condition(c: Any, where: str) -> Any:
    if isinstance(c, str):
        return [c]  # $eq of a string, in the form of every release
    if isinstance(c, (list, tuple, set, frozenset)):
        vals = _values(c, where)
        return vals
    if not isinstance(c, Mapping):
        return _value(c, where)
    if not c:
        raise RagdFilterError(where, "an empty condition")
    out: dict[str, Any] = {}
    for op, operand in c.items():
        at = f"{where}.{op}"
        if op not in FIELD_OPS:
            raise RagdFilterError(at, f"unknown operator; known: {', '.join(FIELD_OPS)}")
        if op in VALUE_OPS:
            out[op] = _value(operand, at)
        elif op in LIST_OPS:
            out[op] = _values(operand, at)
        elif op in RANGE_OPS:
            out[op] = _range_operand(operand, at)
        elif op == "$exists":
            if not isinstance(operand, bool):
                raise RagdFilterError(at, "wants true or false")
            out[op] = operand
        elif op == "$not":
            out[op] = _condition(operand, at)
        else:  # $between [lo, hi], LangChain PGVector's: $gte lo and $lte hi
            if not isinstance(operand, (list, tuple)) or len(operand) != 2:
                raise RagdFilterError(at, "wants [low, high]")
            for sub, v in zip(("$gte", "$lte"), operand):
                if sub in c:
                    raise RagdFilterError(at, f"$between and {sub} on one key")
                out[sub] = _range_operand(v, at)
    # The form of every release for the string equalities.
    if len(out) == 1:
        ((op, operand),) = out.items()
        if op == "$eq" and isinstance(operand, str):
            return [operand]
        if op == "$in" and all(isinstance(v, str) for v in operand):
            return operand
    return out


def _filter(f: Any, where: str) -> dict[str, Any]:
    if not isinstance(f, Mapping):
        raise RagdFilterError(where, "a filter is an object of keys and conditions")
    out: dict[str, Any] = {}
    for key, c in f.items():
        if not isinstance(key, str) or not key:
            raise RagdFilterError(where, f"key {key!r} is not a non-empty string")
        at = f"{where}.{key}"
        if key in ("$and", "$or"):
            if not isinstance(c, (list, tuple)) or not c:
                raise RagdFilterError(at, "wants a non-empty list of filters")
            out[key] = [_filter(sub, f"{at}[{i}]") for i, sub in enumerate(c)]
        elif key == "$not":
            out[key] = _filter(c, at)
        elif key.startswith("$"):
            raise RagdFilterError(at, f"unknown operator; known here: {', '.join(LOGICAL)}")
        else:
            out[key] = _condition(c, at)
    return _flatten_and(out)


def _flatten_and(f: dict[str, Any]) -> dict[str, Any]:
    """``{"$and": [{"a": x}, {"b": y}]}`` as ``{"a": x, "b": y}`` when no
    key repeats: the same filter, in the form older releases read."""
    subs = f.get("$and")
    if not subs:
        return f
    keys = [k for s in subs for k in s]
    outer = [k for k in f if k != "$and"]
    if len(set(keys) | set(outer)) != len(keys) + len(outer):
        return f
    flat = {k: v for k, v in f.items() if k != "$and"}
    for s in subs:
        flat.update(s)
    return flat


def to_wire(f: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A filter as ragd's JSON, checked; None or {} is no filter."""
    if not f:
        return None
    return _filter(f, "filter")
