"""Op resolvers: (builtin code, version) or custom name -> Registration, as in TFLite."""
from __future__ import annotations

from typing import Callable

from .accepts import ANYTHING
from .registration import BUILTIN_KERNELS, CUSTOM_KERNELS, Kernel, Registration


class OpResolver:
    """Maps builtin codes (with a version range per kernel) and custom names to kernels."""

    def __init__(self) -> None:
        self._builtins: dict[int, list[Registration]] = {}
        self._customs: dict[str, list[Registration]] = {}

    def add_custom(self, name: str, registration: Registration | Kernel | Callable,
                   versions: tuple[int, int] = (1, 1 << 30)) -> None:
        """Register a Python kernel for a custom op (a Kernel, a Registration, or a bare
        ``invoke(ctx, node)`` function)."""
        reg = _as_registration(registration, versions)
        reg.custom_name = name
        reg.builtin_code = None
        self._customs.setdefault(name, []).insert(0, reg)

    def find_builtin(self, code: int, version: int) -> Registration | None:
        for reg in self._builtins.get(int(code), ()):
            if reg.supports_version(version):
                return reg
        return None

    def find_custom(self, name: str, version: int) -> Registration | None:
        for reg in self._customs.get(name, ()):
            if reg.supports_version(version):
                return reg
        return None

    def builtin_versions(self, code: int) -> list[tuple[int, int]]:
        """The version ranges registered for a builtin (to explain a version mismatch)."""
        return [(r.version_min, r.version_max) for r in self._builtins.get(int(code), ())]

    def custom_versions(self, name: str) -> list[tuple[int, int]]:
        return [(r.version_min, r.version_max) for r in self._customs.get(name, ())]

    def builtin_codes(self) -> list[int]:
        return sorted(self._builtins)

class BuiltinOpResolver(OpResolver):
    """Every kernel of `tflite_viewer.interpreter.kernels`."""

    def __init__(self) -> None:
        super().__init__()
        from . import kernels  # noqa: F401  - importing registers the kernel modules
        for reg in BUILTIN_KERNELS:
            self._builtins.setdefault(reg.builtin_code, []).append(
                Registration(reg.kernel, reg.builtin_code, None, reg.version_min, reg.version_max))
        for reg in CUSTOM_KERNELS:
            self._customs.setdefault(reg.custom_name, []).append(
                Registration(reg.kernel, None, reg.custom_name, reg.version_min, reg.version_max))


class _FunctionKernel(Kernel):
    """A user's ``invoke(ctx, node)`` function: it reads the tensors (and their
    quantization) itself, so every type and form reaches it."""

    types = "any"
    accepts = ANYTHING

    def __init__(self, invoke: Callable) -> None:
        self._invoke = invoke

    def invoke(self, ctx, node):
        return self._invoke(ctx, node)


def _as_registration(obj, versions: tuple[int, int]) -> Registration:
    if isinstance(obj, Registration):
        return obj
    if isinstance(obj, type) and issubclass(obj, Kernel):
        obj = obj()
    if isinstance(obj, Kernel):
        return Registration(obj, None, None, versions[0], versions[1])
    if callable(obj):
        return Registration(_FunctionKernel(obj), None, None, versions[0], versions[1])
    raise TypeError(f"expected a Registration, a Kernel or a function, got {type(obj).__name__}")
