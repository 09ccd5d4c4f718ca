#!/usr/bin/env python3
"""The public boundary of libporta, checked on the built libraries.

Only what include/ declares with PORTA_API carries the porta_ prefix:
- every global symbol libporta.a defines that starts with porta_ is declared
  with PORTA_API in include/*.h (internal names carry their layer's prefix);
- libporta.so exports exactly the PORTA_API functions, each of them defined.

Usage: check_symbols.py BUILD_DIR   (the CMake build folder with libporta.a/.so)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_DECL = re.compile(r'PORTA_API\b[^;(]*?\b(porta_\w+)\s*\(', re.S)


def declared_api():
    names = set()
    include = os.path.join(ROOT, 'include')
    for name in sorted(os.listdir(include)):
        if name.endswith('.h'):
            with open(os.path.join(include, name), encoding='utf-8') as f:
                names |= set(API_DECL.findall(f.read()))
    return names


def defined_globals(path, dynamic=False):
    args = ['nm', '--defined-only', '-g'] + (['-D'] if dynamic else []) + [path]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBRCVWiu':
            names.add(parts[2])
    return names


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    build = argv[1]
    api = declared_api()
    if not api:
        print('check_symbols: no PORTA_API declarations found in include/', file=sys.stderr)
        return 1
    problems = []
    static = defined_globals(os.path.join(build, 'libporta.a'))
    for name in sorted(n for n in static if n.startswith('porta_') and n not in api):
        problems.append(f'libporta.a: {name} is internal but carries the public prefix '
                        f'porta_ (give it its layer\'s prefix, or declare it PORTA_API in include/)')
    exported = defined_globals(os.path.join(build, 'libporta.so'), dynamic=True)
    exported = {n for n in exported if not n.startswith(('_init', '_fini', '_edata', '_end', '__bss'))}
    for name in sorted(exported - api):
        problems.append(f'libporta.so: exports {name}, which include/ does not declare with PORTA_API')
    for name in sorted(api - exported):
        problems.append(f'libporta.so: {name} is declared with PORTA_API in include/ but not exported')
    for p in problems:
        print(p)
    print(f'check_symbols: {len(api)} public functions, {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
