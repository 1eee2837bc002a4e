"""torch.compile while recording: compiled regions and Inductor's kernels as ops.

A region that torch.compile compiled runs generated code: fused C++ kernels that no ATen
callback sees, and ATen ops (matrix products, random draws) called directly. So:

* While dynamo traces a frame or Inductor compiles a graph (dynamo's compile callbacks, the
  lazy backward compile included), no op is recorded: those ops run on fake tensors.
* Each call of a compiled graph (Inductor's ``CompiledFxGraph``) is one op at the region's
  boundary, ``inductor::forward`` / ``inductor::backward`` / ``inductor::inference``: its inputs
  (the graph's flat inputs, parameters included, and ``generated_code``, a digest of the code
  Inductor generated, so a different compiler or a changed model shows as the region called
  differently) and its outputs (the graph's flat outputs, the activations saved for backward
  included). Graph inputs the graph mutates are recorded again as outputs.
* Inside it, each generated kernel call is an op nested in the region (depth 1):
  ``inductor::<kernel>``, with the kernel's ``in_ptr`` arguments as inputs and its
  ``out_ptr`` / ``in_out_ptr`` arguments as outputs, and its call site the source line of the
  first ATen op Inductor fused into it (Inductor's provenance: the kernel's post-grad nodes and
  their ``# File:`` lines; the kernel's name lists the original ATen ops). The ATen ops the
  generated code calls itself (``extern_kernels.addmm``, ``aten.randint.low_out``) are recorded
  as they always are, nested in the region.

Nothing here changes what the compiled code computes. Provenance tracking is switched on in
Inductor's config while recording (it only adds metadata to the compile). It all hooks into
modules only when the program imports them (a post-import hook), so a program that never
compiles pays nothing; on torch 1.13 there is nothing to hook.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import json
import linecache
import os
import re
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from upguard import _C

READ, WRITTEN, OUTPUT = 0, 1, 2  # adapter.h AnnouncedRole

_KERNEL_DEF = re.compile(
    r"^(\w+) = async_compile\.cpp_pybinding\(\[[^\]]*\], r'''(?:(?!''').)*?"
    r"extern \"C\"\s+void\s+kernel\(([^)]*)\)",
    re.S | re.M)
_NODE_LINE = re.compile(r"^\s+(\w+): \"[^\"]*\" = torch\.ops\.(\w+)\.(\w+)\.\w+\(", re.M)
_FILE_LINE = re.compile(
    r"# (?:Backward of forward node: )?File: (.+?):(\d+) in (\w+)(?:, code: (.*))?$")


def _short(path: str) -> str:
    cwd = os.getcwd() + os.sep
    return path[len(cwd):] if path.startswith(cwd) else path


_live_paths: Dict[str, str] = {}


def _live_path(path: str) -> str:
    """The source file this process loaded for ``path`` from Inductor's provenance.

    Inductor's caches (FX graph, AOT autograd) key a graph on its code, not on where the code
    lives, so a graph compiled in another checkout of the same project (or before it moved)
    comes back with that checkout's ``# File:`` paths. The path is kept when this process
    loaded it; otherwise it is the loaded file sharing the longest tail of path parts with
    it (the same file in this checkout), if exactly one does."""
    if path in _live_paths:
        return _live_paths[path]
    loaded = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py"):
            loaded.add(os.path.abspath(file))
    resolved = path
    if path not in loaded:
        parts = path.split(os.sep)
        best, best_len = [], 0
        for file in loaded:
            other = file.split(os.sep)
            common = 0
            while (common < min(len(parts), len(other))
                   and parts[-1 - common] == other[-1 - common]):
                common += 1
            if common > best_len:
                best, best_len = [file], common
            elif common == best_len and common:
                best.append(file)
        if len(best) == 1:
            resolved = best[0]
    _live_paths[path] = resolved
    return resolved


class _Graph:
    """What upguard reads once from a compiled graph: its op name, the digest of its code, and
    for each generated kernel the roles of its arguments and where its ATen ops come from."""

    def __init__(self, graph: Any) -> None:
        kwargs = getattr(graph, "fx_kwargs", {}) or {}
        kind = "backward" if kwargs.get("is_backward") else (
            "inference" if kwargs.get("is_inference") else "forward")
        self.op = f"inductor::{kind}"
        source = getattr(graph, "source_code", "") or ""
        # The "# AOT ID" header numbers graphs in compile order; the code is the rest.
        body = "\n".join(line for line in source.splitlines() if not line.startswith("# AOT ID"))
        self.code_digest = hashlib.sha256(body.encode()).hexdigest()[:16]
        self.mutated = set(getattr(graph, "mutated_input_idxs", ()) or ())
        self.kernels: Dict[str, Tuple[List[str], List[int], str]] = {}
        sources = _node_sources(getattr(graph, "inductor_post_grad_graph_str", "") or "")
        provenance = _kernel_nodes(getattr(graph, "inductor_provenance_mapping_str", None))
        for match in _KERNEL_DEF.finditer(source):
            name, params = match.group(1), match.group(2)
            names, roles = [], []
            for param in params.split(","):
                arg = param.strip().split()[-1] if param.strip() else ""
                if not arg:
                    continue
                names.append(arg)
                roles.append(OUTPUT if arg.startswith("out_ptr") else
                             WRITTEN if arg.startswith("in_out_ptr") else READ)
            where = ""
            for node in provenance.get(name, ()):
                if node in sources:
                    where = sources[node]
                    break
            self.kernels[name] = (names, roles, where)


def _node_sources(graph_text: str) -> Dict[str, str]:
    """Post-grad node name -> "file:line" of the code it came from (the ``# File:`` comment
    above it in Inductor's post-grad graph)."""
    sources: Dict[str, str] = {}
    current = ""
    for line in graph_text.splitlines():
        found = _FILE_LINE.search(line)
        if found:
            path = _live_path(found.group(1))
            current = f"{_short(path)}:{_live_line(path, int(found.group(2)), found.group(4))}"
            continue
        node = _NODE_LINE.match(line)
        if node and current:
            sources[node.group(1)] = current
    return sources


def _live_line(path: str, line: int, code: Optional[str]) -> int:
    """The line of ``code`` in ``path`` as the file is now. A graph from Inductor's cache
    carries the lines of the source it was compiled from: a file edited since (a line added
    above the model's code) leaves the graph the same and its lines stale. The line is kept
    when it still holds the code (or no code is known); else the one line that holds it, if
    exactly one does."""
    if not code:
        return line
    want = code.strip()
    lines = linecache.getlines(path)
    if 0 < line <= len(lines) and lines[line - 1].strip() == want:
        return line
    found = [n for n, text in enumerate(lines, 1) if text.strip() == want]
    return found[0] if len(found) == 1 else line


def _kernel_nodes(mapping_text: Optional[str]) -> Dict[str, List[str]]:
    """Kernel name -> its post-grad nodes in the graph's order, from Inductor's provenance
    mapping ("cpp_fused_add_gelu_0:2" -> [...] as "cppCodeToPost")."""
    if not mapping_text:
        return {}
    try:
        mapping = json.loads(mapping_text)
    except ValueError:
        return {}
    kernels: Dict[str, List[str]] = {}
    for key, nodes in (mapping.get("cppCodeToPost") or {}).items():
        kernels[key.rsplit(":", 1)[0]] = list(reversed(nodes))  # stored last node first
    return kernels


_graphs_lock = threading.Lock()


def _graph_of(graph: Any) -> _Graph:
    """The graph's _Graph, kept on the graph object itself (an id would be reused by a graph
    made after this one is freed, with other code)."""
    with _graphs_lock:
        found = getattr(graph, "_upguard_graph", None)
        if found is None:
            found = _Graph(graph)
            _wrap_kernels(graph, found)
            try:
                graph._upguard_graph = found
            except AttributeError:  # read again on every call rather than mistaken
                pass
        return found


def _tensor_args(values: Sequence[Any], prefix: str, roles: Dict[int, int]
                 ) -> List[Tuple[str, int, str, int]]:
    args = []
    for idx, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            args.append((f"{prefix}{idx}", value._cdata, "", roles.get(idx, READ)))
    return args


def _kernel_op(kernel: str) -> str:
    """The op name of a generated kernel: its name without the number Inductor appends
    ("cpp_fused_gelu_6"), which counts the graph's kernels and so changes for every kernel
    after one added or removed, while the fused ops it lists do not."""
    return "inductor::" + re.sub(r"_\d+$", "", kernel)


def _wrap_kernels(graph: Any, info: _Graph) -> None:
    """Replaces the generated module's kernel globals by ones that record each call."""
    call = getattr(graph, "current_callable", None)
    function = getattr(call, "__func__", call)
    module_globals = getattr(function, "__globals__", None)
    if not isinstance(module_globals, dict) or module_globals.get("__upguard_kernels__"):
        return
    module_globals["__upguard_kernels__"] = True
    for name in _ALLOCATORS:
        allocate = module_globals.get(name)
        if callable(allocate):
            module_globals[name] = _noted_allocation(allocate)
    for name, (arg_names, roles, where) in info.kernels.items():
        kernel = module_globals.get(name)
        if callable(kernel):
            module_globals[name] = _recorded_kernel(kernel, _kernel_op(name), arg_names,
                                                    roles, where)


# The generated code's buffer allocators that bypass ATen's dispatcher (no op records them).
_ALLOCATORS = ("empty_strided_cpu", "empty_strided_cpu_pinned")


def _noted_allocation(allocate: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        tensor = allocate(*args, **kwargs)
        if _C.is_recording() and isinstance(tensor, torch.Tensor):
            _C.note_uninitialized(tensor._cdata)
        return tensor
    return run


def _recorded_kernel(kernel: Callable[..., Any], op: str, arg_names: List[str],
                     roles: List[int], where: str) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        if not _C.is_recording():
            return kernel(*args)
        inputs = []
        for idx, value in enumerate(args):
            name = arg_names[idx] if idx < len(arg_names) else f"arg{idx}"
            if isinstance(value, torch.Tensor):
                inputs.append((name, value._cdata, "", roles[idx] if idx < len(roles) else READ))
            else:
                inputs.append((name, 0, repr(value), READ))
        handle = _C.enter_op(op, inputs, where)
        try:
            return kernel(*args)
        finally:
            _C.exit_op(handle, [])
    run.__wrapped__ = kernel  # type: ignore[attr-defined]
    return run


def _recorded_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def __call__(self: Any, inputs: List[Any]) -> Any:
        if not _C.is_recording():
            return original(self, inputs)
        info = _graph_of(self)
        args = _tensor_args(inputs, "input", {idx: WRITTEN for idx in info.mutated})
        args.append(("generated_code", 0, info.code_digest, READ))
        handle = _C.enter_op(info.op, args, "")
        del args
        outputs: Any = None
        try:
            outputs = original(self, inputs)
            return outputs
        finally:
            results = [v._cdata for v in (outputs or ()) if isinstance(v, torch.Tensor)]
            _C.exit_op(handle, results)
    __call__.__upguard_original__ = original  # type: ignore[attr-defined]
    return __call__


def _on_compile_start(_args: Any) -> None:
    _C.note_compiling(True)


def _on_compile_end(_args: Any) -> None:
    _C.note_compiling(False)


class _Hooks:
    """What is installed into torch's compiler modules, and how to take it out again."""

    def __init__(self) -> None:
        self.undo: List[Callable[[], None]] = []

    def dynamo_callbacks(self, module: Any) -> None:
        handler = getattr(module, "callback_handler", None)
        if handler is None or not hasattr(handler, "register_start_callback"):
            return
        handler.register_start_callback(_on_compile_start)
        handler.register_end_callback(_on_compile_end)

        def undo() -> None:
            for remove, callback in ((handler.remove_start_callback, _on_compile_start),
                                     (handler.remove_end_callback, _on_compile_end)):
                try:
                    remove(callback)
                except ValueError:
                    pass
        self.undo.append(undo)

    def output_code(self, module: Any) -> None:
        graph_class = getattr(module, "CompiledFxGraph", None)
        original = getattr(graph_class, "__call__", None)
        if original is None or hasattr(original, "__upguard_original__"):
            return
        graph_class.__call__ = _recorded_call(original)
        self.undo.append(lambda: setattr(graph_class, "__call__", original))

    def inductor_config(self, module: Any) -> None:
        trace = getattr(module, "trace", None)
        if trace is None or not hasattr(trace, "provenance_tracking_level"):
            return
        before = trace.provenance_tracking_level
        if before < 1:
            trace.provenance_tracking_level = 1
            self.undo.append(lambda: setattr(trace, "provenance_tracking_level", before))


_hooks = _Hooks()
_WATCHED = {
    "torch._dynamo.callback": _Hooks.dynamo_callbacks,
    "torch._inductor.output_code": _Hooks.output_code,
    "torch._inductor.config": _Hooks.inductor_config,
}


def _apply(name: str, module: Any) -> None:
    try:
        _WATCHED[name](_hooks, module)
    except Exception as error:  # never disturb the training
        print(f"upguard: torch.compile regions are not recorded ({name}: {error})",
              file=sys.stderr)


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs _apply on a watched module as soon as it is imported."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None and spec.loader is not None:
                spec.loader = _Chained(spec.loader, fullname)
                return spec
        return None


class _Chained(importlib.abc.Loader):
    def __init__(self, loader: Any, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _apply(self._name, module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, is_package, ...
        return getattr(self._loader, name)


_finder = _AfterImport()


def _note_compiled_modules(on_module: Callable[[torch.nn.Module], None]) -> None:
    """model.compile() compiles the module's whole call, its hooks included: the module hooks
    never see it run, so it is made known to `on_module` (its tensor names) when compiled."""
    original = getattr(torch.nn.Module, "compile", None)
    if original is None or hasattr(original, "__upguard_original__"):
        return

    def compile(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        try:
            on_module(self)
        except Exception as error:  # never disturb the training
            print(f"upguard: compiled module not named: {error}", file=sys.stderr)
        return original(self, *args, **kwargs)
    compile.__upguard_original__ = original  # type: ignore[attr-defined]
    torch.nn.Module.compile = compile  # type: ignore[method-assign]
    _hooks.undo.append(lambda: setattr(torch.nn.Module, "compile", original))


def install(on_module: Callable[[torch.nn.Module], None]) -> None:
    """Hooks the compiler modules already imported, and the others when they are;
    `on_module` learns of every module compiled by model.compile()."""
    if not hasattr(torch, "compile"):
        return  # torch 1.x
    _note_compiled_modules(on_module)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    for name in _WATCHED:
        module = sys.modules.get(name)
        if module is not None:
            _apply(name, module)


def remove() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    while _hooks.undo:
        _hooks.undo.pop()()
