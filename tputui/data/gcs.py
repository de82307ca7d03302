"""The gs:// side of `storage`, through gcsfs: one flat listing, parallel ranged downloads.

A listing asks GCS for profile files only, flat (no delimiter, matchGlob; pages of up to 1000);
`logdir` groups it with the same code as local listings, the object generation standing in for
the mtime. A read fetches only the requested host file, in parallel byte ranges pinned to that
generation, into the download cache folder `storage` passes in
(`<cache root>/gcs/<bucket>/<object hash>/<generation>`), so a second
open downloads nothing. Nothing is written to the bucket except by `write_bytes` (capture), and
every failure becomes one `LogdirError` line.

Credentials: the usual chain (application default credentials, GOOGLE_APPLICATION_CREDENTIALS,
the metadata server); with STORAGE_EMULATOR_HOST set we talk to the emulator anonymously.
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import hashlib
import logging
import os
import posixpath
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from tputui.data.cache_folder import private_dir
from tputui.data.files import atomic_open
from tputui.data.runs import EXPECTED, RIEGELI_SUFFIX, XPLANE_SUFFIX, HostFile, LogdirError

NEEDS_EXTRA = "gs:// needs the gcs extra: pip install 'tputui[gcs]'"
NO_CREDENTIALS = ("no Google Cloud credentials (run `gcloud auth application-default login`, "
                  "set GOOGLE_APPLICATION_CREDENTIALS, or run on a GCP VM)")

PARALLEL = 8  # ranged GETs in flight per file
# A part is size/PARALLEL, clamped to [1 MiB, 16 MiB]: files up to 128 MiB go in one wave of
# requests (per-request latency, not bandwidth, dominates GCS reads of this size).
MIN_PART = 1 << 20
MAX_PART = 16 << 20
PROGRESS_EVERY = 0.25  # seconds between progress messages
CONNECT_TIMEOUT = 20.0  # seconds; gcsfs retries failed requests with back-off on top of this
READ_TIMEOUT = 120.0


@dataclass(frozen=True)
class GcsObject:
    """What a listing says about one object; `generation` is kept exact (a float is not)."""

    bucket: str
    name: str
    size: int
    generation: str
    md5: str | None = None  # base64, as GCS reports it; absent for composite objects
    content_encoding: str | None = None

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.name}"

    @property
    def gzipped(self) -> bool:
        """Stored gzip-compressed: GCS serves it whole and decompressed, so no ranges or sizes."""
        return (self.content_encoding or "").lower() == "gzip"


# Objects seen by the last listings, by URL: read_bytes needs the exact generation and md5.
_seen: dict[str, GcsObject] = {}
_seen_lock = threading.Lock()
_fs_cache: dict[tuple, object] = {}
_fs_lock = threading.Lock()


def split_url(url: str) -> tuple[str, str]:
    """gs://bucket/some/prefix -> ("bucket", "some/prefix")."""
    if not url.startswith("gs://"):
        raise LogdirError(f"{url}: not a gs:// URL")
    bucket, _, key = url[len("gs://"):].partition("/")
    if not bucket:
        raise LogdirError(f"{url}: a gs:// URL needs a bucket (gs://BUCKET/PATH)")
    return bucket, key.strip("/")


# --- the client ---------------------------------------------------------------------------

def _emulator() -> str:
    host = os.environ.get("STORAGE_EMULATOR_HOST", "")
    return "" if host in ("", "default") else host


def _quiet_library_logs() -> None:
    """gcsfs logs every failed request with its traceback; our one-line error says it instead.

    With no handler anywhere, Python prints such records to stderr; a NullHandler stops that and
    still lets records reach any handler the embedding program configured on the root logger.
    """
    for name in ("gcsfs", "fsspec", "google.auth"):
        log = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
            log.addHandler(logging.NullHandler())


def filesystem():
    """One gcsfs client per process (per emulator / credentials file), made on first use."""
    try:
        import aiohttp

        # The plain JSON-API client: gcsfs's default class also asks the Storage Control API
        # for each bucket's layout, which only zonal/HNS writes need (and emulators lack).
        from gcsfs.core import GCSFileSystem
    except ImportError:
        raise LogdirError(NEEDS_EXTRA) from None
    _quiet_library_logs()
    creds_file = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "")
    key = (_emulator(), creds_file)
    with _fs_lock:
        fs = _fs_cache.get(key)
        if fs is None:
            if creds_file and not _emulator() and not os.path.isfile(creds_file):
                raise LogdirError(f"GOOGLE_APPLICATION_CREDENTIALS={creds_file}: no such file")
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT)
            fs = GCSFileSystem(
                token="anon" if _emulator() else None,  # None: ADC, then the metadata server
                skip_instance_cache=True, use_listings_cache=False,
                session_kwargs={"timeout": timeout})
            _fs_cache[key] = fs
    return fs


def _endpoint(fs) -> str:
    try:
        return urlsplit(fs._location).netloc or "storage.googleapis.com"
    except Exception:
        return _emulator() or "storage.googleapis.com"


def _anonymous(fs) -> bool:
    creds = getattr(fs, "credentials", None)
    return creds is None or getattr(creds, "credentials", None) is None


def _reason(e: BaseException) -> str:
    """GCS's own message for an error, on one short line."""
    text = getattr(e, "message", None) or str(e)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if lines and lines[0].startswith(("Forbidden:", "Bad Request:")):
        lines = lines[1:] or [lines[0]]  # gcsfs puts the request path first, GCS's words after
    out = " ".join(lines) or type(e).__name__
    return out if len(out) <= 200 else out[:197] + "..."


def describe_error(url: str, e: BaseException, fs=None, missing: str = "object") -> str:
    """The one line a user sees for an exception raised while talking to GCS about URL."""
    import aiohttp
    import google.auth.exceptions as gauth
    import requests
    from fsspec.exceptions import FSTimeoutError
    from gcsfs.retry import ChecksumError, HttpError

    where = _endpoint(fs) if fs is not None else (_emulator() or "storage.googleapis.com")
    code = getattr(e, "code", None)
    if isinstance(e, FileNotFoundError):
        if missing == "bucket":
            return f"{url}: bucket {split_url(url)[0]!r} not found"
        return f"{url}: object not found (deleted or replaced since it was listed; open the logdir again)"
    if isinstance(e, FileExistsError):
        return f"{url}: already exists in the bucket (not overwriting it)"
    if isinstance(e, PermissionError) or (type(e) is OSError and str(e).startswith("Forbidden")) or code == 403:
        return f"{url}: permission denied ({_reason(e)})"
    if code == 401 or isinstance(e, gauth.DefaultCredentialsError):
        if isinstance(e, gauth.DefaultCredentialsError) or (fs is not None and _anonymous(fs)):
            return f"{url}: {NO_CREDENTIALS}"
        return f"{url}: credentials rejected ({_reason(e)})"
    if isinstance(e, gauth.RefreshError):
        return f"{url}: cannot refresh Google Cloud credentials ({_reason(e)})"
    if isinstance(e, (aiohttp.ClientError, asyncio.TimeoutError, TimeoutError, FSTimeoutError,
                      requests.exceptions.RequestException, gauth.TransportError, ConnectionError)):
        return f"{url}: network failure talking to {where} ({_reason(e) if str(e) else type(e).__name__})"
    if isinstance(e, ChecksumError):
        return f"{url}: download corrupted (checksum mismatch); try again"
    if isinstance(e, ValueError) and str(e).startswith("Bad Request"):
        return f"{url}: rejected by GCS ({_reason(e)})"
    if isinstance(e, HttpError):
        return f"{url}: GCS error {code} ({_reason(e)})"
    return f"{url}: GCS request failed ({type(e).__name__}: {_reason(e)})"


@contextmanager
def _gcs_errors(url: str, fs=None, missing: str = "object"):
    try:
        yield
    except LogdirError:
        raise
    except Exception as e:  # every storage failure is one line for the user, never a traceback
        raise LogdirError(describe_error(url, e, fs, missing)) from None


# --- discovery ----------------------------------------------------------------------------

def _object(bucket: str, info: dict) -> GcsObject:
    return GcsObject(bucket=bucket, name=info["name"], size=int(info.get("size") or 0),
                     generation=str(info.get("generation") or "0"), md5=info.get("md5Hash"),
                     content_encoding=info.get("contentEncoding"))


# Only profile files come back from a listing: a job's prefix often holds thousands of checkpoint
# shards and event files, which GCS then filters out server-side instead of paging them to us.
PROFILE_GLOB = "**.xplane.{pb,riegeli}"
LIST_FIELDS = "items(name,size,generation,md5Hash,contentEncoding),nextPageToken"
PAGE = 1000  # GCS's largest page


def _list(fs, bucket: str, prefix: str | None, glob: str | None = PROFILE_GLOB,
          limit: int | None = None) -> list[dict]:
    """objects.list, flat (no delimiter), following pages; `limit` stops after one short page."""
    items: list[dict] = []
    token = None
    while True:
        page = fs.call("GET", "b/{}/o", bucket, json_out=True, prefix=prefix or None, matchGlob=glob,
                       fields=LIST_FIELDS, maxResults=limit or PAGE, pageToken=token)
        items += page.get("items") or []
        token = page.get("nextPageToken")
        if not token or limit:
            return items


def _remember(objects: list[GcsObject]) -> list[GcsObject]:
    with _seen_lock:
        for o in objects:
            _seen[o.url] = o
    return objects


def list_profiles(url: str) -> list[GcsObject]:
    """The profile files under URL (or URL itself when it names one), in one flat listing."""
    bucket, key = split_url(url)
    fs = filesystem()
    where = url.rstrip("/")
    with _gcs_errors(where, fs, missing="bucket"):
        if key.endswith((XPLANE_SUFFIX, RIEGELI_SUFFIX)):  # probably one file: one metadata GET
            try:
                return _remember([_object(bucket, fs.call("GET", "b/{}/o/{}", bucket, key, json_out=True))])
            except FileNotFoundError:
                pass  # not an object (or no bucket): list it as a prefix, which says which
        items = _list(fs, bucket, f"{key}/" if key else None)
    return _remember([_object(bucket, info) for info in items])


def nothing_found(url: str) -> LogdirError:
    """Why a listing of URL found no profiles (costs a request or two, on this error path only)."""
    bucket, key = split_url(url)
    root = f"gs://{bucket}/{key}" if key else f"gs://{bucket}"
    fs = filesystem()
    with _gcs_errors(root, fs, missing="bucket"):
        first = _list(fs, bucket, key, glob=None, limit=1) if key else []
        if first and first[0]["name"] == key:  # the exact name sorts before anything longer
            return LogdirError(f"{root}: not an XProf profile (expected a <host>{XPLANE_SUFFIX} file)")
        if _list(fs, bucket, f"{key}/" if key else None, glob=None, limit=1):
            return LogdirError(f"no profiles under {root}: expected {EXPECTED}")
    if key:
        return LogdirError(f"{root}: no such prefix (no objects under it in bucket {bucket!r})")
    return LogdirError(f"{root}: the bucket is empty")


# --- reads --------------------------------------------------------------------------------

def cache_path(obj: GcsObject, folder: str) -> str:
    """Where a downloaded object lives in the download cache `folder`: bucket / hash of the name /
    generation (the folder comes from `storage`, which owns the cache root)."""
    digest = hashlib.sha256(obj.name.encode()).hexdigest()[:32]
    return os.path.join(folder, obj.bucket, digest, obj.generation)


def _current_object(hf: HostFile, fs) -> GcsObject:
    with _seen_lock:
        obj = _seen.get(hf.path)
    if obj is not None and obj.size == hf.size and float(obj.generation) == hf.mtime:
        return obj
    bucket, key = split_url(hf.path)  # not listed by this process: one metadata GET
    with _gcs_errors(hf.path, fs):  # (fs.info would also list the name as a folder)
        info = fs.call("GET", "b/{}/o/{}", bucket, key, json_out=True)
    obj = _object(bucket, info)
    with _seen_lock:
        _seen[obj.url] = obj
    return obj


_CRC = ".crc32"  # beside each download: "<size> <CRC-32>", written after it


def _read_cached(obj: GcsObject, folder: str) -> bytes | None:
    """The cached download, when its size and CRC-32 are the ones recorded when it was stored
    (read whole anyway: checked in full); else None, and a damaged copy is removed."""
    path = cache_path(obj, folder)
    try:
        with open(path, "rb") as f:
            data = f.read()
        with open(path + _CRC, encoding="ascii") as f:
            size, crc = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        data, size, crc = b"", -1, -1
    if len(data) == size and zlib.crc32(data) == crc and (obj.gzipped or len(data) == obj.size):
        return data
    for p in (path, path + _CRC):
        with contextlib.suppress(OSError):
            os.unlink(p)
    return None


def _store(obj: GcsObject, data: bytes, folder: str) -> None:
    """Write the download into the cache atomically (then its size and CRC-32) and drop older
    generations of the object."""
    path = cache_path(obj, folder)
    folder = os.path.dirname(path)
    try:
        private_dir(folder)
        with atomic_open(path) as f:
            f.write(data)
        with atomic_open(path + _CRC, "w", encoding="ascii") as f:
            f.write(f"{len(data)} {zlib.crc32(data)}")
        for name in os.listdir(folder):
            if name not in (obj.generation, obj.generation + _CRC) and ".part-" not in name:
                os.unlink(os.path.join(folder, name))
    except OSError:  # a read-only or full cache dir must not stop the user from reading
        pass


def parts(size: int) -> list[tuple[int, int]]:
    """[start, end) byte ranges for the parallel download of `size` bytes."""
    step = min(max(-(-size // PARALLEL), MIN_PART), MAX_PART)
    return [(s, min(s + step, size)) for s in range(0, size, step)]


async def _fetch_parts(fs, obj: GcsObject, buf: bytearray, done: list[int]) -> None:
    path = f"{obj.bucket}/{obj.name}"
    gate = asyncio.Semaphore(PARALLEL)

    async def one(start: int, end: int) -> None:
        async with gate:
            data = await fs._cat_file(path, start=start, end=end, generation=obj.generation)
        if len(data) != end - start:
            raise ConnectionError(f"short read: bytes {start}-{end} gave {len(data)}")
        buf[start:end] = data
        done[0] += len(data)

    tasks = [asyncio.ensure_future(one(s, e)) for s, e in parts(obj.size)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _fetch_whole(fs, obj: GcsObject, buf: bytearray, done: list[int]) -> None:
    data = await fs._cat_file(f"{obj.bucket}/{obj.name}", generation=obj.generation)
    buf[:] = data
    done[0] = len(data)


def _say_progress(progress, label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.monotonic() - started, 1e-6)
    progress(f"downloading {label}: {done / 1e6:.1f} / {total / 1e6:.1f} MB ({rate / 1e6:.1f} MB/s)")


def download(fs, obj: GcsObject, progress=None, label: str | None = None) -> bytes:
    """The object's bytes by parallel ranged GETs, reporting bytes done / total and rate."""
    label = label or posixpath.basename(obj.name)
    buf = bytearray(obj.size)
    done = [0]
    whole = obj.gzipped
    started = time.monotonic()
    job = _fetch_whole(fs, obj, buf, done) if whole else _fetch_parts(fs, obj, buf, done)
    future = asyncio.run_coroutine_threadsafe(job, fs.loop)
    try:
        # Progress is reported from the caller's thread, never from the I/O loop.
        while not concurrent.futures.wait([future], timeout=PROGRESS_EVERY).done:
            if progress:
                _say_progress(progress, label, done[0], obj.size, started)
        future.result()
    except BaseException:
        future.cancel()
        raise
    if progress:
        _say_progress(progress, label, len(buf), len(buf), started)
    data = bytes(buf)
    if obj.md5 and not whole and base64.b64encode(hashlib.md5(data).digest()).decode() != obj.md5:
        from gcsfs.retry import ChecksumError

        raise ChecksumError(obj.url)
    return data


def read_bytes(hf: HostFile, folder: str, progress=None) -> bytes:
    """One host file's bytes: from the download cache `folder`, else downloaded (and cached)."""
    fs = filesystem()
    obj = _current_object(hf, fs)
    data = _read_cached(obj, folder)
    if data is not None:
        return data
    with _gcs_errors(hf.path, fs):
        data = download(fs, obj, progress, label=hf.host)
    _store(obj, data, folder)
    return data


# --- writes (capture only) ----------------------------------------------------------------

def write_bytes(url: str, data: bytes) -> None:
    """Create one new object (a captured host file); never overwrites an existing object."""
    bucket, key = split_url(url)
    if not key:
        raise LogdirError(f"{url}: needs an object path inside the bucket")
    fs = filesystem()
    with _gcs_errors(url, fs, missing="bucket"):
        fs.pipe_file(f"{bucket}/{key}", data, mode="create")
