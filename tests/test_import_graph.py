"""kbert's import graph: no cycles, imports point down, lazy imports only for heavy libraries.

Read from the source's syntax tree (module- and function-level imports
alike), so it runs once (`backend_independent`, in the PyTorch run).
"""

import ast
import functools
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "kbert"
# Lower layers first; a module imports from its own package or from packages
# of a lower layer only.
LAYERS = (
    (
        "kbert.utils",
        "kbert.sources",
        "kbert.data",
        "kbert.optimization",
        "kbert.distributed",
    ),
    ("kbert.layers",),
    ("kbert.models",),
    ("kbert.preprocessing",),
    ("kbert.presets",),
    ("kbert.export", "kbert.pretraining", "kbert.inference"),
    ("kbert.finetuning",),  # its demo exports the fine-tuned model
    ("kbert.cli", "kbert"),
)
# Imported inside functions only, to keep them off paths that must not load
# them (TensorFlow off the JAX/PyTorch token-id path; optional runtimes).
# A command handler may import anything (kbert modules too) inside, marked
# with HELP_LAZY: the modules that declare subcommands stay light for
# `kbert --help` (see kbert/cli.py).
LAZY = {
    "tensorflow",
    "tensorflow_text",
    "torch",
    "jax",
    "jax2onnx",
    "tf2onnx",
    "onnx",
    "onnxruntime",
    "openvino",
    "nncf",  # optional: int8 OpenVINO IR only
    "ai_edge_litert",
    "flatbuffers",
    "mediapipe",
    "huggingface_hub",  # optional: hf:// handles only
    "matplotlib",
    "ray",  # optional: the distributed engine, kbert-keras[ray]
    "openvino_tokenizers",  # optional: the string-flavour OpenVINO IR only
    "transformers",  # optional: exporting the string-flavour OpenVINO IR only
    "tokenizers",  # optional: exporting the string-flavour OpenVINO IR only
    "onnxruntime_extensions",  # optional: the string-flavour ONNX file only
}

# Keras' TensorFlow backend loads TensorFlow.
LAZY_KERAS = ("keras.src.backend.tensorflow",)
HELP_LAZY = "# lazy: keep --help fast"


def _heavy(target):
    return target.split(".")[0] in LAZY or target.startswith(LAZY_KERAS)


def _modules():
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return modules


MODULES = _modules()


def _imports(name, path):
    """`(imported kbert module, line, inside a function)` of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES and target.startswith("kbert"):
                target = target.rpartition(".")[0]
            found.append((target, node.lineno, id(node) in nested))
    return found


def _layer(module):
    for rank, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or (
                package != "kbert" and module.startswith(package + ".")
            ):
                return rank, package
    raise AssertionError(f"{module} is in no layer of LAYERS")


def _graph():
    graph = {}
    for name, path in MODULES.items():
        graph[name] = {
            target
            for target, _, _ in _imports(name, path)
            if target in MODULES and target != name and not name.startswith(target + ".")
        }
    return graph


@pytest.mark.backend_independent
def test_no_import_cycles():
    graph = _graph()
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.backend_independent
def test_imports_point_down():
    upward = []
    for name, targets in _graph().items():
        rank, package = _layer(name)
        for target in targets:
            target_rank, target_package = _layer(target)
            if target_package != package and target_rank >= rank:
                upward.append(f"{name} imports {target}")
    assert not upward, "\n".join(upward)


@pytest.mark.backend_independent
def test_function_level_imports_are_heavy_libraries_with_a_reason():
    problems = []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        lines, import_lines = text.splitlines(), _import_lines(text)
        marked = functools.partial(_marked, lines, import_lines)
        for target, line, inside in _imports(name, path):
            if inside and marked(line, HELP_LAZY):
                continue
            if not inside or target.startswith("kbert"):
                if inside:
                    problems.append(f"{path}:{line}: {target} imported inside a function")
                continue
            if not _heavy(target):
                problems.append(f"{path}:{line}: {target} is light; import it at the top")
                continue
            if not marked(line, "# lazy:"):
                problems.append(f"{path}:{line}: lazy import of {target} without a reason")
    assert not problems, "\n".join(problems)


def _import_lines(text):
    """The (1-based) numbers of the lines that import statements span."""
    return {
        number
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for number in range(node.lineno, node.end_lineno + 1)
    }


def _marked(lines, import_lines, line, comment):
    """Whether `comment` is on the import's line or above its group (the
    consecutive import statements around it, multi-line ones included)."""
    above = line - 1
    while above in import_lines:
        above -= 1
    return comment in lines[line - 1] or comment in lines[above - 1]


# kbert/export: the steps every format shares sit directly in the package;
# each format has its folder. The shared steps reach a format only through
# the table of exporters (`kbert.export.formats`, import paths), so they
# import no format folder, and there are at most 12 of them.
EXPORT_FORMATS = ("saved_model", "tflite", "onnx", "openvino")
MAX_SHARED_EXPORT_MODULES = 12


def _export_folder(module):
    parts = module.split(".")
    if parts[:2] == ["kbert", "export"] and len(parts) > 2 and parts[2] in EXPORT_FORMATS:
        return parts[2]
    return None


@pytest.mark.backend_independent
def test_export_shared_steps_import_no_format_folder():
    shared = [
        name
        for name in MODULES
        if name.startswith("kbert.export") and _export_folder(name) is None
    ]
    assert len(shared) <= MAX_SHARED_EXPORT_MODULES, sorted(shared)
    for folder in EXPORT_FORMATS:
        assert f"kbert.export.{folder}.exporter" in MODULES
        assert f"kbert.export.{folder}.runner" in MODULES
    graph = _graph()
    upward = [
        f"{name} imports {target}"
        for name in shared
        for target in graph[name]
        if _export_folder(target)
    ]
    assert not upward, "\n".join(upward)


# A format folder imports no other format's, but for these pairs: the
# OpenVINO IR is converted from the checked ONNX file (and shares its
# quantization recipes and re-measurement), and `kbert verify` runs an
# ONNX file on OpenVINO as well as on onnxruntime.
FORMAT_FOLDER_IMPORTS = {("openvino", "onnx"), ("onnx", "openvino")}


@pytest.mark.backend_independent
def test_format_folders_import_no_other_format_folder():
    graph = _graph()
    across = [
        f"{name} imports {target}"
        for name in MODULES
        if _export_folder(name)
        for target in graph[name]
        if _export_folder(target) not in (None, _export_folder(name))
        and (_export_folder(name), _export_folder(target)) not in FORMAT_FOLDER_IMPORTS
    ]
    assert not across, "\n".join(across)
