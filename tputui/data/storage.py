"""Where profile bytes come from and where our caches go: local paths and gs:// URLs alike.

Everything the data layer does to the outside world goes through here: listing a logdir
(`list_profiles`), the size and mtime of one file (`stat`), reading one host file (`read`) and
the user cache root (`cache_root`). The gs:// side is `gcs.py` (its download cache lives under
our cache root). Discovery (`logdir.py`) and the frame cache (`cache.py`) sit on top of this.

Local listing follows symlinks but visits each real directory once, so a link back to a parent
(`ln -s . loop`) can neither hang it nor list a run twice: a directory reached both directly and
through a link is listed under its direct path.
"""
from __future__ import annotations

import mmap
import os
import stat as stat_mod

from tputui.data.cache_dir import cache_root
from tputui.data.runs import RIEGELI_SUFFIX, XPLANE_SUFFIX, HostFile, LogdirError

# A serialized protobuf message cannot exceed 2 GiB, so no XSpace written as .xplane.pb can.
MAX_XPLANE_PB = 2 << 30
PROFILE_SUFFIXES = (XPLANE_SUFFIX, RIEGELI_SUFFIX)
Listing = list[tuple[str, int, float]]  # (path or URL, size, mtime or GCS generation)
Buffer = bytes | mmap.mmap
_GZIP = b"\x1f\x8b"
_RIEGELI = b"\x83\xaf\x70\xd1"  # the start of every Riegeli file (its signature block header)


def _gcs():
    # Imported on first gs:// use: asyncio and the client cost ~25 ms that a local run never needs.
    from tputui.data import gcs

    return gcs


def gcs_cache_dir() -> str:
    """Where gs:// downloads are kept (one file per object generation)."""
    return os.path.join(cache_root(), "gcs")


def is_remote(path: str) -> bool:
    return path.startswith("gs://")


# --- list and stat ------------------------------------------------------------------------

def stat(path: str) -> tuple[int, float]:
    """(size, mtime) of one local file; a LogdirError line when it cannot be read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LogdirError(f"no such file or directory: {path}") from None
    except OSError as e:
        raise LogdirError(f"{path}: cannot read ({e.strerror or e})") from None
    return st.st_size, st.st_mtime


def list_profiles(root: str) -> Listing:
    """Every profile file under ROOT (a folder, one file or a gs:// URL), flat.

    An empty gs:// listing raises the reason (no bucket, no prefix, not a profile); an empty
    local listing is returned as is (the caller knows what it expected)."""
    if is_remote(root):
        gcs = _gcs()
        objects = gcs.list_profiles(root)
        if not objects:
            raise gcs.nothing_found(root)
        return [(o.url, o.size, float(o.generation)) for o in objects]
    if os.path.isfile(root):
        size, mtime = stat(root)
        return [(root, size, mtime)]
    return _walk_local(root)


def _walk_local(root: str) -> Listing:
    """Profile files under a local folder, following links, each real directory once."""
    out: Listing = []
    seen: set[tuple[int, int]] = set()
    links: list[str] = []  # followed only after every directly reachable folder is known

    def visit(top: str) -> None:
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue  # unreadable or vanished: as os.walk does, skip it
            subdirs = []
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        subdirs.append(e.path)
                    elif e.is_symlink() and e.is_dir():
                        links.append(e.path)
                    elif e.name.endswith(PROFILE_SUFFIXES):
                        fst = e.stat()
                        if stat_mod.S_ISREG(fst.st_mode):
                            out.append((e.path, fst.st_size, fst.st_mtime))
                except OSError:
                    continue  # a dangling link or a file removed while we list
            stack.extend(reversed(subdirs))  # depth first, in name order

    visit(root)
    while links:  # each link may lead to more links; `seen` ends every loop
        visit(links.pop(0))
    out.sort(key=lambda row: row[0])
    return out


# --- read ---------------------------------------------------------------------------------

def read(hf: HostFile, progress=None) -> Buffer:
    """The whole content of one host file, checked before it is read.

    Contract (the one read path every decoder uses):
      - returns a read-only buffer: an mmap for a local file (pages are read as the decoder
        touches them, so memory does not follow file size), bytes for a gs:// object;
      - a `.xplane.pb` over 2 GiB is refused from its size alone (such profiles are written as
        .xplane.riegeli), an empty file is refused, and the first bytes must be able to start
        the file's format; each refusal is one LogdirError line naming the file;
      - never writes anywhere but our cache (gs:// downloads).
    """
    _check_size(hf.path, hf.size, hf.format)
    data: Buffer
    if is_remote(hf.path):
        data = _gcs().read_bytes(hf, gcs_cache_dir(), progress=progress)
        _check_size(hf.path, len(data), hf.format)  # a gzip-encoded object's size was not known
    else:
        data = _map_local(hf.path, hf.format)
    _check_start(hf.path, data[:16], hf.format)
    return data


def check_listed(hf: HostFile) -> None:
    """The checks a listing allows without reading the file (its size); a LogdirError line."""
    _check_size(hf.path, hf.size, hf.format)


def _check_size(path: str, size: int, fmt: str) -> None:
    if size == 0:
        raise LogdirError(f"{path}: empty file (0 bytes; the capture wrote nothing)")
    if fmt == "pb" and size > MAX_XPLANE_PB:
        raise LogdirError(f"{path}: {size / (1 << 30):.1f} GiB is more than an .xplane.pb can hold (2 GiB); "
                          f"profiles that big are written as {RIEGELI_SUFFIX}")


def _map_local(path: str, fmt: str) -> Buffer:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            _check_size(path, size, fmt)  # again: the file may have changed since it was listed
            try:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # stays valid after the close
            except (OSError, ValueError):  # a file system that cannot map (some FUSE mounts): read it
                return f.read()
    except PermissionError:
        raise LogdirError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise LogdirError(f"{path}: is a directory, not a profile file") from None
    except FileNotFoundError:
        raise LogdirError(f"{path}: no longer exists (removed since the logdir was opened)") from None
    except (OSError, ValueError) as e:  # ValueError: mmap of something that is not a file
        raise LogdirError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None


def _check_start(path: str, head: bytes, fmt: str) -> None:
    """Refuse a file whose first bytes cannot start its format (names what it looks like)."""
    head = bytes(head)
    if fmt == "riegeli":
        if not head.startswith(_RIEGELI):
            raise LogdirError(f"{path}: not a Riegeli file (its first bytes are not a Riegeli signature)")
        return
    if head.startswith(_RIEGELI):
        raise LogdirError(f"{path}: a Riegeli file named {XPLANE_SUFFIX} (rename it to *{RIEGELI_SUFFIX})")
    if head.startswith(_GZIP):
        raise LogdirError(f"{path}: gzip-compressed (gunzip it first)")
    if not _can_start_message(head):
        why = "it starts with zero bytes (a sparse or damaged file)" if not head.strip(b"\0") else \
            "its first bytes cannot start a protobuf message"
        raise LogdirError(f"{path}: truncated or corrupt XSpace: {why}")


def _can_start_message(head: bytes) -> bool:
    """The first field key of a protobuf message: a varint with a field number >= 1 and a wire
    type protobuf knows (0-5). Everything after it is the decoder's job."""
    key = shift = 0
    for b in head[:10]:
        key |= (b & 0x7F) << shift
        if b < 0x80:
            return 1 <= key >> 3 < 1 << 29 and key & 7 <= 5
        shift += 7
    return len(head) < 10 and len(head) > 0  # a short file: let the decoder say what is wrong
