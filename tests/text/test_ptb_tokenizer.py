"""PTB tokenizer: pure Python (capeval.text.ptb) vs the Java original (CoreNLP 3.4.1 jar).

Hand-crafted cases store the tokens the jar produced; with Java available they are re-checked
against the jar, otherwise against the stored lists. Agreement tests run both tokenizers on COCO
and Karpathy-test captions and on seeded random strings.
"""
from __future__ import annotations

import random

import pytest

from capeval.testing import UNICODE_SAMPLE, random_strings
from capeval.text import COCO_PUNCTUATION, get_tokenizer
from capeval.text.ptb import PTBTokenizer, ptb_tokenize_line

# (caption, tokens after COCO punctuation removal) -- tokens produced by the Java jar.
CASES: list[tuple[str, list[str]]] = [
    ('A man riding a bike down the street.', ['a', 'man', 'riding', 'a', 'bike', 'down', 'the', 'street']),
    ('a man riding a bike down the street', ['a', 'man', 'riding', 'a', 'bike', 'down', 'the', 'street']),
    ('Two dogs play , while a cat watches .', ['two', 'dogs', 'play', 'while', 'a', 'cat', 'watches']),
    ("A dog's bone and the dogs' bones.", ['a', 'dog', "'s", 'bone', 'and', 'the', 'dogs', 'bones']),
    ("It's a cat that's sitting; it isn't happy.", ['it', "'s", 'a', 'cat', 'that', "'s", 'sitting', 'it', 'is', "n't", 'happy']),
    ("I'm sure they're there, we'll see, you've been, he'd go.", ['i', "'m", 'sure', 'they', "'re", 'there', 'we', "'ll", 'see', 'you', "'ve", 'been', 'he', "'d", 'go']),
    ("Don't can't won't shan't ain't DON'T CAN'T.", ['do', "n't", 'ca', "n't", 'wo', "n't", 'sha', "n't", 'ai', "n't", 'do', "n't", 'ca', "n't"]),
    ("The cat cannot jump, I'm gonna wanna gotta lemme gimme.", ['the', 'cat', 'can', 'not', 'jump', 'i', "'m", 'gon', 'na', 'wan', 'na', 'got', 'ta', 'lem', 'me', 'gim', 'me']),
    ("'Tis the season, 'twas the night.", ["'t", 'is', 'the', 'season', "'t", 'was', 'the', 'night']),
    ("rock 'n' roll and rock'n'roll, y'all.", ['rock', "'n'", 'roll', 'and', 'rock', "'n'", 'roll', "y'", 'all']),
    ("O'Neil's dog at 5 o'clock with l'amour.", ["o'neil", "'s", 'dog', 'at', '5', "o'clock", 'with', "l'amour"]),
    ('"Hello," he said, "it\'s here."', ['hello', 'he', 'said', 'it', "'s", 'here']),
    ("A sign that says 'STOP' on a pole.", ['a', 'sign', 'that', 'says', 'stop', 'on', 'a', 'pole']),
    ("'a' and 'I' are letters.", ['a', 'and', 'i', 'are', 'letters']),
    ("He said ``hi'' and `bye'.", ['he', 'said', 'hi', 'and', 'bye']),
    ('A cat (with a hat) [sleeping] {quietly} <inside>.', ['a', 'cat', '-lrb-', 'with', 'a', 'hat', '-rrb-', '-lsb-', 'sleeping', '-rsb-', '-lcb-', 'quietly', '-rcb-', '<inside>']),
    ('The U.S. flag flies in the U.S.', ['the', 'u.s.', 'flag', 'flies', 'in', 'the', 'u.s.']),
    ('Mr. Smith and Dr. Jones visit St. Louis with Mrs. Brown.', ['mr.', 'smith', 'and', 'dr.', 'jones', 'visit', 'st.', 'louis', 'with', 'mrs.', 'brown']),
    ('Fruit, vegetables, etc. are on the table.', ['fruit', 'vegetables', 'etc.', 'are', 'on', 'the', 'table']),
    ('Fruits, vegetables etc.', ['fruits', 'vegetables', 'etc.']),
    ('It is 10 a.m. or 5 p.m. e.g. morning i.e. early.', ['it', 'is', '10', 'a.m.', 'or', '5', 'p.m.', 'e.g.', 'morning', 'i.e.', 'early']),
    ('A bus from Apple Inc. parked at the corner.', ['a', 'bus', 'from', 'apple', 'inc.', 'parked', 'at', 'the', 'corner']),
    ('A sign for No. 5 and fig. 3 and ca. 1900.', ['a', 'sign', 'for', 'no.', '5', 'and', 'fig.', '3', 'and', 'ca.', '1900']),
    ('the letter A. on a sign', ['the', 'letter', 'a.', 'on', 'a', 'sign']),
    ('Jan. 5 sept. 10 Mon. Fri.', ['jan.', '5', 'sept.', '10', 'mon.', 'fri.']),
    ('Wait... what.... ok. . . then', ['wait', 'what', 'ok', 'then']),
    ('The end...', ['the', 'end']),
    ('1,000 people and 3.14 pies and 1/2 a cake.', ['1,000', 'people', 'and', '3.14', 'pies', 'and', '1/2', 'a', 'cake']),
    ('2 1/2 cups and 3-4 eggs and -5 degrees and +5 points.', ['2\xa01/2', 'cups', 'and', '3-4', 'eggs', 'and', '-5', 'degrees', 'and', '+5', 'points']),
    ('A 10-15 minute wait at 5:30 or 12:30pm.', ['a', '10-15', 'minute', 'wait', 'at', '5:30', 'or', '12:30', 'pm']),
    ("The 1990s and the '90s and 90's music.", ['the', '1990s', 'and', 'the', "'90s", 'and', '90', "'s", 'music']),
    ('A well-known x-ray of a co-ed anti-war pro-choice mid-1990s thing.', ['a', 'well-known', 'x-ray', 'of', 'a', 'co-ed', 'anti-war', 'pro-choice', 'mid-1990s', 'thing']),
    ('A red,white-striped shirt and a 3.5-inch screen.', ['a', 'red,white-striped', 'shirt', 'and', 'a', '3.5-inch', 'screen']),
    ('Bread -- butter - jam --- tea ---- coffee ----- milk.', ['bread', 'butter', 'jam', 'tea', 'coffee', '-----', 'milk']),
    ('A dash — and an en dash – between words.', ['a', 'dash', 'and', 'an', 'en', 'dash', 'between', 'words']),
    ('Salt & pepper, AT&T, R&D, b&w, A&B.', ['salt', '&', 'pepper', 'at&t', 'r&d', 'b', '&', 'w', 'a&b']),
    ('A man/woman and/or 1/2/3 and a/b/c/d.', ['a', 'man/woman', 'and/or', '1/2/3', 'and', 'a/b/c', '/', 'd.']),
    ('See http://www.example.com/page.html and www.example.org or example.com today.', ['see', 'http://www.example.com/page.html', 'and', 'www.example.org', 'or', 'example.com', 'today']),
    ('Email me at john.doe@example.com, thanks.', ['email', 'me', 'at', 'john.doe@example.com,', 'thanks']),
    ('A $5 bill, US$10, C$ 20, £5, €3, ¥100 and 50¢.', ['a', '$', '5', 'bill', 'us$', '10', 'c$', '20', '#', '5', '$', '3', '¥', '100', 'and', '50', 'cents']),
    ('50% off and 5 % more.', ['50', '%', 'off', 'and', '5', '%', 'more']),
    ('#hashtag @user #1 ##a', ['#hashtag', '@user', '#', '1', '##', 'a']),
    ('c++ C# f# code.', ['c++', 'c#', 'f#', 'code']),
    ('A smiley :) and :-( and ;) and :D here.', ['a', 'smiley', ':-rrb-', 'and', ':--lrb-', 'and', ';-rrb-', 'and', ':d', 'here']),
    ('A ^_^ face and (^_^) and x_x.', ['a', '^_^', 'face', 'and', '-lrb-^_^-rrb-', 'and', 'x_x']),
    ('A file.jpg and photo.png and 12.jpg and notes.txt.', ['a', 'file.jpg', 'and', 'photo.png', 'and', '12.jpg', 'and', 'notes.txt']),
    ('He said hello!world and what?no.', ['he', 'said', 'hello!world', 'and', 'what?no']),
    ('a cat.The dog sat.', ['a', 'cat.the', 'dog', 'sat']),
    ('Is it a cat?! Yes!! Really???', ['is', 'it', 'a', 'cat', '?!', 'yes', '!!', 'really', '???']),
    ('A non‑breaking space and a café naïve résumé.', ['a', 'non‑breaking', 'space', 'and', 'a', 'café', 'naïve', 'résumé']),
    ('“Curly quotes” and ‘single ones’ and it’s don’t.', ['curly', 'quotes', 'and', 'single', 'ones', 'and', 'it', "'s", 'do', "n't"]),
    ('« Guillemets » and „low“ quotes.', ['guillemets', 'and', '„', 'low', 'quotes']),
    ('A 1⁄2 fraction and ½ and ¼ cup and ⅓ more.', ['a', '1⁄2', 'fraction', 'and', '1/2', 'and', '1/4', 'cup', 'and', '1/3', 'more']),
    ('x² and 5° and © and ® and ™ here.', ['x', '²', 'and', '5', '°', 'and', '©', 'and', '®', 'and', '™', 'here']),
    ('一只猫 and 猫.狗 in Chinese.', ['一只猫', 'and', '猫.狗', 'in', 'chinese']),
    ('Emoji 😀 in a caption 🐶dog.', ['emoji', 'in', 'a', 'caption', 'dog']),
    ('Control\x01chars\x7fand\x1fmore\x00here.', ['control', 'chars', 'and', 'more', 'here']),
    ('Zero\u200bwidth and BOM\ufeffhere.', ['zero', 'width', 'and', 'bom', 'here']),
    ('A tab\there and a thin\u2009space.', ['a', 'tab', 'here', 'and', 'a', 'thin', 'space']),
    ('&amp; &lt; &gt; &quot;quoted&quot; &nbsp;x &#39;', ['&', '<', '>', 'quoted', 'x', '&#39;']),
    ('<b>bold</b> and <a href="x">link</a> and a<b a>b.', ['<b>', 'bold', '</b>', 'and', '<a\xa0href="x">', 'link', '</a>', 'and', 'a', '<b\xa0a>', 'b.']),
    ('The ΣΟΦΟΣ sign and Ω.', ['the', 'σοφος', 'sign', 'and', 'ω']),
    ('A DOG. A CAT.', ['a', 'dog', 'a', 'cat']),
    ('SEPT. MASS. ILL. Wash. wash.', ['sept.', 'mass.', 'ill.', 'wash.', 'wash']),
    ('Ph.D. students and Jr. and Bros.', ['ph.d.', 'students', 'and', 'jr.', 'and', 'bros.']),
    ('vs. v. a.k.a. cf. Alex.', ['vs.', 'v.', 'a.k.a.', 'cf.', 'alex.']),
    ('e.g. eg. ie. i.e.', ['e.g.', 'eg', 'ie', 'i.e.']),
    ("A sign reading 'No Parking'.", ['a', 'sign', 'reading', 'no', 'parking']),
    ("a cat 's tail and a dog ' s tail.", ['a', 'cat', "'s", 'tail', 'and', 'a', 'dog', 's', 'tail']),
    ("The kids' toys, James's car.", ['the', 'kids', 'toys', 'james', "'s", 'car']),
    ('i.e.. no.. end..', ['i.e.', 'no', 'end']),
    ('5.5.5 .5 ,5 5, 1:2:3', ['5.5.5', '.5', ',5', '5', '1:2:3']),
    ('(555) 555-1234 or 555.555.1234 or 1-800-555-1234.', ['-lrb-555-rrb-\xa0555-1234', 'or', '555.555.1234', 'or', '1-800-555-1234']),
    ('-LRB- -RRB- -lrb- literal brackets.', ['-lrb-', '-rrb-', '-lrb-', 'literal', 'brackets']),
    ('ALL CAPS CAPTION WITH A U.S. FLAG.', ['all', 'caps', 'caption', 'with', 'a', 'u.s.', 'flag']),
    ('trailing spaces   ', ['trailing', 'spaces']),
    ('   leading spaces', ['leading', 'spaces']),
    ('see https://foo.com/a_b?x=1&y=2. and http://x.org/path), ftp://x.y', ['see', 'https://foo.com/a_b?x=1&y=2', 'and', 'http://x.org/path', '-rrb-', 'ftp', '/', '/', 'x.y']),
    ('go to www.foo.co.uk/page, or foo.edu/x.', ['go', 'to', 'www.foo.co.uk/page', 'or', 'foo.edu', '/', 'x.']),
    ('<john@doe.com> &lt;a@b.org&gt; mailto:x@y.z', ['<john@doe.com>', '&lt;a@b.org&gt;', 'mailto:x@y.z']),
    ('<!-- comment --> <?xml version="1.0"?> <!DOCTYPE html> <br /> <p class=\'x\' id="y">', ['<!--\xa0comment\xa0-->', '<?xml\xa0version="1.0"?>', '<!doctype\xa0html>', '<br\xa0/>', '<p\xa0class=\'x\'\xa0id="y">']),
    ('soft\xadhyphen 1\xad000 ²³ ₂ x⁺¹', ['softhyphen', '1000', '²³', '₂', 'x', '⁺¹']),
    ('Pty. Ltd. co. ltd. Pte. Limited', ['pty.', 'ltd.', 'co.', 'ltd.', 'pte.', 'limited']),
    ("the '90 crowd S&P-500 S&Ls -LRB- Cap'n c'est 'em 'cause e'er somethin' Dunkin' ol' nor'easter", ['the', "'90", 'crowd', 's&p-500', 's&ls', '-lrb-', "cap'n", "c'est", "'em", "'cause", "e'er", "somethin'", "dunkin'", "ol'", "nor'easter"]),
    ('2014-01-01 1/2/2014 12-25-2014 3/4/15', ['2014-01-01', '1/2/2014', '12-25-2014', '3/4/15']),
    ('+1 (555) 555-1234 ++44 20 7946 0958 555 1234 567', ['+1', '-lrb-555-rrb-\xa0555-1234', '++44\xa020\xa07946\xa00958', '555\xa01234\xa0567']),
    ('a.m.-p.m. U.S.-based non-U.S. Canada-U.S. U.S.-U.K. U.S.-Soviet', ['a.m.-p.m.', 'u.s.-based', 'non-u.s.', 'canada-u.s.', 'u.s.-u.k.', 'u.s.-soviet']),
    ("I.B.M. F.B.I.'s A.B.C. The", ['i.b.m.', 'f.b.i.', "'s", 'a.b.c.', 'the']),
    ('10x 3x4 4x4 1st 2nd 3rd 21st', ['10x', '3x4', '4x4', '1st', '2nd', '3rd', '21st']),
    ('"\'Hello,\' she said." \'Twas\' "\'"', ['hello', 'she', 'said', "'t", 'was']),
    ("He's gone. She's. It's! What's?", ['he', "'s", 'gone', 'she', "'s", 'it', "'s", 'what', "'s"]),
    ('ca. 1900 ca.1900 Nos. 1-5 No.1 pp. 10 op. cit', ['ca.', '1900', 'ca.', '1900', 'nos.', '1-5', 'no.', '1', 'pp.', '10', 'op', 'cit']),
    ('E! OK! magazine Yahoo!', ['e', 'ok', 'magazine', 'yahoo']),
    ('it’s don’t I’m we’re O’Brien’s', ['it', "'s", 'do', "n't", 'i', "'m", 'we', "'re", 'o’brien', "'s"]),
    ('...and then.. .x .. . ...', ['and', 'then', 'x']),
    ('~5 ^2 |x| \\\\ a\\\\b', ['~', '5', '^', '2', '|', 'x', '|', '\\', '\\', 'a', '\\', '\\', 'b']),
    ("x \xad y x\xadab don\xad't", ['x', 'y', 'xab', 'don', 't']),
    ('5www.x.org and 3.5woman.x.com/b and 1.2.jpg and 1,2.jpg', ['5www.x', 'org', 'and', '3.5woman.x', 'com/b', 'and', '1.2.jpg', 'and', '1,2', 'jpg']),
    ('A man in a t-shirt.', ['a', 'man', 'in', 'a', 't-shirt']),
    ('a cat on a t.v', ['a', 'cat', 'on', 'a', 't.v']),
    ('letter K.', ['letter', 'k.']),
    ('The U.S.A. flag', ['the', 'u.s.a.', 'flag']),
    ('a 2x4 board and a 4x4 truck', ['a', '2x4', 'board', 'and', 'a', '4x4', 'truck']),
]

# Each case is followed by this neutral line when tokenised, so no case sees another's start.
_SEP = "x"


def _interleave(texts: list[str]) -> list[str]:
    return [line for text in texts for line in (text, _SEP)]


@pytest.fixture(scope="module")
def py_tok() -> PTBTokenizer:
    return PTBTokenizer()


@pytest.fixture(scope="module")
def java_tok(java):
    from capeval.text.ptb_java import JavaPTBTokenizer

    return JavaPTBTokenizer()


@pytest.mark.java
def test_java_wrapper_validates_and_survives_surrogates(java_tok, py_tok):
    with pytest.raises(ValueError, match=r"texts\[1\] is a NoneType"):
        java_tok.tokenize(["a", None])
    texts = ["a\ud800b c", "x\udfff", "ok"]
    assert java_tok.tokenize_lines(texts) == py_tok.tokenize_lines(texts) == ["a b c", "x", "ok"]


def test_registry_name_and_type():
    tok = get_tokenizer("ptb")
    assert isinstance(tok, PTBTokenizer)
    assert tok.name == "ptb-py.1" and not tok.line_context
    ctx = get_tokenizer("ptb-ctx")
    assert ctx.name == "ptb-py.1+ctx" and ctx.line_context


def test_default_tokens_do_not_depend_on_neighbours():
    # With list context (as the jar reads a file) the last token depends on the next caption.
    texts = ["The letter A.", "The end."]
    assert get_tokenizer("ptb-ctx").tokenize(texts)[0] == ["the", "letter", "a"]
    assert get_tokenizer("ptb").tokenize(texts)[0] == get_tokenizer("ptb").tokenize(texts[:1])[0] == ["the", "letter", "a."]


@pytest.mark.parametrize("text, expected", CASES, ids=[c[0][:40] for c in CASES])
def test_case_matches_stored_java_output(py_tok, text, expected):
    assert py_tok.tokenize(_interleave([text]))[0] == expected


@pytest.mark.java
def test_stored_cases_are_what_java_says(java_tok, py_tok):
    texts = [t for t, _ in CASES]
    java = java_tok.tokenize(_interleave(texts))[::2]
    assert java == [expected for _, expected in CASES]
    assert py_tok.tokenize_lines(_interleave(texts)) == java_tok.tokenize_lines(_interleave(texts))


def test_next_caption_decides_single_letter_acronym(py_tok):
    # Java reads all captions as lines of one file: "A." before "The ..." is letter + full stop.
    assert py_tok.tokenize(["the letter A.", "The dog"])[0] == ["the", "letter", "a"]
    assert py_tok.tokenize(["the letter A.", "the dog"])[0] == ["the", "letter", "a."]
    assert py_tok.tokenize(["the letter A."])[0] == ["the", "letter", "a."]


def test_line_context_can_be_switched_off():
    alone = PTBTokenizer(line_context=False)
    assert alone.tokenize(["the letter A.", "The dog"]) == [["the", "letter", "a."], ["the", "dog"]]
    assert alone.tokenize_lines(["in the U.S.", "A cat"]) == ["in the u.s.", "a cat"]


@pytest.mark.java
def test_without_line_context_equals_java_on_each_caption_alone(java_tok):
    texts = ["the letter A.", "The dog", "in the U.S.", "A cat", "Apple Inc.", "A b", "x. The", "K."]
    alone = [java_tok.tokenize([t])[0] for t in texts[:4]]
    assert PTBTokenizer(line_context=False).tokenize(texts[:4]) == alone
    # A neutral next line ("x": not a sentence start) gives the tokens of the caption alone.
    separated = java_tok.tokenize(_interleave(texts))[::2]
    assert PTBTokenizer(line_context=False).tokenize(texts) == separated


@pytest.mark.java
def test_next_caption_context_matches_java(java_tok, py_tok):
    texts = ["the letter A.", "The dog", "in the U.S.", "A cat", "made by Apple Inc.", "a dog", "letter B.", "</b>"]
    assert py_tok.tokenize_lines(texts) == java_tok.tokenize_lines(texts)
    assert py_tok.tokenize(texts) == java_tok.tokenize(texts)


def test_raw_lines_keep_punctuation(py_tok):
    assert py_tok.tokenize_lines(['A "quoted" (word), etc.']) == ["a `` quoted '' -lrb- word -rrb- , etc. ."]
    assert ptb_tokenize_line("Don't stop.") == ["do", "n't", "stop", "."]


def test_coco_punctuation_list_is_case_sensitive(py_tok):
    # -LRB- is in pycocoevalcap's list, but tokens are lower-cased first, so -lrb- survives.
    assert "-LRB-" in COCO_PUNCTUATION and "-lrb-" not in COCO_PUNCTUATION
    assert py_tok.tokenize(["a (b)"]) == [["a", "-lrb-", "b", "-rrb-"]]


def test_line_breaks_inside_a_caption_are_spaces(py_tok):
    texts = ["a dog\nruns", "a\r\ncat", "x\u2028y\u2029z\x0bw\x0cv\x85u"]
    assert py_tok.tokenize(texts) == [["a", "dog", "runs"], ["a", "cat"], ["x", "y", "z", "w", "v", "u"]]


def test_empty_and_blank_captions(py_tok):
    assert py_tok.tokenize([]) == []
    assert py_tok.tokenize(["", "   ", "\t", ".", "...", "a"]) == [[], [], [], [], [], ["a"]]


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["a"]])
def test_non_string_raises_naming_the_index(py_tok, bad):
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        py_tok.tokenize(["fine", bad])


def test_unicode_robustness(py_tok):
    texts = [
        "emoji \U0001F600\U0001F436 only",
        "\U0001F600",
        "flags \U0001F1EB\U0001F1F7 and zwj \U0001F468\u200d\U0001F469",
        "\x00\x01\x02\x1b[31m red \x7f",
        "\ud800 lone surrogate",
        "mixed 一只猫 العربية עברית हिन्दी ΣΟΦΟΣ",
        "\u00a0\u2009\u3000 spaces \u200b\ufeff",
    ]
    out = py_tok.tokenize(texts)
    assert out[0] == ["emoji", "only"]
    assert out[1] == []
    assert out[3] == ["-lsb-", "31m", "red"]
    assert out[6] == ["spaces"]
    assert all(isinstance(t, str) and t and " " not in t for toks in out for t in toks)


@pytest.mark.java
def test_unicode_robustness_matches_java(java_tok, py_tok):
    texts = [
        "emoji \U0001F600\U0001F436 only",
        "flags \U0001F1EB\U0001F1F7 and zwj \U0001F468\u200d\U0001F469",
        "\x00\x01\x02\x1b[31m red \x7f",
        "mixed 一只猫 العربية עברית हिन्दी ΣΟΦΟΣ",
        "\u00a0\u2009\u3000 spaces \u200b\ufeff",
        "x\u0301y caf\u00e9 \uff21\uff22 \uff01",
    ]
    assert py_tok.tokenize_lines(_interleave(texts)) == java_tok.tokenize_lines(_interleave(texts))


def _scanned_characters(text: str, skip_failed_runs: bool = True) -> tuple[int, list[str]]:
    """Characters the scanner's rules cover while tokenising ``text``, and its tokens.

    Each rule attempt counts the characters its match spans, or, when a rule that can scan far fails,
    the run it could have scanned (its failure run): the scanner's work, counted instead of timed.
    ``skip_failed_runs=False`` turns off the scanner's memory of where such rules failed (what keeps
    it linear), to show that the count sees quadratic work.
    """
    from capeval.text import ptb

    covered = [0]

    def counting(rule):
        match, failure_run = rule.match, rule.failure_run

        def counted(string, pos):
            m = match(string, pos)
            if m is not None:
                covered[0] += m.end() - pos
            elif failure_run is not None:
                run = failure_run(string, pos)
                covered[0] += 0 if run is None else run.end() - pos
            return m

        return counted

    originals = [(rule.match, rule.failure_run) for rule in ptb._RULES]
    try:
        for rule in ptb._RULES:
            rule.match = counting(rule)
            if not skip_failed_runs:
                rule.failure_run = None
        out = PTBTokenizer().tokenize([text])[0]
    finally:
        for rule, (match, failure_run) in zip(ptb._RULES, originals):
            rule.match, rule.failure_run = match, failure_run
    return covered[0], out


def test_500_word_caption_tokens(py_tok):
    # its speed: benchmarks/ptb_speed.py (docs/tokenizer.md "Speed")
    words = ("a man in a red shirt is riding a bike down the street , while the dog's owner watches . " * 30).split()
    caption = " ".join(words[:500])
    out = py_tok.tokenize([caption])[0]
    assert len(out) == sum(1 for w in words[:500] if w not in (",", ".")) + caption.count("dog's")
    assert out[:4] == ["a", "man", "in", "a"] and out.count("'s") == caption.count("dog's")


@pytest.mark.parametrize("unit", ["a", ".", "-", "'", '"', ",", "&", "+", "<", "@", "1", "a,", "'a", "<!", "a@", "\x01", "\U0001F600"])
def test_10000_repeated_characters_tokenise_in_linear_work(py_tok, unit):
    # The scanner's work (characters its rules cover, failed far-scanning rules included) grows
    # linearly: twice the text, at most about twice the work (quadratic work would be 4x).
    # Times: benchmarks/ptb_speed.py.
    work = {}
    for n in (10000, 20000):
        work[n], out = _scanned_characters((unit * n)[:n])
        assert isinstance(out, list) and all(isinstance(t, str) for t in out)
        assert out == py_tok.tokenize([(unit * n)[:n]])[0]  # counting changes nothing
    if work[10000] == 0:  # the fast path of plain captions: no scanner at all
        assert work[20000] == 0 and set(unit) <= set("abcdefghijklmnopqrstuvwxyz ,.")
    else:
        assert work[10000] >= 10000 - len(unit), (unit, work)
        assert work[20000] <= 2.2 * work[10000], f"{unit!r}: {work[10000]} -> {work[20000]} characters scanned"


def test_the_work_count_sees_quadratic_scanning():
    # without the memory of failed runs, "a,a,a,..." makes the far-scanning rules rescan the run at
    # every position: the count must show it (about 4x for twice the text)
    quadratic = {n: _scanned_characters(("a," * n)[:n], skip_failed_runs=False)[0] for n in (2000, 4000)}
    linear = {n: _scanned_characters(("a," * n)[:n])[0] for n in (2000, 4000)}
    assert quadratic[4000] > 3.5 * quadratic[2000] and quadratic[2000] > 50 * linear[2000]
    assert linear[4000] <= 2.2 * linear[2000]


def _coco_sample(n: int, seed: int = 0) -> list[str]:
    from capeval.coco.captions import coco_captions

    captions = [c for split in ("train2014", "val2014") for caps in coco_captions(split).values() for c in caps]
    return random.Random(seed).sample(captions, n)


# SHA-256 of the Java tokens (tokens joined by U+001F, captions by newlines) of the samples
# below, recorded with JavaPTBTokenizer: lets the agreement be checked without Java.
JAVA_SHA256_COCO_SAMPLE = "a9997f2687e4eeac0cc35d8a276c664bdc80bde2183f145e5b8d509540c80c90"
JAVA_SHA256_KARPATHY = "82713dfe59916cae13ae9cee83f5261b29bd7038ae39cb99d266fdaca1f79bee"


def _sha256(token_lists: list[list[str]]) -> str:
    import hashlib

    return hashlib.sha256("\n".join("\x1f".join(t) for t in token_lists).encode("utf-8")).hexdigest()


def test_coco_sample_matches_recorded_java_tokens(py_tok):
    assert _sha256(py_tok.tokenize(_coco_sample(20000))) == JAVA_SHA256_COCO_SAMPLE


@pytest.mark.data
def test_karpathy_test_matches_recorded_java_tokens(py_tok):
    assert _sha256(py_tok.tokenize(_karpathy_captions())) == JAVA_SHA256_KARPATHY


@pytest.mark.java
def test_agreement_with_java_on_20000_coco_captions(java_tok, py_tok):
    captions = _coco_sample(20000)
    java = java_tok.tokenize(captions)
    assert _sha256(java) == JAVA_SHA256_COCO_SAMPLE
    assert py_tok.tokenize(captions) == java
    assert py_tok.tokenize_lines(captions) == java_tok.tokenize_lines(captions)


@pytest.mark.java
def test_agreement_with_java_after_thumb_cleanup(java_tok, py_tok):
    from capeval.text.cleanup import thumb_cleanup

    captions = [thumb_cleanup(c) for c in _coco_sample(5000, seed=1)]
    assert py_tok.tokenize(captions) == java_tok.tokenize(captions)


def _karpathy_captions() -> list[str]:
    import json

    from support import require_data

    folder = require_data("coco_karpathy_test")
    out: list[str] = []
    for name in ("karpathy_ref.json", "karpathy_cand.json"):
        out.extend(item["caption"] for item in json.loads((folder / name).read_text()))
    return out


@pytest.mark.java
@pytest.mark.data
def test_agreement_with_java_on_karpathy_test(java_tok, py_tok):
    captions = _karpathy_captions()
    assert len(captions) == 40010
    java = java_tok.tokenize(captions)
    assert _sha256(java) == JAVA_SHA256_KARPATHY
    assert py_tok.tokenize(captions) == java
    assert py_tok.tokenize_lines(captions) == java_tok.tokenize_lines(captions)


def _random_strings(seed: int, n: int) -> list[str]:
    # No Greek capital sigma and no letters outside the BMP: see "remaining differences" in docs.
    return random_strings(n, seed, unicode_chars=UNICODE_SAMPLE.replace("Σ", ""))


@pytest.mark.java
def test_agreement_with_java_on_random_strings(java_tok, py_tok):
    texts = _random_strings(seed=2024, n=5000)
    assert py_tok.tokenize(texts) == java_tok.tokenize(texts)
    assert py_tok.tokenize_lines(texts) == java_tok.tokenize_lines(texts)


@pytest.mark.java
def test_character_classes_match_java_on_a_bmp_sample(java_tok, py_tok):
    rng = random.Random(7)
    codes = [c for c in rng.sample(range(0x20, 0x10000), 3000) if not 0xD800 <= c <= 0xDFFF]
    chars = [chr(c) for c in codes if chr(c) not in "\n\r\x0b\x0c\x85\u2028\u2029"]
    texts = [t.format(c) for c in chars for t in ("q {} q", "q{}q", "1{}2", "{}")]
    assert py_tok.tokenize_lines(texts) == java_tok.tokenize_lines(texts)


def test_plain_captions_take_the_fast_path(monkeypatch, py_tok):
    # plain captions (ASCII letters, spaces, word-final commas and periods) never reach the scanner,
    # unless a single letter precedes the period ("... a."): what makes them fast (captions/s:
    # benchmarks/ptb_speed.py)
    from capeval.text import ptb

    rng = random.Random(0)
    vocab = "a an the man woman dog cat sits on in with red blue street table plate of and is are".split()
    captions = [" ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14))).capitalize() + "." for _ in range(2000)]
    scanned = []
    real_scan = ptb._scan
    monkeypatch.setattr(ptb, "_scan", lambda text, end: scanned.append(text) or real_scan(text, end))
    out = py_tok.tokenize(captions)
    letter_last = [c for c in captions if len(c.rstrip(".").split()[-1]) == 1]
    assert 0 < len(letter_last) < len(captions) / 10
    assert [t.split("\n")[0] for t in scanned] == letter_last
    assert all(words == c.lower().rstrip(".").split() for c, words in zip(captions, out) if c not in letter_last)
    scanned.clear()
    py_tok.tokenize(["Mr. Smith walks."])  # an abbreviation before a period: the scanner
    assert len(scanned) == 1

def _plain_tokens(text: str) -> list[str] | None:
    """One caption's plain tokens decided on its own (the per-text rules the batched fast path implements)."""
    import re

    from capeval.text.ptb import _ASSIMILATIONS, _PERIOD_WORD_SET, _PLAIN_TO_SPACE, _split_assimilations

    if re.search("[^A-Za-z ,.]|[,.][^ ]", text) is not None:
        return None
    low = text.lower()
    pos = low.find(".")
    while pos != -1:
        word = low[low.rfind(" ", 0, pos) + 1 : pos]
        if len(word) == 1 or word in _PERIOD_WORD_SET:
            return None
        pos = low.find(".", pos + 1)
    words = low.translate(_PLAIN_TO_SPACE).split()
    return _split_assimilations(words) if not set(_ASSIMILATIONS).isdisjoint(words) else words


def test_plain_captions_checked_all_at_once_get_the_tokens_of_one_at_a_time():
    """The fast path for plain captions (ASCII letters, spaces, commas, periods) is decided for all texts of a call
    at once with numpy: the same tokens as deciding each text alone, with abbreviations, one-letter words before a
    period, words split in two (cannot, gonna, ...), newlines and non-ASCII texts among them."""
    from capeval.text.ptb import _plain_tokens_of

    rng = random.Random(41)
    pieces = list("abcdefgh ABC,.,. ") + ["cannot", "gonna", "Wanna", "Mr.", "St.", "a.", " I.", "\n", "\u00e9",
                                          "'", "etc.", "no.", "dr", " .", "\u0130", "Bancorp.", "x.y", "\t", "-"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(20000)]
    assert sum(t is None for t in _plain_tokens_of(texts)) > 1000  # the scanner's texts are among them
    for start in range(0, len(texts), 500):
        batch = texts[start:start + 500]
        assert _plain_tokens_of(batch) == [_plain_tokens(t) for t in batch]
    tokenizer = PTBTokenizer(line_context=False)
    assert tokenizer.tokenize(texts[:3000]) == [tokenizer.tokenize([t])[0] for t in texts[:3000]]
    assert _plain_tokens_of([]) == [] and _plain_tokens_of(["A dog, gonna run."]) == [["a", "dog", "gon", "na", "run"]]
