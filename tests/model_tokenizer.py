#!/usr/bin/env python3
"""Writes a byte-level tokenizer.json into a copy of a fixture model folder (the fixtures carry no
tokenizer): ids 0-94 are the printable ASCII bytes 32-126 (id = byte - 32), 95-97 tab, newline,
carriage return, 98 <|begin_of_text|> (only with "bos": the template puts it first), 99
<|endoftext|>, every other byte an id from 100 up (outside the fixtures' V = 100); no merges, so
one token per byte. The one writer of it: the CLI tests call it through tests/cli/model_tokenizer.sh,
the GUI tests and the docs' picture scripts directly.
Usage: model_tokenizer.py FOLDER [bos]"""
import json
import sys


def bytes_to_unicode():  # GPT-2's byte-to-unicode map
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


b2u = bytes_to_unicode()
order = list(range(32, 127)) + [9, 10, 13]
vocab = {b2u[b]: i for i, b in enumerate(order)}
nxt = 100
for b in range(256):
    if b not in order:
        vocab[b2u[b]] = nxt
        nxt += 1
added = [{"id": 99, "content": "<|endoftext|>", "special": True}]
post = None
if len(sys.argv) > 2 and sys.argv[2] == "bos":
    added.insert(0, {"id": 98, "content": "<|begin_of_text|>", "special": True})
    post = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}}
tok = {"version": "1.0", "added_tokens": added, "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
       "post_processor": post,
       "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
       "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": False, "vocab": vocab, "merges": []}}
with open(sys.argv[1] + "/tokenizer.json", "w", encoding="utf-8") as f:
    json.dump(tok, f, ensure_ascii=False)
