#!/usr/bin/env python3
"""make_qwen35_template.py — writes golden/template_qwen35.jsonl: Qwen 3.5's chat template
rendered by Jinja for the dialogs of make_family_templates.py, each first turn with
thinking on (the generation prompt opens the thinking span: "<think>\\n") and off
(enable_thinking false: an empty span), with the token ids a reference tokenizer gives
each turn's text (special tokens parsed):

    make_qwen35_template.py TEMPLATE.jinja LLAMA_TOKENIZE QWEN3_VOCAB.gguf OUT.jsonl

TEMPLATE.jinja is llama.cpp 0.4.0's models/templates/Qwen3.5-4B.jinja (Qwen/Qwen3.5-4B's
chat template, from node-llama-cpp@3.21.1's llama.cpp source; tests/data keeps a copy,
qwen35-chat-template.jinja), rendered by Debian's python3-jinja2 set up as Hugging Face's
apply_chat_template sets it up (a sandbox, trim_blocks and lstrip_blocks). Ids: llama.cpp
0.4.0's llama-tokenize (the anchors' build) on tests/data/qwen3-vocab.gguf.gz decompressed
(Qwen3's vocabulary, whose <|im_start|>, <|im_end|>, <think> and </think> Qwen 3.5's
template writes; --no-bos). Only first turns: the template drops an earlier reply's
thinking from the history it renders again, which llmchat keeps as the model wrote it
(docs/formats.md). A line: {"vocab", "template", "jinja_of", "system", "user", "first",
"no_think", "text", "ids"}, as template_families.jsonl's. Python 3 with jinja2.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_family_templates import DIALOGS, llama_ids, render, write_jsonl  # noqa: E402


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    template_path, tool, vocab, out = sys.argv[1:]
    template = open(template_path, encoding='utf-8').read()
    lines = []
    for system, user, _, _ in DIALOGS:
        for no_think in (False, True):
            msgs = ([{'role': 'system', 'content': system}] if system else []) + \
                   [{'role': 'user', 'content': user}]
            text = render(template, msgs, '', '', no_think)   # the template writes no BOS or EOS
            lines.append({'vocab': 'qwen3-vocab', 'template': 'qwen35', 'jinja_of': 'qwen35',
                          'system': system, 'no_think': no_think, 'user': user, 'first': True,
                          'text': text, 'ids': llama_ids(tool, vocab, text)})
    write_jsonl(out, lines)


if __name__ == '__main__':
    main()
