"""The calls the scenarios make on a stack, in the exact shapes they make them.

``docs/contract.md`` states the manager contract in prose; this module is its
machine-readable half: one `Call` per shape the driver (``models_spec._harness.driver``)
uses, keyed by the `driver.Op` kind it serves. ``models_spec._harness.validate`` calls
every shape an adapter's scenarios need on a scratch stack before any search,
and `shape_mismatch` names the first method whose signature cannot take its
shape ("your `add_model` takes (model_id, api_key); the scenarios call
add_model(model_id, api_key, model_id_alias)"; the caller adds where the contract
states it, `Call.doc`), so a manager that would fail
every scenario with a ``TypeError`` is refused in one line instead.

A test (``tests/spec/test_contract.py``) runs every op kind through the driver
on a recording stack and checks that it makes exactly these calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

__all__ = [
    "CALLS",
    "CONTRACT_DOC",
    "SNAPSHOT_FIELDS",
    "Call",
    "calls_for",
    "describe_signature",
    "missing_snapshot_fields",
    "shape_mismatch",
]

CONTRACT_DOC: Final = "docs/contract.md"


@attrs.frozen
class Call:
    """One call shape: ``method`` called with ``args`` positionally and ``kwargs`` by name.

    ``args`` and ``kwargs`` are the parameter names as the contract writes them
    (``model_id``, ``api_key``, ...); ``shape`` is the call as the docs print it;
    ``anchor`` the section of ``docs/contract.md`` that states its behaviour.
    """

    method: str
    args: tuple[str, ...] = ()
    kwargs: tuple[str, ...] = ()
    shape: str = ""
    anchor: str = ""

    @property
    def doc(self) -> str:
        """Where the contract states this call: ``docs/contract.md#<anchor>``."""
        return f"{CONTRACT_DOC}#{self.anchor or self.method}"


def _call(method: str, args: tuple[str, ...] = (), kwargs: tuple[str, ...] = (), **kw: str) -> Call:
    shown = ", ".join((*args, *(f"{k}={_KW_VALUES.get(k, k)}" for k in kwargs)))
    shape = kw.get("shape") or f"{method}({shown})"
    return Call(method, args, kwargs, shape, kw.get("anchor", method))


_KW_VALUES: Final = {"pin": "True", "delete_from_disk": "False"}

CALLS: Final[Mapping[str, Call]] = {
    "add": _call("add_model", ("model_id", "api_key", "model_id_alias")),
    "pinned add": _call("add_model", ("model_id", "api_key", "model_id_alias"), ("pin",)),
    "remove": _call("remove", ("model_id",)),
    "remove keeping files": _call("remove", ("model_id",), ("delete_from_disk",)),
    "clear": _call("clear"),
    "refresh": _call("refresh", ("model_id",)),
    "getitem": _call("__getitem__", ("model_id",), shape="stack[model_id]", anchor="getitem"),
    "pin": _call("pin_model", ("model_id",)),
    "unpin": _call("unpin_model", ("model_id",), anchor="pin_model"),
    "describe": _call("describe_models", anchor="lease"),
    "keys": _call("keys"),
    "contains": _call("__contains__", ("model_id",), shape="model_id in stack", anchor="keys"),
    "len": _call("__len__", shape="len(stack)", anchor="keys"),
    "lru": _call("lru_order"),
    "lease": _call("lease", ("model_id",), shape="with stack.lease(model_id) as model"),
    "acquire": _call(
        "acquire",
        ("model_id", "api_key", "model_id_alias"),
        shape="with stack.acquire(model_id, api_key, model_id_alias) as model",
        anchor="lease",
    ),
}
"""Op kind -> the call the driver makes for it ("pinned add": an add with ``pin=True``;
"remove keeping files": what the validation adds, the model protocol's flag).  Each
``anchor`` is a heading of ``docs/contract.md``: ``unpin_model``, ``acquire`` and
``describe_models`` are stated under ``pin_model`` and ``lease``."""


SNAPSHOT_FIELDS: Final[Mapping[str, tuple[tuple[str, ...], ...]]] = {
    "lru": (("lru",),),
    "pins": (("pins",),),
    "leases": (("leases",),),
    "lifecycle": (("lifecycle",),),
    "capacity": (("max_size",), ("max_weight", "weights")),
}
"""Capability -> the `Snapshot` fields its invariants read, as alternatives (any one
group filled is enough: "capacity" is a bound in models, ``max_size``, or in weight,
``max_weight`` with ``weights``).  A capability missing here reads no field of its own.
``docs/contract.md#snapshot-fields`` states the same table."""


def missing_snapshot_fields(capability: str, snapshot: object) -> str | None:
    """The fields a `Snapshot` leaves None that ``capability``'s invariants need, worded
    "max_size (or max_weight and weights)"; None when one alternative is filled."""
    groups = SNAPSHOT_FIELDS.get(capability, ())
    if not groups or any(all(getattr(snapshot, f, None) is not None for f in g) for g in groups):
        return None
    first, *others = (" and ".join(group) for group in groups)
    return first + "".join(f" (or {other})" for other in others)


def calls_for(ops: Iterable[Any]) -> tuple[Call, ...]:
    """The distinct calls a sequence of `driver.Op` makes (the ops inside leases too),
    in the order of `CALLS`. Every stack is also called as ``remove(model_id,
    delete_from_disk=False)`` (the model protocol)."""
    kinds = {"remove keeping files"}
    pending = list(ops)
    while pending:
        op = pending.pop()
        kinds.add("pinned add" if op.kind == "add" and op.pin else op.kind)
        pending.extend(op.inside)
    return tuple(call for kind, call in CALLS.items() if kind in kinds)


def describe_signature(fn: Callable[..., Any]) -> str | None:
    """The parameters of ``fn`` as "(model_id, api_key=None, *, pin=False)"; None when
    Python cannot tell (a builtin without a signature)."""
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return None


def shape_mismatch(stack: object, call: Call) -> str | None:
    """Why ``stack``'s method cannot be called in ``call``'s shape, or None when it can
    (or when its signature cannot be read: the call itself will tell).

    Checks the signature only (``inspect.Signature.bind``): nothing is called.
    """
    fn = getattr(stack, call.method, None)
    if not callable(fn):
        return (
            f"your stack ({type(stack).__name__}) has no `{call.method}`; the scenarios call "
            f"{call.shape}"
        )
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*call.args, **dict.fromkeys(call.kwargs))
    except TypeError:
        takes = ", ".join(_shown(p) for p in signature.parameters.values())
        return f"your `{call.method}` takes ({takes}); the scenarios call {call.shape}"
    return None


def _shown(parameter: inspect.Parameter) -> str:
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"*{parameter.name}"
    if parameter.kind is inspect.Parameter.VAR_KEYWORD:
        return f"**{parameter.name}"
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
        return f"{parameter.name} (keyword only)"
    return parameter.name
