#!/usr/bin/env python3
"""family_rows.py — the rows of llmchat's family table (src/formats/model_family.c), read from
the C source: what each family's GGUF files hold (tensors, keys), for the writers of the tiny
models (make_arch_gguf.py) to write what the loader reads, from the one description.

    family_rows.py [NAME]     prints the rows (or one row) as "name field=value ..."

Each row is a dict of the designated initializer's fields: booleans, numbers, strings and C
identifiers (as strings); a field the row leaves out is False (booleans and numbers alike:
C's zero). The mixture-of-experts fields: experts (an identifier, read through experts()),
expert_norm_weights, expert_ff_key, qk_norm_whole, expert_biases (booleans); gpt-oss's
others: attn_out_bias, attn_sinks (booleans) and ffn_norm_name (a string: the norm before
the feed-forward, where it is not ffn_norm). Fails (ValueError) when the table cannot be found or read, or holds no llama row.
Python 3; no numpy.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, '..', '..', 'src', 'formats', 'model_family.c')


class Row(dict):
    """A row: its fields, and False for the fields it leaves out."""

    def __missing__(self, key):
        return False


def _value(text):
    text = text.strip()
    if text.startswith('"'):
        return text[1:-1]
    if text in ('true', 'false'):
        return text == 'true'
    number = re.fullmatch(r'([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)[fF]?', text)
    if number:
        x = float(number.group(1))
        return int(x) if re.fullmatch(r'[-+]?[0-9]+', number.group(1)) else x
    if re.fullmatch(r'[A-Za-z_]\w*', text):
        return text
    raise ValueError('%s: cannot read the value %r' % (TABLE, text))


def read(path=TABLE):
    """The family rows of model_family.c: {name: Row}, in the table's order."""
    text = re.sub(r'/\*.*?\*/', ' ', open(path, encoding='utf-8').read(), flags=re.S)
    start = text.find('families[] = {')
    end = text.find('\n};', start)
    if start < 0 or end < 0:
        raise ValueError('%s: no table "families[] = { ... };"' % path)
    body = re.sub(r'^#.*$', '', text[start + len('families[] = {'):end], flags=re.M)
    rows = {}
    for inside in re.findall(r'\{([^{}]*)\}', body):
        row = Row((f, _value(v)) for f, v in re.findall(r'\.(\w+)\s*=\s*("[^"]*"|[^,]+)', inside))
        if 'name' not in row:
            raise ValueError('%s: a row without a name: {%s}' % (path, inside.strip()))
        rows[row['name']] = row
    if 'llama' not in rows:
        raise ValueError('%s: no llama row among %s' % (path, ', '.join(rows) or 'none'))
    return rows


EXPERTS = {False: 'none', 'FAMILY_EXPERTS_NONE': 'none', 'FAMILY_EXPERTS_OPTIONAL': 'optional',
           'FAMILY_EXPERTS_REQUIRED': 'required'}


def experts(row):
    """Whether the family's files hold a mixture-of-experts feed-forward (model_family.h's
    family_experts): 'none', 'optional' (when {arch}.expert_count > 0: llama's Mixtral) or
    'required'. Fails on a value it does not know."""
    if row['experts'] not in EXPERTS:
        raise ValueError('%s: family %s: unknown .experts = %r' % (TABLE, row['name'], row['experts']))
    return EXPERTS[row['experts']]


def has_windows(row):
    """Whether some layers of the family attend over a sliding window (model_family.h)."""
    return row['swa_period'] > 0 and row['swa_local'] > 0


def main(argv):
    rows = read()
    for name, row in rows.items():
        if not argv or name in argv:
            print(name, ' '.join('%s=%s' % kv for kv in row.items() if kv[0] != 'name'))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
