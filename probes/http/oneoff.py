"""One-off mode: one request per URL, then the waterfall, the
pycurlb-compatible JSON document (``--json``) or curl's output mode (``-w``,
``-o``, ``-i``, ``-D`` or ``--fail-with-body``: each body on stdout as curl
writes it, or to its ``-o FILE`` (paired with the URLs in order, as curl's),
with ``-i`` its header lines first, ``-D``'s copy of them in one file, then
what ``-w`` writes; no waterfall);
the exit code is curl's, the last URL's as with curl. ``-s`` (without ``-S``)
mutes the ``probetop: error:`` lines, as curl's ``-s`` mutes its messages.

What it prints and loads is kept to what a one-off needs: scripts call
``probetop http URL`` once per request in loops (issue 28).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.http.curlinfo import libcurl_version
from probetop.probes.http.inputs import HttpUrlError
from probetop.probes.http.request import check_http_version, check_url
from probetop.probes.http.retry import Retries
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.spec import REMOTE_NAME, remote_name
from probetop.probes.http.transfer import Exchange, cookie_engine, fetch, save_cookies
from probetop.probes.http.waterfall import render_exchange, use_colour

#: curl's strerror of CURLE_WRITE_ERROR, its %{errormsg} when no transfer wrote.
WRITE_FAILED = "Failed writing received data to disk/application"

if TYPE_CHECKING:  # -w and --json load only when asked
    from probetop.probes.http.verbose import VerboseTrace
    from probetop.probes.http.writeout import Transfer, WriteOut


def one_off(settings: HttpSettings, *, as_json: bool) -> int:
    """One request per URL, then the waterfall, the JSON document or the -w
    output; curl's exit code, the last URL's as with curl."""
    request = settings.request
    check_http_version(request.http_version)
    if as_json and settings.write_out is not None:
        raise UsageProbeError(
            "--json and -w/--write-out both choose the output: give one "
            "(-w '%{json}' prints curl's JSON of each transfer)"
        )
    writer: WriteOut | None = None
    if settings.write_out is not None:
        from probetop.probes.http.writeout import WriteOut

        writer = WriteOut(settings.write_out)
    # curl's output mode (bodies, no waterfall): -w, -o/-O, --fail-with-body,
    # which asks for the body of an error answer, or -N, which streams it.
    curl_mode = (
        writer is not None
        or bool(settings.outputs)
        or settings.fail_with_body
        or settings.no_buffer
        or settings.include
        or settings.dump_header is not None
    )
    # -i, and -I in curl's output mode (curl's -I shows the headers, as -i)
    include = curl_mode and (settings.include or request.head)
    certinfo = writer is not None and writer.wants_certs()
    dump = HeaderDump(settings.dump_header) if settings.dump_header is not None else None
    if dump is not None and not dump.open():
        # curl 7.88.1 crashes here (SIGSEGV); its write error is what it means
        print(f"probetop: error: Failed to open {dump.name}: {dump.error}", file=sys.stderr)
        return 23
    try:
        return _each_url(settings, writer, dump, curl_mode, include, certinfo, as_json=as_json)
    finally:
        if dump is not None:
            dump.close()


def _each_url(
    settings: HttpSettings,
    writer: WriteOut | None,
    dump: HeaderDump | None,
    curl_mode: bool,
    include: bool,
    certinfo: bool,
    *,
    as_json: bool,
) -> int:
    """``one_off``'s transfers, one per URL in order; the last one's exit code."""
    request = settings.request
    docs: list[dict[str, Any]] = []
    code = 0
    colour = use_colour(sys.stdout)
    cookies = None
    if settings.cookie_jar is not None or (request.cookie and "=" not in request.cookie):
        cookies = cookie_engine()  # curl's: one jar for every URL of the command
    trace: VerboseTrace | None = None
    if settings.verbose:
        from probetop.probes.http.verbose import VerboseTrace

        # curl -v leaves out its data notes when the body itself goes to the terminal
        body_to_tty = curl_mode and not settings.outputs and sys.stdout.isatty()
        trace = VerboseTrace(sys.stderr.buffer, data_notes=not body_to_tty)
    for i, raw in enumerate(settings.urls):
        exchange: Exchange | None = None
        # curl pairs each -o with a URL in order; the URLs past the last go to stdout.
        output = settings.outputs[i] if i < len(settings.outputs) else None
        remote = output == REMOTE_NAME
        if remote:  # -O: the name is the URL's, known before the transfer
            output = remote_name(raw)
        # -J: the name may come from Content-Disposition; curl sends even for URL/
        disposition = remote and settings.remote_header_name
        dir_error: tuple[str, str] | None = None
        if output is not None and output != "-" and (output or disposition):
            if settings.output_dir:  # curl: DIR/FILE, before --create-dirs
                output = f"{settings.output_dir}/{output}"
            if settings.create_dirs:  # curl makes them before the transfer
                dir_error = make_dirs(output)
        body = (
            Body(
                output,
                disposition=disposition,
                output_dir=settings.output_dir,
                unbuffered=settings.no_buffer,
            )
            if curl_mode and not (as_json and output is None)
            else None
        )
        url: str | None = None
        started = True
        try:
            url = check_url(raw)
        except HttpUrlError as exc:
            if not settings.silent:
                print(f"probetop: error: {exc}", file=sys.stderr)
            code, errormsg = exc.exit_code, str(exc)
        if url is None:
            pass
        elif output == "" and not disposition:  # -O on URL/: curl sends nothing
            if not settings.silent:
                print(
                    "probetop: error: remote file name has no length: -O names the file "
                    f"after the last / of {raw}; use -o FILE",
                    file=sys.stderr,
                )
            code, errormsg = 23, WRITE_FAILED
            output, started = None, False  # curl: no file name, no URL set
        elif dir_error is not None:
            # curl says so even under -s, and has no file name then
            print(
                f"probetop: error: Error creating directory {dir_error[0]}: {dir_error[1]}",
                file=sys.stderr,
            )
            code, errormsg = 23, WRITE_FAILED
            output, started = "", False  # curl stops before the transfer
        else:
            retries = Retries(settings.retry) if settings.retry.count else None
            while True:
                try:
                    exchange = fetch(
                        request,
                        url,
                        # --fail-with-body: the body is read, then exit 22 as -f
                        fail=settings.fail and not settings.fail_with_body,
                        sink=body.write if body is not None else None,
                        certinfo=certinfo,
                        header_sink=header_sink(body, dump, include=include),
                        trace=trace,
                        cookies=cookies,
                    )
                finally:
                    if body is not None:
                        body.close()
                code = exchange.exit_status(fail=settings.fail)
                if retries is None or not _retried(settings, retries, exchange, code, body):
                    break
                if body is not None:
                    body = body.for_retry()
            errormsg = exchange.curl_error(fail=settings.fail)
            message = exchange.message(fail=settings.fail)
            if body is not None and code == 0:
                body.finish()  # an empty body still makes an empty file, as curl
            if body is not None:
                output = body.name  # -J: the Content-Disposition name, as curl's
                for warning in body.warnings if not settings.warnings_muted else ():
                    print(f"probetop: warning: {warning}", file=sys.stderr)
            if (body is not None and body.header_failed) or (dump is not None and dump.failed):
                code, errormsg = 23, "Failed writing header"  # curl's tool_header_cb
                message = errormsg
            elif body is not None and body.truncate_failed:
                code, errormsg = 23, "Failed to truncate file"  # curl's, after a --retry
                message = errormsg
            elif body is not None and body.error is not None:
                # curl's exit 23 (CURLE_WRITE_ERROR) and its words
                code, errormsg = 23, "Failure writing output to destination"
                message = errormsg  # with curl's warning line that says why
            if as_json:
                from probetop.probes.http.pycurlb import pycurlb_document

                docs.append(pycurlb_document(exchange))
            elif not curl_mode:
                if i:
                    sys.stdout.write("\n")
                sys.stdout.write(render_exchange(exchange, colour=colour))
            if message and not settings.silent:
                print(f"probetop: error: {message}", file=sys.stderr)
        if writer is not None:
            from probetop.probes.http.writeout import Transfer

            transfer = Transfer(exchange, raw, i, code, errormsg, output=output, started=started)
            write_out(writer, settings, transfer)
    if as_json and docs:
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    sys.stdout.flush()
    if cookies is not None and settings.cookie_jar is not None:
        jar = settings.cookie_jar
        saved = save_cookies(cookies, jar)  # curl writes its jar last
        if not saved and not settings.warnings_muted:
            # curl 7.88 says nothing (libcurl's note is for -v only): a lost jar is said
            print(f"probetop: warning: failed to save cookies in {jar}", file=sys.stderr)
    return code


def _retried(
    settings: HttpSettings, retries: Retries, exchange: Exchange, code: int, body: Body | None
) -> bool:
    """curl's --retry after one attempt: whether another follows. If so,
    this attempt's error line and curl's warning are printed (``-s`` mutes
    both, ``-S`` brings the error back), its -o bytes thrown away, and the
    wait waited."""
    reason = retries.policy.reason(exchange, code, fail=settings.fail)
    wait_ms = retries.next_wait_ms(exchange, reason) if reason else None
    if reason is None or wait_ms is None:
        return False
    message = exchange.message(fail=settings.fail)
    if message and not settings.silent:
        print(f"probetop: error: {message}", file=sys.stderr)
    warning = retries.warning(reason, wait_ms)
    thrown = body.throw_away() if body is not None else 0
    if not settings.warnings_muted:
        print(f"probetop: warning: {warning}", file=sys.stderr)
        if thrown:
            print(f"Throwing away {thrown} bytes", file=sys.stderr)
    if body is not None and body.truncate_failed:
        return False  # curl: appending would make "something strange"; exit 23
    sys.stdout.flush()  # the attempt's body (curl writes each attempt's)
    time.sleep(wait_ms / 1000)
    return True


def write_out(writer: WriteOut, settings: HttpSettings, transfer: Transfer) -> None:
    """curl's -w output of one URL, on stdout and stderr as the format says."""
    transfer = dataclasses.replace(
        transfer,
        method=settings.request.initial_method(),
        output=None if transfer.output == "-" else transfer.output,
        referer=settings.request.referer,
        curl_version=libcurl_version(),
    )
    chunks, warnings = writer.render(transfer)
    for warning in warnings:  # curl warns, and goes on
        print(f"probetop: {warning}", file=sys.stderr)
    for name, text in chunks:
        stream = sys.stdout if name == "stdout" else sys.stderr
        stream.flush()
        stream.buffer.write(text.encode("utf-8", "surrogateescape"))
        stream.buffer.flush()


def make_dirs(name: str) -> tuple[str, str] | None:
    """curl 7.88's --create-dirs (create_dir_hierarchy): each directory of
    ``name`` (every /-separated part but the last), mode 0750 less the umask;
    one that exists or cannot be searched (EACCES) is passed. The directory it
    could not make and why, or None."""
    import errno

    parts = [p for p in name.split("/") if p]
    path = ""
    for n, part in enumerate(parts[:-1]):
        path = (part if not name.startswith("/") else f"/{part}") if n == 0 else f"{path}/{part}"
        try:
            os.mkdir(path, 0o750)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.EACCES):
                return path, exc.strerror or str(exc)
    return None


def disposition_filename(line: bytes) -> bytes | None:
    """The file name curl 7.88's -J takes from one ``Content-disposition:``
    header line (tool_cb_hdr.c, parse_filename): the first ``filename=``
    parameter (case-sensitive; ``filename*=`` is not read), up to its closing
    quote (or the next ``;`` when unquoted), then only what follows its last
    ``/`` and last backslash, cut at a CR or LF. None when there is none, or
    when it ends with / or a backslash."""
    end = len(line)
    p = 20
    while True:
        while p < end and line[p] and not chr(line[p]).isalpha():
            p += 1
        if p > end - 9:
            return None
        if line[p : p + 9] != b"filename=":
            while p < end and line[p] != ord(";"):
                p += 1
            continue
        rest = line[p + 9 :].split(b"\0", 1)[0]
        stop = b";"
        if rest[:1] in (b"'", b'"'):
            stop, rest = rest[:1], rest[1:]
        rest = rest.split(stop, 1)[0]
        for sep in (b"/", b"\\"):
            if sep in rest:
                rest = rest.rsplit(sep, 1)[1]
                if not rest:
                    return None
        return rest.split(b"\r", 1)[0].split(b"\n", 1)[0]


def header_sink(
    body: Body | None, dump: HeaderDump | None, *, include: bool
) -> Callable[[bytes], bool] | None:
    """curl's tool_header_cb for one transfer, in its order: the line to the
    -D file, then -J's Content-Disposition, then (-i) to the body's output.
    False fails the transfer (curl's 23, "Failed writing header")."""
    if dump is None and not include and (body is None or not body.disposition):
        return None

    def on_header(line: bytes) -> bool:
        if dump is not None and not dump.write(line):
            return False
        if body is None:
            return True
        if not body.header(line):
            return False
        if include and body.write(line) is not None:
            body.header_failed = True
            return False
        return True

    return on_header


def close_output(file: Any) -> str | None:
    """Ends one curl output (-o's body, -D's headers): stdout is flushed and
    stays open for what follows, a file is closed. Returns the error's text
    (a full disk shows at the flush or close), or None."""
    try:
        if file is sys.stdout.buffer:
            file.flush()
        else:
            file.close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class HeaderDump:
    """curl's -D FILE: every response's header lines as received, every URL's
    in turn (every hop's with -L), in one file opened once before the first
    transfer (curl 7.88 truncates it then and appends after), or stdout for
    ``-``. ``failed``: a line could not be written (curl's exit 23)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.file: Any = None
        self.error: str | None = None
        self.failed = False

    def open(self) -> bool:
        if self.name == "-":
            self.file = sys.stdout.buffer
            return True
        try:
            self.file = open(self.name, "wb")  # noqa: SIM115 (closed in close)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            return False
        return True

    def write(self, line: bytes) -> bool:
        try:
            self.file.write(line)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self.failed = True
            return False
        return True

    def close(self) -> None:
        if self.file is None:
            return
        self.error = close_output(self.file) or self.error
        self.file = None


class Body:
    """Where curl's output mode writes one URL's body: stdout (no -o, or
    ``-o -``), nowhere (``-o /dev/null``) or a file, which is created (as
    curl's fopen "wb": truncated, mode 0666 less the umask) when the first
    bytes arrive, or by ``finish`` for an empty body of a transfer that
    succeeded, as curl does; a transfer that fails first makes no file.
    ``write`` runs in libcurl's write callback, as curl's own does.

    ``disposition`` (-O with -J): ``header`` reads each header line as curl
    7.88's tool_header_cb. A ``Content-disposition:`` line with a usable
    ``filename=`` renames the file (``name``, curl's filename_effective; it
    is opened as ``output_dir/name``) and creates it at once, O_EXCL: an
    existing file is never overwritten, curl's "Failed writing header" (23).
    Without such a name the URL's name is used, opened as -O opens it."""

    def __init__(
        self,
        name: str | None,
        *,
        disposition: bool = False,
        output_dir: str | None = None,
        unbuffered: bool = False,
    ) -> None:
        self.name = name
        self.unbuffered = unbuffered  # -N: flushed at each write, as curl's fflush
        self.path = name  # what is opened (-J: output_dir/name)
        self.disposition = disposition
        self.output_dir = output_dir
        self.exclusive = False  # a Content-Disposition name: O_EXCL, as curl's
        self.header_failed = False  # -J: curl's header callback failed (exit 23)
        self.warnings: list[str] = []  # curl's "Warning: ..." lines (muted by -s)
        self.file: Any = None
        self.opened = False
        self.written = 0  # bytes written to an -o file (what a --retry throws away)
        self.truncate_failed = False  # --retry could not empty it: curl's exit 23
        self.error: str | None = None
        if name is None or name == "-":
            self.file = sys.stdout.buffer

    def header(self, line: bytes) -> bool:
        """curl's -J on one header line; False fails the transfer."""
        if not self.disposition or len(line) <= 20:
            return True
        if line[:20].lower() != b"content-disposition:":
            return True
        found = disposition_filename(line)
        if found is not None:
            if self.file is not None:
                return False  # curl: a file is open already, "get out!"

            self.disposition = False  # done now, as curl's honor_cd_filename
            self.name = os.fsdecode(found)
            self.path = f"{self.output_dir}/{self.name}" if self.output_dir else self.name
            self.exclusive = True
        if self.file is None and not self._open():
            self.header_failed = True
            return False
        return True

    def _open(self) -> bool:
        """curl's tool_create_output_file; False (with curl's warning) if not."""

        if not self.name:
            self.warnings.append("Remote filename has no length!")
            self.error = "Remote filename has no length"
            return False
        path = self.path or ""
        try:
            if self.exclusive:
                fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o666)
                self.file = os.fdopen(fd, "wb")
            else:
                self.file = open(path, "wb")  # noqa: SIM115 (closed in close)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            self.warnings.append(f"Failed to open the file {path}: {self.error}")
            return False
        self.opened = True
        return True

    def write(self, data: bytes) -> int | None:
        if self.name == "/dev/null":
            return None
        if self.file is None and not self._open():
            return 0  # libcurl stops the transfer: curl's exit 23
        try:
            self.file.write(data)
            if self.unbuffered:
                self.file.flush()
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            return 0  # libcurl stops the transfer: curl's exit 23
        if self.opened:
            self.written += len(data)
        return None

    def throw_away(self) -> int:
        """Before a --retry: empty the -o file this attempt wrote to (curl
        truncates it), so the next attempt's body is the file's only content;
        the bytes thrown away (0: none written, or stdout)."""
        thrown, self.written = self.written, 0
        if thrown and self.path:
            try:
                os.truncate(self.path, 0)
            except OSError:  # a pipe or a device (-o /dev/stdout): curl's ftruncate fails too
                self.truncate_failed = True
        return thrown

    def for_retry(self) -> Body:
        """The next --retry attempt's output, where this one wrote: curl keeps
        its file open across attempts, so a -J name this attempt found is kept
        (the next attempt's Content-Disposition is not read again) and the
        file, this run's own now, is reopened without O_EXCL."""
        following = Body(
            self.name,
            disposition=self.disposition,
            output_dir=self.output_dir,
            unbuffered=self.unbuffered,
        )
        following.path = self.path
        return following

    def finish(self) -> None:
        if not self.opened and self.file is None and self.name not in (None, "-", "/dev/null"):
            self._open()

    def close(self) -> None:
        if self.file is None:
            return
        self.error = close_output(self.file) or self.error
        if self.file is not sys.stdout.buffer:
            self.file = None
