"""How an HTTP exchange failed: probetop's error kinds and exit codes.

Contract: ``error_kind(curl_errno, url)`` maps a libcurl error number to an
error kind (``ERROR_KINDS``, what repeated and load mode count); ``status_kind``
names an error status (``http_4xx`` / ``http_5xx``). One-off mode exits as
curl does, with the libcurl error number itself (``CURLE_*``: 6 DNS, 7
connect, 28 timeout, 35/60 TLS, 47 redirects, 52 empty reply, 56 receive
failure ...), 22 for an HTTP error with ``-f`` (``FAIL_EXIT``) and 0 for one
without; ``KIND_EXIT`` gives the code of an error probetop itself detects
(before or between libcurl's transfers). ``kind_hint`` says what to do about
a kind, in a few words for a one-line message.
"""

from __future__ import annotations

from probetop.probes.http.request import (
    SCHEMES,
)

# The error kinds repeated and load mode count requests by (records, reports).
ERROR_KINDS = (
    "url",  # malformed URL
    "scheme",  # unsupported scheme
    "dns",  # name did not resolve
    "refused",  # TCP connection refused / host unreachable
    "timeout",  # -m or --connect-timeout expired
    "tls",  # handshake or certificate verification failed
    "http_4xx",  # the server answered 4xx
    "http_5xx",  # the server answered 5xx
    "redirects",  # more than --max-redirs redirects
    "other",  # any other transfer error (empty reply, reset, ...)
)
#: curl's exit code for an HTTP error status with -f/--fail (CURLE_HTTP_RETURNED_ERROR).
FAIL_EXIT = 22
#: curl's exit code for the errors probetop finds itself, not libcurl: a URL
#: refused before sending (CURLE_URL_MALFORMAT 3, CURLE_UNSUPPORTED_PROTOCOL 1,
#: also a redirect to another scheme) and too many redirects (CURLE_TOO_MANY_REDIRECTS).
KIND_EXIT: dict[str, int] = {"url": 3, "scheme": 1, "redirects": 47}

# libcurl error numbers (curl.h) grouped into probetop's error kinds.
_CURL_ERROR_KINDS: dict[int, str] = {
    1: "scheme",  # CURLE_UNSUPPORTED_PROTOCOL
    3: "url",  # CURLE_URL_MALFORMAT
    5: "dns",  # CURLE_COULDNT_RESOLVE_PROXY
    6: "dns",  # CURLE_COULDNT_RESOLVE_HOST
    7: "refused",  # CURLE_COULDNT_CONNECT
    28: "timeout",  # CURLE_OPERATION_TIMEDOUT
    35: "tls",  # CURLE_SSL_CONNECT_ERROR
    47: "redirects",  # CURLE_TOO_MANY_REDIRECTS
    51: "tls",  # CURLE_PEER_FAILED_VERIFICATION (old number)
    53: "tls",  # CURLE_SSL_ENGINE_NOTFOUND
    58: "tls",  # CURLE_SSL_CERTPROBLEM
    59: "tls",  # CURLE_SSL_CIPHER
    60: "tls",  # CURLE_PEER_FAILED_VERIFICATION
    77: "tls",  # CURLE_SSL_CACERT_BADFILE
    80: "tls",  # CURLE_SSL_SHUTDOWN_FAILED
    82: "tls",  # CURLE_SSL_CRL_BADFILE
    83: "tls",  # CURLE_SSL_ISSUER_ERROR
    90: "tls",  # CURLE_SSL_PINNEDPUBKEYNOTMATCH
    91: "tls",  # CURLE_SSL_INVALIDCERTSTATUS
    96: "other",  # CURLE_QUIC_CONNECT_ERROR
}

_HINTS = {
    "url": "check the URL's spelling",
    "scheme": "use an http:// or https:// URL",
    "dns": "check the host name (and --resolve / -4 / -6)",
    "refused": "is a server listening on that address and port?",
    "timeout": "the server did not answer in time (raise -m / --connect-timeout)",
    "tls": "use --cacert FILE for a private CA, or -k to skip verification",
    "redirects": "raise --max-redirs or check for a redirect loop",
}


def kind_hint(kind: str) -> str | None:
    """What to do about an error kind, in a few words (None when there is
    nothing to suggest: an error status, ``other``)."""
    return _HINTS.get(kind)


def error_kind(curl_errno: int, url: str | None = None) -> str:
    """The probetop error kind of a libcurl error number. On an http(s) URL,
    libcurl's "unsupported protocol" is the server's fault (an HTTP/0.9 or
    garbage reply), not the scheme's: ``other``."""
    kind = _CURL_ERROR_KINDS.get(curl_errno, "other")
    if kind == "scheme" and url is not None and url.split(":", 1)[0].lower() in SCHEMES:
        return "other"
    return kind


def status_kind(http_code: int) -> str | None:
    """``http_4xx`` / ``http_5xx`` for error statuses, else None."""
    if 400 <= http_code < 500:
        return "http_4xx"
    if http_code >= 500:
        return "http_5xx"
    return None
