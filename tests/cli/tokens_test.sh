#!/usr/bin/env bash
# `mhascope tokens`: a SentencePiece-style tokenizer.json (Mistral 7B's, committed with the
# tokenizer fixtures), GPT-2's vocab.json + merges.txt folder, a fixture model folder with the
# test's byte-level tokenizer (model_tokenizer.sh), and the mistral fixture widened to Mistral 7B's
# vocabulary with its real tokenizer (tokens and predict open it): positions, ids, pieces, the
# count, the BOS, --json, escaped control characters, every refusal.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
PY=/usr/bin/python3
source "$(dirname "$0")/model_tokenizer.sh"  # mktok
MISTRAL="$FIX/tokenizer/families/mistral7b/tokenizer.json"
# has NAME SUBSTRING TEXT: ok when TEXT holds SUBSTRING
has() { if grep -qF -- "$2" <<<"$3"; then ok "$1"; else bad "$1 (no '$2' in: $3)"; fi; }

# --- a SentencePiece-style tokenizer.json: ▁ pieces, the BOS, byte fallback ---------------------
out="$("$BIN" tokens --tokenizer "$MISTRAL" --text "Hello world" 2>&1)" || bad "tokens --tokenizer: $out"
has "the kind of tokenizer" "SentencePiece-style BPE: 32000 tokens" "$out"
has "the template's BOS first" "the BOS '<s>' first" "$out"
has "position 0: the BOS, special" "       0        1  <s>" "$out"
has "position 1: ▁Hello, read as ␣Hello" "       1    22557  ▁Hello                   ␣Hello" "$out"
has "position 2: ▁world" "       2     1526  ▁world" "$out"
has "the count" "3 tokens" "$out"
out="$("$BIN" tokens --tokenizer "$MISTRAL" --text $'a\U0010FFFD' 2>&1)" || bad "tokens, byte fallback: $out"
has "a character without a token: its bytes as <0xNN>" "<0xF4>                   <0xF4>" "$out"
has "the last of its four bytes" "<0xBD>" "$out"

# --json: the same tokens, pieces as spelled, bytes as they read.
"$BIN" tokens --tokenizer "$MISTRAL" --text $'Hi\tthere' --json "$T/t.json" >/dev/null 2>&1 || bad "tokens --json"
"$PY" -c "
import json
d = json.load(open('$T/t.json'))
assert d['count'] == len(d['tokens']) and d['bos'] is True, d
assert [t['position'] for t in d['tokens']] == list(range(d['count']))
assert d['tokens'][0] == {'position': 0, 'id': 1, 'piece': '<s>', 'bytes': '<s>', 'special': True}, d['tokens'][0]
assert d['tokens'][1]['piece'] == '\u2581Hi' and d['tokens'][1]['bytes'] == ' Hi', d['tokens'][1]
tab = [t for t in d['tokens'] if t['piece'] == '<0x09>']
assert len(tab) == 1 and tab[0]['bytes'] == '\t', d['tokens']
assert d['text'] == 'Hi\tthere'
" && ok "--json: positions, ids, pieces, bytes, the BOS" || bad "--json content: $(cat "$T/t.json")"
expect_error "--json over an existing file needs --force" "--force" \
  "$BIN" tokens --tokenizer "$MISTRAL" --text "x" --json "$T/t.json"
expect_ok "--json --force replaces it" "$BIN" tokens --tokenizer "$MISTRAL" --text "x" --json "$T/t.json" --force
cp "$MISTRAL" "$T/copy.json"
expect_error "--json never overwrites the tokenizer it read" "--tokenizer" \
  "$BIN" tokens --tokenizer "$T/copy.json" --text "x" --json "$T/copy.json" --force

# --- GPT-2's folder: byte-level pieces as spelled, control characters escaped -------------------
out="$("$BIN" tokens --tokenizer "$FIX/tokenizer/gpt2" --text $'Hello world\n' 2>&1)" || bad "tokens on GPT-2's folder: $out"
has "byte-level" "byte-level BPE: 50257 tokens" "$out"
has "no BOS" "no BOS: the tokenizer's template adds none" "$out"
has "Ġworld as spelled, read as ␣world" "995  Ġworld                   ␣world" "$out"
has "the newline: Ċ, read as \\n" "198  Ċ                        \\n" "$out"
# A piece that holds a control character itself is shown escaped, never raw.
"$PY" -c "
import json
j = json.load(open('$FIX/tokenizer/llama_style/tokenizer.json'))
j['added_tokens'].append({'id': 304, 'content': '<tab>\t\x07', 'special': True, 'normalized': False})
json.dump(j, open('$T/ctl.json', 'w'))"
out="$("$BIN" tokens --tokenizer "$T/ctl.json" --text $'a<tab>\t\x07' 2>&1)" || bad "tokens with a control character: $out"
has "a control character in a piece is escaped" "<tab>\\tU+0007" "$out"
if grep -q $'\x07' <<<"$out"; then bad "a raw BEL reached the output"; else ok "no raw control character in the output"; fi

# --- a model folder: the ids the model reads ----------------------------------------------------
cp -r "$FIX/models/llama_gqa" "$T/m" && mktok "$T/m" bos
out="$("$BIN" tokens --model "$T/m" --text "hi" 2>&1)" || bad "tokens --model: $out"
has "--model: the folder named" "model folder '$T/m' (tokenizer.json)" "$out"
has "--model: BOS (98) first" "       0       98  <|begin_of_text|>" "$out"
has "--model: 'h' is id 72" "       1       72  h" "$out"
has "--model: the count" "3 tokens" "$out"
expect_error "--json inside the model folder is refused" "inside" \
  "$BIN" tokens --model "$T/m" --text "hi" --json "$T/m/tokens.json"

# --- a SentencePiece-style model folder opens: the mistral fixture widened to Mistral 7B's 32000 tokens
# (embedding and lm_head rows repeated) with its real tokenizer.json; tokens and predict read it ---
cp -r "$FIX/models/mistral" "$T/sp" && cp "$MISTRAL" "$T/sp/tokenizer.json"
"$PY" -c "
import json, struct, numpy as np
path = '$T/sp/model.safetensors'
b = open(path, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); data = b[8 + n:]
tensors = {k: np.frombuffer(data[v['data_offsets'][0]:v['data_offsets'][1]], np.float32).reshape(v['shape'])
           for k, v in h.items() if k != '__metadata__'}
for k in ('model.embed_tokens.weight', 'lm_head.weight'):
    tensors[k] = np.resize(tensors[k], (32000, tensors[k].shape[1]))
header, offset, blobs = {}, 0, []
for k in sorted(tensors):
    a = np.ascontiguousarray(tensors[k]); header[k] = {'dtype': 'F32', 'shape': list(a.shape), 'data_offsets': [offset, offset + a.nbytes]}
    offset += a.nbytes; blobs.append(a.tobytes())
hj = json.dumps(header).encode(); hj += b' ' * (-len(hj) % 8)
open(path, 'wb').write(struct.pack('<Q', len(hj)) + hj + b''.join(blobs))
c = json.load(open('$T/sp/config.json')); c['vocab_size'] = 32000; json.dump(c, open('$T/sp/config.json', 'w'))"
out="$("$BIN" tokens --model "$T/sp" --text "Hello world" 2>&1)" || bad "tokens --model on a SentencePiece-style folder: $out"
has "a SentencePiece-style model folder: its BOS and ▁ pieces" "       1    22557  ▁Hello" "$out"
out="$("$BIN" predict --model "$T/sp" --text "Hello world" --top 2 2>&1)" || bad "predict on a SentencePiece-style folder: $out"
has "predict reads the same tokens" "BOS '<s>' first" "$out"
has "predict shows ␣world" "␣world" "$out"

# --- refusals ------------------------------------------------------------------------------------
mkdir -p "$T/empty"
expect_error "no tokenizer given" "tokens needs a tokenizer: --model DIR or --tokenizer FILE" "$BIN" tokens --text "x"
expect_error "--model and --tokenizer both" "excludes" "$BIN" tokens --model "$T/m" --tokenizer "$MISTRAL" --text "x"
expect_error "a missing tokenizer file" "cannot read '$T/none.json': no such file" \
  "$BIN" tokens --tokenizer "$T/none.json" --text "x"
expect_error "a folder without a tokenizer" "holds no tokenizer: neither tokenizer.json nor vocab.json + merges.txt" \
  "$BIN" tokens --tokenizer "$T/empty" --text "x"
expect_error "a missing model folder" "no such folder" "$BIN" tokens --model "$T/nowhere" --text "x"
cp -r "$FIX/models/llama_gqa" "$T/m_notok"
expect_error "a model folder without a tokenizer" "the text needs the model's own tokenizer" \
  "$BIN" tokens --model "$T/m_notok" --text "x"
expect_error "empty text (--tokenizer)" "--text is empty: enter at least one token" \
  "$BIN" tokens --tokenizer "$MISTRAL" --text ""
expect_error "empty text (--model)" "--text is empty: enter at least one token" "$BIN" tokens --model "$T/m" --text ""
expect_error "no text" "--text \"...\" or --text-file FILE" "$BIN" tokens --tokenizer "$MISTRAL"
printf '{"model": ' > "$T/bad.json"
expect_error "a malformed tokenizer.json" "not valid JSON" "$BIN" tokens --tokenizer "$T/bad.json" --text "x"
# Invalid UTF-8: said, and read as U+FFFD.
err="$("$BIN" tokens --tokenizer "$MISTRAL" --text $'a\xffb' 2>&1 >/dev/null)" || bad "tokens with invalid UTF-8 failed"
has "invalid UTF-8 is said" "is not valid UTF-8" "$err"

echo "$fails failure(s)"
[ $fails -eq 0 ]
