# Shared by the model-folder CLI tests (source it after PY is set). The fixture folders
# (tests/fixtures/models) carry no tokenizer, so `mktok DIR [bos]` writes a byte-level
# tokenizer.json into a copy (tests/model_tokenizer.py): ids 0-94 are the printable ASCII bytes 32-126 (id = byte - 32),
# 95-97 tab, newline, carriage return, 98 <|begin_of_text|> (only with "bos": the template puts
# it first), 99 <|endoftext|>, and every other byte an id from 100 up (outside the models'
# V = 100); no merges, so one token per byte and the reference token sequences are plain texts.
# `reftext FIXDIR MODEL K OUT` writes the text of reference sequence K of MODEL.
mktok() {  # mktok DIR [bos]
  "$PY" "$(dirname "${BASH_SOURCE[0]}")/../model_tokenizer.py" "$@"
}
reftext() {  # reftext REFDIR MODEL K OUT
  "$PY" -c "import numpy as np, sys; sys.stdout.write(''.join('\t\n\r'[i - 95] if i >= 95 else chr(32 + i) for i in np.load('$1/$2/s$3_tokens.npy').tolist()))" > "$4"
}
