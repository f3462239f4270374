#!/usr/bin/env node
// Writes tests/fixtures/model/tokenizer/gpt2_peer.json: token ids of a varied text set as
// GPT-2's own encoder (the npm package gpt-3-encoder, installed by `npm ci --prefix data/npm`)
// produces them. headlab's BpeTokenizer must produce every id.
//   node tools/reference/make_tokenizer_golden.js
const fs = require('fs');
const path = require('path');
const root = path.join(__dirname, '..', '..');
const { encode } = require(path.join(root, 'data', 'npm', 'node_modules', 'gpt-3-encoder'));

const texts = [
  // words and contractions
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  "I'm sure you're right, but we've seen it's not what they'd say; I'll check. Don't!",
  "IT'S LOUD. 'Quoted' and 'tis the season's end.",
  // numbers
  "In 2024, 3.14159 was pi and 1,000,000 people paid $42.50 (or 1e-9).",
  "Call 555-0123 at 10:30am on 2026-11-29; version v1.2.3-rc4.",
  "0123456789 9876543210 12345678901234567890",
  // white space
  "two  spaces,   three,    four",
  "trailing spaces   ",
  "   leading spaces",
  "line one\nline two\n\nline four\r\nwindows line",
  "\ttab\tseparated\t\tvalues\t",
  "mixed \n \t  whitespace\u00a0nbsp\u3000ideographic space",
  "",
  " ",
  "\n\n\n",
  // accents and scripts
  "café naïve résumé Zürich Ångström façade",
  "Ελληνικά, русский язык, עברית, العربية, हिन्दी",
  "日本語のテキストと中文文本，한국어 텍스트。",
  "Đà Nẵng, São Paulo, Kraków, Reykjavík",
  // emoji and symbols
  "I love 🍕 and 🐍! 👍🏽 👨‍👩‍👧‍👦 family, flags 🇫🇷🇯🇵",
  "Math: ∀x∈ℝ, x² ≥ 0; ∑ᵢ aᵢ = π ≈ 3.14 → ∞ ½ ¼ ² ³",
  "Quotes “smart” ‘single’ «guillemets» — em dash – en dash … ellipsis",
  // code
  "def f(x):\n    return x ** 2  # square\n",
  "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
  "const url = \"https://example.com/path?q=1&r=2#frag\";",
  "<html><body class=\"x\">Hi &amp; bye</body></html>",
  "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
  "    indented    code\n\tand\ttabs\n",
  // repetition and odd punctuation
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "!!!??? ...--- *** ### @@@ ~~~ ``` ''' \"\"\"",
  "The cat sat. The cat sat. The cat sat on the mat.",
  "Mr. O'Neil's dog's bone isn't John's.",
  "hello's world'll we're you've they'd I'm it's",
];

const out = { source: 'gpt-3-encoder ' + require(path.join(root, 'data', 'npm', 'node_modules', 'gpt-3-encoder', 'package.json')).version,
              cases: texts.map(text => ({ text, ids: encode(text) })) };
// one case per line, so a reviewer reads text and ids side by side
const body = out.cases.map(c => '  ' + JSON.stringify(c)).join(',\n');
fs.writeFileSync(path.join(root, 'tests', 'fixtures', 'model', 'tokenizer', 'gpt2_peer.json'),
                 `{"source": ${JSON.stringify(out.source)},\n "cases": [\n${body}\n]}\n`);
console.error(`wrote ${out.cases.length} cases`);
