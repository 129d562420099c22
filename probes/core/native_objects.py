"""numba's native loops kept as object code, loaded later by llvmlite without numba.

Why: a loop loaded from numba's own cache waits for numba's import and its
CPU target (about 1 s of CPU on the machines measured): every IOPS, warm-up
and ICMP pane waited for it before its first number (issue 28). The same
machine code, emitted once by numba as an object file (``probetop compile``),
is loaded by llvmlite's MCJIT in milliseconds with numpy and llvmlite only.

Contract:
- ``build(name, dispatcher, sources)`` (numba imported; ``probetop compile``):
  compiles ``dispatcher``'s Python function afresh (numba's cache gives no
  object code back) for its one compiled signature, keeps its native
  function (numba's calling convention: a status, a return slot, each array
  passed as its fields) and what it calls, and writes ``<name>-<paths hash>.o``
  and ``.json`` into the per-user cache (``native_cache``). Raises
  ``ValueError`` when an argument is not a C-ordered array, an integer or a
  boolean, or the function calls numba's runtime beyond its allocation
  functions (``_RENAMED``: renamed to this module's own, malloc-based, so
  they never meet numba's allocator). What else it calls (libc; libpython,
  on error paths numba compiled in) must be in the process at load.
- ``load(name, sources)`` (no numba): the loop as a ``Loop``, or None when
  there is none, or it was built from other sources (sha256 of each file in
  ``sources``, pinned by ``pin_sources`` when the family bound its
  constants), on another CPU (name, features) or triple, its ``.o`` is not
  the one its ``.json`` records (sha256, size), or one of its
  symbols is not in this process: the caller then takes numba's loop, the
  same code compiled by numba.
- The install's kept loops (``shared_dir()``: ``<sys.prefix>/share/probetop/
  objects``) serve every user of the install whose own cache has none (a
  service account, a colleague: their first run compiled for a minute). It
  is written by ``publish()`` (``probetop compile`` run by the install's
  owner) and read only when it, its parents up to ``share`` and each file
  are owned by root, this user or the owner of this code, and writable by
  no one else: whoever could change them could change the code run anyway.
  ``PROBETOP_SHARED_OBJECTS=off`` ignores it (the tests of numba's path).
- ``Loop(*args)`` checks every argument as numba's dispatcher types it
  (integers, booleans; arrays by dtype, dimensions, C order, writeable) and
  calls the code through ctypes, which releases the interpreter lock as
  numba's ``nogil`` does. ``NativeLoopError`` when the loop returned an error
  status (the loops here report errors in their arrays, never by raising).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import json
import os
import stat
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probetop.probes.core import native_cache

#: numba versions (major, minor) whose MemInfo layout and calling convention
#: ``_NRT_IR`` and ``build`` were checked against (tests/core/test_native_objects.py
#: runs the kept loops against numba's); another numba keeps its own cache only.
_NUMBA_CHECKED = ((0, 58), (0, 68))
#: numba's status codes (numba/core/callconv.py): ok, and ok returning None.
_OK = (0, -2)
#: numba's allocation functions the loops call, renamed in the object to
#: this module's own (``_NRT_IR``), with the LLVM type each must have.
_RENAMED = {
    "NRT_MemInfo_alloc_aligned": ("probetop_nrt_alloc_aligned", "ptr (i64, i32)"),
    "NRT_MemInfo_alloc": ("probetop_nrt_alloc", "ptr (i64)"),
    "NRT_MemInfo_call_dtor": ("probetop_nrt_call_dtor", "void (ptr)"),
    "NRT_Allocate": ("probetop_nrt_allocate", "ptr (i64)"),
    "NRT_Free": ("probetop_nrt_free", "void (ptr)"),
}
# numba's MemInfo (numba/core/runtime/nrt.cpp): refct, dtor, dtor_info, data,
# size, external_allocator. numba's inlined code reads the data pointer (field
# 3) and counts references in field 0; a count down to 0 calls call_dtor. Here
# the meminfo and its data are one malloc'd block, freed at once.
_NRT_IR = r"""
declare ptr @malloc(i64)
declare void @free(ptr)

define ptr @probetop_nrt_alloc_aligned(i64 %size, i32 %align) {
entry:
  %a0 = zext i32 %align to i64
  %small = icmp ult i64 %a0, 16
  %a = select i1 %small, i64 16, i64 %a0
  %head = add i64 %size, 48
  %total = add i64 %head, %a
  %mi = call ptr @malloc(i64 %total)
  %none = icmp eq ptr %mi, null
  br i1 %none, label %fail, label %ok
fail:
  ret ptr null
ok:
  %base = ptrtoint ptr %mi to i64
  %d0 = add i64 %base, 48
  %am1 = sub i64 %a, 1
  %d1 = add i64 %d0, %am1
  %mask = xor i64 %am1, -1
  %d = and i64 %d1, %mask
  %data = inttoptr i64 %d to ptr
  store i64 1, ptr %mi
  %f1 = getelementptr i64, ptr %mi, i64 1
  store ptr null, ptr %f1
  %f2 = getelementptr i64, ptr %mi, i64 2
  store ptr null, ptr %f2
  %f3 = getelementptr i64, ptr %mi, i64 3
  store ptr %data, ptr %f3
  %f4 = getelementptr i64, ptr %mi, i64 4
  store i64 %size, ptr %f4
  %f5 = getelementptr i64, ptr %mi, i64 5
  store ptr null, ptr %f5
  ret ptr %mi
}

define ptr @probetop_nrt_alloc(i64 %size) {
entry:
  %mi = call ptr @probetop_nrt_alloc_aligned(i64 %size, i32 16)
  ret ptr %mi
}

define ptr @probetop_nrt_allocate(i64 %size) {
entry:
  %p = call ptr @malloc(i64 %size)
  ret ptr %p
}

define void @probetop_nrt_free(ptr %p) {
entry:
  call void @free(ptr %p)
  ret void
}

define void @probetop_nrt_call_dtor(ptr %mi) {
entry:
  call void @free(ptr %mi)
  ret void
}
"""


class NativeLoopError(RuntimeError):
    """A kept loop returned an error status (numba would have raised)."""


@dataclass(frozen=True, slots=True)
class _Arg:
    """One Python argument: ``kind`` "int", "bool" or "array" (dtype, ndim)."""

    kind: str
    dtype: str = ""
    ndim: int = 0


def _cache_dir() -> str | None:
    root = native_cache.configure()
    if root is None:
        return None
    path = os.path.join(root, "objects")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _base(where: str, name: str, sources: Sequence[str]) -> str:
    """``<where>/<name>-<hash of the sources' paths>``: each source tree keeps
    its own (as numba's cache is per source path), so two checkouts used by
    one user do not overwrite each other's at every run."""
    paths = "\0".join(os.path.abspath(p) for p in sources)
    return os.path.join(where, f"{name}-{hashlib.sha256(paths.encode()).hexdigest()[:16]}")


_pinned: dict[tuple[str, ...], str] = {}
_pinned_lock = threading.Lock()


def pin_sources(sources: Sequence[str]) -> str:
    """The sha256 of ``sources`` as they were when first asked in this
    process. A family calls it when it imports the modules whose constants
    the loop was compiled with (``loopstate``, ``workers``), so a ``git pull``
    or an upgrade that lands later (during a 30 s compile, or under a
    dashboard that runs for days) can neither keep the old code under the new
    sources' digest nor load new code into a process that holds the old
    layout."""
    key = tuple(os.path.abspath(p) for p in sources)
    with _pinned_lock:
        if key not in _pinned:
            h = hashlib.sha256()
            for path in key:
                with open(path, "rb") as f:
                    h.update(f.read())
                h.update(b"\0")
            _pinned[key] = h.hexdigest()
        return _pinned[key]


_llvm_lock = threading.Lock()
_llvm_ready = False


def _llvm() -> Any:
    """llvmlite's binding, its native target set up once."""
    global _llvm_ready
    import llvmlite.binding as llvm

    with _llvm_lock:
        if not _llvm_ready:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            llvm.initialize_native_asmparser()
            _llvm_ready = True
    return llvm


def _machine(llvm: Any) -> dict[str, str]:
    """What the object code was built for: it runs only where all match."""
    return {
        "triple": llvm.get_process_triple(),
        "cpu": llvm.get_host_cpu_name(),
        "features": llvm.get_host_cpu_features().flatten(),
    }


# -- build (numba) ----------------------------------------------------------------


def _arg_of(t: Any) -> tuple[_Arg, list[str]]:
    """The Python argument's kind and numba's flattened LLVM types for it."""
    from numba import types

    if isinstance(t, types.Array):
        if t.layout != "C" or not t.mutable or not t.aligned:
            raise ValueError(f"argument type {t}: only C-ordered writeable arrays are kept")
        fields = ["ptr", "ptr", "i64", "i64", "ptr"] + ["i64"] * (2 * t.ndim)
        return _Arg("array", str(t.dtype), t.ndim), fields
    if isinstance(t, types.Boolean):
        return _Arg("bool"), ["i8"]
    if t == types.int64:
        return _Arg("int"), ["i64"]
    raise ValueError(f"argument type {t}: not kept as object code")


def build(name: str, dispatcher: Any, sources: Sequence[str]) -> None:
    """Keep ``dispatcher``'s one compiled signature as object code (module docstring)."""
    import numba
    from numba import types

    where = _cache_dir()
    if where is None:
        return
    version = tuple(int(x) for x in numba.__version__.split(".")[:2])
    if not _NUMBA_CHECKED[0] <= version <= _NUMBA_CHECKED[1]:
        # The object carries numba's inlined MemInfo code, which _NRT_IR's
        # layout must match: keep nothing for a numba that was not checked.
        raise ValueError(f"{name}: numba {numba.__version__} not checked for kept loops")
    if len(dispatcher.signatures) != 1:
        raise ValueError(f"{name}: {len(dispatcher.signatures)} signatures compiled, not one")
    sig = dispatcher.nopython_signatures[0]
    options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = numba.njit(**options)(dispatcher.py_func)
    fresh.compile(sig.args)
    cres = fresh.overloads[sig.args]
    entry = cres.fndesc.llvm_func_name
    args, flat = [], ["ptr", "ptr"]  # the return slot, the exception slot
    for t in sig.args:
        arg, fields = _arg_of(t)
        args.append(arg)
        flat += fields
    if sig.return_type == types.none:
        returns = "none"
    elif sig.return_type == types.int64:
        returns = "int"
    else:
        raise ValueError(f"{name}: return type {sig.return_type} not kept")
    llvm = _llvm()
    lib = cres.library
    module = llvm.parse_bitcode(lib._final_module.as_bitcode())
    fn = module.get_function(entry)
    got = [str(a.type) for a in fn.arguments]
    if got != flat:  # numba's convention moved: keep nothing rather than guess
        raise ValueError(f"{name}: native arguments {got} are not the expected {flat}")
    for g in module.functions:  # only the entry stays visible; the rest is dropped if unused
        if not g.is_declaration and g.name != entry:
            g.linkage = "internal"
    for v in module.global_variables:
        if not v.is_declaration:
            v.linkage = "internal"
    tm = lib._codegen._tm
    passes = llvm.ModulePassManager()
    passes.add_global_dead_code_eliminate_pass()
    passes.add_strip_dead_prototype_pass()
    passes.run(module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(0)))
    for g in module.functions:
        if g.is_declaration and not g.name.startswith("llvm."):
            if g.name in _RENAMED:
                renamed, wanted = _RENAMED[g.name]
                if str(g.global_value_type) != wanted:
                    raise ValueError(f"{name}: {g.name} is {g.global_value_type}, not {wanted}")
                g.name = renamed
            elif g.name.startswith(("NRT_", "numba_")):
                raise ValueError(f"{name}: the loop calls {g.name} (numba's runtime)")
    code = tm.emit_object(module)
    # What the object calls, read from the object itself: the IR's
    # declarations miss what the code generator adds (an intrinsic lowered
    # to libm's log10 or libc's memset), which the check at load must see.
    needs = undefined_symbols(code)
    runtime = sorted(n for n in needs if n.startswith(("NRT_", "numba_")))
    if runtime:
        raise ValueError(f"{name}: the loop calls {', '.join(runtime)} (numba's runtime)")
    meta = {
        "entry": entry,
        "args": [[a.kind, a.dtype, a.ndim] for a in args],
        "returns": returns,
        "needs": needs,
        "sources": pin_sources(sources),
        "paths": [os.path.abspath(p) for p in sources],
        "machine": _machine(llvm),
        # The object's own digest: a .o cut short by a crash, or from another
        # build than its .json (two compiles at once), is never handed to
        # the JIT (a malformed object crashed the process there).
        "object": {"sha256": hashlib.sha256(code).hexdigest(), "size": len(code)},
    }
    base = _base(where, name, sources)
    files = []
    for suffix, data in ((".o", code), (".json", json.dumps(meta).encode())):
        tmp = f"{base}{suffix}.{os.getpid()}.tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        files.append((tmp, base + suffix))
    # The pair replaced under the base's lock: a process loading meanwhile
    # (a run during a compile, two compiles at once) reads both old or both new.
    fd = native_cache.lock_base(base, fcntl.LOCK_EX)
    try:
        for tmp, final in files:
            os.replace(tmp, final)
    finally:
        os.close(fd)


_ELF_HEAD = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF_SECTION = struct.Struct("<IIQQQQIIQQ")
_ELF_SYMBOL = struct.Struct("<IBBHQQ")
#: Resolved by the loader itself (RuntimeDyld), not looked up in the process.
_LOADER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})


def undefined_symbols(code: bytes) -> list[str]:
    """The symbols an ELF64 little-endian relocatable object (``code``) needs
    from elsewhere: its symbol table's undefined global and weak entries.
    ``ValueError`` for anything else (not kept)."""
    try:
        head = _ELF_HEAD.unpack_from(code, 0)
        if head[0][:4] != b"\x7fELF" or head[0][4] != 2 or head[0][5] != 1:
            raise ValueError("not a 64-bit little-endian ELF object")
        shoff, shentsize, shnum = head[6], head[11], head[12]
        sections = [_ELF_SECTION.unpack_from(code, shoff + i * shentsize) for i in range(shnum)]
        out: set[str] = set()
        for sec in sections:
            if sec[1] != 2:  # SHT_SYMTAB
                continue
            strtab = sections[sec[6]]
            strings = code[strtab[4] : strtab[4] + strtab[5]]
            for off in range(sec[4], sec[4] + sec[5], sec[9] or _ELF_SYMBOL.size):
                st_name, st_info, _, st_shndx, _, _ = _ELF_SYMBOL.unpack_from(code, off)
                if st_shndx != 0 or st_name == 0 or st_info >> 4 not in (1, 2):
                    continue
                end = strings.index(b"\0", st_name)
                out.add(strings[st_name:end].decode())
    except (struct.error, IndexError) as exc:
        raise ValueError(f"unreadable object file ({exc})") from None
    return sorted(out - _LOADER_SYMBOLS)


# -- load (no numba) --------------------------------------------------------------

_engines: list[Any] = []  # each loaded object's engine: it holds the code, kept for good
_held: list[int] = []  # each read object's .json, locked shared for our life (prune)
_stubs_lock = threading.Lock()
_stubs_ready = False


def _add_stubs(llvm: Any) -> None:
    """This module's allocation pair (``_NRT_IR``), compiled once per process."""
    global _stubs_ready
    with _stubs_lock:
        if _stubs_ready:
            return
        tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()
        module = llvm.parse_assembly(_NRT_IR)
        module.verify()
        engine = llvm.create_mcjit_compiler(module, tm)
        engine.finalize_object()
        for name, _ in _RENAMED.values():
            llvm.add_symbol(name, engine.get_function_address(name))
        _engines.append(engine)
        _stubs_ready = True


_CTYPES = {"int": ctypes.c_int64, "bool": ctypes.c_bool}


class Loop:
    """A kept loop, callable like numba's dispatcher (module docstring)."""

    def __init__(self, name: str, address: int, meta: dict[str, Any]) -> None:
        import numpy as np

        self.name = name
        self._args = [_Arg(k, d, n) for k, d, n in meta["args"]]
        self._dtypes = [np.dtype(a.dtype) if a.kind == "array" else None for a in self._args]
        self._returns = meta["returns"]
        argtypes: list[Any] = [ctypes.c_void_p, ctypes.c_void_p]
        for a in self._args:
            if a.kind == "array":
                argtypes += [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
                argtypes += [ctypes.c_int64] * (2 * a.ndim)
            else:
                argtypes.append(_CTYPES[a.kind])
        # CFUNCTYPE: the interpreter lock is released for the call (numba's nogil).
        self._fn = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)

    def __call__(self, *values: Any) -> Any:
        if len(values) != len(self._args):
            raise TypeError(
                f"{self.name}() takes {len(self._args)} arguments ({len(values)} given)"
            )
        flat: list[Any] = []
        for i, (a, v) in enumerate(zip(self._args, values, strict=True)):
            if a.kind == "array":
                if (
                    getattr(v, "dtype", None) != self._dtypes[i]
                    or v.ndim != a.ndim
                    or not v.flags.c_contiguous
                    or not v.flags.writeable
                ):
                    raise TypeError(
                        f"{self.name}() argument {i}: a writeable C-ordered {a.ndim}-d "
                        f"{a.dtype} array, not {getattr(v, 'dtype', type(v).__name__)}"
                    )
                flat += [None, None, v.size, v.itemsize, v.ctypes.data, *v.shape, *v.strides]
            elif a.kind == "bool":
                flat.append(bool(v))
            else:
                flat.append(int(v))
        result = ctypes.c_int64(0)
        excinfo = ctypes.c_void_p(None)
        status = self._fn(ctypes.byref(result), ctypes.byref(excinfo), *flat)
        if status not in _OK:
            raise NativeLoopError(f"the native loop {self.name} failed (status {status})")
        return None if self._returns == "none" else result.value


def load(name: str, sources: Sequence[str]) -> Loop | None:
    """The kept loop ``name``, or None (module docstring): this user's own,
    else the install's. Never raises for a missing, stale or foreign object:
    the caller has numba's loop."""
    where = _cache_dir()
    loop = _load_own(where, name, sources) if where is not None else None
    return loop if loop is not None else _load_shared(name, sources)


def _read_pair(base: str) -> tuple[bytes, bytes, int]:
    """A kept pair's .json and .o bytes and an open descriptor of its .json
    (the caller closes it), read under the pair's shared lock: never half a
    pair a build is replacing. OSError when either is missing."""
    fd = native_cache.lock_base(base, fcntl.LOCK_SH)
    try:
        held = os.open(base + ".json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            with open(os.dup(held), "rb") as f:
                meta = f.read()
            with open(base + ".o", "rb") as f:
                code = f.read()
        except BaseException:
            os.close(held)
            raise
    finally:
        os.close(fd)
    return meta, code, held


def _load_own(where: str, name: str, sources: Sequence[str]) -> Loop | None:
    base = _base(where, name, sources)
    if not os.path.exists(base + ".json"):
        return None
    held = -1
    try:
        meta, code, held = _read_pair(base)
        loop = _checked(name, json.loads(meta), code, sources)
        if loop is not None:
            _in_use.add((name, tuple(os.path.abspath(p) for p in sources)))
            # Held (a shared lock on its .json) while this process lives:
            # prune leaves it; its mtime is its last use (a numba entry's
            # marker's, in native_cache).
            fcntl.flock(held, fcntl.LOCK_SH)
            with contextlib.suppress(OSError):
                os.utime(held)
            _held.append(held)
            held = -1
        return loop
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    finally:
        if held >= 0:
            os.close(held)


# -- the install's kept loops -----------------------------------------------------

SHARED_ENV = "PROBETOP_SHARED_OBJECTS"


def shared_dir() -> str:
    """Where the install keeps its loops for every user of it."""
    return os.path.join(sys.prefix, "share", "probetop", "objects")


@functools.cache
def _trusted_owners() -> frozenset[int]:
    """Root, this user and the owner of this code (once per process)."""
    owners = {0, os.geteuid()}
    with contextlib.suppress(OSError):
        owners.add(os.stat(__file__).st_uid)
    return frozenset(owners)


def _trusted(st: os.stat_result) -> bool:
    """Owned by a trusted owner (``_trusted_owners``); writable by no one else."""
    return st.st_uid in _trusted_owners() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted_dir(path: str) -> bool:
    """``path`` and its parents up to ``share`` are real, trusted directories."""
    for p in (path, os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
        try:
            st = os.lstat(p)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or not _trusted(st):
            return False
    return True


def _read_trusted(path: str) -> bytes:
    """A trusted regular file's bytes (never through a symlink); OSError else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or not _trusted(st):
            raise PermissionError(f"{path}: not the install's own file")
        return f.read()


_shared_used: list[str] = []  # names loaded from the install's kept loops
# Their files' base names (``<name>-<paths hash>``): current for these
# sources, so ``publish`` keeps them though this user's cache has no copy.
_shared_bases: set[str] = set()
_in_use: set[tuple[str, tuple[str, ...]]] = set()  # (name, sources) loaded from this user's cache


def _load_shared(name: str, sources: Sequence[str]) -> Loop | None:
    """The install's kept loop ``name``, or None. Read without a lock (a reader
    may not write there): a pair replaced meanwhile mismatches its digest and
    is refused, and numba's loop serves."""
    if os.environ.get(SHARED_ENV, "").lower() in ("off", "0", "no"):
        return None
    where = shared_dir()
    if not _trusted_dir(where):
        return None
    base = _base(where, name, sources)
    try:
        meta = json.loads(_read_trusted(base + ".json"))
        loop = _checked(name, meta, _read_trusted(base + ".o"), sources)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None
    if loop is not None:
        _shared_used.append(name)
        _shared_bases.add(os.path.basename(base))
    return loop


def used_shared() -> bool:
    """Whether a loop of this process came from the install's kept loops."""
    return bool(_shared_used)


def publish() -> str | None:
    """``probetop compile`` by the install's owner (who owns ``sys.prefix``):
    copy the kept loops this process built or loaded from its own cache (the
    install's: ``probetop compile`` loads every one) into ``shared_dir()``
    (0755 directories, 0644 files, each replaced whole), and drop the ones
    there that it neither copied nor loaded from there (sources changed or
    gone): an owner whose own cache is empty loads the install's loops, and
    its compile once emptied the directory for everyone. Returns the
    directory, or None when this user does not own the install or keeps
    nothing. OSError when the directory cannot be written."""
    own = _cache_dir()
    try:
        owner = os.stat(sys.prefix).st_uid
    except OSError:
        return None
    if own is None or owner != os.geteuid():
        return None
    where = shared_dir()
    for d in (os.path.dirname(os.path.dirname(where)), os.path.dirname(where), where):
        os.makedirs(d, mode=0o755, exist_ok=True)
        os.chmod(d, 0o755)
    wanted: set[str] = set(_shared_bases)
    for name, sources in sorted(_in_use):
        base = _base(own, name, sources)
        try:
            meta_bytes, code, held = _read_pair(base)
            os.close(held)
            if json.loads(meta_bytes)["sources"] != pin_sources(sources):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        name = os.path.basename(base)
        wanted.add(name)
        target = os.path.join(where, name)
        for suffix, data in ((".o", code), (".json", meta_bytes)):  # .json last: it names the .o
            tmp = f"{target}{suffix}.{os.getpid()}.tmp"
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target + suffix)
    for entry in os.listdir(where):  # stale: its sources changed since, or gone
        path = os.path.join(where, entry)
        if entry.endswith(".tmp"):  # a copy cut short, not one being written now
            with contextlib.suppress(OSError):
                if time.time() - os.lstat(path).st_mtime > 3600:
                    os.unlink(path)
            continue
        name, suffix = os.path.splitext(entry)
        if suffix in (".o", ".json") and name not in wanted:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return where


def _checked(name: str, meta: dict[str, Any], code: bytes, sources: Sequence[str]) -> Loop | None:
    """The loop in ``code``, loaded, or None when stale or foreign (``load``)."""
    if meta.get("sources") != pin_sources(sources):
        return None
    if meta.get("object") != {
        "sha256": hashlib.sha256(code).hexdigest(),
        "size": len(code),
    }:
        return None
    llvm = _llvm()
    if meta.get("machine") != _machine(llvm):
        return None
    _add_stubs(llvm)
    if any(not llvm.address_of_symbol(s) for s in meta["needs"]):
        return None
    tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    address = engine.get_function_address(meta["entry"])
    if not address:
        return None
    _engines.append(engine)
    return Loop(name, address, meta)
