"""Markdown from the model or sandboxed code, made inert for JupyterLab's trusted renderer.

    safe_markdown("Hi <img src=x onerror=alert(1)>")  # 'Hi &lt;img src=x onerror=alert(1)>'

JupyterLab renders the Markdown of outputs from cells the person ran as *trusted*: raw HTML in
it goes to the page unsanitised, with the person's token in reach. So text we did not write is
rewritten, line by line, into Markdown whose rendering (by marked, JupyterLab's parser) holds no
HTML of its own:

- every ``<`` outside a fenced code block becomes ``&lt;`` (no tag, no autolink, no HTML block);
  an inline code span holding ``<`` or ``[`` becomes ``<code>`` with escaped content, so it
  still reads as code;
- a fenced code block stays verbatim only when it is unambiguous (opened at most three spaces
  in, outside any blockquote or list marker, every line indented at least as far as the fence,
  closed by a plain fence). At the first line that breaks this, the rest of the text is treated
  as prose: a fence marker that marked could read differently from us is broken with a
  backslash, so that marked never sees a code block we do not, and never the other way round.
  A blank line goes around each fence: JupyterLab takes TeX out before marked runs, and TeX
  between ``$$`` pairs spans lines up to a blank one, so it could take a fence line away and
  leave the block's verbatim body to marked as prose;
- a link survives only as ``[text](url)`` with plain text and an ``http(s)``, ``mailto`` or
  relative target (no ``javascript:``, ``data:``, ``vbscript:``; no reference definitions);
  every other ``[`` is escaped;
- an image survives only with a relative path or an inline PNG / JPEG / GIF: a remote image
  becomes a link, because fetching it would send its URL (which can carry the notebook's data)
  without a click;
- TeX commands that make links or styles (``\\href``, ``\\style``...) are defused.
"""

from __future__ import annotations

import html
import re

# Our own constant HTML lines (the transcript's collapsed reasoning). Allowed only as a whole
# line followed by a blank line, so the HTML block marked makes of it holds nothing else.
_OWN_LINES = re.compile(r"^(?:<details><summary>[^<>\n]{1,200}</summary>|</details>)$")
# An inline break with more on its line (alone on a line, marked would open an HTML block).
_OWN_BREAK = re.compile(r"<br>(?=[ \t]*[^ \t])")
_OPEN = re.compile(r"^( {0,3})(`{3,}(?=[^`]*$)|~{3,})(.*)$")
_FENCE_LIKE = re.compile(r"^([ \t>*+\-0-9.)]*?)(`{3,}|~{3,})")
_OWN_CODE = re.compile(r"<code>([^<]*)</code>")
_CLOSE_REST = re.compile(r"[~`]* *")
_INFO = re.compile(r"^[\w.+#-]{0,40}$")
_LINK = re.compile(r"\[([^\[\]\\`<>\n]*)\]\(((?:[^()\s<>\\\"'`]|\([^()\s<>\\\"'`]*\))*)\)")
_TASK = re.compile(r"\[[ xX]\](?=[ \t])")
_REMOTE = re.compile(r"^(?:https?://[^\s]+|mailto:[^\s]+)$")
_RELATIVE = re.compile(r"^(?!/)(?!.*[:&\\])[^\s]+$")
_DATA_IMAGE = re.compile(r"^data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=]+$")
_TEX = re.compile(r"\\(href|style|class|cssId|data|unicode|require|url)(?![A-Za-z])")
# What marked or JupyterLab's TeX pass would read inside ``<code>`` (prose to them).
_CODE_PUNCT = set("\\`*_[]~!|$")
_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Info strings that make JupyterLab run a renderer of its own on the block's text.
_RENDERED_INFO = {"mermaid"}


def safe_markdown(text: str) -> str:
    """Markdown that renders as the same text, with no HTML, script or remote fetch in it."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    fence = ""  # the opening run of the code block we are in ("" = prose)
    indent = 0
    trusted = True  # False after a fence we could not follow: prose to the end
    after_fence = False
    for i, line in enumerate(lines):
        if after_fence and line.strip():
            out.append("")  # TeX must not span a fence line (module doc)
        after_fence = False
        if fence:
            state = _in_fence(line, fence, indent)
            if state == "code":
                out.append(line)
                continue
            if state == "close":
                out.append(line)
                fence, after_fence = "", True
                continue
            fence, trusted = "", False  # marked may read this line otherwise: prose from here
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if _OWN_LINES.match(line) and not following.strip():
            out.append(line)
            continue
        opened = _OPEN.match(line) if trusted else None
        if opened:
            lead, run, info = opened.groups()
            info = info.strip()
            if not _INFO.match(info) or info.lower() in _RENDERED_INFO:
                info = ""
            fence, indent = run, len(lead)
            if out and out[-1].strip():
                out.append("")  # TeX must not span a fence line (module doc)
            out.append(f"{lead}{run}{info}")
            continue
        like = _FENCE_LIKE.match(line)
        if like:  # a fence marker we do not follow: break it so marked does not either
            line = f"{like.group(1)}\\{line[like.end(1) :]}"
        out.append(_inline(line))
    return "\n".join(out)


def _in_fence(line: str, fence: str, indent: int) -> str:
    """'code', 'close', or 'break' (a line we cannot be sure marked keeps in the block)."""
    if not line.strip():
        return "code"
    body = line.lstrip(" \t")
    lead = line[: len(line) - len(body)]
    rest = body[len(fence) :]
    if body.startswith(fence) and not rest.strip("`~ \t"):
        # A closing fence for marked (whose closer is laxer than CommonMark's), or a line
        # that closes the block inside some list item we cannot see: stop trusting.
        exact = "\t" not in lead and len(lead) <= 3 and _CLOSE_REST.fullmatch(rest)
        return "close" if exact else "break"
    if indent and (len(lead) < indent or "\t" in lead):
        return "break"  # the block may belong to a list item this line has left
    return "code"


def _inline(line: str) -> str:
    """One line of prose: no raw ``<``, only checked links, code spans kept readable."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n and line[i + 1] in _PUNCT:
            nxt = line[i + 1]
            out.append("&lt;" if nxt == "<" else line[i : i + 2])
            i += 2
        elif c == "`":
            j = i
            while j < n and line[j] == "`":
                j += 1
            run = line[i:j]
            end = _closing_run(line, j, len(run))
            if end < 0:
                out.append(run)
                i = j
            else:
                content = line[j:end]
                # Kept as a span only if it reads the same as prose: marked may pair the
                # backticks of a paragraph otherwise than this one line shows.
                verbatim = "<" not in content and "[" not in content
                out.append(run + content + run if verbatim else _code(content))
                i = end + len(run)
        elif c == "<":
            own = _OWN_CODE.match(line, i)
            if own:  # what _code made on an earlier pass: its content checked again
                out.append(f"<code>{_inline(own.group(1))}</code>")
                i = own.end()
            elif _OWN_BREAK.match(line, i):
                out.append("<br>")
                i += 4
            else:
                out.append("&lt;")
                i += 1
        elif c == "!" and line.startswith("[", i + 1):
            link = _LINK.match(line, i + 1)
            if link and _image_ok(link.group(2)):
                out.append("!" + link.group(0))
            elif link and _link_ok(link.group(2)):
                if out and out[-1] == "!":  # "!![..](..)": that bang would make it an image
                    out[-1] = "\\!"
                out.append(f"[image: {link.group(1)}]({link.group(2)})")
            else:
                out.append("!\\[")
                i += 2
                continue
            i = link.end()
        elif c == "[":
            link = _LINK.match(line, i)
            if link and _link_ok(link.group(2)):
                out.append(link.group(0))
                i = link.end()
            elif _TASK.match(line, i):
                out.append(line[i : i + 3])
                i += 3
            else:
                out.append("\\[")
                i += 1
        else:
            out.append(c)
            i += 1
    return _TEX.sub(r"\\mathrm{\1}", "".join(out))


def _closing_run(line: str, start: int, size: int) -> int:
    """Where the next backtick run of exactly ``size`` starts, or -1."""
    i, n = start, len(line)
    while i < n:
        if line[i] != "`":
            i += 1
            continue
        j = i
        while j < n and line[j] == "`":
            j += 1
        if j - i == size:
            return i
        i = j
    return -1


def _code(content: str) -> str:
    """An inline code span as an inert ``<code>`` element with escaped content."""
    if content.startswith(" ") and content.endswith(" ") and content.strip():
        content = content[1:-1]
    body = "".join(
        html.escape(ch, quote=False) if ch in "<>&" else ("\\" + ch if ch in _CODE_PUNCT else ch)
        for ch in content
    )
    return f"<code>{body}</code>"


def _link_ok(url: str) -> bool:
    return bool(_REMOTE.match(url) or _RELATIVE.match(url)) and not url.startswith("//")


def _image_ok(url: str) -> bool:
    if _DATA_IMAGE.match(url):
        return True
    return bool(_RELATIVE.match(url)) and not url.startswith(("//", "#", "?"))
