#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Collects real recipe material from public repositories into test fixtures (tests/core/fixtures/):

- bridge_perf_recipes.json: the settings of every Megatron Bridge performance recipe
  (src/megatron/bridge/perf_recipes/**.py): each `*_config()` function's literal assignments
  `cfg.<section>.<field> = <literal>` and `cfg.<section> = SomeConfig(k=<literal>, ...)`, in order,
  written as Hydra overrides (None -> null, True -> true, lists -> [a,b]); non-literal values are left out
  and counted. Each entry names its source path, function and commit.
- megatron_lm_examples.json: the command line of every Megatron-LM examples/ launch script that runs
  pretrain_gpt.py: the bash arrays it passes and its launcher, with simple variables resolved
  (VAR=value, ${VAR:-default}); unresolved ones become a placeholder path.

Read with `ast` / text from the git mirrors; no code is executed.
usage: scripts/extract_real_recipes.py [--bridge DIR] [--mlm DIR] [--out-dir tests/core/fixtures]
"""
import argparse
import ast
import json
import re
import subprocess

BRIDGE_COMMIT = "067f987df03b8355b03192d88d70f1709fedf51a"
MLM_COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def hydra_value(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_./-]*", v) and v.lower() not in (
            "null", "none", "true", "false")
        return v if plain else "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    raise ValueError(v)


def attr_chain(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return None


def bridge_recipes(git_dir):
    files = [f for f in git(git_dir, "ls-tree", "-r", "--name-only", BRIDGE_COMMIT,
                            "src/megatron/bridge/perf_recipes").split()
             if f.endswith(".py") and not f.endswith("__init__.py")]
    out = []
    for path in sorted(files):
        tree = ast.parse(git(git_dir, "show", f"{BRIDGE_COMMIT}:{path}"))
        for fn in tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.endswith("_config")
                    and not fn.name.startswith("_")):
                continue
            overrides, skipped = [], 0
            for stmt in fn.body:
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                    continue
                chain = attr_chain(stmt.targets[0])
                if not chain or chain[0] != "cfg" or len(chain) < 2 or chain[1] == "env_vars":
                    continue
                key = ".".join(chain[1:])
                try:
                    overrides.append(f"{key}={hydra_value(ast.literal_eval(stmt.value))}")
                    continue
                except (ValueError, SyntaxError, TypeError):
                    pass
                ctor = isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) and \
                    stmt.value.func.id.endswith("Config")
                if ctor and not stmt.value.args and stmt.value.keywords:
                    for kw in stmt.value.keywords:
                        try:
                            overrides.append(f"{key}.{kw.arg}={hydra_value(ast.literal_eval(kw.value))}")
                        except (ValueError, SyntaxError, TypeError):
                            skipped += 1
                    continue
                skipped += 1
            if overrides:
                out.append({"path": path, "function": fn.name, "overrides": overrides,
                            "non_literal_assignments_left_out": skipped})
    return out


def bash_words(text):
    words = []
    for m in re.finditer(r'"([^"]*)"|\'([^\']*)\'|(\S+)', text):
        words.append(next(g for g in m.groups() if g is not None))
    return words


def quoted_words(text):
    """Shell words with whether each was double-quoted."""
    out = []
    for m in re.finditer(r'"([^"]*)"|\'([^\']*)\'|(\S+)', text):
        out.append((next(g for g in m.groups() if g is not None), m.group(3) is None))
    return out


def mlm_examples(git_dir):
    paths = [line.split(":", 1)[1] for line in
             git(git_dir, "grep", "-l", "pretrain_gpt.py", MLM_COMMIT, "--", "examples/*.sh").split()]
    out = []
    for path in sorted(paths):
        src = git(git_dir, "show", f"{MLM_COMMIT}:{path}")
        lines = [re.sub(r"\s+#.*$", "", l) for l in src.splitlines() if not l.strip().startswith("#")]
        text = "\n".join(lines).replace("\\\n", " ")
        variables, arrays, appended = {}, {}, set()
        # Arrays in order: NAME=( ... ) sets, NAME+=( ... ) appends (the first branch of an if/else only).
        for m in re.finditer(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\(([^)]*)\)", text, re.M):
            name, plus, body = m.groups()
            if not plus:
                arrays[name] = body
                appended.discard(name)
            elif name not in appended:
                arrays[name] = arrays.get(name, "") + " " + body
                appended.add(name)
        for m in re.finditer(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=([^(\s][^\n]*)$", text, re.M):
            if m.group(1) in variables:
                continue  # the first assignment: later ones are in branches
            v = m.group(2).strip().strip('"')
            d = re.fullmatch(r"\$\{[A-Za-z0-9_]+:-\"?([^}\"]*)\"?\}", v)
            variables[m.group(1)] = d.group(1) if d else v

        def expand(s, depth=0):
            def var(m):
                name = m.group(1) or m.group(3)
                default = m.group(2)
                value = variables.get(name)
                arith = re.fullmatch(r"\$\(\((.*)\)\)", value or "")
                if arith and depth < 5:
                    inner = expand(arith.group(1), depth + 1)
                    if re.fullmatch(r"[0-9*+ ()-]+", inner):
                        return str(eval(inner, {"__builtins__": {}}))  # digits and + - * only
                if value is not None and depth < 5 and "$(" not in value:
                    return expand(value, depth + 1)
                if default is not None:
                    return default.strip('"')
                return "/placeholder/" + name.lower()
            return re.sub(r"\$\{([A-Za-z0-9_]+)(?::-([^}]*))?\}|\$([A-Za-z0-9_]+)", var, s)

        launch = None
        for l in text.splitlines():
            if re.search(r"pretrain_gpt\.py|PRETRAIN_SCRIPT_PATH", l) and re.search(
                    r"(^|\s)(torchrun|python3?)\s", l) and not l.strip().startswith(("echo", "CMD=")):
                launch = l.strip()
                break
        if not launch:
            continue

        def words_of(w, quoted, depth=0):
            m = re.fullmatch(r'\$\{([A-Za-z0-9_]+)\[@\]\}', w)
            if m and depth < 5:
                out_words = []
                for aw, q in quoted_words(arrays.get(m.group(1), "").replace("\\", " ")):
                    for x in words_of(aw, q, depth + 1):
                        # An unquoted ${X[@]} splits each element again on blanks (quotes stay literal).
                        out_words.extend([x] if quoted else x.split())
                return out_words
            return [expand(w)]

        words = []
        for w, q in quoted_words(launch):
            words.extend(words_of(w, q))
        start = next(i for i, w in enumerate(words) if re.fullmatch(r"(torchrun|python3?)", w))
        words = [re.sub(r".*/(pretrain_gpt\.py)$", r"\1", w.rstrip('"')) for w in words[start:]]
        words = [w for w in words if w]
        if any("${" in w or "$(" in w for w in words):
            continue  # arrays built by commands or nested expansions: not read here
        out.append({"path": path, "command": words})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bridge", default="/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo")
    ap.add_argument("--mlm", default="/work/.mirror/NVIDIA+Megatron-LM/repo")
    ap.add_argument("--out-dir", default="tests/core/fixtures")
    opts = ap.parse_args()
    with open(f"{opts.out_dir}/bridge_perf_recipes.json", "w") as f:
        json.dump({"repository": "NVIDIA-NeMo/Megatron-Bridge", "commit": BRIDGE_COMMIT,
                   "extracted_by": "scripts/extract_real_recipes.py",
                   "recipes": bridge_recipes(opts.bridge)}, f, indent=1)
        f.write("\n")
    with open(f"{opts.out_dir}/megatron_lm_examples.json", "w") as f:
        json.dump({"repository": "NVIDIA/Megatron-LM", "commit": MLM_COMMIT,
                   "extracted_by": "scripts/extract_real_recipes.py",
                   "scripts": mlm_examples(opts.mlm)}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
