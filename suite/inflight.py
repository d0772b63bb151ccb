"""A target's unfinished run state, carried in git from one sitting to the next.

    python -m suite.inflight begin <name> <sweep dir> [<sweep dir> ...]   # make runs it first
    python -m suite.inflight pack [<name> ...]                             # make carry
    python -m suite.inflight drop <name>                                   # make runs it last
    python -m suite.inflight status <name>                                 # a dry run's line

A paper-budget target can take longer than a sitting, and the next sitting may be another
machine that has only the repository. ``pack`` writes, for each target begun here and not yet
finished (or the ``names`` given), ``results/inflight/<name>.tar.gz``: of each finished cell its
``metrics.json`` only (the evidence to come), of each unfinished cell what resumes it (the
group's ``checkpoint.pt`` and ``sittings.json``, each cell's ``history.csv``, ``run.log`` and
Hydra config), never wandb files or locks; ``MANIFEST.sha256`` at its top. One archive per target,
replaced by each ``pack``, so git holds one copy at a time in the working tree; an archive over the
size a committed file may hold (``LIMIT``: a state-32 LSTM's checkpoint of 10 seeds is 7 MB) is cut
into parts ``<name>.tar.gz.000``, ``.001``, ... of at most that size, read back joined, up to
``TOTAL`` bytes in all.

``begin`` (the first step of every make target) records the target's sweep folders under
``multirun/.inflight/<name>`` and, where ``results/inflight/<name>.tar.gz`` (or its parts) exists, unpacks it
into the sweep folders' parent cell by cell: a cell finished here stays, and of two unfinished
states the one whose curve reaches the later step wins whole (``newer``), so a target begun twice
unpacks nothing twice and one that goes from machine A to B and back resumes from B's state. The
runner then finds the finished cells complete and resumes each unfinished group from its
checkpoint. ``drop`` (after the target's evidence is written) deletes both once no cell of the
recorded sweeps is unfinished: what was carried is in the evidence now. ``status`` says what the
carried file holds (a dry run's line).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tarfile
import zlib
from pathlib import Path

from nalu.errors import ConfigError
from suite.io import read_json, write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
CARRIED = ROOT / "results" / "inflight"
RUNS = ROOT / "multirun"
SKIPPED_DIRS = {"wandb", ".hydra.next"}
SKIPPED_FILES = {".lock"}
CELL_FILES = ("history.csv", "metrics.json", "checkpoint.pt")


def record_of(name: str, runs: Path) -> Path:
    return runs / ".inflight" / name


def begin(name: str, sweeps: list[Path], runs: Path = RUNS, carried: Path = CARRIED) -> tuple[int, int]:
    """Record ``sweeps`` as ``name``'s and unpack its carried state into ``runs``, cell by cell
    (``newer``); (cells taken from the file, cells kept as they are here)."""
    write_text_atomic(record_of(name, runs), "".join(f"{Path(s).resolve().relative_to(runs.resolve())}\n"
                                                      for s in sweeps))
    blobs = unpacked(name, carried)
    if blobs is None:
        return 0, 0
    archive = carried / f"{name}.tar.gz"
    taken = kept = 0
    for arc in blobs:
        if not (runs / arc).resolve().is_relative_to(runs.resolve()):
            raise SystemExit(f"error: {archive} holds {arc}, outside {runs}; nothing unpacked")
    by_cell: dict[Path, dict[str, bytes]] = {}
    for arc, data in blobs.items():  # a cell's files lie in its folder or in its .hydra/
        cell = Path(arc).parent
        cell = cell.parent if cell.name == ".hydra" else cell
        by_cell.setdefault(cell, {})[Path(arc).relative_to(cell).as_posix()] = data
    for cell, files in sorted(by_cell.items()):
        here = runs / cell
        if not newer(files, here):
            kept += 1
            continue
        for old in [p for p in here.rglob("*") if p.is_file() and p.name not in SKIPPED_FILES] if here.is_dir() else []:
            old.unlink()  # the cell as the file has it, nothing of this machine's older state beside it
        for rel, data in files.items():
            target = here / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        taken += 1
    return taken, kept


def last_step(history: bytes | None) -> int:
    """The step of a ``history.csv``'s last row (``step`` its first column); -1 for none."""
    lines = (history or b"").rstrip().splitlines()
    try:
        return int(float(lines[-1].split(b",")[0])) if len(lines) > 1 else -1
    except ValueError:
        return -1


def newer(files: dict[str, bytes], here: Path) -> bool:
    """Whether a cell as carried (``files``, by path in the cell) is ahead of the cell ``here``: a
    cell finished here stays; a cell finished in the file replaces an unfinished one here; of two
    unfinished states the one whose curve reaches the later step wins (here on a tie), so a
    target that goes from machine A to B and back to A resumes from B's state, not A's older one."""
    if finished(here):
        return False
    if set(files) == {"metrics.json"}:
        return True
    local = here / "history.csv"
    return last_step(files.get("history.csv")) > last_step(local.read_bytes() if local.is_file() else None)


def finished(cell: Path) -> bool:
    """A cell whose ``metrics.json`` is complete and not being made again: no checkpoint or sittings
    beside it, and no curve written after it (a cell retrained for a new config or numerics
    version keeps its old ``metrics.json`` until the new one is written)."""
    metrics = read_json(cell / "metrics.json")
    if not (metrics and metrics.get("complete")):
        return False
    if (cell / "checkpoint.pt").exists() or (cell / "sittings.json").exists():
        return False
    history = cell / "history.csv"
    return not history.is_file() or history.stat().st_mtime_ns <= (cell / "metrics.json").stat().st_mtime_ns


def carried_files(sweep: Path) -> list[Path]:
    """What resumes ``sweep`` elsewhere: of each cell (a folder with a ``history.csv``,
    ``metrics.json`` or ``checkpoint.pt``), finished, its ``metrics.json``; unfinished, its files
    and its ``.hydra/`` but an older ``metrics.json`` (no wandb files, locks or temporaries)."""
    files = []
    for cell in sorted({p.parent for name in CELL_FILES for p in sweep.rglob(name)}):
        if finished(cell):
            files.append(cell / "metrics.json")
            continue
        files += [p for p in sorted(cell.rglob("*")) if p.is_file() and p.name not in SKIPPED_FILES
                  and p.relative_to(cell).as_posix() != "metrics.json"
                  and not p.name.endswith(".tmp") and not SKIPPED_DIRS & set(p.relative_to(cell).parts)]
    return files


def in_training(folder: Path) -> bool:
    """Whether a process holds ``folder``'s cell lock (``suite.runner.cell_lock``) now."""
    import fcntl

    if not (folder / ".lock").is_file():
        return False
    with open(folder / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def unfinished(files: list[Path]) -> bool:
    return any(p.name != "metrics.json" for p in files)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


LIMIT = 5_000_000  # bytes: no committed file is larger (tests/test_evidence.py)
TOTAL = 40_000_000  # bytes: the most one target carries in git at a time, in parts of LIMIT


def stored(name: str, carried: Path = CARRIED) -> list[Path]:
    """Every file of ``name``'s carried archive here, whole and parts alike."""
    return [p for p in [carried / f"{name}.tar.gz", *sorted(carried.glob(f"{name}.tar.gz.[0-9][0-9][0-9]"))]
            if p.is_file()]


def parts(name: str, carried: Path = CARRIED) -> list[Path]:
    """The files that hold ``name``'s carried archive: ``<name>.tar.gz``, or its parts in order."""
    files = stored(name, carried)
    whole = carried / f"{name}.tar.gz"
    if whole in files and len(files) > 1:  # a pack cut short, or a commit of half of one: which is newer is unknown
        raise SystemExit(f"error: {os.path.relpath(whole)} and its parts {', '.join(p.name for p in files[1:])} are "
                         "both there; keep the newer pack's files (git log results/inflight), remove the others")
    return files


def unpacked(name: str, carried: Path = CARRIED) -> dict[str, bytes] | None:
    """The files of ``name``'s carried archive (archive name -> bytes), each checked against the
    archive's ``MANIFEST.sha256`` where it has one; None where nothing is carried. An archive that
    does not read whole (a part missing, or parts of two packs) stops with one line."""
    files = parts(name, carried)
    if not files:
        return None
    data = b"".join(p.read_bytes() for p in files)
    where = ", ".join(os.path.relpath(p) for p in files)
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            blobs = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise SystemExit(f"error: {where} does not read as one archive ({e}; a part missing, or parts of "
                         f"two packs?); nothing unpacked") from None
    manifest = blobs.pop("MANIFEST.sha256", None)
    if manifest is not None:
        listed = {arc: digest for digest, _, arc in (line.partition("  ") for line in
                                                     manifest.decode(errors="replace").splitlines())}
        if wrong := sorted(set(listed) ^ set(blobs) | {a for a in blobs if listed.get(a) != sha256(blobs[a])}):
            raise SystemExit(f"error: {where}: {wrong[0]} does not match its MANIFEST.sha256 line; nothing unpacked")
    return blobs


def write_archive(name: str, data: bytes, carried: Path, limit: int) -> Path:
    """``data`` as ``<name>.tar.gz``, or as parts of at most ``limit`` bytes where it is larger;
    whatever was carried for ``name`` before is replaced. The first file's path."""
    carried.mkdir(parents=True, exist_ok=True)
    chunks = [data] if len(data) <= limit else [data[i : i + limit] for i in range(0, len(data), limit)]
    paths = ([carried / f"{name}.tar.gz"] if len(chunks) == 1
             else [carried / f"{name}.tar.gz.{i:03d}" for i in range(len(chunks))])
    for path, chunk in zip(paths, chunks, strict=True):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(chunk)
        tmp.replace(path)
    for old in stored(name, carried):
        if old not in paths:  # the earlier archive, whole or cut otherwise
            old.unlink()
    return paths[0]


def pack(name: str, runs: Path = RUNS, carried: Path = CARRIED, limit: int = LIMIT, total: int = TOTAL) -> Path | str:
    """Write ``<carried>/<name>.tar.gz`` (in parts of at most ``limit`` bytes where it is larger)
    from the sweeps ``begin`` recorded and return its (first) path, or return why nothing was
    written: no cell of them has begun, or all there was to carry was left out. A target whose
    cells are all finished is carried too (their metrics): one stopped between groups has cells
    still to start, which no folder names yet; ``drop`` removes the file once its evidence is written.
    Unfinished state over ``total`` bytes (a large model's checkpoints: the MNIST example
    encoder's are 21 MB a group) is left out with a warning, and only the finished cells are
    carried."""
    record = record_of(name, runs)
    if not record.is_file():
        raise SystemExit(f"error: {name} was not begun here (no {record}); begun: "
                         f"{', '.join(begun(runs)) or 'none'}; nothing written")
    files = [f for s in record.read_text().split() for f in carried_files(runs / s) if (runs / s).is_dir()]
    if training := sorted({f.parent for f in files if in_training(f.parent)}):
        raise SystemExit(f"error: {training[0]} is training now; stop its run first (SIGTERM or Ctrl-C saves "
                         f"its checkpoint), then pack again; {name}: nothing written")
    if not files:
        return "nothing to carry: no cell of its sweeps has begun here"
    blobs = {f.relative_to(runs).as_posix(): f.read_bytes() for f in files}
    packed = tar_gz(blobs)
    if len(packed) > total:  # checkpoints are weights and moments: they barely compress
        left = sorted({(p.parent.parent if p.parent.name == ".hydra" else p.parent).as_posix()
                       for p in map(Path, blobs) if p.name != "metrics.json"})
        print(f"warning: {name}'s unfinished state packs to {len(packed) / 1e6:.1f} MB, over the {total / 1e6:g} MB "
              f"a target may carry in git: left out, these cells start again at the next sitting: {', '.join(left)}",
              file=sys.stderr)
        blobs = {a: b for a, b in blobs.items() if Path(a).name == "metrics.json"}
        if not blobs:
            return "nothing carried: its unfinished state was left out, and no cell has finished"
        packed = tar_gz(blobs)
    return write_archive(name, packed, carried, limit)


def tar_gz(blobs: dict[str, bytes]) -> bytes:
    """``blobs`` (archive name -> bytes) as a .tar.gz, ``MANIFEST.sha256`` first."""
    manifest = "".join(f"{sha256(b)}  {arc}\n" for arc, b in blobs.items()).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for arc, data in [("MANIFEST.sha256", manifest), *blobs.items()]:
            info = tarfile.TarInfo(arc)
            info.size, info.mode = len(data), 0o644  # no owner, time or permissions of this machine
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def begun(runs: Path = RUNS) -> list[str]:
    folder = runs / ".inflight"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def saved_step(data: bytes, archive: Path, member: str) -> int:
    """The step a carried checkpoint was saved at, read as tensors and plain data only: a file from
    git that holds any other object (a pickle could run code as it loads) is refused in one line."""
    import torch

    try:
        return torch.load(io.BytesIO(data), weights_only=True).get("step", 0)
    except Exception as e:
        raise ConfigError(f"{archive}: {member} is not a checkpoint of tensors and plain data ({str(e).splitlines()[0]}); "
                          "refused unread: delete the carried file to start the target over") from None


def status(name: str, carried: Path = CARRIED) -> str | None:
    """What ``<carried>/<name>.tar.gz`` holds, in a line (a dry run says it: its cells' status is
    this machine's, before unpacking); None where nothing is carried."""
    blobs = unpacked(name, carried)
    if blobs is None:
        return None
    archive = carried / f"{name}.tar.gz"
    steps = [saved_step(data, archive, arc) for arc, data in blobs.items() if Path(arc).name == "checkpoint.pt"]
    done = sum(Path(arc).name == "metrics.json" for arc in blobs)
    at = f" (at step {', '.join(f'{s:,}' for s in sorted(steps))})" if steps else ""
    cut = f" (in {len(parts(name, carried))} parts)" if not archive.is_file() else ""
    return (f"{name}: {os.path.relpath(archive)}{cut} carries {done} finished cells and {len(steps)} groups' "
            f"checkpoints{at}; the target unpacks it and goes on from there")


def drop(name: str, runs: Path = RUNS, carried: Path = CARRIED) -> str:
    """Forget ``name``'s record and its carried state once every cell of its recorded sweeps is
    finished (its evidence is written then); what was done, in a line ("" where nothing was)."""
    record, files = record_of(name, runs), stored(name, carried)
    sweeps = record.read_text().split() if record.is_file() else []
    held = ", ".join(os.path.relpath(f) for f in files) or "its record"
    if unfinished([f for s in sweeps if (runs / s).is_dir() for f in carried_files(runs / s)]):
        return f"{name}: cells of its sweeps are unfinished (a SAMPLE ran part of them?); {held} kept"
    record.unlink(missing_ok=True)
    if not files:
        return ""
    for f in files:
        f.unlink()
    return f"{name}: its evidence is written; removed {held} (commit the removal)"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m suite.inflight", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["begin", "pack", "drop", "status"])
    p.add_argument("name", nargs="?", help="the target's evidence name (table1_paper_protocol1, ...)")
    p.add_argument("sweeps", type=Path, nargs="*", help="begin: the target's sweep folders (multirun/<sweep>)")
    p.add_argument("--runs", type=Path, default=RUNS)
    p.add_argument("--carried", type=Path, default=CARRIED)
    a = p.parse_args(argv)
    if a.action != "pack" and not a.name:
        p.error(f"{a.action} needs the target's name")
    if a.action == "begin":
        if not a.sweeps:
            p.error("begin needs the target's sweep folders")
        taken, kept = begin(a.name, a.sweeps, a.runs, a.carried)
        if taken or kept:
            kept_line = f", {kept} kept as they are here (finished here, or further along)" if kept else ""
            print(f"{a.name}: {taken} cells unpacked from {os.path.relpath(a.carried / a.name)}.tar.gz into "
                  f"{os.path.relpath(a.runs)}{kept_line}", file=sys.stderr)
    elif a.action == "status":
        from nalu.errors import exit_with

        try:
            line = status(a.name, a.carried)
        except ConfigError as e:
            exit_with(e)
        if line:
            print(line, file=sys.stderr)
    elif a.action == "drop":
        if line := drop(a.name, a.runs, a.carried):
            print(line, file=sys.stderr)
    else:
        names = [a.name] if a.name else begun(a.runs)
        for name in names:
            path = pack(name, a.runs, a.carried)
            if isinstance(path, Path):
                cut = parts(name, a.carried)
                size = sum(p.stat().st_size for p in cut) / 1e6
                path = f"wrote {path}{f' and {len(cut) - 1} more parts' if len(cut) > 1 else ''} ({size:.2f} MB; commit it)"
            print(f"{name}: {path}", file=sys.stderr)
        if not names:
            print(f"no target was begun here (none under {a.runs / '.inflight'}); nothing to carry",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
