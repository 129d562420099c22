"""The http family's frozen settings, built from parsed options and checked.

Contract: ``HttpSettings`` is what one run (one-off or repeated) is made of:
the URLs, the ``HttpRequest`` the curl options describe
(``requestopts.request_from_options``), and the sampling options.
``from_options`` builds it from values parsed by ``spec.SPEC`` (reading
``@FILE`` arguments as curl does) and validates it; ``validate`` raises
``UsageProbeError`` (exit 2) with a message that names the option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from probetop.probes.core.base import UsageProbeError
from probetop.probes.http.inputs import read_at_file
from probetop.probes.http.load.settings import LoadSettings, load_from_options
from probetop.probes.http.request import HttpRequest
from probetop.probes.http.requestopts import request_from_options
from probetop.probes.http.retry import RetryPolicy
from probetop.probes.http.spec import SPEC, unsupported_flag, unsupported_message


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """What one ``probetop http`` run is made of.

    ``request`` is the same for every URL. ``interval_s`` and ``count``
    (requests per URL; None: until stopped or --time) drive repeated
    sampling; ``fresh`` is a new connection and a cold DNS cache per request
    (False: keep-alive, ``--reuse``); ``warmup`` requests per URL are
    discarded first; ``include_errors`` puts 4xx/5xx responses into the
    latency statistics (default: successes only). ``one_off`` is the default mode (one
    request per URL, a waterfall); ``watch`` asks for the dashboard.
    """

    urls: tuple[str, ...] = ()
    request: HttpRequest = field(default_factory=HttpRequest)
    interval_s: float = 1.0
    count: int | None = None
    fresh: bool = True
    watch: bool = False
    one_off: bool = False
    load: LoadSettings | None = None  # --rate: load mode (load/settings.py)
    warmup: int = 0  # --warmup: requests per URL discarded before statistics
    include_errors: bool = False  # --include-errors: 4xx/5xx in the latency statistics
    write_out: str | None = None  # -w FORMAT (one-off; @FILE already read)
    fail: bool = False  # -f/--fail, --fail-with-body: exit 22 on a final status >= 400
    # --fail-with-body: the body is received and written (curl's output mode)
    fail_with_body: bool = False
    # -o FILE per URL in order, as curl pairs them (curl's %{filename_effective})
    outputs: tuple[str, ...] = ()
    create_dirs: bool = False  # --create-dirs: make an -o FILE's directories (curl's)
    warnings_muted: bool = False  # -s (even with -S): no curl "Warning:" lines
    remote_header_name: bool = False  # -J: -O's name from Content-Disposition (curl's)
    output_dir: str | None = None  # --output-dir DIR: -o/-O files under DIR (curl's)
    silent: bool = False  # -s without -S: no error messages on stderr, as curl's
    include: bool = False  # -i (or -I in curl's output mode): header lines before the body
    dump_header: str | None = None  # -D FILE: every response's header lines ("-": stdout)
    retry: RetryPolicy = field(default_factory=RetryPolicy)  # --retry & co. (one-off)
    verbose: bool = False  # -v: curl's trace of the exchange on stderr (one-off)
    no_buffer: bool = False  # -N: the body flushed at each write, as curl's
    cookie_jar: str | None = None  # -c FILE: every cookie written at the end (one-off)

    def __post_init__(self) -> None:
        if not isinstance(self.urls, tuple):
            object.__setattr__(self, "urls", tuple(self.urls))
        if not isinstance(self.outputs, tuple):
            object.__setattr__(self, "outputs", tuple(self.outputs))

    @property
    def connection(self) -> str:
        """``fresh`` or ``reuse``, as the report and the pane name it."""
        return "fresh" if self.fresh else "reuse"

    @classmethod
    def from_options(
        cls,
        values: Mapping[str, Any],
        *,
        interval_s: float = 1.0,
        interval_given: bool = False,
        time_s: float | None = None,
        recording: bool = False,
    ) -> HttpSettings:
        """Settings from parsed ``SPEC`` values plus the common options that
        choose the mode: any of --count, --watch, --sample-interval (given, even as
        1), --time or --record means repeated sampling; --record alone
        records one request per URL. Validated; ``@FILE`` arguments are read
        here (UsageProbeError if they cannot be)."""
        values = _split_header_values(values)
        _check_shapes(values)
        unsupported = unsupported_flag(values)
        if unsupported:
            raise UsageProbeError(unsupported_message(unsupported))
        outputs = tuple(str(o) for o in values.get("curl_output") or ())
        if values.get("fresh") and values.get("reuse"):
            raise UsageProbeError("--fresh and --reuse contradict each other: give one of them")
        count = values.get("count")
        watch = bool(values.get("watch", False))
        # --time given (even --time 0: no time limit, as in every command) asks
        # for repeated sampling, like --count, --watch and --sample-interval.
        timed = time_s is not None
        load = load_from_options(values, time_s=time_s, interval_s=interval_s)
        warmup = values.get("warmup")
        include_errors = bool(values.get("include_errors", False))
        if load is not None and (warmup is not None or include_errors):
            raise UsageProbeError(
                "--warmup and --include-errors are repeated-mode options; load mode "
                "(--rate) reports every status class on its own already (docs/http-load.md)"
            )
        repeated = count is not None or watch or interval_given or timed or recording or bool(load)
        if repeated and count is None and not (watch or timed or interval_given or load):
            count = 1  # `http URL --record f`: record the one request, not sample forever
        write_out = values.get("write_out")
        fail_with_body = bool(values.get("fail_with_body"))
        if fail_with_body and values.get("fail"):
            raise UsageProbeError(  # curl 7.88's words and exit status (2)
                "You must select either --fail or --fail-with-body, not both."
            )
        fail = bool(values.get("fail")) or fail_with_body
        include = bool(values.get("include"))
        dump_header = values.get("dump_header")
        retry = RetryPolicy(
            count=int(values.get("retry") or 0),
            delay_s=int(values.get("retry_delay") or 0),
            max_time_s=int(values.get("retry_max_time") or 0),
            connrefused=bool(values.get("retry_connrefused")),
            all_errors=bool(values.get("retry_all_errors")),
        )
        verbose = bool(values.get("verbose"))
        if repeated and values.get("cookie_jar") is not None:
            raise UsageProbeError(
                "-c/--cookie-jar is a one-off option (curl writes the jar when its transfers "
                "end); repeated and load mode send the same request each time"
            )
        if repeated and verbose:
            raise UsageProbeError(
                "-v/--verbose is a one-off option (the trace of one exchange on stderr); "
                "repeated and load mode would trace every request: drop --count/--rate, "
                "or use --json for every field"
            )
        if repeated and retry.count:
            raise UsageProbeError(
                "--retry is a one-off option (curl's retries of one transfer); repeated and "
                "load mode time every attempt: --include-errors keeps the failed ones"
            )
        if repeated and (
            write_out is not None
            or fail
            or set(outputs) - {"/dev/null"}
            or include
            or dump_header is not None
        ):
            flag = (
                "-w/--write-out"
                if write_out is not None
                else "-f/--fail"
                if fail
                else "-i/--include"
                if include
                else "-D/--dump-header"
                if dump_header is not None
                else "-o/--output"
            )
            raise UsageProbeError(
                f"{flag} is a one-off option (one request per URL, curl's output and exit "
                "code); repeated and load mode report statistics: use --json or --assert"
            )
        if write_out is not None:
            from probetop.probes.http.writeout import read_format  # -w only

            write_out = read_format(write_out, _read_format_file)
        settings = cls(
            urls=tuple(values.get("urls") or ()),
            request=request_from_options(values),
            interval_s=float(interval_s),
            count=count,
            fresh=not values.get("reuse", False),
            watch=watch,
            one_off=not repeated,
            load=load,
            warmup=0 if warmup is None else int(warmup),
            include_errors=include_errors,
            write_out=write_out,
            fail=fail,
            fail_with_body=fail_with_body,
            outputs=outputs,
            create_dirs=bool(values.get("create_dirs")),
            warnings_muted=bool(values.get("curl_silent")),
            remote_header_name=bool(values.get("remote_header_name")),
            output_dir=values.get("output_dir") or None,  # curl ignores an empty one
            silent=bool(values.get("curl_silent")) and not values.get("curl_show_error"),
            include=include,
            dump_header=None if dump_header is None else str(dump_header),
            retry=retry,
            verbose=verbose,
            no_buffer=bool(values.get("no_buffer")),
            cookie_jar=values.get("cookie_jar"),
        )
        if settings.one_off and (warmup is not None or include_errors):
            raise UsageProbeError(
                "--warmup and --include-errors need repeated requests: add --count N "
                "or --sample-interval S (one-off mode makes one request per URL)"
            )
        settings.validate()
        if values.get("max_redirs") is not None and not values.get("location"):
            raise UsageProbeError(
                "--max-redirs only matters with -L (without -L no redirect is followed); "
                "add -L or leave --max-redirs out"
            )
        return settings

    def validate(self) -> None:
        """Raise UsageProbeError for what curl would refuse or probetop cannot do."""
        request = self.request
        if not self.urls:
            raise UsageProbeError("give at least one URL")
        if request.head and request.data is not None and not request.get:
            raise UsageProbeError("-I (HEAD) and -d (POST) contradict each other, as in curl")
        if request.user is not None and ":" not in request.user:
            raise UsageProbeError("give -u USER:PASSWORD (probetop does not prompt for passwords)")
        request.validate()
        if self.count is not None and self.count < 1:
            raise UsageProbeError(f"--count must be at least 1, got {self.count}")
        if not self.interval_s > 0:
            raise UsageProbeError("--sample-interval must be positive")
        if self.warmup < 0:
            raise UsageProbeError(f"--warmup must be 0 or more, got {self.warmup}")


# What a header line starts with: an HTTP token and ':' or ';' (curl's forms),
# or '@' (-H @FILE). A host:port URL without a scheme is no header.
_HEADER_START = re.compile(r"^(@|[!#$%&'*+.^_`|~0-9A-Za-z-]+[:;])")
_URL_START = re.compile(
    r"^([A-Za-z][A-Za-z0-9+.-]*://|\[|[^:/]*\.[^:/]*:\d+(/|$)|localhost:\d+(/|$))"
)


def looks_like_header(value: str) -> bool:
    """Whether a value after -H is a header line rather than a URL."""
    return bool(_HEADER_START.match(value)) and not _URL_START.match(value)


def _split_header_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """pycurlb's ``-H 'a: 1' 'b: 2'`` (its -H takes any number of values)
    beside curl's repeated -H: the first value after a -H is a header, as in
    curl; of the values after it, those that look like headers are headers
    and the others URLs, put back among the other URLs in command-line
    order (``spec._in_order`` tags each value with its place; plain strings
    keep their order)."""
    out = dict(values)
    groups = values.get("headers") or []
    headers: list[Any] = []
    urls: list[tuple[int, str]] = [_ordered(v, i) for i, v in enumerate(values.get("urls") or ())]
    urls += [_ordered(v, i) for i, v in enumerate(values.get("url_options") or ())]  # --url
    for group in groups:
        items = [_ordered(v, 0) for v in (group if isinstance(group, list) else [group])]
        if not items:  # `--header=--`: argparse's empty list; the shape check says so
            headers.append([])
            continue
        headers.append(items[0][1])  # the first is always -H's own value, as in curl
        for item in items[1:]:
            if looks_like_header(item[1]):
                headers.append(item[1])
            else:
                urls.append(item)
    if groups:
        out["headers"] = headers
    if "urls" in values or urls:
        out["urls"] = [text for _seq, text in sorted(urls, key=lambda u: u[0])]
    return out


def _ordered(value: Any, seq: int) -> tuple[int, str]:
    """(place on the command line, text) of a parsed URL or -H value."""
    if isinstance(value, tuple):
        return value
    return (seq, value)


def _read_format_file(name: str) -> bytes:
    from probetop.probes.http.writeout import MAX_FORMAT_BYTES

    return read_at_file(name, "-w", MAX_FORMAT_BYTES)


def _check_shapes(values: Mapping[str, Any]) -> None:
    """UsageProbeError for a value argparse gives in the wrong shape: it turns
    ``--opt=--`` into an empty list instead of the string ``--``."""
    for option in SPEC.options:
        if option.positional or option.action not in ("store", "append"):
            continue
        value = values.get(option.name)
        items = value if option.action == "append" and isinstance(value, list) else [value]
        if any(isinstance(item, list) for item in items):
            flag = "-d/--data*" if option.name == "data" else max(option.flags, key=len)
            raise UsageProbeError(f"{flag}: '--' is not a value here; give {option.display}")


def curl_json_data(urls: tuple[str, ...]) -> str | None:
    """The first of ``urls`` that is curl's ``--json DATA`` rather than a URL
    (``{...}``, ``@FILE``, a JSON array), or None. probetop's --json takes
    no value, so curl's DATA lands among the URLs; that one was refused as
    a malformed URL while the others were fetched with GET and exit 0.
    ``[::1]:8080`` is a URL (an IPv6 literal), ``[1, 2]`` is not."""
    import json

    for url in urls:
        text = url.lstrip()
        if text.startswith(("{", "@")):
            return url
        if text.startswith("["):
            try:
                json.loads(text)
            except ValueError:
                continue
            return url
    return None
