#!/usr/bin/env python3
"""Writes the tokenizer's Unicode tables into core/tokenize/: unicode_class_tables.cpp, the classes
the byte-level BPE pre-tokenizer regexes use (std::regex has no \\p{L}), as sorted code point ranges from Python's unicodedata.

  letter      \\p{L}  general category Lu, Ll, Lt, Lm, Lo
  number      \\p{N}  general category Nd, Nl, No (also Rust's char::is_numeric, which the
                      Digits pre-tokenizer uses)
  whitespace  \\s     the White_Space property, which is what \\s means in Oniguruma (Hugging Face
                      tokenizers' regex engine) and in Python's `regex` module: U+0009-000D,
                      U+0020, U+0085, U+00A0 and the categories Zs, Zl, Zp
  upper       \\p{Lu}\\p{Lt}   and lower \\p{Ll}, and mark \\p{M} (Mn, Mc, Me): the cased classes of
                      the o200k regex (gpt-oss), whose \\p{Lm}\\p{Lo} are the letters that are
                      neither upper nor lower
  punct/sym   \\p{P}\\p{S}  punctuation and symbols (DeepSeek-V3's regex)

and the tables of Unicode's NFC normalization (Qwen2's tokenizer.json asks for it): nfc_tables.cpp
(canonical combining classes and the primary composites: pairs that compose, composition exclusions
left out), nfc_decomposition_data.cpp (the code points of every full canonical decomposition, one
after another) and nfc_decompositions.cpp (the index into them per code point; Hangul syllables are
computed, not listed).

It also writes tests/fixtures/tokenizer/nfc_cases.json: Python's NFC of every code point that NFC
changes, and of random sequences of marks, jamo and letters, for the tokenizer's tests.

Usage: /usr/bin/python3 scripts/gen_unicode_tables.py   (run from anywhere; rewrites all of them)
"""
import json
import random
import os
import sys
import unicodedata


def ranges(pred):
    out = []
    start = None
    for cp in range(0x110000):
        if pred(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, 0x10FFFF))
    return out


def category(cp):
    return unicodedata.category(chr(cp))


def is_whitespace(cp):
    return cp in range(0x09, 0x0E) or cp in (0x20, 0x85) or category(cp) in ("Zs", "Zl", "Zp")


def emit(name, rs):
    lines = [f"const CodePointRange {name}[] = {{"]
    row = []
    for lo, hi in rs:
        row.append(f"{{0x{lo:X}, 0x{hi:X}}}")
        if len(row) == 6:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines.append("};")
    lines.append(f"const std::size_t {name}Count = sizeof({name}) / sizeof({name}[0]);")
    return "\n".join(lines)


def is_hangul_syllable(cp):
    return 0xAC00 <= cp <= 0xD7A3


def nfc_tables():
    classes = []  # (lo, hi, ccc) runs of equal non-zero class
    for cp in range(0x110000):
        c = unicodedata.combining(chr(cp))
        if c == 0:
            continue
        if classes and classes[-1][1] == cp - 1 and classes[-1][2] == c:
            classes[-1] = (classes[-1][0], cp, c)
        else:
            classes.append((cp, cp, c))
    decomps = []  # (cp, full canonical decomposition)
    comps = []    # (first, second, composite)
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or is_hangul_syllable(cp):
            continue
        d = unicodedata.normalize("NFD", chr(cp))
        if d != chr(cp):
            decomps.append((cp, [ord(x) for x in d]))
        raw = unicodedata.decomposition(chr(cp))
        if raw and not raw.startswith("<"):
            parts = [int(x, 16) for x in raw.split()]
            # A primary composite: a two-part canonical decomposition that NFC puts back together.
            if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
                comps.append((parts[0], parts[1], cp))
    comps.sort()
    return classes, decomps, comps


def emit_nfc(classes, decomps, comps):
    out = ["const CombiningClassRange kCombiningClasses[] = {"]
    row = []
    for lo, hi, c in classes:
        row.append(f"{{0x{lo:X}, 0x{hi:X}, {c}}}")
        if len(row) == 5:
            out.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        out.append("    " + ", ".join(row) + ",")
    out.append("};")
    out.append("const std::size_t kCombiningClassesCount = sizeof(kCombiningClasses) / sizeof(kCombiningClasses[0]);")
    parts = {}
    data = []
    entries = []
    for cp, d in decomps:
        entries.append((cp, len(data), len(d)))
        data.extend(d)
    dout = ["const char32_t kDecompositionData[] = {"]
    for k in range(0, len(data), 10):
        dout.append("    " + ", ".join(f"0x{x:X}" for x in data[k:k + 10]) + ",")
    dout.append("};")
    parts["nfc_decomposition_data.cpp"] = "\n".join(dout)
    iout = ["const Decomposition kDecompositions[] = {"]
    for k in range(0, len(entries), 5):
        iout.append("    " + ", ".join(f"{{0x{cp:X}, {off}, {n}}}" for cp, off, n in entries[k:k + 5]) + ",")
    iout.append("};")
    iout.append("const std::size_t kDecompositionsCount = sizeof(kDecompositions) / sizeof(kDecompositions[0]);")
    parts["nfc_decompositions.cpp"] = "\n".join(iout)
    out.append("const Composition kCompositions[] = {")
    for k in range(0, len(comps), 4):
        out.append("    " + ", ".join(f"{{0x{a:X}, 0x{b:X}, 0x{c:X}}}" for a, b, c in comps[k:k + 4]) + ",")
    out.append("};")
    out.append("const std::size_t kCompositionsCount = sizeof(kCompositions) / sizeof(kCompositions[0]);")
    parts["nfc_tables.cpp"] = "\n".join(out)
    return parts


def nfc_cases(root):
    changed = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        n = unicodedata.normalize("NFC", chr(cp))
        if n != chr(cp):
            changed.append({"text": chr(cp), "nfc": n})
    pool = ([chr(c) for c in range(0x300, 0x370)] + ["\u0591", "\u05B0", "\u093C", "\u094D", "\u0B3E", "\u0B47",
            "\u1100", "\u1161", "\u11A8", "\uAC00", "\uAC01", "\u3099", "\u304B", "\u212B", "\u2126",
            "\u0958", "\u0F73", "\U0001D15E", "\U0001D165"] + list("aAeEoOuUnNcCsSzZ ") + ["\u03B1", "\u03C9", "\u0418"])
    rng = random.Random(2026)
    sequences = []
    for _ in range(1500):
        t = "".join(rng.choice(pool) for _ in range(rng.randint(1, 8)))
        sequences.append({"text": t, "nfc": unicodedata.normalize("NFC", t)})
    path = os.path.join(root, "tests", "fixtures", "tokenizer", "nfc_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in changed + sequences) + "\n]\n")
    return len(changed), len(sequences)


def main():
    letter = ranges(lambda cp: category(cp).startswith("L"))
    number = ranges(lambda cp: category(cp).startswith("N"))
    space = ranges(is_whitespace)
    upper = ranges(lambda cp: category(cp) in ("Lu", "Lt"))
    lower = ranges(lambda cp: category(cp) == "Ll")
    mark = ranges(lambda cp: category(cp).startswith("M"))
    punct_sym = ranges(lambda cp: category(cp)[0] in "PS")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    classes, decomps, comps = nfc_tables()
    files = {"unicode_class_tables.cpp": ("unicode_classes.hpp", "\n\n".join(
        [emit("kLetterRanges", letter), emit("kNumberRanges", number), emit("kWhitespaceRanges", space),
         emit("kUpperRanges", upper), emit("kLowerRanges", lower), emit("kMarkRanges", mark),
         emit("kPunctuationSymbolRanges", punct_sym)]))}
    files.update({name: ("nfc.hpp", body) for name, body in emit_nfc(classes, decomps, comps).items()})
    for name, (header, body) in files.items():
        path = os.path.join(root, "core", "tokenize", name)
        text = f"""// Generated by scripts/gen_unicode_tables.py from Python's unicodedata (Unicode
// {unicodedata.unidata_version}); do not edit. Sorted by code point.
#include "tokenize/{header}"

namespace mhascope::tokenize {{

{body}

}}  // namespace mhascope::tokenize
"""
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    changed, sequences = nfc_cases(root)
    print(f"wrote {', '.join(files)}: {len(letter)} letter, {len(number)} number, {len(space)} whitespace, {len(upper)} upper, {len(lower)} lower, {len(mark)} mark, {len(punct_sym)} punctuation/symbol ranges, "
          f"{len(classes)} combining-class runs, {len(decomps)} decompositions, {len(comps)} compositions; "
          f"nfc_cases.json: {changed} changed code points, {sequences} sequences", file=sys.stderr)


if __name__ == "__main__":
    main()
