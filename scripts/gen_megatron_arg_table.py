#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes backend/core/megatron_arg_table.cpp: every command-line flag of Megatron-LM's
megatron/training/arguments.py at each rules profile's commit, as data (flag, dest, action, nargs,
type, choices, default), and the dataclass fields of TransformerConfig / ModelParallelConfig with the
kinds of value their annotations allow.

The facts are read with `ast` from the Megatron-LM git mirror (nothing is imported or executed):
- every `*.add_argument('--flag', ...)` call in arguments.py (and megatron/post_training/arguments.py,
  whose ModelOpt flags pretrain_gpt.py adds when ModelOpt is installed), with its literal keyword arguments;
- every `ArgumentGroupFactory(Cls, exclude=[...])` group, expanded as megatron/training/argument_utils.py
  expands it (one flag per dataclass field: bool -> store_true, or store_false spelled --no-X/--disable-X
  when the default is True; Optional[X] -> X; list[X] -> nargs '+'; Literal -> choices; Enum -> the member
  names; a field's metadata["argparse_meta"] overrides all of it).
No help text and no code is copied.

usage: scripts/gen_megatron_arg_table.py [--mirror DIR] [--out FILE]
"""
import argparse
import ast
import subprocess
import sys

PROFILES = [
    ("BridgePin", "2a75ac12c54ba6a42b34024756820bf819a2e25f"),
    ("Guide", "24bad8e677d22625d86ef2a54c9506b6e4992c93"),
    ("Main", "d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
    ("Dev", "d48bd6be0a85cc0d6d3cc71e8750cf357cc6bdb1"),
]
# The profile table's names (backend/core/profiles.cpp) of the profiles above.
PROFILE_NAMES = {"BridgePin": "bridge-pin", "Guide": "guide", "Main": "main", "Dev": "dev"}


class CombinedRepo:
    """Megatron Bridge's sources (src/megatron/bridge/...) and, for megatron.core / megatron.training,
    the Megatron-LM commit that Bridge pins."""

    def __init__(self, bridge, mlm):
        self.bridge = bridge
        self.mlm = mlm
        self.commit = bridge.commit

    def source(self, path):
        return self.bridge.source(path) if path.startswith("src/") else self.mlm.source(path)

    def module_path(self, module):
        if module.startswith("megatron.bridge"):
            base = "src/" + module.replace(".", "/")
            for p in (base + ".py", base + "/__init__.py"):
                if self.bridge.source(p) is not None:
                    return p
            return None
        return self.mlm.module_path(module)


class Repo:
    def __init__(self, git_dir, commit):
        self.git_dir = git_dir
        self.commit = commit
        self.cache = {}

    def source(self, path):
        if path not in self.cache:
            r = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.commit}:{path}"],
                               capture_output=True, text=True)
            self.cache[path] = ast.parse(r.stdout) if r.returncode == 0 else None
        return self.cache[path]

    def module_path(self, module):
        base = module.replace(".", "/")
        for p in (base + ".py", base + "/__init__.py"):
            if self.source(p) is not None:
                return p
        return None


def resolve_relative(path, node):
    if not node.level:
        return node.module
    parts = path.split("/")[:-1]
    if parts and parts[0] == "src":
        parts = parts[1:]
    for _ in range(node.level - 1):
        parts = parts[:-1]
    mod = ".".join(parts)
    return mod + ("." + node.module if node.module else "")


def find_class(repo, path, name, depth=0):
    """The ClassDef `name` as seen from module file `path` (following imports), with its file."""
    tree = repo.source(path)
    if tree is None or depth > 8:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, path
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    mod = resolve_relative(path, node)
                    target = repo.module_path(mod) if mod else None
                    if target:
                        found = find_class(repo, target, alias.name, depth + 1)
                        if found:
                            return found
                    # from package import submodule? not a class
    return None


def literal(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def unparse(node):
    return ast.unparse(node) if node is not None else ""


def enum_members(cls):
    out = []
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name) and not t.id.startswith("_"):
                    out.append(t.id)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            out.append(stmt.target.id)
    return out


def is_enum(cls):
    return any(unparse(b).split(".")[-1] in ("Enum", "IntEnum", "StrEnum", "Flag") for b in cls.bases)


class Annotation:
    """What ArgumentGroupFactory._extract_type makes of an annotation, plus the kinds of value it allows."""

    def __init__(self, repo, path):
        self.repo = repo
        self.path = path

    def kinds(self, node):
        """Set of value kinds the annotation allows: int float str bool none list enum:<names> any."""
        if node is None:
            return {"any"}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self.kinds(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return {"any"}
        if isinstance(node, ast.Constant) and node.value is None:
            return {"none"}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.kinds(node.left) | self.kinds(node.right)
        if isinstance(node, ast.Name) or isinstance(node, ast.Attribute):
            n = unparse(node).split(".")[-1]
            if n in ("int", "float", "str", "bool"):
                return {n}
            if n in ("list", "List", "tuple", "Tuple"):
                return {"list"}
            if n in ("dict", "Dict"):
                return {"dict"}
            if n == "None" or n == "NoneType":
                return {"none"}
            found = find_class(self.repo, self.path, n)
            if found and is_enum(found[0]):
                return {"enum:" + "|".join(enum_members(found[0]))}
            return {"any"}
        if isinstance(node, ast.Subscript):
            head = unparse(node.value).split(".")[-1]
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return self.kinds(args[0]) | {"none"}
            if head == "Union":
                out = set()
                for a in args:
                    out |= self.kinds(a)
                return out
            if head in ("List", "list", "Tuple", "tuple", "Sequence"):
                return {"list"}
            if head in ("Dict", "dict"):
                return {"dict"}
            if head == "Literal":
                vals = [literal(a) for a in args]
                out = set()
                strs = [v for v in vals if isinstance(v, str)]
                if strs:
                    out.add("literal:" + "|".join(strs))
                if any(v is None for v in vals):
                    out.add("none")
                for v in vals:
                    if isinstance(v, bool):
                        out.add("bool")
                    elif isinstance(v, int):
                        out.add("int")
                return out
            if head == "Callable":
                return {"callable"}
            return {"any"}
        return {"any"}

    def argparse(self, node):
        """(type, nargs, choices) as _extract_type gives them; None when it would raise."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            if isinstance(node.right, ast.Constant) and node.right.value is None:
                return self.argparse(node.left)
            return None
        if isinstance(node, (ast.Name, ast.Attribute)):
            n = unparse(node).split(".")[-1]
            found = find_class(self.repo, self.path, n)
            if found and is_enum(found[0]):
                return ("enum", "", enum_members(found[0]))
            return (n, "", None)
        if isinstance(node, ast.Subscript):
            head = unparse(node.value).split(".")[-1]
            args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return self.argparse(args[0])
            if head == "Union":
                if len(args) == 2 and unparse(args[1]) == "None":
                    return self.argparse(args[0])
                return None
            if head in ("List", "list"):
                inner = self.argparse(args[0]) if len(args) == 1 else None
                if inner is None:
                    return None
                return (inner[0], "+", inner[2])
            if head == "Literal":
                vals = [literal(a) for a in args]
                return (type(vals[0]).__name__, "", [str(v) for v in vals])
        return None


def dataclass_fields(repo, cls, path, depth=0):
    """Ordered dataclass fields of cls (bases first): name -> (annotation node, default node, meta, init, path)."""
    fields = {}
    for base in cls.bases:
        found = find_class(repo, path, unparse(base).split(".")[-1])
        if found and depth < 8:
            fields.update(dataclass_fields(repo, found[0], found[1], depth + 1))
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if unparse(stmt.annotation).startswith(("ClassVar", "typing.ClassVar", "InitVar")):
            continue
        default, meta, init = stmt.value, None, True
        if isinstance(stmt.value, ast.Call) and unparse(stmt.value.func).split(".")[-1] == "field":
            default = None
            for kw in stmt.value.keywords:
                if kw.arg == "default":
                    default = kw.value
                elif kw.arg == "default_factory":
                    default = ast.Call(func=kw.value, args=[], keywords=[])
                elif kw.arg == "init":
                    init = literal(kw.value) is not False
                elif kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                    for k, v in zip(kw.value.keys, kw.value.values):
                        if literal(k) == "argparse_meta" and isinstance(v, ast.Dict):
                            meta = {literal(mk): mv for mk, mv in zip(v.keys, v.values)}
        fields[stmt.target.id] = (stmt.annotation, default, meta, init, path)
    return fields


def flag_name(attr, prefix=None):
    return "--" + ((prefix + "_" + attr) if prefix else attr).replace("_", "-")


def default_text(node):
    if node is None:
        return ""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        f = unparse(node.func)
        if f in ("list", "dict", "tuple"):
            return {"list": "[]", "dict": "{}", "tuple": "()"}[f]
        if isinstance(node.func, ast.Lambda):
            return unparse(node.func.body)
    return unparse(node)


def rows_for_factory(repo, args_path, cls_name, exclude):
    found = find_class(repo, args_path, cls_name)
    if not found:
        print(f"warning: {repo.commit[:8]}: class {cls_name} not found", file=sys.stderr)
        return []
    cls, path = found
    rows = []
    for name, (ann, default, meta, init, fpath) in dataclass_fields(repo, cls, path).items():
        if name in exclude or not init:
            continue
        a = Annotation(repo, fpath)
        row = {"flags": [flag_name(name)], "dest": name, "action": "store", "nargs": "", "type": "",
               "choices": None, "default": default_text(default), "source": cls_name}
        t = a.argparse(ann)
        if t is not None:
            row["type"], row["nargs"], row["choices"] = t
            if row["type"] == "bool" and not row["nargs"]:
                dv = literal(default) if default is not None else None
                row["action"] = "store_true" if dv is False else "store_false"
                row["type"] = ""
                row["nargs"] = "0"
                if row["action"] == "store_false":
                    row["flags"] = [flag_name(name, "no"), flag_name(name, "disable")]
        elif meta is None:
            print(f"warning: {repo.commit[:8]}: {cls_name}.{name}: type not inferable", file=sys.stderr)
        if meta:
            for k, v in meta.items():
                if k == "arg_names":
                    row["flags"] = literal(v) or row["flags"]
                elif k in ("nargs", "action", "dest"):
                    lv = literal(v)
                    row[k] = str(lv) if lv is not None else unparse(v)
                elif k == "type":
                    row["type"] = unparse(v).split(".")[-1]
                elif k == "choices":
                    lv = literal(v)
                    row["choices"] = [str(c) for c in lv] if isinstance(lv, (list, tuple)) else None
                elif k == "default":
                    row["default"] = unparse(v)
        if row["action"] in ("store_true", "store_false") and row["type"] == "bool":
            row["type"] = ""
        rows.append(row)
    return rows


def resolve_list(node, scope):
    if isinstance(node, ast.Name) and node.id in scope:
        node = scope[node.id]
    v = literal(node)
    return list(v) if isinstance(v, (list, tuple, set)) else []


def choices_of(repo, args_path, node, scope):
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in scope:
        node = scope[node.id]
    v = literal(node)
    if isinstance(v, (list, tuple, set)):
        return [str(c) for c in v]
    # list(EnumClass) / [e.name for e in EnumClass] / EnumClass
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    for n in names:
        found = find_class(repo, args_path, n)
        if found and is_enum(found[0]):
            return enum_members(found[0])
    return ["?"]


def rows_for_arguments(repo):
    rows = []
    # pretrain_gpt.py adds megatron/post_training/arguments.py's add_modelopt_args when NVIDIA ModelOpt
    # is installed (extra_args_provider): those flags are part of its command line too.
    for args_path in ("megatron/training/arguments.py", "megatron/post_training/arguments.py"):
        if repo.source(args_path) is not None:
            rows.extend(rows_in_file(repo, args_path))
    return rows


def rows_in_file(repo, args_path):
    tree = repo.source(args_path)
    rows = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        scope = {}
        for stmt in ast.walk(fn):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                scope[stmt.targets[0].id] = stmt.value
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            fname = unparse(call.func)
            if fname.endswith(".add_argument"):
                flags = [literal(a) for a in call.args]
                flags = [f for f in flags if isinstance(f, str) and f.startswith("-")]
                if not flags:
                    continue
                kw = {k.arg: k.value for k in call.keywords if k.arg}
                dest = literal(kw.get("dest")) if "dest" in kw else None
                if dest is None:
                    long = [f for f in flags if f.startswith("--")]
                    dest = (long[0] if long else flags[0]).lstrip("-").replace("-", "_")
                action = literal(kw.get("action")) if "action" in kw else "store"
                if action is None:
                    action = unparse(kw["action"]).split(".")[-1]
                nargs = literal(kw.get("nargs")) if "nargs" in kw else ""
                if action in ("store_true", "store_false", "store_const", "count", "help", "version"):
                    nargs = "0"
                rows.append({
                    "flags": flags, "dest": dest, "action": action, "nargs": str(nargs) if nargs is not None else "",
                    "type": unparse(kw["type"]).split(".")[-1] if "type" in kw else "",
                    "choices": choices_of(repo, args_path, kw.get("choices"), scope) if "choices" in kw else None,
                    "default": unparse(kw["default"]) if "default" in kw else "",
                    "source": fn.name})
            elif fname.split(".")[-1] == "ArgumentGroupFactory" or (
                    isinstance(call.func, ast.Attribute) and call.func.attr == "build_group"
                    and isinstance(call.func.value, ast.Call)
                    and unparse(call.func.value.func) == "ArgumentGroupFactory"):
                if fname.split(".")[-1] != "ArgumentGroupFactory":
                    continue  # the inner call is visited on its own
                if not call.args:
                    continue
                exclude = []
                for k in call.keywords:
                    if k.arg == "exclude":
                        exclude = resolve_list(k.value, scope)
                if len(call.args) > 1:
                    exclude = resolve_list(call.args[1], scope)
                rows.extend(rows_for_factory(repo, args_path, unparse(call.args[0]), set(exclude)))
    return rows


def config_fields(repo):
    """TransformerConfig's fields (ModelParallelConfig's first): name -> value kinds."""
    found = find_class(repo, "megatron/core/transformer/transformer_config.py", "TransformerConfig")
    out = []
    for name, (ann, default, meta, init, fpath) in dataclass_fields(repo, found[0], found[1]).items():
        kinds = sorted(Annotation(repo, fpath).kinds(ann))
        out.append((name, ",".join(kinds), default_text(default)))
    found = find_class(repo, "megatron/core/transformer/transformer_config.py", "MLATransformerConfig")
    if found:
        for name, (ann, default, meta, init, fpath) in dataclass_fields(repo, found[0], found[1]).items():
            if name not in {n for n, _, _ in out}:
                out.append((name, ",".join(sorted(Annotation(repo, fpath).kinds(ann))), default_text(default)))
    return out


def cstr(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror/NVIDIA+Megatron-LM/repo")
    ap.add_argument("--bridge-mirror", default="/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo")
    ap.add_argument("--bridge-commit", default="067f987df03b8355b03192d88d70f1709fedf51a")
    ap.add_argument("--out", default="backend/core/megatron_arg_table.cpp")
    opts = ap.parse_args()
    out = []
    out.append("// SPDX-License-Identifier: Apache-2.0")
    out.append("// GENERATED by scripts/gen_megatron_arg_table.py -- do not edit by hand.")
    out.append("// Facts read (with Python's ast) from NVIDIA/Megatron-LM megatron/training/arguments.py, the")
    out.append("// dataclasses its ArgumentGroupFactory groups expand, and megatron/core/transformer/transformer_config.py,")
    out.append("// at each profile's commit (named below). Columns: flag, dest, action, nargs, type, choices ('|'),")
    out.append("// default (Python source text).")
    out.append('#include "core/megatron_arg_table.h"')
    out.append("")
    out.append("#include <cstring>")
    out.append("#include <iterator>")
    out.append("")
    out.append("namespace rs {")
    out.append("")
    out.append("namespace {")
    for prof, commit in PROFILES:
        repo = Repo(opts.mirror, commit)
        rows = rows_for_arguments(repo)
        seen = set()
        out.append(f"// {prof}: megatron/training/arguments.py at {commit}")
        out.append(f"const MegatronArg k{prof}Args[] = {{")
        n = 0
        for r in rows:
            for f in r["flags"]:
                if f in seen:
                    continue
                seen.add(f)
                ch = "|".join(r["choices"]) if r["choices"] is not None else ""
                out.append(f"    {{ {cstr(f)}, {cstr(r['dest'])}, {cstr(r['action'])}, {cstr(r['nargs'])}, "
                           f"{cstr(r['type'])}, {cstr(ch)}, {cstr(r['default'])}, {'true' if r['choices'] is not None else 'false'} }},")
                n += 1
        out.append("};")
        out.append(f"// {prof}: TransformerConfig (with ModelParallelConfig, MLATransformerConfig) at {commit}")
        out.append(f"const ConfigField k{prof}Fields[] = {{")
        for name, kinds, default in config_fields(repo):
            out.append(f"    {{ {cstr(name)}, {cstr(kinds)}, {cstr(default)} }},")
        out.append("};")
        print(f"{prof} {commit[:8]}: {n} flags", file=sys.stderr)
    bridge = Repo(opts.bridge_mirror, opts.bridge_commit)
    gpt = "src/megatron/bridge/models/gpt_provider.py"
    cls = find_class(bridge, gpt, "GPTModelProvider")[0]
    out.append(f"// NVIDIA-NeMo/Megatron-Bridge {gpt} at {opts.bridge_commit}: GPTModelProvider's own fields,")
    out.append("// then those of every other *Provider / *Config class under src/megatron/bridge/models/")
    out.append("const ConfigField kBridgeProviderFields[] = {")
    provider_stmts = [(stmt, gpt) for stmt in cls.body]
    model_files = [f for f in subprocess.run(["git", "--git-dir", opts.bridge_mirror, "ls-tree", "-r", "--name-only",
                                              opts.bridge_commit, "src/megatron/bridge/models"],
                                             capture_output=True, text=True).stdout.split() if f.endswith(".py")]
    for f in sorted(model_files):
        tree = bridge.source(f)
        for node in (tree.body if tree else []):
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Provider", "Config")) and node.name != "GPTModelProvider":
                provider_stmts.extend((stmt, f) for stmt in node.body)
    seen_provider = set()
    for stmt, fpath in provider_stmts:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id not in seen_provider:
            seen_provider.add(stmt.target.id)
            kinds = ",".join(sorted(Annotation(bridge, fpath).kinds(stmt.annotation)))
            d = stmt.value
            if isinstance(d, ast.Call) and unparse(d.func).split(".")[-1] == "field":
                d = next((k.value for k in d.keywords if k.arg == "default"), None)
            out.append(f"    {{ {cstr(stmt.target.id)}, {cstr(kinds)}, {cstr(default_text(d))} }},")
    out.append("};")
    cfg = "src/megatron/bridge/training/config.py"
    cls = find_class(bridge, cfg, "ConfigContainer")[0]
    combined = CombinedRepo(bridge, Repo(opts.mirror, PROFILES[0][1]))
    out.append(f"// {cfg} at {opts.bridge_commit} (megatron.* at {PROFILES[0][1]}): the fields of each")
    out.append("// ConfigContainer section but model (its dataclass, or the union of its dataclasses)")
    out.append("const SectionField kBridgeSectionFields[] = {")
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        section = stmt.target.id
        if section.startswith("_") or section == "model":
            continue
        names = [n.id for n in ast.walk(stmt.annotation) if isinstance(n, ast.Name)
                 and n.id not in ("Optional", "Union", "str", "int", "float", "bool", "dict", "None")]
        seen = set()
        classes = [find_class(combined, cfg, n) for n in names]
        if section == "peft":  # an abstract base: the fields of every PEFT method
            classes = []
            for f in subprocess.run(["git", "--git-dir", opts.bridge_mirror, "ls-tree", "-r", "--name-only",
                                     opts.bridge_commit, "src/megatron/bridge/peft"],
                                    capture_output=True, text=True).stdout.split():
                tree = bridge.source(f) if f.endswith(".py") else None
                classes.extend((node, f) for node in (tree.body if tree else []) if isinstance(node, ast.ClassDef))
        for n, found in zip(names if section != "peft" else [c[0].name for c in classes], classes):
            if not found:
                print(f"warning: bridge: section {section}: class {n} not found", file=sys.stderr)
                continue
            for fname, (ann, default, meta, init, fpath) in dataclass_fields(combined, found[0], found[1]).items():
                if fname in seen or fname.startswith("_"):
                    continue
                seen.add(fname)
                kinds = ",".join(sorted(Annotation(combined, fpath).kinds(ann)))
                out.append(f"    {{ {cstr(section)}, {cstr(fname)}, {cstr(kinds)} }},")
    out.append("};")
    out.append(f"// {cfg} at {opts.bridge_commit}: ConfigContainer's sections")
    out.append("const char* const kBridgeSections[] = {")
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and not stmt.target.id.startswith("_"):
            out.append(f"    {cstr(stmt.target.id)},")
    out.append("};")
    out.append("")
    out.append("} // namespace")
    out.append("")
    out.append("std::vector<ConfigField> bridgeProviderFields()")
    out.append("{")
    out.append("    return { std::begin(kBridgeProviderFields), std::end(kBridgeProviderFields) };")
    out.append("}")
    out.append("")
    out.append("std::vector<SectionField> bridgeSectionFields()")
    out.append("{")
    out.append("    return { std::begin(kBridgeSectionFields), std::end(kBridgeSectionFields) };")
    out.append("}")
    out.append("")
    out.append("std::vector<std::string> bridgeConfigSections()")
    out.append("{")
    out.append("    return { std::begin(kBridgeSections), std::end(kBridgeSections) };")
    out.append("}")
    out.append(f"const char* const kBridgeCommit = {cstr(opts.bridge_commit)};")
    out.append("")
    out.append("// One generated table per profile, found by the profile table's name (core/profiles.h); the commit it")
    out.append("// was read at is the profile table's (tst_rules checks they agree).")
    out.append("MegatronArgTable megatronArgTable(Profile profile)")
    out.append("{")
    out.append("    struct Generated {")
    out.append("        const char* profile;")
    out.append("        MegatronArgTable table;")
    out.append("    };")
    out.append("    static const Generated generated[] = {")
    for prof, commit in PROFILES:
        out.append(f"        {{ {cstr(PROFILE_NAMES[prof])}, {{ k{prof}Args, std::size(k{prof}Args), k{prof}Fields, std::size(k{prof}Fields), {cstr(commit)} }} }},")
    out.append("    };")
    out.append("    for (const Generated& g : generated)")
    out.append("        if (std::strcmp(g.profile, profileName(profile)) == 0)")
    out.append("            return g.table;")
    out.append("    return {};")
    out.append("}")
    out.append("")
    out.append("} // namespace rs")
    with open(opts.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
