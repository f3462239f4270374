#!/usr/bin/env python3
"""scripts/check_layout.py — holds src/ to the architecture README.md draws.

Each part of src/ (a top folder; src/server/ is four layers, each a folder, and the file
that wires them) may include only the parts below it, as listed in ALLOWED. Fails, naming
the file and the line, on an include of a part above (an upward include), on an include
cycle between parts, and on any include cycle between files. A part's own subfolders (the
engine's ops/, formats' hf/ and gguf/, the API's handlers/) are rooms of that part: they use
its common headers (the thread pool, the model description, the API's types) and it uses
them, with no cycle between their files. Run by ctest (layout_check), so by the README's
test command.

    python3 scripts/check_layout.py            # exit 0: the tree keeps its layers
    python3 scripts/check_layout.py --graph    # the parts and what each includes
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, 'src')

# part -> the parts it may include (besides itself). The diagram of README.md's
# "How the code is laid out", and the order of src/CMakeLists.txt.
ALLOWED = {
    'util': set(),
    'core': {'util'},
    'tokenizer': {'util'},
    'model': {'util'},
    'formats': {'model', 'tokenizer', 'util'},
    'analysis': {'model', 'tokenizer', 'core', 'util'},
    'train': {'analysis', 'formats', 'model', 'tokenizer', 'core', 'util'},
    'course': {'analysis', 'formats', 'model', 'tokenizer', 'core', 'util'},
    'research': {'analysis', 'formats', 'model', 'tokenizer', 'core', 'util'},
    'server/http': {'util'},
    'server/store': {'util'},
    'server/model_service': {'research', 'analysis', 'train', 'formats', 'model', 'tokenizer', 'core', 'util'},
    'server/api': {'server/http', 'server/store', 'server/model_service', 'course', 'research', 'analysis', 'train',
                   'formats', 'model', 'tokenizer', 'core', 'util'},
    'server': {'server/api', 'server/http', 'server/store', 'server/model_service', 'course', 'research', 'analysis',
               'train', 'formats', 'model', 'tokenizer', 'core', 'util'},
    'cli': {'server', 'server/api', 'server/http', 'server/store', 'server/model_service', 'course', 'research', 'analysis',
            'train', 'formats', 'model', 'tokenizer', 'core', 'util'},
}

# The CMake library of each part: its link line may name only the libraries of ALLOWED parts.
LIBRARY = {'headlab_util': 'util', 'headlab_core': 'core', 'headlab_tokenizer': 'tokenizer',
           'headlab_model': 'model', 'headlab_formats': 'formats', 'headlab_analysis': 'analysis',
           'headlab_train': 'train', 'headlab_course': 'course', 'headlab_research': 'research', 'headlab_http': 'server/http',
           'headlab_store': 'server/store', 'headlab_model_service': 'server/model_service',
           'headlab_api': 'server/api', 'headlab_server': 'server', 'headlab_cli': 'cli'}
LINK = re.compile(r'target_link_libraries\(\s*(headlab_\w+)([^)]*)\)', re.S)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def part_of(rel):
    """'server/api/routes.h' -> 'server/api'; 'server/server.h' -> 'server'; 'model/ops/x.h' -> 'model'."""
    parts = rel.split('/')
    if parts[0] == 'server' and len(parts) > 2:
        return 'server/' + parts[1]
    return parts[0]


def sources():
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith(('.h', '.cpp', '.inc')):
                yield os.path.relpath(os.path.join(dirpath, f), SRC)


def cycles(graph):
    """The strongly connected components of more than one node (or a node on itself): Tarjan."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    problems = []
    file_graph = defaultdict(set)
    folder_graph = defaultdict(set)
    part_graph = defaultdict(set)
    for rel in sources():
        me = part_of(rel)
        if me not in ALLOWED:
            problems.append(f'src/{rel}: part "{me}" is not in scripts/check_layout.py\'s ALLOWED; add it with the parts it may include')
            continue
        with open(os.path.join(SRC, rel), encoding='utf-8') as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if not os.path.exists(os.path.join(SRC, target)):
                    continue  # a generated file or a library's header
                other = part_of(target)
                if target != rel:
                    file_graph[rel].add(target)
                if other != me:
                    folder_graph[me].add(other)
                    part_graph[me].add(other)
                    if other not in ALLOWED[me]:
                        problems.append(f'src/{rel}:{n}: includes "{target}": {me}/ may include only '
                                        f'{", ".join(sorted(ALLOWED[me])) or "nothing else"} (an upward include)')
    for dirpath, _, files in os.walk(SRC):
        if 'CMakeLists.txt' not in files:
            continue
        cmake = os.path.join(dirpath, 'CMakeLists.txt')
        text = re.sub(r'#[^\n]*', '', open(cmake, encoding='utf-8').read())
        for m in LINK.finditer(text):
            lib, rest = m.group(1), m.group(2)
            me = LIBRARY.get(lib)
            if me is None:
                continue
            for other_lib in re.findall(r'\bheadlab_\w+', rest):
                other = LIBRARY.get(other_lib)
                if other and other != me and other not in ALLOWED[me]:
                    problems.append(f'{os.path.relpath(cmake, ROOT)}: {lib} links {other_lib}: {me}/ may depend only on '
                                    f'{", ".join(sorted(ALLOWED[me])) or "nothing else"}')
    for comp in cycles(file_graph):
        problems.append('include cycle between files: ' + ' -> '.join('src/' + c for c in comp))
    for comp in cycles(folder_graph):
        problems.append('include cycle between parts: ' + ' <-> '.join('src/' + c + '/' for c in comp))
    if '--graph' in sys.argv:
        for p in sorted(part_graph):
            print(f'{p:22} includes {", ".join(sorted(part_graph[p]))}')
    if problems:
        print(f'check_layout: {len(problems)} problem(s); README.md "How the code is laid out" draws the layers:')
        for p in problems:
            print('  ' + p)
        return 1
    print(f'check_layout: {sum(1 for _ in sources())} files in {len(ALLOWED)} parts; no upward include, no cycle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
