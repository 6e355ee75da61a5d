#!/usr/bin/env bash
# `mhascope info --model DIR` on the fixture model folders (tests/fixtures/models, made by
# scripts/gen_model_fixtures.py): architecture, sizes, parameter count, KV-cache bytes per token;
# a folder that cannot be opened and options the folder decides are one clear line each.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
M="$FIX/models"
PY=/usr/bin/python3

out="$("$BIN" info --model "$M/gpt2")"
grep -q "architecture  *gpt2" <<<"$out" && grep -q "heads h  *4 (d_k = 8)" <<<"$out" \
  && grep -q "positions  *learned, 32" <<<"$out" && ok "gpt2: architecture and sizes" || bad "gpt2 info: $out"
# wte 3200 + wpe 1024 + ln_f 64 + 2 layers x 12,204 = 29,696 (the file's tensors without the mask buffers)
grep -q "parameters  *29,696" <<<"$out" && ok "gpt2: parameter count" || bad "gpt2 parameters: $out"
# 2 (K and V) x L 2 x N 4 x d_k 8 = 128 floats
grep -q "KV cache  *512 B per token (2 \* L \* N \* d_k = 128 floats" <<<"$out" && ok "gpt2: KV-cache bytes" || bad "gpt2 kv: $out"

out="$("$BIN" info --model "$M/llama_gqa")"
grep -q "K/V heads N  *2 (grouped-query: 2 query heads per K/V head)" <<<"$out" && grep -q "unembedding  *lm_head" <<<"$out" \
  && ok "llama: grouped K/V heads, lm_head" || bad "llama info: $out"
grep -q "KV cache  *256 B per token" <<<"$out" && grep -q "parameters  *21,920" <<<"$out" \
  && ok "llama: KV cache halves with N = h/2; parameters" || bad "llama kv: $out"
out="$("$BIN" info --model "$M/llama_sharded/config.json")"
grep -q "F32 in 2 files" <<<"$out" && grep -q "parameters  *21,920" <<<"$out" && ok "sharded folder through its config.json" \
  || bad "sharded: $out"
out="$("$BIN" info --model "$M/mistral")"
grep -q "sliding window  *W = 4" <<<"$out" && ok "mistral: window" || bad "mistral: $out"
out="$("$BIN" info --model "$M/qwen2")"
grep -q "attention biases  *q, k, v$" <<<"$out" && grep -q "tied to the token embedding" <<<"$out" && ok "qwen2: biases, tied" \
  || bad "qwen2: $out"
out="$("$BIN" info --model "$M/llama3_scaled")"
grep -q "RoPE theta 500000, rotate-half, llama3 scaling x8" <<<"$out" && ok "llama3 rope scaling" || bad "llama3: $out"
out="$("$BIN" info --model "$M/llama_gqa_bf16")"
grep -q "weights  *BF16 in 1 file" <<<"$out" && ok "bf16 dtype" || bad "bf16: $out"

expect_error "no such folder" "no such folder" "$BIN" info --model "$T/nothing"
mkdir -p "$T/empty"
expect_error "no config.json" "no config.json in the folder" "$BIN" info --model "$T/empty"
cp -r "$M/gpt2" "$T/bert" && sed -i 's/"model_type": "gpt2"/"model_type": "bert"/' "$T/bert/config.json"
expect_error "unknown model_type" "model_type 'bert' is not supported" "$BIN" info --model "$T/bert"
# A name with NUL or ESC bytes from a file: the whole line, escaped (nothing cut, nothing sent to the terminal raw).
cp -r "$M/gpt2" "$T/nul" && sed -i 's/"model_type": "gpt2"/"model_type": "gp\\u0000t\\u001b[31m2"/' "$T/nul/config.json"
err="$("$BIN" info --model "$T/nul" 2>&1)"
grep -qF "model_type 'gp\x00t\x1b[31m2' is not supported" <<<"$err" && ! grep -q $'\x1b' <<<"$err" \
  && ok "a NUL and an ESC in a name are escaped, the line is whole" || bad "escaped name: $(cat -v <<<"$err")"
cp -r "$M/llama_sharded" "$T/shard" && rm "$T/shard/model-00002-of-00002.safetensors"
expect_error "missing shard" "model-00002-of-00002.safetensors: no such file" "$BIN" info --model "$T/shard"
# Values and files that cannot be used: one line naming the file, the key and the value.
cp -r "$M/llama_gqa" "$T/theta" && "$PY" -c "
import json; p = '$T/theta/config.json'; c = json.load(open(p)); c['rope_theta'] = 1e308; json.dump(c, open(p, 'w'))"
expect_error "rope_theta beyond float32" "'rope_theta' must be a positive number float32 can hold (at most 3.4e38), got 1e+308" \
  "$BIN" info --model "$T/theta"
cp -r "$M/gpt2" "$T/type2" && sed -i 's/"model_type": "gpt2"/"model_type": 2/' "$T/type2/config.json"
expect_error "model_type not a string" "'model_type' must be a string" "$BIN" info --model "$T/type2"
cp -r "$M/gpt2" "$T/dangling" && rm "$T/dangling/config.json" && ln -s nowhere.json "$T/dangling/config.json"
expect_error "config.json a dangling link" "is a symbolic link to 'nowhere.json'" "$BIN" info --model "$T/dangling"
cp -r "$M/gpt2" "$T/loop" && rm "$T/loop/config.json" && ln -s config.json "$T/loop/config.json"
expect_error "config.json a loop of links" "a loop of links" "$BIN" info --model "$T/loop"
cp -r "$M/llama_sharded" "$T/longname" && "$PY" -c "
import json; p = '$T/longname/model.safetensors.index.json'; j = json.load(open(p))
j['weight_map']['model.norm.weight'] = 'x' * 5000; json.dump(j, open(p, 'w'))"
expect_error "a 5000-byte shard name" "names a file of 5000 bytes; a file name has at most 255" "$BIN" info --model "$T/longname"
cp -r "$M/llama_sharded" "$T/shardloop" && rm "$T/shardloop/model-00002-of-00002.safetensors" \
  && ln -s model-00002-of-00002.safetensors "$T/shardloop/model-00002-of-00002.safetensors"
err="$("$BIN" info --model "$T/shardloop" 2>&1)"
grep -q "^mhascope: error: .*model-00002-of-00002.safetensors" <<<"$err" && ! grep -q "filesystem error" <<<"$err" \
  && ok "a shard that is a loop of links: one line, no raw filesystem text" || bad "shard loop: $err"
expect_error "options the folder decides" "drop --heads" "$BIN" info --model "$M/gpt2" --heads 2 --text "a b"
expect_error "options the folder decides (summary only)" "drop --heads" "$BIN" info --model "$M/gpt2" --heads 2
expect_error "empty --model" "--model" "$BIN" info --model ""

echo "$fails failure(s)"
[ $fails -eq 0 ]
