#!/usr/bin/env python3
"""make_gemma4_template.py — writes golden/template_gemma4.jsonl: Gemma 4's chat template
rendered by Jinja for the dialogs of make_family_templates.py, each first turn with
thinking off (the template's default: enable_thinking false, the generation prompt ends
with an empty thought channel) and on (enable_thinking true: the system block opens with
<|think|>), with the token ids a reference tokenizer gives each turn's text (special
tokens parsed):

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
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_family_templates import DIALOGS, llama_ids, render  # noqa: E402


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    template_path, tool, vocab, out = sys.argv[1:]
    template = open(template_path, encoding='utf-8').read()
    lines = []
    for system, user, _, _ in DIALOGS:
        for no_think in (True, False):
            msgs = ([{'role': 'system', 'content': system}] if system else []) + \
                   [{'role': 'user', 'content': user}]
            text = render(template, msgs, '<bos>', '<eos>', no_think, ask_think=True)
            lines.append({'vocab': 'gemma4-vocab', 'template': 'gemma4', 'jinja_of': 'gemma4',
                          'system': system, 'no_think': no_think, 'user': user, 'first': True,
                          'text': text, 'ids': llama_ids(tool, vocab, text)})
    with open(out, 'w') as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False) + '\n')
    print('%d lines' % len(lines), file=sys.stderr)


if __name__ == '__main__':
    main()
