"""The ``offline`` backend's extraction: rules that find, in the user's own
sentences, the ones that state a standing instruction, a preference or a
lasting fact ("Always …", "From now on …", "I prefer …", "I'm allergic to …",
"My name is …").

Only what the user says in their own voice counts: never the assistant's
words, and never material the user brought along to be worked on (code
blocks, quoted lines and text in quotation marks, and whatever follows a
colon that introduces it: "Translate this: …", "Here is the email:"), so
pasted text never becomes a standing instruction. Questions ("Should I
always …?") and conditions ("If I never …") state nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Longest sentence taken as a note; a longer one is more likely pasted prose.
MAX_SENTENCE_CHARS = 300

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# A colon that introduces material to work on: what follows is not the user's own voice. The word
# and its colon are in one sentence: "according to the log. Please never suggest Homebrew: …" is
# the user's own instruction after a sentence that names a log.
_INTRODUCES = re.compile(
    r"\b(?:this|these|following|below|text|email|e-mail|message|letter|paragraph|passage|document|"
    r"code|snippet|log|error|output|translate|summari[sz]e|review|proofread|rewrite|fix|check|explain|"
    r"says?|said|wrote|reads?|quote)\b[^:\n.!?]*:",
    re.I,
)
_LEAD = (
    r"^(?:(?:ok(?:ay)?|oh|also|and|but|so|btw|by the way|one more thing|just so you know|actually|"
    r"no|sorry|correction|wait|well|hi|hey|hello|thanks|thank you|"
    r"one (?:more )?(?:standing )?(?:request|thing|rule)|a standing (?:request|rule))[,:!]?\s+)*"
)


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    slot: str = ""


def _rule(kind: str, body: str, slot: str = "") -> Rule:
    return Rule(kind, re.compile(_LEAD + body, re.I), slot)


RULES = (
    _rule(
        "instruction",
        r"(?:please\s+)?(?:always|never|from now on|going forward|in (?:the )?future|"
        r"for (?:all )?future (?:answers|replies|questions)|whenever i (?:ask|want|say)|"
        r"every time i (?:ask|say)|each time i ask|when(?:ever)? i ask (?:you )?(?:about|for)|"
        r"(?:please\s+)?remember to|(?:please\s+)?make sure (?:you )?(?:always|never)|"
        r"(?:please\s+)?(?:do not|don't) ever|(?:please\s+)?stop (?:using|saying|adding)|"
        # "When you suggest a library, tell me its licence too."
        r"when(?:ever)? you (?:suggest|recommend|propose|write|give|answer|reply|show|mention)|"
        # "For anything longer than a screen, open with ...", "Anything that goes into the docs should ..."
        r"for (?:anything|any|every|all) [^,]{3,60},|"
        r"(?:anything|everything|every \w+|all \w+) [^,]{0,60}\bshould\b)",
    ),
    # "My terminal runs zsh, so please write every command for that shell."
    _rule(
        "instruction",
        r".*?\b(?:i|my)\b.*\bso (?:please )?(?:always )?(?:write|use|give|convert|answer|reply|format|put)\b",
    ),
    _rule("fact", r"(?:please\s+)?(?:remember|keep in mind|note|don't forget) that\b"),
    _rule("fact", r"(?:please\s+)?(?:remember|keep in mind):?\s+(?:i|my|i'm|i am)\b"),
    _rule(
        "preference",
        r"(?:i\s+(?:really\s+)?(?:prefer|'d prefer|would prefer|'d rather|would rather|like my|"
        r"love|hate|dislike|don't like|do not like|can't stand|enjoy)|my (?:favou?rite|preferred)\b)",
    ),
    _rule("preference", r"(?:i'm|i am) (?:a )?(?:vegetarian|vegan|pescatarian|teetotal|not a fan of)\b"),
    _rule("fact", r"(?:i'm|i am|i've been) (?:severely |very |mildly )?allergic to\b"),
    _rule("fact", r"i (?:have|suffer from) (?:a |an )?(?:\w+ )?(?:allergy|intolerance|diabetes|asthma)\b"),
    _rule("fact", r"my name(?:'s| is)\b", slot="name"),
    _rule("fact", r"(?:please\s+)?call me\b", slot="name"),
    _rule("fact", r"(?:i live in|i'm based in|i am based in|i moved to|i just moved to)\b", slot="home"),
    _rule("fact", r"(?:i work (?:as|at|for|in)|i'm employed (?:as|at|by)|my job is)\b", slot="work"),
    _rule("fact", r"my (?:birthday|date of birth) is\b", slot="birthday"),
    _rule(
        "fact", r"my (?:wife|husband|partner|son|daughter|kids?|children|dog|cat)(?:'s| is| are|'s name)\b"
    ),
    _rule("fact", r"i (?:have|own) (?:a|an|two|three|\d+) (?:dogs?|cats?|kids?|children|sons?|daughters?)\b"),
    _rule("fact", r"(?:i'm|i am) (?:\d{1,3}) years old\b", slot="age"),
    _rule("fact", r"my (?:time ?zone|timezone) is\b", slot="timezone"),
)


@dataclass(frozen=True, slots=True)
class Statement:
    kind: str
    text: str
    slot: str = ""


def own_voice(message: str) -> str:
    """The part of ``message`` the user says in their own voice: without code
    blocks, quoted lines, text in quotation marks or backticks, and anything
    after a colon that introduces material to work on."""
    text = _FENCE.sub("\n", message)
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith(">") or line.startswith(("    ", "\t")):
            continue
        lines.append(line)
    text = "\n".join(lines)
    introduced = _INTRODUCES.search(text)
    if introduced:
        text = text[: introduced.start()]
    return _QUOTED.sub(" ", text)


def statements(message: str) -> list[Statement]:
    """The sentences of the user's ``message`` that state a note, in order."""
    return _statements_in(own_voice(message))


def _statements_in(voice: str) -> list[Statement]:
    """``statements`` of the text already reduced to the user's own voice."""
    found: list[Statement] = []
    for match in _SENTENCE.finditer(voice):
        sentence = " ".join(match.group(0).split()).strip(" ,;-")
        if not sentence or sentence.endswith("?") or len(sentence) > MAX_SENTENCE_CHARS:
            continue
        sentence = sentence.replace("’", "'")
        for rule in RULES:
            if rule.pattern.search(sentence):
                text = re.sub(_LEAD, "", sentence, flags=re.I) or sentence
                text = text[0].upper() + text[1:]
                found.append(Statement(rule.kind, text if text[-1] in ".!" else text + ".", rule.slot))
                break
    return found


# Words without which a message states no note: a cheap test made at the write (no query), so the
# extraction (a model call with a model backend) is sent only for a message that may hold one.
_CUE = re.compile(
    r"\b(?:always|never|from now on|going forward|in (?:the )?future|i prefer|i'd prefer|i'd rather|"
    r"i would rather|remember|keep in mind|call me|my name|allerg\w*|intoleran\w*|whenever|every time|"
    r"each time|i live|i work|i'm a|i am a|vegetarian|vegan|favou?rite|so please|years old|based in|moved to|"
    r"i (?:really )?(?:like|love|hate|enjoy|dislike)|can't stand|"
    r"my (?:wife|husband|partner|son|daughter|kids?|children|dog|cat|birthday|time ?zone|job))\b",
    re.I,
)


def may_state_note(message: str) -> bool:
    """Whether the user's ``message`` may state a note: a cue word most
    statements hold, or one the rules find."""
    voice = own_voice(message)
    return bool(_CUE.search(voice.replace("’", "'"))) or bool(_statements_in(voice))
