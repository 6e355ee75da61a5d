#!/usr/bin/env node
// Writes the tokenizer's reference fixtures, so the test suite needs neither node nor the network:
//   tests/fixtures/tokenizer/gpt2/vocab.json + merges.txt  the real GPT-2 vocabulary (50257 tokens,
//                                                          50000 merges), copied byte for byte
//   tests/fixtures/tokenizer/gpt2_cases.json               a varied corpus with the reference ids
//   tests/fixtures/tokenizer/split_cases.json              the pieces V8's regex engine cuts the corpus and
//                                                          random strings into with the GPT-2, Llama-3,
//                                                          Qwen2, o200k and DeepSeek-V3 pre-tokenizer
//                                                          regexes (JavaScript has no (?i:…) group, so
//                                                          the contractions are spelled out case by case)
//   tests/fixtures/tokenizer/seed_*.tokenizer              seeds for the fuzzer (scripts/fuzz.sh), one of them
//                                                          a tiny SentencePiece-style tokenizer.json
//   tests/fixtures/tokenizer/llama_style/tokenizer.json    a tiny hand-made tokenizer.json laid out as
//                                                          Llama 3's (Split regex + ByteLevel, added
//                                                          tokens, ignore_merges, a BOS template); its
//                                                          expected ids are worked out by hand in the test
// The reference is two independent JavaScript ports of GPT-2's encoder (gpt-3-encoder, which
// carries OpenAI's encoder.json + vocab.bpe, and gpt-tokenizer's r50k_base); every case must get
// the same ids from both, or the script stops. Special tokens are split out before the
// pre-tokenizer, as Hugging Face tokenizers and tiktoken do with an allowed special token: the
// text between them is encoded on its own.
//
// Usage: node scripts/gen_tokenizer_fixtures.js [node_modules dir]
// Without an argument the two packages (pinned versions) are installed with npm into a temporary
// directory outside the repository, which is removed afterwards.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { sharedCases } = require('./tokenizer_corpus');

const root = path.resolve(__dirname, '..');
const outDir = path.join(root, 'tests', 'fixtures', 'tokenizer');

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the other 68 go to U+0100 on.
function byteToUnicode() {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
  const map = [];
  let n = 0;
  for (let b = 0; b < 256; b++) map.push(String.fromCodePoint(printable(b) ? b : 0x100 + n++));
  return map;
}

// A Llama-3-shaped tokenizer.json small enough to reason about: ids 0-255 are the bytes, then a
// few merged tokens, then added tokens from 300. "Ġworld" is in the vocabulary but no merge makes
// it, so only ignore_merges can produce it.
function writeLlamaStyle() {
  const bytes = byteToUnicode();
  const vocab = {};
  bytes.forEach((ch, b) => { vocab[ch] = b; });
  const merges = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['l', 'l'], ['he', 'll'], ['hell', 'o'],
                  ['1', '2'], ['12', '3'], ['Ċ', 'Ċ'], ['Ġ', 'Ġ'], ["'", 's']];
  let next = 256;
  for (const [a, b] of merges) vocab[a + b] = next++;
  vocab['Ġworld'] = next++;
  const regex = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|" +
                " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
                                    normalized: false, special: true });
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [added(300, '<|begin_of_text|>'), added(301, '<|end_of_text|>'), added(302, '<|eot_id|>'),
                   added(303, '<|end|>')],
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: {
      type: 'Sequence',
      processors: [
        { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: 'TemplateProcessing',
          single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
          pair: [],
          special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [300], tokens: ['<|begin_of_text|>'] } },
        },
      ],
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges,
    },
  };
  const llamaText = JSON.stringify(tokenizer, null, 1) + '\n';
  fs.mkdirSync(path.join(outDir, 'llama_style'), { recursive: true });
  fs.writeFileSync(path.join(outDir, 'llama_style', 'tokenizer.json'), llamaText);

  // Seeds for the fuzzer (fuzz/fuzz_tokenizer.cpp): the first byte says what follows.
  const byteVocab = {};
  bytes.forEach((ch, b) => { byteVocab[ch] = b; });
  byteVocab['Ġt'] = 256;
  byteVocab['<|endoftext|>'] = 257;
  const seeds = {
    json: Buffer.concat([Buffer.from([0]), Buffer.from(llamaText)]),
    vocab_merges: Buffer.concat([Buffer.from([1]), Buffer.from(JSON.stringify(byteVocab)), Buffer.from([0]),
                                 Buffer.from('#version: 0.2\nĠ t\n')]),
    text: Buffer.concat([Buffer.from([2]), Buffer.from("It's 12345 café <|endoftext|>  \t\n\r\n 😀 👨‍👩‍👧 DON'T\n")]),
  };
  for (const [name, data] of Object.entries(seeds)) fs.writeFileSync(path.join(outDir, `seed_${name}.tokenizer`), data);
  fs.writeFileSync(path.join(outDir, 'seed_sp_json.tokenizer'),
                   Buffer.concat([Buffer.from([0]), Buffer.from(JSON.stringify(sentencePieceSeed()))]));
}

// Laid out as Llama 2's tokenizer.json (Prepend + Replace normalizer, byte fallback, <unk>, the
// Replace / ByteFallback / Fuse / Strip decoder), with a handful of tokens and merges.
function sentencePieceSeed() {
  const mark = '\u2581';
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  let next = 259;
  for (const c of [mark, 'h', 'e', 'l', 'o', mark + 'h', 'el', mark + 'hel', 'lo', mark + 'hello']) vocab[c] = next++;
  const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
                                    special: true });
  return {
    version: '1.0',
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: mark },
                                                  { type: 'Replace', pattern: { String: ' ' }, content: mark }] },
    pre_tokenizer: null,
    post_processor: { type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } },
                                                           { Sequence: { id: 'A', type_id: 0 } }],
                      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: mark }, content: ' ' },
                                            { type: 'ByteFallback' }, { type: 'Fuse' },
                                            { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null,
             fuse_unk: true, byte_fallback: true, vocab,
             merges: [`${mark} h`, 'e l', `${mark}h el`, 'l o', `${mark}hel lo`] },
  };
}

function writeSplitCases(corpus) {
  const regexes = {
    gpt2: /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu,
    llama3: /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu,
    qwen2: /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu,
    o200k: /[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu,
  };
  // DeepSeek-V3's three Splits match only some of the text; the stretches between matches are
  // pieces too (Hugging Face's "Isolated").
  const isolatedRegexes = {
    deepseek_digits: /\p{N}{1,3}/gu,
    deepseek_cjk: /[一-龥぀-ゟ゠-ヿ]+/gu,
    deepseek_words: /[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu,
  };
  const isolated = (text, re) => {
    const pieces = [];
    let last = 0;
    for (const m of text.matchAll(re)) {
      if (m.index > last) pieces.push(text.slice(last, m.index));
      pieces.push(m[0]);
      last = m.index + m[0].length;
    }
    if (last < text.length) pieces.push(text.slice(last));
    return pieces;
  };
  // Random strings over the characters where the regexes differ: letters of several scripts,
  // digits of several kinds (Nd, Nl, No), spaces of several kinds, line breaks, apostrophes and
  // the contraction letters in both cases, punctuation, a combining mark, ZWJ and an emoji.
  // (U+FEFF and U+0085 are left out: JavaScript's \s and Unicode's White_Space disagree on them.)
  const alphabet = ['a', 'Z', 'é', '中', 'ж', '1', '٣', '½', 'Ⅻ', ' ', ' ', ' ', '\t', '\n', '\r', '\u00a0',
                    '\u3000', "'", "'", 's', 'S', 't', 'r', 'E', 'v', 'm', 'L', 'l', 'd', '.', '!', '😀',
                    '\u0301', '\u200d', '_', '-'];
  let seed = 12345;
  const random = () => {  // a fixed linear congruential generator: the fixture never changes by itself
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const texts = corpus.slice();
  for (let k = 0; k < 300; k++) {
    let t = '';
    const len = 1 + Math.floor(random() * 24);
    for (let c = 0; c < len; c++) t += alphabet[Math.floor(random() * alphabet.length)];
    texts.push(t);
  }
  const out = texts.map((text) => {
    const entry = { text };
    for (const [name, re] of Object.entries(regexes)) {
      const pieces = text.match(re) || [];
      if (pieces.join('') !== text) throw new Error(`${name} regex does not cover ${JSON.stringify(text)}`);
      entry[name] = pieces;
    }
    for (const [name, re] of Object.entries(isolatedRegexes)) entry[name] = isolated(text, re);
    return entry;
  });
  fs.writeFileSync(path.join(outDir, 'split_cases.json'),
                   '[\n' + out.map((c) => JSON.stringify(c)).join(',\n') + '\n]\n');
}

let modulesDir = process.argv[2];
let tmpDir = null;
if (!modulesDir) {
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mhascope-tok-'));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', tmpDir,
                       'gpt-3-encoder@1.1.4', 'gpt-tokenizer@4.0.0'], { stdio: 'inherit' });
  modulesDir = path.join(tmpDir, 'node_modules');
}

try {
  const encoderDir = path.join(modulesDir, 'gpt-3-encoder');
  const legacy = require(encoderDir);
  const r50k = require(path.join(modulesDir, 'gpt-tokenizer', 'cjs', 'encoding', 'r50k_base'));

  // (1) The vocabulary, checked before it is copied.
  const vocabBytes = fs.readFileSync(path.join(encoderDir, 'encoder.json'));
  const mergesBytes = fs.readFileSync(path.join(encoderDir, 'vocab.bpe'));
  const vocab = JSON.parse(vocabBytes.toString('utf8'));
  const nTokens = Object.keys(vocab).length;
  const mergeLines = mergesBytes.toString('utf8').split('\n');
  if (mergeLines[mergeLines.length - 1] === '') mergeLines.pop();
  const nMerges = mergeLines.length - 1;  // the first line is "#version: 0.2"
  if (nTokens !== 50257) throw new Error(`encoder.json has ${nTokens} tokens, expected 50257`);
  if (nMerges !== 50000) throw new Error(`vocab.bpe has ${nMerges} merges, expected 50000`);
  if (!mergeLines[0].startsWith('#version')) throw new Error('vocab.bpe does not start with #version');
  if (vocab['<|endoftext|>'] !== 50256) throw new Error('<|endoftext|> is not id 50256');
  fs.mkdirSync(path.join(outDir, 'gpt2'), { recursive: true });
  fs.writeFileSync(path.join(outDir, 'gpt2', 'vocab.json'), vocabBytes);
  fs.writeFileSync(path.join(outDir, 'gpt2', 'merges.txt'), mergesBytes);

  // (2) The corpus (scripts/tokenizer_corpus.js).
  const cases = sharedCases();

  const special = '<|endoftext|>';
  const out = [];
  for (const [name, text] of cases) {
    const pieces = text.split(special);
    const legacyIds = [];
    const r50kIds = [];
    pieces.forEach((piece, i) => {
      if (i > 0) {
        legacyIds.push(50256);
        r50kIds.push(50256);
      }
      if (piece.length > 0) {
        legacyIds.push(...legacy.encode(piece));
        r50kIds.push(...r50k.encode(piece, { disallowedSpecial: new Set() }));
      }
    });
    if (JSON.stringify(legacyIds) !== JSON.stringify(r50kIds)) {
      throw new Error(`case ${name}: the two references disagree:\n  ${legacyIds}\n  ${r50kIds}`);
    }
    if (r50k.decode(r50kIds) !== text) throw new Error(`case ${name}: does not decode back to its text`);
    out.push({ name, text, ids: legacyIds });
  }
  // One case per line: readable in a diff, and the ids stay next to their text.
  fs.writeFileSync(path.join(outDir, 'gpt2_cases.json'),
                   '[\n' + out.map((c) => JSON.stringify(c)).join(',\n') + '\n]\n');
  console.log(`wrote ${nTokens} tokens, ${nMerges} merges and ${out.length} cases to ${outDir}`);
  writeSplitCases(cases.map(([, text]) => text));
  writeLlamaStyle();
} finally {
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}
