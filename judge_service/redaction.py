"""Endpoint credentials kept out of what the service prints: every log line, start-up errors and endpoint
descriptions.

Log lines come from libraries too: httpx logs `HTTP Request: GET http://user:pw@host/v1/models` on its
own logger for every health check, where no redaction of the backend's own messages reaches. So a filter
rewrites records on the handlers the service's logging writes through (cli.py's, uvicorn's) and on httpx's
logger itself (an app embedded in another program, tests).

Redacted: the user:password part of any URL; the value of a query parameter named as a credential
(`api_key`, `key`, `token`, `access_token`, `secret`, `password`, `sig`, ...); and, anywhere in a line, each
endpoint credential the service was given (`remember`: an API key, a URL's password).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

if TYPE_CHECKING:
    from pydantic import ValidationError

MASK = "***"
# A remembered secret shorter than this is still redacted inside URLs (the patterns below), but not
# everywhere: replacing two letters throughout every line would garble the log and hide nothing.
MIN_REMEMBERED = 6

# Greedy up to the authority's last "@", so a password with an unescaped "@" goes whole.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#'\"<>]*@")
_CREDENTIAL_NAME = (
    r"(?:x[-_])?(?:api[-_]?key|key|(?:access|auth|id|refresh|bearer)[-_]?token|token|(?:client[-_])?secret"
    r"|password|passwd|pwd|sig|(?:amz[-_]|goog[-_])?signature|auth)"
)
_CREDENTIAL_PARAM = re.compile(rf"([?&;]{_CREDENTIAL_NAME}=)[^&#\s'\"<>]+", re.IGNORECASE)
_CREDENTIAL_KEY = re.compile(rf"^{_CREDENTIAL_NAME}$", re.IGNORECASE)

# Longest first, so a secret that contains another is replaced whole. A tuple swapped in one assignment:
# log calls on other threads iterate it while `remember` runs.
_remembered: tuple[str, ...] = ()


def redact(text: str) -> str:
    """`text` without credentials; the same object when there were none. Cheap substring checks decide
    whether a pattern runs at all: this runs for every log record."""
    clean = text
    if "@" in clean and "://" in clean:
        clean = _USERINFO.sub(r"\1" + MASK + "@", clean)
    if "=" in clean and ("?" in clean or "&" in clean or ";" in clean):  # a parameter needs both
        clean = _CREDENTIAL_PARAM.sub(r"\1" + MASK, clean)
    for secret in _remembered:
        if secret in clean:
            clean = clean.replace(secret, MASK)
    return text if clean == text else clean


def remember(*values: str | None) -> None:
    """Credentials to redact wherever they appear: an API key as it is; of a URL (anything with "://"),
    its password and its credential-named query values, as written and decoded, and its user:password as
    a Basic authorization carries it."""
    global _remembered
    found: set[str] = set()
    for value in values:
        if not value:
            continue
        found.update(_url_secrets(value) if "://" in value else (value,))
    new = {s for s in found if len(s) >= MIN_REMEMBERED} - set(_remembered)
    if new:
        _remembered = tuple(sorted({*_remembered, *new}, key=len, reverse=True))


def _url_secrets(url: str) -> Iterable[str]:
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:  # not a URL after all: nothing to take from it
        return ()
    secrets = [v for k, v in query if _CREDENTIAL_KEY.match(k)]
    forms = [form for s in secrets for form in (s, unquote(s))]
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        forms += [userinfo.partition(":")[2], unquote(userinfo.partition(":")[2])]
        # As an Authorization: Basic header carries it, which an upstream may echo in an error body.
        forms.append(base64.b64encode(unquote(userinfo).encode()).decode())
    return forms


def describe_invalid(exc: ValidationError, name: Callable[[str], str] = str) -> str:
    """pydantic's errors without the values given, which its own text quotes (`input_value=`: a jury
    entry whole, its api_key included; a database URL with its password): one line per error, naming
    where (`name` of the dotted location) and what is wrong."""
    lines = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"])
        what = error["msg"].removeprefix("Value error, ")  # the validator's own message follows
        lines.append(redact(f"{name(where)}: {what}" if where else what))
    return "; ".join(lines)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message, traceback and stack without credentials; never drops a record."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
            clean = redact(message)
            if clean is not message:
                # The formatted text replaces format and arguments, so the handler formats it as is.
                record.msg, record.args = clean, None
            if record.exc_info and not record.exc_text:
                # Formatted here, as Formatter.format would, which then uses this cached text.
                record.exc_text = self._formatter.formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
        except Exception:  # a record that its own format breaks is the handler's to report
            pass
        return True


LOG_FILTER = RedactingFilter()
# Loggers whose records carry endpoint URLs: filtered on the logger too, whatever handlers receive them.
_URL_LOGGERS = ("httpx",)


def protect_logs() -> None:
    """Put the filter on every handler configured so far (the root's, uvicorn's) and on httpx's logger.
    Safe to call again: each place gets it once; call after anything that adds handlers (uvicorn does
    when its Config is built)."""
    for name in _URL_LOGGERS:
        logging.getLogger(name).addFilter(LOG_FILTER)  # addFilter adds a filter once
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):  # PlaceHolder entries have none
            handler.addFilter(LOG_FILTER)
