#!/usr/bin/env bash
# --workspace FILE and --save-workspace FILE on the subcommands: a saved workspace reproduces the
# command's output, options on the command line win over it, its files are checked by SHA-256
# (changed → refused, moved with the workspace → found and said, gone → "moved or deleted"),
# bad workspace files are refused with the key and the file named, train refuses it.
set -uo pipefail
BIN="$1"; FIX="$2"
source "$(dirname "$0")/common.sh"
# One GEMM for every run, so outputs compare bit for bit (the fastest one is otherwise measured
# at start and may differ between runs in the last bits).
export MHASCOPE_GEMM=eigen
MB=(--memory-budget 1024)  # info prints the budget, by default half of the memory available now

# --- a text model: info --save-workspace, then info --workspace prints the same ---------------
want="$("$BIN" info "${MB[@]}" --preset cat --heads 4 --mask causal 2>&1)"
expect_ok "info --save-workspace" "$BIN" info --preset cat --heads 4 --mask causal --save-workspace "$T/cat.json"
grep -q '"mhascope_workspace": 1' "$T/cat.json" && ok "versioned workspace file" || bad "no version: $(head -5 "$T/cat.json")"
got="$("$BIN" info "${MB[@]}" --workspace "$T/cat.json" 2>&1)"
[ "$got" = "$want" ] && ok "info --workspace gives the recorded output" || bad "info differs: $(diff <(echo "$want") <(echo "$got") | head)"
# an option on the command line wins over the workspace's
"$BIN" info --workspace "$T/cat.json" --heads 2 | grep -q "h=2 " && ok "--heads wins over the workspace" \
  || bad "--heads did not win: $("$BIN" info --workspace "$T/cat.json" --heads 2 | head -1)"
"$BIN" info --workspace "$T/cat.json" --preset default | grep -q "$("$BIN" info --preset default | head -1 | cut -c1-40)" \
  && ok "--preset wins over the workspace's configuration" || bad "--preset did not win"

# --- export: the workspace's picture by default; export --save-workspace keeps stage and head --
expect_ok "export --save-workspace" "$BIN" export --preset cat --stage masked_scores --head 1 --mask causal \
  --out "$T/a.png" --save-workspace "$T/pic.json"
grep -q '"stage": "masked_scores"' "$T/pic.json" && grep -q '"head": 1' "$T/pic.json" && ok "stage and head kept" \
  || bad "view not kept: $(grep -A3 '"view"' "$T/pic.json")"
expect_ok "export --workspace (its own picture)" "$BIN" export --workspace "$T/pic.json" --out "$T/b.png"
cmp -s "$T/a.png" "$T/b.png" && ok "export --workspace draws the same picture" || bad "pictures differ"
expect_ok "export --workspace --stage scores" "$BIN" export --workspace "$T/pic.json" --stage scores --out "$T/c.png"
cmp -s "$T/a.png" "$T/c.png" && bad "--stage did not win" || ok "--stage wins over the workspace's stage"

# --- files: raw inputs and weights, recorded with their SHA-256 --------------------------------
C="$FIX/torch/cross_padding"
mkdir -p "$T/proj"
cp "$C/query.npy" "$C/key.npy" "$C/value.npy" "$C/key_padding_mask.npy" "$C/weights.safetensors" "$T/proj/"
P="$T/proj"
RAW=(--query "$P/query.npy" --key "$P/key.npy" --value "$P/value.npy" --key-padding-mask "$P/key_padding_mask.npy"
     --heads 4 --weights "$P/weights.safetensors")
expect_ok "run --save-workspace with files" "$BIN" run "${RAW[@]}" --dump "$T/d1" --save-workspace "$P/ws.json"
grep -q "\"sha256\": \"$(sha256sum "$P/weights.safetensors" | cut -d' ' -f1)\"" "$P/ws.json" \
  && ok "the weights' SHA-256 is sha256sum's" || bad "hash: $(grep sha256 "$P/ws.json")"
expect_ok "run --workspace with files" "$BIN" run --workspace "$P/ws.json" --dump "$T/d2"
cmp -s "$T/d1/output.npy" "$T/d2/output.npy" && ok "same output from the workspace" || bad "outputs differ"
# moved together with its files: found beside it, and said
mv "$P" "$T/moved"
err="$("$BIN" run --workspace "$T/moved/ws.json" --dump "$T/d3" 2>&1 >/dev/null)"; rc=$?
[ $rc -eq 0 ] && grep -q "no longer at" <<<"$err" && cmp -s "$T/d1/output.npy" "$T/d3/output.npy" \
  && ok "a moved folder: files found beside the workspace, with a note" || bad "moved: rc=$rc $err"
# changed: refused, naming the file
printf 'x' | dd of="$T/moved/query.npy" bs=1 seek=200 conv=notrunc status=none
expect_error "a changed file is refused" "query.npy' changed since the workspace" \
  "$BIN" info --workspace "$T/moved/ws.json"
cp "$C/query.npy" "$T/moved/query.npy"
rm "$T/moved/weights.safetensors"
expect_error "a missing file: moved or deleted" "moved or deleted" "$BIN" info --workspace "$T/moved/ws.json"
# never over an input
expect_error "--save-workspace onto an input is refused" "would destroy that input" \
  "$BIN" info --query "$T/moved/query.npy" --heads 4 --save-workspace "$T/moved/query.npy"
expect_error "--save-workspace needs .json" "must end in .json" "$BIN" info --preset cat --save-workspace "$T/w.txt"

# --- bad workspace files ------------------------------------------------------------------------
head -c 100 "$T/cat.json" > "$T/trunc.json"
expect_error "truncated" "workspace '$T/trunc.json': not valid JSON" "$BIN" info --workspace "$T/trunc.json"
sed 's/"mhascope_workspace": 1/"mhascope_workspace": 7/' "$T/cat.json" > "$T/new.json"
expect_error "a newer format" "written by a newer mhascope" "$BIN" info --workspace "$T/new.json"
sed 's/"head": 0/"head": "0"/' "$T/cat.json" > "$T/type.json"
expect_error "a wrong type names the key" "/view/head must be an integer" "$BIN" info --workspace "$T/type.json"
head -c 20000000 /dev/zero | tr '\0' ' ' > "$T/huge.json"
expect_error "a huge file is refused before reading" "more than a workspace may hold" "$BIN" info --workspace "$T/huge.json"
expect_error "a folder" "is a folder" "$BIN" info --workspace "$T"
# A trained layer's workspace whose layer the checkpoint does not have: refused, naming the file.
"$BIN" train --task induction --layers 2 --heads 2 --d-model 16 --vocab 16 --seq 12 --period-min 3 --period-max 5 \
  --batch 4 --steps 1 --eval-every 1 --save "$T/m.safetensors" >/dev/null 2>&1
expect_ok "info --checkpoint --save-workspace" "$BIN" info --checkpoint "$T/m.safetensors" --layer 1 --save-workspace "$T/ck.json"
sed 's/"layer": 1/"layer": 7/' "$T/ck.json" > "$T/ck7.json"
for cmd in info "run --dump $T/ck7dump" "export --out $T/ck7.png"; do
  expect_error "layer 7 of 2 refused: ${cmd%% *}" "workspace '$T/ck7.json', /files/layer: layer 7 is out of range: this checkpoint has 2 layers (0 .. 1)" \
    "$BIN" $cmd --workspace "$T/ck7.json"
done
[ ! -e "$T/ck7dump" ] && [ ! -e "$T/ck7.png" ] && ok "nothing written for a refused layer" || bad "a refused layer wrote files"
expect_error "--layer given on the command line is named as such" "--layer 5 is out of range" \
  "$BIN" info --workspace "$T/ck7.json" --layer 5
expect_error "train refuses --workspace" "train does not read --workspace" "$BIN" train --workspace "$T/cat.json"
expect_ok "bench --workspace" "$BIN" bench --workspace "$T/cat.json" --repeat 1

echo "$fails failure(s)"
[ $fails -eq 0 ]
