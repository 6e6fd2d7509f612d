"""Text from outside (model file names, ONNX names, plan fields) on its way into emitted
C++, CMake and JSON: one function per target, so a hostile name cannot become code.

Generated code is code the user compiles and runs. A model file named
`evil<newline>#error x.onnx`, a node named `x */ int y; /*`, or a plan's block named
`b"); system("...` must reach the session as an inert comment, string literal or
identifier, never as a preprocessor line, a closed comment or an unterminated literal.

The Jinja environment (environment.py) prints `{{ ... }}` through `guard`, which lets
through numbers, code the generator built (`Code`) and text that cannot break out of its
place (no quote, backslash, newline, `#`, comment delimiter or trigraph); anything else is
refused, so a template that forgets to pick an escape fails on the first model whose
names are unusual instead of emitting them.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# Longest identifier a name becomes; longer names keep a prefix and a hash of the whole.
MAX_IDENT = 80

_PRINTABLE_ASCII = re.compile(r"[ -~]*")
# What a comment may hold as written: no line splice, trigraph or comment delimiter.
_COMMENT_BREAKERS = ("\\", "??", "*/", "/*")
# What a template may print without an escape: printable ASCII that can neither end a
# line, a comment or a literal nor start a preprocessor line or a comment.
_BREAKOUTS = ('"', "'", "#", "//", *_COMMENT_BREAKERS)


class Code(str):
    """Text the generator built as C++/CMake (a statement, an escaped literal): printed as
    is. Everything else a template prints goes through one of the escapes below."""


class UnescapedText(ValueError):
    """A template printed text that may come from outside without an escape filter."""


def cpp_ident(name: str, reserved: frozenset[str] | set[str] = frozenset()) -> str:
    """A C++ identifier from any text: ASCII letters, digits and underscores, not starting
    with a digit or an underscore (`_X` names are the implementation's), not a keyword or
    a name in `reserved` (those get a trailing `_`), at most MAX_IDENT characters.
    Distinct names may meet here: callers that need unique identifiers add a suffix
    (emit.py's unique_ident)."""
    ident = re.sub(r"[^0-9A-Za-z_]+", "_", name).strip("_") or "t"
    if ident[0].isdigit():
        ident = "t" + ident
    if len(ident) > MAX_IDENT:
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        ident = ident[:MAX_IDENT - 9].rstrip("_") + "_" + digest
    return ident + "_" if ident in reserved or ident in CPP_KEYWORDS else ident


def _escape_char(ch: str, previous: str, following: str) -> str:
    code = ord(ch)
    if ch in '"\\':
        return "\\" + ch
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    if code < 0x20 or code == 0x7F:
        return f"\\{code:03o}"                 # octal stops after three digits, unlike \x
    if code > 0x7E:
        # Universal character names encode the character in the execution character set
        # (UTF-8 with g++); lone surrogates cannot be spelt so, and become an escaped '?'.
        if 0xD800 <= code <= 0xDFFF:
            return "\\?"
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    if ch == "?":
        return "\\?"                           # never two ?s in a row: no trigraph
    if ch == "/" and "*" in (previous, following):
        return "\\057"                         # no comment start or end, even in a comment
    return ch


def _escaped(text: str) -> str:
    return "".join(_escape_char(ch, text[i - 1:i] if i else "", text[i + 1:i + 2])
                   for i, ch in enumerate(text))


def cpp_string(text: str) -> Code:
    """A C++ narrow string literal whose value is `text` (UTF-8), spelt in printable ASCII:
    safe inside a line comment as well as in code."""
    return Code(f'"{_escaped(str(text))}"')


def _printable_without(text: str, breakers: tuple[str, ...]) -> bool:
    return bool(_PRINTABLE_ASCII.fullmatch(text)) and not any(b in text for b in breakers)


def cpp_comment(text: str) -> Code:
    """Text for inside a `//` or `/* */` comment: as it is when it is plain printable ASCII
    (the common case, so comments read naturally), else as a quoted string literal, which
    holds no newline, no line splice, no trigraph and no comment delimiter."""
    text = str(text)
    return Code(text if _printable_without(text, _COMMENT_BREAKERS) else cpp_string(text))


def cmake_comment(text: str) -> Code:
    """Text for after `#` in a CMake file: the same rule as cpp_comment (a newline would
    end the comment; `[[` right after `#` would open a bracket comment, which the leading
    text of every template line rules out)."""
    return cpp_comment(text)


def cmake_name(text: str) -> Code:
    """A CMake project or target name: an identifier (no quoting, no variable references)."""
    return Code(cpp_ident(str(text)) or "paleozoic_session")


def terminal_text(text: str) -> str:
    """A name for a line of the CLI's reports: control characters (a newline, an escape
    sequence) shown as escapes, so a model's names cannot break a table or drive the
    terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def guard(value: Any) -> Any:
    """Jinja's finalize hook: what `{{ ... }}` may print without an escape filter (numbers,
    Code, and text that cannot break out of where it is printed)."""
    if isinstance(value, (Code, bool, int, float)):
        return value
    text = str(value)
    if _printable_without(text, _BREAKOUTS):
        return text
    raise UnescapedText(
        f"a template printed {text[:60]!r} without an escape: pass text that may come from "
        f"the model or the plan through cpp_comment, cpp_string or cpp_ident (or cmake_*), "
        f"and build code as paleozoic.codegen.escape.Code")


CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void
volatile wchar_t while xor xor_eq NULL EOF assert errno stdin stdout stderr
""".split())
