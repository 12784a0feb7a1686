#!/usr/bin/env python3
"""make_llama31_template.py — writes golden/template_llama31.jsonl: Llama 3.1's and Llama
3.2's chat templates rendered by Jinja for the dialogs of make_family_templates.py, each
first turn and the second turn after it, with the token ids a reference tokenizer gives
each turn's text (special tokens parsed):

    make_llama31_template.py LLAMA_TOKENIZE LLAMA3_VOCAB.gguf OUT.jsonl

The templates are llama.cpp 0.4.0's models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja
(Llama 3.3's, meta-llama-Llama-3.3-70B-Instruct.jinja, is the same file) and
meta-llama-Llama-3.2-3B-Instruct.jinja, from node-llama-cpp@3.21.1's llama.cpp source;
tests/data keeps copies, llama31-chat-template.jinja and llama32-chat-template.jinja.
They are rendered by Debian's python3-jinja2 as Hugging Face's apply_chat_template sets it
up, bos_token "<|begin_of_text|>"; Llama 3.2's strftime_now gives 07 Dec 2026 (the test
sets that date). Ids: llama.cpp 0.4.0's llama-tokenize (the anchors' build) on
tests/data/llama3-vocab.gguf.gz decompressed (--no-bos: the text holds the BOS). A line:
{"vocab", "template", "jinja_of", "jinja_file", "date", "system", "user", "first",
"no_think", "text", "ids"}, and "before" and "jinja" for a second turn, as
template_families.jsonl's. Python 3 with jinja2.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_family_templates import DIALOGS, llama_ids, render, second_turn, write_jsonl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATE = '2026-12-07'


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tool, vocab, out = sys.argv[1:]
    lines = []
    for name, path in (('llama3.1', 'llama31-chat-template.jinja'),
                       ('llama3.2', 'llama32-chat-template.jinja')):
        template = open(os.path.join(HERE, path), encoding='utf-8').read()
        extra = {'strftime_now': lambda fmt: '07 Dec 2026'}
        for system, user1, reply, user2 in DIALOGS:
            sysmsg = [{'role': 'system', 'content': system}] if system else []
            msgs = sysmsg + [{'role': 'user', 'content': user1}]
            one = render(template, msgs, '<|begin_of_text|>', '<|eot_id|>', False, extra=extra)
            whole = render(template, msgs + [{'role': 'assistant', 'content': reply},
                                             {'role': 'user', 'content': user2}],
                           '<|begin_of_text|>', '<|eot_id|>', False, extra=extra)
            row = {'vocab': 'llama3-vocab', 'template': 'llama3.1', 'jinja_of': name,
                   'jinja_file': path, 'date': DATE, 'system': system, 'no_think': False}
            lines.append(dict(row, user=user1, first=True, text=one,
                              ids=llama_ids(tool, vocab, one)))
            before = one + reply + '<|eot_id|>'
            two, two_ids = second_turn(lambda s: llama_ids(tool, vocab, s), before, whole, name)
            lines.append(dict(row, user=user2, first=False, text=two, ids=two_ids,
                              before=before, jinja=whole))
    write_jsonl(out, lines)


if __name__ == '__main__':
    main()
