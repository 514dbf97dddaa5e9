"""Run a script as `__main__` with one of its own functions wrapped: `--step-on train_step`.

A function the script defines does not exist before the script runs, and the
script runs as a fresh `__main__` module, so it cannot be patched from outside
beforehand the way `module:function` is. Tracing calls (`sys.settrace`,
`sys.setprofile`) would find it but slows every Python call of the profiled
run. Instead the script's syntax tree gets one extra statement after each
module-level statement that binds the name (`def`, `class`, an assignment, an
import; also inside top-level `if`/`try`/`with`/`for` blocks): a call that
wraps what the name now holds. Line numbers are kept, so tracebacks point at
the user's lines, and every later call, from module code or from other
functions (which look the name up in the module's globals), goes through the
wrapper.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable
from pathlib import Path

from ..errors import UsageError

_HOOK = "__kinetoscope_step_on__"
_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While)


def _binds(node: ast.stmt, name: str) -> bool:
    """Whether the module-level statement `node` (re)binds `name` itself."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    targets = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _insert_hooks(body: list[ast.stmt], name: str) -> int:
    """Put a hook call after every statement in `body` binding `name`; how many were put."""
    count = 0
    index = 0
    while index < len(body):
        node = body[index]
        if isinstance(node, _BLOCKS):
            for field in ("body", "orelse", "finalbody"):
                count += _insert_hooks(getattr(node, field, []), name)
            for handler in getattr(node, "handlers", []):
                count += _insert_hooks(handler.body, name)
        if _binds(node, name):
            call = ast.Expr(ast.Call(ast.Name(_HOOK, ast.Load()), [], []))
            body.insert(index + 1, ast.copy_location(call, node))
            count += 1
            index += 1
        index += 1
    return count


def hooked_code(script: Path, spec: str, attr_path: str) -> types.CodeType:
    """The script compiled with the hook after each binding of `attr_path`'s first name."""
    source = script.read_bytes()
    try:
        tree = ast.parse(source, str(script))
    except SyntaxError as exc:
        raise UsageError(f"{script}: not valid Python ({exc.msg}, line {exc.lineno})") from None
    if not _insert_hooks(tree.body, attr_path.split(".")[0]):
        raise UsageError(
            f"--step-on {spec!r}: {script.name} defines no {attr_path.split('.')[0]} at module "
            "level (for another module's function: expected module:function)"
        )
    return compile(ast.fix_missing_locations(tree), str(script), "exec")


def run_as_main(code: types.CodeType, script: Path, wrap: Callable, attr_path: str) -> None:
    """Execute `code` as a fresh `__main__` (as `runpy.run_path` does), wrapping `attr_path`.

    `wrap(function)` returns the wrapper; each hook call wraps the name's current
    value unless it is already the wrapper it made (a rebinding gets wrapped again).
    """
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace.update(__file__=str(script), __cached__=None, __loader__=None, __package__=None)
    namespace["__builtins__"] = __builtins__
    made: list[object] = []
    *parents, attr = attr_path.split(".")

    def hook() -> None:
        owner = namespace
        for part in parents:
            owner = getattr(owner, part, None) if owner is not namespace else owner.get(part)
        current = owner.get(attr) if owner is namespace else getattr(owner, attr, None)
        if not callable(current) or current in made:
            return
        wrapper = wrap(current)
        made.append(wrapper)
        if owner is namespace:
            namespace[attr] = wrapper
        else:
            setattr(owner, attr, wrapper)

    namespace[_HOOK] = hook
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, namespace)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
