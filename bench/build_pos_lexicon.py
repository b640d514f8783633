"""Build dpspin_sql/profiles/en_pos_lexicon.txt.gz, the phrase builder's POS lexicon.

Source: Brill's tagger lexicon (v1.14, trained on the Brown corpus and the Penn Treebank,
MIT license, with additions from the CMU Twitter POS data, CC-BY 3.0), as shipped in
TextBlob's `textblob/en/en-lexicon.txt` (TextBlob is MIT). Each entry is a word form and
its most frequent Penn tag. We keep lowercase alphabetic forms (hyphens allowed) with a
word-class tag (proper nouns, foreign words, symbols and punctuation are dropped):

    pip download --no-deps textblob && unzip textblob-*.whl 'textblob/en/en-lexicon.txt'
    python bench/build_pos_lexicon.py textblob/en/en-lexicon.txt

Run once; the output is committed package data (no run-time dependency, no download).
"""
from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

KEEP = {"NN", "NNS", "JJ", "JJR", "JJS", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "RB", "RBR", "RBS", "MD", "DT",
        "IN", "PRP", "PRP$", "CC", "TO", "WDT", "WP", "WP$", "WRB", "EX", "PDT", "RP", "UH", "CD"}
WORD = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
OUT = Path(__file__).resolve().parents[1] / "dpspin_sql" / "profiles" / "en_pos_lexicon.txt.gz"


def main(src: str) -> None:
    entries = {}
    for line in Path(src).read_text(encoding="utf-8").splitlines():
        if line.startswith(";") or not line.strip():
            continue
        word, tag = line.split()[:2]
        tag = tag.split("|")[0]
        if WORD.match(word) and tag in KEEP and word not in entries:
            entries[word] = tag
    header = ("# word<TAB>most frequent Penn tag. From Brill's tagger lexicon v1.14 (Brown corpus + Penn Treebank; "
              "MIT license; additions from the CMU Twitter POS data, CC-BY 3.0) as shipped in TextBlob (MIT). "
              "Built by bench/build_pos_lexicon.py.\n")
    body = "".join(f"{w}\t{t}\n" for w, t in sorted(entries.items()))
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write(header + body)
    print(f"{len(entries)} entries → {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
