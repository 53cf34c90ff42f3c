"""Which inputs are remote: the schemes the library's URI resolver reads over the network
(include/tessera/io/uri.hpp, docs/remote.md). Local paths and ``file://`` URIs have a
modification time to key caches by; remote objects are pinned by their ETag when opened."""

_REMOTE_SCHEMES = ("http://", "https://", "s3://", "gs://")


def is_remote(path: str) -> bool:
    """True for ``http(s)://``, ``s3://`` and ``gs://`` inputs."""
    return path.lower().startswith(_REMOTE_SCHEMES)


def local_path(path: str) -> str:
    """The filesystem path of a plain path or ``file://`` URI."""
    return path[len("file://"):] if path.startswith("file://") else path
