"""The tessera extension of a `.tet` footer, decoded for Python (docs/tet-footer-extension.md).

Typed attribute values become what netCDF4-python and h5py give for the same attribute: `str`
for text, a list of `str` for a string array, a numpy scalar for a single number and a numpy array
for several (`{"type": "float32", "value": 400}` → `np.float32(400.0)`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

NON_FINITE = {"NaN": np.nan, "inf": np.inf, "-inf": -np.inf}
# The CF attributes whose effect a convert may have applied to the stored values.
CF_ENCODING_ATTRS = ("_FillValue", "missing_value", "scale_factor", "add_offset")


def attribute_value(value: Any) -> Any:
    """One typed value of the extension as netCDF4-python would return it."""
    if isinstance(value, str):
        return value
    kind, raw = value["type"], value["value"]
    scalar = not isinstance(raw, list)
    items = [raw] if scalar else raw
    if kind == "str":
        return items[0] if scalar else list(items)
    if kind in ("float32", "float64"):
        items = [NON_FINITE.get(x, x) if isinstance(x, str) else x for x in items]
    array = np.array(items, dtype=np.dtype(kind))
    return array[0] if scalar else array


def attributes(pairs: list) -> dict:
    return {name: attribute_value(value) for name, value in pairs}


@dataclass(frozen=True)
class DatasetEncoding:
    """How a dataset's stored values relate to its source: the source element type and the CF
    attributes (`_FillValue`, `missing_value`, `scale_factor`, `add_offset`) already applied."""
    source_dtype: Optional[np.dtype]
    applied: tuple
    attrs: dict = field(default_factory=dict)  # every source attribute, typed

    def applied_attrs(self) -> dict:
        """The applied CF attributes with their typed values."""
        return {k: self.attrs[k] for k in self.applied if k in self.attrs}


@dataclass(frozen=True)
class Extension:
    attrs: dict
    datasets: dict  # name -> DatasetEncoding
    chunk_crc32c: tuple


def decode(text: Optional[str]) -> Optional[Extension]:
    """The extension of a footer (its JSON text), or None when the file has none."""
    if text is None:
        return None
    root = json.loads(text)
    datasets = {}
    for name, entry in root.get("datasets", {}).items():
        dtype = entry.get("source_dtype")
        datasets[name] = DatasetEncoding(np.dtype(dtype) if dtype else None, tuple(entry.get("applied", ())),
                                         attributes(entry.get("attrs", [])))
    return Extension(attributes(root.get("attrs", [])), datasets, tuple(root.get("chunk_crc32c", ())))
