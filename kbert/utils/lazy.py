"""Packages whose public names are imported on first use (PEP 562).

`import kbert.cli` runs `kbert/__init__.py` first; were that to import the
models, `kbert --help` would load Keras and TensorFlow. A package built with
`lazy_package` imports nothing until one of its names is read.
"""

import importlib
import sys
import types


class _LazyPackage(types.ModuleType):
    """A package module that imports its exported names from their homes when read."""

    def __getattr__(self, name):
        computed = self.__dict__.get("_lazy_computed", {})
        if name in computed:
            value = computed[name]()
            super().__setattr__(name, value)
            return value
        homes = self.__dict__.get("_lazy_homes", {})
        if name not in homes:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module = importlib.import_module(homes[name])
        if name in self.__dict__["_lazy_attributes"]:
            value = getattr(module, name)
        else:
            value = module
        super().__setattr__(name, value)
        return value

    def __setattr__(self, name, value):
        # Importing subpackage `onnx` of a package that exports the function
        # `onnx` (from `onnx.exporter`) would put the subpackage in the
        # function's place: the name stays lazy instead, read on first use.
        if (
            name in self.__dict__.get("_lazy_attributes", ())
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
        ):
            return
        super().__setattr__(name, value)

    def __dir__(self):
        lazy = set(self.__dict__.get("_lazy_homes", {}))
        return sorted(set(super().__dir__()) | lazy | set(self._lazy_computed))


def lazy_package(package, attributes=None, submodules=(), computed=None):
    """Makes `package` import its names on first use.

    `attributes` maps a module to the names the package exports from it;
    `submodules` are subpackages/modules exported as themselves; `computed`
    maps a name to the function that builds its value on first use.

    Example:
    >>> import types, sys
    >>> sys.modules["demo_package"] = types.ModuleType("demo_package")
    >>> lazy_package("demo_package", {"kbert.utils.atomic": ["atomic_file"]})
    >>> sys.modules["demo_package"].atomic_file.__name__
    'atomic_file'
    """
    module = sys.modules[package]
    homes = {name: f"{package}.{name}" for name in submodules}
    exported = set()
    for home, names in (attributes or {}).items():
        for name in names:
            homes[name] = home
            exported.add(name)
    module.__class__ = _LazyPackage
    module.__dict__["_lazy_homes"] = homes
    module.__dict__["_lazy_attributes"] = frozenset(exported)
    module.__dict__["_lazy_computed"] = dict(computed or {})
