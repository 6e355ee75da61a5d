// The corpus the tokenizer fixtures share (scripts/gen_tokenizer_fixtures.js writes GPT-2's ids for
// it, scripts/gen_family_tokenizer_fixtures.js each family's, with cases of its own): [name, text],
// each case named for what it exercises.
'use strict';

function sharedCases() {
  const longWord = 'Pneumonoultramicroscopicsilicovolcanoconiosis';
  return [
    ['empty', ''],
    ['one_space', ' '],
    ['hello', 'Hello world'],
    ['leading_space', ' Hello world'],
    ['contractions', "I'm sure it's what they've said: we'll see, you'd know, don't, can't, they're"],
    ['contractions_upper', "DON'T YOU'RE I'M IT'S WE'LL THEY'VE HE'D"],
    ['contraction_alone', "'s 't 're 've 'm 'll 'd"],
    ['quotes', "'quoted' \"double\" `tick` 'tis"],
    ['numbers', 'In 1984 there were 3.14159 pies, 1,000,000 people and 42nd street; 007 0x1F 1e10'],
    ['long_number', '12345678901234567890123456789'],
    ['two_spaces', 'a  b'],
    ['whitespace_runs', 'a    b     c  \n  d'],
    ['trailing_spaces', 'end of line   '],
    ['leading_spaces', '    indented code'],
    ['tabs', 'col1\tcol2\t\tcol3\t'],
    ['newlines', 'line one\nline two\n\nline four\r\nwindows\n'],
    ['only_newlines', '\n\n\n'],
    ['mixed_whitespace', ' \t \n \u00a0x\u3000y'],
    ['pipes', 'a | b || c |d| | '],
    ['punctuation', 'Wait... what?! (yes) [no] {maybe} <tag/> #hash @at $5 %20 ^_^ ~ & * -- ;;'],
    ['code', 'def f(x):\n    return x**2 + 1  # square\n'],
    ['url', 'https://example.com/path?q=1&r=two#frag'],
    ['accents', 'Café naïve résumé Ångström façade über Straße'],
    ['accents_decomposed', 'Cafe\u0301 nai\u0308ve'],
    ['greek_cyrillic', 'Ελληνικά κείμενο и русский текст'],
    ['cjk', '日本語のテキストと中文文本和한국어'],
    ['arabic_rtl', 'مرحبا بالعالم'],
    ['hebrew_rtl', 'שלום עולם'],
    ['rtl_mixed', 'abc مرحبا 123 שלום!'],
    ['devanagari', 'नमस्ते दुनिया'],
    ['thai', 'สวัสดีชาวโลก'],
    ['emoji', 'I love 🍕 and 🚀! 😀😀'],
    ['emoji_zwj', 'family 👨‍👩‍👧‍👦 and flag 🏳️‍🌈 and skin 👍🏽'],
    ['flags', '🇫🇷🇯🇵'],
    ['math_symbols', '∑ x² ≤ ∞ ½ ¼ ① Ⅻ'],
    ['endoftext', '<|endoftext|>'],
    ['endoftext_between', 'Hello<|endoftext|>World'],
    ['endoftext_spaces', 'end. <|endoftext|> Next document'],
    ['endoftext_twice', '<|endoftext|><|endoftext|>'],
    ['endoftext_partial', '<|endoftext| <|endof'],
    ['long_word', longWord],
    ['long_word_repeated', (longWord + ' ').repeat(5)],
    ['long_run_same_letter', 'a'.repeat(300)],
    ['long_run_digits', '9'.repeat(120)],
    ['long_run_punct', '!'.repeat(100) + '?'.repeat(33)],
    ['long_spaces', ' '.repeat(64) + 'x'],
    ['mixed_scripts_word', 'helloМирworld世界'],
    ['control_chars', 'bell\u0007 esc\u001b[0m del\u007f'],
    ['apostrophe_unicode', 'it’s don’t'],
    ['sentence', 'The quick brown fox jumps over the lazy dog. It was 9:45 p.m. on Tuesday, Nov. 3rd.'],
    ['paragraph', 'Attention is all you need.\n\nWe propose a new simple network architecture, the Transformer, ' +
                  'based solely on attention mechanisms, dispensing with recurrence and convolutions entirely.'],
  ];
}

module.exports = { sharedCases };
