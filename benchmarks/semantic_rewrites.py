"""Planted rewrites for the paraphrase candidates' recall (``bench_semantic.py``, ``tests/survey/test_semantic.py``).

Three kinds of rewording, each deterministic (seeded), each leaving the words' meaning and changing
the text's exact key, shingles and 13-grams:

- ``synonyms``: up to three words swapped for a synonym from :data:`SYNONYMS` (a text with none
  gets one of :data:`FALLBACK_SWAPS`);
- ``clauses``: the text's clauses (split at a comma, ``;``, `` and ``, `` but ``) put in another
  order, or its first and second halves swapped when it has one clause;
- ``fillers``: two or three filler words or phrases inserted between words.

``all``: the three, one after another.
"""

from __future__ import annotations

import random
import re

SYNONYMS = {
    "good": "fine", "great": "excellent", "bad": "poor", "movie": "film", "film": "movie", "funny": "amusing",
    "big": "large", "small": "little", "fast": "quick", "slow": "sluggish", "story": "tale", "smart": "clever",
    "boring": "dull", "beautiful": "lovely", "hard": "difficult", "easy": "simple", "begin": "start",
    "end": "finish", "show": "display", "help": "assist", "buy": "purchase", "get": "obtain", "want": "wish",
    "need": "require", "often": "frequently", "maybe": "perhaps", "very": "really", "many": "numerous",
    "interesting": "intriguing", "strange": "odd", "happy": "glad", "sad": "unhappy", "old": "aged",
    "new": "fresh", "large": "big", "little": "small", "quick": "fast", "make": "create", "think": "believe",
    "look": "appear", "seems": "appears", "characters": "figures", "actors": "performers", "director": "filmmaker",
    "picture": "image", "performance": "portrayal", "plot": "storyline", "worst": "poorest", "best": "finest",
    "money": "cash", "country": "nation", "city": "town", "people": "folks",
}
FALLBACK_SWAPS = {"the": "this", "a": "one", "is": "remains", "of": "from"}
FILLERS = ["actually", "basically", "really", "just", "you know", "honestly", "in fact", "kind of"]
KINDS = ("synonyms", "clauses", "fillers", "all")


def synonyms(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    spots = [i for i, w in enumerate(words) if w.lower() in SYNONYMS and SYNONYMS[w.lower()] != w.lower()]
    if not spots:
        spots = [i for i, w in enumerate(words) if w.lower() in FALLBACK_SWAPS][:1]
        for i in spots:
            words[i] = FALLBACK_SWAPS[words[i].lower()]
        return " ".join(words)
    for i in rng.sample(spots, min(3, len(spots))):
        words[i] = SYNONYMS[words[i].lower()]
    return " ".join(words)


def clauses(text: str, rng: random.Random) -> str:
    parts = [p.strip() for p in re.split(r",|;| and | but ", text) if p.strip()]
    if len(parts) > 1:
        moved = parts[1:] + parts[:1]
        return ", ".join(moved)
    words = text.split(" ")
    half = len(words) // 2
    return " ".join(words[half:] + words[:half])


def fillers(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    for _ in range(rng.choice((2, 3))):
        words.insert(rng.randrange(len(words) + 1), rng.choice(FILLERS))
    return " ".join(words)


def rewrite(text: str, kind: str, seed: int) -> str:
    """``text`` reworded by ``kind`` (one of :data:`KINDS`), the same for the same seed."""
    rng = random.Random(seed)
    if kind == "all":
        return fillers(clauses(synonyms(text, rng), rng), rng)
    return {"synonyms": synonyms, "clauses": clauses, "fillers": fillers}[kind](text, rng)
