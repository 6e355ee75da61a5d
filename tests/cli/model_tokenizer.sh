# Shared by the model-folder CLI tests (source it after PY is set). The fixture folders
# (tests/fixtures/models) carry no tokenizer, so `mktok DIR [bos]` writes a byte-level
# tokenizer.json into a copy: ids 0-94 are the printable ASCII bytes 32-126 (id = byte - 32),
# 95-97 tab, newline, carriage return, 98 <|begin_of_text|> (only with "bos": the template puts
# it first), 99 <|endoftext|>, and every other byte an id from 100 up (outside the models'
# V = 100); no merges, so one token per byte and the reference token sequences are plain texts.
# `reftext FIXDIR MODEL K OUT` writes the text of reference sequence K of MODEL.
mktok() {  # mktok DIR [bos]
  "$PY" - "$@" <<'PYEOF'
import json, sys
def bytes_to_unicode():  # GPT-2's byte-to-unicode map
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))
b2u = bytes_to_unicode()
order = list(range(32, 127)) + [9, 10, 13]
vocab = {b2u[b]: i for i, b in enumerate(order)}
nxt = 100
for b in range(256):
    if b not in order:
        vocab[b2u[b]] = nxt; nxt += 1
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
json.dump(tok, open(sys.argv[1] + "/tokenizer.json", "w"), ensure_ascii=False)
PYEOF
}
reftext() {  # reftext REFDIR MODEL K OUT
  "$PY" -c "import numpy as np, sys; sys.stdout.write(''.join('\t\n\r'[i - 95] if i >= 95 else chr(32 + i) for i in np.load('$1/$2/s$3_tokens.npy').tolist()))" > "$4"
}
