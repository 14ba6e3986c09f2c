"""Mutation operators for the concurrency mistakes mutmut's own operators do not make.

Two hand-written bugs once slipped past the whole suite: a lease give-back
waking drain waiters with ``notify()`` instead of ``notify_all()``, and a
give-back placed after ``yield`` without ``try/finally``.  mutmut 3 has no
operator that writes either, so `run.py` adds these (libcst, the library
mutmut mutates with) to mutmut's operator list:

* `operator_notify_swap`: ``cond.notify_all()`` <-> ``cond.notify()``;
* `operator_drop_finally`: ``try: A finally: B`` -> ``A; B`` (the cleanup no
  longer runs when A raises; with ``except`` clauses, the ``finally`` part
  only is moved after the statement);
* `operator_move_out_of_with`: the last statement of a ``with`` block moved
  just after it (out of the critical section, past the lock's release);
* `operator_move_out_of_critical_try`: the same for the ``acquire(); try:
  ... finally: release()`` idiom: the try body's last statement moved after
  the release;
* `operator_drop_with`: a ``with X:`` dropped (the block runs without the
  lock or context); one item of a multi-item ``with`` dropped;
* `operator_drop_lock_idiom`: ``X.acquire(); try: A finally: X.release()``
  -> ``A`` (the lock dropped from the explicit idiom the warm paths use).

A statement list replaces one node as ``if True:`` followed by the list, so
each mutant is a single node swap, the form mutmut's trampolines expect.
``with`` items that bind a name (``as y``) are never dropped: the mutant
would only fail with a NameError.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

__all__ = [
    "OPERATORS",
    "operator_drop_finally",
    "operator_drop_lock_idiom",
    "operator_drop_with",
    "operator_move_out_of_critical_try",
    "operator_move_out_of_with",
    "operator_notify_swap",
]


def _pass() -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Pass()])


def _if_true(statements: Sequence[cst.BaseStatement]) -> cst.If:
    """One compound statement running `statements` (never empty)."""
    return cst.If(test=cst.Name("True"), body=cst.IndentedBlock(body=list(statements) or [_pass()]))


def _method_call(statement: cst.CSTNode, method: str) -> bool:
    """Whether `statement` is exactly ``<expr>.<method>(...)`` on a line of its own."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    expr = statement.body[0]
    return (
        isinstance(expr, cst.Expr)
        and isinstance(expr.value, cst.Call)
        and isinstance(expr.value.func, cst.Attribute)
        and expr.value.func.attr.value == method
    )


def operator_notify_swap(node: cst.Attribute) -> Iterable[cst.Attribute]:
    """``notify_all`` <-> ``notify``: a lost wake-up, or a thundering herd."""
    if node.attr.value == "notify_all":
        yield node.with_changes(attr=cst.Name("notify"))
    elif node.attr.value == "notify":
        yield node.with_changes(attr=cst.Name("notify_all"))


def operator_drop_finally(node: cst.Try) -> Iterable[cst.CSTNode]:
    """``try: A finally: B`` -> ``A; B``: B no longer runs when A raises."""
    if node.finalbody is None or not isinstance(node.body, cst.IndentedBlock):
        return
    final = node.finalbody.body
    if not isinstance(final, cst.IndentedBlock):
        return
    if node.handlers:
        yield _if_true([node.with_changes(finalbody=None), *final.body])
    elif not node.orelse:
        yield _if_true([*node.body.body, *final.body])


def operator_move_out_of_with(node: cst.With) -> Iterable[cst.CSTNode]:
    """The last statement of a ``with`` block, moved just after the block."""
    body = node.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return
    *rest, last = body.body
    yield _if_true([node.with_changes(body=body.with_changes(body=rest or [_pass()])), last])


def operator_move_out_of_critical_try(node: cst.Try) -> Iterable[cst.CSTNode]:
    """``try: A; s finally: lock.release()`` -> the same without s, then s after it."""
    if node.handlers or node.finalbody is None or not isinstance(node.body, cst.IndentedBlock):
        return
    final = node.finalbody.body
    if not isinstance(final, cst.IndentedBlock) or not any(
        _method_call(s, "release") for s in final.body
    ):
        return
    *rest, last = node.body.body
    yield _if_true([node.with_changes(body=node.body.with_changes(body=rest or [_pass()])), last])


def operator_drop_with(node: cst.With) -> Iterable[cst.CSTNode]:
    """A ``with X:`` whose block runs without X (lock, condition or context)."""
    if not isinstance(node.body, cst.IndentedBlock):
        return
    if len(node.items) == 1:
        if node.items[0].asname is None:
            yield _if_true(node.body.body)
        return
    for index, item in enumerate(node.items):
        if item.asname is not None:
            continue
        items = [*node.items[:index], *node.items[index + 1 :]]
        items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        yield node.with_changes(items=items)


def operator_drop_lock_idiom(node: cst.IndentedBlock) -> Iterable[cst.IndentedBlock]:
    """``X.acquire(); try: A finally: X.release()`` -> ``A``: the critical section unlocked."""
    statements = list(node.body)
    for index in range(len(statements) - 1):
        first, second = statements[index], statements[index + 1]
        if not (
            _method_call(first, "acquire")
            and isinstance(second, cst.Try)
            and not second.handlers
            and second.finalbody is not None
            and isinstance(second.body, cst.IndentedBlock)
            and isinstance(second.finalbody.body, cst.IndentedBlock)
            and all(_method_call(s, "release") for s in second.finalbody.body.body)
        ):
            continue
        yield node.with_changes(
            body=[*statements[:index], *second.body.body, *statements[index + 2 :]]
        )


OPERATORS = (
    (cst.Attribute, operator_notify_swap),
    (cst.Try, operator_drop_finally),
    (cst.With, operator_move_out_of_with),
    (cst.Try, operator_move_out_of_critical_try),
    (cst.With, operator_drop_with),
    (cst.IndentedBlock, operator_drop_lock_idiom),
)
"""(libcst node type, operator) pairs, the form of mutmut's ``mutation_operators``."""
