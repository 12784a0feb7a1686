#!/usr/bin/env python3
"""make_gemma4_template.py — writes golden/template_gemma4.jsonl: Gemma 4's chat template
rendered by Jinja for the dialogs of make_family_templates.py, each first turn with
thinking off (the template's default: enable_thinking false, the generation prompt ends
with an empty thought channel) and on (enable_thinking true: the system block opens with
<|think|>), with the token ids a reference tokenizer gives each turn's text (special
tokens parsed); then the same for the template GEMMA4_VOCAB.gguf carries (jinja_of
"gemma4-vocab", jinja_file "gemma4-vocab.gguf"), which writes no newline after <|think|>:

    make_gemma4_template.py TEMPLATE.jinja LLAMA_TOKENIZE GEMMA4_VOCAB.gguf OUT.jsonl

TEMPLATE.jinja is llama.cpp 0.4.0's models/templates/google-gemma-4-31B-it.jinja (from
node-llama-cpp@3.21.1's llama.cpp source; tests/data keeps a copy,
gemma4-chat-template.jinja), rendered by Debian's python3-jinja2 as Hugging Face's
apply_chat_template sets it up, with bos_token "<bos>". Ids: llama.cpp 0.4.0's
llama-tokenize (the anchors' build) on tests/data/gemma4-vocab.gguf.gz decompressed
(--no-bos: the rendered text holds "<bos>"). Only first turns: the template drops an
earlier reply's thinking from the history it renders again, which llmchat keeps as the
model wrote it (docs/formats.md). A line: {"vocab", "template", "jinja_of", "system",
"user", "first", "no_think", "text", "ids"}, as template_qwen35.jsonl's. Python 3 with
jinja2.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_family_templates import DIALOGS, llama_ids, render, write_jsonl  # noqa: E402


def gguf_template(path):
    """The tokenizer.chat_template string of a GGUF file."""
    data = open(path, 'rb').read()
    key = b'tokenizer.chat_template'
    at = data.index(struct.pack('<Q', len(key)) + key) + 8 + len(key)
    kind, n = struct.unpack_from('<IQ', data, at)
    assert kind == 8, kind
    return data[at + 12:at + 12 + n].decode('utf-8')


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    template_path, tool, vocab, out = sys.argv[1:]
    lines = []
    for jinja_of, template in (('gemma4', open(template_path, encoding='utf-8').read()),
                               ('gemma4-vocab', gguf_template(vocab))):
        for system, user, _, _ in DIALOGS:
            for no_think in (True, False):
                msgs = ([{'role': 'system', 'content': system}] if system else []) + \
                       [{'role': 'user', 'content': user}]
                text = render(template, msgs, '<bos>', '<eos>', no_think, ask_think=True)
                row = {'vocab': 'gemma4-vocab', 'template': 'gemma4', 'jinja_of': jinja_of}
                if jinja_of == 'gemma4-vocab':
                    row['jinja_file'] = 'gemma4-vocab.gguf'
                lines.append(dict(row, system=system, no_think=no_think, user=user, first=True,
                                  text=text, ids=llama_ids(tool, vocab, text)))
    write_jsonl(out, lines)


if __name__ == '__main__':
    main()
