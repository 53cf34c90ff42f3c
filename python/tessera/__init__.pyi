import pathlib

from . import cells as cells, ragged as ragged, tet as tet

__version__: str

__all__ = [
    "Error", "FormatError", "IoError", "LimitError", "UnsupportedError", "UsageError",
    "cli_path", "tet", "cells", "ragged", "__version__",
]

class Error(Exception):
    message: str
    path: str
    structure: str

class FormatError(Error, ValueError): ...
class UsageError(Error, ValueError): ...
class LimitError(Error, ValueError): ...
class IoError(Error, OSError): ...
class UnsupportedError(Error, NotImplementedError): ...

def cli_path() -> pathlib.Path: ...
