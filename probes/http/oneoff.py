"""One-off mode: one request per URL, then the waterfall (none with ``-o
/dev/null``: stdout carries only what ``-w`` writes, as curl's), the
pycurlb-compatible JSON document (``--json``) or curl's write-out (``-w``);
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
from probetop.probes.http.transfer import Exchange, fetch
from probetop.probes.http.waterfall import render_exchange, use_colour

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
    for i, raw in enumerate(settings.urls):
        exchange: Exchange | None = None
        try:
            url = check_url(raw)
        except HttpUrlError as exc:
            if not settings.silent:
                print(f"probetop: error: {exc}", file=sys.stderr)
            code, errormsg = exc.exit_code, str(exc)
        else:
            exchange = fetch(request, url, fail=settings.fail)
            code = exchange.exit_status(fail=settings.fail)
            errormsg = exchange.curl_error(fail=settings.fail)
            message = exchange.message(fail=settings.fail)
            if as_json:
                from probetop.probes.http.pycurlb import pycurlb_document

                docs.append(pycurlb_document(exchange))
            elif writer is None and settings.output is None:
                # -o /dev/null: the waterfall takes the body's place on stdout,
                # and curl's -o sends the body away (stdout: only -w's output).
                if i:
                    sys.stdout.write("\n")
                sys.stdout.write(render_exchange(exchange, colour=colour))
            if message and not settings.silent:
                print(f"probetop: error: {message}", file=sys.stderr)
        if writer is not None:
            from probetop.probes.http.writeout import Transfer

            write_out(writer, settings, Transfer(exchange, raw, i, code, errormsg))
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
        output=settings.output,
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
