"""The coordinates of a `.tet` dataset, as `Dataset.coords` gives them.

A `.tet` file keeps coordinates in two ways. A converted NetCDF/HDF5 file holds each dimension
coordinate as a dataset of its own, a 1-D dataset named like its dimension (the CF rule), at any
length; CF auxiliary coordinates (2-D latitude, station names) are datasets named by the data
variable's `coordinates` attribute. A file written with footer metadata may instead carry text
labels per axis in the footer (tet.md §1.8, at most 64 per axis). `Coordinates` links both:
keys come from metadata alone, values are read the first time they are used.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator

import numpy as np


class Coordinates(Mapping):
    """Coordinate name → numpy values for one dataset (read on first use, then kept).

    - each dimension, keyed by its name (or axis number without `dim_names`): the 1-D dataset
      named like it, when its length matches; else the footer's labels for that axis, as strings;
    - each name in the CF `coordinates` attribute that is a dataset of the file whose
      dimensions are all among this dataset's.
    """

    def __init__(self, dataset):
        self._dataset = dataset
        self._sources: dict = {}  # name -> a Dataset to read, or a list of footer labels
        file = dataset.file
        for axis, n in enumerate(dataset.shape):
            key = dataset.axis_key(axis)
            linked = file.datasets.get(key) if dataset.dim_names else None
            if linked is not None and linked.shape == (n,):
                self._sources[key] = linked
            elif key in dataset.labels:
                self._sources[key] = dataset.labels[key]
        dims = set(dataset.dim_names or ())
        for name in _auxiliary_names(dataset):
            aux = file.datasets.get(name)
            if aux is not None and name not in self._sources and aux.dim_names and set(aux.dim_names) <= dims:
                self._sources[name] = aux
        self._values: dict = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._values:
            source = self._sources[name]  # KeyError for an unknown name, as a dict gives
            self._values[name] = np.asarray(source) if isinstance(source, list) else source[...]
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)

    def __repr__(self) -> str:
        return f"<tessera.tet coordinates of {self._dataset.name!r}: {list(self._sources)}>"


def _auxiliary_names(dataset) -> list:
    """The names in the dataset's CF `coordinates` attribute (typed or text)."""
    value = dataset.typed_attrs.get("coordinates", dataset.attrs.get("coordinates", ""))
    return str(value).split() if isinstance(value, str) else []
