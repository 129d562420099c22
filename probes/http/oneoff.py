"""One-off mode: one request per URL, then the waterfall, the
pycurlb-compatible JSON document (``--json``) or curl's output mode (``-w``
or ``-o``: each body on stdout as curl writes it, or to its ``-o FILE``
(paired with the URLs in order, as curl's), then what ``-w`` writes; no
waterfall);
the exit code is curl's, the last URL's as with curl. ``-s`` (without ``-S``)
mutes the ``probetop: error:`` lines, as curl's ``-s`` mutes its messages.

What it prints and loads is kept to what a one-off needs: scripts call
``probetop http URL`` once per request in loops (issue 28).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import TYPE_CHECKING, Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.http.curlinfo import libcurl_version
from probetop.probes.http.inputs import HttpUrlError
from probetop.probes.http.request import check_http_version, check_url
from probetop.probes.http.settings import HttpSettings
from probetop.probes.http.spec import REMOTE_NAME, remote_name
from probetop.probes.http.transfer import Exchange, fetch
from probetop.probes.http.waterfall import render_exchange, use_colour

#: curl's strerror of CURLE_WRITE_ERROR, its %{errormsg} when no transfer wrote.
WRITE_FAILED = "Failed writing received data to disk/application"

if TYPE_CHECKING:  # -w and --json load only when asked
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
    docs: list[dict[str, Any]] = []
    code = 0
    colour = use_colour(sys.stdout)
    curl_mode = writer is not None or bool(settings.outputs)
    certinfo = writer is not None and writer.wants_certs()
    for i, raw in enumerate(settings.urls):
        exchange: Exchange | None = None
        # curl pairs each -o with a URL in order; the URLs past the last go to stdout.
        output = settings.outputs[i] if i < len(settings.outputs) else None
        if output == REMOTE_NAME:  # -O: the name is the URL's, known before the transfer
            output = remote_name(raw)
        body = (
            Body(output, create_dirs=settings.create_dirs)
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
        elif output == "":  # -O on a URL whose path ends with /: curl sends nothing
            if not settings.silent:
                print(
                    "probetop: error: remote file name has no length: -O names the file "
                    f"after the last / of {raw}; use -o FILE",
                    file=sys.stderr,
                )
            code, errormsg = 23, WRITE_FAILED
            output, started = None, False  # curl: no file name, no URL set
        else:
            try:
                exchange = fetch(
                    request,
                    url,
                    fail=settings.fail,
                    sink=body.write if body is not None else None,
                    certinfo=certinfo,
                )
            finally:
                if body is not None:
                    body.close()
            code = exchange.exit_status(fail=settings.fail)
            errormsg = exchange.curl_error(fail=settings.fail)
            message = exchange.message(fail=settings.fail)
            if body is not None and code == 0:
                body.finish()  # an empty body still makes an empty file, as curl
            if body is not None and body.dir_error is not None:
                # curl says so even under -s, and has no file name then
                print(
                    f"probetop: error: cannot create directory {body.dir_error}: {body.error}",
                    file=sys.stderr,
                )
                code, errormsg, message = 23, WRITE_FAILED, None
                output = ""
            elif body is not None and body.error is not None:
                # curl's exit 23 (CURLE_WRITE_ERROR) and its words
                code, errormsg = 23, "Failure writing output to destination"
                message = f"cannot write {output}: {body.error}"
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
    return code


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


class Body:
    """Where curl's output mode writes one URL's body: stdout (no -o, or
    ``-o -``), nowhere (``-o /dev/null``) or a file, which is created (as
    curl's fopen "wb": truncated, mode 0666 less the umask) when the first
    bytes arrive, or by ``finish`` for an empty body of a transfer that
    succeeded, as curl does; a transfer that fails first makes no file.
    ``write`` runs in libcurl's write callback, as curl's own does.
    ``create_dirs`` (--create-dirs): the file's missing directories are made
    first, each mode 0750 less the umask, as curl's ``create_dir_hierarchy``."""

    def __init__(self, name: str | None, *, create_dirs: bool = False) -> None:
        self.name = name
        self.create_dirs = create_dirs
        self.dir_error: str | None = None  # the directory --create-dirs could not make
        self.file: Any = None
        self.opened = False
        self.error: str | None = None
        if name is None or name == "-":
            self.file = sys.stdout.buffer

    def write(self, data: bytes) -> int | None:
        if self.name == "/dev/null":
            return None
        try:
            if self.file is None:
                self._make_dirs()
                self.file = open(self.name or "", "wb")  # noqa: SIM115 (closed in close)
                self.opened = True
            self.file.write(data)
        except OSError as exc:
            self.error = exc.strerror or str(exc)
            return 0  # libcurl stops the transfer: curl's exit 23
        return None

    def finish(self) -> None:
        if not self.opened and self.file is None and self.name not in (None, "-", "/dev/null"):
            try:
                self._make_dirs()
                open(self.name or "", "wb").close()
            except OSError as exc:
                self.error = exc.strerror or str(exc)

    def _make_dirs(self) -> None:
        if not self.create_dirs or not self.name:
            return
        import os

        path = "/" if self.name.startswith("/") else ""
        for part in os.path.dirname(self.name).split("/"):
            if not part:
                continue
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                try:
                    os.mkdir(path, 0o750)
                except OSError:
                    self.dir_error = path
                    raise

    def close(self) -> None:
        if self.file is None:
            return
        try:
            if self.file is sys.stdout.buffer:
                self.file.flush()
            else:
                self.file.close()
                self.file = None
        except OSError as exc:
            self.error = exc.strerror or str(exc)
