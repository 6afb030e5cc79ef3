"""Pure-Python reproduction of pycocoevalcap's PTB tokenisation (no Java needed).

pycocoevalcap runs Stanford CoreNLP 3.4.1's ``PTBTokenizer -preserveLines -lowerCase`` on all
captions (one per line) and then drops the punctuation tokens of
:data:`capeval.text.COCO_PUNCTUATION`. :class:`PTBTokenizer` returns the same token lists as
:class:`capeval.text.ptb_java.JavaPTBTokenizer` for the same list of captions.

How it works
------------
CoreNLP's tokenizer is a JFlex scanner: at every position the rule with the *longest* match wins
(trailing context counts towards the length), ties go to the rule listed first, and some rules
hand characters back ("push back") for the next token. :func:`_scan` does the same with a list of
Python regular expressions (:data:`_RULES`), each tried only at the characters it can start with.
The rules, the abbreviation lists and the character classes were established by probing the 3.4.1
jar with crafted inputs (see ``docs/tokenizer.md``; ``benchmarks/ptb_char_tables.py`` regenerates
the letter/digit/deleted character tables in ``_ptb_tables.py``).

Java quirks that are reproduced on purpose:

* contractions are split (``do n't``, ``it 's``, ``ca n't``), and so are ``cannot`` -> ``can not``,
  ``gonna`` -> ``gon na`` (also ``gotta lemme gimme wanna 'tis 'twas``);
* brackets become ``-lrb- -rrb- -lsb- -rsb- -lcb- -rcb-`` *after* lower-casing, so COCO's
  case-sensitive punctuation list does not remove them;
* a period glued to a known abbreviation or to a single letter stays in the token (``st.``,
  ``etc.``, ``u.s.``, ``a.``), and words joined by ``.``/``!``/``?`` without a space are one token
  (``dog.the``);
* ``2 1/2`` and phone numbers are single tokens whose inner spaces become U+00A0;
* untokenizable characters (emoji and other characters outside the Basic Multilingual Plane,
  control characters, private-use characters ...) are deleted and split words;
* context crosses caption boundaries like in Java, where captions are lines of one file: whether
  ``letter A.`` keeps ``a.`` depends on whether the *next* caption starts with ``The``/``A``/...

Speed: captions made only of ASCII letters and spaces, with commas/periods at word ends and no
abbreviation before a period (96.7 % of COCO), take a fast path; everything else goes through the
scanner. Rules that could scan far and fail remember where they failed, so the scanner stays
linear (see ``tests/text/test_ptb_tokenizer.py`` for the 10,000-character checks).
"""
from __future__ import annotations

import gc
import re
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np

from capeval.text import _ptb_tables

__all__ = ["PTBTokenizer", "ptb_tokenize_line"]

# --------------------------------------------------------------------------------------------
# Character classes
# --------------------------------------------------------------------------------------------


def _class_body(ranges: Sequence[tuple[int, int]]) -> str:
    parts = []
    for a, b in ranges:
        parts.append(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}")
    return "".join(parts)


_L = _class_body(_ptb_tables.LETTER)
_D = _class_body(_ptb_tables.DIGIT)
_A = _class_body(_ptb_tables.ALPHA)
LET = f"[{_L}\u00ad]"  # PTBLexer's {LETTER}: letters, combining marks, soft hyphen ... (words)
ALPHA = f"[{_A}]"  # JFlex [:letter:] (hyphenated words, apostrophe words, file names)
DIG = f"[{_D}]"
LD = f"[{_L}\u00ad{_D}]"
AD = f"[{_A}{_D}]"

_DELETED = frozenset(chr(c) for a, b in _ptb_tables.DELETED for c in range(a, b + 1))

SPACE = "[ \t\u00a0\u2000-\u200a\u3000]"
SPACENL = "[ \t\u00a0\u2000-\u200a\u3000\n]"
UPPER = "[A-Z\u00c0-\u00d6\u00d8-\u00de\u0391-\u03a9\u0410-\u042f]"
APOS = "(?:['\u0092\u2019]|(?i:&apos;))"
APOSETC = "(?:['\u0092\u2019`\u0091\u2018\u201b]|(?i:&apos;))"
HYPHEN = "[-_\u058a\u2010\u2011]"

# Line-break characters; like JavaPTBTokenizer we turn them into spaces first.
_LINE_BREAK_TO_SPACE = str.maketrans({c: " " for c in "\n\r\x0b\x0c\x85\u2028\u2029"})

# --------------------------------------------------------------------------------------------
# Token normalisations (what PTBLexer's actions do to the matched text)
# --------------------------------------------------------------------------------------------

_LEFT_SINGLE = re.compile("[\u0082\u008b\u0091\u2018\u201b\u2039]")
_RIGHT_SINGLE = re.compile("[\u0092\u009b\u2019\u203a]")
_LEFT_DOUBLE = re.compile("[\u0084\u0093\u201c\u00ab]|[\u0091\u2018]'")
_RIGHT_DOUBLE = re.compile("[\u0094\u201d\u00bb]|[\u0092\u2019]'")
_APOS_ENTITY = re.compile("&apos;", re.I)
_DOUBLE_QUOTE = re.compile("\"|''|(?i:&quot;)")


def _quotes(tok: str, probably_left: bool) -> str:
    """PTB 'LaTeX quotes': ' -> ` or ', \" -> `` or '' by direction; curly quotes by their shape."""
    if probably_left:
        tok = _APOS_ENTITY.sub("`", tok.replace("'", "`"))
        tok = _DOUBLE_QUOTE.sub("``", tok)
    else:
        tok = _APOS_ENTITY.sub("'", tok)
        tok = _DOUBLE_QUOTE.sub("''", tok)
    tok = _LEFT_DOUBLE.sub("``", tok)
    tok = _RIGHT_DOUBLE.sub("''", tok)
    tok = _LEFT_SINGLE.sub("`", tok)
    return _RIGHT_SINGLE.sub("'", tok)


def _left_quote(tok: str) -> str:
    return _quotes(tok, True)


def _right_quote(tok: str) -> str:
    return _quotes(tok, False)


def _amp(tok: str) -> str:
    return re.sub("&amp;", "&", tok, flags=re.I)


def _no_soft_hyphen(tok: str) -> str:
    return tok.replace("\u00ad", "")


def _nbsp(tok: str) -> str:
    return tok.replace(" ", "\u00a0")


def _phone(tok: str) -> str:
    return tok.replace(" ", "\u00a0").replace("(", "-LRB-").replace(")", "-RRB-")


def _smiley(tok: str) -> str:
    return tok.replace("(", "-LRB-").replace(")", "-RRB-")


_FRACTIONS = {"\u00bc": "1/4", "\u00bd": "1/2", "\u00be": "3/4", "\u2153": "1/3", "\u2154": "2/3"}
_CURRENCY = {"\u00a2": "cents", "\u00a3": "#", "\u00a4": "$", "\u20a0": "$", "\u20ac": "$", "\u0080": "$"}
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}
# Single characters whose token is rewritten (CP1252 code points are read as CP1252).
_SINGLE_CHAR = {
    **_BRACKETS,
    **_FRACTIONS,
    **_CURRENCY,
    '"': "''",
    "\u0091": "`",
    "\u0092": "'",
    "\u0093": "``",
    "\u0094": "''",
    "\u0096": "--",
    "\u0097": "--",
    "\u00ab": "``",
    "\u00bb": "''",
    "\u00ad": "-",
    "\u2013": "--",
    "\u2014": "--",
    "\u2015": "--",
    "\u2018": "`",
    "\u2019": "'",
    "\u201b": "`",
    "\u201c": "``",
    "\u201d": "''",
    "\u2026": "...",
    "\u2039": "`",
    "\u203a": "'",
}


def _ci(alternatives: str) -> str:
    return f"(?i:{alternatives})"


# --------------------------------------------------------------------------------------------
# Macros (JFlex is %caseless: literal text matches in any case, character classes do not)
# --------------------------------------------------------------------------------------------

WORD = f"{LET}{LD}*(?:[.!?]{LET}{LD}*)*"
REDAUX = f"{APOS}(?:[msdMSD]|{_ci('re|ve|ll')})"
SWORD = "[A-Za-z\u00ad]*[A-MO-Za-mo-z]\u00ad*"
SREDAUX = f"{_ci('n')}{APOSETC}{_ci('t')}"
_ACRO_SPECIAL = _ci("(?:canada|sino|korean|eu|japan|non)-u\\.s|u\\.s\\.-(?:u\\.k|soviet)")
ACRO = _ACRO_SPECIAL + "|[A-Za-z](?:\\.[A-Za-z])*"
ACRO2 = _ACRO_SPECIAL + "|[A-Za-z](?:\\.[A-Za-z])+"
ABBREV1 = (
    "(?:"
    + _ci(
        "jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|mon|tues?|wed|thu|thurs|fri"
        "|ala|ariz|calif|colo|conn|ct|dak|fla|ga|ind|kans?|ky|md|mich|minn|mo|mont|neb|nev|okla|penn|tenn"
        "|va|vt|wisc?|wyo|inc|cos?|corp|ltd|plc|rt|bancorp|bhd|assn|univ|intl|sys|tel|est|ext|sq"
        "|jr|sr|bros|(?:ed|ph)\\.d|blvd|rd|esq|etc|al|seq|bldg"
    )
    + f"|{_ci('pp?t')}[ye]{_ci('s')}?"
    + f"|A{_ci('z|rk')}|D{_ci('el')}|I{_ci('ll')}|L{_ci('a')}|M{_ci('ass|iss')}|O{_ci('re')}|P{_ci('a')}"
    + f"|T{_ci('ex')}|W{_ci('ash')})\\."
)
ABTITLE = _ci(
    "mr|mrs|ms|drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|govs?|adm|rev|maj|sgt|cpl|pvt|capt"
    "|ste?|ave|pres|lieut|hon|brig|co?mdr|pfc|spc|supts?|det|mt|ft|adj|adv|asst|assoc|ens|insp|mlle|mme"
    "|msgr|sfc|vs|alex|wm|jos|cie|a\\.k\\.a|cf|treas|ph|invt|elec|natl|dept"
) + f"|M{_ci('iss')}|v|{_ci('m')}[ft]{_ci('g')}"
ABBREV2_TITLE = f"(?:{ABTITLE})\\."
ABBREV2_ACRO = f"(?:{ACRO})\\."
ABBREV3 = _ci("ca|figs?|prop|nos?|art|bldg|pp|op") + "\\."
SGML = (
    "<(?:[!?][A-Za-z-][^>\n]*"
    "|[A-Za-z][A-Za-z0-9_:.-]*(?: +[A-Za-z][A-Za-z0-9_:.-]*(?: *= *(?:'[^'\n]*'|\"[^\"\n]*\"))?)* */?"
    "|/[A-Za-z][A-Za-z0-9_:.-]*) *>"
)
_ACRONYM_FOLLOWERS = (
    "A(?i:bout|ccording|dditionally|fter|n|s|t)|A|B(?i:ut)|D(?i:id|uring)|E(?i:arlier)"
    "|H(?i:e|er|ere|ow|owever)|I(?i:f|n|t)|L(?i:ast)|M(?i:any|ore)|M(?i:r|s)\\.|N(?i:ow)"
    "|O(?i:nce|ne|ther|ur)|S(?i:he|ince|o|ome|uch)|T(?i:hat|he|heir|hen|here|hese|hey|his)"
    "|W(?i:e|hen|hile|hat|ho|hy)|Y(?i:et|ou)|" + SGML
)
THING = f"(?:[dDoOlL]{APOSETC}{AD})?{AD}+(?:{HYPHEN}(?:[dDoOlL]{APOSETC}{AD})?{AD}+)*"
HTHING = f"[A-Za-z0-9][A-Za-z0-9.,\u00ad]*(?:-(?:(?:{ACRO2})\\.|[A-Za-z0-9\u00ad]+))+"
FILENAME_EXT = (
    "bat|bmp|c|class|cgi|cpp|dll|doc|docx|exe|gif|gz|h|htm|html|jar|java|jpeg|jpg|mov|mp3|pdf|php|pl|png|ppt|ps|py"
    "|sql|tar|txt|wav|x|xml|zip"
)
FILENAME = f"{AD}+(?:\\.{AD}+)*\\.{_ci(FILENAME_EXT)}"
NUM_SEP = "[.:,\u00ad\u066b\u066c]"
QUOTES = "(?:[`\u2018-\u201f\u0091-\u0094\u2039\u203a\u00ab\u00bb]{1,2}|" + APOS + ")"
QUOTES_2 = "(?:[`\u2018\u201a-\u201f\u0091\u0093\u0094\u2039\u203a\u00ab\u00bb][`\u2018-\u201f\u0091-\u0094\u2039\u203a\u00ab\u00bb]?)"
DBLQUOT = "(?:\"|''|(?i:&quot;))"
PHONE_A = "(?:\\([0-9]{2,3}\\)[ \u00a0]?|(?:\\+\\+?)?(?:[0-9]{2,4}[- \u00a0])?[0-9]{2,4}[- \u00a0])[0-9]{3,4}[- \u00a0]?[0-9]{3,5}"
PHONE_B = "(?:(?:\\+\\+?)?[0-9]{2,4}\\.)?[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}"
# `,-_` is a range (U+002C-U+005F: digits, upper case, :;<=>?@[\\]^) in JFlex as in Python.
LIKELYURL_LABEL = "[^ \t\n\f\r\"`'<>|.!?(){},-_$]"
URL_END = "[^ \t\n\f\r\"<>|.!?(){},-]"

# --------------------------------------------------------------------------------------------
# Rules: (name, characters it can start with, pattern, action). A pattern may name its token
# part ``t``; the rest of the match is trailing context (it counts for the longest match, then
# is handed back). An action returns (tokens, characters consumed).
# --------------------------------------------------------------------------------------------

Action = Callable[[re.Match], tuple[list[str], int]]


def _emit(fn: Callable[[str], str] | None = None) -> Action:
    def action(m: re.Match) -> tuple[list[str], int]:
        tok = m.group("t") if "t" in m.re.groupindex else m.group(0)
        return [fn(tok) if fn else tok], len(tok)

    return action


def _emit_const(const: str) -> Action:
    def action(m: re.Match) -> tuple[list[str], int]:
        tok = m.group("t") if "t" in m.re.groupindex else m.group(0)
        return [const], len(tok)

    return action


def _pushback(n: int) -> Action:
    """Emit the match minus its last ``n`` characters, which are scanned again."""

    def action(m: re.Match) -> tuple[list[str], int]:
        tok = m.group(0)[:-n]
        return [tok], len(tok)

    return action


def _abbrev_sentence_end(m: re.Match) -> tuple[list[str], int]:
    """ABBREV1 before a sentence end: the token keeps its period and the period is re-read."""
    tok = m.group("t")
    return [tok], len(tok) - 1


def _abbrev_at_end(m: re.Match) -> tuple[list[str], int]:
    """ABBREV1 with nothing after it (end of input): like a sentence end."""
    tok = m.group(0)
    return [tok], len(tok) - 1


def _acronym_sentence_end(m: re.Match) -> tuple[list[str], int]:
    """Acronym before a sentence-starting word: ``U.S.`` + ``.``, but ``A.`` -> ``A`` + ``.``."""
    tok = m.group("t")
    if len(tok) == 2:
        return [tok[0]], 1
    return [tok], len(tok) - 1


def _emit_filename(m: re.Match) -> tuple[list[str], int]:
    tok = m.group("t") or m.group("t2")
    return [tok], len(tok)


def _ellipsis(m: re.Match) -> tuple[list[str], int]:
    return ["..."], len(m.group(0))


def _hyphens(m: re.Match) -> tuple[list[str], int]:
    tok = m.group(0)
    return ["--" if 3 <= len(tok) <= 4 else tok], len(tok)


def _skip(m: re.Match) -> tuple[list[str], int]:
    return [], len(m.group(0))


def _single_char(m: re.Match) -> tuple[list[str], int]:
    ch = m.group(0)
    if ch in _DELETED or ord(ch) > 0xFFFF or "\ud800" <= ch <= "\udfff":
        return [], 1
    return [_SINGLE_CHAR.get(ch, ch)], 1


_RULE_SPECS: list[tuple[str, str, str, Action]] = [
    ("PROG_LANGS", "[cCfF]", _ci("c\\+\\+|[cf]#"), _emit()),
    ("ASSIMILATIONS3", "[cC']", _ci("cannot|'twas"), _pushback(3)),
    ("ASSIMILATIONS2", "[gGlLwW']", _ci("'tis|gonna|gotta|lemme|gimme|wanna"), _pushback(2)),
    ("SGML", "<", SGML, _emit(_nbsp)),
    ("SPMDASH", "[&\u0096\u0097\u2013\u2014\u2015]", _ci("&(?:md|mdash|ndash);") + "|[\u0096\u0097\u2013\u2014\u2015]", _emit_const("--")),
    ("SPAMP", "&", _ci("&amp;"), _emit_const("&")),
    ("SPPUNC", "&", _ci("&(?:ht|tl|ur|lr|qc|ql|qr|odq|cdq|#[0-9]+);"), _emit()),
    ("SOFT_HYPHENS", "\u00ad", "\u00ad+", _emit_const("-")),
    ("WORD_REDAUX", LET, f"(?P<t>{WORD}){REDAUX}", _emit(_no_soft_hyphen)),
    ("SWORD_SREDAUX", "[A-Za-z\u00ad]", f"(?P<t>{SWORD}){SREDAUX}", _emit(_no_soft_hyphen)),
    ("WORD", LET, WORD, _emit(_no_soft_hyphen)),
    *[
        ("APOWORD", f"['\u0092\u2019&{_L}]", alternative, _emit())
        for alternative in (
            f"{APOS}{_ci('n')}{APOS}?",
            f"[lLdDjJ]{APOS}",
            _ci("dunkin|somethin|ol") + APOS,
            APOS + _ci("em"),
            f"[A-HJ-XZn]{APOSETC}{ALPHA}{{2}}{ALPHA}*",
            f"{APOS}[2-9]0{_ci('s')}",
            APOS + _ci("till?|cause"),
            f"{ALPHA}+[aeiouyAEIOUY]{APOSETC}[aeiouA-Z]{ALPHA}*",
            _ci("'twas|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l"),
            f"{_ci('o')}{APOSETC}{_ci('o')}",
        )
    ],
    ("APOWORD2", "[yY]", f"(?P<t>{_ci('y')}{APOS}){ALPHA}", _emit()),
    ("FULLURL", "[hH]", _ci("https?") + "://[^ \t\n\f\r\"<>|()]+" + URL_END, _emit()),
    (
        "LIKELYURL",
        "[wW]",
        _ci("www") + "\\.(?:[^ \t\n\f\r\"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4}(?:/[^ \t\n\f\r\"<>|()]+" + URL_END + ")?",
        _emit(),
    ),
    (
        "LIKELYURL",
        LIKELYURL_LABEL,
        f"(?:{LIKELYURL_LABEL}+\\.)+" + _ci("com|net|org|edu") + "(?:/[^ \t\n\f\r\"<>|()]+" + URL_END + ")?",
        _emit(),
    ),
    (
        "EMAIL",
        "[<&a-zA-Z0-9]",
        "(?:" + _ci("&lt;") + "|<)?[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00a0{}]*@(?:[^ \t\n\f\r\"<>|(){}.\u00a0]+\\.)*"
        "[^ \t\n\f\r\"<>|(){}.\u00a0]+(?:" + _ci("&gt;") + "|>)?",
        _emit(),
    ),
    ("TWITTER", "[@#]", f"@[a-zA-Z_][a-zA-Z_0-9]*|#{LET}+", _emit()),
    ("REDAUX", "['\u0092\u2019&]", f"(?P<t>{REDAUX})[^A-Za-z]", _emit(_right_quote)),
    ("SREDAUX", "[nN]", f"(?P<t>{SREDAUX})[^A-Za-z]", _emit(_right_quote)),
    ("DATE", DIG, f"{DIG}{{1,2}}[-/]{DIG}{{1,2}}[-/]{DIG}{{2,4}}", _emit()),
    ("NUMBER", f"[-+.:,\u00ad\u066b\u066c{_D}]", f"[-+]?(?:{DIG}*(?:{NUM_SEP}{DIG}+)+|{DIG}+)", _emit(_no_soft_hyphen)),
    ("SUBSUPNUM", "[\u207a\u207b\u208a\u208b\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u2080-\u2089]",
     "[\u207a\u207b\u208a\u208b]?(?:[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+|[\u2080-\u2089]+)", _emit()),
    ("FRAC", DIG, f"(?:{DIG}{{1,4}}[- \u00a0])?{DIG}{{1,4}}(?:\\\\?/|\u2044){DIG}{{1,4}}", _emit(_nbsp)),
    ("FRAC2", "[\u00bc\u00bd\u00be\u2153-\u215e]", "[\u00bc\u00bd\u00be\u2153-\u215e]", _emit(lambda t: _FRACTIONS.get(t, t))),
    (
        "TBSPEC",
        "[-cCsSaApP]",
        _ci("-(?:rrb|lrb|rcb|lcb|rsb|lsb)-|c\\.d\\.s|pro-|anti-|s(?:&|&amp;)p-500|s(?:&|&amp;)ls")
        + f"|{_ci('cap')}{APOS}{_ci('n')}|{_ci('c')}{APOS}{_ci('est')}",
        _emit(_amp),
    ),
    ("THING3", "[A-Za-z0-9]", "[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}", _emit()),
    ("DOLSIGN", "[A-Z$#]", "[A-Z]*\\$|#", _emit()),
    ("DOLSIGN2", "[\u00a2\u00a3\u00a4\u00a5\u0080\u20a0\u20ac\u060b\u0e3f\u20a4\uffe0\uffe1\uffe5\uffe6]",
     "[\u00a2\u00a3\u00a4\u00a5\u0080\u20a0\u20ac\u060b\u0e3f\u20a4\uffe0\uffe1\uffe5\uffe6]",
     _emit(lambda t: _CURRENCY.get(t, t))),
    ("ACRONYM", "[A-Za-z]", f"(?P<t>(?:{ACRO})\\.){SPACENL}+(?:{_ACRONYM_FOLLOWERS}){SPACENL}", _acronym_sentence_end),
    ("ABBREV3", "[a-zA-Z]", f"(?P<t>{ABBREV3}){SPACENL}?{DIG}", _emit()),
    ("PTY_LTD", "[pPcC]", f"(?P<t>{_ci('pt')}[eyEY]\\.|{_ci('co')}\\.){SPACE}{_ci('ltd|lim')}", _emit()),
    ("ABBREV1_SENTEND", "[a-zA-Z]", f"(?P<t>{ABBREV1}){SPACENL}(?:{SPACENL}|{UPPER}|{SGML})", _abbrev_sentence_end),
    ("ABBREV1_INSIDE", "[a-zA-Z]", f"(?P<t>{ABBREV1})[\\s\\S][\\s\\S]", _emit()),
    ("ABBREV1", "[a-zA-Z]", ABBREV1, _abbrev_at_end),
    ("ABBREV2", "[a-zA-Z]", ABBREV2_TITLE, _emit()),
    ("ABBREV2", "[a-zA-Z]", ABBREV2_ACRO, _emit()),
    ("ACRO", "[a-zA-Z]", f"(?P<t>{ACRO}){SPACENL}", _emit()),
    ("TBSPEC2", "['\u0092\u2019&]", f"(?P<t>{APOS}[0-9][0-9]){SPACENL}", _emit()),
    ("FILENAME", AD, f"(?P<t>{FILENAME}){SPACENL}|(?P<t2>{FILENAME})[.?!,]", _emit_filename),
    ("WORD_PERIOD", LET, f"(?P<t>{WORD}\\.)[,;:]", _emit(_no_soft_hyphen)),
    ("PHONE", "[(+0-9]", f"{PHONE_A}|{PHONE_B}", _emit(_phone)),
    ("DBLQUOT_LEFT", "[\"&]", f"(?P<t>\"|{_ci('&quot;')})[A-Za-z0-9$]", _emit(_left_quote)),
    ("DBLQUOT", "[\"'&]", DBLQUOT, _emit(_right_quote)),
    ("LESSTHAN", "[<&]", "<|" + _ci("&lt;"), _emit_const("<")),
    ("GREATERTHAN", "[>&]", ">|" + _ci("&gt;"), _emit_const(">")),
    ("SMILEY", "[<>:;=]", "(?P<t>[<>]?[:;=][-o*']?[()DPdpO\\\\{@|\\[\\]])[^A-Za-z0-9]", _emit(_smiley)),
    (
        "ASIANSMILEY",
        "[-^x=~<>'(]",
        "[-^x=~<>']_[-^x=~<>']|\\([-^x=~<>'][_.]?[-^x=~<>']\\)|\\([\\^x=~<>']-[\\^x=~<>'`]\\)",
        _emit(_smiley),
    ),
    ("HYPHENS", "-", "-+", _hyphens),
    ("LDOTS", "[.\u0085\u2026]", "\\.{3,5}|[\u0085\u2026]", _ellipsis),
    ("SPACEDLDOTS", ".", "\\.[ \u00a0](?:\\.[ \u00a0])+\\.", _ellipsis),
    ("FNMARKS", "[@#_]", "@+|#+|_+", _emit()),
    ("ASTS", "[*\\\\]", "\\*+|(?:\\\\\\*){1,3}", _emit()),
    ("QMARKS", "[?!]", "[?!]+", _emit()),
    ("HTHING", "[A-Za-z0-9]", HTHING, _emit(_no_soft_hyphen)),
    ("HTHING_PERIOD", "[A-Za-z0-9]", f"(?P<t>{HTHING}\\.)[,;:]", _emit(_no_soft_hyphen)),
    (
        "THING",
        AD,
        THING,
        _emit(),
    ),
    (
        "THING_PERIOD",
        AD,
        f"(?P<t>{THING}\\.)[,;:]",
        _emit(),
    ),
    ("THINGA_PERIOD", "[A-Z]", "(?P<t>[A-Z]+(?:(?:[+&]|" + _ci("&amp;") + ")[A-Z]+)+\\.)[,;:]", _emit(_amp)),
    ("THINGA", "[A-Z]", "[A-Z]+(?:(?:[+&]|" + _ci("&amp;") + ")[A-Z]+)+", _emit(_amp)),
    # 3.4.1 never reads a right single quote (U+2019, CP1252 0x92, &apos;) as an opening quote.
    ("QUOTES_LEFT", "['`\u2018\u201a-\u201f\u0091\u0093\u0094\u2039\u203a\u00ab\u00bb]",
     f"(?P<t>'|{QUOTES_2})[A-Za-z][^ \t\u00a0\n]", _emit(_left_quote)),
    ("QUOTES", "['\u0092\u2019&`\u2018-\u201f\u0091-\u0094\u2039\u203a\u00ab\u00bb]", QUOTES, _emit(_right_quote)),
    ("REDAUX_EOF", "['\u0092\u2019&]", REDAUX, _emit(_right_quote)),
    ("SREDAUX_EOF", "[nN]", SREDAUX, _emit(_right_quote)),
    ("FAKEDUCKFEET", "[<>]", "<<|>>", _emit()),
    ("NBSP_ENTITY", "&", _ci("&nbsp;"), _skip),
    ("ANY", "[\\s\\S]", "[\\s\\S]", _single_char),
]


class _Rule:
    __slots__ = ("name", "starts", "match", "action", "failure_run")

    def __init__(self, name: str, starts: str, pattern: str, action: Action) -> None:
        self.name = name
        self.starts = re.compile(starts)
        self.match = re.compile(pattern).match
        self.action = action
        run = _FAILURE_RUNS.get(name)
        self.failure_run = None if run is None else re.compile(run).match


# Rules that scan arbitrarily far before they can fail. When such a rule fails at position i, it
# also fails at every later start inside the run matched here (the rest of the pattern sees the
# same text), so the scanner skips it up to the end of that run. This keeps inputs like
# "a,a,a,a,..." or "+++..." linear instead of quadratic.
_FAILURE_RUNS = {
    "EMAIL": "[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00a0{}]*",
    "LIKELYURL": f"{LIKELYURL_LABEL}+",
    "HTHING": "[A-Za-z0-9][A-Za-z0-9.,\u00ad]*",
    "HTHING_PERIOD": "[A-Za-z0-9][A-Za-z0-9.,\u00ad]*",
    "FILENAME": f"{AD}+(?:\\.{AD}+)*",
    "SGML": "<[^>\n]*\n",  # no '>' before the end of the line: no tag can close
}


_RULES = [_Rule(*spec) for spec in _RULE_SPECS]
_CANDIDATES: dict[str, tuple[_Rule, ...]] = {}


def _candidates(ch: str) -> tuple[_Rule, ...]:
    rules = _CANDIDATES.get(ch)
    if rules is None:
        rules = tuple(r for r in _RULES if r.starts.match(ch))
        if len(_CANDIDATES) < 4096:
            _CANDIDATES[ch] = rules
    return rules


_SKIP_SPACE = re.compile(f"{SPACE}+")
# Only ASCII space/tab/newline: URL and e-mail rules run across other spaces (U+2009 ...).
_LETTERS_BEFORE_SPACE = re.compile("([A-Za-z]+)[ \t\n]")


def _scan(text: str, end: int) -> list[str]:
    """Raw PTB tokens of ``text[:end]``; ``text[end:]`` is the following context (``\\n`` + next line)."""
    out: list[str] = []
    failed_until: dict[_Rule, int] = {}
    i = 0
    while i < end:
        ch = text[i]
        if ch == " " or ch == "\t" or ch == "\u00a0" or "\u2000" <= ch <= "\u200a" or ch == "\u3000":
            i = _SKIP_SPACE.match(text, i).end()
            continue
        if ch <= "z" and ("a" <= ch or "A" <= ch <= "Z"):
            m = _LETTERS_BEFORE_SPACE.match(text, i)
            if m is not None and m.group(1).lower() not in _ASSIMILATIONS:
                # A run of ASCII letters followed by a space is a WORD: every longer rule needs
                # a period, apostrophe, hyphen, slash, digit or other symbol inside the run.
                out.append(m.group(1))
                i = m.end(1)
                continue
        best_len = -1
        best_rule = best_match = None
        for rule in _candidates(ch):
            if rule.failure_run is not None:
                if failed_until.get(rule, -1) > i:
                    continue
                m = rule.match(text, i)
                if m is None:
                    run = rule.failure_run(text, i)
                    if run is not None:
                        failed_until[rule] = run.end()
                    continue
            else:
                m = rule.match(text, i)
            if m is not None and m.end() - i > best_len:
                best_len = m.end() - i
                best_rule, best_match = rule, m
        tokens, consumed = best_rule.action(best_match)
        out.extend(tokens)
        i += consumed
    return out


# --------------------------------------------------------------------------------------------
# Fast path: ASCII letters, spaces, commas and periods
# --------------------------------------------------------------------------------------------

_ASSIMILATIONS = {"cannot": 3, "gonna": 2, "gotta": 2, "lemme": 2, "gimme": 2, "wanna": 2}
# Words that may keep a following period (every ABBREV1/ABBREV2/ABBREV3 stem, lower-cased).
_PERIOD_WORDS = (
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri ala ariz az ark calif colo "
    "conn ct dak del fla ga ill ind kan kans ky la md mass mich minn miss mo mont neb nev okla ore pa penn tenn tex va "
    "vt wash wis wisc wyo inc co cos corp pty ptys pte ptes ppty ppte pptys pptes ltd plc rt bancorp bhd assn univ "
    "intl sys tel est ext sq jr sr bros blvd rd esq etc al seq bldg mr mrs ms dr drs prof profs sen sens rep reps atty "
    "attys lt col gen messrs gov govs adm rev maj sgt cpl pvt capt st ste ave pres lieut hon brig cmdr comdr pfc spc "
    "supt supts det mt ft adj adv asst assoc ens insp mlle mme msgr sfc vs alex wm jos cie cf treas ph invt elec natl "
    "mfg mtg dept ca fig figs prop no nos art pp op"
).split()
_PERIOD_WORD_SET = frozenset(_PERIOD_WORDS)
_PLAIN_TO_SPACE = str.maketrans(",.", "  ")


def _split_assimilations(words: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        cut = _ASSIMILATIONS.get(w)
        if cut:
            out.append(w[:-cut])
            out.append(w[-cut:])
        else:
            out.append(w)
    return out


#: Characters a plain caption may hold (its letters, spaces, commas and periods), by ASCII code.
_PLAIN_CHARS = np.zeros(256, dtype=bool)
_PLAIN_CHARS[[ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,."]] = True
_LETTERS = np.zeros(256, dtype=bool)
_LETTERS[[ord(c) for c in "abcdefghijklmnopqrstuvwxyz"]] = True


def _plain_tokens_of(texts: Sequence[str]) -> list[list[str] | None]:
    """Per text, the lower-cased tokens of a plain caption without its commas and periods, or ``None`` for the
    scanner. A plain caption holds ASCII letters and spaces, with commas and periods only before a space or at the
    end; every token is then a run of letters, and only a period after one letter or an abbreviation
    (:data:`_PERIOD_WORDS`) could stay in one, so those captions go to the scanner. The checks are done with numpy
    over all texts at once."""
    if not texts:
        return []
    # a text with a character outside ASCII, or a newline, is not plain: an empty line in its place
    others = [k for k, t in enumerate(texts) if not t.isascii() or "\n" in t]
    if others:
        texts = list(texts)
        for k in others:
            texts[k] = ""
    joined = "\n".join(texts)
    low = joined.lower()
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    line_starts = np.flatnonzero(chars == 10) + 1
    odd = _not_plain_lines(chars, low, line_starts)
    odd.update(others)
    words_split = {int(np.searchsorted(line_starts, at, side="right")) for at in _assimilation_words(low)}
    lines = low.translate(_PLAIN_TO_SPACE).split("\n")
    out: list[list[str] | None] = list(map(str.split, lines))
    for k in odd:
        out[k] = None
    for k in words_split - odd:
        out[k] = _split_assimilations(out[k])
    return out


def _assimilation_words(low: str) -> list[int]:
    """Where a word of :data:`_ASSIMILATIONS` stands alone (no letter on either side) in ``low``."""
    found = []
    for word in _ASSIMILATIONS:
        at = low.find(word)
        while at != -1:
            end = at + len(word)
            if (at == 0 or not ("a" <= low[at - 1] <= "z")) and (end == len(low) or not ("a" <= low[end] <= "z")):
                found.append(at)
            at = low.find(word, end)
    return found


def _not_plain_lines(chars: np.ndarray, low: str, line_starts: np.ndarray) -> set[int]:
    """The lines (starting at ``line_starts``) of the ASCII text ``chars`` (its lower case ``low``) that are not plain
    (:func:`_plain_tokens_of`):
    a character outside a plain caption, a comma or period before anything but a space, a period after one letter
    or a word of :data:`_PERIOD_WORDS`."""
    newline = chars == 10
    bad = ~(_PLAIN_CHARS[chars] | newline)
    after = np.ones(chars.size, dtype=bool)  # what follows is a space, a newline or the end
    after[:-1] = (chars[1:] == 32) | newline[1:]
    bad |= ((chars == 44) | (chars == 46)) & ~after
    periods = np.flatnonzero(chars == 46)
    if periods.size:
        # the letters before each period: from after the last non-letter before it
        others = np.flatnonzero(~_LETTERS[np.frombuffer(low.encode("ascii"), dtype=np.uint8)])
        before = np.searchsorted(others, periods, side="left") - 1  # the last non-letter before the period
        word_start = np.where(before >= 0, others[np.maximum(before, 0)] + 1, 0)
        length = periods - word_start
        bad[periods[length == 1]] = True
        maybe = (length > 1) & (length <= _LONGEST_PERIOD_WORD)
        for at, begin in zip(periods[maybe].tolist(), word_start[maybe].tolist()):
            if low[begin:at] in _PERIOD_WORD_SET:
                bad[at] = True
    return set(np.searchsorted(line_starts, np.flatnonzero(bad), side="right").tolist())


_LONGEST_PERIOD_WORD = max(map(len, _PERIOD_WORDS))


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

_LOOKAHEAD_CHARS = 40  # enough for every trailing context that can cross a caption boundary
_IDEOGRAPHIC = re.compile("[\u3040-\u30ff\u4e00-\u9fff\uf900-\ufaff]")
_WORD_CHAR_MIDDLE = "'.:\u00b7\u2019-\u2010_"


def _is_word_char(tok: str, j: int) -> bool:
    """Approximates java.text.BreakIterator's word rules (ideographs are words of their own)."""
    ch = tok[j]
    if (ch.isalnum() or unicodedata.category(ch)[0] == "M") and not _IDEOGRAPHIC.match(ch):
        return True
    # Word-internal punctuation between two letters.
    return ch in _WORD_CHAR_MIDDLE and 0 < j < len(tok) - 1 and tok[j - 1].isalpha() and tok[j + 1].isalpha()


def _final_sigma(tok: str, i: int) -> bool:
    """Java's rule: a cased letter before the sigma and none after it, within the same word."""
    j = i - 1
    while j >= 0 and _is_word_char(tok, j):
        if tok[j].lower() != tok[j].upper():
            k = i + 1
            while k < len(tok) and _is_word_char(tok, k):
                if tok[k].lower() != tok[k].upper():
                    return False
                k += 1
            return True
        j -= 1
    return False


def _java_lower(tok: str) -> str:
    """``String.toLowerCase``: Python's lower() except for Java's word-based final-sigma rule."""
    if "\u03a3" not in tok:
        return tok.lower()
    chars = [("\u03c2" if _final_sigma(tok, i) else "\u03c3") if ch == "\u03a3" else ch for i, ch in enumerate(tok)]
    return "".join(chars).lower()


def ptb_tokenize_line(text: str, next_text: str | None = None) -> list[str]:
    """Raw PTB tokens (lower-cased, punctuation kept) of one caption, like one output line of Java.

    ``next_text`` is the caption on the following line, or ``None`` for the last line: a few
    rules look past the end of the line (e.g. ``U.S.`` before ``The``).
    """
    line = text.translate(_LINE_BREAK_TO_SPACE)
    if next_text is None:
        follow = ""
    elif len(next_text) < _LOOKAHEAD_CHARS:
        follow = next_text.translate(_LINE_BREAK_TO_SPACE) + "\n"
    else:
        follow = next_text[:_LOOKAHEAD_CHARS].translate(_LINE_BREAK_TO_SPACE)
    return [_java_lower(t) for t in _scan(line + "\n" + follow, len(line))]


class PTBTokenizer:
    """pycocoevalcap's tokenisation in pure Python: lower-cased PTB tokens minus COCO punctuation.

    ``tokenize(texts)`` returns, for each text, exactly what ``JavaPTBTokenizer().tokenize(texts)``
    returns (agreement measured in ``docs/tokenizer.md``). Texts are treated like the lines of
    one file, as pycocoevalcap does: a caption's last token can depend on how the next caption
    starts (``the letter A.`` + ``The ...`` -> ``a``; otherwise ``a.``). Pass
    ``line_context=False`` for tokens that depend on the caption alone.
    """

    def __init__(self, line_context: bool = True) -> None:
        """``line_context=False`` tokenises every text as if it were alone in the file (as the jar
        does for a one-caption input), so a caption's tokens never depend on its neighbours.
        capeval's default tokenizer ``ptb`` uses ``line_context=False``; ``ptb-ctx`` uses ``True``."""
        self.line_context = line_context
        #: signature name; ``+ctx`` marks list-context tokenisation
        self.name = "ptb-py.1+ctx" if line_context else "ptb-py.1"

    def _next(self, texts: Sequence[str], k: int) -> str | None:
        return texts[k + 1] if self.line_context and k + 1 < len(texts) else None

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Token lists (lower-cased, COCO punctuation removed), one per text, in order.

        Raises ``ValueError`` naming the index of the first text that is not a ``str``.
        """
        from capeval.text import COCO_PUNCTUATION

        _check_texts(texts)
        out: list[list[str]] = []
        gc_was_enabled = gc.isenabled()
        gc.disable()  # millions of small acyclic lists: the cyclic GC would only cost time
        try:
            for k, (text, words) in enumerate(zip(texts, _plain_tokens_of(texts))):
                if words is None:
                    # pycocoevalcap's post-processing: join, strip trailing whitespace, split on " ".
                    line = " ".join(ptb_tokenize_line(text, self._next(texts, k))).rstrip()
                    words = [t for t in line.split(" ") if t and t not in COCO_PUNCTUATION]
                out.append(words)
        finally:
            if gc_was_enabled:
                gc.enable()
        return out

    def tokenize_lines(self, texts: Sequence[str]) -> list[str]:
        """Raw output lines (space-separated, punctuation kept), like ``JavaPTBTokenizer.tokenize_lines``."""
        _check_texts(texts)
        return [" ".join(ptb_tokenize_line(t, self._next(texts, k))) for k, t in enumerate(texts)]


def _check_texts(texts: Sequence[str]) -> None:
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{k}] is a {type(text).__name__}, not a str")
