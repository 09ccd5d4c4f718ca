#!/usr/bin/env python3
"""Checks that libporta's layers use only the layers below them.

src/layers.txt lists the layers, lowest first; folders on one line share a
rank and may not use each other. This script checks
  (a) every #include "..." in src/ names a file of the same layer or of a
      lower rank;
  (b) with --objects DIR (CMake's object folder of porta_objects, e.g.
      build/CMakeFiles/porta_objects.dir/src), every symbol an object file
      uses that another object of libporta defines obeys the same rule;
  (c) every folder of src/ belongs to a listed layer;
  (d) no file outside src/ (tests/ aside: they are white-box) includes a
      header by a path through src/;
  (e) the C++ layer that plugs libporta into PyTorch (python/native/) holds
      no op semantics: of libporta it calls only the plumbing (buffers,
      views, devices, generator state, the aten op table and its calls).
Each violation is printed on one line; the exit status is 1 if there is any.
--self-test checks the checker on a scratch tree.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".c", ".h", ".cpp")
# Folders outside src/ that must use only the public headers of include/.
OUTSIDE_SRC = ("tools", "python/csrc", "python/native", "bench", "fuzz", "examples")
# The PyTorch glue and the libporta calls it may make. porta_cast converts an
# out= result to the out tensor's dtype, PyTorch's rule for resized outputs.
NATIVE_GLUE = "python/native"
LIBPORTA_CALL = re.compile(r"\b(porta_[a-z0-9_]+)\s*\(")
GLUE_CALLS = re.compile(
    r"porta_(buffer_\w+|tensor_(view|buffer|dtype|rank|sizes|strides|offset|retain|release)"
    r"|device_\w+|aten_\w+|generator_\w+|status_\w+|get_fusion|cast|py_\w+|native_init)$")


def read_layers(path):
    """Returns {layer folder: rank} from a layers file."""
    ranks = {}
    with open(path, encoding="utf-8") as f:
        rank = 0
        for line in f:
            names = line.split("#", 1)[0].split()
            if not names:
                continue
            for name in names:
                ranks[name.strip("/")] = rank
            rank += 1
    return ranks


def layer_of(rel_path, ranks):
    """The layer a path under src/ belongs to: the longest listed folder
    that contains it, or None."""
    parts = rel_path.replace(os.sep, "/").split("/")
    for n in range(len(parts), 0, -1):
        name = "/".join(parts[:n])
        if name in ranks:
            return name
    return None


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def resolve(include, including_file, src):
    """The file under src/ an #include "..." names, or None when it names a
    public header, a system header or nothing that exists."""
    local = os.path.normpath(os.path.join(os.path.dirname(including_file), include))
    if os.path.isfile(local):
        return local
    under_src = os.path.join(src, include)
    if os.path.isfile(under_src):
        return under_src
    return None


def use_error(user_layer, used_layer, ranks):
    """Why a file of user_layer may not use one of used_layer, or None."""
    if used_layer is None or used_layer == user_layer:
        return None
    if ranks[used_layer] > ranks[user_layer]:
        return "a layer may use only the layers below it"
    if ranks[used_layer] == ranks[user_layer]:
        return "layers of one rank may not use each other"
    return None


def check_includes(src, ranks, root):
    errors = []
    for path in sources(src):
        rel = os.path.relpath(path, src)
        user = layer_of(rel, ranks)
        if user is None:
            continue  # reported by check_folders
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(m.group(1), path, src)
                if target is None:
                    continue
                target_rel = os.path.relpath(target, src)
                used = layer_of(target_rel, ranks)
                if used is None:
                    continue
                why = use_error(user, used, ranks)
                if why:
                    errors.append(f"{os.path.relpath(path, root)}:{lineno}: includes "
                                  f"{target_rel} (layer {used}) from layer {user}: {why}")
    return errors


def check_folders(src, ranks, root):
    """Every folder of src/ is a layer, inside one, or holds only layers."""
    errors = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel = os.path.relpath(dirpath, src)
        if rel == "." or layer_of(rel, ranks):
            continue
        prefix = rel.replace(os.sep, "/") + "/"
        holds_layers = any(name.startswith(prefix) for name in ranks)
        has_sources = any(name.endswith(SOURCE_SUFFIXES) for name in filenames)
        if has_sources or not holds_layers:
            errors.append(f"{os.path.relpath(dirpath, root)}: folder not listed in "
                          f"src/layers.txt: every folder of src/ belongs to a layer")
    return errors


def check_outside(root):
    errors = []
    for top in OUTSIDE_SRC:
        folder = os.path.join(root, top)
        if not os.path.isdir(folder):
            continue
        for path in sources(folder):
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if m and ("../src" in m.group(1) or m.group(1).startswith("src/")
                              or "/src/" in m.group(1)):
                        errors.append(f"{os.path.relpath(path, root)}:{lineno}: includes "
                                      f"{m.group(1)}: outside src/ only the public "
                                      f"headers of include/ are used")
    return errors


def check_native_glue(root):
    errors = []
    folder = os.path.join(root, NATIVE_GLUE)
    if not os.path.isdir(folder):
        return errors
    for path in sources(folder):
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                code = line.split("//")[0]
                for name in LIBPORTA_CALL.findall(code):
                    if not GLUE_CALLS.match(name):
                        errors.append(f"{os.path.relpath(path, root)}:{lineno}: calls {name}: "
                                      f"{NATIVE_GLUE} is PyTorch glue; ops and their "
                                      f"semantics belong to libporta's aten layer")
    return errors


def symbols(obj):
    """(defined, undefined) global symbols of an object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() or kind in ("u", "v", "w"):
            defined.add(name)
    return defined, undefined


def check_objects(objects, src, ranks, root):
    """Calls between objects: objects/<path under src>.o mirrors src/.
    Objects left in the build by sources since moved or deleted are skipped."""
    objs = {}
    for dirpath, dirnames, filenames in os.walk(objects):
        for name in filenames:
            path = os.path.join(dirpath, name)
            source = os.path.relpath(path, objects)[:-2]
            if name.endswith(".o") and os.path.isfile(os.path.join(src, source)):
                objs[source] = symbols(path)
    if not objs:
        return [f"{objects}: no object files of src/ here: build first (make build)"]
    definer = {}
    for source, (defined, _) in objs.items():
        for sym in defined:
            definer.setdefault(sym, source)
    errors = []
    for source in sorted(objs):
        user = layer_of(source, ranks)
        if user is None:
            continue
        for sym in sorted(objs[source][1]):
            target = definer.get(sym)
            if target is None or target == source:
                continue
            used = layer_of(target, ranks)
            if use_error(user, used, ranks):
                errors.append(f"{os.path.relpath(os.path.join(objects, source), root)}.o: "
                              f"calls {sym} defined in src/{target} (layer {used}) "
                              f"from layer {user}")
    return errors


def check(root, objects=None):
    src = os.path.join(root, "src")
    ranks = read_layers(os.path.join(src, "layers.txt"))
    errors = check_folders(src, ranks, root)
    errors += check_includes(src, ranks, root)
    errors += check_outside(root)
    errors += check_native_glue(root)
    if objects:
        errors += check_objects(objects, src, ranks, root)
    return errors


def compile_objects(root, files):
    """Compiles {path under src: C source} into root/objects as CMake lays
    objects out; None when there is no C compiler."""
    compiler = os.environ.get("CC", "cc")
    objects = os.path.join(root, "objects")
    for rel, text in files.items():
        source = os.path.join(root, "src", rel)
        os.makedirs(os.path.dirname(source), exist_ok=True)
        with open(source, "w", encoding="utf-8") as f:
            f.write(text)
        obj = os.path.join(objects, rel + ".o")
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        try:
            subprocess.run([compiler, "-c", source, "-o", obj], check=True)
        except (OSError, subprocess.CalledProcessError):
            print("self-test: no C compiler, object check not tested", file=sys.stderr)
            return None
    return objects


def self_test():
    """A scratch tree with wrong and right includes and calls: only the
    wrong ones are reported, includes with their file and line."""
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        write("src/layers.txt", "# lowest first\nlow\nleft right\nhigh\n")
        write("src/low/base.h", "int base(void);\n")
        write("src/left/left.h", "int left(void);\n")
        write("src/right/right.h", "int right(void);\n")
        write("src/high/top.h", "int top(void);\n")
        write("src/left/uses.c", '#include "low/base.h"\n#include <stdio.h>\n'
                                 '#include "left.h"\n#include "high/top.h"\n'
                                 '#include "right/right.h"\n')
        write("src/high/fine.c", '#include "low/base.h"\n#include "left/left.h"\n')
        write("src/stray/x.c", "int x;\n")
        write("tools/cli.c", '#include "../src/low/base.h"\n#include "porta.h"\n')
        write("python/native/glue.cpp", "porta_buffer_alloc(d, 4, &b);\n"
                                        "porta_add(a, b, &c); // porta_mul( in a comment\n")
        objects = compile_objects(root, {
            "low/up.c": "int top(void);\nint up(void) { return top(); }\n",
            "high/top.c": "int base(void);\nint top(void) { return base(); }\n",
            "low/base.c": "int base(void) { return 0; }\n",
        })
        errors = check(root, objects)
        expected = [
            "src/stray: folder not listed",
            "src/left/uses.c:4: includes high/top.h (layer high) from layer left",
            "src/left/uses.c:5: includes right/right.h (layer right) from layer left",
            "tools/cli.c:1: includes ../src/low/base.h",
            "python/native/glue.cpp:2: calls porta_add",
        ]
        if objects:  # low calls up into high; high's call down is fine
            expected.append("objects/low/up.c.o: calls top defined in src/high/top.c")
        missing = [e for e in expected if not any(x.startswith(e) for x in errors)]
        extra = [x for x in errors if not any(x.startswith(e) for e in expected)]
        for line in missing:
            print(f"self-test: not reported: {line}", file=sys.stderr)
        for line in extra:
            print(f"self-test: reported wrongly: {line}", file=sys.stderr)
        if missing or extra:
            return 1
        print("check_layers self-test: ok")
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the repository (default: this script's)")
    parser.add_argument("--objects", help="object folder of porta_objects, mirroring src/")
    parser.add_argument("--self-test", action="store_true", help="check the checker")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    errors = check(os.path.normpath(args.root), args.objects)
    for line in errors:
        print(line)
    if errors:
        print(f"check_layers: {len(errors)} violation(s) of src/layers.txt", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
